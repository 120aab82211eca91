"""The capstone's read-out (dro_course.lessons.comparison.report, lesson 07) against hand computations.

* the illustration rule is the one of ``is_illustration`` (checked on ExperimentResult objects);
* an illustration's table and narrative draw no verdict, and its numbers are paired means computed here by a
  loop over the rows;
* a judged run's verdicts agree with scipy's Student-t interval of the paired differences (computed here), and
  the family claim with a hand-computed per-seed difference of the families' mean accuracies;
* no text ever shows ``inf`` or ``nan``; records equal brute-force values; bad inputs raise naming the argument.
"""

from __future__ import annotations

import math
import random
import re
import statistics

import numpy as np
import pytest
from scipy import stats

from dro_course.beside import is_illustration
from dro_course.lessons.comparison.report import (
    ComparisonReport,
    comparison_methods,
    is_illustration_run,
    methods_markdown,
)
from dro_course.lessons.comparison.study import METHODS
from dro_lab.experiments import ExperimentResult

VERDICT_WORDS = re.compile(r"\b(held|did not hold|not resolved)\b")


def _rows(seeds, methods=tuple(METHODS), shift=None, noise=0.02, seed=0):
    """Fake run_comparison rows: each method's accuracies = ERM's + a fixed shift + per-seed noise."""
    rng = random.Random(seed)
    shift = shift or {m: rng.uniform(-0.1, 0.2) for m in methods}
    shift["ERM"] = 0.0
    rows = []
    for s in seeds:
        base_avg, base_wg = rng.uniform(0.75, 0.85), rng.uniform(0.5, 0.65)
        for m in methods:
            rows.append(
                {
                    "method": m,
                    "seed": s,
                    "avg_acc": base_avg + shift[m] / 2 + rng.gauss(0, noise),
                    "worst_group_acc": base_wg + shift[m] + rng.gauss(0, noise),
                    "seconds_per_epoch": 0.004 * (1 + 3 * rng.random()),
                    "seconds_total": 0.1,
                    "epochs": 15,
                    "family": METHODS[m].family,
                    "knob": "",
                }
            )
    return rows


def _by_hand(rows, metric, method, reference="ERM"):
    value = {(r["method"], r["seed"]): r[metric] for r in rows}
    seeds = sorted({r["seed"] for r in rows})
    return [value[(method, s)] - value[(reference, s)] for s in seeds]


def _result(preset, n_seeds):
    return ExperimentResult(
        experiment="hws", title="t", paper="p", dataset="d", preset=preset, seeds=list(range(n_seeds)),
        config={}, methods=["ERM"],
    )  # fmt: skip


@pytest.mark.parametrize("preset", ["smoke", "full", "gpu"])
@pytest.mark.parametrize("n_seeds", [1, 2, 3, 5])
def test_the_illustration_rule_is_the_one_of_is_illustration(preset, n_seeds):
    assert is_illustration_run(preset, n_seeds) == is_illustration(_result(preset, n_seeds))
    report = ComparisonReport(_rows(range(n_seeds), methods=("ERM", "KL-DRO")), preset=preset)
    assert report.illustration == is_illustration(_result(preset, n_seeds))


def test_an_illustration_draws_no_verdict_and_shows_paired_means():
    rows = _rows([0, 1])
    report = ComparisonReport(rows, preset="smoke")
    assert report.illustration and report.verdicts == {}
    table, story = report.table(), report.narrative()
    assert "An illustration, not a verdict" in table and "no verdict" in story
    assert not VERDICT_WORDS.search(table) and not VERDICT_WORDS.search(story)
    t2 = stats.t.ppf(0.975, 1)  # why two seeds carry no verdict: the interval is ± 12.7 standard errors
    assert f"± {t2:.1f} standard errors" in table
    for m in METHODS:
        if m == "ERM":
            continue
        d = _by_hand(rows, "worst_group_acc", m)
        ahead = sum(x > 0 for x in d)
        assert f"| {statistics.mean(d) * 100 + 0.0:+.1f} ({ahead} of 2 ahead) |" in table, m
    # the family line: per seed, the mean over the methods told the groups minus the mean over the others
    told = [m for m in METHODS if METHODS[m].family == "groups"]
    finds = [m for m in METHODS if METHODS[m].family == "hard examples"]
    per_seed = [
        statistics.mean(_by_hand(rows, "worst_group_acc", m)[k] for m in told)
        - statistics.mean(_by_hand(rows, "worst_group_acc", m)[k] for m in finds)
        for k in range(2)
    ]
    assert f"{round(statistics.mean(per_seed) * 100, 1) + 0.0:+.1f} points as a paired mean (no verdict)" in story


