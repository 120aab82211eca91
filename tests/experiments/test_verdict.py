"""The one verdict rule (dro_lab.experiments.judge) against the rule written out case by case."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dro_lab.experiments import VERDICTS, Verdict, combine, judge, mean_sd_text


def _by_hand(d: list[float]) -> str:
    """The rule in words: ≥ 3 seeds; held if mean > 2 SE and most seeds won; did not hold if the mirror image."""
    n = len(d)
    mean = sum(d) / n
    if n < 3:
        return "not resolved"
    se = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1)) / math.sqrt(n)
    wins = sum(x > 0 for x in d)
    if mean > 2 * se and wins > n / 2:
        return "held"
    if mean < -2 * se and wins < n / 2:
        return "did not hold"
    return "not resolved"


@pytest.mark.parametrize("seed", range(60))
def test_judge_follows_the_rule_on_random_differences(seed):
    rng = np.random.default_rng(seed)
    d = list(rng.normal(rng.normal(0, 0.02), 0.02, size=int(rng.integers(1, 9))))
    v = judge(d)
    assert isinstance(v, Verdict) and v.status == _by_hand(d)
    assert v.mean == pytest.approx(np.mean(d)) and v.wins == sum(x > 0 for x in d)
    flipped = judge([-x for x in d], larger_is_claim=False)
    assert flipped.status == v.status and flipped.mean == pytest.approx(v.mean)


def test_clear_cases_and_the_unpacking_lessons_use():
    status, mean, se, wins = judge([0.10, 0.12, 0.11, 0.09])
    assert (status, wins) == ("held", 4) and mean == pytest.approx(0.105)
    assert judge([-0.1, -0.12, -0.11]).status == "did not hold"
    assert judge([0.5, 0.6]).status == "not resolved"  # two seeds never decide
    assert math.isinf(judge([0.3]).se)


def test_combine_and_mean_sd_text():
    assert combine(["held", "held"]) == "held"
    assert combine(["held", "not resolved"]) == "not resolved"
    assert combine(["held", "did not hold", "not resolved"]) == "did not hold"
    assert set(VERDICTS) == {"held", "did not hold", "not resolved"}
    assert mean_sd_text([0.5, 0.7]) == f"0.600 ± {np.std([0.5, 0.7], ddof=1):.3f}"
    assert mean_sd_text([0.25], 1, scale=100) == "25.0"
    assert mean_sd_text([float("nan"), 1.0]) == "–"


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: judge([]), ValueError),
        (lambda: judge([0.1, float("nan"), 0.2]), ValueError),
        (lambda: judge([0.1], larger_is_claim="yes"), TypeError),
        (lambda: combine(["maybe"]), ValueError),
    ],
)
def test_bad_inputs_are_refused(call, error):
    with pytest.raises(error):
        call()
