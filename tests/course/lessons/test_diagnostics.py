"""Lesson 02's diagnostics against independent oracles: scipy's softmax, the closed-form Jacobians of the KL and χ²
worst cases, a brute-force enumeration of sampling without replacement, the geometric tail of i.i.d. draws and
empirical frequencies against probabilities."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy.special import softmax

from dro_course.lessons.hardness_weighted_sampling.diagnostics import (
    mc_gradient_errors,
    minority_mass_curve,
    simulate_history_ages,
    weights_jacobian,
)

RNG = np.random.default_rng(0)
LOSSES = torch.tensor(RNG.uniform(0.0, 3.0, 12))
LABELS = torch.tensor([0, 1, 2, 3] * 3)


def test_minority_mass_curve_against_scipy_softmax():
    betas = [0.0, 0.3, 1.0, 5.0, 50.0]
    mass, ess = minority_mass_curve(LOSSES, LABELS, minority=2, betas=betas)
    for k, b in enumerate(betas):
        q = softmax(b * LOSSES.numpy())
        assert mass[k] == pytest.approx(q[LABELS.numpy() == 2].sum(), rel=1e-10)
        assert ess[k] == pytest.approx(1.0 / np.sum(q**2), rel=1e-10)
    assert mass[0] == pytest.approx(0.25) and ess[0] == pytest.approx(12.0)  # β = 0: ERM's uniform share


def test_minority_mass_curve_rejects_bad_inputs():
    with pytest.raises(ValueError, match="labels"):
        minority_mass_curve(LOSSES, LABELS[:5], minority=1, betas=[1.0])
    with pytest.raises(ValueError, match="minority"):
        minority_mass_curve(LOSSES, LABELS, minority=7, betas=[1.0])
    with pytest.raises(ValueError, match="betas"):
        minority_mass_curve(LOSSES, LABELS, minority=1, betas=[-1.0])
    with pytest.raises(TypeError, match="losses"):
        minority_mass_curve("losses", LABELS, minority=1, betas=[1.0])


@pytest.mark.parametrize("beta", [0.1, 1.0, 10.0])
def test_weights_jacobian_kl_is_the_softmax_jacobian(beta):
    q = softmax(beta * LOSSES.numpy())
    closed = beta * (np.diag(q) - np.outer(q, q))
    J = weights_jacobian(LOSSES, divergence="kl", beta=beta).numpy()
    np.testing.assert_allclose(J, closed, atol=1e-7 * max(1.0, beta))


def test_weights_jacobian_chi2_on_the_active_set():
    """χ² worst case q_i = (1 + β/2 (ℓ_i − λ))₊ / n: on the active set A, ∂q_i/∂ℓ_j = β/(2n) (δ_ij − 1/|A|)."""
    n = len(LOSSES)
    for beta in (0.2, 5.0):  # no clipping, then clipping
        J = weights_jacobian(LOSSES, divergence="chi2", beta=beta).numpy()
        ell = LOSSES.numpy()
        # the active set by brute force: the largest k losses for which the normalised weights stay positive
        order = np.argsort(-ell)
        for k in range(n, 0, -1):
            act = order[:k]
            lam = ell[act].mean() - 2.0 * (n - k) / (beta * k)
            if np.all(1 + beta / 2 * (ell[act] - lam) > 0):
                break
        closed = np.zeros((n, n))
        closed[np.ix_(act, act)] = beta / (2 * n) * (np.eye(k) - 1.0 / k)
        np.testing.assert_allclose(J, closed, atol=1e-6)
        off = J[~np.eye(n, dtype=bool)]
        assert J.diagonal().min() >= -1e-9 and off.max() <= 1e-9  # Theorem 3.2's sign pattern
    assert k < n  # the second β clips


def _expected_counts_without_replacement(q: np.ndarray, b: int) -> np.ndarray:
    """E[count of each index] in b successive draws without replacement, by enumerating every ordered draw."""
    counts = np.zeros(len(q))
    for seq in itertools.permutations(range(len(q)), b):
        p, left = 1.0, 1.0
        for i in seq:
            p *= q[i] / left
            left -= q[i]
        for i in seq:
            counts[i] += p
    return counts


def test_mc_gradient_errors_unbiased_with_replacement_biased_without():
    q = np.array([0.8, 0.12, 0.05, 0.02, 0.01])
    G = torch.tensor(RNG.normal(size=(5, 3)))
    mc = mc_gradient_errors(torch.tensor(q), G, batch_size=2, batches=20000, generator=torch.Generator().manual_seed(1))
    exact = q @ G.numpy()
    np.testing.assert_allclose(mc.exact.numpy(), exact)
    # with replacement: the RMS error is √((Σ q‖g‖² − ‖∇R‖²)/(bM)) / ‖∇R‖ (a closed form of the multinomial)
    spread = q @ (G.numpy() ** 2).sum(1) - exact @ exact
    np.testing.assert_allclose(mc.predicted, np.sqrt(spread / (2 * mc.ms)) / np.linalg.norm(exact))
    assert mc.with_replacement[-1] < 4 * mc.predicted[-1]
    # without replacement: the error tends to the bias of the expected counts, found by enumeration
    bias = np.linalg.norm(_expected_counts_without_replacement(q, 2) / 2 @ G.numpy() - exact) / np.linalg.norm(exact)
    assert bias > 0.1
    assert mc.without_replacement[-1] == pytest.approx(bias, rel=0.1)
    assert list(mc.ms) == sorted(set(mc.ms)) and mc.ms[-1] == 20000


def test_mc_gradient_errors_without_replacement_is_impossible_below_b_positive_entries():
    """One example of positive probability and b = 2: no batch of two distinct indices exists. The i.i.d. estimate is
    then exact (every draw is that example), and the comparison without replacement is reported as impossible."""
    G = torch.tensor(RNG.normal(size=(3, 2)))
    mc = mc_gradient_errors(torch.tensor([0.0, 1.0, 0.0]), G, batch_size=2, batches=5)
    assert mc.without_replacement is None
    assert mc.without_reason == "only 1 example has positive probability, fewer than b = 2"
    assert np.all(mc.with_replacement <= 4e-16)  # every draw is that example: exact but for one rounding
    np.testing.assert_allclose(mc.exact.numpy(), G[1].numpy())
    two = mc_gradient_errors(torch.tensor([0.5, 0.5, 0.0]), G, batch_size=3, batches=5)
    assert two.without_replacement is None and "only 2 examples have" in two.without_reason
    assert mc_gradient_errors(torch.tensor([0.5, 0.5, 0.0]), G, batch_size=2, batches=5).without_reason is None


def test_mc_gradient_errors_are_absolute_when_the_gradient_is_zero():
    G = torch.tensor([[1.0, 0.0], [-1.0, 0.0]])
    mc = mc_gradient_errors(torch.tensor([0.5, 0.5]), G, batch_size=1, batches=4)
    assert mc.scale == 1.0 and float(mc.exact.norm()) == 0.0
    assert np.all(np.isfinite(mc.with_replacement)) and mc.predicted[0] == pytest.approx(1.0)


def test_mc_gradient_errors_rejects_bad_inputs():
    G = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="grads"):
        mc_gradient_errors(torch.ones(4) / 4, G, batch_size=2, batches=5)
    with pytest.raises(TypeError, match="grads"):
        mc_gradient_errors(torch.ones(3) / 3, [[0.0]], batch_size=2, batches=5)
    with pytest.raises(ValueError, match="q"):
        mc_gradient_errors(torch.tensor([0.5, -0.5, 1.0]), G, batch_size=1, batches=5)


def test_simulate_history_ages_follows_the_geometric_tail_and_draws_from_q():
    n, b, beta = 40, 4, 1.0
    losses = torch.tensor(RNG.uniform(0.0, 2.0, n))
    run = simulate_history_ages(losses, b, beta=beta, epochs=60, every=3, seed=0)
    q = softmax(beta * losses.numpy())
    np.testing.assert_allclose(run.q.numpy(), q, rtol=1e-5)
    ages = run.ages.numpy()
    assert ages.min() >= 0 and ages.size == (ages.size // n) * n
    for k in (1, 3, 6, 10):  # P(age ≥ k) = (1/n) Σ_i (1 − q_i)^{kb}: no draw of i in the last k batches
        assert np.mean(ages >= k) == pytest.approx(np.mean((1 - q) ** (k * b)), abs=0.02)
        assert np.mean(ages >= k) <= (1 - q.min()) ** (k * b) + 0.02  # the paper's bound, eq. 104
    draws = run.draws.numpy()
    assert draws.sum() == 60 * (n // b + 1) * b
    freq = draws / draws.sum()
    sd = np.sqrt(q * (1 - q) / draws.sum())
    assert np.all(np.abs(freq - q) < 5 * sd + 1e-9)
    top = torch.zeros(n, dtype=torch.bool)
    top[: n // 2] = True
    assert run.drawn_share(top) == pytest.approx(q[: n // 2].sum(), abs=5 * np.sqrt(0.25 / draws.sum()))


def test_simulate_history_ages_rejects_bad_inputs():
    with pytest.raises(ValueError, match="epochs"):
        simulate_history_ages(LOSSES, 2, beta=1.0, epochs=1)
    with pytest.raises(ValueError, match="beta"):
        simulate_history_ages(LOSSES, 2, beta=-1.0, epochs=2)
    with pytest.raises(ValueError, match="losses"):
        simulate_history_ages(torch.tensor([0.1, float("nan")]), 1, beta=1.0, epochs=2)
    with pytest.raises(ValueError, match="every"):
        simulate_history_ages(LOSSES, 4, beta=1.0, epochs=2, every=100)
