r"""Samplers that learn from the losses: hardness-weighted sampling (Fidon et al., 2019).

:class:`HardnessWeightedSampler` is Algorithm 1 ("SGD-HWS") of *SGD with Hardness Weighted
Sampling for Distributionally Robust Deep Learning*:

1. a warm-start epoch of plain uniform SGD (every example once) fills a loss history
   :math:`\tilde\ell\in\mathbb R^n`;
2. then, each iteration, ``b`` indices are drawn **with replacement** from
   :math:`q = \text{worst\_case\_weights}(\tilde\ell, \text{divergence}, \beta)`
   (KL: :math:`q=\mathrm{softmax}(\beta\tilde\ell)`), ⌊n/b⌋+1 iterations per epoch;
3. the batch's losses, from the forward pass that makes the gradient step, overwrite the
   history entries of the drawn examples (:meth:`HardnessWeightedSampler.update`).

The plain mean gradient of such a batch is an unbiased estimate of the gradient of the robust
loss (the paper's Lemma 3.2): the weighting is done by the sampling, so the loss is **not**
reweighted as well.

It is a ``torch.utils.data`` batch sampler (``DataLoader(dataset, batch_sampler=sampler)``)
and the engine's :class:`dro_lab.train.HardnessWeightedStrategy` wraps it. In your own loop::

    sampler = HardnessWeightedSampler(len(train), batch_size=64, beta=10.0, device=device)
    for epoch in range(epochs):
        for idx in sampler.batches():            # device tensors, drawn when asked for
            x, y = train.x[idx], train.y[idx]
            losses = F.cross_entropy(model(x), y, reduction="none")
            opt.zero_grad(); losses.mean().backward(); opt.step()
            sampler.update(idx, losses.detach())  # the fresh losses go back into the history

The history, the probabilities and the draw live on the sampler's device; nothing is copied to
the host per step and no Python loop runs over indices. One scalar is read per
:meth:`~HardnessWeightedSampler.update` to reject NaN/inf losses and out-of-range indices.

**Freshness and DataLoader workers.** A draw uses the history as it is when the batch is
requested. ``DataLoader(num_workers=0)`` requests batch ``t+1`` after your loop has called
``update`` for batch ``t``, so every draw sees every loss so far (the paper's algorithm). With
``num_workers=w > 0`` the loader prefetches ``prefetch_factor × w`` batches ahead, so each draw
misses the last few updates (a stale ``q``). The sampler counts draws that are not yet followed by
an ``update`` and raises once more than ``max_pending`` are outstanding (default 0: the paper's
freshness); pass ``max_pending=prefetch_factor * num_workers`` to accept that staleness knowingly.

**Options beyond the paper** (off by default, labelled as such wherever they appear):
``refresh_every=k > 1`` (recompute the whole history every ``k`` iterations), ``prob_floor``
(mix ``q`` with the uniform distribution), ``importance_weights`` (the staleness correction of the
authors' later code) and ``history_momentum`` (an exponential moving average of the losses, also
from the later code). ``refresh_every=1`` is the paper's exact-history variant (Theorem B.1).
"""

from __future__ import annotations

import math
import numbers
from collections import deque
from typing import Callable, Iterator, Sized

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Sampler

from .robust import _chi2_penalised, _kl_penalised, _check_number
from .utils import resolve_device

__all__ = ["HardnessWeightedSampler", "HWS_DIVERGENCES", "HWS_DRAWS", "ImportanceSampler", "IS_SCHEMES"]

#: Divergences the hardness-weighted sampler accepts (CVaR's weights have no β).
HWS_DIVERGENCES = ("kl", "chi2")
#: How the hardness-weighted sampler draws a batch: ``"multinomial"`` (softmax + ``torch.multinomial``,
#: O(n) per step) or ``"tree"`` (a sum tree over exp(β·history), O(b log n) per step; KL only).
HWS_DRAWS = ("multinomial", "tree")

# The sum tree of draw="tree": fan-out K (children per node), the largest level searched by one cumsum
# (the top), and the range the total may span before an O(n) rebuild re-centres the leaves.
_TREE_FANOUT = 32
_TREE_TOP = 8192
_TREE_RANGE = (1e-250, 1e250)
_TREE_CHUNK = 1 << 16  # rows per cumsum while building (bounds the temporary memory)

_WARM, _DRO = "warm_start", "dro"
# Options a state_dict carries (and load_state_dict restores).
_OPTIONS = ("batch_size", "beta", "divergence", "warm_start", "refresh_every", "prob_floor",
            "use_importance_weights", "history_momentum", "max_pending")


