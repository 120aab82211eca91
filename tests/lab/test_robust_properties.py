"""Property-based tests (hypothesis) of the worst-case weights and robust losses in ``dro_lab.robust``.

The oracles are the defining properties, not the code's own output: the simplex, monotonicity of the worst-case
value and of the divergence in β, the β → 0 and β → ∞ limits, the β ↔ r duality through the divergence the
solution reaches, CVaR as the mean of the worst α-fraction (brute force), and the behaviour under shifting and
scaling the losses. Where maximisers are not unique (tied losses), objective values are compared, not weights.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dro_lab import divergence_value, radius_to_beta, robust_loss, worst_case_weights

SETTINGS = settings(
    max_examples=60, deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)  # no .hypothesis/ folder; CI-stable
DIVERGENCES = ("kl", "chi2")

# Loss vectors: finite, moderate, with ties allowed (integers / 4 make ties likely).
finite = st.floats(min_value=-50.0, max_value=50.0, allow_nan=False, allow_infinity=False, width=64)
loss_vectors = st.one_of(
    st.lists(finite, min_size=1, max_size=12),
    st.lists(st.integers(-8, 8).map(lambda v: v / 4), min_size=1, max_size=12),
).map(lambda xs: torch.tensor(xs, dtype=torch.float64))


@st.composite
def losses_and_prior(draw):
    losses = draw(loss_vectors)
    raw = draw(st.lists(st.floats(0.05, 1.0), min_size=len(losses), max_size=len(losses)))
    prior = torch.tensor(raw, dtype=torch.float64)
    return losses, prior / prior.sum()


betas = st.floats(min_value=0.0, max_value=50.0, allow_nan=False)


def _value(q: torch.Tensor, losses: torch.Tensor) -> float:
    return float((q * losses).sum())


def _objective(q, losses, prior, divergence, beta) -> float:
    """The penalised objective ⟨q, ℓ⟩ − D(q‖p)/β that the weights maximise."""
    return _value(q, losses) - float(divergence_value(q, prior, divergence)) / beta


def _on_simplex(q: torch.Tensor, atol: float = 1e-9) -> None:
    assert torch.isfinite(q).all()
    assert (q >= -atol).all()
    assert abs(float(q.sum()) - 1.0) < 1e-6


# --------------------------------------------------------------------------------------------
# The simplex, optimality against random feasible points
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(losses_and_prior(), st.floats(1e-3, 50.0), st.sampled_from(DIVERGENCES))
def test_penalised_weights_are_a_distribution_and_beat_random_points(lp, beta, divergence):
    # β ≥ 1e-3: below it D/β turns the rounding of a random point's sum into a huge objective
    losses, prior = lp
    q = worst_case_weights(losses, divergence=divergence, beta=beta, prior=prior)
    _on_simplex(q)
    best = _objective(q, losses, prior, divergence, beta)
    # No feasible point does better: random points of the simplex that keep q's support inside p's.
    gen = np.random.default_rng(0)
    for i in range(20):
        r = torch.from_numpy(gen.dirichlet(np.ones(len(losses))))
        r = 0.5 * r + 0.5 * q if i % 2 else r  # near and far from q
        r = r / r.sum()
        assert _objective(r, losses, prior, divergence, beta) <= best + 1e-7 * (1 + abs(best))


@SETTINGS
@given(losses_and_prior(), st.floats(0.01, 1.0))
def test_cvar_weights_are_capped_and_a_distribution(lp, alpha):
    losses, prior = lp
    q = worst_case_weights(losses, divergence="cvar", alpha=alpha, prior=prior)
    _on_simplex(q)
    assert (q <= prior / alpha + 1e-9).all()


# --------------------------------------------------------------------------------------------
# Monotonicity in β (the value and the divergence; single weights need not be monotone)
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(losses_and_prior(), betas, betas, st.sampled_from(DIVERGENCES))
def test_value_and_divergence_are_non_decreasing_in_beta(lp, b1, b2, divergence):
    losses, prior = lp
    lo, hi = sorted((b1, b2))
    q_lo = worst_case_weights(losses, divergence=divergence, beta=lo, prior=prior)
    q_hi = worst_case_weights(losses, divergence=divergence, beta=hi, prior=prior)
    scale = 1 + float(losses.abs().max())
    assert _value(q_hi, losses) >= _value(q_lo, losses) - 1e-8 * scale
    d_lo = float(divergence_value(q_lo, prior, divergence))
    d_hi = float(divergence_value(q_hi, prior, divergence))
    assert d_hi >= d_lo - 1e-8 * (1 + d_lo)


@SETTINGS
@given(losses_and_prior(), st.sampled_from(DIVERGENCES))
def test_robust_loss_lies_between_the_mean_and_the_max(lp, divergence):
    losses, prior = lp
    for beta in (0.1, 1.0, 10.0):
        value = float(robust_loss(losses, divergence=divergence, beta=beta, prior=prior))
        mean, top = float((prior * losses).sum()), float(losses.max())
        assert mean - 1e-8 * (1 + abs(mean)) <= value <= top + 1e-8 * (1 + abs(top))


# --------------------------------------------------------------------------------------------
# The limits
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(losses_and_prior(), st.sampled_from(DIVERGENCES))
def test_beta_zero_gives_the_prior(lp, divergence):
    losses, prior = lp
    q = worst_case_weights(losses, divergence=divergence, beta=0.0, prior=prior)
    torch.testing.assert_close(q, prior, rtol=0, atol=1e-12)
    q_small = worst_case_weights(losses, divergence=divergence, beta=1e-9, prior=prior)
    torch.testing.assert_close(q_small, prior, rtol=0, atol=1e-6)


@SETTINGS
@given(losses_and_prior(), st.sampled_from(DIVERGENCES))
def test_beta_infinity_gives_the_prior_on_the_argmax_set(lp, divergence):
    losses, prior = lp
    top = losses == losses.max()
    expected = torch.where(top, prior, torch.zeros_like(prior))
    expected = expected / expected.sum()
    q = worst_case_weights(losses, divergence=divergence, beta=float("inf"), prior=prior)
    torch.testing.assert_close(q, expected, rtol=0, atol=1e-12)
    # A large finite β approaches it once the gap to the runner-up is resolved.
    rest = losses[~top]
    gap = float(losses.max() - rest.max()) if len(rest) else 1.0
    q_big = worst_case_weights(losses, divergence=divergence, beta=200.0 / gap, prior=prior)
    assert float(q_big[top].sum()) > 1 - 1e-3


@SETTINGS
@given(loss_vectors)
def test_cvar_limits_and_the_mean_of_the_worst_fraction(losses):
    n = len(losses)
    uniform = torch.full((n,), 1.0 / n, dtype=torch.float64)
    torch.testing.assert_close(worst_case_weights(losses, divergence="cvar", alpha=1.0), uniform, rtol=0, atol=1e-12)
    # α ≤ 1/n: the worst single example's loss.
    q = worst_case_weights(losses, divergence="cvar", alpha=1.0 / n)
    assert abs(_value(q, losses) - float(losses.max())) < 1e-9 * (1 + float(losses.abs().max()))
    # α = k/n: the mean of the k largest losses (brute force by sorting).
    for k in range(1, n + 1):
        q = worst_case_weights(losses, divergence="cvar", alpha=k / n)
        worst_k = float(np.sort(losses.numpy())[::-1][:k].mean())
        assert abs(_value(q, losses) - worst_k) < 1e-9 * (1 + abs(worst_k))


# --------------------------------------------------------------------------------------------
# β ↔ r duality
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(losses_and_prior(), st.floats(1e-3, 2.0), st.sampled_from(DIVERGENCES))
def test_radius_and_beta_describe_the_same_solution(lp, radius, divergence):
    losses, prior = lp
    assume(float(losses.max() - losses.min()) > 1e-3)
    q_r = worst_case_weights(losses, divergence=divergence, radius=radius, prior=prior)
    _on_simplex(q_r)
    d_r = float(divergence_value(q_r, prior, divergence))
    assert d_r <= radius * (1 + 1e-4) + 1e-9  # feasible
    beta = radius_to_beta(losses, radius, divergence=divergence, prior=prior)
    if math.isfinite(beta):
        # The ball's boundary is reached, and the penalised solution at β(r) has the same value.
        assert abs(d_r - radius) <= 1e-3 * radius + 1e-7
        q_b = worst_case_weights(losses, divergence=divergence, beta=beta, prior=prior)
        scale = 1 + float(losses.abs().max())
        assert abs(_value(q_b, losses) - _value(q_r, losses)) < 1e-5 * scale
    else:
        # The radius is past what the worst case needs: the arg-max value.
        assert abs(_value(q_r, losses) - float(losses.max())) < 1e-6 * (1 + float(losses.abs().max()))


@SETTINGS
@given(losses_and_prior(), st.floats(1e-3, 1.0), st.floats(1e-3, 1.0), st.sampled_from(DIVERGENCES))
def test_a_larger_radius_gives_a_larger_worst_case_value(lp, r1, r2, divergence):
    losses, prior = lp
    lo, hi = sorted((r1, r2))
    v_lo = _value(worst_case_weights(losses, divergence=divergence, radius=lo, prior=prior), losses)
    v_hi = _value(worst_case_weights(losses, divergence=divergence, radius=hi, prior=prior), losses)
    assert v_hi >= v_lo - 1e-6 * (1 + float(losses.abs().max()))


# --------------------------------------------------------------------------------------------
# Shifting and scaling the losses
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(losses_and_prior(), st.floats(-100.0, 100.0), st.floats(0.1, 10.0), st.floats(0.01, 5.0))
def test_shift_and_scale(lp, shift, scale, beta):
    losses, prior = lp
    for divergence in DIVERGENCES:
        q = worst_case_weights(losses, divergence=divergence, beta=beta, prior=prior)
        # A constant shift changes nothing (the weights sum to one).
        q_shift = worst_case_weights(losses + shift, divergence=divergence, beta=beta, prior=prior)
        torch.testing.assert_close(q_shift, q, rtol=0, atol=1e-7)
        # Scaling the losses by s is scaling β by s (β has units of 1/loss).
        q_scaled = worst_case_weights(scale * losses, divergence=divergence, beta=beta / scale, prior=prior)
        torch.testing.assert_close(q_scaled, q, rtol=0, atol=1e-7)
        # The robust loss is translation-equivariant and positively homogeneous (with β / s).
        r = float(robust_loss(losses, divergence=divergence, beta=beta, prior=prior))
        r_shift = float(robust_loss(losses + shift, divergence=divergence, beta=beta, prior=prior))
        r_scaled = float(robust_loss(scale * losses, divergence=divergence, beta=beta / scale, prior=prior))
        assert abs(r_shift - (r + shift)) < 1e-7 * (1 + abs(r) + abs(shift))
        assert abs(r_scaled - scale * r) < 1e-7 * (1 + abs(scale * r))
    # CVaR is invariant to a positive scale and a shift of the losses.
    q = worst_case_weights(losses, divergence="cvar", alpha=0.3, prior=prior)
    value = _value(q, losses)
    q2 = worst_case_weights(scale * losses + shift, divergence="cvar", alpha=0.3, prior=prior)
    assert abs(_value(q2, scale * losses + shift) - (scale * value + shift)) < 1e-7 * (1 + abs(scale * value + shift))


# --------------------------------------------------------------------------------------------
# Numerics: large β, large losses, low-precision inputs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("divergence", ["kl", "chi2", "cvar"])
def test_large_beta_large_losses_and_low_precision_stay_finite(dtype, divergence):
    gen = torch.Generator().manual_seed(0)
    top = {torch.float16: 6e4, torch.bfloat16: 1e6, torch.float32: 1e6, torch.float64: 1e6}[dtype]
    for magnitude in (1.0, 1e3, top):
        losses = (torch.rand(257, generator=gen, dtype=torch.float64) * magnitude).to(dtype)
        for knob in ({"alpha": 0.05},) if divergence == "cvar" else ({"beta": 1e4}, {"beta": 1e-4}, {"radius": 0.5}):
            q = worst_case_weights(losses, divergence=divergence, **knob)
            assert q.dtype == dtype and torch.isfinite(q).all(), (dtype, magnitude, knob)
            q64 = q.double()
            assert (q64 >= 0).all() and abs(float(q64.sum()) - 1) < 1e-2
            if divergence != "cvar":
                value = robust_loss(losses, divergence=divergence, **knob)
                assert torch.isfinite(value).all()
        # At β = 1e4 the weight sits on the largest loss(es).
        if divergence == "kl":
            q = worst_case_weights(losses, divergence="kl", beta=1e4).double()
            assert float(q[losses.double() == losses.double().max()].sum()) > 0.99


@pytest.mark.parametrize("beta", [5e-324, 1e-310, 1e-300])
@pytest.mark.parametrize("divergence", DIVERGENCES)
def test_subnormal_beta_gives_the_prior(beta, divergence):
    """Found by hypothesis: χ² at β = 5e-324 returned NaN (2/β overflows to inf)."""
    losses = torch.tensor([0.0, 3.0, -1.0], dtype=torch.float64)
    prior = torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64)
    torch.testing.assert_close(worst_case_weights(losses, divergence=divergence, beta=beta, prior=prior), prior)


# --------------------------------------------------------------------------------------------
# Numerics of every other weighting method: β up to 1e4 (r down to 1e-4), losses up to 1e6, low precision
# --------------------------------------------------------------------------------------------

LOW_PRECISION = {torch.float16: 6e4, torch.bfloat16: 1e6, torch.float32: 1e6, torch.float64: 1e6}


def _big_losses(dtype, n=64):
    gen = torch.Generator().manual_seed(1)
    return (torch.rand(n, generator=gen, dtype=torch.float64) * LOW_PRECISION[dtype]).to(dtype)


def _finite_distribution(w, *, total=1.0, tol=1e-2):
    w64 = w.double()
    assert torch.isfinite(w64).all() and (w64 >= 0).all()
    assert abs(float(w64.sum()) - total) < tol * total


@pytest.mark.parametrize("dtype", list(LOW_PRECISION))
def test_done_weights_at_extreme_temperature(dtype):
    from dro_lab import done_weights

    losses = _big_losses(dtype)
    for r in (1e-4, 1.0, 1e4):
        w, log_u = done_weights(losses, r=r)
        assert w.dtype == dtype and torch.isfinite(log_u)
        _finite_distribution(w)
        w2, _ = done_weights(losses, r=r, log_u=log_u, eta=0.3)  # the compositional average
        assert torch.isfinite(w2.double()).all() and (w2.double() >= 0).all()


@pytest.mark.parametrize("draw", ["multinomial", "tree"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_hardness_weighted_sampler_at_extreme_beta(draw, dtype):
    from dro_lab import HardnessWeightedSampler

    losses = _big_losses(dtype, 200)
    sampler = HardnessWeightedSampler(
        200,
        16,
        beta=1e4,
        draw=draw,
        warm_start=False,
        history_init=losses,
        device="cpu",
        generator=torch.Generator().manual_seed(0),
    )
    q = sampler.probabilities()
    _finite_distribution(q)
    batch = next(iter(sampler))
    assert set(batch) == {int(losses.double().argmax())}  # all the mass on the largest loss
    sampler.update(torch.tensor(batch), torch.full((len(batch),), -1e6, dtype=dtype))
    _finite_distribution(sampler.probabilities())


def test_importance_sampler_with_huge_and_tiny_scores():
    from dro_lab import ImportanceSampler

    scores = torch.cat([torch.full((10,), 1e-30), torch.full((10,), 1e30)])
    sampler = ImportanceSampler(
        20, 4, alpha=0.5, scores_init=scores, device="cpu", generator=torch.Generator().manual_seed(0)
    )
    p = sampler.probabilities()
    _finite_distribution(p)
    assert float(p.min()) >= 0.5 / 20 - 1e-9  # the uniform half keeps every probability ≥ (1 − α)/N


def test_also_prox_step_and_spectral_weights_with_huge_losses():
    from dro_lab import extremile_spectrum, kl_prox_step, spectral_risk_weights

    grad = torch.tensor([1e6, -1e6, 0.0, 5e5], dtype=torch.float64)
    log_pi = torch.log(torch.full((4,), 0.25, dtype=torch.float64))
    for tau in (1e-4, 1.0):  # β = 1/τ up to 1e4
        for option in ("I", "II-euclid"):
            new = kl_prox_step(log_pi, grad, lr=1.0, tau=tau, log_prior=log_pi, option=option)
            _finite_distribution(new.exp(), tol=1e-9)
    losses = torch.tensor([1e6, 3.0, -1e6, 0.5], dtype=torch.float32)
    for penalty in ("kl", "chi2"):
        w = spectral_risk_weights(losses, extremile_spectrum(4, 2.0), shift_cost=1e-4, penalty=penalty)
        _finite_distribution(w)
