"""ImportanceSampler (Lahire 2023, importance-sampled SGD) against independent oracles.

Every reference value comes from outside the code under test:

* numpy float64 ``p = (1 − α)/N + α · s^γ / Σ s^γ`` and ``w = (1/(N p))^e``, written out here;
* ``scipy.stats.chisquare`` goodness-of-fit of the drawn indices (fixed seeds, p-value 1e-3, bins
  with an expected count below 5 pooled), each paired with a power check (the same counts reject a
  wrong distribution) so that the test can fail;
* a Monte-Carlo check of unbiasedness of the weighted mini-batch mean against ``(1/N) Σ g_i``, and
  of its bias (towards ``Σ p_i g_i``) without weights;
* an uninterrupted run, for the resume tests.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _util import through_bytes
from scipy import stats
from torch.utils.data import DataLoader, TensorDataset

from dro_lab.samplers import IS_SCHEMES, ImportanceSampler

P_MIN = 1e-3
MANY = 10**9  # max_pending for statistical draws that never update


def _sampler(n, b, seed=0, **kw) -> ImportanceSampler:
    kw.setdefault("device", "cpu")
    return ImportanceSampler(n, b, generator=torch.Generator().manual_seed(seed), **kw)


def np_mixture(scores, alpha, power=1.0) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64) ** power
    n = s.size
    s_hat = s / s.sum() if s.sum() > 0 else np.full(n, 1.0 / n)
    return (1.0 - alpha) / n + alpha * s_hat


def chisquare_p(counts: np.ndarray, probs: np.ndarray) -> float:
    """Goodness-of-fit p-value, pooling bins with an expected count below 5 into one."""
    total = counts.sum()
    expected = probs * total
    small = expected < 5
    obs = list(counts[~small])
    exp = list(expected[~small])
    if small.any():
        obs.append(counts[small].sum())
        exp.append(expected[small].sum())
    return float(stats.chisquare(np.asarray(obs, float), np.asarray(exp, float)).pvalue)


def draw_counts(sampler: ImportanceSampler, steps: int) -> np.ndarray:
    counts = np.zeros(sampler.n, dtype=np.int64)
    it = sampler.batches()
    for _ in range(steps):
        try:
            idx = next(it)
        except StopIteration:
            it = sampler.batches()
            idx = next(it)
        counts += np.bincount(idx.numpy(), minlength=sampler.n)
    return counts


# --------------------------------------------------------------------------------------------
# 1. The distribution
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scheme,alpha,power",
    [("grad_norm", 0.5, 1.0), ("loss", 0.9, 1.0), ("last_layer", 0.3, 0.5), ("grad_norm", 0.7, 2.0)],
)
def test_probabilities_are_the_alpha_mixture_and_bounded_below(scheme, alpha, power):
    rng = np.random.default_rng(1)
    scores = rng.exponential(size=40)
    scores[[3, 17]] = 0.0  # zero scores still get (1 − α)/N
    s = _sampler(40, 4, scheme=scheme, alpha=alpha, power=power, scores_init=torch.tensor(scores))
    p = s.probabilities().numpy()
    ref = np_mixture(scores.astype(np.float32), alpha, power)
    np.testing.assert_allclose(p, ref, rtol=1e-6, atol=0)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert p.min() >= (1 - alpha) / 40 * (1 - 1e-12)
    assert p[3] == pytest.approx((1 - alpha) / 40, rel=1e-12)


def test_uniform_cases_alpha_zero_uniform_scheme_all_zero_scores_power_zero():
    scores = torch.tensor([0.0, 1.0, 5.0, 2.0])
    u = np.full(4, 0.25)
    np.testing.assert_allclose(_sampler(4, 1, alpha=0.0, scores_init=scores).probabilities().numpy(), u)
    np.testing.assert_allclose(
        _sampler(4, 1, scheme="uniform", alpha=0.9, scores_init=scores).probabilities().numpy(), u
    )
    np.testing.assert_allclose(_sampler(4, 1, alpha=0.9, scores_init=torch.zeros(4)).probabilities().numpy(), u)
    np.testing.assert_allclose(_sampler(4, 1, alpha=0.9, power=0.0, scores_init=scores).probabilities().numpy(), u)
    np.testing.assert_allclose(_sampler(4, 1, alpha=0.9).probabilities().numpy(), u)  # default scores: ones


def test_alpha_one_is_the_pure_scheme_and_needs_positive_scores():
    scores = np.array([1.0, 2.0, 3.0, 4.0])
    s = _sampler(4, 1, alpha=1.0, scores_init=torch.tensor(scores))
    np.testing.assert_allclose(s.probabilities().numpy(), scores / scores.sum(), rtol=1e-7)
    with pytest.raises(ValueError, match="alpha=1"):
        s.update([2], torch.tensor([0.0]))
    with pytest.raises(ValueError, match="alpha=1"):
        _sampler(4, 1, alpha=1.0, scores_init=torch.tensor([0.0, 1.0, 1.0, 1.0]))
    t = _sampler(4, 1, alpha=0.5, scores_init=torch.tensor([0.0, 1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="alpha=1"):
        t.alpha = 1.0


def test_huge_scores_do_not_overflow():
    scores = torch.tensor([3e38, 1e38, 0.0, 1.0])
    p = _sampler(4, 1, alpha=0.5, power=2.0, scores_init=scores).probabilities().numpy()
    ref = np_mixture(np.array([3.0, 1.0, 0.0, 1e-38]), 0.5, 2.0)
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p, ref, rtol=1e-6)


@pytest.mark.parametrize("alpha,power", [(0.6, 1.0), (0.9, 0.5)])
def test_draws_match_numpy_p_chisquare_and_reject_a_wrong_p(alpha, power):
    rng = np.random.default_rng(2)
    scores = rng.exponential(size=30).astype(np.float32)
    s = _sampler(30, 50, seed=3, alpha=alpha, power=power, scores_init=torch.tensor(scores), max_pending=MANY)
    counts = draw_counts(s, 400)  # 20,000 draws
    ref = np_mixture(scores, alpha, power)
    assert chisquare_p(counts, ref) > P_MIN
    assert chisquare_p(counts, np.full(30, 1 / 30)) < P_MIN  # power: uniform is rejected
    wrong = np_mixture(scores, alpha, 1.0 if power != 1.0 else 2.0)
    assert chisquare_p(counts, wrong) < P_MIN  # and so is the wrong exponent


def test_epoch_is_ceil_n_over_b_draws_with_replacement():
    s = _sampler(10, 4, scheme="uniform")
    assert len(s) == 3
    batches = list(s.batches())
    assert len(batches) == 3 and all(b.shape == (4,) and b.dtype == torch.int64 for b in batches)
    assert int(s.draw_counts().sum()) == 12
    assert s.epoch == 1
    # with replacement: a dominant example appears several times in one batch
    t = _sampler(10, 8, alpha=0.99, scores_init=torch.tensor([1000.0] + [0.0] * 9), max_pending=MANY)
    first = next(t.batches())
    assert int((first == 0).sum()) > 1


# --------------------------------------------------------------------------------------------
# 2. Weights
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("exponent", [1.0, 0.5, 0.0])
def test_weights_are_one_over_n_p_to_the_exponent_and_bounded(exponent):
    rng = np.random.default_rng(4)
    scores = (rng.exponential(size=25) ** 3).astype(np.float32)  # very uneven
    alpha = 0.8
    s = _sampler(25, 16, alpha=alpha, weight_exponent=exponent, scores_init=torch.tensor(scores), max_pending=MANY)
    ref_p = np_mixture(scores, alpha)
    for idx in s.batches():
        w = s.weights(idx)
        assert w.dtype == torch.float32 and not w.requires_grad
        np.testing.assert_allclose(w.numpy(), (1.0 / (25 * ref_p[idx.numpy()])) ** exponent, rtol=1e-5)
        assert float(w.max()) <= (1.0 / (1.0 - alpha)) ** exponent * (1 + 1e-6)


def test_weight_bound_is_attained_by_zero_scores():
    s = _sampler(5, 64, alpha=0.75, scores_init=torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0]))
    idx = next(s.batches())
    w = s.weights(idx).numpy()
    zero = idx.numpy() < 4
    assert zero.any()
    np.testing.assert_allclose(w[zero], 4.0, rtol=1e-6)  # 1/(1 − α)
    np.testing.assert_allclose(w[~zero], 1 / (5 * (0.25 / 5 + 0.75)), rtol=1e-6)


def test_clip_weights_is_opt_in():
    s = _sampler(5, 64, alpha=0.75, clip_weights=2.5, scores_init=torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0]))
    idx = next(s.batches())
    w = s.weights(idx).numpy()
    assert w.max() == pytest.approx(2.5)
    assert "clip_weights=2.5 (biased)" in repr(s)


def test_uniform_scheme_weights_are_one():
    s = _sampler(7, 3, scheme="uniform", scores_init=torch.arange(7.0))
    idx = next(s.batches())
    np.testing.assert_allclose(s.weights(idx).numpy(), 1.0, rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("exponent", [1.0, 0.0])
def test_monte_carlo_weighted_batch_mean_is_unbiased_only_with_weights(exponent):
    """E[(1/b) Σ w_i g_i] = (1/N) Σ g_i for e = 1; for e = 0 it is Σ p_i g_i (the forgotten-weights bias)."""
    rng = np.random.default_rng(5)
    n, b, steps = 20, 100, 1500
    g = rng.normal(size=(n, 3)) + np.array([1.0, -0.5, 0.0])
    g[:5] *= 4.0  # uneven norms
    proxy = np.linalg.norm(g, axis=1) * rng.uniform(0.2, 2.0, size=n)  # a stale / proxy score, not the norm
    s = _sampler(
        n,
        b,
        seed=6,
        scheme="grad_norm",
        alpha=0.6,
        weight_exponent=exponent,
        scores_init=torch.tensor(proxy, dtype=torch.float32),
        max_pending=MANY,
    )
    p = np_mixture(proxy.astype(np.float32), 0.6)
    est = np.empty((steps, 3))
    it, t = s.batches(), 0
    while t < steps:
        for idx in it:
            w = s.weights(idx).double().numpy()
            est[t] = (w[:, None] * g[idx.numpy()]).mean(0)
            t += 1
            if t == steps:
                break
        it = s.batches()
    mean, se = est.mean(0), est.std(0, ddof=1) / math.sqrt(steps)
    full, biased = g.mean(0), (p[:, None] * g).sum(0)
    assert np.linalg.norm(full - biased) > 20 * se.max()  # the two targets are distinguishable
    target, other = (full, biased) if exponent == 1.0 else (biased, full)
    assert np.all(np.abs(mean - target) < 4 * se), (mean, target, se)
    assert np.any(np.abs(mean - other) > 10 * se)


def test_stale_weights_use_the_draw_time_probabilities():
    scores0 = np.array([1.0, 2.0, 3.0, 4.0, 10.0], dtype=np.float32)
    s = _sampler(5, 2, alpha=0.5, scores_init=torch.tensor(scores0), max_pending=2)
    it = s.batches()
    a = next(it)
    p_a = np_mixture(scores0, 0.5)
    # the scores change (an update after the draw, before the weights are asked for)
    s.update(torch.tensor([4, 0]), torch.tensor([0.0, 50.0]))
    scores1 = scores0.copy()
    scores1[4], scores1[0] = 0.0, 50.0
    b_ = next(it)  # drawn from the new scores
    p_b = np_mixture(scores1, 0.5)
    np.testing.assert_allclose(s.weights(a).numpy(), 1 / (5 * p_a[a.numpy()]), rtol=1e-6)
    np.testing.assert_allclose(s.weights(b_).numpy(), 1 / (5 * p_b[b_.numpy()]), rtol=1e-6)
    np.testing.assert_allclose(s.last_probabilities().numpy(), p_b, rtol=1e-6)
    # a batch the sampler did not draw (or drew too long ago) has no draw-time p
    with pytest.raises(ValueError, match="not one of the last"):
        s.weights(torch.tensor([0, 1, 2, 3, 4, 0]))
    with pytest.raises(ValueError, match="not one of the last"):
        s.weights(a[:1])


def test_weights_accept_lists_and_the_oldest_matching_batch_with_prefetching():
    s = _sampler(6, 2, alpha=0.5, scores_init=torch.arange(1.0, 7.0), max_pending=3)
    it = s.batches()
    first = next(it)
    expected = s.weights(first).numpy()
    s.scores.mul_(0.0).add_(torch.tensor([9.0, 1, 1, 1, 1, 1]))
    s._p = None
    next(it)
    next(it)  # prefetched batches drawn from other p's
    np.testing.assert_allclose(s.weights(first.tolist()).numpy(), expected, rtol=1e-7)


# --------------------------------------------------------------------------------------------
# 3. Updates, refreshes, staleness guard
# --------------------------------------------------------------------------------------------


def test_update_writes_scores_and_duplicates_get_their_mean():
    s = _sampler(6, 3)
    s.update(torch.tensor([1, 4, 1]), torch.tensor([2.0, 7.0, 4.0]))
    np.testing.assert_allclose(s.scores.numpy(), [1.0, 3.0, 1.0, 1.0, 7.0, 1.0])
    np.testing.assert_allclose(s.probabilities().numpy(), np_mixture([1, 3, 1, 1, 7, 1], 0.5), rtol=1e-6)


def test_refresh_every_k_calls_refresh_fn_before_draws_0_k_2k():
    calls = []
    table = torch.arange(1.0, 9.0)

    def refresh():
        calls.append(len(calls))
        return table * (len(calls))

    s = _sampler(8, 2, refresh_every=3, refresh_fn=refresh, max_pending=MANY)
    seen_steps = []
    for _ in range(2):
        for _idx in s.batches():
            seen_steps.append(s.step)
    assert len(seen_steps) == 8
    assert len(calls) == 3  # before draws 0, 3, 6
    np.testing.assert_allclose(s.scores.numpy(), (table * 3).numpy())


def test_refresh_every_1_is_the_exact_scheme_and_needs_no_update():
    scores = torch.tensor([1.0, 0.0, 3.0, 0.0])
    s = _sampler(4, 500, alpha=0.5, refresh_every=1, refresh_fn=lambda: scores)
    counts = draw_counts(s, 20)  # no update: no staleness error
    assert chisquare_p(counts, np_mixture(scores.numpy(), 0.5)) > P_MIN


@pytest.mark.parametrize("opts", [dict(scheme="uniform", alpha=0.5), dict(scheme="grad_norm", alpha=0.0)])
def test_uniform_p_never_calls_refresh_fn_and_draws_uniformly(opts):
    calls = []
    s = _sampler(6, 300, refresh_every=1, refresh_fn=lambda: calls.append(1) or torch.arange(1.0, 7.0), **opts)
    counts = draw_counts(s, 10)
    assert calls == []  # p = u reads no score: no scoring pass at all
    assert chisquare_p(counts, np.full(6, 1 / 6)) > P_MIN
    assert chisquare_p(counts, np_mixture(np.arange(1.0, 7.0), 1.0)) < P_MIN  # power: p ∝ the scores is rejected


def test_a_refresh_owed_while_alpha_is_0_is_made_before_the_first_draw_with_alpha_above_0():
    calls = []

    def refresh():
        calls.append(s.step)
        return torch.arange(1.0, 13.0)

    s = _sampler(12, 2, alpha=0.0, refresh_every=3, refresh_fn=refresh, max_pending=MANY)
    it = s.batches()
    next(it)  # draw 0: a refresh falls due, skipped (p = u)
    next(it)  # draw 1
    assert calls == []
    state = s.state_dict()  # the owed refresh is part of the state
    s.alpha = 0.5  # a slider moves
    next(it)  # draw 2: the owed refresh first
    next(it)  # draw 3: on schedule
    next(it)  # draw 4: nothing due
    assert calls == [2, 3]
    calls.clear()
    t = _sampler(12, 2, seed=3, refresh_every=3, refresh_fn=refresh, max_pending=MANY)
    t.load_state_dict(state)
    t.alpha = 0.5
    s = t  # refresh() records the step of the sampler it serves
    next(t.batches())  # draw 2 of the restored run
    assert calls == [2]


def test_max_pending_guards_staleness_of_the_stale_table():
    s = _sampler(10, 2, max_pending=1)
    it = s.batches()
    next(it)
    next(it)
    with pytest.raises(RuntimeError, match=r"(?s)without sampler.update\(\).*num_workers"):
        next(it)
    u = _sampler(10, 2, scheme="uniform")  # uniform does not learn from updates: never stale
    assert len(list(u.batches())) == 5


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"scheme": "gradnorm"}, ValueError, "scheme must be one of"),
        ({"scheme": 3}, ValueError, "scheme must be one of"),
        ({"alpha": -0.1}, ValueError, "alpha"),
        ({"alpha": 1.5}, ValueError, "alpha"),
        ({"alpha": float("nan")}, ValueError, "alpha"),
        ({"power": -1.0}, ValueError, "power"),
        ({"weight_exponent": 1.5}, ValueError, "weight_exponent"),
        ({"weight_exponent": -0.5}, ValueError, "weight_exponent"),
        ({"clip_weights": 0.0}, ValueError, "clip_weights"),
        ({"refresh_every": 2}, ValueError, "refresh_every needs refresh_fn"),
        ({"refresh_every": 0, "refresh_fn": lambda: None}, ValueError, "refresh_every"),
        ({"refresh_fn": 3}, TypeError, "refresh_fn must be callable"),
        ({"scores_init": torch.tensor([1.0, -1.0, 1.0, 1.0])}, ValueError, "≥ 0"),
        ({"scores_init": torch.tensor([1.0, float("nan"), 1.0, 1.0])}, ValueError, "NaN"),
        ({"scores_init": torch.ones(3)}, ValueError, "n=4"),
        ({"scores_init": -2.0}, ValueError, "scores_init"),
        ({"max_pending": -1}, ValueError, "max_pending"),
        ({"rank": 2, "world_size": 2}, ValueError, "rank"),
        ({"generator": 5}, TypeError, "generator"),
    ],
)
def test_constructor_rejects_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        _sampler(4, 2, **kwargs) if "generator" not in kwargs else ImportanceSampler(4, 2, device="cpu", **kwargs)


def test_batch_size_and_dataset_are_validated():
    with pytest.raises(ValueError, match="batch_size"):
        _sampler(4, 0)
    with pytest.raises(TypeError, match="batch_size"):
        _sampler(4, 2.0)
    with pytest.raises(ValueError, match="empty"):
        _sampler(0, 2)


@pytest.mark.parametrize(
    "indices,scores,exc,match",
    [
        ([0, 4], torch.tensor([1.0, 1.0]), ValueError, "out of range"),
        ([-1, 0], torch.tensor([1.0, 1.0]), ValueError, "out of range"),
        ([0, 1], torch.tensor([1.0, -1.0]), ValueError, "≥ 0"),
        ([0, 1], torch.tensor([1.0, float("nan")]), ValueError, "NaN"),
        ([0, 1], torch.tensor([1.0, float("inf")]), ValueError, "NaN or inf"),
        ([0, 1, 2], torch.tensor([1.0, 1.0]), ValueError, "same length"),
        ([], torch.tensor([]), ValueError, "empty"),
        ([0.0, 1.0], torch.tensor([1.0, 1.0]), TypeError, "integers"),
        ([0, 1], [1.0, 1.0], TypeError, "tensor"),
    ],
)
def test_update_rejects_bad_batches_and_leaves_the_scores_alone(indices, scores, exc, match):
    s = _sampler(4, 2)
    with pytest.raises(exc, match=match):
        s.update(indices, scores)
    np.testing.assert_array_equal(s.scores.numpy(), np.ones(4))


def test_refresh_fn_output_is_validated():
    s = _sampler(4, 2, refresh_every=1, refresh_fn=lambda: torch.ones(3))
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        next(s.batches())
    t = _sampler(4, 2, refresh_every=1, refresh_fn=lambda: torch.tensor([1.0, -2.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match="≥ 0"):
        next(t.batches())


def test_options_are_assignable_and_validated_like_sliders():
    s = _sampler(4, 2, scores_init=torch.tensor([1.0, 1.0, 1.0, 5.0]))
    s.alpha = 0.0
    np.testing.assert_allclose(s.probabilities().numpy(), 0.25)
    s.alpha = 0.5
    np.testing.assert_allclose(s.probabilities().numpy(), np_mixture([1, 1, 1, 5], 0.5), rtol=1e-7)
    with pytest.raises(ValueError, match="alpha"):
        s.alpha = 2.0
    with pytest.raises(ValueError, match="scheme"):
        s.scheme = "rank"


# --------------------------------------------------------------------------------------------
# 4. State, DataLoader, DDP slicing
# --------------------------------------------------------------------------------------------


def _fake_scores(idx: torch.Tensor, step: int) -> torch.Tensor:
    return ((idx.double() * 7 + step) % 5).float()  # deterministic, with zeros


@pytest.mark.parametrize("stop,via_bytes", [(3, False), (7, True)])
def test_state_dict_resume_mid_epoch_continues_identically(stop, via_bytes):
    opts = dict(alpha=0.7, power=0.5, scores_init=torch.arange(12.0), max_pending=1)

    def run(s, start, end, out):
        step = start
        while step < end:
            for idx in s.batches():
                out.append((idx.clone(), s.weights(idx).clone()))
                s.update(idx, _fake_scores(idx, step))
                step += 1
                if step == end:
                    return

    full = []
    run(_sampler(12, 5, seed=11, **opts), 0, 12, full)  # 3 steps per epoch
    a, part = _sampler(12, 5, seed=11, **opts), []
    run(a, 0, stop, part)
    # a draw whose weights are still owed is part of the state too
    state = a.state_dict()
    if via_bytes:
        state = through_bytes(state)
    b = _sampler(12, 5, seed=999, alpha=0.1)  # another seed and options: the saved run's win
    b.load_state_dict(state)
    assert (b.alpha, b.power, b.max_pending) == (0.7, 0.5, 1)
    rest = []
    run(b, stop, 12, rest)
    assert len(part) + len(rest) == len(full)
    for (i1, w1), (i2, w2) in zip(full, part + rest):
        assert torch.equal(i1, i2) and torch.equal(w1, w2)


def test_state_dict_keeps_draw_records_for_owed_weights():
    s = _sampler(8, 3, alpha=0.5, scores_init=torch.arange(8.0))
    idx = next(s.batches())
    w = s.weights(idx)
    t = _sampler(8, 3, seed=5)
    t.load_state_dict(s.state_dict())
    assert torch.equal(t.weights(idx), w)


def test_load_state_dict_rejects_another_dataset_size_and_missing_refresh_fn():
    s = _sampler(8, 2, refresh_every=2, refresh_fn=lambda: torch.ones(8))
    with pytest.raises(ValueError, match="n=8"):
        _sampler(9, 2).load_state_dict(s.state_dict())
    with pytest.raises(ValueError, match="refresh_fn"):
        _sampler(8, 2).load_state_dict(s.state_dict())


def test_dataloader_batch_sampler_yields_the_drawn_batches_and_their_weights():
    n, b = 23, 4
    x = torch.randn(n, 2)
    ds = TensorDataset(x, torch.arange(n))
    s = _sampler(n, b, seed=8, alpha=0.5, scores_init=torch.arange(1.0, n + 1))
    twin = _sampler(n, b, seed=8, alpha=0.5, scores_init=torch.arange(1.0, n + 1))
    loader = DataLoader(ds, batch_sampler=s, num_workers=0)
    assert len(loader) == math.ceil(n / b)
    got = 0
    for (xb, ib), idx in zip(loader, twin.batches()):
        assert torch.equal(ib, idx) and torch.equal(xb, x[idx])
        w = s.weights(ib)
        np.testing.assert_allclose(w.numpy(), twin.weights(idx).numpy())
        s.update(ib, ib.float())
        twin.update(idx, idx.float())
        got += 1
    assert got == math.ceil(n / b)


def test_ddp_ranks_slice_one_global_draw():
    kw = dict(scheme="uniform", world_size=2)
    r0 = _sampler(20, 3, seed=4, rank=0, **kw)
    r1 = _sampler(20, 3, seed=4, rank=1, **kw)
    one = _sampler(20, 6, seed=4, scheme="uniform")
    assert len(r0) == len(r1) == math.ceil(20 / 6)
    for a, b_, g in zip(r0.batches(), r1.batches(), one.batches()):
        assert torch.equal(torch.cat([a, b_]), g)
        assert r0.weights(a).shape == (3,)
    with pytest.raises(RuntimeError, match="not initialised"):
        r0.update(a, torch.ones(3))


def test_schemes_constant_and_stats_against_numpy():
    assert IS_SCHEMES == ("uniform", "grad_norm", "loss", "last_layer")
    sc = np.array([1.0, 2.0, 0.0, 5.0], dtype=np.float32)
    s = _sampler(4, 2, alpha=0.4, scores_init=torch.tensor(sc))
    st = s.stats()
    p = np_mixture(sc, 0.4)
    assert st["p_min"] == pytest.approx(p.min()) and st["max_weight"] == pytest.approx(1 / (4 * p.min()))
    assert st["ess"] == pytest.approx(1 / (p * p).sum())
    assert st["variance_ratio"] == pytest.approx(
        (sc.astype(float) ** 2 / p).sum() / (4 * (sc.astype(float) ** 2).sum())
    )


def test_cpu_sampler_keeps_everything_on_the_cpu():
    s = _sampler(6, 2)
    idx = next(s.batches())
    assert idx.device.type == "cpu" and s.weights(idx).device.type == "cpu"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_sampler_draws_and_weights_on_the_device():
    cuda = torch.device("cuda")
    rng = np.random.default_rng(9)
    scores = rng.exponential(size=30).astype(np.float32)
    s = ImportanceSampler(
        30,
        100,
        alpha=0.6,
        device=cuda,
        scores_init=torch.tensor(scores),
        generator=torch.Generator(device=cuda).manual_seed(0),
        max_pending=MANY,
    )
    counts = np.zeros(30, dtype=np.int64)
    for _ in range(3):
        for idx in s.batches():
            assert idx.device.type == "cuda"
            w = s.weights(idx)
            assert w.device.type == "cuda"
            p = np_mixture(scores, 0.6)
            np.testing.assert_allclose(w.cpu().numpy(), 1 / (30 * p[idx.cpu().numpy()]), rtol=1e-5)
            counts += np.bincount(idx.cpu().numpy(), minlength=30)
    assert chisquare_p(counts, np_mixture(scores, 0.6)) > P_MIN
    s.update(idx, torch.rand(100, device=cuda))
    t = ImportanceSampler(30, 100, device=cuda, generator=torch.Generator(device=cuda).manual_seed(1))
    t.load_state_dict(s.state_dict())
    assert torch.equal(next(t.batches()), next(s.batches()))
    with pytest.raises(ValueError, match="generator is on cpu"):
        ImportanceSampler(10, 2, device="cuda", generator=torch.Generator())


@pytest.mark.parametrize(("alpha", "power"), [(0.0, 1.0), (0.5, 1.0), (1.0, 1.0), (0.3, 0.5), (0.7, 2.0)])
def test_the_mixture_the_figures_draw_is_the_one_the_sampler_draws_from(alpha, power):
    from dro_lab.samplers import is_mixture, mixture_probabilities

    g = torch.rand(40, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 3
    expect = (1 - alpha) / 40 + alpha * g.numpy() ** power / (g.numpy() ** power).sum()  # the formula, in numpy
    np.testing.assert_allclose(mixture_probabilities(g, alpha, power).numpy(), expect, rtol=1e-12)
    s = ImportanceSampler(
        40,
        8,
        scheme="loss",
        alpha=alpha,
        power=power,
        scores_init=g.float(),
        device="cpu",
        generator=torch.Generator().manual_seed(0),
    )
    np.testing.assert_allclose(
        s.probabilities().numpy(), mixture_probabilities(g.float().double(), alpha, power), rtol=1e-12
    )
    if power == 1.0:
        np.testing.assert_allclose(is_mixture(g, alpha), expect, rtol=1e-12)
