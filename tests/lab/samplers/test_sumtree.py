"""HardnessWeightedSampler(draw="tree"): the O(b log n) sum-tree draw against independent oracles.

* ``scipy.stats.chisquare`` (bins of expected count < 5 pooled, fixed seeds, p-value 1e-3) of ≥ 200 000
  tree draws against ``softmax(β·h)`` computed in float64 by numpy, from a history kept by a brute-force
  numpy loop (the mean over a batch's duplicates); each paired with a power check: the same counts
  reject a deliberately wrong distribution (stale leaves, no floor, another β);
* the tree's levels against ``math.fsum`` of the numpy leaves ``exp(β(h − m))``;
* the draw mode ``"multinomial"`` (its ``probabilities()`` is tested against numpy in test_samplers.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _stats import draw_counts, np_softmax, pooled_chisquare
from _util import through_bytes

import dro_lab.samplers.sumtree as sumtree
from dro_lab import HardnessWeightedSampler

P_MIN = 1e-3
MANY = 10**9


def _tree(n, b, h, seed=0, **kw) -> HardnessWeightedSampler:
    kw.setdefault("max_pending", MANY)
    return HardnessWeightedSampler(
        n,
        b,
        draw="tree",
        warm_start=False,
        device="cpu",
        history_init=torch.as_tensor(h, dtype=torch.float32),
        generator=torch.Generator().manual_seed(seed),
        **kw,
    )


class BruteHistory:
    """The history as a numpy float32 array, written by a Python loop (duplicates: the mean of their losses)."""

    def __init__(self, h):
        self.h = np.asarray(h, dtype=np.float32).copy()

    def update(self, idx, losses):
        idx, losses = np.asarray(idx), np.asarray(losses, dtype=np.float64)
        for i in set(idx.tolist()):
            self.h[i] = np.float32(losses[idx == i].mean())


def _drive(s: HardnessWeightedSampler, brute: BruteHistory | None, steps: int, rng, low=0.0, high=1.0) -> None:
    """``steps`` draws, each followed by an update with random losses in [low, high) (duplicates included)."""
    done = 0
    while done < steps:
        for idx in s.batches():
            losses = torch.from_numpy(rng.uniform(low, high, size=idx.numel()).astype(np.float32))
            s.update(idx, losses)
            if brute is not None:
                brute.update(idx.numpy(), losses.numpy())
            done += 1
            if done == steps:
                break


# --------------------------------------------------------------------------------------------
# 1. The draws follow softmax(β·h) (numpy, float64)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [10, 1000])
@pytest.mark.parametrize("beta", [0.1, 10.0, 1e3])
def test_tree_draws_match_numpy_softmax(beta, n):
    rng = np.random.default_rng(int(beta * 10) + n)
    h = np.float32(rng.uniform(0.0, 6.0 / beta, size=n))  # β·h spans [0, 6): a non-trivial q at every β
    s = _tree(n, 1000, h, seed=n, beta=beta)
    counts = draw_counts(s, 200_000)
    oracle = np_softmax(h, beta)
    assert pooled_chisquare(counts, oracle) > P_MIN
    # power: the same counts reject a 30 % error in β and uniform sampling
    assert pooled_chisquare(counts, np_softmax(h, 1.3 * beta)) < 1e-10
    assert pooled_chisquare(counts, np.full(n, 1.0 / n)) < 1e-10


def test_tree_draws_with_the_floor_are_the_uniform_mixture():
    n, beta, eps = 1000, 10.0, 0.2
    h = np.float32(np.random.default_rng(5).uniform(0.0, 1.0, size=n))
    s = _tree(n, 1000, h, seed=1, beta=beta, prob_floor=eps)
    counts = draw_counts(s, 200_000)
    q = np_softmax(h, beta)
    assert pooled_chisquare(counts, (1 - eps) * q + eps / n) > P_MIN
    assert pooled_chisquare(counts, q) < 1e-10  # the floor forgotten
    assert pooled_chisquare(counts, (1 - 0.1) * q + 0.1 / n) < 1e-10  # half the floor


@pytest.mark.parametrize("momentum", [0.0, 0.5])
def test_tree_draws_after_updates_with_duplicates_follow_the_current_history(momentum):
    n, beta = 200, 4.0
    rng = np.random.default_rng(7)
    h0 = np.float32(rng.uniform(0.0, 1.0, size=n))
    s = _tree(n, 64, h0, seed=2, beta=beta, history_momentum=momentum)
    brute = BruteHistory(h0)
    if momentum:  # brute force of the blend: m·old + (1 − m)·ℓ, then the mean over duplicates

        def update(idx, losses, _h=brute):
            blended = momentum * _h.h[idx].astype(np.float64) + (1 - momentum) * np.asarray(losses, np.float64)
            BruteHistory.update(_h, idx, blended)

        brute.update = update
    _drive(s, brute, 40, rng, high=1.5)  # 40 × 64 draws over 200 examples: many duplicates
    np.testing.assert_allclose(s.history.numpy(), brute.h, rtol=1e-6)
    counts = draw_counts(s, 200_000)
    assert pooled_chisquare(counts, np_softmax(brute.h, beta)) > P_MIN
    assert pooled_chisquare(counts, np_softmax(h0, beta)) < 1e-10  # stale leaves: the initial history


@pytest.mark.parametrize("side", ["overflow", "underflow"])
def test_tree_rebuilds_when_the_total_leaves_its_range_and_still_draws_softmax(side):
    n, beta = 300, 10.0
    rng = np.random.default_rng(11)
    if side == "overflow":  # 50 losses 70 above the old maximum: β·Δ = 700, leaves near 1e304
        h0 = np.float32(rng.uniform(0.0, 0.5, size=n))
        idx = rng.choice(n, 50, replace=False)
        new = np.float32(70.0 + rng.uniform(0.0, 0.6, size=50))
    else:  # every loss drops by 100: β·Δ = −1000, every leaf underflows to 0
        h0 = np.float32(100.0 + rng.uniform(0.0, 0.5, size=n))
        idx = np.arange(n)
        new = np.float32(rng.uniform(0.0, 0.5, size=n))
    s = _tree(n, 100, h0, seed=3, beta=beta)
    next(iter(s.batches()))  # the first draw builds the tree
    assert s.stats()["tree_rebuilds"] == 1
    s.update(torch.from_numpy(idx), torch.from_numpy(new))
    assert s.tree_rebuilds == 2
    brute = BruteHistory(h0)
    brute.update(idx, new)
    counts = draw_counts(s, 200_000)
    assert pooled_chisquare(counts, np_softmax(brute.h, beta)) > P_MIN
    assert pooled_chisquare(counts, np_softmax(h0, beta)) < 1e-10


def test_changing_beta_rebuilds_and_the_next_draws_use_it():
    n = 100
    h = np.float32(np.random.default_rng(3).uniform(0.0, 1.0, size=n))
    s = _tree(n, 1000, h, seed=4, beta=1.0)
    draw_counts(s, 1000)
    s.beta = 5.0
    counts = draw_counts(s, 200_000)
    assert s.tree_rebuilds == 2
    assert pooled_chisquare(counts, np_softmax(h, 5.0)) > P_MIN
    assert pooled_chisquare(counts, np_softmax(h, 1.0)) < 1e-10


def test_tree_keeps_the_warm_start_permutation_then_draws_hardness_weighted():
    n, b = 23, 5
    s = HardnessWeightedSampler(
        n, b, draw="tree", device="cpu", max_pending=MANY, generator=torch.Generator().manual_seed(0)
    )
    seen = []
    for idx in s.batches():
        seen += idx.tolist()
        s.update(idx, torch.ones(idx.numel()))
    assert sorted(seen) == list(range(n)) and s.phase == "dro"
    assert s.tree_rebuilds == 0  # no tree before the first hardness-weighted draw
    assert len(list(s.batches())) == n // b + 1


# --------------------------------------------------------------------------------------------
# 2. The tree itself: every node is the sum of its leaves
# --------------------------------------------------------------------------------------------


def _check_tree(s: HardnessWeightedSampler, h: np.ndarray) -> None:
    K = sumtree.FANOUT
    beta = s.beta
    leaves = np.exp(beta * (h.astype(np.float64) - s._tree.shift))
    level = leaves
    for store in s._tree.levels:  # (rows, K+1): column 0 is 0, then the children; padding is 0
        st = store.numpy()
        assert (st[:, 0] == 0).all()
        flat = st[:, 1:].reshape(-1)
        np.testing.assert_allclose(flat[: level.size], level, rtol=1e-12, atol=0)
        assert (flat[level.size :] == 0).all()
        level = np.array([math.fsum(level[i : i + K]) for i in range(0, level.size, K)])
    top = s._tree.top.numpy()
    assert top[0] == 0
    np.testing.assert_allclose(top[1:], level, rtol=1e-12, atol=0)
    root = float(s._tree.top_cumsum[-1])
    assert root == pytest.approx(math.fsum(leaves), rel=1e-12)


@pytest.mark.parametrize("top", [4, 100, None], ids=["leaves+1+top", "leaves+top", "top-only"])
def test_every_node_is_the_sum_of_its_leaves_after_updates_with_duplicates(top, monkeypatch):
    if top is not None:  # a small top level: n = 3000 then has several stored levels
        monkeypatch.setattr(sumtree, "TOP", top)
    n, beta = 3000, 3.0
    rng = np.random.default_rng(13)
    h0 = np.float32(rng.uniform(0.0, 2.0, size=n))
    s = _tree(n, 256, h0, seed=5, beta=beta)
    brute = BruteHistory(h0)
    next(iter(s.batches()))
    _check_tree(s, s.history.numpy())
    for _ in range(20):
        idx = rng.integers(0, n, size=256)
        idx[:30] = idx[30:60]  # duplicates for sure
        losses = rng.uniform(0.0, 2.5, size=256).astype(np.float32)
        s.update(torch.from_numpy(idx), torch.from_numpy(losses))
        brute.update(idx, losses)
    assert s.tree_rebuilds == 1  # β·Δ ≤ 1.5: no rebuild was needed
    np.testing.assert_allclose(s.history.numpy(), brute.h, rtol=1e-6)  # (float32 means of duplicates)
    _check_tree(s, s.history.numpy())
    assert len(s._tree.levels) == {4: 2, 100: 1, None: 0}[top]  # 3000 → 94 → 3: levels above the top are stored


# --------------------------------------------------------------------------------------------
# 3. Numerics, state, the two modes, bad input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_huge_beta_and_losses_stay_finite_and_draw_the_argmax_set(dtype):
    n, beta = 1000, 1e4
    rng = np.random.default_rng(17)
    h = torch.tensor(rng.uniform(0.0, 1e6, size=n), dtype=dtype)
    h[[3, 500, 999]] = 1e6  # a tie at the maximum
    s = HardnessWeightedSampler(
        n,
        500,
        beta=beta,
        draw="tree",
        warm_start=False,
        history_init=h,
        device="cpu",
        max_pending=MANY,
        generator=torch.Generator().manual_seed(0),
    )
    counts = draw_counts(s, 20_000)
    assert set(np.flatnonzero(counts)) == {3, 500, 999}
    assert pooled_chisquare(counts[[3, 500, 999]], np.full(3, 1 / 3)) > P_MIN
    q = s.probabilities()
    assert torch.isfinite(q).all() and q[[3, 500, 999]].sum().item() == pytest.approx(1.0, rel=1e-12)
    st = s.stats()
    assert all(math.isfinite(v) for v in st.values() if isinstance(v, float))
    # a new, larger maximum from an update (float64 losses): the tree rebuilds and follows it
    s.update(torch.tensor([7, 8]), torch.tensor([2e6, 2e6], dtype=dtype))
    counts = draw_counts(s, 5_000)
    assert set(np.flatnonzero(counts)) == {7, 8}
    assert torch.isfinite(s._tree.top).all() and s.tree_rebuilds == 2
    # and back down: the maxima overwritten with small losses, every leaf would underflow
    s.update(torch.tensor([7, 8, 3, 500, 999]), torch.tensor([1.0, 1.0, 1.0, 1.0, 2.0], dtype=dtype))
    counts = draw_counts(s, 5_000)
    second = np.flatnonzero(s.history.numpy() == s.history.max().item())
    assert set(np.flatnonzero(counts)) == set(second.tolist())


@pytest.mark.parametrize("via_bytes", [False, True], ids=["dict", "torch.save"])
def test_state_dict_round_trip_draws_bit_identically(via_bytes, monkeypatch):
    monkeypatch.setattr(sumtree, "TOP", 16)  # n = 700: leaves, one level, the top
    n, b = 700, 32
    rng = np.random.default_rng(19)
    a = _tree(n, b, rng.uniform(0, 2, size=n), seed=6, beta=5.0, prob_floor=0.05, history_momentum=0.3)
    _drive(a, None, 30, np.random.default_rng(0), high=2.5)
    state = a.state_dict()
    if via_bytes:
        state = through_bytes(state)
    assert isinstance(state["tree_shift"], float) and state["draw"] == "tree"
    c = HardnessWeightedSampler(n, 3, beta=1.0, device="cpu", generator=torch.Generator().manual_seed(999))
    c.load_state_dict(state)
    assert c.draw == "tree" and c.beta == 5.0
    log_a, log_c = [], []
    for s, log in ((a, log_a), (c, log_c)):
        loss_rng = np.random.default_rng(1)
        for _ in range(25):
            idx = next(iter(s.batches()))
            log.append(idx.clone())
            s.update(idx, torch.from_numpy(loss_rng.uniform(0, 2.5, size=idx.numel()).astype(np.float32)))
    assert all(torch.equal(x, y) for x, y in zip(log_a, log_c))
    assert len(a._tree.levels) == len(c._tree.levels) == 2  # 700 leaves → 22 nodes → the top
    assert all(torch.equal(x, y) for x, y in zip(a._tree.levels, c._tree.levels)) and torch.equal(
        a._tree.top, c._tree.top
    )  # bit-identical trees
    assert a.tree_rebuilds == c.tree_rebuilds
    # the test can fail: a fresh tree sampler with the loaded one's seed draws something else
    other = _tree(n, b, rng.uniform(0, 2, size=n), seed=999, beta=5.0)
    assert not torch.equal(next(iter(other.batches())), log_a[0])


def test_multinomial_state_loads_into_a_tree_sampler_as_multinomial():
    s = _tree(20, 4, np.linspace(0, 1, 20))
    m = HardnessWeightedSampler(20, 4, divergence="chi2", device="cpu", generator=torch.Generator())
    state = m.state_dict()
    del state["draw"]  # a state saved before draw= existed
    s.load_state_dict(state)
    assert s.draw == "multinomial" and s.divergence == "chi2"


def test_the_two_draw_modes_agree_on_probabilities():
    n = 5000
    h = np.float32(np.random.default_rng(23).exponential(1.0, size=n))
    for floor in (0.0, 0.3):
        q_tree = _tree(n, 8, h, beta=3.0, prob_floor=floor).probabilities()
        q_mult = HardnessWeightedSampler(
            n,
            8,
            beta=3.0,
            prob_floor=floor,
            warm_start=False,
            device="cpu",
            history_init=torch.from_numpy(h),
            generator=torch.Generator(),
        ).probabilities()
        assert q_tree.dtype == torch.float64
        assert (q_tree - q_mult.double()).abs().max().item() < 1e-6
        np.testing.assert_allclose(q_tree.numpy(), (1 - floor) * np_softmax(h, 3.0) + floor / n, rtol=1e-12)


def test_simulated_ddp_ranks_slice_one_global_draw_and_keep_identical_trees(monkeypatch):
    """Two ranks in one process (the all-gather simulated): their slices are one process's global batch."""
    n, b, steps = 400, 16, 12
    h = np.random.default_rng(29).uniform(0, 1, size=n)
    ranks = [_tree(n, b, h, seed=8, beta=4.0, world_size=2, rank=r) for r in (0, 1)]
    single = _tree(n, 2 * b, h, seed=8, beta=4.0)
    loss_rng = np.random.default_rng(2)
    for _ in range(steps):
        drawn = [next(iter(s.batches())) for s in ranks]
        full = next(iter(single.batches()))
        assert torch.equal(torch.cat(drawn), full)
        losses = torch.from_numpy(loss_rng.uniform(0, 2, size=2 * b).astype(np.float32))
        for s in ranks:  # what _gather returns on every rank: all ranks' batches in rank order
            monkeypatch.setattr(s, "_gather", lambda i, v: (full, losses))
            s.update(drawn[s.rank], losses[s.rank * b : (s.rank + 1) * b])
        single.update(full, losses)
    for s in ranks:
        assert torch.equal(s._tree.top, single._tree.top) and all(
            torch.equal(x, y) for x, y in zip(s._tree.levels, single._tree.levels)
        )
        assert torch.equal(s.history, single.history)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"draw": "bogus"}, r"draw must be one of \('multinomial', 'tree'\)"),
        ({"draw": 3}, "draw must be one of"),
        ({"draw": "tree", "divergence": "chi2"}, "draw='tree' supports divergence='kl' only"),
    ],
)
def test_bad_draw_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        HardnessWeightedSampler(8, 2, device="cpu", generator=torch.Generator(), **kwargs)


def test_reassigning_divergence_or_draw_keeps_the_pair_valid():
    s = _tree(8, 2, np.zeros(8))
    with pytest.raises(ValueError, match="needs draw='multinomial'"):
        s.divergence = "chi2"
    assert s.divergence == "kl"
    s.draw = "multinomial"
    s.divergence = "chi2"
    with pytest.raises(ValueError, match="supports divergence='kl' only"):
        s.draw = "tree"
    assert "draw='tree'" in repr(_tree(8, 2, np.zeros(8)))
