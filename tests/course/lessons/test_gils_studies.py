"""The studies around GI-LS (dro_course.lessons.label_smoothing_dro.studies): the BO objective on a validation split
moves with its parameters and equals a run of the experiment's GI-LS arm, optuna's experimental warning stays silent,
the γ studies against gils_shift's definition, and the bookkeeping against brute-force counts."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from dro_course.lessons.label_smoothing_dro.studies import (
    TABLE8_GAMMAS,
    bo_search_space,
    bo_studies_markdown,
    gamma_perturbation_shift,
    gils_bo_objective,
    gils_epoch_seconds,
    gils_toy_problem,
    split_counts_markdown,
    stable_gamma_limit,
    transport_cost_sweep,
)
from dro_lab import MLP, gils_shift
from dro_lab.experiments import Splits, train_arm, tune
from dro_lab.experiments.papers.gils import GILS_EXPERIMENT


@pytest.fixture(scope="module")
def smoke():
    config = GILS_EXPERIMENT.config("digits", "smoke", {})
    return config, GILS_EXPERIMENT.data("digits", 0, config)


def test_bo_search_space_narrows_steps_and_epochs_only():
    space = bo_search_space(3, 6)
    assert space["steps"] == ("int", 0, 3) and space["epochs"] == ("int", 3, 6)
    assert space["alpha"] == ("float", 0.0, 0.5) and space["eta"] == ("logfloat", 1e-3, 0.3)
    assert bo_search_space(2, 1)["epochs"] == ("int", 1, 1)
    with pytest.raises(ValueError):
        bo_search_space(2, 4, min_epochs=5)
    with pytest.raises(TypeError):
        bo_search_space(2.5, 4)


def test_bo_objective_scores_the_validation_split_and_moves_with_its_parameters(smoke):
    config, splits = smoke
    objective = gils_bo_objective(splits, config, seed=0, device="cpu")
    params = {"alpha": 0.3, "steps": 1, "eta": 0.02, "epochs": 2}
    value = objective(params)
    _, _, final = train_arm(GILS_EXPERIMENT, "GI-LS", Splits(splits.train, None, splits.val, splits.info), config,
                            seed=0, device="cpu", **params)  # fmt: skip
    assert value == final["balanced_accuracy"]  # the same run, scored on the validation split
    other = objective({"alpha": 0.0, "steps": 0, "eta": 0.02, "epochs": 1})
    assert value != other  # the objective moves: the smoke study is not flat at chance
    with pytest.raises(TypeError):
        gils_bo_objective("splits", config)
    with pytest.raises(ValueError):
        gils_bo_objective(splits, config, metric="loss")


def test_tune_lets_no_experimental_warning_through():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        study = tune(lambda p: -((p["alpha"] - 0.2) ** 2), {"alpha": ("float", 0.0, 0.5)}, n_trials=4, sampler="gp")
    assert not [w for w in caught if "experimental" in str(w.message).lower()], [str(w.message) for w in caught]
    table = bo_studies_markdown({"gp": _FakeStudy()}, bo_search_space(3, 4), {"gp": 1.5})
    assert "| gp | 0.700 | (0.500, 2, 0.0100, 4) | alpha, epochs | 1.5 |" in table
    assert len(study.trials) == 4


class _FakeStudy:
    best_params = {"alpha": 0.5, "steps": 2, "eta": 0.01, "epochs": 4}
    best_value = 0.7


def _net():
    torch.manual_seed(0)
    return MLP(16, 3, hidden=(8,)).eval()


def test_transport_sweep_and_table8_differences_against_gils_shift():
    gen = torch.Generator().manual_seed(0)
    x, y = torch.rand(12, 16, generator=gen), torch.randint(3, (12,), generator=gen)
    model = _net()
    sweep = transport_cost_sweep(model, x, y, alpha=0.2, gammas=[1e-3, 1.0], etas=[0.05], steps=4)
    want = [float(gils_shift(model, x, y, alpha=0.2, gamma=g, eta=0.05, steps=4)[1].mean()) for g in (1e-3, 1.0)]
    np.testing.assert_allclose(sweep[0.05], want, rtol=1e-6)
    diffs = gamma_perturbation_shift(model, x, y, alpha=0.2, eta=0.05, steps=4, gammas={"same": 1e-3, "big": 10.0})
    assert diffs["same"] == 0.0 and diffs["big"] > 0.0
    assert set(TABLE8_GAMMAS) == {"1/1000.1", "1/999.9", "1/1001", "1/999", "1/1010", "1/990", "1/1100", "1/900"}
    assert math.isclose(TABLE8_GAMMAS["1/900"], 1 / 900)


def test_stable_gamma_limit_stops_before_the_first_rise():
    g = [1e-3, 1e-2, 1e-1, 1.0, 10.0]
    assert stable_gamma_limit(g, [5.0, 5.0, 4.0, 1.0, 0.5]) == 10.0
    assert stable_gamma_limit(g, [5.0, 4.0, 4.5, 1.0, 0.5]) == 1e-2
    assert stable_gamma_limit(g, [5.0, 4.0, 3.0, float("nan"), 0.5]) == 1e-1
    with pytest.raises(ValueError):
        stable_gamma_limit(g, [1.0, 2.0])


def test_split_counts_and_toy_problem(smoke):
    _, splits = smoke
    table = split_counts_markdown(splits)
    counts = torch.bincount(splits.test.y, minlength=6).tolist()
    assert f"| test | {' | '.join(map(str, counts))} | {sum(counts)} | {max(counts) / sum(counts):.1%} |" in table
    model, x, y = gils_toy_problem(0, n=30, epochs=2)
    assert x.shape == (30, 2) and torch.equal(y, torch.arange(30) % 3) and not model.training


def test_epoch_seconds_one_value_per_T(smoke):
    config, splits = smoke
    small = Splits(splits.train.subset(torch.arange(64)), splits.val, splits.test, splits.info)
    secs, ls = gils_epoch_seconds(small, config, [0, 2], alpha=0.3, device="cpu")
    assert len(secs) == 2 and all(s > 0 for s in secs) and ls > 0
