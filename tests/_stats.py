"""Statistical oracles shared by the sampler tests (import as ``from _stats import ...``)."""

from __future__ import annotations

import numpy as np
from scipy import stats


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
