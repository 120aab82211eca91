"""dro_lab.oracles: the papers' formulas as printed, checked against hand values and scipy.

The oracles are meant to be independent of :mod:`dro_lab.robust`, so they are tested against
closed forms worked out by hand and against scipy's general-purpose solvers (SLSQP, HiGHS),
never against the library's own solver. The certified dual (:func:`dual_worst_case`) is tested against the
maximum computed to 50 digits with mpmath: KL's closed form, and χ²'s exact simplex projection found here by
trying every support.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch
from _stats import loss_vectors
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq, linprog, minimize
from scipy.special import logsumexp, xlogy

from dro_lab.oracles import (
    cvar_sorted_weights,
    dual_worst_case,
    fidon_eq21_threshold,
    fidon_eq21_weights,
    penalised_objective,
    simplex_worst_case,
)


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
def test_simplex_kl_ball_sits_on_the_boundary_and_reaches_the_certified_maximum(radius):
    """SLSQP's answer is feasible, on the ball's boundary, and its value is within 1e-7 of the maximum, which a
    certificate brackets: the tilt ``q_b ∝ e^{b ℓ}`` with KL(q_b‖p) = r (b by brentq) is feasible (a lower bound),
    and weak duality gives ``(log Σ p e^{bℓ} + r) / b`` as an upper bound. The weights themselves are not compared:
    near a ball's boundary the objective is flat, and how close SLSQP's weights come to the tilt depends on the
    machine (1.8e-4 in log q at r = 0.05 on one, far less on another)."""
    losses, n = _exp_losses(), 8
    q = simplex_worst_case(losses, divergence="kl", radius=radius)
    assert q.min() >= 0 and q.sum() == pytest.approx(1.0, abs=1e-9)
    assert np.sum(xlogy(q, q * n)) == pytest.approx(radius, abs=1e-7)

    def tilt(b):
        return np.exp(b * losses - logsumexp(b * losses))

    b = brentq(lambda b: np.sum(xlogy(tilt(b), n * tilt(b))) - radius, 1e-9, 100.0, xtol=1e-15)
    lower, upper = tilt(b) @ losses, (logsumexp(b * losses) - np.log(n) + radius) / b
    assert -1e-12 <= upper - lower < 1e-10  # equal up to rounding: the tilt is the maximiser
    assert lower - 1e-7 <= q @ losses <= upper + 1e-12
    assert np.all(np.diff(q[np.argsort(losses)]) >= -1e-6)  # more weight on larger losses (the tilt's order)


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
        (lambda: dual_worst_case("abc", divergence="kl", beta=1.0), TypeError),
        (lambda: dual_worst_case([1.0, math.inf], divergence="kl", beta=1.0), ValueError),
        (lambda: dual_worst_case([1.0, 2.0], divergence="cvar", beta=1.0), ValueError),
        (lambda: dual_worst_case([1.0, 2.0], divergence=3, beta=1.0), TypeError),
        (lambda: dual_worst_case([1.0, 2.0], divergence="kl", beta=0.0), ValueError),
        (lambda: dual_worst_case([1.0, 2.0], divergence="chi2", beta=-1.0), ValueError),
        (lambda: dual_worst_case([1.0, 2.0], divergence="kl", beta="1"), TypeError),
        (lambda: dual_worst_case([1.0, 2.0], divergence="kl", beta=math.inf), ValueError),
        (lambda: dual_worst_case([1.0, 2.0], divergence="kl", beta=1e-320), ValueError),
        (lambda: dual_worst_case([1.0, 2.0], divergence="kl", beta=1.0, prior=[0.5, 0.4]), ValueError),
        (lambda: penalised_objective([0.5, 0.5], [1.0, 2.0, 3.0], divergence="kl", beta=1.0), ValueError),
        (lambda: penalised_objective([1.5, -0.5], [1.0, 2.0], divergence="kl", beta=1.0), ValueError),
        (lambda: penalised_objective([0.0, 0.0], [1.0, 2.0], divergence="chi2", beta=1.0), ValueError),
        (lambda: penalised_objective(None, [1.0, 2.0], divergence="chi2", beta=1.0), TypeError),
        (lambda: penalised_objective([0.5, 0.5], [1.0, 2.0], divergence="tv", beta=1.0), ValueError),
        (lambda: penalised_objective([0.5, 0.5], [1.0, 2.0], divergence="kl", beta=0.0), ValueError),
    ],
)
def test_bad_inputs(call, error):
    with pytest.raises(error):
        call()


# --------------------------------------------------------------------------- the certified dual, against mpmath


@st.composite
def _problems(draw):
    """A loss vector of 2 to 300 entries at scales 1e-4 to 20 (light and heavy tails, ties, all equal), a β from
    0.01 to 1000 (log-uniform) and a prior (uniform or random)."""
    losses = draw(loss_vectors())
    beta = 10.0 ** draw(st.floats(-2.0, 3.0))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    prior = None if draw(st.booleans()) else rng.dirichlet(np.ones(losses.size)) * 0.9 + 0.1 / losses.size
    return losses, beta, prior


def _mp_kl(losses, beta, prior):
    mpmath.mp.dps = 50
    p = [mpmath.mpf(1) / len(losses)] * len(losses) if prior is None else [mpmath.mpf(float(x)) for x in prior]
    return mpmath.log(mpmath.fsum(pi * mpmath.exp(beta * mpmath.mpf(float(li))) for pi, li in zip(p, losses))) / beta


def _mp_chi2(losses, beta, prior):
    """The exact χ² maximum: q_i = p_i(1 + β/2 (ℓ_i − λ))₊; the support is a set of largest losses, so try each."""
    mpmath.mp.dps = 50
    n = len(losses)
    p = [mpmath.mpf(1) / n] * n if prior is None else [mpmath.mpf(float(x)) for x in prior]
    ell = [mpmath.mpf(float(x)) for x in losses]
    order = sorted(range(n), key=lambda i: -losses[i])
    b = mpmath.mpf(beta)
    for k in range(1, n + 1):
        top = order[:k]
        mass = mpmath.fsum(p[i] for i in top)
        lam = (mpmath.fsum(p[i] * ell[i] for i in top) - 2 / b * (1 - mass)) / mass
        brackets = [1 + b / 2 * (ell[i] - lam) for i in range(n)]
        if all(brackets[i] >= 0 for i in top) and all(brackets[i] <= 0 for i in order[k:]):
            q = [p[i] * max(brackets[i], 0) for i in range(n)]
            return (
                mpmath.fsum(qi * li for qi, li in zip(q, ell))
                - mpmath.fsum((qi - pi) ** 2 / pi for qi, pi in zip(q, p)) / b
            )
    raise AssertionError("no support satisfies the KKT conditions")


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(_problems(), st.sampled_from(["kl", "chi2"]))
def test_dual_certificate_brackets_the_exact_maximum(problem, divergence):
    losses, beta, prior = problem
    cert = dual_worst_case(losses, divergence=divergence, beta=beta, prior=prior)
    exact = float((_mp_kl if divergence == "kl" else _mp_chi2)(losses, beta, prior))
    assert cert.lower - cert.rounding <= exact <= cert.upper + cert.rounding
    assert cert.brackets(exact)
    assert cert.gap <= 2 * cert.rounding  # the bisection closed the duality gap to rounding
    scale = float(np.abs(losses).max()) + 1.0 / beta
    assert cert.rounding <= 1e-9 * scale  # and the certificate is tight: float64 digits, not a loose bound
    np.testing.assert_allclose(cert.q.sum(), 1.0, rtol=0, atol=1e-12)
    value, rounding = penalised_objective(cert.q, losses, divergence=divergence, beta=beta, prior=prior)
    assert abs(value - cert.lower) <= rounding + cert.rounding


def test_dual_certificate_of_hand_cases():
    # KL, two losses 0 and 1, β = 1: R = log((1 + e)/2)
    cert = dual_worst_case([0.0, 1.0], divergence="kl", beta=1.0)
    assert cert.brackets(math.log((1 + math.e) / 2)) and cert.gap <= 1e-15
    np.testing.assert_allclose(cert.q, [1 / (1 + math.e), math.e / (1 + math.e)], atol=1e-15)
    # χ², no clipping: R = mean + (β/4)·Var (lesson 01); ℓ = (0, 1, 2), β = 1: 1 + (2/3)/4
    cert = dual_worst_case([0.0, 1.0, 2.0], divergence="chi2", beta=1.0)
    assert cert.brackets(1 + 1 / 6) and cert.eta == pytest.approx(1.0)
    # χ², β = 4 clips the first: the support {1, 2}: q = (0, 1/4... ), found by hand from Σq = 1
    exact = float(_mp_chi2([0.0, 1.0, 2.0], 4.0, None))
    assert dual_worst_case([0.0, 1.0, 2.0], divergence="chi2", beta=4.0).brackets(exact)
    # a single loss: q = (1,), R = ℓ
    for divergence in ("kl", "chi2"):
        one = dual_worst_case([3.5], divergence=divergence, beta=2.0)
        assert one.brackets(3.5) and one.q.tolist() == [1.0]


def test_a_wrong_value_falls_outside_the_certificate():
    losses = _exp_losses()
    for divergence in ("kl", "chi2"):
        cert = dual_worst_case(losses, divergence=divergence, beta=3.0)
        assert not cert.brackets(cert.upper + 1e-9) and not cert.brackets(cert.lower - 1e-9)
        uniform = np.full(8, 1 / 8)  # the uniform weights are feasible but not the maximiser
        value, rounding = penalised_objective(uniform, losses, divergence=divergence, beta=3.0)
        assert value + rounding < cert.lower - cert.rounding
