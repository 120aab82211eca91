"""Lesson 03's notes on the reader's own run (dro_course.lessons.importance_sampling.live): the label of its figures,
and the artefacts of a small run under its test-accuracy figure, read from the final ``accuracy`` and the per-epoch
``test_accuracy`` that the importance experiment records under two names."""

from __future__ import annotations

import dataclasses

import pytest

from dro_course.lessons.importance_sampling.live import accuracy_artefacts, run_label
from dro_lab.experiments import load_reference


def _small(accuracy: dict[str, float], curves: dict[str, list[float]]):
    """Two seeds of the reference, relabelled smoke, with each method's final accuracy and curve set by hand."""
    result = load_reference("importance").result()
    kept = result.seeds[:2]
    runs = [
        dict(r, final=dict(r["final"], accuracy=accuracy.get(r["method"], 0.9)),
             curves=dict(r["curves"], test_accuracy=curves.get(r["method"], [0.8, 0.9])))
        for r in result.runs if r["seed"] in kept
    ]  # fmt: skip
    return dataclasses.replace(result, preset="smoke", seeds=kept, runs=runs)


def test_a_small_run_is_labelled_an_illustration_and_the_reference_is_not():
    reference = load_reference("importance").result()
    assert run_label(reference) == "Your run"
    assert run_label(dataclasses.replace(reference, preset="smoke")) == "Your run (an illustration)"
    with pytest.raises(TypeError, match="ExperimentResult"):
        run_label({"SGD u": 0.5})


def test_the_notes_name_the_arms_at_chance_and_falling_of_those_drawn():
    live = _small({"SGD u": 0.5, "Adam u": 0.95}, {"Adam u": [0.97, 0.90]})
    said = accuracy_artefacts(live)
    assert "SGD u sits at chance (0.5)" in said and "falls over training for Adam u" in said
    drawn = accuracy_artefacts(live, ["SGD u", "SGD p^GN"])
    assert "SGD u sits at chance" in drawn and "Adam u" not in drawn
    quiet = accuracy_artefacts(live, ["SGD p^GN", "SGD M u"])  # trained and rising: still a small run
    assert "no arm drawn here sits at chance or falls" in quiet and "ranks nothing" in quiet
    assert accuracy_artefacts(load_reference("importance").result()) == ""  # not an illustration
    with pytest.raises(ValueError, match="methods"):
        accuracy_artefacts(live, ["SGD v"])
