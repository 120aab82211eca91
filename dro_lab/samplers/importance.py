"""Importance sampling for SGD (Lahire, 2023): draw from p = (1 − α)·u + α·p_scheme, weight by 1/(N p_i)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sized

import numpy as np
import torch
from torch import Tensor

from .._validation import check_number
from ..utils import to_numpy, work_dtype
from .table import TableSampler, mean_over_duplicates

__all__ = ["IS_SCHEMES", "ImportanceSampler", "mixture_probabilities", "is_mixture"]


#: What the scores of an :class:`ImportanceSampler` mean (the sampling rule is the same for all but
#: ``"uniform"``: ``p ∝ score^power``, mixed with uniform).
IS_SCHEMES = ("uniform", "grad_norm", "loss", "last_layer")


_IS_OPTIONS = (
    "batch_size",
    "scheme",
    "alpha",
    "power",
    "weight_exponent",
    "clip_weights",
    "refresh_every",
    "max_pending",
)


class ImportanceSampler(TableSampler):
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
        p = (1-\alpha)\,u + \alpha\,\hat s,\qquad
        \hat s_i = \frac{s_i^{\gamma}}{\sum_j s_j^{\gamma}},\qquad u_i = \frac1N,

    with α the uniform-mixing weight and γ ``power``: ``α = 0`` is uniform sampling, ``α = ½`` with exact
    gradient norms the paper's :math:`p^{1/2}=(p^{GN}+u)/2`. As :math:`p_i\ge(1-\alpha)/N`, every weight
    is bounded, :math:`w_i\le 1/(1-\alpha)`, without bias (α = 1: every score must be positive).

    Reduce with ``(w * losses).mean()`` (``reduction="none"``): a sum multiplies the learning rate by
    ``b`` and normalising by ``w.sum()`` (self-normalised IS) is biased; the paper's Eq. 2 is the mean.

    Args:
        data_source: The training set (or its size ``N``): indices are ``0 .. N-1``.
        batch_size: ``b``, the per-process batch. Under DDP each step draws one global batch of
            ``world_size × b`` indices and this process takes its slice.
        scheme: What the scores you feed it are (recorded in :meth:`state_dict`): ``"uniform"`` (ignored,
            ``p = u``, ``w = 1``), ``"grad_norm"`` (:math:`p^{GN}`, the paper's optimal scheme), ``"loss"`` or
            ``"last_layer"`` (Katharopoulos & Fleuret's forward-only bound).
        alpha: α ∈ [0, 1], the uniform-mixing weight above. Default ½ (weights ≤ 2).
        power: γ ≥ 0 in :math:`\hat s\propto s^{\gamma}` (Katharopoulos & Fleuret's power smoothing; with
            exact gradient norms every γ ∈ [0, 2] is at least as fast as uniform, by Chebyshev's sum inequality).
        weight_exponent: e ∈ [0, 1] in :math:`w_i = (1/(Np_i))^{e}`: 1 = the unbiased weights (the paper);
            0 = no weights (SGD then follows :math:`\sum_i p_i\nabla\ell_i`); in between: **biased**.
        clip_weights: Opt-in, **biased**: clamp every weight to at most ``c > 0``. ``None`` (default):
            no clipping, the α-mixture already bounds the weights by :math:`1/(1-\alpha)`.
        scores_init: The initial score table: ``None`` (all ones, so the first draws are uniform),
            a number, or a tensor of ``N`` non-negative scores.
        refresh_every: ``None``: a stale table written by :meth:`update` (beyond the paper); ``1``: all ``N``
            scores recomputed before every draw (the paper's); ``k > 1``: every ``k`` steps. Needs ``refresh_fn``.
        refresh_fn: ``() -> Tensor(N)``: the current scores of the whole training set, in index order.
        max_pending: How many drawn batches may wait for their :meth:`update` before the next draw
            raises (as :class:`HardnessWeightedSampler`). Default 0.
        device: Where the table, the probabilities and the draws live: ``"auto"`` (CUDA when
            available) or the model's device.
        generator: A ``torch.Generator`` on ``device`` for every draw. ``None``: seeded from torch's
            global RNG (rank 0's seed is broadcast under DDP so all ranks draw the same global batch).
        world_size, rank: DDP layout; by default from ``torch.distributed`` when initialised.

    An epoch is ``⌈N / (world_size·b)⌉`` steps of i.i.d. draws with replacement. :meth:`weights` uses the
    probabilities each batch was drawn from (unbiased when the scores change between the draw and the step).

    Example:
        >>> sampler = ImportanceSampler(4, batch_size=2, scheme="loss", device="cpu")
        >>> sampler.update(torch.arange(4), torch.tensor([1.0, 1.0, 1.0, 5.0]))  # the losses as scores
        >>> sampler.probabilities()  # α = ½: half uniform, half ∝ the scores
        tensor([0.1875, 0.1875, 0.1875, 0.4375], dtype=torch.float64)
    """

    def __init__(
        self,
        data_source: Sized | int,
        batch_size: int,
        *,
        scheme: str = "grad_norm",
        alpha: float = 0.5,
        power: float = 1.0,
        weight_exponent: float = 1.0,
        clip_weights: float | None = None,
        scores_init: float | Tensor | None = None,
        refresh_every: int | None = None,
        refresh_fn: Callable[[], Tensor] | None = None,
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
            what="scores",
        )
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
            value = check_number(scores_init, "scores_init", low=0.0)
            if self.alpha == 1.0 and value == 0.0:
                raise ValueError("scores_init=0 with alpha=1 gives every example probability 0: use alpha < 1")
            self.scores = torch.full((n,), value, dtype=torch.float32, device=self.device)
        self._refresh_owed = False  # a refresh fell due while p = u (skipped, made before the next draw that needs it)
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
        a = check_number(value, "alpha (the uniform-mixing weight)", low=0.0, high=1.0)
        if a == 1.0 and getattr(self, "scores", None) is not None and self._scheme != "uniform":
            if float(self.scores.min()) <= 0.0:
                raise ValueError(
                    "alpha=1 needs every score > 0 (a zero score would get probability 0); "
                    "use alpha < 1, which keeps every p_i ≥ (1 − alpha)/N"
                )
        self._alpha = a
        self._p = None

    @property
    def power(self) -> float:
        """γ ≥ 0 in ``p_scheme ∝ score^γ``."""
        return self._power

    @power.setter
    def power(self, value: float) -> None:
        self._power = check_number(value, "power", low=0.0)
        self._p = None

    @property
    def weight_exponent(self) -> float:
        """e ∈ [0, 1] in ``w = (1/(N p))^e``: 1 unbiased, 0 no weights, in between biased."""
        return self._weight_exponent

    @weight_exponent.setter
    def weight_exponent(self, value: float) -> None:
        self._weight_exponent = check_number(value, "weight_exponent", low=0.0, high=1.0)

    @property
    def clip_weights(self) -> float | None:
        """``None`` or ``c > 0``: opt-in (biased) upper bound on the weights."""
        return self._clip_weights

    @clip_weights.setter
    def clip_weights(self, value: float | None) -> None:
        self._clip_weights = None if value is None else check_number(value, "clip_weights", low=0.0, low_open=True)

    def __len__(self) -> int:
        """Steps per epoch: ``⌈N / (world_size · b)⌉``."""
        return -(-self.n // self.global_batch_size)

    # ------------------------------------------------------------------ the distribution

    def _uses_scores(self) -> bool:
        """Whether the next draw reads the scores: not for ``p = u`` (the uniform scheme, or α = 0)."""
        return self._scheme != "uniform" and self._alpha > 0.0

    def _learns_from_updates(self) -> bool:
        return self._scheme != "uniform" and self.refresh_every != 1

    def probabilities(self) -> Tensor:
        r"""The distribution the next draw uses, :math:`(1-\alpha)u+\alpha\,s^{\gamma}/\sum s^{\gamma}`.

        Shape ``(N,)``, float64 (float32 on MPS), on the sampler's device. All-zero scores give
        ``u``. (With ``refresh_every`` the next draw first refreshes the scores.)
        """
        key = (self._scheme, self._alpha, self._power)
        if self._p is None or self._p_key != key:
            scores = self.scores.to(work_dtype(self.device))
            alpha = 0.0 if self._scheme == "uniform" else self._alpha
            self._p, self._p_key = mixture_probabilities(scores, alpha, self._power), key
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
            raise ValueError(
                f"{name} contain a zero score with alpha=1: that example would get probability 0 "
                "and an infinite weight; use alpha < 1 (p_i ≥ (1 − alpha)/N)"
            )

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
            raise ValueError(
                f"indices and scores must have the same length, got {indices.numel()} and {scores.numel()}"
            )
        if indices.numel() == 0:
            raise ValueError("update got an empty batch")
        # one host read for every check
        lo, hi = torch.aminmax(indices)
        total, smin, lo, hi = torch.stack(
            [self._sum64(scores), scores.min().double(), lo.double(), hi.double()]
        ).tolist()
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
        self.scores.index_put_((indices,), mean_over_duplicates(indices, scores))
        self.pending = max(self.pending - 1, 0)
        self._p = None

    # ------------------------------------------------------------------ drawing

    def _next_batch(self) -> Tensor:
        if self._learns_from_updates():
            self._check_pending("p")
        if self.refresh_every is not None:
            due = self.step % self.refresh_every == 0
            if not self._uses_scores():  # p = u: no scoring pass; the first draw that reads scores makes it
                self._refresh_owed = self._refresh_owed or due
            elif due or self._refresh_owed:
                self._refresh()
                self._refresh_owed = False
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
        for idx, p_drawn in self._records:  # noqa: B007 - oldest first (prefetching); p_drawn is read after the break
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
        (App. B's :math:`H`; 1 for uniform, :math:`(\\sum s)^2/(N\\sum s^2)` at :math:`p^{GN}`).
        """
        p = self.probabilities().double()
        s = self.scores.double()
        s2 = float((s * s).sum())
        return {
            "scheme": self.scheme,
            "alpha": self.alpha,
            "epoch": self.epoch,
            "step": self.step,
            "p_min": float(p.min()),
            "p_max": float(p.max()),
            "max_weight": float(1.0 / (self.n * p.min())),
            "ess": float(1.0 / (p * p).sum()),
            "variance_ratio": float(((s * s) / p).sum() / (self.n * s2)) if s2 > 0 else 1.0,
            "scores_mean": float(s.mean()),
            "scores_max": float(s.max()),
        }

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict:
        """Everything needed to resume mid-epoch: scores, counters, draw records, generator state, options."""
        return {
            "n": self.n,
            "world_size": self.world_size,
            **{k: getattr(self, k) for k in _IS_OPTIONS},
            "scores": self.scores.clone(),
            "counts": self._counts.clone(),
            "epoch": self.epoch,
            "position": self.position,
            "step": self.step,
            "pending": self.pending,
            "refresh_owed": self._refresh_owed,
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
        self._refresh_owed = bool(state.get("refresh_owed", False))
        self._p = None
        self._p_last = None if state["p_last"] is None else state["p_last"].to(self.device).clone()
        self._records = deque(
            ((i.to(self.device).clone(), p.to(self.device).clone()) for i, p in state["records"]),
            maxlen=self.max_pending + 1,
        )
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
        tail = ", ".join(
            [
                f"n={self.n}",
                f"batch_size={self.batch_size}",
                f"scheme={self.scheme!r}",
                f"alpha={self.alpha:g}",
                *extras,
                f"device={self.device}",
            ]
        )
        return f"ImportanceSampler({tail})"


def mixture_probabilities(scores: Tensor, alpha: float, power: float = 1.0) -> Tensor:
    r"""The uniform-mixing family :math:`p=(1-\alpha)\,u+\alpha\,s^{\gamma}/\sum_j s_j^{\gamma}` (γ = ``power``).

    Unchecked: ``scores`` non-negative and finite, α in [0, 1]. All-zero scores give the uniform
    distribution; the scores are scaled by their maximum first, so :math:`s^\gamma` cannot overflow and 0 stays
    0 (γ = 0 is uniform). Same dtype and device as ``scores``.
    """
    n = scores.numel()
    u = 1.0 / n
    if alpha == 0.0:
        return torch.full((n,), u, dtype=scores.dtype, device=scores.device)
    top = scores.max()
    s = (scores / torch.where(top > 0, top, torch.ones_like(top))).pow(power)
    total = s.sum()
    s_hat = torch.where(total > 0, s / torch.where(total > 0, total, torch.ones_like(total)), torch.full_like(s, u))
    return (1.0 - alpha) * u + alpha * s_hat


def is_mixture(grad_norms, alpha: float) -> np.ndarray:
    r"""The uniform-mixing family :math:`p^{(\alpha)}=(1-\alpha)u+\alpha\,p^{GN}`, :math:`p^{GN}=g/\sum_jg_j`.

    ``alpha`` ∈ [0, 1] is the uniform-mixing α of the course glossary (0 uniform, ½ the paper's
    :math:`p^{1/2}`, 1 the optimal :math:`p^{GN}`). All-zero norms give the uniform distribution. The
    distribution :meth:`ImportanceSampler.probabilities` draws from (``power=1``), as a float64 numpy array.
    """
    g = np.asarray(to_numpy(grad_norms), dtype=np.float64).reshape(-1)
    if g.size == 0 or np.any(~np.isfinite(g)) or np.any(g < 0):
        raise ValueError("grad_norms must be a non-empty vector of finite, non-negative numbers")
    alpha = check_number(alpha, "alpha (the uniform-mixing weight)", low=0, high=1)
    return mixture_probabilities(torch.from_numpy(g), alpha).numpy()