def _check_int(value, name: str, *, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be an integer ≥ {low}, got {value}")
    return int(value)


def _dist_world() -> tuple[int, int]:
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return 1, 0


def _mean_over_duplicates(indices: Tensor, values: Tensor) -> Tensor:
    """Each position's value replaced by the mean over the positions holding the same index.

    Duplicates then write one identical value, so an indexed assignment is deterministic (in any
    order, on any device), and the cost is O(b log b), never O(n) (``scatter_reduce_(reduce="mean")``
    allocates a count buffer the size of the history). On the CPU a sort finds duplicates (a
    host-side test is free there); on accelerators an equality matrix avoids the sync for
    ordinary batches.
    """
    b = indices.numel()
    if indices.device.type != "cpu" and b <= 2048:
        same = (indices[:, None] == indices[None, :]).to(values.dtype)
        return (same @ values) / same.sum(1)
    ordered, order = torch.sort(indices)
    if indices.device.type == "cpu" and not bool((ordered[1:] == ordered[:-1]).any()):
        return values
    _, inverse, counts = torch.unique_consecutive(ordered, return_inverse=True, return_counts=True)
    means = torch.zeros(counts.numel(), dtype=values.dtype, device=values.device).index_add_(0, inverse, values[order])
    out = torch.empty_like(values)
    out[order] = (means / counts.to(values.dtype))[inverse]
    return out


def _broadcast_seed(seed: int, world_size: int) -> int:
    if world_size > 1 and torch.distributed.is_available() and torch.distributed.is_initialized():
        box = [seed]
        torch.distributed.broadcast_object_list(box, src=0)
        return int(box[0])
    return seed


class _TableSampler(Sampler[list[int]]):
    """What the table-driven batch samplers share: the layout (n, b, DDP), the generator, lazy epochs,
    the staleness guard and the all-gather of updates. Subclasses draw (``_next_batch``) and learn."""

    def _setup(self, data_source, batch_size, *, refresh_every, refresh_fn, max_pending, device, generator,
               world_size, rank, what: str) -> None:
        if isinstance(data_source, numbers.Integral) and not isinstance(data_source, bool):
            n = int(data_source)
        elif hasattr(data_source, "__len__"):
            n = len(data_source)
        else:
            raise TypeError(f"data_source must be a dataset or its size, got {type(data_source).__name__}")
        if n < 1:
            raise ValueError(f"the dataset is empty (n={n}): need at least one example")
        self.n = n
        self.batch_size = _check_int(batch_size, "batch_size", low=1)
        if refresh_every is not None:
            refresh_every = _check_int(refresh_every, "refresh_every", low=1)
            if refresh_fn is None:
                raise ValueError(f"refresh_every needs refresh_fn: a callable returning the n current {what}")
        if refresh_fn is not None and not callable(refresh_fn):
            raise TypeError(f"refresh_fn must be callable, got {type(refresh_fn).__name__}")
        self.refresh_every = refresh_every
        self.refresh_fn = refresh_fn
        self.max_pending = _check_int(max_pending, "max_pending", low=0)

        ws, rk = _dist_world()
        self.world_size = _check_int(ws if world_size is None else world_size, "world_size", low=1)
        self.rank = _check_int(rk if rank is None else rank, "rank", low=0)
        if self.rank >= self.world_size:
            raise ValueError(f"rank must be in [0, world_size={self.world_size}), got {self.rank}")

        self.device = resolve_device(device)
        if generator is None:
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
            generator = torch.Generator(device=self.device).manual_seed(_broadcast_seed(seed, self.world_size))
        elif not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        elif generator.device.type != self.device.type:
            raise ValueError(f"generator is on {generator.device} but the sampler draws on {self.device}; "
                             "make the generator with torch.Generator(device=...) on the same device")
        self.generator = generator
        self._counts = torch.zeros(n, dtype=torch.int32, device=self.device)  # draws this epoch (global)
        self.epoch = 0  # completed epochs
        self.position = 0  # batches drawn in the current epoch
        self.step = 0  # global batches drawn so far
        self.pending = 0  # drawn batches not yet followed by update()

    @property
    def global_batch_size(self) -> int:
        """``world_size × batch_size``: the indices drawn per iteration across all processes."""
        return self.world_size * self.batch_size

    def _refreshed(self) -> Tensor:
        """``refresh_fn()``, checked to hold ``n`` values, as float32 on the device."""
        values = self.refresh_fn()
        if not isinstance(values, Tensor) or values.shape != (self.n,):
            got = tuple(values.shape) if isinstance(values, Tensor) else type(values).__name__
            raise ValueError(f"refresh_fn must return a tensor of shape ({self.n},), got {got}")
        return values.detach().to(self.device, torch.float32)

    def _check_pending(self, dist_name: str) -> None:
        if self.pending > self.max_pending:
            raise RuntimeError(
                f"{self.pending} batches were drawn without sampler.update(): {dist_name} is stale by that many "
                "steps. A DataLoader with num_workers > 0 prefetches batches ahead of training; use "
                "num_workers=0, or accept the staleness with max_pending=prefetch_factor * num_workers"
            )

    def _count_draw(self, idx: Tensor) -> Tensor:
        """Book a global draw (counts, position, step, pending) and return this process's slice of it."""
        self._counts.index_add_(0, idx, torch.ones_like(idx, dtype=torch.int32))
        self.position += 1
        self.step += 1
        self.pending += 1
        if self.world_size > 1:
            idx = idx[self.rank * self.batch_size:(self.rank + 1) * self.batch_size]
        return idx

    def _on_epoch_end(self) -> None:
        pass

    def _end_of_epoch(self) -> bool:
        if self.position >= len(self):
            self.epoch += 1
            self.position = 0
            self._on_epoch_end()
            return True
        return False

    def batches(self) -> Iterator[Tensor]:
        """The rest of the current epoch (or the next epoch) as int64 index tensors on the device.

        Each batch is drawn when the loop asks for it, from the table as it is then. Resuming from
        :meth:`load_state_dict` mid-epoch continues exactly where the saved sampler stopped.
        """
        if self.position >= len(self):
            self._end_of_epoch()
        if self.position == 0:
            self._counts.zero_()
        while True:
            yield self._next_batch()
            if self._end_of_epoch():
                return

    def __iter__(self) -> Iterator[list[int]]:
        """One epoch of batches as lists of ints (the ``torch.utils.data`` batch-sampler contract)."""
        for idx in self.batches():
            yield idx.tolist()

    def _as_indices(self, indices) -> Tensor:
        indices = torch.as_tensor(indices, device=self.device)
        if indices.numel() and (indices.is_floating_point() or indices.dtype == torch.bool or indices.is_complex()):
            raise TypeError(f"indices must be integers, got dtype {indices.dtype}")
        return indices.to(torch.int64).flatten()

    def _gather(self, indices: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Every process's batch, concatenated in rank order (the global batch), on every process."""
        dist = torch.distributed
        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError(f"world_size={self.world_size} but torch.distributed is not initialised")
        all_idx = [torch.empty_like(indices) for _ in range(self.world_size)]
        all_values = [torch.empty_like(values) for _ in range(self.world_size)]
        dist.all_gather(all_idx, indices)
        dist.all_gather(all_values, values)
        return torch.cat(all_idx), torch.cat(all_values)

    def draw_counts(self) -> Tensor:
        """How often each example was drawn in the current epoch (global, all ranks), ``(n,)`` int32."""
        return self._counts.clone()


class HardnessWeightedSampler(_TableSampler):
    r"""Hardness-weighted batch sampler: draws ``b`` indices i.i.d. from the worst-case weights of a loss history.

    Args:
        data_source: The training set (or its size ``n``): indices are ``0 .. n-1``.
        batch_size: ``b``, the per-process batch. Under DDP each iteration draws one global batch of
            ``world_size × b`` indices and this process takes its slice.
        beta: β ≥ 0, the robustness (inverse temperature); β = 0 is uniform sampling (ERM).
        divergence: ``"kl"`` (the paper's Algorithm 1: ``q = softmax(β·history)``) or ``"chi2"``
            (Pearson χ²: the exact simplex projection, not the paper's eq. 21, which does not
            sum to one once an entry is clipped). β scales of the two are not comparable:
            χ² at 2β ≈ KL at β to first order.
        draw: How a batch is drawn from ``q`` (the same distribution either way):
            ``"multinomial"`` (default): ``softmax`` over the n losses and ``torch.multinomial``, O(n)
            per step. ``"tree"``: a float64 sum tree (fan-out 32) over the leaves
            ``exp(β·(history_i − m))``, O(b log n) per step: each of the ``b`` draws descends the tree,
            each :meth:`update` rewrites its ``b`` leaves and their ancestors (each recomputed from its
            children, so the tree is a deterministic function of the history and ``m``). ``m`` is the
            history's maximum at the last O(n) rebuild, which happens at the first draw, after a change
            of β or a refresh, and when an update moves the total outside [1e-250, 1e250] (counted in
            :meth:`stats` as ``tree_rebuilds``). ``prob_floor`` is drawn as a mixture (uniform with
            probability ``prob_floor``). KL only (χ² weights need a threshold over all n losses); not on
            MPS (no float64). Reads one more scalar per :meth:`update` (the total) to decide a rebuild.
        warm_start: Start with one epoch of uniform shuffling (every example once) that fills the
            history (the paper). ``False`` (beyond the paper) draws from ``q`` at once over
            ``history_init``.
        history_init: The history's initial value (the paper's −1 sentinel, safe only with the
            warm start), a number or a tensor of ``n`` losses.
        refresh_every: ``None`` (the paper's Algorithm 1: stale history); ``1`` = the exact-history
            variant of Theorem B.1 (all ``n`` losses recomputed before every draw); ``k > 1``
            (beyond the paper) every ``k`` iterations. Needs ``refresh_fn``.
        refresh_fn: ``() -> Tensor(n)``: the current losses of the whole training set, in index
            order (:func:`dro_lab.dataset_losses` builds one).
        prob_floor: Beyond the paper. Draw from ``(1 − prob_floor)·q + prob_floor·u`` so that no
            example starves: every probability is at least ``prob_floor / n``. In ``[0, 1)``.
        importance_weights: Beyond the paper (KL only; the authors' later code): multiply each
            sample's loss by ``exp(β(1 − m)(ℓ_new − ℓ_history))``, correcting for the history's
            staleness; see :meth:`importance_weights`.
        history_momentum: Beyond the paper: ``m`` in ``history ← m·history + (1 − m)·ℓ`` on update
            (``0`` = the paper's overwrite). In ``[0, 1)``. The warm start always overwrites.
        max_pending: How many drawn batches may wait for their :meth:`update` before the next draw
            raises (see the module notes on DataLoader workers). Default 0: every draw sees every
            loss so far.
        device: Where the history lives and the draw happens: ``"auto"`` (CUDA when available), or
            the model's device.
        generator: A ``torch.Generator`` on ``device`` for every draw (warm-start permutation and
            hardness-weighted batches). ``None``: seeded from torch's global RNG (rank 0's seed is
            broadcast under DDP so that all ranks draw the same global batch).
        world_size, rank: DDP layout; by default read from ``torch.distributed`` when it is
            initialised (else 1 and 0).

    Under DDP every process holds the same history and the same generator, so they draw the same
    global batch without communicating; :meth:`update` all-gathers the losses of every rank so
    the histories stay identical. In the warm-start epoch the last global batch is padded by
    wrapping around the permutation (as ``DistributedSampler`` does) so every rank steps equally.

    Duplicates: a batch may hold an index several times (with replacement). :meth:`update`
    writes the mean of its losses (identical in eval mode; with dropout they differ), a
    deterministic choice that does not depend on the scatter order.
    """

    def __init__(self, data_source: Sized | int, batch_size: int, *, beta: float = 10.0, divergence: str = "kl",
                 draw: str = "multinomial", warm_start: bool = True, history_init: float | Tensor = -1.0, refresh_every: int | None = None,
                 refresh_fn: Callable[[], Tensor] | None = None, prob_floor: float = 0.0,
                 importance_weights: bool = False, history_momentum: float = 0.0, max_pending: int = 0,
                 device: str | torch.device = "auto", generator: torch.Generator | None = None,
                 world_size: int | None = None, rank: int | None = None) -> None:
        self._setup(data_source, batch_size, refresh_every=refresh_every, refresh_fn=refresh_fn,
                    max_pending=max_pending, device=device, generator=generator, world_size=world_size, rank=rank,
                    what="losses")
        n = self.n
        self._q: Tensor | None = None  # cached q: valid until the history or an option changes
        self._q_key: tuple | None = None
        # draw="tree": the levels below the top (leaves first) as (rows, K+1) float64 tensors whose column 0
        # is 0, the top level with a leading 0 (None: not built), its cumsum, and the shift m of the leaves.
        self._tree: list[Tensor] = []
        self._top: Tensor | None = None
        self._top_c: Tensor | None = None
        self._tree_shift: float | None = None
        self.tree_rebuilds = 0  # O(n) builds of the tree (draw="tree")
        self._draw = "multinomial"
        self.beta = beta
        self.divergence = divergence
        self.draw = draw
        self.warm_start = bool(warm_start)
        self.prob_floor = _check_number(prob_floor, "prob_floor", low=0.0, low_inclusive=True)
        if self.prob_floor >= 1.0:
            raise ValueError(f"prob_floor must be in [0, 1), got {prob_floor}")
        self.history_momentum = _check_number(history_momentum, "history_momentum", low=0.0, low_inclusive=True)
        if self.history_momentum >= 1.0:
            raise ValueError(f"history_momentum must be in [0, 1), got {history_momentum}")
        self.use_importance_weights = bool(importance_weights)
        if self.use_importance_weights and self.divergence != "kl":
            raise ValueError("importance_weights is defined for divergence='kl' only (the later code's correction)")
        if isinstance(history_init, Tensor):
            init = history_init.detach().to(self.device, torch.float32).flatten()
            if init.numel() != n:
                raise ValueError(f"history_init must hold n={n} losses, got {init.numel()}")
            if not bool(torch.isfinite(init).all()):
                raise ValueError("history_init contains NaN or inf values")
            self.history = init.clone()
        else:
            value = _check_number(history_init, "history_init", low=-math.inf, low_inclusive=False)
            self.history = torch.full((n,), value, dtype=torch.float32, device=self.device)
        self._abs_bound = float(self.history.abs().max())  # ≥ max |history|: when β·h cannot overflow
        # Iteration of each entry's last update (-1: never); ages for the staleness figures.
        self.last_update = torch.full((n,), -1, dtype=torch.int32, device=self.device)
        self.dro_step = 0  # of which hardness-weighted (after the warm start): refresh_every counts these
        self._perm: Tensor | None = None
        self._perm_state: Tensor | None = None

    @property
    def beta(self) -> float:
        """β ≥ 0; assigning a new value (a slider, a schedule) is validated and takes effect at the next draw."""
        return self._beta

    @beta.setter
    def beta(self, value: float) -> None:
        self._beta = _check_number(value, "beta", low=0.0, low_inclusive=True)
        self._q = None
        self._drop_tree()

    @property
    def divergence(self) -> str:
        """One of :data:`HWS_DIVERGENCES`; reassignable (``"chi2"`` needs ``draw="multinomial"``)."""
        return self._divergence

    @divergence.setter
    def divergence(self, value: str) -> None:
        if not isinstance(value, str) or value.lower() not in HWS_DIVERGENCES:
            raise ValueError(f"divergence must be one of {HWS_DIVERGENCES}, got {value!r}")
        if value.lower() != "kl" and self._draw == "tree":
            raise ValueError(f"divergence={value!r} needs draw='multinomial': draw='tree' supports divergence='kl' "
                             "only (χ² weights need a threshold over all n losses)")
        self._divergence = value.lower()

    @property
    def draw(self) -> str:
        """How batches are drawn, one of :data:`HWS_DRAWS` (the same distribution; see the class docs)."""
        return self._draw

    @draw.setter
    def draw(self, value: str) -> None:
        if not isinstance(value, str) or value.lower() not in HWS_DRAWS:
            raise ValueError(f"draw must be one of {HWS_DRAWS}, got {value!r}")
        value = value.lower()
        if value == "tree" and self.divergence != "kl":
            raise ValueError(f"draw='tree' supports divergence='kl' only (χ² weights need a threshold over all n "
                             f"losses), got divergence={self.divergence!r}; use draw='multinomial'")
        if value == "tree" and self.device.type == "mps":
            raise ValueError("draw='tree' keeps a float64 sum tree, which MPS does not support; use "
                             "draw='multinomial' on MPS")
        self._draw = value
        self._q = None
        self._drop_tree()

    # ------------------------------------------------------------------ phase and length

    @property
    def phase(self) -> str:
        """``"warm_start"`` during the first epoch (with ``warm_start=True``), else ``"dro"``."""
        return _WARM if (self.warm_start and self.epoch == 0) else _DRO

    def _epoch_length(self) -> int:
        B = self.global_batch_size
        if self.phase == _WARM:
            return -(-self.n // B)  # ceil: every example once
        return self.n // B + 1  # the paper's ⌊n/b⌋ + 1 iterations, at the global batch

    def __len__(self) -> int:
        """Batches in the current (or next) epoch: ⌈n/B⌉ in the warm start, ⌊n/B⌋+1 after."""
        return self._epoch_length()

    # ------------------------------------------------------------------ the distribution

    def probabilities(self) -> Tensor:
        """The current sampling distribution ``q`` (shape ``(n,)``, on the sampler's device).

        ``worst_case_weights(history, divergence, beta)``, mixed with uniform when
        ``prob_floor > 0``. During the warm start the draw is a uniform permutation instead.
        """
        key = (self._beta, self.divergence, self.prob_floor, self._draw)
        if self._q is None or self._q_key != key:  # options can be reassigned (sliders, schedules)
            h = self.history
            if self._draw == "tree":  # the tree's own leaves, float64: what its draw uses
                self._ensure_tree()
                leaves = self._tree[0][:, 1:].reshape(-1)[:self.n] if self._tree else self._top[1:]
                q = leaves / leaves.sum()
            elif self.divergence == "kl" and self.beta * self._abs_bound < 1e37:
                q = torch.softmax(h * self.beta, dim=0)  # softmax subtracts the max itself; β·h cannot overflow
            elif self.divergence == "kl":
                q = _kl_penalised(h, None, self.beta, uniform=True)  # subtract first, then scale
            else:
                h64 = h.double() if self.device.type != "mps" else h
                prior = torch.full_like(h64, 1.0 / self.n)
                q = _chi2_penalised(h64, prior, self.beta, uniform=True).to(h.dtype)
            if self.prob_floor > 0:
                q = (1.0 - self.prob_floor) * q + self.prob_floor / self.n
            self._q, self._q_key = q, key
        return self._q

    def _refresh(self) -> None:
        losses = self._refreshed()
        self._check_finite(losses, "refresh_fn's losses")
        self.history.copy_(losses)
        self._abs_bound = float(losses.abs().max())
        self.last_update.fill_(self.step + 1)  # the same θ as the batch about to be drawn
        self._q = None
        self._drop_tree()

    # ------------------------------------------------------------------ drawing

    def _draw_global(self) -> Tensor:
        """The next global batch (``world_size × b`` indices), advancing the epoch position."""
        B = self.global_batch_size
        if self.phase == _WARM:
            if self.position == 0:
                self._perm_state = self.generator.get_state()
                self._perm = torch.randperm(self.n, generator=self.generator, device=self.device)
            start = self.position * B
            idx = self._perm[start:start + B]
            if self.world_size > 1 and idx.numel() < B:  # pad by wrapping: equal steps on every rank
                need = B - idx.numel()
                idx = torch.cat([idx, self._perm.repeat(-(-need // self.n))[:need]])
        else:
            if self.refresh_every is not None and self.dro_step % self.refresh_every == 0:
                self._refresh()
            self.dro_step += 1
            if self._draw == "tree":
                idx = self._tree_draw(B)
            else:
                idx = torch.multinomial(self.probabilities(), B, replacement=True, generator=self.generator)
        return self._count_draw(idx)

    # ------------------------------------------------------------------ the sum tree (draw="tree")

    def _drop_tree(self) -> None:
        """Forget the tree; the next tree draw rebuilds it around the history's maximum."""
        self._tree, self._top, self._top_c, self._tree_shift = [], None, None, None

    def _ensure_tree(self) -> None:
        if self._top is None:
            self._build_tree(self._tree_shift)
            if not _TREE_RANGE[0] <= float(self._top_c[-1]) <= _TREE_RANGE[1]:  # a loaded shift gone stale
                self._build_tree()

    def _leaves(self, h: Tensor) -> Tensor:
        # One formula for the build and the updates: the tree is a function of (history, β, m). On the CPU
        # numpy's exp: its result does not depend on an element's position (torch's CPU exp goes through
        # MKL's threaded VML, which stalls for milliseconds on a busy machine; its exp2 differs by an ulp
        # between vectorised and tail elements). Elsewhere torch's exp, elementwise per thread.
        arg = (h.double() - self._tree_shift) * self._beta
        if arg.device.type == "cpu":
            with np.errstate(over="ignore", under="ignore"):  # inf leaves trigger a rebuild in _tree_write
                return torch.from_numpy(np.exp(arg.numpy()))
        return arg.exp_()

    def _build_tree(self, shift: float | None = None) -> None:
        """O(n): the leaves exp(β(h − m)) and every level above them; m = max(h) unless given (a loaded state)."""
        if shift is None:
            shift = float(self.history.max())
            self.tree_rebuilds += 1
        self._tree_shift = shift
        K = _TREE_FANOUT
        vals = self._leaves(self.history)
        levels = []
        while vals.numel() > _TREE_TOP:
            rows, full = -(-vals.numel() // K), vals.numel() // K
            store = torch.zeros(rows, K + 1, dtype=torch.float64, device=self.device)
            store[:full, 1:] = vals[:full * K].view(full, K)
            if rows > full:
                store[full, 1:1 + vals.numel() - full * K] = vals[full * K:]
            levels.append(store)
            # a parent is the last entry of its children's cumsum: the same op as in _tree_write
            vals = torch.cat([store[i:i + _TREE_CHUNK].cumsum(1)[:, -1] for i in range(0, rows, _TREE_CHUNK)])
        self._tree = levels
        self._top = torch.cat([vals.new_zeros(1), vals])
        self._top_c = self._top.cumsum(0)

    def _tree_write(self, indices: Tensor) -> None:
        """Rewrite the leaves of ``indices`` (duplicates hold equal values) and recompute their ancestors."""
        K = _TREE_FANOUT
        vals, j = self._leaves(self.history[indices]), indices
        for store in self._tree:
            row = torch.div(j, K, rounding_mode="floor")
            store.view(-1).index_put_((j + row + 1,), vals)  # (row, j mod K + 1) in the (rows, K+1) layout
            vals = store.index_select(0, row).cumsum(1)[:, -1]
            j = row
        self._top.index_put_((j + 1,), vals)
        self._top_c = self._top.cumsum(0)
        total = float(self._top_c[-1])
        if not _TREE_RANGE[0] <= total <= _TREE_RANGE[1]:  # overflow near, or relative precision at risk
            self._build_tree()

    def _tree_draw(self, B: int) -> Tensor:
        """``B`` i.i.d. indices from (1 − prob_floor)·q + prob_floor/n, each descending the tree (no host sync)."""
        self._ensure_tree()
        K, g, dev = _TREE_FANOUT, self.generator, self.device
        c = self._top_c
        r = torch.rand(B, dtype=torch.float64, device=dev, generator=g) * c[-1]
        j = torch.searchsorted(c, r, right=True).sub_(1).clamp_max_(c.numel() - 2)  # c[j] ≤ r < c[j+1]
        r = r - c[j]
        for store in reversed(self._tree):
            cs = store.index_select(0, j).cumsum(1)  # (B, K+1): 0, then the children's running totals
            child = torch.searchsorted(cs, r.unsqueeze(1), right=True).sub_(1).clamp_max_(K - 1)
            r = r - cs.gather(1, child).squeeze(1)
            j = j * K + child.squeeze(1)
        # Zero-weight leaves (padding, underflow) have an empty interval; the clamps above and below only
        # act when rounding puts r at a row's total (probability ~1e-16 per level).
        j = j.clamp_max_(self.n - 1)
        if self.prob_floor > 0:
            uniform = torch.rand(B, device=dev, generator=g) < self.prob_floor
            j = torch.where(uniform, torch.randint(self.n, (B,), device=dev, generator=g), j)
        return j

    def _next_batch(self) -> Tensor:
        # The warm-start coverage first: a warm start without any update also leaves batches pending,
        # and the staleness error below would then blame DataLoader workers.
        if self.phase == _DRO and self.warm_start and self.position == 0 and self.epoch == 1:
            never = int((self.last_update < 0).sum())
            if never:
                raise RuntimeError(
                    f"{never} of {self.n} examples got no loss during the warm-start epoch: call "
                    "sampler.update(indices, losses) after every step, or the history keeps its "
                    "initial value and q is meaningless"
                )
        if self.phase == _DRO:
            self._check_pending("q")
        return self._draw_global()

    def _on_epoch_end(self) -> None:
        self._perm = self._perm_state = None

    # ------------------------------------------------------------------ learning from the losses

    def _check_finite(self, losses: Tensor, name: str) -> None:
        bad = ~torch.isfinite(losses)
        if bool(bad.any()):
            where = torch.nonzero(bad).flatten()[:5].tolist()
            raise ValueError(f"{name} contain NaN or inf (at batch positions {where}); the history must stay finite")

    def _validate_batch(self, indices, losses) -> tuple[Tensor, Tensor]:
        if not isinstance(losses, Tensor):
            raise TypeError(f"losses must be a tensor of per-sample losses, got {type(losses).__name__}")
        indices = self._as_indices(indices)
        losses = losses.detach().to(self.device, torch.float32).flatten()
        if indices.shape != losses.shape:
            raise ValueError(f"indices and losses must have the same length, got {indices.numel()} and {losses.numel()}")
        if indices.numel() == 0:
            raise ValueError("update got an empty batch")
        # One host read for every check (a single sync on an accelerator): the sum is finite iff
        # no loss is NaN/inf (or the sum overflowed: the exact check below then decides).
        lo, hi = torch.aminmax(indices)
        total, amax, lo, hi = torch.stack([losses.sum().double(), losses.abs().max().double(),
                                           lo.double(), hi.double()]).tolist()
        if not math.isfinite(total) or lo < 0 or hi >= self.n:
            self._check_finite(losses, "losses")
            if lo < 0 or hi >= self.n:
                out = indices[(indices < 0) | (indices >= self.n)][:5].tolist()
                raise ValueError(f"indices out of range [0, {self.n}): {out}")
        self._batch_abs_max = amax
        return indices, losses

    def importance_weights(self, indices, losses: Tensor) -> Tensor:
        r"""Beyond the paper: the staleness correction of the authors' later code, ``exp(β(1−m)(ℓ − history))``.

        Call it before :meth:`update` (it compares the fresh losses with the history the batch was
        drawn from). Returns ones when ``importance_weights=False`` or in the warm start. The
        weights are detached and not normalised (as in that code); multiply the per-sample losses
        by them before the mean.
        """
        indices, fresh = self._validate_batch(indices, losses)
        if not self.use_importance_weights or self.phase == _WARM:
            return torch.ones_like(fresh)
        log_w = self.beta * (1.0 - self.history_momentum) * (fresh - self.history[indices])
        return log_w.exp()

    def update(self, indices, losses: Tensor) -> None:
        """Write a batch's per-sample losses into the history (the paper's line 11).

        Args:
            indices: The batch's example indices (this process's slice under DDP).
            losses: Their per-sample losses from the forward pass used for the step (detached here).

        Raises:
            ValueError: NaN/inf losses, indices outside ``[0, n)``, or mismatched lengths.
        """
        indices, losses = self._validate_batch(indices, losses)
        if self.world_size > 1:
            indices, losses = self._gather(indices, losses)
        warm = self.phase == _WARM
        m = 0.0 if warm else self.history_momentum
        if m > 0:
            # old values are equal among duplicates, so averaging the blends averages the losses
            losses = m * self.history[indices] + (1.0 - m) * losses
        self.history.index_put_((indices,), _mean_over_duplicates(indices, losses))
        self._abs_bound = max(self._abs_bound, self._batch_abs_max)  # blends with momentum stay inside it
        self.last_update[indices] = self.step
        self.pending = max(self.pending - 1, 0)
        self._q = None
        if self._top is not None:
            self._tree_write(indices)

    # ------------------------------------------------------------------ inspection

    def ages(self) -> Tensor:
        """Iterations since each history entry was last written (``-1``: never), ``(n,)`` int64."""
        age = self.step - self.last_update.to(torch.int64)
        return torch.where(self.last_update < 0, torch.full_like(age, -1), age)

    def stats(self) -> dict:
        """Host-side summary of the sampler (a few syncs: call it per epoch, not per step)."""
        q = self.probabilities().double()
        h = self.history.double()
        age = self.ages()
        extra = {"tree_rebuilds": self.tree_rebuilds} if self._draw == "tree" else {}
        return {
            "phase": self.phase,
            "epoch": self.epoch,
            "step": self.step,
            "q_min": float(q.min()),
            "q_max": float(q.max()),
            "ess": float(1.0 / (q * q).sum()),  # effective sample size of q
            "entropy": float(-(q * torch.log(q.clamp_min(1e-300))).sum()),
            "history_mean": float(h.mean()),
            "history_std": float(h.std(unbiased=False)),
            "history_max": float(h.max()),
            "max_age": int(age.max()),
            **extra,
        }

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict:
        """Everything needed to resume mid-epoch: history, ages, counters, generator state, options."""
        return {
            "n": self.n, "world_size": self.world_size, **{k: getattr(self, k) for k in _OPTIONS},
            "history": self.history.clone(), "last_update": self.last_update.clone(),
            "counts": self._counts.clone(), "epoch": self.epoch, "position": self.position, "step": self.step,
            "dro_step": self.dro_step,
            "pending": self.pending, "generator": self.generator.get_state(),
            "perm_state": None if self._perm_state is None else self._perm_state.clone(),
            "draw": self._draw, "tree_shift": self._tree_shift, "tree_rebuilds": self.tree_rebuilds,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`; the next draw is the one the saved sampler would have made."""
        for key in ("n", "world_size"):
            if state[key] != getattr(self, key):
                raise ValueError(f"state_dict was saved with {key}={state[key]}, this sampler has {getattr(self, key)}")
        self._draw = "multinomial"  # any saved divergence is valid with it; the saved draw is set below
        for key in _OPTIONS:  # the saved run's options win: resuming continues *that* run
            setattr(self, key, state[key])
        self.draw = state.get("draw", "multinomial")  # states saved before draw="tree" existed: multinomial
        if self.refresh_every is not None and self.refresh_fn is None:
            raise ValueError("the saved sampler refreshes its history (refresh_every) but this one has no refresh_fn")
        self.history = state["history"].to(self.device, torch.float32).clone()
        # the tree is rebuilt lazily from the history and the saved shift: bit-identical to the saved one
        self._drop_tree()
        self._tree_shift = state.get("tree_shift")
        self.tree_rebuilds = state.get("tree_rebuilds", 0)
        self._abs_bound = float(self.history.abs().max())
        self.last_update = state["last_update"].to(self.device, torch.int32).clone()
        self._counts = state["counts"].to(self.device, torch.int32).clone()
        self.epoch, self.position, self.step = state["epoch"], state["position"], state["step"]
        self.dro_step = state["dro_step"]
        self.pending = state["pending"]
        self._q = None
        self._perm = self._perm_state = None
        if state["perm_state"] is not None:  # mid warm-start epoch: regenerate the same permutation
            self._perm_state = state["perm_state"].clone()
            self.generator.set_state(self._perm_state)
            self._perm = torch.randperm(self.n, generator=self.generator, device=self.device)
        self.generator.set_state(state["generator"])

    def __repr__(self) -> str:
        extras = [f"refresh_every={self.refresh_every}"] if self.refresh_every else []
        if self._draw != "multinomial":
            extras.append(f"draw={self._draw!r}")
        extras += [f"{k}={getattr(self, a)}" for k, a in (("prob_floor", "prob_floor"),
                                                        ("history_momentum", "history_momentum")) if getattr(self, a)]
        if self.use_importance_weights:
            extras.append("importance_weights=True")
        if self.world_size > 1:
            extras.append(f"world_size={self.world_size}, rank={self.rank}")
        tail = ", ".join([f"n={self.n}", f"batch_size={self.batch_size}", f"beta={self.beta:g}",
                          f"divergence={self.divergence!r}", *extras, f"device={self.device}"])
        return f"HardnessWeightedSampler({tail})"


# ====================================================================================================
# Importance sampling for SGD (Lahire, 2023; Katharopoulos & Fleuret, 2018)
# ====================================================================================================

#: What the scores of an :class:`ImportanceSampler` mean (the sampling rule is the same for all but
#: ``"uniform"``: ``p ∝ score^power``, mixed with uniform).
IS_SCHEMES = ("uniform", "grad_norm", "loss", "last_layer")

_IS_OPTIONS = ("batch_size", "scheme", "alpha", "power", "weight_exponent", "clip_weights", "refresh_every",
               "max_pending")


class ImportanceSampler(_TableSampler):
    r"""Importance-sampling batch sampler: ``b`` indices i.i.d. from ``p``, with the unbiased weights ``1/(N p_i)``.

    The importance-sampled SGD step of Lahire (2023), eq. (2):

    .. math::
        \theta_{t+1} = \theta_t - \eta\,\frac1b\sum_{k=1}^{b} w_{i_k}\nabla\ell_{i_k}(\theta_t),\qquad
        i_k \overset{\text{i.i.d.}}{\sim} p,\qquad w_i = \frac{1}{N p_i},

    is an unbiased estimate of the full gradient :math:`\frac1N\sum_i\nabla\ell_i` for every ``p`` with
    :math:`p_i>0`, and :math:`p^{GN}_i\propto\lVert\nabla\ell_i\rVert_2` minimises its variance. The
    sampler keeps a table of ``N`` non-negative **scores** :math:`s_i` (you or the engine feed them)
    and draws from the **α-mixture**

    .. math::
        p = (1-\alpha)\,u + \alpha\,\hat s,\qquad \hat s_i = \frac{s_i^{\gamma}}{\sum_j s_j^{\gamma}},\qquad u_i = \frac1N,

    where α is the **uniform-mixing α** of the course glossary (widget ``is_alpha``; not Adam's β, not
    RMSProp's α, not label smoothing) and γ is ``power``. ``α = 0`` is uniform sampling;
    ``α = ½`` with exact gradient norms is the paper's :math:`p^{1/2}=(p^{GN}+u)/2`; ``α = 1`` is the
    pure scheme (the paper's :math:`p^{GN}` for ``scheme="grad_norm"``). Because
    :math:`p_i\ge(1-\alpha)/N`, no probability is zero when α < 1 and every weight is bounded,
    :math:`w_i\le 1/(1-\alpha)`, *without* any bias. If every score is zero, :math:`\hat s` is taken
    to be uniform (``p = u``). With α = 1 there is no floor: every score must then be strictly
    positive, which is checked whenever scores are written.

    In your own loop (``scores`` from :mod:`dro_lab.pergrad`, or the per-sample losses)::

        sampler = ImportanceSampler(len(train), batch_size=5, scheme="loss", alpha=0.5, device=device)
        for epoch in range(epochs):
            for idx in sampler.batches():                    # device tensors, drawn when asked for
                w = sampler.weights(idx)                     # detached, from the p of *this* draw
                losses = F.cross_entropy(model(train.x[idx]), train.y[idx], reduction="none")
                opt.zero_grad(); (w * losses).mean().backward(); opt.step()
                sampler.update(idx, losses.detach())         # the batch's fresh scores go into the table

    Reduce with ``(w * losses).mean()`` (``reduction="none"``): a sum multiplies the learning rate by
    ``b`` and normalising by ``w.sum()`` (self-normalised IS) is biased (spec §7.3).

    Args:
        data_source: The training set (or its size ``N``): indices are ``0 .. N-1``.
        batch_size: ``b``, the per-process batch. Under DDP each step draws one global batch of
            ``world_size × b`` indices and this process takes its slice.
        scheme: What the scores are: ``"uniform"`` (scores ignored, ``p = u``, ``w = 1``),
            ``"grad_norm"`` (per-sample gradient norms: :math:`p^{GN}`, the paper's optimal scheme),
            ``"loss"`` (per-sample losses) or ``"last_layer"`` (Katharopoulos & Fleuret's bound
            :math:`\lVert\mathrm{softmax}(z_i)-e_{y_i}\rVert_2`, forward only). The sampler does not
            compute scores; the name documents (and records in :meth:`state_dict`) what you feed it.
        alpha: α ∈ [0, 1], the uniform-mixing weight above. Default ½ (the paper's :math:`p^{1/2}` with
            gradient norms; weights ≤ 2).
        power: γ ≥ 0 in :math:`\hat s\propto s^{\gamma}` (Katharopoulos & Fleuret's power smoothing;
            γ = 1 is the plain scheme, γ = 0 is uniform; with exact gradient norms every γ ∈ [0, 2]
            is at least as fast as uniform for SGD, spec §1.5).
        weight_exponent: e ∈ [0, 1] in :math:`w_i = (1/(Np_i))^{e}` (lesson 03's slider "weight
            exponent e"). 1 = the unbiased weights (the paper); 0 = no weights ("forgotten weights": SGD then follows
            :math:`\sum_i p_i\nabla\ell_i`, a reweighted objective); in between: **biased**.
        clip_weights: Opt-in, **biased**: clamp every weight to at most ``c > 0``. ``None`` (default):
            no clipping, the α-mixture already bounds the weights by :math:`1/(1-\alpha)`.
        scores_init: The initial score table: ``None`` (all ones, so the first draws are uniform),
            a number, or a tensor of ``N`` non-negative scores.
        refresh_every: ``None``: a stale score table, written only by :meth:`update` (the batch's own
            scores after each step) — beyond the paper. ``1``: all ``N`` scores recomputed before
            every draw (the paper's exact :math:`p^{GN}` at :math:`\theta_t`). ``k > 1``: every ``k``
            steps, with :meth:`update` in between. Needs ``refresh_fn``.
        refresh_fn: ``() -> Tensor(N)``: the current scores of the whole training set, in index order.
        max_pending: How many drawn batches may wait for their :meth:`update` before the next draw
            raises (as :class:`HardnessWeightedSampler`; DataLoader workers prefetch batches, which
            makes ``p`` stale). Default 0. Not checked for ``scheme="uniform"`` or
            ``refresh_every=1``, where updates do not change the next draw.
        device: Where the table, the probabilities and the draws live: ``"auto"`` (CUDA when
            available) or the model's device.
        generator: A ``torch.Generator`` on ``device`` for every draw. ``None``: seeded from torch's
            global RNG (rank 0's seed is broadcast under DDP so all ranks draw the same global batch).
        world_size, rank: DDP layout; by default from ``torch.distributed`` when initialised.

    An epoch is ``⌈N / (world_size·b)⌉`` steps of i.i.d. draws with replacement: about ``N`` draws,
    but an example may be drawn several times or not at all (spec §7.4: sampling *without*
    replacement would make the weights wrong).

    **Staleness.** :meth:`weights` always uses the probabilities the batch was actually drawn from:
    the sampler keeps the drawn indices and their draw-time ``p_i`` for the last
    ``max_pending + 1`` draws, so weights stay unbiased when scores change between the draw and
    the step (DataLoader prefetching, or an :meth:`update` in between). The scores themselves may
    be stale (computed at an earlier θ); that changes the variance, never the unbiasedness.
    """

    def __init__(self, data_source: Sized | int, batch_size: int, *, scheme: str = "grad_norm", alpha: float = 0.5,
                 power: float = 1.0, weight_exponent: float = 1.0, clip_weights: float | None = None,
                 scores_init: float | Tensor | None = None, refresh_every: int | None = None,
                 refresh_fn: Callable[[], Tensor] | None = None, max_pending: int = 0,
                 device: str | torch.device = "auto", generator: torch.Generator | None = None,
                 world_size: int | None = None, rank: int | None = None) -> None:
        self._setup(data_source, batch_size, refresh_every=refresh_every, refresh_fn=refresh_fn,
                    max_pending=max_pending, device=device, generator=generator, world_size=world_size, rank=rank,
                    what="scores")
        n = self.n
        self._p: Tensor | None = None  # cached p: valid until the scores or an option change
        self._p_key: tuple | None = None
        self.scheme = scheme
        self.alpha = alpha
        self.power = power
        self.weight_exponent = weight_exponent
        self.clip_weights = clip_weights
        if scores_init is None:
            self.scores = torch.ones(n, dtype=torch.float32, device=self.device)
        elif isinstance(scores_init, Tensor):
            init = scores_init.detach().to(self.device, torch.float32).flatten()
            if init.numel() != n:
                raise ValueError(f"scores_init must hold n={n} scores, got {init.numel()}")
            self._check_scores(init, "scores_init")
            self.scores = init.clone()
        else:
            value = _check_number(scores_init, "scores_init", low=0.0, low_inclusive=True)
            if self.alpha == 1.0 and value == 0.0:
                raise ValueError("scores_init=0 with alpha=1 gives every example probability 0: use alpha < 1")
            self.scores = torch.full((n,), value, dtype=torch.float32, device=self.device)
        self._p_last: Tensor | None = None  # the full p of the last draw
        # (indices, their draw-time p) of this process's recent batches, oldest first
        self._records: deque[tuple[Tensor, Tensor]] = deque(maxlen=self.max_pending + 1)

    # ------------------------------------------------------------------ options (validated, assignable)

    @property
    def scheme(self) -> str:
        """What the scores mean, one of :data:`IS_SCHEMES`; ``"uniform"`` ignores them."""
        return self._scheme

    @scheme.setter
    def scheme(self, value: str) -> None:
        if not isinstance(value, str) or value.lower() not in IS_SCHEMES:
            raise ValueError(f"scheme must be one of {IS_SCHEMES}, got {value!r}")
        self._scheme = value.lower()
        self._p = None

    @property
    def alpha(self) -> float:
        """The uniform-mixing α ∈ [0, 1]; a new value (a slider) takes effect at the next draw."""
        return self._alpha

    @alpha.setter
    def alpha(self, value: float) -> None:
        a = _check_number(value, "alpha (the uniform-mixing weight)", low=0.0, low_inclusive=True, high=1.0)
        if a == 1.0 and getattr(self, "scores", None) is not None and self._scheme != "uniform":
            if float(self.scores.min()) <= 0.0:
                raise ValueError("alpha=1 needs every score > 0 (a zero score would get probability 0); "
                                 "use alpha < 1, which keeps every p_i ≥ (1 − alpha)/N")
        self._alpha = a
        self._p = None

    @property
    def power(self) -> float:
        """γ ≥ 0 in ``p_scheme ∝ score^γ``."""
        return self._power

    @power.setter
    def power(self, value: float) -> None:
        self._power = _check_number(value, "power", low=0.0, low_inclusive=True)
        self._p = None

    @property
    def weight_exponent(self) -> float:
        """e ∈ [0, 1] in ``w = (1/(N p))^e``: 1 unbiased, 0 no weights, in between biased."""
        return self._weight_exponent

    @weight_exponent.setter
    def weight_exponent(self, value: float) -> None:
        self._weight_exponent = _check_number(value, "weight_exponent", low=0.0, low_inclusive=True, high=1.0)

    @property
    def clip_weights(self) -> float | None:
        """``None`` or ``c > 0``: opt-in (biased) upper bound on the weights."""
        return self._clip_weights

    @clip_weights.setter
    def clip_weights(self, value: float | None) -> None:
        self._clip_weights = None if value is None else _check_number(value, "clip_weights", low=0.0,
                                                                      low_inclusive=False)

    def __len__(self) -> int:
        """Steps per epoch: ``⌈N / (world_size · b)⌉``."""
        return -(-self.n // self.global_batch_size)

    # ------------------------------------------------------------------ the distribution

    def _learns_from_updates(self) -> bool:
        return self._scheme != "uniform" and self.refresh_every != 1

    def probabilities(self) -> Tensor:
        r"""The distribution the next draw uses, :math:`(1-\alpha)u+\alpha\,s^{\gamma}/\sum s^{\gamma}`.

        Shape ``(N,)``, float64 (float32 on MPS), on the sampler's device. All-zero scores give
        ``u``. (With ``refresh_every`` the next draw first refreshes the scores.)
        """
        key = (self._scheme, self._alpha, self._power)
        if self._p is None or self._p_key != key:
            dtype = torch.float32 if self.device.type == "mps" else torch.float64
            u = 1.0 / self.n
            if self._scheme == "uniform" or self._alpha == 0.0:
                p = torch.full((self.n,), u, dtype=dtype, device=self.device)
            else:
                s = self.scores.to(dtype)
                top = s.max()
                # scale by the max first: s^γ cannot overflow, and 0 stays 0 (0^0 = 1: γ = 0 is uniform)
                s = (s / torch.where(top > 0, top, torch.ones_like(top))).pow(self._power)
                total = s.sum()
                s_hat = torch.where(total > 0, s / torch.where(total > 0, total, torch.ones_like(total)),
                                    torch.full_like(s, u))
                p = (1.0 - self._alpha) * u + self._alpha * s_hat
            self._p, self._p_key = p, key
        return self._p

    def last_probabilities(self) -> Tensor | None:
        """The full ``p`` of the most recent draw (``None`` before the first draw)."""
        return self._p_last

    # ------------------------------------------------------------------ scores

    def _sum64(self, scores: Tensor) -> Tensor:
        # float64 where available: n large float32 scores may overflow a float32 sum
        return scores.sum() if self.device.type == "mps" else scores.sum(dtype=torch.float64)

    def _check_scores(self, scores: Tensor, name: str) -> None:
        lo, total = torch.stack([scores.min().double(), self._sum64(scores)]).tolist()
        if not math.isfinite(total) or not math.isfinite(lo):
            bad = torch.nonzero(~torch.isfinite(scores)).flatten()[:5].tolist()
            raise ValueError(f"{name} contain NaN or inf (at positions {bad}); scores must be finite and ≥ 0")
        if lo < 0:
            bad = torch.nonzero(scores < 0).flatten()[:5].tolist()
            raise ValueError(f"{name} must be ≥ 0 (norms, losses or bounds), got negative values at positions {bad}")
        if lo == 0 and getattr(self, "_alpha", 0.0) == 1.0 and self._scheme != "uniform":
            raise ValueError(f"{name} contain a zero score with alpha=1: that example would get probability 0 "
                             "and an infinite weight; use alpha < 1 (p_i ≥ (1 − alpha)/N)")

    def _refresh(self) -> None:
        scores = self._refreshed()
        self._check_scores(scores, "refresh_fn's scores")
        self.scores.copy_(scores)
        self._p = None

    def _validate_batch(self, indices, scores) -> tuple[Tensor, Tensor]:
        if not isinstance(scores, Tensor):
            raise TypeError(f"scores must be a tensor of per-sample scores, got {type(scores).__name__}")
        indices = self._as_indices(indices)
        scores = scores.detach().to(self.device, torch.float32).flatten()
        if indices.shape != scores.shape:
            raise ValueError(f"indices and scores must have the same length, got {indices.numel()} and {scores.numel()}")
        if indices.numel() == 0:
            raise ValueError("update got an empty batch")
        # one host read for every check
        lo, hi = torch.aminmax(indices)
        total, smin, lo, hi = torch.stack([self._sum64(scores), scores.min().double(),
                                           lo.double(), hi.double()]).tolist()
        if lo < 0 or hi >= self.n:
            out = indices[(indices < 0) | (indices >= self.n)][:5].tolist()
            raise ValueError(f"indices out of range [0, {self.n}): {out}")
        if not math.isfinite(total) or smin < 0 or (smin == 0 and self._alpha == 1.0):
            self._check_scores(scores, "scores")
        return indices, scores

    def update(self, indices, scores: Tensor) -> None:
        """Write a batch's per-sample scores into the table (the stale-history scheme).

        Args:
            indices: The batch's example indices (this process's slice under DDP).
            scores: Their scores at the current θ (gradient norms, losses or bounds), detached here.
                Duplicates in a batch write the mean of their scores.

        Raises:
            ValueError: negative, NaN or inf scores, indices outside ``[0, N)``, mismatched lengths,
                or a zero score with ``alpha=1``.
        """
        indices, scores = self._validate_batch(indices, scores)
        if self.world_size > 1:
            indices, scores = self._gather(indices, scores)
        self.scores.index_put_((indices,), _mean_over_duplicates(indices, scores))
        self.pending = max(self.pending - 1, 0)
        self._p = None

    # ------------------------------------------------------------------ drawing

    def _next_batch(self) -> Tensor:
        if self._learns_from_updates():
            self._check_pending("p")
        if self.refresh_every is not None and self.step % self.refresh_every == 0:
            self._refresh()
        p = self.probabilities()
        idx = torch.multinomial(p, self.global_batch_size, replacement=True, generator=self.generator)
        idx = self._count_draw(idx)
        self._p_last = p
        self._records.append((idx, p[idx]))
        return idx

    # ------------------------------------------------------------------ weights

    def weights(self, indices) -> Tensor:
        r"""The importance weights :math:`w_i=(1/(Np_i))^{e}` of a batch this sampler drew, detached.

        ``p_i`` is the probability the batch was **drawn** from (kept per draw for the last
        ``max_pending + 1`` batches), not the current one, so updates or refreshes between the draw
        and the step do not bias the weights. With ``weight_exponent=1`` and no clipping,
        :math:`\mathbb E[\frac1b\sum_k w_{i_k}g_{i_k}]=\frac1N\sum_i g_i` and
        :math:`w_i\le1/(1-\alpha)`. Returns float32 on the sampler's device, in the batch's order.

        Args:
            indices: The batch, as yielded by :meth:`batches` (or the list from ``__iter__``, or the
                ``index`` column a DataLoader collated from it).

        Raises:
            ValueError: the indices are not one of the recent batches this process drew.
        """
        indices = self._as_indices(indices)
        for idx, p_drawn in self._records:  # oldest first: with prefetching, the one being trained on
            if idx.shape == indices.shape and bool(torch.equal(idx, indices)):
                break
        else:
            raise ValueError(
                f"these {indices.numel()} indices are not one of the last {len(self._records)} batches this sampler "
                "drew: weights need the probabilities of the draw, so pass the batch exactly as drawn "
                "(same order) before more than max_pending further draws"
            )
        w = 1.0 / (self.n * p_drawn)
        if self._weight_exponent != 1.0:
            w = w.pow(self._weight_exponent)
        if self._clip_weights is not None:
            w = w.clamp_max(self._clip_weights)
        return w.to(torch.float32)

    # ------------------------------------------------------------------ inspection

    def stats(self) -> dict:
        """Host-side summary (a few syncs: call it per epoch, not per step).

        ``variance_ratio`` is :math:`H(p)/H(u)=\\frac1N\\sum_i s_i^2/p_i \\,/\\, \\sum_i s_i^2`: with exact
        gradient norms as scores, the factor by which ``p`` scales the variance term of the SGD step
        (spec §1.4; 1 for uniform, :math:`(\\sum s)^2/(N\\sum s^2)` at :math:`p^{GN}`).
        """
        p = self.probabilities().double()
        s = self.scores.double()
        s2 = float((s * s).sum())
        return {
            "scheme": self.scheme, "alpha": self.alpha, "epoch": self.epoch, "step": self.step,
            "p_min": float(p.min()), "p_max": float(p.max()),
            "max_weight": float(1.0 / (self.n * p.min())),
            "ess": float(1.0 / (p * p).sum()),
            "variance_ratio": float(((s * s) / p).sum() / (self.n * s2)) if s2 > 0 else 1.0,
            "scores_mean": float(s.mean()), "scores_max": float(s.max()),
        }

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict:
        """Everything needed to resume mid-epoch: scores, counters, draw records, generator state, options."""
        return {
            "n": self.n, "world_size": self.world_size, **{k: getattr(self, k) for k in _IS_OPTIONS},
            "scores": self.scores.clone(), "counts": self._counts.clone(), "epoch": self.epoch,
            "position": self.position, "step": self.step, "pending": self.pending,
            "generator": self.generator.get_state(),
            "p_last": None if self._p_last is None else self._p_last.clone(),
            "records": [(i.clone(), p.clone()) for i, p in self._records],
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`; the next draw is the one the saved sampler would have made."""
        for key in ("n", "world_size"):
            if state[key] != getattr(self, key):
                raise ValueError(f"state_dict was saved with {key}={state[key]}, this sampler has {getattr(self, key)}")
        if state["refresh_every"] is not None and self.refresh_fn is None:
            raise ValueError("the saved sampler refreshes its scores (refresh_every) but this one has no refresh_fn")
        self.scores = state["scores"].to(self.device, torch.float32).clone()
        for key in _IS_OPTIONS:  # the saved run's options win: resuming continues *that* run
            setattr(self, key, state[key])
        self._counts = state["counts"].to(self.device, torch.int32).clone()
        self.epoch, self.position, self.step = state["epoch"], state["position"], state["step"]
        self.pending = state["pending"]
        self._p = None
        self._p_last = None if state["p_last"] is None else state["p_last"].to(self.device).clone()
        self._records = deque(((i.to(self.device).clone(), p.to(self.device).clone()) for i, p in state["records"]),
                              maxlen=self.max_pending + 1)
        self.generator.set_state(state["generator"])

    def __repr__(self) -> str:
        extras = [f"power={self.power:g}"] if self.power != 1.0 else []
        if self.weight_exponent != 1.0:
            extras.append(f"weight_exponent={self.weight_exponent:g} (biased)")
        if self.clip_weights is not None:
            extras.append(f"clip_weights={self.clip_weights:g} (biased)")
        if self.refresh_every:
            extras.append(f"refresh_every={self.refresh_every}")
        if self.world_size > 1:
            extras.append(f"world_size={self.world_size}, rank={self.rank}")
        tail = ", ".join([f"n={self.n}", f"batch_size={self.batch_size}", f"scheme={self.scheme!r}",
                          f"alpha={self.alpha:g}", *extras, f"device={self.device}"])
        return f"ImportanceSampler({tail})"
