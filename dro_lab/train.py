r"""The one training engine of dro_lab.

:func:`fit` runs the loop: it resolves the device, seeds every random draw through
``torch.Generator``\ s, asks a :class:`Strategy` which indices form the next batch and how to
reduce the batch's per-sample losses, steps the optimiser, hands the losses back to the strategy
(samplers learn from them), and records per-epoch metrics (average, per-class, worst-class and,
where the data have groups, worst-group accuracy) in a :class:`History`.

Methods are strategies, not loops::

    hist = fit(model, train, test=test, strategy=RobustLossStrategy("kl", beta=10), epochs=20)

Batches are drawn lazily, when the loop asks for them, so a strategy's distribution is always
current (no prefetching lag).

Under ``torchrun`` (an initialised ``torch.distributed`` process group) :func:`fit` trains with
``DistributedDataParallel``: every rank runs the same strategy on the same **global** batch of
``world_size × batch_size`` indices, takes its slice for the forward pass, and all-gathers the
per-sample losses, so reductions, samplers and π see the global batch and the result equals one
process with ``batch_size × world_size`` (see :func:`fit`, ``distributed``).
"""

from __future__ import annotations

import copy
import math
import os
import random
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.data import default_collate

from .metrics import dataset_losses, evaluate
from .robust import RobustLoss
from .samplers import HardnessWeightedSampler, ImportanceSampler
from .utils import make_generator, resolve_device

__all__ = [
    "Strategy",
    "ERM",
    "RobustLossStrategy",
    "HardnessWeightedStrategy",
    "OHEMStrategy",
    "ImportanceSamplingStrategy",
    "History",
    "fit",
    "fetch_batch",
    "per_sample_cross_entropy",
    "clone_model",
]


def per_sample_cross_entropy(logits: Tensor, y: Tensor) -> Tensor:
    """Cross-entropy with ``reduction="none"``: the per-sample losses every strategy works on."""
    return F.cross_entropy(logits, y, reduction="none")


