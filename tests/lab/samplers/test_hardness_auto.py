"""HardnessWeightedSampler(draw="auto"), the default: which draw it takes, and that it draws softmax(β·h).

Oracles from outside the code under test:

* ``scipy.stats.chisquare`` (bins of expected count < 5 pooled, fixed seeds, p-value 1e-3) of the drawn
  indices against ``softmax(β·h)`` computed in float64 by numpy, below and above
  :data:`~dro_lab.samplers.hardness.AUTO_TREE_MIN_N`, each paired with a power check (the same counts
  reject a wrong β);
* an uninterrupted run, for the resume tests (their point is that the resumed run equals it).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _stats import draw_counts, np_softmax, pooled_chisquare
from _util import through_bytes

import dro_lab.samplers.hardness as hardness
from dro_lab import HardnessWeightedSampler
from dro_lab.samplers.hardness import AUTO_TREE_MIN_N

P_MIN = 1e-3
MANY = 10**9  # max_pending for statistical draws that never update


def _auto(n, b, h, seed=0, **kw) -> HardnessWeightedSampler:
    kw.setdefault("max_pending", MANY)
    return HardnessWeightedSampler(
        n,
        b,
        warm_start=False,
        device="cpu",
        history_init=torch.as_tensor(h, dtype=torch.float32),
        generator=torch.Generator().manual_seed(seed),
        **kw,
    )


# --------------------------------------------------------------------------------------------
# 1. The pick
# --------------------------------------------------------------------------------------------


def test_auto_is_the_default_and_takes_the_tree_from_the_threshold_on():
    below = _auto(AUTO_TREE_MIN_N - 1, 8, np.zeros(AUTO_TREE_MIN_N - 1))
    at = _auto(AUTO_TREE_MIN_N, 8, np.zeros(AUTO_TREE_MIN_N))
    assert below.draw == at.draw == "auto"
    assert below.draw_mode == "multinomial" and "tree_rebuilds" not in below.stats()
    assert at.draw_mode == "tree" and "tree_rebuilds" in at.stats()
    assert "took 'tree'" in repr(at) and "draw" not in repr(below)


@pytest.mark.parametrize(
    "kw",
    [{"divergence": "chi2"}, {"refresh_every": 1, "refresh_fn": lambda: torch.zeros(1)}],
    ids=["chi2", "refresh_every=1"],
)
def test_auto_keeps_multinomial_where_the_tree_does_not_apply(kw, monkeypatch):
    monkeypatch.setattr(hardness, "AUTO_TREE_MIN_N", 16)
    assert _auto(64, 8, np.zeros(64), **kw).draw_mode == "multinomial"
    assert _auto(64, 8, np.zeros(64)).draw_mode == "tree"  # the same n with the tree's conditions
    if "refresh_every" in kw:  # k > 1 amortises the rebuild after each refresh: the tree again
        kw = {**kw, "refresh_every": 4}
        assert _auto(64, 8, np.zeros(64), **kw).draw_mode == "tree"


def test_reassigning_the_divergence_under_auto_switches_the_draw_instead_of_raising(monkeypatch):
    monkeypatch.setattr(hardness, "AUTO_TREE_MIN_N", 16)
    s = _auto(64, 8, np.linspace(0, 1, 64))
    assert s.draw_mode == "tree"
    s.divergence = "chi2"
    assert (s.draw, s.draw_mode) == ("auto", "multinomial")
    s.divergence = "kl"
    assert s.draw_mode == "tree"
    s.draw = "multinomial"
    assert (s.draw, s.draw_mode) == ("multinomial", "multinomial")
    s.draw = "auto"
    assert s.draw_mode == "tree"


def test_bad_draw_names_list_auto():
    with pytest.raises(ValueError, match=r"draw must be one of \('multinomial', 'tree'\) or 'auto'"):
        HardnessWeightedSampler(8, 2, draw="fast", device="cpu", generator=torch.Generator())


# --------------------------------------------------------------------------------------------
# 2. The draws follow softmax(β·h), below and above the threshold
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n,patched,mode",
    [(1000, None, "multinomial"), (AUTO_TREE_MIN_N, None, "tree"), (2000, 1000, "tree")],
    ids=["below", "at-the-threshold", "above-patched"],
)
def test_auto_draws_match_numpy_softmax(n, patched, mode, monkeypatch):
    if patched is not None:
        monkeypatch.setattr(hardness, "AUTO_TREE_MIN_N", patched)
    beta = 10.0
    h = np.float32(np.random.default_rng(n).uniform(0.0, 1.0, size=n))
    s = _auto(n, 4096, h, seed=3, beta=beta)
    assert s.draw_mode == mode
    draws = 300_000 if n > 10_000 else 200_000
    counts = draw_counts(s, draws)
    assert pooled_chisquare(counts, np_softmax(h, beta)) > P_MIN
    assert pooled_chisquare(counts, np_softmax(h, 1.15 * beta)) < P_MIN  # power: a 15 % wrong β is rejected


def test_auto_tree_with_floor_and_updates_follows_the_current_history(monkeypatch):
    monkeypatch.setattr(hardness, "AUTO_TREE_MIN_N", 100)
    n, beta, floor = 300, 4.0, 0.2
    rng = np.random.default_rng(5)
    h = np.float32(rng.uniform(0.0, 2.0, size=n))
    s = _auto(n, 64, h, seed=1, beta=beta, prob_floor=floor, max_pending=0)
    assert s.draw_mode == "tree"
    brute = h.copy()
    for _ in range(20):  # updates with duplicates: the history keeps their mean (a numpy loop)
        idx = next(iter(s.batches()))
        losses = np.float32(rng.uniform(0.0, 3.0, size=idx.numel()))
        s.update(idx, torch.from_numpy(losses))
        for i in set(idx.tolist()):
            brute[i] = np.float32(losses[idx.numpy() == i].mean())
    s.max_pending = MANY
    counts = draw_counts(s, 200_000)
    expected = (1 - floor) * np_softmax(brute, beta) + floor / n
    assert pooled_chisquare(counts, expected) > P_MIN
    assert pooled_chisquare(counts, (1 - floor) * np_softmax(h, beta) + floor / n) < P_MIN  # not the stale h


# --------------------------------------------------------------------------------------------
# 3. Checkpoints: a resumed run draws what the uninterrupted one draws
# --------------------------------------------------------------------------------------------


def _run(s: HardnessWeightedSampler, steps: int, seed: int) -> list[torch.Tensor]:
    rng = np.random.default_rng(seed)
    log = []
    for _ in range(steps):
        idx = next(iter(s.batches()))
        log.append(idx.clone())
        s.update(idx, torch.from_numpy(np.float32(rng.uniform(0.0, 2.5, size=idx.numel()))))
    return log


@pytest.mark.parametrize("threshold", [100, 10**9], ids=["auto-took-tree", "auto-took-multinomial"])
@pytest.mark.parametrize("via_bytes", [False, True], ids=["dict", "torch.save"])
def test_auto_state_round_trip_draws_identically(threshold, via_bytes, monkeypatch):
    monkeypatch.setattr(hardness, "AUTO_TREE_MIN_N", threshold)
    n = 700
    h = np.random.default_rng(19).uniform(0, 2, size=n)
    a = _auto(n, 32, h, seed=6, beta=5.0, prob_floor=0.05, max_pending=0)
    _run(a, 15, seed=0)
    state = a.state_dict()
    if via_bytes:
        state = through_bytes(state)
    assert state["draw"] == "auto" and state["draw_mode"] == a.draw_mode
    # Loaded where auto would pick the other draw (the threshold moved, as after an upgrade): the saved pick wins.
    monkeypatch.setattr(hardness, "AUTO_TREE_MIN_N", 10**9 if threshold == 100 else 100)
    c = HardnessWeightedSampler(n, 3, beta=1.0, device="cpu", generator=torch.Generator().manual_seed(999))
    c.load_state_dict(state)
    assert (c.draw, c.draw_mode) == ("auto", a.draw_mode)
    assert all(torch.equal(x, y) for x, y in zip(_run(a, 20, seed=1), _run(c, 20, seed=1)))
    # the test can fail: the other draw mode from the same state draws something else
    d = HardnessWeightedSampler(n, 3, device="cpu", generator=torch.Generator())
    d.load_state_dict({**state, "draw_mode": "multinomial" if a.draw_mode == "tree" else "tree"})
    assert d.draw_mode != a.draw_mode
    assert not all(torch.equal(x, y) for x, y in zip(_run(a, 5, seed=2), _run(d, 5, seed=2)))
