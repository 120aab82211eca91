"""dro_course.lessons.group_dro_also.saddle: the group-DRO problem solved by other means, checked against closed forms
written out here in numpy, brute force over the simplex, an independent iteration of the bilinear game and the
saddle-point inequalities."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dro_course.lessons.group_dro_also.saddle import (
    SaddlePoint,
    kl_penalised_value,
    logistic_dro_saddle,
    numerical_kl_prox,
    numerical_pi_star,
    optimism_spectral_radius,
)


def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def _kl(q, p):
    return float(np.sum(q * np.log(q / p)))


@pytest.mark.parametrize("tau", [0.1, 0.5, 2.0, 10.0])
def test_numerical_pi_star_finds_the_softmax_closed_form(tau):
    losses, prior = np.array([0.3, 0.9, 0.5, 0.1]), np.array([0.4, 0.3, 0.2, 0.1])
    closed = _softmax(np.log(prior) + losses / tau)  # π* ∝ π̂ exp(L / τ)
    np.testing.assert_allclose(numerical_pi_star(losses, tau=tau, prior=prior), closed, atol=1e-6)


def test_the_closed_form_beats_every_sampled_point_and_its_value_is_the_log_sum_exp():
    rng = np.random.default_rng(0)
    losses, prior, tau = rng.normal(size=5), rng.dirichlet(np.ones(5)), 0.4
    closed = _softmax(np.log(prior) + losses / tau)
    best = kl_penalised_value(closed, losses, tau=tau, prior=prior)
    samples = rng.dirichlet(np.ones(5), size=2000)
    assert max(kl_penalised_value(q, losses, tau=tau, prior=prior) for q in samples) <= best + 1e-12
    assert best == pytest.approx(tau * math.log(float(prior @ np.exp(losses / tau))), abs=1e-12)
    # the objective written out: ⟨π, L⟩ − τ KL(π‖π̂), uniform prior by default
    q = samples[0]
    assert kl_penalised_value(q, losses, tau=tau) == pytest.approx(q @ losses - tau * _kl(q, np.full(5, 0.2)))
    assert kl_penalised_value([0.0, 1.0], [1.0, 2.0], tau=1.0) == pytest.approx(2.0 - math.log(2.0))  # 0 log 0 = 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numerical_kl_prox_finds_the_option_one_formula(seed):
    rng = np.random.default_rng(seed)
    pi, prior, g = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6)), rng.normal(size=6)
    eta, tau = rng.uniform(0.1, 2.0, size=2)
    formula = _softmax((np.log(pi) + eta * tau * np.log(prior) + eta * g) / (1 + eta * tau))
    np.testing.assert_allclose(numerical_kl_prox(pi, g, lr=eta, tau=tau, prior=prior), formula, atol=1e-6)
    # τ = 0: plain multiplicative weights π e^{ηg} / Z
    np.testing.assert_allclose(numerical_kl_prox(pi, g, lr=eta, tau=0.0), _softmax(np.log(pi) + eta * g), atol=1e-6)


def _measured_rate(lr, alpha, steps=4000):
    """‖z‖'s factor per step over the second half of an independent numpy iteration of the optimistic step."""
    rot = np.array([[0.0, 1.0], [-1.0, 0.0]])
    z, prev_g, norms = np.array([1.0, 1.0]), None, []
    for _ in range(steps):
        g = rot @ z
        prev_g = g if prev_g is None else prev_g
        z = z - lr * (g + alpha * (g - prev_g))
        prev_g = g
        norms.append(np.linalg.norm(z))
    return (norms[-1] / norms[steps // 2]) ** (1 / (steps - 1 - steps // 2))


@pytest.mark.parametrize(("lr", "alpha"), [(0.1, 0.0), (0.1, 0.5), (0.1, 1.0), (0.3, 1.0), (0.05, 2.0)])
def test_spectral_radius_is_the_measured_rate(lr, alpha):
    assert optimism_spectral_radius(lr=lr, alpha=alpha) == pytest.approx(_measured_rate(lr, alpha), abs=1e-4)


def test_descent_ascent_grows_by_sqrt_one_plus_gamma_squared_and_popov_contracts_for_small_steps():
    for lr in (0.01, 0.1, 1.0):
        assert optimism_spectral_radius(lr=lr, alpha=0.0) == pytest.approx(math.sqrt(1 + lr**2), rel=1e-12)
    assert optimism_spectral_radius(lr=0.2, alpha=0.0, coupling=2.0) == pytest.approx(math.sqrt(1 + 0.16))
    assert optimism_spectral_radius(lr=0.1, alpha=1.0) < 1.0


def _losses_np(theta, x, y, k):
    d = x.shape[1]
    logits = x @ theta[: k * d].reshape(k, d).T + theta[k * d :]
    m = logits.max(1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(logits - m).sum(1))
    return lse - logits[np.arange(len(y)), y]


def _saddle_value(theta, pi, x, y, k, tau, l2):
    """F(θ, π) = Σ π_i f_i(θ) + λ/2 ‖θ‖² − τ KL(π‖uniform), in numpy."""
    n = len(y)
    return float(pi @ _losses_np(theta, x, y, k) + l2 / 2 * theta @ theta - tau * _kl(pi, np.full(n, 1.0 / n)))


def test_logistic_dro_saddle_satisfies_the_saddle_point_inequalities():
    rng = np.random.default_rng(0)
    n, d, k, tau, l2 = 40, 3, 3, 0.5, 0.1
    x = torch.tensor(rng.normal(size=(n, d)))
    y = torch.tensor(rng.integers(0, k, size=n))
    s = logistic_dro_saddle((x, y), tau=tau, l2=l2)
    assert isinstance(s, SaddlePoint) and s.theta.shape == (k * d + k,) and s.grad_norm < 1e-6
    th, pi, xn, yn = s.theta.numpy(), s.pi.numpy(), x.numpy(), y.numpy()
    value = _saddle_value(th, pi, xn, yn, k, tau, l2)
    assert s.value == pytest.approx(value, abs=1e-9)  # the primal Φ(θ*) is F at the saddle
    np.testing.assert_allclose(pi, _softmax(_losses_np(th, xn, yn, k) / tau), atol=1e-12)
    for _ in range(200):  # F(θ*, π) ≤ F(θ*, π*) ≤ F(θ, π*)
        q = rng.dirichlet(np.ones(n))
        assert _saddle_value(th, q, xn, yn, k, tau, l2) <= value + 1e-12
        other = th + rng.normal(scale=0.3, size=th.shape)
        assert _saddle_value(other, pi, xn, yn, k, tau, l2) >= value - 1e-12

    # finite differences of the primal, written in numpy, vanish at θ*
    def primal(t):
        f = _losses_np(t, xn, yn, k)
        return tau * (np.log(np.mean(np.exp((f - f.max()) / tau))) + f.max() / tau) + l2 / 2 * t @ t

    h = 1e-6
    grad = [(primal(th + h * e) - primal(th - h * e)) / (2 * h) for e in np.eye(th.size)]
    assert np.abs(grad).max() < 1e-6
    assert s.distance(s.theta, s.pi) == 0.0
    assert s.distance(s.theta + 1.0, s.pi) == pytest.approx(math.sqrt(th.size))


def test_bad_inputs_name_the_argument():
    with pytest.raises(TypeError, match="group_losses"):
        numerical_pi_star("abc", tau=1.0)
    with pytest.raises(ValueError, match="tau"):
        numerical_pi_star([1.0, 2.0], tau=0.0)
    with pytest.raises(ValueError, match="prior"):
        numerical_pi_star([1.0, 2.0], tau=1.0, prior=[0.5, 0.3, 0.2])
    with pytest.raises(ValueError, match="group_losses"):
        kl_penalised_value([0.5, 0.5], [1.0, math.nan], tau=1.0)
    with pytest.raises(ValueError, match=r"\bpi\b"):
        numerical_kl_prox([1.0, 0.0], [0.1, 0.2], lr=0.1, tau=1.0)
    with pytest.raises(ValueError, match=r"\blr\b"):
        numerical_kl_prox([0.5, 0.5], [0.1, 0.2], lr=0.0, tau=1.0)
    with pytest.raises(ValueError, match="alpha"):
        optimism_spectral_radius(lr=0.1, alpha=-1.0)
    with pytest.raises(TypeError, match=r"\blr\b"):
        optimism_spectral_radius(lr="0.1", alpha=1.0)
    with pytest.raises(TypeError, match="data"):
        logistic_dro_saddle([1, 2], tau=1.0, l2=0.1)
    with pytest.raises(ValueError, match="l2"):
        logistic_dro_saddle((torch.zeros(4, 2), torch.tensor([0, 1, 0, 1])), tau=1.0, l2=0.0)
    with pytest.raises(ValueError, match="num_classes"):
        logistic_dro_saddle((torch.zeros(4, 2), torch.tensor([0, 1, 0, 2])), tau=1.0, l2=0.1, num_classes=2)