def fetch_batch(dataset, idx: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """``(x, y, index, group | None)`` for the examples ``idx`` of a dataset yielding ``(x, y, index[, group])``.

    In-memory datasets that offer ``batch(idx)`` are sliced in one call (no per-item Python);
    any other map-style dataset is collated item by item.
    """
    if hasattr(dataset, "batch"):
        parts = dataset.batch(idx)
    else:
        parts = default_collate([dataset[int(i)] for i in idx])
    parts = tuple(parts)
    if len(parts) == 3:
        return parts[0], parts[1], parts[2], None
    if len(parts) == 4:
        return parts[0], parts[1], parts[2], parts[3]
    raise ValueError(
        f"dataset items must be (x, y, index) or (x, y, index, group), got {len(parts)} fields; "
        "wrap plain (x, y) datasets in dro_lab.data.IndexedDataset"
    )


# --------------------------------------------------------------------------- strategies


class Strategy:
    """How a batch is drawn and how its per-sample losses become the loss to minimise.

    Override any of the hooks; the defaults are plain ERM with uniform shuffling.

    * :meth:`setup` — at the start of every :func:`fit` call, with the dataset size, device,
      generator, batch size, and the model, training set and per-sample loss (for strategies that
      need a full pass, such as the exact loss history).
    * :meth:`batches` — the index batches of one epoch; drawn lazily, one at a time.
    * :meth:`reduce` — per-sample losses (shape ``(b,)``) → the scalar to back-propagate.
    * :meth:`observe` — after the step, the batch's indices and detached losses (for samplers).
    * :meth:`make_optimizer`, :meth:`transform`, :meth:`backward` — for methods that own the
      optimizer (ALSO), change the inputs (attacks) or the gradient (compressed workers).
    * :meth:`epoch_stats` — extra numbers for the epoch's :class:`History` record.
    * :meth:`state_dict` / :meth:`load_state_dict` — everything needed to resume, mid-epoch included
      (running per-epoch statistics too: ``fit(checkpoint=...)`` resumes bit-identically from them).
    * :meth:`resume_batches` — the rest of an interrupted epoch, for batch iterators that change the
      strategy's own state (samplers); the default lets :func:`fit` rebuild it.
    """

    name = "erm"
    _ddp_supported = True  # False: the strategy cannot run under fit's DDP (it bypasses DDP's gradient reducer)

    def setup(self, n: int, *, device: torch.device, generator: torch.Generator, batch_size: int | None = None,
              model: torch.nn.Module | None = None, train=None, loss_fn: Callable | None = None) -> None:
        self.n = n
        self.device = device
        self.generator = generator

    def batches(self, epoch: int, batch_size: int) -> Iterator[Tensor]:
        perm = torch.randperm(self.n, generator=self.generator)
        for start in range(0, self.n, batch_size):
            yield perm[start:start + batch_size]

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        return losses.mean()

    def observe(self, indices: Tensor, losses: Tensor) -> None:
        pass

    def make_optimizer(self, params, *, lr: float, weight_decay: float, momentum: float) -> torch.optim.Optimizer | None:
        """An optimizer this strategy needs (group-DRO methods own π), or ``None`` for ``fit``'s ``optimizer``."""
        return None

    def transform(self, x: Tensor, y: Tensor, *, indices: Tensor, groups: Tensor | None,
                  model: torch.nn.Module) -> tuple[Tensor, Tensor, Tensor | None] | list:
        """Change the batch before the forward pass (input transformations, attacks); may set the groups.

        Return ``(x, y, groups)``, or a list of such triples for several sequential optimizer steps on one
        drawn batch (GI-LS: the generated batch, then the original one). ``y`` may be soft labels ``(b, k)``
        when ``loss_fn`` accepts them (the default cross-entropy does).
        """
        return x, y, groups

    def backward(self, objective: Tensor, *, losses: Tensor, groups: Tensor | None) -> None:
        """Put the gradient in ``.grad`` (default: ``objective.backward()``; compressed workers do more)."""
        objective.backward()

    def epoch_stats(self) -> dict:
        return {}

    def resume_batches(self, epoch: int, batch_size: int, consumed: int) -> Iterator[Tensor] | None:
        """The rest of epoch ``epoch`` after its first ``consumed`` batches, when :func:`fit` resumes from a checkpoint.

        Called after :meth:`load_state_dict` restored the state saved after those batches. Return
        ``None`` (the default) and ``fit`` rebuilds the iterator itself: it calls :meth:`batches` again
        and replays its first ``consumed`` draws, with its generator set as it was before each of them,
        then discards them. That is right for any iterator whose position is its own (a permutation
        drawn at the epoch start, a loop counter, per-step draws from the generator); its draws may read
        the strategy's state (π) but must not change it. A strategy whose batches move its own state (a
        sampler's epoch position, saved by :meth:`state_dict`) returns the continuing iterator instead.
        """
        return None

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass

    def describe(self) -> str:
        return self.name


class ERM(Strategy):
    """Empirical risk minimisation: uniform shuffled batches, mean loss."""

    name = "erm"


class RobustLossStrategy(Strategy):
    r"""Mini-batch DRO: each batch's per-sample losses reduced by :func:`dro_lab.robust_loss`.

    The batch is drawn uniformly and the worst case is taken over the batch (the fast-dro
    estimator; it is biased for the full-data robust loss except with ``batch_size = n``).
    ``divergence``/``beta``/``radius``/``alpha`` as in :func:`dro_lab.worst_case_weights`.
    With ``over="groups"`` the robust reducer runs on the batch's per-group mean losses instead,
    around a prior over the groups: ``group_prior="uniform"`` (β → 0 is group-balanced ERM) or
    ``"empirical"`` (each group weighted by its share of the batch, so β → 0 is plain ERM).
    """

    def __init__(self, divergence: str = "kl", *, beta: float | None = None, radius: float | None = None,
                 alpha: float | None = None, over: str = "samples", group_prior: str = "uniform"):
        if over not in ("samples", "groups"):
            raise ValueError(f"over must be 'samples' or 'groups', got {over!r}")
        if group_prior not in ("uniform", "empirical"):
            raise ValueError(f"group_prior must be 'uniform' or 'empirical', got {group_prior!r}")
        self.criterion = RobustLoss(divergence, beta=beta, radius=radius, alpha=alpha)
        self.over = over
        self.group_prior = group_prior
        knob = next((f"{k}={v:g}" for k, v in (("β", beta), ("r", radius), ("α", alpha)) if v is not None), "")
        self.name = f"{divergence}-dro({knob})" if divergence != "cvar" else f"cvar({knob})"

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        if self.over == "groups":
            if groups is None:
                raise ValueError("RobustLossStrategy(over='groups') needs a dataset that yields groups")
            present, inverse = torch.unique(groups, return_inverse=True)
            sums = losses.new_zeros(len(present)).index_add(0, inverse, losses)
            counts = torch.bincount(inverse, minlength=len(present)).to(losses.dtype)
            prior = counts / counts.sum() if self.group_prior == "empirical" else None
            return self.criterion(sums / counts, prior=prior)
        return self.criterion(losses)

    def describe(self) -> str:
        return self.name


class _SamplerStrategy(Strategy):
    """A strategy whose batches come from a table sampler (HWS, IS): the sampler is created at the first
    :func:`fit` and kept by later calls on the same data (so a second ``fit`` continues the run), its
    generator is seeded from ``fit``'s seed, and its state is the strategy's state."""

    sampler_cls: type = HardnessWeightedSampler
    sampler = None
    _saved: dict | None = None

    def _attach(self, n: int, device: torch.device, generator: torch.Generator, batch_size: int | None,
                refresh_fn: Callable[[], Tensor] | None) -> None:
        if self.sampler is not None and self.sampler.n == n and self.sampler.device == device:
            self.sampler.refresh_fn = refresh_fn  # a later fit: keep the table, continue
            return
        # world_size=1 even under DDP: fit hands the strategy the global batch (every rank draws the same one
        # and takes its slice, then observes the all-gathered losses), so the sampler is the single-process one.
        self.sampler = self.sampler_cls(
            n, batch_size or 64, device=device, refresh_fn=refresh_fn, world_size=1, rank=0,
            generator=torch.Generator(device=device).manual_seed(generator.initial_seed()), **self.options)
        if self._saved is not None:
            self.sampler.load_state_dict(self._saved)
            self._saved = None

    def batches(self, epoch: int, batch_size: int) -> Iterator[Tensor]:
        self.sampler.batch_size = batch_size
        return self.sampler.batches()

    def resume_batches(self, epoch: int, batch_size: int, consumed: int) -> Iterator[Tensor]:
        # the sampler's state holds its epoch position: its batches() continues the epoch, except when the
        # epoch's last batch was drawn (the interrupted iterator would have closed the epoch on its next step)
        self.sampler.batch_size = batch_size
        if self.sampler.position >= len(self.sampler):
            self.sampler._end_of_epoch()
            return iter(())
        return self.sampler.batches()

    def state_dict(self) -> dict:
        return {"sampler": None if self.sampler is None else self.sampler.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if self.sampler is None:
            self._saved = state["sampler"]  # applied when fit sets the sampler up
        else:
            self.sampler.load_state_dict(state["sampler"])

    def describe(self) -> str:
        return self.name


class HardnessWeightedStrategy(_SamplerStrategy):
    r"""SGD with hardness-weighted sampling (Fidon et al., Algorithm 1) through the engine.

    Batches come from a :class:`dro_lab.HardnessWeightedSampler` (warm-start epoch, then ``b``
    indices i.i.d. from ``q = worst_case_weights(history, divergence, beta)``, ⌊n/b⌋+1 iterations
    per epoch); the loss is the plain batch mean (the sampling does the weighting) and the
    batch's losses go back into the history after the step.

    Args:
        beta, divergence: as in the sampler (KL by default, the paper's).
        exact_history: the paper's Theorem B.1 variant: the whole history is recomputed before
            every draw (a full forward pass per iteration; small data only).
        refresh_every: beyond the paper: recompute the whole history every ``k`` iterations.
        warm_start, prob_floor, importance_weights, history_momentum: the sampler's options
            (all but ``warm_start`` beyond the paper; off by default).

    The sampler is created at the first :func:`fit` and kept by later calls on the same data, so
    a second ``fit`` continues training (no second warm start). Its generator is seeded from
    ``fit``'s seed, so the warm-start epoch is the same permutation ERM's first epoch uses: with
    the same initial model, ERM and HWS share epoch 1 (the paper's RNG separation).
    """

    def __init__(self, beta: float = 10.0, divergence: str = "kl", *, exact_history: bool = False,
                 refresh_every: int | None = None, warm_start: bool = True, prob_floor: float = 0.0,
                 importance_weights: bool = False, history_momentum: float = 0.0):
        if exact_history and refresh_every not in (None, 1):
            raise ValueError(f"exact_history=True refreshes every iteration; got refresh_every={refresh_every}")
        self.options = dict(beta=beta, divergence=divergence, warm_start=warm_start, prob_floor=prob_floor,
                            importance_weights=importance_weights, history_momentum=history_momentum,
                            refresh_every=1 if exact_history else refresh_every)
        # Validate now (a clear error at construction, not at the first fit): a throw-away sampler.
        HardnessWeightedSampler(1, 1, device="cpu", generator=torch.Generator(),
                                refresh_fn=(lambda: None) if self.options["refresh_every"] else None, **self.options)
        beyond = [k for k in ("prob_floor", "importance_weights", "history_momentum") if self.options[k]]
        mode = "exact" if exact_history else (f"refresh{refresh_every}" if refresh_every else "")
        tags = ",".join([f"β={float(beta):g}", *([mode] if mode else []), *beyond])
        self.name = f"hws-{divergence}({tags})"

    def setup(self, n: int, *, device: torch.device, generator: torch.Generator, batch_size: int | None = None,
              model: torch.nn.Module | None = None, train=None, loss_fn: Callable | None = None) -> None:
        super().setup(n, device=device, generator=generator)
        refresh_fn = None
        if self.options["refresh_every"]:
            if model is None or train is None:
                raise ValueError("exact_history / refresh_every need the model and training set (run through fit)")
            refresh_fn = lambda: dataset_losses(model, train, loss_fn=loss_fn)  # noqa: E731
        self._attach(n, device, generator, batch_size, refresh_fn)

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        if self.sampler.use_importance_weights:
            return (self.sampler.importance_weights(indices, losses.detach()) * losses).mean()
        return losses.mean()

    def observe(self, indices: Tensor, losses: Tensor) -> None:
        self.sampler.update(indices, losses)

    def epoch_stats(self) -> dict:
        stats = self.sampler.stats()
        return {f"sampler_{k}": v for k, v in stats.items() if k not in ("phase", "epoch", "step")}



class OHEMStrategy(Strategy):
    """Online hard example mining (Shrivastava et al., 2016): uniform batches, back-propagate the top-k losses.

    The baseline that hardness-weighted sampling generalises (Fidon et al., §3.4): the hardest
    ``keep`` fraction of each uniformly drawn batch (at least one example) makes the loss.
    """

    def __init__(self, keep: float = 0.5):
        if isinstance(keep, bool) or not isinstance(keep, (int, float)) or not 0 < keep <= 1:
            raise ValueError(f"keep must be a fraction in (0, 1], got {keep!r}")
        self.keep = float(keep)
        self.name = f"ohem(keep={self.keep:g})"

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        k = max(1, math.ceil(round(self.keep * losses.numel(), 9)))  # round: 0.28 * 25 = 7.000000000000001
        return torch.topk(losses, k, sorted=False).values.mean()


class ImportanceSamplingStrategy(_SamplerStrategy):
    sampler_cls = ImportanceSampler

    r"""Importance-sampled SGD (Lahire 2023, eq. 2) through the engine: draw from ``p``, weight by ``1/(N p_i)``.

    Batches come from a :class:`dro_lab.ImportanceSampler`; the loss is the weighted mean
    :math:`\frac1b\sum_k w_{i_k}\ell_{i_k}` with the weights of the draw, an unbiased estimate of the
    ERM gradient (``weight_exponent=1``, no clipping).

    Where the scores come from (``scheme``):

    * ``"grad_norm"`` — exact per-sample gradient norms (:func:`dro_lab.per_sample_grad_norms`);
    * ``"loss"`` — the per-sample losses;
    * ``"last_layer"`` — the logit-gradient norm of Katharopoulos & Fleuret, forward only
      (:func:`dro_lab.logit_grad_norms`; for cross-entropy);
    * ``"uniform"`` — none (plain SGD with replacement).

    With ``refresh_every=1`` (the default, the paper's set-up) all ``N`` scores are recomputed at the
    current parameters before every draw — affordable on the paper's 100 images, O(N) per step in
    general. ``refresh_every=k`` refreshes every ``k`` draws; ``None`` keeps a stale table that each
    batch's scores update after the step (its scores at the parameters after the step). ``alpha``,
    ``power``, ``weight_exponent`` and ``clip_weights`` are the sampler's (``clip_weights`` biases the
    estimator; it is off by default).
    """

    def __init__(self, scheme: str = "grad_norm", *, alpha: float = 0.5, power: float = 1.0,
                 weight_exponent: float = 1.0, clip_weights: float | None = None, refresh_every: int | None = 1,
                 score_batch_size: int = 256):
        self.options = dict(scheme=scheme, alpha=alpha, power=power, weight_exponent=weight_exponent,
                            clip_weights=clip_weights, refresh_every=refresh_every)
        # validate now: a throw-away sampler
        ImportanceSampler(1, 1, device="cpu", generator=torch.Generator(),
                          refresh_fn=(lambda: None) if refresh_every else None,
                          scores_init=None, **self.options)
        if isinstance(score_batch_size, bool) or not isinstance(score_batch_size, int) or score_batch_size < 1:
            raise ValueError(f"score_batch_size must be an integer ≥ 1, got {score_batch_size!r}")
        self.score_batch_size = score_batch_size
        tags = [f"α={float(alpha):g}"] + ([f"power={power:g}"] if power != 1 else []) \
            + ([f"w^{weight_exponent:g}"] if weight_exponent != 1 else []) + (["clipped"] if clip_weights else []) \
            + ([f"refresh{refresh_every}"] if refresh_every not in (None, 1) else ["stale"] if refresh_every is None else [])
        self.name = f"is-{scheme}({','.join(tags)})"

    def _scores(self, x: Tensor, y: Tensor) -> Tensor:
        from .pergrad import logit_grad_norms, per_sample_grad_norms

        scheme = self.options["scheme"]
        if scheme == "grad_norm":
            return per_sample_grad_norms(self.model, self.loss_fn, x, y)
        with torch.no_grad():
            logits = self.model(x.to(self.device))
            if scheme == "last_layer":  # forward only: ‖softmax(z) − e_y‖, the cross-entropy logit gradient
                return logit_grad_norms(logits, y.to(self.device))
            return self.loss_fn(logits, y.to(self.device))

    def _all_scores(self) -> Tensor:
        out = []
        for start in range(0, self.n, self.score_batch_size):
            x, y, _, _ = fetch_batch(self.train, torch.arange(start, min(start + self.score_batch_size, self.n)))
            out.append(self._scores(x, y).detach().float())
        return torch.cat(out)

    def setup(self, n: int, *, device: torch.device, generator: torch.Generator, batch_size: int | None = None,
              model: torch.nn.Module | None = None, train=None, loss_fn: Callable | None = None) -> None:
        super().setup(n, device=device, generator=generator)
        if model is None or train is None:
            raise ValueError("ImportanceSamplingStrategy needs the model and the training set (run it through fit)")
        self.model, self.train, self.loss_fn = model, train, loss_fn or per_sample_cross_entropy
        self._attach(n, device, generator, batch_size, self._all_scores if self.options["refresh_every"] else None)

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        return (self.sampler.weights(indices).to(losses.dtype) * losses).mean()

    def observe(self, indices: Tensor, losses: Tensor) -> None:
        if self.options["refresh_every"] is not None or self.options["scheme"] == "uniform":
            return
        if self.options["scheme"] == "loss":
            self.sampler.update(indices, losses)
        else:
            x, y, _, _ = fetch_batch(self.train, indices)
            self.sampler.update(indices, self._scores(x, y))

    def epoch_stats(self) -> dict:
        return {f"sampler_{k}": v for k, v in self.sampler.stats().items() if isinstance(v, (int, float))}



# --------------------------------------------------------------------------- history


@dataclass
class History:
    """Per-epoch records of one run: ``history["test_accuracy"]`` is the column over epochs."""

    strategy: str = ""
    seed: int = 0
    device: str = "cpu"
    records: list[dict] = field(default_factory=list)
    world_size: int = 1

    def append(self, record: dict) -> None:
        self.records.append(record)

    def __getitem__(self, key: str) -> list:
        if not self.records or key not in self.records[-1]:
            have = sorted(self.records[-1]) if self.records else []
            raise KeyError(f"no metric {key!r} in this history; have {have}")
        return [r.get(key) for r in self.records]

    def __len__(self) -> int:
        return len(self.records)

    def __contains__(self, key: str) -> bool:
        return bool(self.records) and key in self.records[-1]

    @property
    def last(self) -> dict:
        if not self.records:
            raise IndexError("empty history: no epoch has finished")
        return self.records[-1]

    def to_dict(self) -> dict:
        return {"strategy": self.strategy, "seed": self.seed, "device": self.device, "records": self.records,
                "world_size": self.world_size}


# --------------------------------------------------------------------------- distributed (torchrun / DDP)


def _distributed_layout(distributed) -> tuple[int, int]:
    """``(world_size, rank)`` of the run ``fit`` does: ``(1, 0)`` unless DDP is on."""
    if not (isinstance(distributed, bool) or (isinstance(distributed, str) and distributed == "auto")):
        raise ValueError(f"distributed must be 'auto', True or False, got {distributed!r}")
    dist = torch.distributed
    ready = dist.is_available() and dist.is_initialized()
    if distributed is True and not ready:
        raise ValueError("distributed=True needs an initialised process group: run under torchrun and call "
                         "torch.distributed.init_process_group('gloo' or 'nccl') before fit")
    if distributed is False or not ready:
        return 1, 0
    return dist.get_world_size(), dist.get_rank()


def _ddp_device(device, world_size: int) -> torch.device:
    """``device`` for this rank: ``"auto"``/``"cuda"`` → ``cuda:LOCAL_RANK`` under DDP when CUDA is there."""
    if world_size > 1 and (device is None or (isinstance(device, str) and device in ("auto", "cuda"))) \
            and torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", torch.distributed.get_rank()))
        return torch.device("cuda", local % torch.cuda.device_count())
    return resolve_device(device)


def _comm_device(dev: torch.device) -> torch.device:
    """Where collectives run: the GPU for NCCL, the host otherwise (gloo gathers CPU tensors)."""
    return dev if torch.distributed.get_backend() == "nccl" else torch.device("cpu")


def _broadcast_seed(seed: int, comm: torch.device) -> int:
    box = torch.tensor([int(seed)], dtype=torch.int64, device=comm)
    torch.distributed.broadcast(box, src=0)
    return int(box.item())


def _split_sizes(m: int, world_size: int) -> list[int]:
    """Slice lengths of a global batch of ``m`` over the ranks (``torch.tensor_split``'s: the first
    ``m mod world_size`` ranks get one more; a rank may get none)."""
    q, r = divmod(m, world_size)
    return [q + 1 if k < r else q for k in range(world_size)]


def _global_batch(losses: Tensor, index: Tensor, groups: Tensor | None, sizes: list[int], rank: int,
                  comm: torch.device) -> tuple[Tensor, Tensor, Tensor | None]:
    """The global batch's ``(losses, index, groups)`` on every rank, from each rank's slice.

    One all-gather of a float64 ``(max slice, 3)`` block (exact for float32/bfloat16 losses and for
    integer ids below 2⁵³). The other ranks' losses are constants; this rank's slice keeps its graph,
    so a reduction of the returned vector back-propagates into this rank's forward pass only, and the
    sum over ranks of those gradients is the gradient of the global reduction.
    """
    world_size, m = len(sizes), max(sizes)
    block = torch.zeros(m, 3, dtype=torch.float64, device=comm)
    k = losses.shape[0]
    block[:k, 0] = losses.detach().to(comm, torch.float64)
    block[:k, 1] = index.to(comm, torch.float64)
    if groups is not None:
        block[:k, 2] = groups.to(comm, torch.float64)
    parts = [torch.empty_like(block) for _ in range(world_size)]
    torch.distributed.all_gather(parts, block)
    rows = torch.cat([part[:size] for part, size in zip(parts, sizes)]).to(losses.device)
    start = sum(sizes[:rank])
    glob = rows[:, 0].to(losses.dtype)
    glob = torch.cat([glob[:start], losses, glob[start + k:]])
    g_index = rows[:, 1].to(torch.int64).to(index.device)
    g_groups = rows[:, 2].to(torch.int64).to(groups.device) if groups is not None else None
    return glob, g_index, g_groups


# --------------------------------------------------------------------------- checkpoints

_CHECKPOINT_FORMAT = 1
# what must match for a checkpoint to be resumed by this fit call (the dro_lab version only warns)
_HEADER_KEYS = ("strategy", "seed", "n", "batch_size", "world_size", "epochs", "lr", "optimizer")


def _check_checkpoint_args(checkpoint, checkpoint_every, resume) -> Path | None:
    if not isinstance(resume, bool):
        raise ValueError(f"resume must be True or False, got {resume!r}")
    if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int)
                                         or checkpoint_every < 1):
        raise ValueError(f"checkpoint_every must be an integer ≥ 1 (optimizer steps) or None, "
                         f"got {checkpoint_every!r}")
    if checkpoint is None:
        if checkpoint_every is not None:
            raise ValueError("checkpoint_every needs checkpoint: the path of the checkpoint file to write")
        return None
    if not isinstance(checkpoint, (str, os.PathLike)):
        raise TypeError(f"checkpoint must be a path (str or os.PathLike) or None, got {type(checkpoint).__name__}")
    path = Path(checkpoint)
    if str(checkpoint) == "" or path.is_dir():
        raise ValueError(f"checkpoint must be a file path, got {str(checkpoint)!r} (a directory or empty)")
    if not path.parent.is_dir():
        raise ValueError(f"checkpoint's folder {str(path.parent)!r} does not exist; create it first")
    return path


