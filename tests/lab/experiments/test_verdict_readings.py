"""The three readings of a claim (issue 28), each against an independent oracle:

* the p-value behind a verdict is scipy's one-sample t-test (``scipy.stats.ttest_1samp``), and "held" / "did not
  hold" happen exactly when it is below 1 − confidence, on the side of the mean;
* Holm's adjusted p-values reject exactly what the closed testing procedure with Bonferroni local tests rejects
  (Marcus, Peritz & Gabriel 1976: Holm's method is its shortcut), found here by brute force over every subset;
* a difference with no spread is never "held": all zeros is "identical", a constant is "not resolved: no spread";
* a band is held only when the whole interval lies inside it; the paper's effect is read off the interval.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dro_lab.experiments import EFFECT_VERDICTS, effect_verdict, holm, judge, judge_band, judge_seeds


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("threshold", [0.0, 0.1, -0.05])
def test_the_p_value_is_the_one_sample_t_test_and_agrees_with_the_interval(seed, threshold):
    rng = np.random.default_rng(seed)
    d = rng.normal(rng.uniform(-0.2, 0.3), rng.uniform(0.01, 0.3), size=int(rng.integers(3, 12)))
    v = judge(d, threshold=threshold)
    assert v.p_value == pytest.approx(stats.ttest_1samp(d, threshold).pvalue, rel=1e-9)
    decided = v.verdict in ("held", "did not hold")
    assert decided == (v.p_value < 0.05)
    if decided:
        assert (v.verdict == "held") == (d.mean() > threshold)


def test_no_spread_is_never_held():
    same = judge([0.0] * 10)
    assert same.verdict == "identical" and same.text().startswith("identical: +0.00 (10 seeds, every difference 0)")
    constant = judge([0.03] * 10)
    assert constant.verdict == "not resolved" and constant.note == "no spread" and math.isnan(constant.p_value)
    assert "no spread" in constant.text(1, scale=100, unit=" points")
    assert judge([0.0, 0.0]).verdict == "not judged"  # too few seeds still draw nothing


def _closed_testing(p: list[float], alpha: float) -> set[int]:
    """The hypotheses the closed testing procedure rejects with a Bonferroni test of every intersection."""
    m = len(p)
    rejected = set()
    for i in range(m):
        subsets = (s for r in range(1, m + 1) for s in itertools.combinations(range(m), r) if i in s)
        if all(min(p[j] for j in s) <= alpha / len(s) for s in subsets):
            rejected.add(i)
    return rejected


@pytest.mark.parametrize("seed", range(30))
def test_holm_rejects_what_closed_testing_rejects(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 8))
    p = (rng.uniform(0, 0.08, m) * rng.choice([1, 10], m)).clip(0, 1).tolist()
    for alpha in (0.05, 0.1):
        adjusted = holm(p, alpha)
        assert {i for i, q in enumerate(adjusted) if q <= alpha} == _closed_testing(p, alpha)
        assert all(q >= raw for q, raw in zip(adjusted, p))  # adjusting never makes a claim look stronger


def test_holm_leaves_untested_claims_out_of_the_family():
    with_nan = holm([0.01, math.nan, 0.02])
    assert math.isnan(with_nan[1]) and with_nan[0] == with_nan[2] == pytest.approx(holm([0.01, 0.02])[1])
    with pytest.raises(ValueError, match="p_values must lie in"):
        holm([0.5, 1.5])


def test_a_band_is_held_only_when_the_interval_lies_inside_it():
    rng = np.random.default_rng(3)
    for center, spread in [(2.2, 0.05), (2.2, 0.4), (9.6, 0.3), (1.5, 0.1), (2.4, 0.05)]:
        d = rng.normal(center, spread, 10)
        v = judge_band(d, 2.0, 2.4)
        low, high = judge(d).interval  # the same t-interval
        inside, outside = low > 2.0 and high < 2.4, high < 2.0 or low > 2.4
        assert v.verdict == ("held" if inside else "did not hold" if outside else "not resolved"), (center, spread)
        assert (v.p_value < 0.05) == (v.verdict != "not resolved")
    with pytest.raises(ValueError, match="low < high"):
        judge_band([1.0, 2.0, 3.0], 2.4, 2.0)


def test_seeds_set_aside_then_a_band():
    v = judge_seeds({0: 2.1, 1: 2.2, 2: None, 3: 2.25, 4: 2.15}, band=(2.0, 2.4))
    assert v.verdict == "held" and v.n == 4 and v.set_aside == ("seed 2 missing",)


def test_the_interval_read_against_the_papers_effect():
    v = judge([0.05, 0.06, 0.07, 0.055, 0.065])
    low, high = v.interval
    assert effect_verdict(v, low - 0.01) == "reached"
    assert effect_verdict(v, (low + high) / 2) == "consistent with"
    assert effect_verdict(v, high + 0.01) == "short of"
    assert set(EFFECT_VERDICTS) == {"reached", "consistent with", "short of"}
    assert effect_verdict(judge([0.0] * 5), 0.05) is None  # identical arms: nothing to read
    assert effect_verdict(judge([0.1, 0.2]), 0.05) is None  # not judged
