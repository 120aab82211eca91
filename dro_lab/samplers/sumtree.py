r"""The sum tree behind ``HardnessWeightedSampler(draw="tree")``: O(b log n) draws from softmax(β·h).

A float64 tree of fan-out :data:`FANOUT` over the leaves :math:`e^{\beta(h_i-m)}`, with :math:`m` the
history's maximum at the last O(n) build. Each of a batch's ``b`` draws descends the tree; each update
rewrites ``b`` leaves and their ancestors, each recomputed from its children (the same cumulative sum as
the build), so the tree is a deterministic function of ``(history, β, m)`` and a saved ``m`` rebuilds it
bit for bit. The tree rebuilds itself (a new ``m``) when its total leaves [1e-250, 1e250].

Layout: every level below the top is a ``(rows, K + 1)`` tensor whose column 0 is 0 and whose other
columns are the children of one node (padding is 0); the top, small enough for one ``cumsum``, is kept
with a leading 0 together with its cumulative sum.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

__all__ = ["FANOUT", "SumTree"]

#: Children per node.
FANOUT = 32
#: The largest level searched by one cumsum (the top).
TOP = 8192
#: The range the total may span before an O(n) rebuild re-centres the leaves.
RANGE = (1e-250, 1e250)
#: Rows per cumsum while building (bounds the temporary memory).
CHUNK = 1 << 16


class SumTree:
    """A float64 sum tree over :math:`e^{\\beta(h_i-m)}` on ``device``; empty until :meth:`ensure` builds it."""

    def __init__(self, device: torch.device):
        self.device = device
        self.levels: list[Tensor] = []  # below the top, leaves first
        self.top: Tensor | None = None  # the top level, with a leading 0
        self.top_cumsum: Tensor | None = None
        self.shift: float | None = None  # m
        self.rebuilds = 0  # O(n) builds around a new maximum

    @property
    def built(self) -> bool:
        return self.top is not None

    def tensors(self) -> list[Tensor]:
        """Every tensor the tree holds (for memory accounting)."""
        return [*self.levels, *(t for t in (self.top, self.top_cumsum) if t is not None)]

    def clear(self) -> None:
        """Forget the tree and its shift; the next :meth:`ensure` rebuilds it around the history's maximum."""
        self.levels, self.top, self.top_cumsum, self.shift = [], None, None, None

    def ensure(self, history: Tensor, beta: float) -> None:
        """Build the tree if there is none: around a loaded shift when one is set (a resumed sampler), else max(h)."""
        if self.top is None:
            self.build(history, beta, self.shift)
            if not RANGE[0] <= float(self.top_cumsum[-1]) <= RANGE[1]:  # a loaded shift gone stale
                self.build(history, beta)

    def leaves(self, h: Tensor, beta: float) -> Tensor:
        # One formula for the build and the updates: the tree is a function of (history, β, m). On the CPU
        # numpy's exp: its result does not depend on an element's position (torch's CPU exp goes through
        # MKL's threaded VML, which stalls for milliseconds on a busy machine; its exp2 differs by an ulp
        # between vectorised and tail elements). Elsewhere torch's exp, elementwise per thread.
        arg = (h.double() - self.shift) * beta
        if arg.device.type == "cpu":
            with np.errstate(over="ignore", under="ignore"):  # inf leaves trigger a rebuild in write
                return torch.from_numpy(np.exp(arg.numpy()))
        return arg.exp_()

    def build(self, history: Tensor, beta: float, shift: float | None = None) -> None:
        """O(n): the leaves exp(β(h − m)) and every level above them; m = max(h) unless given (a loaded state)."""
        if shift is None:
            shift = float(history.max())
            self.rebuilds += 1
        self.shift = shift
        K = FANOUT
        vals = self.leaves(history, beta)
        levels = []
        while vals.numel() > TOP:
            rows, full = -(-vals.numel() // K), vals.numel() // K
            store = torch.zeros(rows, K + 1, dtype=torch.float64, device=self.device)
            store[:full, 1:] = vals[: full * K].view(full, K)
            if rows > full:
                store[full, 1 : 1 + vals.numel() - full * K] = vals[full * K :]
            levels.append(store)
            # a parent is the last entry of its children's cumsum: the same op as in write
            vals = torch.cat([store[i : i + CHUNK].cumsum(1)[:, -1] for i in range(0, rows, CHUNK)])
        self.levels = levels
        self.top = torch.cat([vals.new_zeros(1), vals])
        self.top_cumsum = self.top.cumsum(0)

    def write(self, indices: Tensor, history: Tensor, beta: float) -> None:
        """Rewrite the leaves of ``indices`` (duplicates hold equal values) and recompute their ancestors."""
        K = FANOUT
        vals, j = self.leaves(history[indices], beta), indices
        for store in self.levels:
            row = torch.div(j, K, rounding_mode="floor")
            store.view(-1).index_put_((j + row + 1,), vals)  # (row, j mod K + 1) in the (rows, K+1) layout
            vals = store.index_select(0, row).cumsum(1)[:, -1]
            j = row
        self.top.index_put_((j + 1,), vals)
        self.top_cumsum = self.top.cumsum(0)
        total = float(self.top_cumsum[-1])
        if not RANGE[0] <= total <= RANGE[1]:  # overflow near, or relative precision at risk
            self.build(history, beta)

    def probabilities(self, n: int) -> Tensor:
        """The normalised leaves: the distribution :meth:`draw` samples from (before any uniform mixing)."""
        leaves = self.levels[0][:, 1:].reshape(-1)[:n] if self.levels else self.top[1:]
        return leaves / leaves.sum()

    def draw(self, count: int, n: int, generator: torch.Generator) -> Tensor:
        """``count`` i.i.d. leaf indices in ``[0, n)``, each descending the tree (no host sync)."""
        K, dev = FANOUT, self.device
        c = self.top_cumsum
        r = torch.rand(count, dtype=torch.float64, device=dev, generator=generator) * c[-1]
        j = torch.searchsorted(c, r, right=True).sub_(1).clamp_max_(c.numel() - 2)  # c[j] ≤ r < c[j+1]
        r = r - c[j]
        for store in reversed(self.levels):
            cs = store.index_select(0, j).cumsum(1)  # (count, K+1): 0, then the children's running totals
            child = torch.searchsorted(cs, r.unsqueeze(1), right=True).sub_(1).clamp_max_(K - 1)
            r = r - cs.gather(1, child).squeeze(1)
            j = j * K + child.squeeze(1)
        # Zero-weight leaves (padding, underflow) have an empty interval; the clamps above and below only
        # act when rounding puts r at a row's total (probability ~1e-16 per level).
        return j.clamp_max_(n - 1)