def _rng_states() -> dict:
    """The global generators' states: torch's CPU (and CUDA's, once initialised), Python's, NumPy's."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state(legacy=True)
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None,
        "python": random.getstate(),
        # as plain types and a tensor, so the checkpoint loads with torch.load(weights_only=True)
        "numpy": (kind, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(gauss)),
    }


def _set_rng_states(states: dict) -> None:
    torch.set_rng_state(states["torch"])
    if states["cuda"] is not None and torch.cuda.is_available() and len(states["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(states["cuda"])
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = states["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))


def _write_checkpoint(path: Path, state: dict) -> None:
    """``torch.save`` to a temporary file beside ``path``, then ``os.replace``: the file named ``path`` is always a
    whole checkpoint (the old one until the new one is complete), whatever interrupts the write."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        torch.save(state, tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _read_checkpoint(path: Path, header: dict) -> dict:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file gets the same advice
        raise ValueError(f"checkpoint {str(path)!r} cannot be read ({type(exc).__name__}: {exc}); "
                         "delete it, or pass resume=False to overwrite it") from exc
    saved = state.get("header", {}) if isinstance(state, dict) else {}
    if saved.get("format") != _CHECKPOINT_FORMAT:
        raise ValueError(f"checkpoint {str(path)!r} is not a dro_lab fit checkpoint (format "
                         f"{saved.get('format')!r}, expected {_CHECKPOINT_FORMAT}); pass resume=False to overwrite it")
    _check_header(saved, header, path)
    if saved.get("dro_lab") != header["dro_lab"]:
        warnings.warn(f"checkpoint {str(path)!r} was written by dro_lab {saved.get('dro_lab')}, this is "
                      f"{header['dro_lab']}: the resumed run may not equal an uninterrupted one", stacklevel=3)
    return state