def test_a_judged_run_agrees_with_scipys_t_interval():
    seeds = range(6)
    rows = _rows(seeds, shift={m: (0.03 if i % 3 == 0 else -0.03 if i % 3 == 1 else 0.0) for i, m in
                               enumerate(METHODS)}, noise=0.01)  # fmt: skip
    report = ComparisonReport(rows, preset="full")
    assert not report.illustration
    table = report.table()
    assert "An illustration" not in table
    words = set()
    for m in METHODS:
        if m == "ERM":
            continue
        d = np.array(_by_hand(rows, "worst_group_acc", m))
        low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
        word = "held" if low > 0 else "did not hold" if high < 0 else "not resolved"
        words.add(word)
        v = report.verdicts[m]
        assert v.verdict == word and v.interval == pytest.approx((low, high), rel=1e-9, abs=1e-12)
        assert f"| {v.text(1, scale=100)} |" in table
    assert words == {"held", "did not hold", "not resolved"}  # the shifts exercise every word
    story = report.narrative()
    held = [m for m, v in report.verdicts.items() if v.verdict == "held"]
    assert held and all(m in story.split("(held)")[1].split("\n")[0] for m in held)
    # the family claim, judged on the per-seed difference of the families' mean worst-group accuracies
    told = [m for m in METHODS if METHODS[m].family == "groups"]
    finds = [m for m in METHODS if METHODS[m].family == "hard examples"]
    d = np.array(
        [
            np.mean([_by_hand(rows, "worst_group_acc", m)[k] for m in told])
            - np.mean([_by_hand(rows, "worst_group_acc", m)[k] for m in finds])
            for k in range(len(seeds))
        ]
    )
    low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    word = "held" if low > 0 else "did not hold" if high < 0 else "not resolved"
    line = next(x for x in story.splitlines() if "Knowing the groups" in x)
    assert f"? Their mean accuracies, seed by seed: {word}: {d.mean() * 100:+.1f} points" in line


@pytest.mark.parametrize("preset, n_seeds", [("smoke", 1), ("full", 1), ("full", 2), ("full", 3), ("smoke", 4)])
def test_no_text_shows_inf_or_nan(preset, n_seeds):
    report = ComparisonReport(_rows(range(n_seeds)), preset=preset)
    for text in (report.title(), report.heading(), report.table(), report.narrative()):
        assert not re.search(r"\binf\b|\bnan\b", text, re.IGNORECASE), text
    if n_seeds == 1:
        assert "one seed has no interval" in report.table()


def test_records_are_the_brute_force_numbers():
    rows = _rows(range(3))
    rec = ComparisonReport(rows, preset="full").records()
    means = {
        m: (
            statistics.mean(r["avg_acc"] for r in rows if r["method"] == m),
            statistics.mean(r["worst_group_acc"] for r in rows if r["method"] == m),
        )
        for m in METHODS
    }
    best = max(means, key=lambda m: means[m][1])
    assert rec["best_method_worst_group"] == best
    assert rec["worst_group_gain_best_points"] == pytest.approx((means[best][1] - means["ERM"][1]) * 100)
    assert rec["erm_avg_acc"] == pytest.approx(means["ERM"][0]) and rec["n_seeds"] == 3
    assert rec["is_grad_norm_worst_group_acc"] == pytest.approx(means["IS (grad norm)"][1])
    assert rec["train_seconds"] == pytest.approx(0.1 * len(rows)) and rec["illustration"] is False


def test_the_methods_of_a_lesson_and_their_table():
    assert comparison_methods(None) == list(METHODS)
    assert comparison_methods(["ERM", "ALSO"]) == ["ERM", "ALSO"]
    with pytest.raises(ValueError, match="methods.*'ERM'"):
        comparison_methods(["ALSO", "DONE"])
    with pytest.raises(ValueError, match="NOPE"):
        comparison_methods(["ERM", "NOPE"])
    with pytest.raises(ValueError, match="twice"):
        comparison_methods(["ERM", "ERM"])
    with pytest.raises(TypeError, match="methods"):
        comparison_methods("ERM")
    knobs = dict(beta=4.0, done_r=0.5, cvar_alpha=0.3, is_alpha=0.25, also_alpha=0.5, ls_alpha=0.2,
                 group_step=0.02, eps=0.1, attack_steps=2, gils_gamma=1.0, gils_steps=2)  # fmt: skip
    md = methods_markdown(list(METHODS), knobs).splitlines()
    assert len(md) == 2 + len(METHODS)
    kl = next(line for line in md if line.startswith("| **KL-DRO**"))
    assert "β = 4" in kl and "| not told |" in kl
    assert "| told |" in next(line for line in md if line.startswith("| **ALSO**"))
    with pytest.raises(ValueError, match="beta"):
        methods_markdown(["KL-DRO"], {})
    with pytest.raises(TypeError, match="knobs"):
        methods_markdown(["ERM"], [1])


def test_bad_rows_are_refused():
    rows = _rows([0, 1, 2], methods=("ERM", "KL-DRO"))
    with pytest.raises(ValueError, match="same seeds"):
        ComparisonReport(rows[:-1], preset="full")
    with pytest.raises(ValueError, match="reference"):
        ComparisonReport([r for r in rows if r["method"] != "ERM"], preset="full")
    with pytest.raises(ValueError, match="twice"):
        ComparisonReport(rows + rows[:1], preset="full")
    with pytest.raises(TypeError, match="rows"):
        ComparisonReport(3, preset="full")
    with pytest.raises(TypeError, match="preset"):
        ComparisonReport(rows, preset=3)
    with pytest.raises(TypeError, match="reference"):
        ComparisonReport(rows, preset="full", reference=1)
    assert math.isfinite(ComparisonReport(rows, preset=None).records()["cost_ratio_max"])
