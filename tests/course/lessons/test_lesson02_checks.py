"""Lesson 02's checks (``dro_course.lessons.hardness_weighted_sampling``) hold for every input the lesson allows.

A check states a fact; its tolerance is derived, so it must pass on any loss vector, at any β, for any seed:

* hypothesis draws loss vectors of 2 to 300 entries at scales 1e-4 to 20 (light and heavy tails, ties, all equal,
  histories shaped like the lesson's) and β from 0.01 to 1000, and calls every check function on them;
* every check runs at seeds 0–4 and at both ends of the lesson's β slider (0.01 and 1000), both divergences, on
  histories shaped like the lesson's (n = 979, median ≈ 0.04 nats, max ≈ 9 nats: what 5 ERM epochs on the digits
  leave) and a small float64 network;
* a wrong value (a perturbed closed form, weights, gradients, ages …) makes each check raise ``LessonCheckError``.

Nothing here runs the notebook (tests/course/test_lessons.py reads the course run).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _stats import history_like, loss_vectors
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from dro_course.lessons import LessonCheckError, require
from dro_course.lessons import hardness_weighted_sampling as hws
from dro_course.lessons.hardness_weighted_sampling import draws, gradients, weights
from dro_course.lessons.hardness_weighted_sampling.diagnostics import GradientMC
from dro_lab.samplers import HardnessWeightedSampler

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BETAS = st.floats(-2.0, 3.0).map(lambda e: 10.0**e)  # the slider's range, log-uniform
DIVERGENCES = st.sampled_from(["kl", "chi2"])


def _model(seed: int, d: int = 6, classes: int = 3) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(d, 16), torch.nn.Tanh(), torch.nn.Linear(16, classes)).double()


# --------------------------------------------------------------------------- every check, over random inputs


@SETTINGS
@given(loss_vectors(), BETAS)
def test_robust_loss_check_holds(losses, beta):
    result = hws.check_robust_loss(losses, betas=(1e-3, beta, 100.0))
    assert len(result.rows) == len({1e-3, beta, 100.0}) and result.drop <= result.drop_allowed
    assert "β → 0, the mean" in str(result) and "β → ∞, the max" in str(result)


@SETTINGS
@given(loss_vectors(), DIVERGENCES, BETAS)
def test_worst_case_check_holds(losses, divergence, beta):
    result = hws.check_worst_case(losses, divergence=divergence, beta=beta)
    assert result.certificate.brackets(result.closed_form, result.closed_rounding)
    assert "SLSQP" in str(result)


@pytest.mark.parametrize("beta", [0.1, 1.0, 10.0])
def test_a_check_table_prints_each_beta_once(beta):
    """The lesson passes its own β beside fixed ones (0.1 and 1): at β = 1 the table has no second β = 1 row."""
    losses = np.linspace(0.0, 3.0, 12)
    result = weights.check_worst_cases(losses, betas=(0.1, 1.0, beta))
    for divergence in ("kl", "chi2"):
        betas = [c.beta for c in result.checks if c.divergence == divergence]
        assert betas == sorted({0.1, 1.0, beta})
    assert len(str(result).splitlines()) == 2 * len(result.checks)
    rows = hws.check_robust_loss(losses, betas=(1e-3, 0.1, 1.0, beta, 100.0)).rows
    assert [row[0] for row in rows] == sorted({1e-3, 0.1, 1.0, beta, 100.0})


@SETTINGS
@given(loss_vectors(), BETAS)
def test_sampler_probabilities_check_holds(losses, beta):
    assert hws.check_sampler_probabilities(losses, beta=beta).used <= 1.0


@SETTINGS
@given(st.integers(0, 2**16), st.integers(2, 40), st.floats(-3.0, 1.0), BETAS)
def test_lemma_3_2_check_holds(seed, m, log_scale, beta):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(m, 6, generator=gen, dtype=torch.float64) * 10.0**log_scale
    y = torch.randint(0, 3, (m,), generator=gen)
    result = hws.check_lemma_3_2(_model(seed), x, y, beta=beta)
    assert result.grads.shape[0] == m and max(result.err_autograd, result.err_library) <= result.allowed


@SETTINGS
@given(loss_vectors(), BETAS, st.integers(1, 20), st.integers(1, 60), st.integers(0, 2**16))
def test_mc_gradient_check_holds(losses, beta, batch_size, batches, seed):
    rng = np.random.default_rng(seed)
    q = torch.softmax(beta * torch.tensor(losses), 0)
    G = torch.tensor(rng.standard_t(2.0, size=(len(losses), 5)) * 10.0 ** rng.uniform(-3, 2))
    result = hws.check_mc_gradient(q, G, batch_size=batch_size, batches=batches,
                                   generator=torch.Generator().manual_seed(seed), beta=beta)  # fmt: skip
    assert result.error <= result.bound
    assert (result.mc.without_replacement is None) == (result.support < batch_size)


@SETTINGS
@given(loss_vectors(), DIVERGENCES, BETAS)
def test_jacobian_check_holds(losses, divergence, beta):
    try:
        result = hws.check_jacobian(losses, divergence=divergence, beta=beta)
    except ValueError as exc:  # a bracket exactly at 0: a kink of the χ² weights, where no derivative exists
        assume("kink" not in str(exc))
        raise
    assert result.used <= 1.0


@SETTINGS
@given(loss_vectors())
def test_jacobian_check_holds_at_the_lessons_clipping_beta(losses):
    beta = hws.chi2_clipping_beta(losses)
    if beta is None:  # equal losses: nothing clips at any β
        assert np.ptp(losses) == 0 or math.isinf(weights.fidon_eq21_threshold(losses))
        return
    result = hws.check_jacobian(losses, divergence="chi2", beta=beta)
    assert 0 < result.on.sum() < len(losses)  # some weights clip, some do not


@SETTINGS
@given(loss_vectors())
def test_eq21_check_holds(losses):
    result = hws.check_eq21(losses)
    if math.isinf(result.threshold):
        assert result.rows == () and "equal" in str(result)
    else:  # the sums were checked against their rounding bounds (large only when the threshold is huge)
        (first, *_), (second, *_) = result.rows
        assert second == pytest.approx(8 * first) and "≥ 1 + 3/n" in str(result)


@SETTINGS
@given(loss_vectors(), BETAS)
def test_sampler_chi2_check_holds(losses, beta):
    result = hws.check_sampler_chi2(losses, beta=beta)
    assert abs(result.total - 1) <= result.allowed


@SETTINGS
@given(BETAS, st.integers(0, 2**16), st.integers(2, 30), st.floats(-4.0, math.log10(20.0)))
def test_lipschitz_check_holds(beta, seed, size, log_scale):
    result = hws.check_lipschitz(beta, np.random.default_rng(seed), pairs=200, size=size, scale=10.0**log_scale)
    assert result.largest <= beta / 2 + result.rounding


@SETTINGS
@given(loss_vectors(), BETAS, st.integers(1, 20), st.integers(2, 3), st.integers(0, 2**16))
def test_staleness_check_holds(losses, beta, batch_size, epochs, seed):
    assume(len(losses) // batch_size + 1 >= 5)  # the burn-in epoch must leave a snapshot (every 5 iterations)
    result = hws.check_staleness(losses, batch_size, beta=beta, epochs=epochs, seed=seed)
    assert result.ages == len(losses) // batch_size + 2 and result.snapshots >= 1


@SETTINGS
@given(st.floats(0.0, 1.0), st.integers(1, 64), st.integers(1, 3000))
def test_exercise2_tolerance_is_a_bernstein_interval(mass, batch_size, batches):
    """The exact binomial tail beyond the tolerance is at most 10⁻⁶."""
    tol = hws.exercise2_tolerance(mass, batch_size=batch_size, batches=batches)
    draws_, centre, t = batch_size * batches, batch_size * batches * mass, tol * batches
    tail = binom.cdf(math.ceil(centre - t) - 1, draws_, mass) + binom.sf(math.floor(centre + t), draws_, mass)
    assert tail <= 1e-6


# --------------------------------------------------------------------------- seeds 0–4, both ends of the slider


def _lesson_like(seed: int):
    rng = np.random.default_rng(seed)
    history = history_like(979, rng)
    rare = rng.choice(979, 11, replace=False)
    others = np.setdiff1d(np.arange(979), rare)
    return history, rare, others, rng


@pytest.mark.parametrize("beta", [0.01, 1000.0])
@pytest.mark.parametrize("seed", range(5))
def test_every_check_at_the_seeds_and_the_ends_of_the_beta_slider(seed, beta):
    history, rare, others, rng = _lesson_like(seed)
    v12 = history[hws.pick_losses(rare, others, rng)]
    batch_size = 20
    calls = [
        lambda: hws.check_robust_loss(history, betas=(1e-3, 0.1, 1.0, beta, 100.0)),
        *(lambda d=d, b=b: hws.check_worst_case(v12, divergence=d, beta=b) for d in ("kl", "chi2")
          for b in (0.1, 1.0, beta)),
        lambda: hws.check_sampler_probabilities(history, beta=beta),
        lambda: hws.check_jacobian(v12, divergence="kl", beta=beta),
        lambda: hws.check_jacobian(v12, divergence="chi2", beta=hws.chi2_clipping_beta(v12)),
        lambda: hws.check_eq21(v12),
        lambda: hws.check_sampler_chi2(history, beta=2 * beta),
        lambda: hws.check_lipschitz(beta, rng),
        *(lambda b=b: hws.check_staleness(history, batch_size, beta=b, epochs=4, seed=seed) for b in (1.0, beta)),
    ]  # fmt: skip
    for call in calls:
        assert str(call())
    gen = torch.Generator().manual_seed(seed)
    x, y = torch.randn(96, 6, generator=gen, dtype=torch.float64), torch.randint(0, 3, (96,), generator=gen)
    lemma = hws.check_lemma_3_2(_model(seed), x, y, beta=beta)
    mc = hws.check_mc_gradient(lemma.q, lemma.grads, batch_size=batch_size, batches=400,
                               generator=torch.Generator().manual_seed(seed), beta=beta)  # fmt: skip
    assert (mc.mc.without_replacement is None) == (mc.support < batch_size) == ("impossible" in str(mc))
    called = {hws.check_robust_loss, hws.check_worst_case, hws.check_sampler_probabilities, hws.check_jacobian,
              hws.check_eq21, hws.check_sampler_chi2, hws.check_lipschitz, hws.check_staleness, hws.check_lemma_3_2,
              hws.check_mc_gradient}  # fmt: skip
    assert called == set(hws.CHECKS)  # every check of the lesson, in this one test


def test_the_list_of_checks_is_complete():
    """CHECKS names every check function of the lesson's module (the test above calls each of them)."""
    assert set(hws.CHECKS) == {getattr(hws, name) for name in hws.__all__ if name.startswith("check_")}