def _check_header(saved: dict, header: dict, path: Path, keys=_HEADER_KEYS) -> None:
    differ = [f"{k}={saved.get(k)!r} there, {header[k]!r} here"
              for k in keys if k in header and saved.get(k) != header[k]]
    if differ:
        raise ValueError(f"checkpoint {str(path)!r} was written by another configuration ({'; '.join(differ)}); "
                         "pass the same arguments to resume it, or resume=False (or another path) to start afresh")


def _replay(strategy: Strategy, epoch: int, batch_size: int, consumed: int, draws: dict[int, Tensor],
            generator: torch.Generator) -> Iterator[Tensor]:
    """``strategy.batches(epoch, ...)`` advanced past its first ``consumed`` batches, which are discarded: before
    the k-th draw the generator is put back where it was when the interrupted run made it (``draws[k]``; draws
    that used no randomness are not recorded); afterwards it is where the checkpoint left it."""
    now = generator.get_state()
    it = iter(strategy.batches(epoch, batch_size))
    for k in range(consumed):
        if k in draws:
            generator.set_state(draws[k])
        try:
            next(it)
        except StopIteration:
            raise ValueError(f"cannot resume epoch {epoch}: {strategy.describe()!r} now draws fewer than the "
                             f"{consumed} batches the checkpoint had consumed") from None
    generator.set_state(now)
    return it


