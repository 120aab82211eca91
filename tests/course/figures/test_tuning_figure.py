"""figures.expected_validation_figure (lessons 02–06): each arm's expected best validation score after k trials.

The oracle is exhaustive: for k = 1 … N, the mean of the best score over every one of the N^k equally likely
sequences of k draws with replacement from the arm's recorded trial scores (itertools.product), never the
library's closed form.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dro_course import figures
from dro_lab.experiments import EXPERIMENTS
from dro_lab.experiments.result import ExperimentResult

SCORES = {
    "ERM": [0.61, 0.74, 0.70, 0.52],
    "HWS": [0.40, 0.81, 0.79, 0.55, 0.66],
    "OHEM": [0.70],
    "untried": [],  # an arm with no recorded trial draws no line
}


def _brute_force(scores, best=max) -> list[float]:
    """The mean of ``best`` over every sequence of k draws with replacement, k = 1 … N."""
    return [
        float(np.mean([best(draws) for draws in itertools.product(scores, repeat=k)]))
        for k in range(1, len(scores) + 1)
    ]


def _result(experiment: str = "hws", scores=SCORES, tuning: dict | None = None) -> ExperimentResult:
    trials = [
        {"method": m, "setting": {"lr": i}, "score": s} for m, values in scores.items() for i, s in enumerate(values)
    ]
    return ExperimentResult(
        experiment, "t", "p", "fashion-mnist", "full", [0], {}, list(scores), trials=trials, tuning=tuning or {}
    )


def _traces(fig) -> dict:
    return {t.name.split(" — ")[0]: t for t in fig.data}


def test_each_arm_is_the_mean_best_of_k_draws_with_replacement_in_percent_for_an_accuracy():
    assert EXPERIMENTS["hws"].select.endswith("accuracy")
    fig = figures.expected_validation_figure(_result())
    traces = _traces(fig)
    assert sorted(traces) == ["ERM", "HWS", "OHEM"]  # one line per arm with trials
    for method, trace in traces.items():
        oracle = _brute_force(SCORES[method])
        np.testing.assert_array_equal(trace.x, np.arange(1, len(oracle) + 1))
        np.testing.assert_allclose(trace.y, 100 * np.asarray(oracle), rtol=1e-12)
        assert trace.mode == "lines+markers"
    assert "balanced accuracy" in fig.layout.yaxis.title.text and "(%)" in fig.layout.yaxis.title.text


def test_a_negated_loss_is_drawn_as_the_expected_lowest_loss():
    assert EXPERIMENTS["importance"].select == "neg_loss"
    losses = {"SGD u": [0.07, 0.05, 0.67], "Adam u": [0.07, 0.69, 0.05]}
    fig = figures.expected_validation_figure(_result("importance", {m: [-v for v in ls] for m, ls in losses.items()}))
    for method, trace in _traces(fig).items():
        np.testing.assert_allclose(trace.y, _brute_force(losses[method], best=min), rtol=1e-12)
    assert "lowest validation loss" in fig.layout.yaxis.title.text
    assert "falling at the last trial" in fig.layout.title.text


def test_the_legend_carries_each_arms_coverage_when_recorded_and_none_otherwise():
    tuning = {
        "ERM": {"grid": {"lr": [1, 2, 3, 4]}, "grid_size": 4, "trials": 4, "coverage": 1.0},
        "HWS": {
            "grid": {"lr": [1, 2, 3, 4, 5], "beta": list(range(45))},
            "grid_size": 225,
            "trials": 5,
            "coverage": 5 / 225,
        },
        "OHEM": {"grid": {"lr": [1, 2, 3, 4]}, "grid_size": 4, "trials": 1, "coverage": 0.25},
    }
    names = sorted(t.name for t in figures.expected_validation_figure(_result(tuning=tuning)).data)
    assert names == ["ERM — 4 of 4 settings, 100 %", "HWS — 5 of 225 settings, 2.2 %", "OHEM — 1 of 4 settings, 25 %"]
    plain = figures.expected_validation_figure(_result())
    assert sorted(t.name for t in plain.data) == ["ERM", "HWS", "OHEM"]


def test_the_figure_says_how_to_read_it():
    fig = figures.expected_validation_figure(_result(), title="Reference run")
    assert fig.layout.title.text.startswith("Reference run<br>")
    assert "rising at the last trial" in fig.layout.title.text and "cross" in fig.layout.title.text
    assert fig.layout.xaxis.title.text == "trials k"


@pytest.mark.parametrize("bad", [None, {"ERM": [0.5, 0.6]}, [0.5, 0.6]])
def test_anything_but_a_result_is_one_clear_type_error(bad):
    with pytest.raises(TypeError, match="result must be an ExperimentResult, got"):
        figures.expected_validation_figure(bad)


def test_a_result_without_trials_says_there_is_nothing_to_draw():
    with pytest.raises(ValueError, match="no tuning trials"):
        figures.expected_validation_figure(_result(scores={"ERM": []}))
