"""Lesson 03's side studies (dro_course.lessons.importance_sampling.studies): the cost ratios against the runs' own
seconds and the paper's Table 1, and the forgotten-weights runs against the exact optimum of the logistic loss."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from dro_course.lessons.importance_sampling.studies import (
    PAPER_TABLE1,
    cost_ratios,
    forgotten_weights_study,
    paper_cost_ratios,
)
from dro_lab.experiments import load_reference


def test_paper_cost_ratios_are_table_1_over_plain_sgd():
    ratios = paper_cost_ratios()
    assert ratios["SGD u"] == 1.0
    assert ratios["SGD p^GN"] == pytest.approx(53.0 / 26.5)
    assert ratios["Adam p^GN"] == pytest.approx(61.4 / 26.5)
    assert len(ratios) == sum(len(row) for row in PAPER_TABLE1.values()) == 10


def test_cost_ratios_are_geometric_means_of_the_per_seed_ratios():
    ref = load_reference("importance").result()
    ratios = cost_ratios(ref)
    seconds = {(r["method"], r["seed"]): r["final"]["seconds_per_epoch"] for r in ref.runs}
    for method in ("SGD p^GN", "SGD u+eval", "Adam u"):
        per_seed = [seconds[(method, s)] / seconds[("SGD u", s)] for s in ref.seeds]
        assert ratios[method] == pytest.approx(float(np.prod(per_seed) ** (1 / len(per_seed))), rel=1e-6)
    assert ratios["SGD u"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="baseline"):
        cost_ratios(ref, baseline="SGD v")
    with pytest.raises(TypeError, match="result"):
        cost_ratios({"SGD u": 1.0})


def _logistic_optimum(x, y):
    """argmin of the mean cross-entropy of the logit contrast (w, b), by BFGS from zero: an oracle beside sklearn."""
    X = np.c_[x, np.ones(len(x))]
    s = np.where(y == 1, 1.0, -1.0)

    def f(theta):
        z = s * (X @ theta)
        return np.mean(np.logaddexp(0.0, -z)), -(X * (s / (1 + np.exp(z)))[:, None]).mean(0)

    res = minimize(f, np.zeros(X.shape[1]), jac=True, method="BFGS", options={"gtol": 1e-12})
    return res.x, res.fun


@pytest.mark.slow
def test_forgotten_weights_leave_the_optimum_and_the_weighted_runs_approach_it():
    study = forgotten_weights_study(epochs=15, seed=0)
    from dro_course.lessons.importance_sampling.studies import _two_gaussians

    data = _two_gaussians(200, 0)
    theta, loss = _logistic_optimum(data.x.double().numpy(), data.y.numpy())
    np.testing.assert_allclose(study.theta_star, theta, rtol=1e-5, atol=1e-6)
    assert study.loss_star == pytest.approx(loss, rel=1e-8)
    assert set(study.paths) == {"u", "p^GN, weighted (e = 1)", "p^GN, weights forgotten (e = 0)"}
    assert all(p.shape == (15, 3) for p in study.paths.values())
    forgot = "p^GN, weights forgotten (e = 0)"
    for weighted in ("u", "p^GN, weighted (e = 1)"):
        assert study.distance(weighted) < 0.5 * study.distance(forgot)
        assert study.final_loss[weighted] < study.final_loss[forgot]
    assert study.final_loss[forgot] > study.loss_star + 0.01
    assert all(v >= study.loss_star - 1e-6 for v in study.final_loss.values())  # nothing beats the optimum
    assert "| optimum θ* | 0 |" in study.markdown()
    with pytest.raises(ValueError, match="epochs"):
        forgotten_weights_study(epochs=0)
