"""Statistical oracles shared by the sampler tests, and the random loss vectors of the property tests (import as
``from _stats import ...``)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from scipy import stats


def history_like(n: int, rng: np.random.Generator) -> np.ndarray:
    """A loss history like lesson 02's after 5 ERM epochs: most losses near 0.04 nats, a heavy tail up to ≈ 9."""
    losses = rng.lognormal(math.log(0.04), 1.6, n)
    hard = rng.choice(n, max(1, n // 50), replace=False)
    losses[hard] = rng.uniform(1.0, 9.0, hard.size)
    losses[hard[0]] = 9.0
    return losses


@st.composite
def loss_vectors(draw, min_size: int = 2, max_size: int = 300) -> np.ndarray:
    """A loss vector of ``min_size`` to ``max_size`` entries at a scale from 1e-4 to 50: light and heavy tails, ties,
    all equal, a trained history's shape (:func:`history_like`), large values with a tiny spread (``offset``), or
    values of both signs (a loss shifted by a constant, which no robust objective may care about)."""
    n = draw(st.integers(min_size, max_size))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kinds = ["uniform", "exponential", "pareto", "ties", "equal", "history", "offset", "signed"]
    kind = draw(st.sampled_from(kinds))
    base = {
        "uniform": lambda: rng.uniform(0.0, 1.0, n),
        "exponential": lambda: rng.exponential(size=n),
        "pareto": lambda: rng.pareto(1.2, n),
        "ties": lambda: rng.integers(0, 3, n).astype(float),
        "equal": lambda: np.full(n, 0.5),
        "history": lambda: history_like(n, rng),
        "offset": lambda: 1.0 + 1e-3 * rng.uniform(0.0, 1.0, n),
        "signed": lambda: rng.uniform(-1.0, 1.0, n),
    }[kind]()
    top = float(np.abs(base).max())
    scale = 10.0 ** draw(st.floats(-4.0, math.log10(50.0)))
    return base * (scale / top) if top > 0 else base


def np_softmax(h, beta) -> np.ndarray:
    """softmax(β·h) in float64 numpy."""
    h = np.asarray(h, dtype=np.float64)
    z = np.exp(beta * (h - h.max()))
    return z / z.sum()


def pooled_chisquare(counts, probs, min_expected=5.0) -> float:
    """p-value of scipy.stats.chisquare with bins of expected count < 5 pooled (greedily, smallest first).

    Bins with probability exactly 0 must have no draws (asserted) and are left out.
    """
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    zero = probs == 0
    assert counts[zero].sum() == 0, "an index with probability 0 was drawn"
    counts, probs = counts[~zero], probs[~zero] / probs[~zero].sum()
    expected = probs * counts.sum()
    order = np.argsort(expected)
    obs_bins, exp_bins, o_acc, e_acc = [], [], 0.0, 0.0
    for i in order:
        o_acc += counts[i]
        e_acc += expected[i]
        if e_acc >= min_expected:
            obs_bins.append(o_acc)
            exp_bins.append(e_acc)
            o_acc = e_acc = 0.0
    if e_acc > 0:  # left-over small bin: merge into the last full one
        obs_bins[-1] += o_acc
        exp_bins[-1] += e_acc
    assert len(obs_bins) >= 2, "too few draws for a goodness-of-fit test"
    return float(stats.chisquare(obs_bins, exp_bins).pvalue)


def draw_counts(sampler, draws: int) -> np.ndarray:
    """How often a batch sampler drew each index, over at least ``draws`` indices (whole batches of its epochs)."""
    counts = np.zeros(sampler.n, dtype=np.int64)
    got = 0
    while got < draws:
        for idx in sampler.batches():
            counts += np.bincount(idx.numpy(), minlength=sampler.n)
            got += idx.numel()
            if got >= draws:
                break
    return counts
