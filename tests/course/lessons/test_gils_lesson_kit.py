"""Lesson 06's kit (dro_course.lessons.label_smoothing_dro: data, tables, toolkit): the experiment's data equals
what the experiment builds for its first seed, the tables lay out the numbers they are given (the bounds recomputed
here by hand), and the toolkit exports every name it lists."""

from __future__ import annotations

import pytest
import torch

from dro_course.lessons.label_smoothing_dro import toolkit
from dro_course.lessons.label_smoothing_dro.data import experiment_data, tiny_models_on_cpu
from dro_course.lessons.label_smoothing_dro.studies import compare_samplers
from dro_course.lessons.label_smoothing_dro.tables import (
    ascent_markdown,
    dual_bound_markdown,
    gamma_perturbation_markdown,
    regulariser_ratio_markdown,
    shift_bound_markdown,
)
from dro_lab.experiments.papers.gils import GILS_EXPERIMENT


def test_experiment_data_is_the_experiments_first_seed():
    data = experiment_data("digits", "smoke", 0, defects="digits-MT", epochs=3)
    config = GILS_EXPERIMENT.config("digits", "smoke", {"defects": "digits-MT", "epochs": 3})
    splits = GILS_EXPERIMENT.data("digits", 0, config)
    assert data.experiment is GILS_EXPERIMENT
    assert data.config == config and dict(data.overrides) == {"defects": "digits-MT", "epochs": 3}
    for mine, theirs in ((data.splits.train, splits.train), (data.splits.test, splits.test)):
        assert torch.equal(mine.x, theirs.x) and torch.equal(mine.y, theirs.y)
    with pytest.raises(TypeError):
        data.overrides["epochs"] = 4  # read-only: the run and the splits must agree


def test_experiment_data_checks_its_arguments():
    with pytest.raises(ValueError, match="defects"):
        experiment_data("digits", "smoke", 0, defects="granite")
    with pytest.raises(ValueError, match="epochs"):
        experiment_data("digits", "smoke", 0, epochs=0)
    with pytest.raises(ValueError, match="preset"):
        experiment_data("digits", "huge", 0)


def test_tiny_models_on_cpu_sets_one_thread_and_leaves_other_devices_alone():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        tiny_models_on_cpu(torch.device("meta"))
        assert torch.get_num_threads() == 2
        tiny_models_on_cpu("cpu")
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
        torch.set_flush_denormal(False)


def test_tables_lay_out_the_numbers_they_are_given():
    dual = dual_bound_markdown((1.5, 2.0), (2.25, 2.0))
    assert dual.splitlines()[2] == "| dual bound γρ + mean φ_γ | 2.250000 | 2.000000 |"
    with pytest.raises(ValueError, match="one value per multiple"):
        dual_bound_markdown((1.5, 2.0), (2.25,))
    ratio = regulariser_ratio_markdown({10: torch.tensor([0.5, 0.52, 0.51])})
    assert "| 10 | 0.5100 (0.5000 – 0.5200) | ½ | 1 |" in ratio
    shift = shift_bound_markdown({2.0: 0.3}, lipschitz=1.2, threshold=0.5)  # γ = 1: L₀/γ = 1.2, 3L₀/γ = 3.6
    assert "| 2 | 0.3000 | 1.2000 | 3.6000 |" in shift
    ascent = ascent_markdown([(0, 1.0, 0.0, 0.0, 1.0), (3, 1.5, 2e-3, 0.0, 1.0)], images=8)
    assert "summed over 8 images" in ascent and "| 3 | 1.500 | 2.00e-03 | [0.00, 1.00] |" in ascent
    gam = gamma_perturbation_markdown({"1/999": 6e-8, "1/900": 3e-7})
    assert gam.splitlines()[0] == "| γ | 1/999 | 1/900 |" and gam.endswith("| 6.0e-08 | 3.0e-07 |")
    for table in (dual, ratio, shift, ascent, gam):
        widths = {line.count("|") for line in table.splitlines()}
        assert len(widths) == 1, table  # every row has the header's columns


def test_compare_samplers_runs_one_study_per_sampler_at_one_budget():
    calls = []

    def objective(params):
        calls.append(params)
        return -((params["x"] - 0.3) ** 2)

    studies, seconds = compare_samplers(objective, {"x": ("float", 0.0, 1.0), "lr": 0.01}, ["random", "tpe"],
                                        n_trials=3, seed=1)  # fmt: skip
    assert list(studies) == list(seconds) == ["random", "tpe"]
    assert [len(s.trials) for s in studies.values()] == [3, 3] and len(calls) == 6
    assert all(p["lr"] == 0.01 for p in calls)  # a fixed entry is passed through to every trial
    assert all(s >= 0 for s in seconds.values())
    with pytest.raises(ValueError):
        compare_samplers(objective, {"x": ("float", 0.0, 1.0)}, [], n_trials=3)


def test_the_toolkit_exports_every_name_it_lists_once():
    names = toolkit.__all__
    assert len(names) == len(set(names))
    assert [n for n in names if not hasattr(toolkit, n)] == []
