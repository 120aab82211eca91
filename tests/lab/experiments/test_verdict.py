"""The one verdict rule (dro_lab.experiments.judge) against a t-interval computed with scipy."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats

from dro_lab.experiments import VERDICTS, Verdict, combine, judge, judge_band, judge_seeds, mean_sd_text, pair_seeds


def _by_scipy(d, threshold=0.0, min_seeds=3, confidence=0.95):
    """The rule in words, with scipy's own interval: held above, did not hold below, else not resolved; fewer than
    min_seeds differences are not judged."""
    if len(d) < 2:
        return "not judged", (-math.inf, math.inf)
    low, high = stats.t.interval(confidence, len(d) - 1, loc=np.mean(d), scale=stats.sem(d))
    if len(d) < min_seeds:
        return "not judged", (low, high)
    if low > threshold:
        return "held", (low, high)
    if high < threshold:
        return "did not hold", (low, high)
    return "not resolved", (low, high)


@pytest.mark.parametrize("seed", range(60))
def test_judge_is_the_t_interval_rule(seed):
    rng = np.random.default_rng(seed)
    d = list(rng.normal(rng.normal(0, 0.02), 0.02, size=int(rng.integers(2, 9))))
    threshold = float(rng.choice([0.0, 0.01, -0.01]))
    confidence = float(rng.choice([0.9, 0.95, 0.99]))
    v = judge(d, threshold=threshold, confidence=confidence)
    word, interval = _by_scipy(d, threshold, 3, confidence)
    assert isinstance(v, Verdict) and v.verdict == word
    assert v.interval == pytest.approx(interval, rel=1e-12, abs=1e-15)
    assert v.mean == pytest.approx(np.mean(d)) and v.n == len(d)
    assert v.wins == sum(x > threshold for x in d)


def test_orientation_is_the_callers_a_cost_is_judged_on_baseline_minus_ours():
    ours_seconds = np.array([1.0, 1.1, 0.9, 1.0])
    baseline_seconds = np.array([2.0, 2.3, 1.9, 2.1])
    assert judge(baseline_seconds - ours_seconds).verdict == "held"  # ours costs less: the claim held
    assert judge(ours_seconds - baseline_seconds).verdict == "did not hold"
    # "at least 2x faster" as a log-ratio against log 2: the ratios are ≈ 2.07, too close to tell
    assert judge(np.log(baseline_seconds / ours_seconds), threshold=math.log(2)).verdict == "not resolved"
    assert judge(np.log(baseline_seconds / ours_seconds), threshold=math.log(1.5)).verdict == "held"


def test_the_seed_minimum_never_calls_a_claim():
    clear = [0.5, 0.51, 0.49, 0.5, 0.52]
    assert judge(clear).verdict == "held"
    assert judge(clear[:2]).verdict == "not judged"  # two seeds: an interval, no verdict
    assert judge(clear[:3], min_seeds=4).verdict == "not judged"
    assert judge(clear[:3], min_seeds=4).text().endswith("; a verdict needs 4 paired seeds")
    one = judge([0.3])
    assert one.verdict == "not judged" and one.interval == (-math.inf, math.inf)
    assert "no interval" in one.text()


def test_a_band_is_two_one_sided_claims():
    ratios = np.array([2.2, 2.25, 2.15, 2.2, 2.2])
    assert judge_band(ratios, 2.0, 2.4).verdict == "held"
    assert judge_band(ratios, 2.3, 2.6).verdict == "did not hold"  # below the band's lower edge
    assert judge_band(ratios, 2.19, 2.4).verdict == "not resolved"
    assert judge_band(ratios + 7.4, 2.0, 2.4).verdict == "did not hold"  # 9.6×, far above a 2.0–2.4× band


def test_text_shows_the_interval_beside_the_word():
    v = judge([0.031, 0.028, 0.035, 0.030, 0.033])
    low, high = v.interval
    assert v.text(1, scale=100, unit=" points") == (
        f"held: +{v.mean * 100:.1f} points (95 % interval +{low * 100:.1f} to +{high * 100:.1f} points, 5 seeds)"
    )


def test_combine_and_mean_sd_text():
    assert combine(["held", "held"]) == "held"
    assert combine(["held", "not resolved"]) == "not resolved"
    assert combine(["held", "did not hold", "not resolved"]) == "did not hold"
    assert combine(["held", "not judged"]) == "not judged"
    assert combine(["not resolved", "not judged", "held"]) == "not judged"
    assert combine(["not judged", "did not hold"]) == "did not hold"
    assert set(VERDICTS) == {"held", "did not hold", "not resolved", "identical", "not judged"}
    assert mean_sd_text([0.5, 0.7]) == f"0.600 ± {np.std([0.5, 0.7], ddof=1):.3f}"
    assert mean_sd_text([0.25], 1, scale=100) == "25.0"
    assert mean_sd_text([float("nan"), 1.0]) == "–"


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: judge([]), ValueError),
        (lambda: judge([0.1, float("nan"), 0.2]), ValueError),
        (lambda: judge([0.1, math.inf, 0.2]), ValueError),
        (lambda: judge([[1, 2], [3, 4]]), ValueError),  # a table is not four seeds
        (lambda: judge(np.ones((3, 1))), ValueError),
        (lambda: judge([0.1, [0.2, 0.3]]), ValueError),  # ragged
        (lambda: judge("0.1"), TypeError),
        (lambda: judge(["0.1", "0.2", "0.3"]), TypeError),
        (lambda: judge([True, False, True]), TypeError),
        (lambda: judge([0.1, None, 0.2]), TypeError),
        (lambda: judge(0.5), TypeError),
        (lambda: judge({0: 0.1, 1: 0.2}), TypeError),
        (lambda: judge_seeds([0.1, 0.2]), TypeError),
        (lambda: judge_seeds({}), ValueError),
        (lambda: judge_seeds({0: "0.1"}), TypeError),
        (lambda: judge_seeds({0: 0.1}, reasons=["x"]), TypeError),
        (lambda: judge_seeds({0: 0.1}, min_seeds=1), ValueError),
        (lambda: pair_seeds([0], {"a": {0: 1.0}}), TypeError),
        (lambda: judge([0.1], threshold="0"), TypeError),
        (lambda: judge([0.1, 0.2, 0.3], confidence=1.0), ValueError),
        (lambda: judge([0.1, 0.2, 0.3], min_seeds=1), ValueError),
        (lambda: judge_band([0.1, 0.2], 0.3, 0.2), ValueError),
        (lambda: combine(["maybe"]), ValueError),
    ],
)
def test_bad_inputs_are_refused(call, error):
    with pytest.raises(error):
        call()


# --------------------------------------------------------------------------- never "± inf" (issue 19)
# A verdict from one seed has the interval (-inf, inf): an older lesson printed it as "mean ± inf". The text says
# "no interval" instead, whatever the scale and the units; a spread over seeds never shows inf or nan either.
_NOT_A_NUMBER = re.compile(r"\binf\b|\bnan\b", re.IGNORECASE)


@pytest.mark.parametrize("scale", [1.0, 100.0, -100.0, 0.0])
@pytest.mark.parametrize("unit", ["", " points"])
def test_one_seed_says_no_interval_never_inf(scale, unit):
    v = judge([0.031])
    assert v.interval == (-math.inf, math.inf) and not v.has_interval
    text = v.text(1, scale=scale, unit=unit)
    assert "(1 seed: no interval)" in text and not _NOT_A_NUMBER.search(text), text
    assert text.startswith("not judged: ")


@pytest.mark.parametrize("seed", range(20))
def test_no_text_shows_inf_or_nan(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    d = rng.normal(0, 0.05, size=n)
    v = judge(d)
    assert v.has_interval == (n > 1)
    for scale in (1.0, 100.0, -1.0):
        assert not _NOT_A_NUMBER.search(v.text(2, scale=scale))
        assert not _NOT_A_NUMBER.search(mean_sd_text(d, 2, scale=scale))
    # a hand-built verdict whose upper bound alone is infinite (e.g. read back from a file) is not shown either
    odd = v._replace(interval=(0.0, math.inf), n=max(n, 2))
    assert "no interval" in odd.text() and not _NOT_A_NUMBER.search(odd.text())


def test_mean_sd_text_of_one_seed_and_of_a_diverged_run():
    assert mean_sd_text([0.812]) == "0.812"  # one seed: the mean alone, no spread
    assert mean_sd_text([1.0, math.inf]) == "inf"  # a diverged run: no "± nan"
    assert mean_sd_text([-math.inf, 2.0], 1) == "-inf"
    assert mean_sd_text([math.inf, -math.inf]) == "–"
    assert "±" not in mean_sd_text([math.inf, math.inf])


# --------------------------------------------------------------------------- nothing lost, nothing misstated (issue 26)
def test_a_nested_list_is_refused_with_a_message_naming_its_shape():
    with pytest.raises(ValueError, match=r"1-D .* got shape \(2, 2\)"):
        judge([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match=r"differences\[1\] is nan"):
        judge([0.1, float("nan"), 0.2])


def test_judge_seeds_sets_a_diverged_seed_aside_and_names_it():
    d = {0: 0.031, 1: 0.028, 2: 0.035, 3: math.nan, 4: 0.033}
    v = judge_seeds(d, reasons={3: "diverged (HWS: nan)"})
    kept = [0.031, 0.028, 0.035, 0.033]
    low, high = stats.t.interval(0.95, 3, loc=np.mean(kept), scale=stats.sem(kept))
    assert v.verdict == "held" and v.n == 4 and v.of == 5 and v.set_aside == ("seed 3 diverged (HWS: nan)",)
    assert v.interval == pytest.approx((low, high), rel=1e-12)
    assert v.text(1, scale=100, unit=" points").endswith("; judged on 4 of 5 seeds: seed 3 diverged (HWS: nan)")


def test_judge_seeds_without_reasons_says_missing_or_the_value():
    v = judge_seeds({0: 0.5, 1: None, 2: math.inf, 3: 0.4, 4: 0.6})
    assert v.set_aside == ("seed 1 missing", "seed 2 diverged (inf)") and v.n == 3 and v.of == 5


def test_a_claim_left_with_too_few_seeds_is_not_judged_with_the_reason():
    v = judge_seeds({0: 0.5, 1: None, 2: math.nan, 3: 0.52}, reasons={1: "missing (ERM)", 2: "diverged (KL: nan)"})
    assert v.verdict == "not judged" and v.n == 2
    assert v.text(2) == (
        f"not judged: +0.51 (95 % interval {v.interval[0]:+.2f} to {v.interval[1]:+.2f}, 2 seeds); a verdict needs "
        "3 paired seeds; only 2 of 4 paired: seed 1 missing (ERM), seed 2 diverged (KL: nan)"
    )
    none = judge_seeds({0: None, 1: None})
    assert none.verdict == "not judged" and none.n == 0 and math.isnan(none.mean)
    assert none.text() == "not judged: no paired seeds; a verdict needs 3 paired seeds; only 0 of 2 paired: " + (
        "seed 0 missing, seed 1 missing"
    )


def test_pair_seeds_orients_and_names_what_is_missing_or_diverged():
    values = {"HWS": {0: 0.7, 1: math.nan, 2: 0.6}, "ERM": {0: 0.5, 1: 0.5, 3: 0.4}}
    by_seed, reasons = pair_seeds([0, 1, 2, 3], values)
    assert by_seed[0] == pytest.approx(0.2) and math.isnan(by_seed[1]) and by_seed[2] is None and by_seed[3] is None
    assert reasons == {1: "diverged (HWS: nan)", 2: "missing (ERM)", 3: "missing (HWS)"}
    cost, _ = pair_seeds([0], {"ours": {0: 1.0}, "theirs": {0: 3.0}}, lambda a, b: b - a)
    assert cost == {0: 2.0}
