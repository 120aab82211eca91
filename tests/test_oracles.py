"""dro_lab.oracles: the papers' formulas as printed, checked against hand values and scipy.

The oracles are meant to be independent of :mod:`dro_lab.robust`, so they are tested against
closed forms worked out by hand and against scipy's general-purpose solvers (SLSQP, HiGHS),
never against the library's own solver.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import brentq, linprog, minimize

from dro_lab.oracles import cvar_sorted_weights, fidon_eq21_threshold, fidon_eq21_weights, simplex_worst_case


def _slsqp_chi2(losses: np.ndarray, beta: float) -> np.ndarray:
    """max_q <q, l> - chi2(q || uniform)/beta over the simplex, by SLSQP with analytic gradients."""
    n = len(losses)
    p = np.full(n, 1.0 / n)
    res = minimize(
        lambda q: -(q @ losses - ((q - p) ** 2 / p).sum() / beta),
        p,
        jac=lambda q: -(losses - 2.0 * (q - p) / p / beta),
        method="SLSQP",
        bounds=[(0.0, 1.0)] * n,
        constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1.0, "jac": lambda q: np.ones(n)}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    assert res.success, res.message
    return res.x


def _exp_losses(n: int = 8, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).exponential(size=n)


def test_eq21_hand_values():
    # l = (0, 1, 2), mean 1, beta = 1: (1 + (l - 1)/2)/3 = (1/6, 1/3, 1/2)
    np.testing.assert_allclose(fidon_eq21_weights([0.0, 1.0, 2.0], 1.0), [1 / 6, 1 / 3, 1 / 2], rtol=0, atol=1e-15)
    # beta = 0 is the uniform prior (eq. 22)
    np.testing.assert_allclose(fidon_eq21_weights([0.3, 5.0, 2.0, 1.0], 0.0), np.full(4, 0.25), rtol=0, atol=1e-15)
    # beta = 4 clips the first entry: (1 + 2*(l - 1))/3 = (-1/3 -> 0, 1/3, 1)
    np.testing.assert_allclose(fidon_eq21_weights([0.0, 1.0, 2.0], 4.0), [0.0, 1 / 3, 1.0], rtol=0, atol=1e-15)


def test_threshold_closed_form():
    assert fidon_eq21_threshold([0.0, 1.0, 2.0]) == pytest.approx(2.0)  # 2/(mean - min) = 2/1
    assert fidon_eq21_threshold([1.5, 1.5, 1.5]) == math.inf
    losses = _exp_losses()
    t = fidon_eq21_threshold(losses)
    assert fidon_eq21_weights(losses, t).min() == pytest.approx(0.0, abs=1e-15)  # the smallest loss touches 0
    assert fidon_eq21_weights(losses, 0.99 * t).min() > 0
    assert (fidon_eq21_weights(losses, 1.01 * t) == 0).sum() == 1  # just above: exactly one clips


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.99])
def test_eq21_is_the_chi2_maximiser_below_the_threshold(fraction):
    losses = _exp_losses()
    beta = fraction * fidon_eq21_threshold(losses)
    q = fidon_eq21_weights(losses, beta)
    assert q.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(q, _slsqp_chi2(losses, beta), rtol=0, atol=1e-6)


def test_eq21_is_not_a_distribution_once_it_clips():
    losses = _exp_losses()  # the n = 8 exponential example of the lessons (seed 0)
    q = fidon_eq21_weights(losses, 5.0)
    assert fidon_eq21_threshold(losses) < 5.0
    assert (q == 0).any()
    assert q.sum() == pytest.approx(1.1596, abs=5e-5)
    # and the exact maximiser differs from it
    assert np.abs(q - _slsqp_chi2(losses, 5.0)).max() > 1e-2


def test_eq21_accepts_tensors_and_lists():
    t = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
    np.testing.assert_allclose(fidon_eq21_weights(t, 1.0), fidon_eq21_weights([0.0, 1.0, 2.0], 1.0))


@pytest.mark.parametrize("alpha", [1.0, 0.5, 0.3, 0.2, 0.125, 0.05])
def test_cvar_sorted_weights_match_highs(alpha):
    losses = _exp_losses(n=8, seed=3)  # distinct losses: the LP's maximiser is unique
    n = len(losses)
    lp = linprog(-losses, A_eq=np.ones((1, n)), b_eq=[1.0], bounds=[(0.0, 1.0 / (n * alpha))] * n, method="highs")
    q = cvar_sorted_weights(losses, alpha)
    assert q.sum() == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(q, lp.x, rtol=0, atol=1e-9)
    assert q @ losses == pytest.approx(-lp.fun, abs=1e-12)


def test_cvar_hand_values():
    ell = [1.0, 3.0, 2.0, 5.0, 4.0]
    np.testing.assert_allclose(cvar_sorted_weights(ell, 0.4), [0, 0, 0, 0.5, 0.5], atol=1e-15)
    np.testing.assert_allclose(cvar_sorted_weights(ell, 0.3), [0, 0, 0, 2 / 3, 1 / 3], atol=1e-15)
    assert cvar_sorted_weights(ell, 0.3) @ np.array(ell) == pytest.approx(14 / 3)
    np.testing.assert_allclose(cvar_sorted_weights(ell, 1.0), np.full(5, 0.2), atol=1e-15)
    np.testing.assert_allclose(cvar_sorted_weights(ell, 0.1), [0, 0, 0, 1, 0], atol=1e-15)


PRIOR = np.array([0.05, 0.1, 0.15, 0.2, 0.1, 0.1, 0.2, 0.1])


@pytest.mark.parametrize("prior", [None, PRIOR])
@pytest.mark.parametrize("beta", [0.3, 2.0, 20.0])
def test_simplex_kl_penalised_is_the_tilted_prior(beta, prior):
    losses = _exp_losses()
    p = np.full(8, 1 / 8) if prior is None else prior
    closed = p * np.exp(beta * (losses - losses.max()))
    np.testing.assert_allclose(
        simplex_worst_case(losses, divergence="kl", beta=beta, prior=prior), closed / closed.sum(), atol=1e-6
    )


@pytest.mark.parametrize("beta", [0.5, 5.0, 50.0])
def test_simplex_chi2_penalised_solves_its_kkt_system(beta):
    losses = _exp_losses()
    # q_i = p_i (1 + beta/2 (l_i - lam))_+ with lam normalising: solved here by brentq on lam
    lam = brentq(lambda t: np.maximum(1 + beta / 2 * (losses - t), 0).mean() - 1, losses.min() - 10, losses.max())
    want = np.maximum(1 + beta / 2 * (losses - lam), 0) / 8
    np.testing.assert_allclose(simplex_worst_case(losses, divergence="chi2", beta=beta), want, atol=1e-6)


@pytest.mark.parametrize("radius", [0.05, 0.5, 1.5])
def test_simplex_kl_ball_sits_on_the_boundary_with_tilted_weights(radius):
    losses = _exp_losses()
    q = simplex_worst_case(losses, divergence="kl", radius=radius)
    assert np.sum(q * np.log(q * 8)) == pytest.approx(radius, abs=1e-7)
    # KKT: log(q/p) is affine in the losses (q is a tilt p e^{beta l} / Z for some beta > 0)
    slope, intercept = np.polyfit(losses, np.log(q * 8), 1)
    assert slope > 0
    np.testing.assert_allclose(np.log(q * 8), slope * losses + intercept, atol=1e-4)


def test_simplex_chi2_ball_sits_on_the_boundary():
    losses = _exp_losses()
    q = simplex_worst_case(losses, divergence="chi2", radius=0.3)
    assert np.sum((q - 1 / 8) ** 2 * 8) == pytest.approx(0.3, abs=1e-7)
    # KKT: q_i proportional to (l_i - eta)_+ on its support
    on = q > 1e-9
    slope, intercept = np.polyfit(losses[on], q[on], 1)
    np.testing.assert_allclose(q[on], slope * losses[on] + intercept, atol=1e-7)


@pytest.mark.parametrize("alpha", [1.0, 0.3, 0.05])
def test_simplex_cvar_is_the_sorting_rule(alpha):
    losses = _exp_losses(n=8, seed=3)
    np.testing.assert_allclose(
        simplex_worst_case(losses, divergence="cvar", alpha=alpha), cvar_sorted_weights(losses, alpha), atol=1e-9
    )


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: fidon_eq21_weights("abc", 1.0), TypeError),
        (lambda: fidon_eq21_weights(3.0, 1.0), TypeError),
        (lambda: fidon_eq21_weights([1.0, 2.0], "1"), TypeError),
        (lambda: fidon_eq21_weights([1.0, 2.0], -1.0), ValueError),
        (lambda: fidon_eq21_weights([1.0, 2.0], math.inf), ValueError),
        (lambda: fidon_eq21_weights([[1.0, 2.0]], 1.0), ValueError),
        (lambda: fidon_eq21_weights([], 1.0), ValueError),
        (lambda: fidon_eq21_weights([1.0, math.nan], 1.0), ValueError),
        (lambda: fidon_eq21_threshold(None), TypeError),
        (lambda: cvar_sorted_weights([1.0, 2.0], 0.0), ValueError),
        (lambda: cvar_sorted_weights([1.0, 2.0], 1.5), ValueError),
        (lambda: cvar_sorted_weights([1.0, 2.0], None), TypeError),
        (lambda: cvar_sorted_weights({"a": 1.0}, 0.5), TypeError),
        (lambda: simplex_worst_case([1.0, 2.0], divergence="tv", beta=1.0), ValueError),
        (lambda: simplex_worst_case([1.0, 2.0], divergence=3, beta=1.0), TypeError),
        (lambda: simplex_worst_case([1.0, 2.0], divergence="kl"), ValueError),
        (lambda: simplex_worst_case([1.0, 2.0], divergence="kl", beta=1.0, radius=0.1), ValueError),
        (lambda: simplex_worst_case([1.0, 2.0], divergence="kl", alpha=0.5), ValueError),
        (lambda: simplex_worst_case([1.0, 2.0], divergence="kl", beta=-1.0), ValueError),
        (lambda: simplex_worst_case([1.0, 2.0], divergence="kl", radius="0.1"), TypeError),
        (lambda: simplex_worst_case([1.0, 2.0], divergence="cvar", alpha=2.0), ValueError),
        (lambda: simplex_worst_case([1.0, 2.0], divergence="kl", beta=1.0, prior=[0.5, 0.4]), ValueError),
        (lambda: simplex_worst_case([1.0, 2.0], divergence="kl", beta=1.0, prior=[1.0]), ValueError),
    ],
)
def test_bad_inputs(call, error):
    with pytest.raises(error):
        call()