# --------------------------------------------------------------------------- the loop


def _make_optimizer(name: str, params, lr: float, momentum: float, weight_decay: float) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    raise ValueError(f"optimizer must be 'sgd', 'adam', 'adamw', 'rmsprop' or a torch.optim.Optimizer, got {name!r}")


def fit(model: torch.nn.Module, train, *, strategy: Strategy | None = None, test=None, epochs: int = 10,
        batch_size: int = 64, lr: float = 0.1, optimizer: str | torch.optim.Optimizer = "sgd",
        momentum: float = 0.0, weight_decay: float = 0.0, loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
        device: str | torch.device = "auto", seed: int = 0, progress: bool = True,
        eval_train: bool = False, callback: Callable[[int, dict], None] | None = None,
        lr_schedule: Callable[[int], float] | None = None, distributed: bool | str = "auto",
        checkpoint: str | os.PathLike | None = None, checkpoint_every: int | None = None,
        resume: bool = True) -> History:
    """Train ``model`` on ``train`` with ``strategy`` and return the per-epoch :class:`History`.

    Args:
        model: any ``nn.Module`` mapping a batch of inputs to logits; moved to ``device``.
        train, test: datasets yielding ``(x, y, index[, group])`` (see :mod:`dro_lab.data`).
        strategy: how batches are drawn and reduced (default :class:`ERM`). Used in place: it keeps
            its state after training, so a sampler can be inspected (or resumed) afterwards.
        epochs, batch_size, lr, momentum, weight_decay: the usual; ``optimizer`` is ``"sgd"``,
            ``"adam"``, ``"adamw"``, ``"rmsprop"`` or a ready ``torch.optim.Optimizer`` over ``model``'s
            parameters. A strategy that owns its optimizer (:class:`dro_lab.GroupDROStrategy`) builds
            it from ``lr`` and ``weight_decay`` instead.
        loss_fn: per-sample loss ``(logits, y) -> (b,)``; default cross-entropy, ``reduction="none"``.
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``...
        seed: seeds the batch draws (a dedicated ``torch.Generator``); the model's initialisation
            is the caller's (call :func:`dro_lab.seed_everything` before building it).
        progress: a tqdm progress bar over epochs (``tqdm.auto``: a widget in Jupyter).
        eval_train: also evaluate on the full training set each epoch (``train_full_*`` metrics:
            ``train_full_loss``, ``train_full_loss_std``, ``train_full_accuracy``, ...).
        callback: ``callback(epoch, record)`` after each epoch (live figures).
        lr_schedule: ``epoch -> factor``; each epoch runs at ``factor × lr`` (e.g. a one-cycle or step
            schedule); recorded as ``lr`` in the history.
        distributed: ``"auto"`` (default): data-parallel training when ``torch.distributed`` is
            initialised with more than one process (``torchrun``; gloo on CPU, NCCL on GPU); ``True``
            requires it; ``False`` trains this process alone.
        checkpoint: a file path: ``fit`` saves everything needed to continue the run there (see
            *Checkpoint and resume* below) when it starts afresh, at the end of every epoch and, with
            ``checkpoint_every``, inside epochs. Its folder must exist.
        checkpoint_every: also save after every ``k`` optimizer steps of an epoch (at the end of the
            drawn batch that completes them; GI-LS makes two steps per batch); ``None``: epoch ends only.
        resume: with ``checkpoint`` naming an existing file, continue the run it holds (default); ``False``
            ignores it and overwrites it with this run.

    Checkpoint and resume: a checkpoint holds the model's and the optimizer's ``state_dict``, the
    strategy's (:meth:`Strategy.state_dict`: samplers, π, running statistics), the state of ``fit``'s
    generator and of the global generators (torch CPU and CUDA, Python ``random``, NumPy), the epoch and
    the number of batches of it already trained on, the epoch's running sums, the generator states the
    epoch's batch draws started from (to rebuild the rest of the epoch, :meth:`Strategy.resume_batches`),
    the :class:`History` so far, the base learning rates of ``lr_schedule``, and a header (dro_lab version,
    strategy, seed, n, batch size, world size, epochs, lr, optimizer class). A ``fit`` call with the same
    arguments and a fresh model and strategy (their initial values do not matter: all are loaded) continues
    from the saved step; on the CPU the final parameters, optimizer state and history (except ``seconds``)
    are bit-identical to an uninterrupted run. The steps after the last save are redone. A checkpoint
    from another configuration is refused (``ValueError`` naming what differs); one from another dro_lab
    version warns. Files are written atomically (a temporary file beside it, then ``os.replace``), so an
    interruption during a save leaves the previous checkpoint. The epoch's ``callback`` runs after its
    checkpoint is written (a run resumed at an epoch start does not repeat it). Under DDP only rank 0
    writes and every rank loads: the path must be on a file system every rank sees (``fit`` checks that
    all ranks see the file or none); every rank restores rank 0's global RNG states.

    Distributed training (``world_size`` ranks): ``batch_size`` is **per rank**, the global batch is
    ``world_size × batch_size``, and the run equals one process with that batch (up to float
    summation order). The model is wrapped in ``DistributedDataParallel`` (rank 0's parameters and
    buffers are broadcast; ``device="auto"`` or ``"cuda"`` is ``cuda:LOCAL_RANK``) and rank 0's
    ``seed`` is used everywhere. Every rank draws the same global batch from the strategy (same
    generator; samplers included) and forwards its contiguous slice; the per-sample losses, indices
    and groups are all-gathered, so :meth:`Strategy.reduce` (robust weights, OHEM's top-k, ALSO's π
    gradient with the global batch size), :meth:`Strategy.observe` (the samplers' tables) and the
    history see the global batch on every rank. The objective back-propagated is ``world_size ×`` the
    global one through this rank's slice, so DDP's gradient mean is the global-batch gradient.
    Strategy state, optimizer state and the :class:`History` are identical on all ranks (except
    ``seconds``); ``test`` / ``eval_train`` are evaluated by every rank on the whole set (keep them
    small, or pass ``test=None`` on ranks > 0). Not single-process-equivalent: BatchNorm statistics
    (per rank; use ``torch.nn.SyncBatchNorm``), random draws inside :meth:`Strategy.transform`
    (each rank draws for its slice), and :class:`dro_lab.CompressedWorkersStrategy` (its
    ``autograd.grad`` bypasses DDP's reducer: not supported).

    Returns:
        :class:`History` with, per epoch, ``epoch``, ``train_loss`` (mean per-sample loss of the
        batches), ``train_objective`` (mean reduced loss), ``seconds`` and, with ``test``,
        ``test_accuracy``, ``test_worst_class_accuracy``, ``test_per_class_accuracy`` and, for
        grouped data, ``test_worst_group_accuracy`` / ``test_per_group_accuracy``.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be an integer ≥ 1, got {epochs!r}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer ≥ 1, got {batch_size!r}")
    if not (isinstance(lr, (int, float)) and lr > 0 and math.isfinite(lr)):
        raise ValueError(f"lr must be a positive number, got {lr!r}")
    n = len(train)
    if n == 0:
        raise ValueError("train is empty: need at least one example")
    strategy = strategy if strategy is not None else ERM()
    if not isinstance(strategy, Strategy):
        raise TypeError(f"strategy must be a dro_lab.train.Strategy, got {type(strategy).__name__}")
    ckpt_path = _check_checkpoint_args(checkpoint, checkpoint_every, resume)
    world_size, rank = _distributed_layout(distributed)
    ddp = world_size > 1
    dev = _ddp_device(device, world_size)
    model.to(dev)
    net = model  # what the training forward goes through; strategies' hooks get the plain model
    comm = None
    if ddp:
        from torch.nn.parallel import DistributedDataParallel

        part = strategy
        while part is not None:  # wrappers delegate to .inner
            if not getattr(part, "_ddp_supported", True):
                raise ValueError(f"strategy {part.describe()!r} does not support distributed training (DDP); "
                                 "run it in one process (fit(..., distributed=False))")
            part = getattr(part, "inner", None)

        comm = _comm_device(dev)
        seed = _broadcast_seed(seed, comm)  # one seed: every rank draws the same global batches
    from . import __version__

    header = {"format": _CHECKPOINT_FORMAT, "dro_lab": __version__, "strategy": strategy.describe(), "seed": seed,
              "n": n, "batch_size": batch_size, "world_size": world_size, "epochs": epochs, "lr": lr}
    saved = None
    if ckpt_path is not None and resume:
        found = ckpt_path.is_file()
        if ddp:  # every rank must resume, or none
            box = torch.tensor([int(found)], dtype=torch.int64, device=comm)
            torch.distributed.all_reduce(box)
            if 0 < int(box.item()) < world_size:
                raise ValueError(f"checkpoint {str(ckpt_path)!r} exists on {int(box.item())} of {world_size} ranks: "
                                 "put it on a file system every rank sees")
        if found:
            saved = _read_checkpoint(ckpt_path, header)
            model.load_state_dict(saved["model"])  # before DDP's broadcast (every rank loads the same)
    if ddp:
        net = DistributedDataParallel(model, device_ids=[dev.index] if dev.type == "cuda" else None)
    global_batch = batch_size * world_size
    loss_fn = loss_fn or per_sample_cross_entropy
    generator = make_generator(seed)
    strategy.setup(n, device=dev, generator=generator, batch_size=global_batch, model=model, train=train,
                   loss_fn=loss_fn)
    opt = strategy.make_optimizer(model.parameters(), lr=lr, weight_decay=weight_decay, momentum=momentum)
    if opt is None:
        opt = optimizer if isinstance(optimizer, torch.optim.Optimizer) else _make_optimizer(
            optimizer, model.parameters(), lr, momentum, weight_decay)
    history = History(strategy=strategy.describe(), seed=seed, device=str(dev), world_size=world_size)
    header["optimizer"] = type(opt).__name__
    base_lrs = [g["lr"] for g in opt.param_groups]
    first_epoch, resumed = 1, None
    if saved is not None:
        _check_header(saved["header"], header, ckpt_path, keys=("optimizer",))
        strategy.load_state_dict(saved["strategy"])
        opt.load_state_dict(saved["optimizer"])
        base_lrs = list(saved["base_lrs"])
        history.records = list(saved["history"])
        first_epoch = saved["epoch"]
        if saved["consumed"]:
            resumed = saved
        generator.set_state(saved["rng"]["fit"])
        _set_rng_states(saved["rng"])  # last: setup and the optimizer may have drawn from them again

    def save(epoch: int, consumed: int, draws: dict, sums: tuple) -> None:
        if ckpt_path is None or rank != 0:
            return
        loss_sum, obj_sum, seen, steps = sums
        _write_checkpoint(ckpt_path, {
            "header": header, "model": model.state_dict(), "optimizer": opt.state_dict(),
            "strategy": strategy.state_dict(), "rng": {"fit": generator.get_state(), **_rng_states()},
            "epoch": epoch, "consumed": consumed, "draws": dict(draws), "base_lrs": base_lrs,
            "sums": {"loss_sum": loss_sum.cpu(), "obj_sum": obj_sum.cpu(), "seen": seen, "steps": steps},
            "history": history.records,
        })

    if saved is None:  # a fresh run overwrites an old checkpoint at once: no resuming into another run
        zero = torch.zeros((), dtype=torch.float64)
        save(1, 0, {}, (zero, zero, 0, 0))

    epoch_iter = range(first_epoch, epochs + 1)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(epoch_iter, desc=strategy.describe(), leave=False, total=epochs, initial=first_epoch - 1)
        epoch_iter = bar
    # mid-epoch checkpoints record the generator states the epoch's batch draws started from (a resume replays them)
    track = ckpt_path is not None and checkpoint_every is not None
    for epoch in epoch_iter:
        start = time.perf_counter()
        if lr_schedule is not None and resumed is None:  # a resumed epoch keeps the saved optimizer's lr
            factor = float(lr_schedule(epoch))
            if not (factor >= 0 and math.isfinite(factor)):
                raise ValueError(f"lr_schedule({epoch}) must be a finite number ≥ 0, got {factor!r}")
            for g, base in zip(opt.param_groups, base_lrs):
                g["lr"] = base * factor
        net.train()
        if resumed is None:
            # Sums stay on the device: no host sync per step (one at the end of the epoch).
            loss_sum = torch.zeros((), dtype=torch.float64, device=dev)
            obj_sum = torch.zeros((), dtype=torch.float64, device=dev)
            seen, steps, consumed, draws = 0, 0, 0, {}
            batches = iter(strategy.batches(epoch, global_batch))
        else:  # mid-epoch: the saved sums, and the rest of the epoch's batches
            sums = resumed["sums"]
            loss_sum, obj_sum = sums["loss_sum"].to(dev), sums["obj_sum"].to(dev)
            seen, steps, consumed = sums["seen"], sums["steps"], resumed["consumed"]
            draws = dict(resumed["draws"])
            batches = strategy.resume_batches(epoch, global_batch, consumed)
            batches = iter(batches) if batches is not None else _replay(strategy, epoch, global_batch, consumed,
                                                                        draws, generator)
            resumed = None
        while True:
            before = generator.get_state() if track else None
            try:
                idx = next(batches)
            except StopIteration:
                break
            if track and not torch.equal(before, generator.get_state()):
                draws[consumed] = before
            consumed += 1
            steps_before = steps
            sizes = None
            if ddp:  # every rank holds the same global batch; forward this rank's slice
                sizes = _split_sizes(len(idx), world_size)
                idx = torch.tensor_split(idx, world_size)[rank]
            x, y, index, groups = fetch_batch(train, idx)
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            groups = groups.to(dev) if groups is not None else None
            batch = strategy.transform(x, y, indices=index, groups=groups, model=model)
            # a strategy may turn one batch into several sequential steps (GI-LS: generated, then original)
            for x, y, groups in (batch if isinstance(batch, list) else [batch]):
                last: list = []

                def closure(x=x, y=y, groups=groups):  # forward, reduce, backward; extrapolating optimizers call it
                    opt.zero_grad(set_to_none=True)
                    out = loss_fn(net(x), y)
                    if out.dim() != 1 or out.shape[0] != y.shape[0]:
                        raise ValueError(f"loss_fn must return one loss per sample (shape ({y.shape[0]},)), "
                                         f"got {tuple(out.shape)}")
                    at, grp = index, groups
                    if ddp:  # the global batch's losses (this rank's slice with its graph)
                        out, at, grp = _global_batch(out, index, groups, sizes, rank, comm)
                    obj = strategy.reduce(out, indices=at, groups=grp)
                    # DDP averages the ranks' gradients: scale so the mean is the global objective's gradient
                    strategy.backward(obj * world_size if ddp else obj, losses=out, groups=grp)
                    last[:] = [out, obj, at]
                    return obj

                if getattr(opt, "needs_closure", False):
                    opt.step(closure)
                else:
                    closure()
                    opt.step()
                losses, objective, at = last
                detached = losses.detach()
                strategy.observe(at, detached)
                loss_sum += detached.sum()
                obj_sum += objective.detach()
                seen += len(detached)
                steps += 1
            if checkpoint_every is not None and steps // checkpoint_every > steps_before // checkpoint_every:
                save(epoch, consumed, draws, (loss_sum, obj_sum, seen, steps))
        record = {
            "epoch": epoch,
            "train_loss": float(loss_sum) / max(seen, 1),
            "train_objective": float(obj_sum) / max(steps, 1),
            "steps": steps,
            "seconds": time.perf_counter() - start,
            "lr": opt.param_groups[0]["lr"],
        }
        record.update(strategy.epoch_stats())
        if eval_train:
            # a full pass at the epoch's end, apart from the batch means above (train_loss stays theirs)
            record.update({f"train_full_{k}": v for k, v in evaluate(model, train, loss_fn=loss_fn).items()})
        if test is not None:
            record.update({f"test_{k}": v for k, v in evaluate(model, test, loss_fn=loss_fn).items()})
        history.append(record)
        zero = torch.zeros((), dtype=torch.float64)
        save(epoch + 1, 0, {}, (zero, zero, 0, 0))
        if bar is not None and "test_accuracy" in record:
            bar.set_postfix(acc=f"{record['test_accuracy']:.3f}",
                            worst=f"{record.get('test_worst_group_accuracy', record['test_worst_class_accuracy']):.3f}")
        if callback is not None:
            callback(epoch, record)
    if bar is not None:
        bar.close()
    return history


def clone_model(model: torch.nn.Module) -> torch.nn.Module:
    """An independent copy (same initial weights), so several strategies start from one initialisation."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return copy.deepcopy(model)