def test_the_ages_the_staleness_check_relies_on():
    """What check_staleness assumes of the sampler, read off a run: every hardness-weighted batch holds b draws (no
    short last batch), an entry drawn in the current iteration has age 0, and for k up to the hardness-weighted
    batches so far, age ≥ k exactly when the entry was not drawn in the last k batches."""
    n, b = 23, 4
    losses = torch.rand(n, generator=torch.Generator().manual_seed(0))
    sampler = HardnessWeightedSampler(n, b, beta=1.0, device="cpu", generator=torch.Generator().manual_seed(1))
    recent: list[set] = []
    for epoch in range(4):
        for idx in sampler.batches():
            sampler.update(idx, losses[idx])
            ages = sampler.ages()
            assert bool((ages[idx] == 0).all())
            if epoch == 0:
                continue  # the warm start (its last batch is short: ⌈n/b⌉ batches cover every example once)
            assert len(idx) == b
            recent.insert(0, set(idx.tolist()))
            for k in range(1, len(recent) + 1):
                missed = {i for i in range(n) if all(i not in batch for batch in recent[:k])}
                assert {i for i in range(n) if int(ages[i]) >= k} == missed
        assert epoch == 0 or sampler.phase == "dro"
    assert len(recent) == 3 * (n // b + 1)  # ⌊n/b⌋ + 1 hardness-weighted batches per epoch


def test_pick_losses_takes_fewer_rare_ones_when_the_class_is_small():
    rng = np.random.default_rng(0)
    for rare_count, wanted in ((2, 2), (3, 3), (50, 3)):
        pick = hws.pick_losses(np.arange(rare_count), np.arange(100, 200), rng)
        assert len(pick) == 12 and len(set(pick.tolist())) == 12 and int((pick < 100).sum()) == wanted
    with pytest.raises(ValueError, match="others"):
        hws.pick_losses(np.arange(2), np.arange(100, 105), rng)
    with pytest.raises(TypeError, match="generator"):
        hws.pick_losses(np.arange(2), np.arange(100, 200), 0)


# --------------------------------------------------------------------------- a wrong value is caught


V12 = np.random.default_rng(3).exponential(size=12)


def _perturbed(original, factor):
    return lambda *args, **kwargs: original(*args, **kwargs) * factor


@pytest.mark.parametrize(
    ("module", "name", "wrong", "call", "fact"),
    [
        (weights, "robust_loss", lambda f: _perturbed(f, 1 + 1e-9),
         lambda: hws.check_robust_loss(V12, betas=(1.0,)), "robust_loss = SciPy's log-mean-exp"),
        (weights, "_scipy_lme", lambda f: _perturbed(f, 1 + 1e-9),
         lambda: hws.check_worst_case(V12, divergence="kl", beta=10.0), "the closed form lies between"),
        (weights, "worst_case_weights", lambda f: lambda *a, **k: 0.999 * f(*a, **k) + 0.001 / 12,
         lambda: hws.check_worst_case(V12, divergence="chi2", beta=10.0), "worst_case_weights reach the maximum"),
        (weights, "fidon_eq21_weights", lambda f: lambda ell, b: f(ell, b) / f(ell, b).sum(),
         lambda: hws.check_eq21(V12), "eq. \\(21\\) as printed sums to ≥ 1 \\+ 3/n"),
        (gradients, "weights_jacobian", lambda f: lambda *a, **k: f(*a, **k) + 1e-6,
         lambda: hws.check_jacobian(V12, divergence="kl", beta=10.0), "closed-form Jacobian"),
        (gradients, "weights_jacobian", lambda f: lambda *a, **k: f(*a, **k) * (1 + 1e-9),
         lambda: hws.check_jacobian(V12, divergence="chi2", beta=hws.chi2_clipping_beta(V12)), "closed-form Jacobian"),
    ],
    ids=["robust-loss", "kl-closed-form", "chi2-weights", "eq21-renormalised", "kl-jacobian", "chi2-jacobian"],
)  # fmt: skip
def test_a_wrong_value_raises_a_lesson_check_error(monkeypatch, module, name, wrong, call, fact):
    monkeypatch.setattr(module, name, wrong(getattr(module, name)))
    with pytest.raises(LessonCheckError, match=fact):
        call()


def test_a_wrong_sampler_is_caught(monkeypatch):
    original = weights.HardnessWeightedSampler

    def hotter(n, b, *, beta, **kwargs):  # a sampler whose β is off by 0.1 %
        return original(n, b, beta=beta * 1.001, **kwargs)

    monkeypatch.setattr(weights, "HardnessWeightedSampler", hotter)
    with pytest.raises(LessonCheckError, match="draws from softmax"):
        hws.check_sampler_probabilities(V12, beta=10.0)
    monkeypatch.setattr(weights, "HardnessWeightedSampler", lambda *a, **k: _Scaled(original(*a, **k)))
    with pytest.raises(LessonCheckError, match="sum to 1"):
        hws.check_sampler_chi2(V12, beta=10.0)


class _Scaled:
    def __init__(self, sampler):
        self.sampler = sampler

    def probabilities(self):
        return self.sampler.probabilities() * (1 + 1e-5)


def test_wrong_gradients_are_caught(monkeypatch):
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(20, 6, generator=gen, dtype=torch.float64), torch.randint(0, 3, (20,), generator=gen)
    original = gradients.vmap_grads
    monkeypatch.setattr(gradients, "vmap_grads", lambda *a: {k: v * (1 + 1e-8) for k, v in original(*a).items()})
    with pytest.raises(LessonCheckError, match="Lemma 3.2"):
        hws.check_lemma_3_2(_model(0), x, y, beta=10.0)


def test_a_monte_carlo_error_beyond_mcdiarmid_is_caught(monkeypatch):
    original = gradients.mc_gradient_errors

    def biased(*args, **kwargs):  # an estimator off by twenty times its error
        mc = original(*args, **kwargs)
        return GradientMC(mc.ms, mc.with_replacement * 0 + 20.0, mc.without_replacement, mc.predicted, mc.exact, mc.q,
                          mc.scale, mc.without_reason)  # fmt: skip

    monkeypatch.setattr(gradients, "mc_gradient_errors", biased)
    G = torch.tensor(np.random.default_rng(0).normal(size=(12, 4)))
    with pytest.raises(LessonCheckError, match="McDiarmid"):
        hws.check_mc_gradient(torch.softmax(torch.tensor(V12), 0), G, batch_size=4, batches=50)


def test_a_softmax_steeper_than_beta_over_two_is_caught(monkeypatch):
    original = torch.softmax  # a softmax of 300·x: at β = 0.01 its ratios reach far beyond β/2 = 0.005
    monkeypatch.setattr(torch, "softmax", lambda x, dim: original(300.0 * x, dim))
    with pytest.raises(LessonCheckError, match="Lipschitz"):
        hws.check_lipschitz(0.01, np.random.default_rng(0), pairs=200)


def test_stale_ages_beyond_the_tail_bound_are_caught(monkeypatch):
    original = draws.simulate_history_ages

    def older(*args, **kwargs):  # every entry 1000 iterations older than it is
        run = original(*args, **kwargs)
        return type(run)(run.ages + 1000, run.q, run.draws, run.batch_size)

    monkeypatch.setattr(draws, "simulate_history_ages", older)
    with pytest.raises(LessonCheckError, match=r"eq. \(104\)"):
        hws.check_staleness(np.random.default_rng(0).uniform(0, 1, 200), 10, beta=1.0, epochs=2)


def test_a_lesson_check_error_is_an_assertion_error():
    with pytest.raises(AssertionError, match="the fact does not hold: 1 > 0"):
        require(False, "the fact", "1 > 0")
    require(True, "never raised", "")
