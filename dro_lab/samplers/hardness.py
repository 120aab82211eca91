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
and the engine's :class:`dro_lab.HardnessWeightedStrategy` wraps it. In your own loop::

    sampler = HardnessWeightedSampler(len(train), batch_size=64, beta=10.0, device=device)
    for epoch in range(epochs):
        for idx in sampler.batches():            # device tensors, drawn when asked for
            x, y = train.x[idx], train.y[idx]
            losses = F.cross_entropy(model(x), y, reduction="none")
            opt.zero_grad(); losses.mean().backward(); opt.step()
            sampler.update(idx, losses.detach())  # the fresh losses go back into the history

The history, the probabilities and the draw live on the sampler's device: no host copy and no Python
loop over indices per step (one scalar read per update checks the losses and indices).

**Freshness and DataLoader workers.** A draw uses the history as it is when the batch is requested.
With ``num_workers=w > 0`` a DataLoader prefetches ``prefetch_factor × w`` batches, so each draw misses
the last few updates (a stale ``q``): the sampler raises once more than ``max_pending`` draws await
their ``update`` (default 0: the paper's freshness); pass ``max_pending=prefetch_factor * num_workers``
to accept that staleness knowingly. The options beyond the paper are off by default and say so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sized

import torch
from torch import Tensor

from .._validation import check_number
from ..robust import chi2_penalised_weights, kl_penalised_weights
from .sumtree import SumTree
from .table import TableSampler, mean_over_duplicates

__all__ = ["AUTO_TREE_MIN_N", "HWS_DIVERGENCES", "HWS_DRAWS", "HardnessWeightedSampler"]


#: Divergences the hardness-weighted sampler accepts (CVaR's weights have no β).
HWS_DIVERGENCES = ("kl", "chi2")


#: How the hardness-weighted sampler draws a batch: ``"multinomial"`` (softmax + ``torch.multinomial``,
#: O(n) per step) or ``"tree"`` (a sum tree over exp(β·history), O(b log n) per step; KL only).
#: ``draw="auto"`` (the default) picks one of them (:data:`AUTO_TREE_MIN_N`).
HWS_DRAWS = ("multinomial", "tree")

#: ``draw="auto"`` takes the tree from this n on (KL, on the CPU, unless ``refresh_every=1`` rebuilds it
#: every step), multinomial below: where the two modes' steps cross on a 2-core CPU (``dro-lab bench
#: hws-draw``: between 5·10⁴ and 7·10⁴). On accelerators auto keeps multinomial (crossover not measured).
AUTO_TREE_MIN_N = 65_536


_WARM, _DRO = "warm_start", "dro"


# Options a state_dict carries (and load_state_dict restores).
_OPTIONS = (
    "batch_size",
    "beta",
    "divergence",
    "warm_start",
    "refresh_every",
    "prob_floor",
    "use_importance_weights",
    "history_momentum",
    "max_pending",
)


class HardnessWeightedSampler(TableSampler):
    r"""Hardness-weighted batch sampler: draws ``b`` indices i.i.d. from the worst-case weights of a loss history.

    Args:
        data_source: The training set (or its size ``n``): indices are ``0 .. n-1``.
        batch_size: ``b``, the per-process batch. Under DDP each iteration draws one global batch of
            ``world_size × b`` indices and this process takes its slice.
        beta: β ≥ 0, the robustness (inverse temperature); β = 0 is uniform sampling (ERM).
        divergence: ``"kl"`` (the paper's Algorithm 1: ``q = softmax(β·history)``) or ``"chi2"``
            (Pearson χ², the exact maximiser: not the paper's eq. 21). χ² at 2β ≈ KL at β to first order.
        draw: How a batch is drawn from ``q`` (the same distribution either way): ``"multinomial"``
            (``softmax`` over the n losses and ``torch.multinomial``, O(n) per step), ``"tree"`` (a float64
            sum tree over ``exp(β·(history_i − m))``, ``m`` the history's maximum at its last O(n) rebuild,
            counted in :meth:`stats`; O(b log n) per step; KL only, not on MPS) or ``"auto"`` (default): the
            tree for KL on a CPU from ``n ≥`` :data:`AUTO_TREE_MIN_N` (unless ``refresh_every=1``), else
            multinomial; re-decided when the divergence changes; the mode taken is :attr:`draw_mode`.
        warm_start: Start with one epoch of uniform shuffling that fills the history (the paper).
            ``False`` (beyond the paper) draws from ``q`` at once over ``history_init``.
        history_init: The history's initial value (the paper's −1 sentinel, safe only with the
            warm start), a number or a tensor of ``n`` losses.
        refresh_every: ``None`` (Algorithm 1: stale history); ``1`` (Theorem B.1: all ``n`` losses recomputed
            before every draw); ``k > 1`` (beyond the paper) every ``k`` iterations. Needs ``refresh_fn``.
        refresh_fn: ``() -> Tensor(n)``: the current losses of the whole training set, in index
            order (:func:`dro_lab.dataset_losses` builds one).
        prob_floor: Beyond the paper, in ``[0, 1)``: draw from ``(1 − prob_floor)·q + prob_floor·u``.
        importance_weights: Beyond the paper (KL only; the authors' later code): the staleness
            correction of :meth:`importance_weights`.
        history_momentum: Beyond the paper: ``m`` in ``history ← m·history + (1 − m)·ℓ`` on update
            (``0`` = the paper's overwrite). In ``[0, 1)``. The warm start always overwrites.
        max_pending: How many drawn batches may wait for their :meth:`update` before the next draw
            raises (see the module notes on DataLoader workers).
        device: Where the history lives and the draw happens: ``"auto"`` (CUDA when available), or
            the model's device.
        generator: A ``torch.Generator`` on ``device`` for every draw. ``None``: seeded from torch's global
            RNG (rank 0's seed under DDP, so that all ranks draw the same global batch).
        world_size, rank: DDP layout; by default from ``torch.distributed`` when initialised (else 1 and 0).

    Under DDP every process holds the same history and generator, so all draw the same global batch
    without communicating; :meth:`update` all-gathers the losses so the histories stay identical. A
    batch may hold an index several times (with replacement): :meth:`update` writes the mean of its losses.

    Example:
        >>> sampler = HardnessWeightedSampler(4, batch_size=2, beta=1.0, device="cpu")
        >>> for idx in sampler.batches():  # the warm start: every example once
        ...     sampler.update(idx, torch.log(1.0 + idx))  # the batch's losses
        >>> sampler.probabilities()  # q ∝ e^{βℓ} = 1 + index
        tensor([0.1000, 0.2000, 0.3000, 0.4000])
    """

    def __init__(
        self,
        data_source: Sized | int,
        batch_size: int,
        *,
        beta: float = 10.0,
        divergence: str = "kl",
        draw: str = "auto",
        warm_start: bool = True,
        history_init: float | Tensor = -1.0,
        refresh_every: int | None = None,
        refresh_fn: Callable[[], Tensor] | None = None,
        prob_floor: float = 0.0,
        importance_weights: bool = False,
        history_momentum: float = 0.0,
        max_pending: int = 0,
        device: str | torch.device = "auto",
        generator: torch.Generator | None = None,
        world_size: int | None = None,
        rank: int | None = None,
    ) -> None:
        self._setup(
            data_source,
            batch_size,
            refresh_every=refresh_every,
            refresh_fn=refresh_fn,
            max_pending=max_pending,
            device=device,
            generator=generator,
            world_size=world_size,
            rank=rank,
            what="losses",
        )
        n = self.n
        self._q: Tensor | None = None  # cached q: valid until the history or an option changes
        self._q_key: tuple | None = None
        self._tree = SumTree(self.device)  # draw="tree": built at the first hardness-weighted draw
        self._draw = "multinomial"  # the mode in use; _draw_request is what was asked for (maybe "auto")
        self._draw_request = "multinomial"
        self.beta = beta
        self.divergence = divergence
        self.draw = draw
        self.warm_start = bool(warm_start)
        self.prob_floor = check_number(prob_floor, "prob_floor", low=0.0)
        if self.prob_floor >= 1.0:
            raise ValueError(f"prob_floor must be in [0, 1), got {prob_floor}")
        self.history_momentum = check_number(history_momentum, "history_momentum", low=0.0)
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
            value = check_number(history_init, "history_init", low_open=True)
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
        self._beta = check_number(value, "beta", low=0.0)
        self._q = None
        self._tree.clear()

    @property
    def divergence(self) -> str:
        """One of :data:`HWS_DIVERGENCES`; reassignable (``"chi2"`` needs ``draw="multinomial"``)."""
        return self._divergence

    @divergence.setter
    def divergence(self, value: str) -> None:
        if not isinstance(value, str) or value.lower() not in HWS_DIVERGENCES:
            raise ValueError(f"divergence must be one of {HWS_DIVERGENCES}, got {value!r}")
        if value.lower() != "kl" and self._draw_request == "tree":
            raise ValueError(
                f"divergence={value!r} needs draw='multinomial': draw='tree' supports divergence='kl' "
                "only (χ² weights need a threshold over all n losses)"
            )
        changed = value.lower() != getattr(self, "_divergence", None)
        self._divergence = value.lower()
        if changed and self._draw_request == "auto":
            self._use_draw(self._auto_draw())

    @property
    def draw(self) -> str:
        """How batches are drawn as asked: ``"auto"`` or one of :data:`HWS_DRAWS` (see the class docs)."""
        return self._draw_request

    @property
    def draw_mode(self) -> str:
        """The draw in use, one of :data:`HWS_DRAWS` (what ``draw="auto"`` picked)."""
        return self._draw

    def _auto_draw(self) -> str:
        """``draw="auto"``'s pick for this sampler (see :data:`AUTO_TREE_MIN_N`)."""
        tree = self.divergence == "kl" and self.device.type == "cpu" and self.refresh_every != 1
        return "tree" if tree and self.n >= AUTO_TREE_MIN_N else "multinomial"

    def _use_draw(self, mode: str) -> None:
        if mode != self._draw:
            self._draw = mode
            self._q = None
            self._tree.clear()

    @draw.setter
    def draw(self, value: str) -> None:
        if not isinstance(value, str) or value.lower() not in (*HWS_DRAWS, "auto"):
            raise ValueError(f"draw must be one of {HWS_DRAWS} or 'auto', got {value!r}")
        value = value.lower()
        if value == "auto":
            self._draw_request = value
            self._use_draw(self._auto_draw())
            return
        if value == "tree" and self.divergence != "kl":
            raise ValueError(
                f"draw='tree' supports divergence='kl' only (χ² weights need a threshold over all n "
                f"losses), got divergence={self.divergence!r}; use draw='multinomial'"
            )
        if value == "tree" and self.device.type == "mps":
            raise ValueError(
                "draw='tree' keeps a float64 sum tree, which MPS does not support; use draw='multinomial' on MPS"
            )
        self._draw_request = self._draw = value
        self._q = None
        self._tree.clear()

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
                self._tree.ensure(self.history, self._beta)
                q = self._tree.probabilities(self.n)
            elif self.divergence == "kl" and self.beta * self._abs_bound < 1e37:
                q = torch.softmax(h * self.beta, dim=0)  # softmax subtracts the max itself; β·h cannot overflow
            elif self.divergence == "kl":
                q = kl_penalised_weights(h, None, self.beta, uniform=True)  # subtract first, then scale
            else:
                h64 = h.double() if self.device.type != "mps" else h
                prior = torch.full_like(h64, 1.0 / self.n)
                q = chi2_penalised_weights(h64, prior, self.beta, uniform=True).to(h.dtype)
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
        self._tree.clear()

    # ------------------------------------------------------------------ drawing

    def _draw_global(self) -> Tensor:
        """The next global batch (``world_size × b`` indices), advancing the epoch position."""
        B = self.global_batch_size
        if self.phase == _WARM:
            if self.position == 0:
                self._perm_state = self.generator.get_state()
                self._perm = torch.randperm(self.n, generator=self.generator, device=self.device)
            start = self.position * B
            idx = self._perm[start : start + B]
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

    def _tree_draw(self, B: int) -> Tensor:
        """``B`` i.i.d. indices from (1 − prob_floor)·q + prob_floor/n, each descending the tree (no host sync)."""
        self._tree.ensure(self.history, self._beta)
        j = self._tree.draw(B, self.n, self.generator)
        if self.prob_floor > 0:
            g, dev = self.generator, self.device
            uniform = torch.rand(B, device=dev, generator=g) < self.prob_floor
            j = torch.where(uniform, torch.randint(self.n, (B,), device=dev, generator=g), j)
        return j

    @property
    def tree_rebuilds(self) -> int:
        """O(n) builds of the sum tree around a new maximum (``draw="tree"``)."""
        return self._tree.rebuilds

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
            raise ValueError(
                f"indices and losses must have the same length, got {indices.numel()} and {losses.numel()}"
            )
        if indices.numel() == 0:
            raise ValueError("update got an empty batch")
        # One host read for every check (a single sync on an accelerator): the sum is finite iff
        # no loss is NaN/inf (or the sum overflowed: the exact check below then decides).
        lo, hi = torch.aminmax(indices)
        total, amax, lo, hi = torch.stack(
            [losses.sum().double(), losses.abs().max().double(), lo.double(), hi.double()]
        ).tolist()
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
        self.history.index_put_((indices,), mean_over_duplicates(indices, losses))
        self._abs_bound = max(self._abs_bound, self._batch_abs_max)  # blends with momentum stay inside it
        self.last_update[indices] = self.step
        self.pending = max(self.pending - 1, 0)
        self._q = None
        if self._tree.built:
            self._tree.write(indices, self.history, self._beta)

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
            "n": self.n,
            "world_size": self.world_size,
            **{k: getattr(self, k) for k in _OPTIONS},
            "history": self.history.clone(),
            "last_update": self.last_update.clone(),
            "counts": self._counts.clone(),
            "epoch": self.epoch,
            "position": self.position,
            "step": self.step,
            "dro_step": self.dro_step,
            "pending": self.pending,
            "generator": self.generator.get_state(),
            "perm_state": None if self._perm_state is None else self._perm_state.clone(),
            "draw": self._draw_request,
            "draw_mode": self._draw,  # what "auto" picked: a resumed run keeps drawing the same way
            "tree_shift": self._tree.shift,
            "tree_rebuilds": self._tree.rebuilds,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`; the next draw is the one the saved sampler would have made."""
        for key in ("n", "world_size"):
            if state[key] != getattr(self, key):
                raise ValueError(f"state_dict was saved with {key}={state[key]}, this sampler has {getattr(self, key)}")
        self._draw = self._draw_request = "multinomial"  # valid with any saved divergence; the saved draw below
        for key in _OPTIONS:  # the saved run's options win: resuming continues *that* run
            setattr(self, key, state[key])
        self.draw = state.get("draw", "multinomial")  # states saved before draw="tree" existed: multinomial
        saved = state.get("draw_mode")
        if self._draw_request == "auto" and saved in HWS_DRAWS and (saved != "tree" or self.device.type != "mps"):
            self._use_draw(saved)  # the saved pick, even where auto would now pick the other
        if self.refresh_every is not None and self.refresh_fn is None:
            raise ValueError("the saved sampler refreshes its history (refresh_every) but this one has no refresh_fn")
        self.history = state["history"].to(self.device, torch.float32).clone()
        # the tree is rebuilt lazily from the history and the saved shift: bit-identical to the saved one
        self._tree.clear()
        self._tree.shift = state.get("tree_shift")
        self._tree.rebuilds = state.get("tree_rebuilds", 0)
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
        if self._draw_request != "auto":
            extras.append(f"draw={self._draw_request!r}")
        elif self._draw != "multinomial":
            extras.append(f"draw='auto' (took {self._draw!r})")
        extras += [
            f"{k}={getattr(self, a)}"
            for k, a in (("prob_floor", "prob_floor"), ("history_momentum", "history_momentum"))
            if getattr(self, a)
        ]
        if self.use_importance_weights:
            extras.append("importance_weights=True")
        if self.world_size > 1:
            extras.append(f"world_size={self.world_size}, rank={self.rank}")
        tail = ", ".join(
            [
                f"n={self.n}",
                f"batch_size={self.batch_size}",
                f"beta={self.beta:g}",
                f"divergence={self.divergence!r}",
                *extras,
                f"device={self.device}",
            ]
        )
        return f"HardnessWeightedSampler({tail})"
