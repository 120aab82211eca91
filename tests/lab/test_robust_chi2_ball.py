"""The χ² ball's worst-case weights at large n against the sort-based closed form, written out in numpy here.

``worst_case_weights(losses, divergence="chi2", radius=r)`` finds the threshold η of q ∝ p·(ℓ − η)₊ by
O(n) passes without sorting. The oracle below sorts: on the k largest losses (prior mass P_k, mean μ_k,
variance σ_k² under p) the boundary χ²(q‖p) = r gives η_k = μ_k − σ_k/√((1 + r)P_k − 1), and the
maximiser is the k whose η_k lies between the k-th and the (k+1)-th largest loss (the KKT conditions;
Cauchy–Schwarz makes χ²(q_η‖p) non-decreasing in η, so exactly one k qualifies). Its moments are
recomputed centred, in float64, once k is known. The small-n oracle tests (SLSQP, brentq on the KKT
system) are in test_robust_oracle.py and keep covering the same code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import dro_lab.robust as robust
from dro_lab import radius_to_beta, robust_loss, worst_case_weights


def sorted_ball(losses: np.ndarray, radius: float, prior: np.ndarray | None = None):
    """(q, η, β) of max ⟨q, ℓ⟩ s.t. χ²(q‖p) ≤ r, from the losses sorted in decreasing order (numpy)."""
    losses = np.asarray(losses, np.float64)
    n = losses.size
    p = np.full(n, 1.0 / n) if prior is None else np.asarray(prior, np.float64)
    s = losses - losses[p > 0].max()
    top = (s == 0) & (p > 0)
    if radius >= 1.0 / p[top].sum() - 1.0:  # past χ² of the arg-max limit (p on the maxima): that limit
        return np.where(top, p, 0.0) / p[top].sum(), 0.0, math.inf
    order = np.argsort(-s, kind="stable")
    order = order[p[order] > 0]
    ss, ps = s[order], p[order]
    cum_p, cum_ps, cum_pss = np.cumsum(ps), np.cumsum(ps * ss), np.cumsum(ps * ss * ss)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = cum_ps / cum_p
        var = np.maximum(cum_pss / cum_p - mu * mu, 0.0)
        eta = mu - np.sqrt(var / ((1.0 + radius) * cum_p - 1.0))
    below = np.append(ss[1:], -np.inf)  # the next loss down
    ok = ((1.0 + radius) * cum_p > 1.0) & (eta < ss) & (eta >= below)
    k = int(np.flatnonzero(ok)[0]) + 1
    # the moments of the chosen prefix again, centred (no cancellation)
    top, w = ss[:k], ps[:k] / ps[:k].sum()
    m = float(np.sum(w * top))
    sd = math.sqrt(float(np.sum(w * (top - m) ** 2)))
    eta = m - sd / math.sqrt((1.0 + radius) * ps[:k].sum() - 1.0)
    raw = p * np.maximum(s - eta, 0.0)
    return raw / raw.sum(), eta, 2.0 / raw.sum()


def chi2(q, p) -> float:
    return float(np.sum((q - p) ** 2 / p))


LOSSES = {
    "uniform": lambda rng, n: rng.uniform(0.0, 3.0, n),
    "exponential": lambda rng, n: rng.exponential(1.0, n),
    "lognormal": lambda rng, n: np.exp(rng.normal(0.0, 2.0, n)),
    "ties": lambda rng, n: rng.integers(0, 6, n) / 2.0,
    "near-tied-top": lambda rng, n: 1e3 * (rng.random(n) < 1e-3) + 1e-6 * rng.random(n),
}


@pytest.mark.parametrize("radius", [0.01, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("kind", sorted(LOSSES))
def test_ball_at_n_1e5_equals_the_sorted_closed_form(kind, radius):
    n = 100_000
    losses = LOSSES[kind](np.random.default_rng(7), n)
    q_ref, _, beta_ref = sorted_ball(losses, radius)
    q = worst_case_weights(torch.from_numpy(losses), divergence="chi2", radius=radius).numpy()
    value, value_ref = float(q @ losses), float(q_ref @ losses)
    assert abs(value - value_ref) <= 1e-9 * abs(value_ref)
    assert np.abs(q - q_ref).max() <= 1e-9 * q_ref.max()
    u = np.full(n, 1.0 / n)
    boundary = radius if math.isfinite(beta_ref) else chi2(q_ref, u)  # past the arg-max limit: the limit
    assert abs(chi2(q, u) - boundary) <= 1e-9 * boundary
    assert radius_to_beta(torch.from_numpy(losses), radius, divergence="chi2") == pytest.approx(beta_ref, rel=1e-9)
    # the robust loss of the ball is the worst-case value
    loss = robust_loss(torch.from_numpy(losses), divergence="chi2", radius=radius)
    assert float(loss) == pytest.approx(value_ref, rel=1e-9)


@pytest.mark.parametrize("radius", [0.05, 0.5, 5.0])
def test_ball_with_a_prior_equals_the_sorted_closed_form(radius):
    n = 20_000
    rng = np.random.default_rng(3)
    losses = rng.gamma(2.0, 1.0, n)
    prior = rng.uniform(0.1, 1.0, n)
    prior[rng.random(n) < 0.1] = 0.0  # entries outside the support get no weight, whatever their loss
    losses[prior == 0] += 50.0
    prior /= prior.sum()
    q_ref, _, _ = sorted_ball(losses, radius, prior)
    q = worst_case_weights(
        torch.from_numpy(losses), divergence="chi2", radius=radius, prior=torch.from_numpy(prior)
    ).numpy()
    assert abs(float(q @ losses) - float(q_ref @ losses)) <= 1e-9 * float(q_ref @ losses)
    assert np.abs(q - q_ref).max() <= 1e-9 * q_ref.max()
    assert np.all(q[prior == 0] == 0)
    support = prior > 0
    assert abs(chi2(q[support], prior[support]) - radius) <= 1e-9 * radius


def test_the_sort_fallback_gives_the_same_weights(monkeypatch):
    """When the threshold iteration gives up (here: forced, after one step) the sort-based path answers."""
    n, radius = 50_000, 2.0
    losses = np.random.default_rng(11).exponential(1.0, n)
    q_ref, _, _ = sorted_ball(losses, radius)
    calls = []
    original = robust._chi2_ball

    def spy(*args):
        out = original(*args)
        calls.append(out is None)
        return out

    monkeypatch.setattr(robust, "_BALL_MAX_STEPS", 1)
    monkeypatch.setattr(robust, "_chi2_ball", spy)
    q = worst_case_weights(torch.from_numpy(losses), divergence="chi2", radius=radius).numpy()
    assert calls == [True]  # the iteration did give up
    assert np.abs(q - q_ref).max() <= 1e-9 * q_ref.max()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_radius_at_the_arg_max_limit_gives_the_limit(dtype):
    losses = torch.tensor([0.0, 2.0, 1.0, 2.0, 0.5], dtype=dtype)
    limit = 5 / 2 - 1  # χ² of the uniform distribution on the two maxima
    for radius in (limit, 10.0, math.inf):
        q = worst_case_weights(losses, divergence="chi2", radius=radius)
        assert q.dtype == dtype
        assert torch.equal(q, torch.tensor([0.0, 0.5, 0.0, 0.5, 0.0], dtype=dtype))
    assert radius_to_beta(losses, 10.0, divergence="chi2") == math.inf
    q = worst_case_weights(losses.double(), divergence="chi2", radius=0.999 * limit).numpy()
    q_ref, _, _ = sorted_ball(losses.double().numpy(), 0.999 * limit)
    assert np.abs(q - q_ref).max() <= 1e-9


@pytest.mark.parametrize("radius", [1.5e3, 5e3, 3e4])
def test_ball_inside_a_near_tied_top_group_stays_exact(radius):
    """About 100 losses at 1000 + U(0, 1e-6) and the rest near 0: radii past the group's χ² (≈ 999) put η inside
    the group, where raw moments of ℓ − η taken from far below cancel to the last digit."""
    n = 100_000
    losses = LOSSES["near-tied-top"](np.random.default_rng(7), n)
    q_ref, _, beta_ref = sorted_ball(losses, radius)
    assert math.isfinite(beta_ref) and 1 < np.count_nonzero(q_ref) < 100
    q = worst_case_weights(torch.from_numpy(losses), divergence="chi2", radius=radius).numpy()
    assert np.abs(q - q_ref).max() <= 1e-9 * q_ref.max()
    assert abs(chi2(q, np.full(n, 1.0 / n)) - radius) <= 1e-9 * radius
