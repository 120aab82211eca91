r"""The one training loop of dro_lab: :func:`fit` → one epoch → one batch → one optimizer step.

:func:`fit` resolves the device, seeds every random draw through ``torch.Generator``\ s, asks a
:class:`~dro_lab.Strategy` which indices form the next batch and how to reduce the batch's per-sample
losses, steps the optimizer, hands the losses back to the strategy (samplers learn from them), and
records per-epoch metrics (average, per-class, worst-class and, where the data have groups, worst-group
accuracy) in a :class:`~dro_lab.History`.

Methods are strategies, not loops::

    hist = fit(model, train, test=test, strategy=RobustLossStrategy("kl", beta=10), epochs=20)

Batches are drawn lazily, when the loop asks for them, so a strategy's distribution is always
current. A run's pieces live in one :class:`_Run`; checkpoints and DDP are the sibling modules'.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor

from .. import __version__
from .._validation import check_choice, check_int, check_module, check_number
from ..data.datasets import fetch_batch
from ..losses import per_sample_cross_entropy
from ..metrics import evaluate
from ..utils import make_generator
from . import checkpoint as ckpt
from .distributed import broadcast_seed, comm_device, gather_global_batch, layout, rank_device, split_sizes
from .history import History
from .strategy import Batch, Strategy

__all__ = ["OPTIMIZERS", "fit", "clone_model"]

#: The optimizer shortcuts :func:`fit` accepts by name (``optimizer="adam"``): name -> its class.
OPTIMIZERS = {
    "sgd": torch.optim.SGD,
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "rmsprop": torch.optim.RMSprop,
}


def fit(
    model: torch.nn.Module,
    train,
    *,
    strategy: Strategy | None = None,
    test=None,
    epochs: int = 10,
    batch_size: int = 64,
    lr: float = 0.1,
    optimizer: str | torch.optim.Optimizer = "sgd",
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
    device: str | torch.device = "auto",
    seed: int = 0,
    progress: bool = True,
    eval_train: bool = False,
    callback: Callable[[int, dict], None] | None = None,
    lr_schedule: Callable[[int], float] | None = None,
    scheduler: Callable[[torch.optim.Optimizer], torch.optim.lr_scheduler.LRScheduler] | None = None,
    distributed: bool | str = "auto",
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
    resume: bool = True,
) -> History:
    """Train ``model`` on ``train`` with ``strategy`` and return the per-epoch :class:`History`.

    Args:
        model: any ``nn.Module`` mapping a batch of inputs to logits; moved to ``device``.
        train, test: datasets yielding ``(x, y, index[, group])`` (see :mod:`dro_lab.data`).
        strategy: how batches are drawn and reduced (default: ERM). Used in place: it keeps
            its state after training, so a sampler can be inspected (or resumed) afterwards.
        epochs, batch_size, lr, momentum, weight_decay: the usual; ``optimizer`` is a ready
            ``torch.optim.Optimizer`` over ``model``'s parameters, or one of the shortcuts ``"sgd"``,
            ``"adam"``, ``"adamw"``, ``"rmsprop"`` (built from ``lr``, ``momentum``, ``weight_decay``). A strategy
            that owns its optimizer (:class:`dro_lab.GroupDROStrategy`) builds it from ``lr`` and ``weight_decay``
            instead.
        loss_fn: per-sample loss ``(logits, y) -> (b,)``; default cross-entropy, ``reduction="none"``.
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``...
        seed: seeds the batch draws (a dedicated ``torch.Generator``); the model's initialisation
            is the caller's (call :func:`dro_lab.seed_everything` before building it).
        progress: a tqdm progress bar over epochs (``tqdm.auto``: a widget in Jupyter).
        eval_train: also evaluate on the full training set each epoch (``train_full_*`` metrics).
        callback: ``callback(epoch, record)`` after each epoch (live figures).
        scheduler: a factory ``optimizer -> LRScheduler`` (e.g. :func:`dro_lab.optim.one_cycle`), stepped at
            the end of every epoch but the last; the epoch's learning rate is recorded as ``lr``.
        lr_schedule: a shortcut for ``LambdaLR``: ``epoch -> factor``, epoch ``e`` (from 1) runs at
            ``factor × lr``. Give at most one of ``scheduler`` and ``lr_schedule``.
        distributed: ``"auto"`` (default): data-parallel training when ``torch.distributed`` is
            initialised with more than one process (``torchrun``; gloo on CPU, NCCL on GPU); ``True``
            requires it; ``False`` trains this process alone.
        checkpoint: a file path (its folder must exist): ``fit`` saves the run there (see *Checkpoint and
            resume* below) at its start, at the end of every epoch and, with ``checkpoint_every``, inside.
        checkpoint_every: also save after every ``k`` optimizer steps; ``None``: epoch ends only.
        resume: with ``checkpoint`` naming an existing file, continue the run it holds (default); ``False``
            ignores it and overwrites it with this run.

    Checkpoint and resume: a checkpoint holds everything the run's continuation needs (the model's, the
    optimizer's, the strategy's and the scheduler's ``state_dict``, every generator's state, the epoch and
    its position, its running sums, the :class:`History` so far) and a header of the run's configuration. A
    ``fit`` call with the same arguments and a fresh model and strategy continues from the saved step; on the
    CPU the result (except ``seconds``) is bit-identical to an uninterrupted run. A checkpoint from another
    configuration is refused (``ValueError`` naming what differs); one from another dro_lab version warns.
    Files are written atomically; an epoch's ``callback`` runs after its checkpoint is written. Under DDP
    rank 0 writes and every rank loads, so the path must be on a file system every rank sees.

    Distributed training (``world_size`` ranks): ``batch_size`` is **per rank**, and the run equals one
    process with the global batch ``world_size × batch_size`` (up to float summation order). The model is
    wrapped in ``DistributedDataParallel`` (``device="auto"`` or ``"cuda"`` is ``cuda:LOCAL_RANK``); every
    rank draws the same global batch (rank 0's ``seed``), forwards its slice and all-gathers the per-sample
    losses, so :meth:`Strategy.reduce`, :meth:`Strategy.observe` and the history see the global batch and
    the state is identical on all ranks. ``test`` / ``eval_train`` are evaluated by every rank on the whole
    set. Not single-process-equivalent: BatchNorm statistics (use ``torch.nn.SyncBatchNorm``), random draws
    in :meth:`Strategy.transform`; :class:`dro_lab.CompressedWorkersStrategy` is not supported.

    Returns:
        :class:`History` with, per epoch, ``epoch``, ``train_loss`` (mean per-sample loss of the
        batches), ``train_objective`` (mean reduced loss), ``seconds`` and, with ``test``,
        ``test_accuracy``, ``test_worst_class_accuracy``, ``test_per_class_accuracy`` and, for
        grouped data, ``test_worst_group_accuracy`` / ``test_per_group_accuracy``.

    Example:
        >>> train, test = make_minority_blobs(200)
        >>> history = fit(LogisticRegression(2, 2), train, test=test, epochs=2, progress=False)
        >>> len(history), 0 <= history["test_worst_group_accuracy"][-1] <= 1
        (2, True)
    """

    strategy = _check_arguments(model, train, strategy, epochs, batch_size, lr, scheduler, lr_schedule)
    run = _start(
        model,
        train,
        strategy,
        test=test,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        seed=seed,
        optimizer=optimizer,
        momentum=momentum,
        weight_decay=weight_decay,
        loss_fn=loss_fn,
        device=device,
        eval_train=eval_train,
        distributed=distributed,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        resume=resume,
        scheduler=_scheduler_factory(scheduler, lr_schedule),
    )
    bar = _progress_bar(strategy, run.first_epoch, epochs) if progress else None
    for epoch in range(run.first_epoch, epochs + 1):
        record = _train_epoch(run, epoch)
        _end_epoch(run, epoch, record)
        if bar is not None:
            _show_progress(bar, record)
        if callback is not None:
            callback(epoch, record)
    if bar is not None:
        bar.close()
    return run.history


# --------------------------------------------------------------------------- what one run holds


@dataclass
class _Run:
    """Everything one :func:`fit` call holds while it trains."""

    model: torch.nn.Module  # the user's model (strategies' hooks see it)
    net: torch.nn.Module  # what the training forward goes through: the model, or its DDP wrapper
    train: object
    test: object
    strategy: Strategy
    loss_fn: Callable[[Tensor, Tensor], Tensor]
    device: torch.device
    generator: torch.Generator
    global_batch: int
    world_size: int = 1
    rank: int = 0
    comm: torch.device | None = None  # where collectives run under DDP
    eval_train: bool = False
    opt: torch.optim.Optimizer | None = None
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None
    history: History | None = None
    epochs: int = 1
    checkpoint: Path | None = None
    checkpoint_every: int | None = None
    header: dict = field(default_factory=dict)
    first_epoch: int = 1
    resumed: dict | None = None  # a mid-epoch checkpoint, until its epoch has been resumed

    @property
    def ddp(self) -> bool:
        return self.world_size > 1


@dataclass
class _EpochSums:
    """The running sums of one epoch; they stay on the device, so a step costs no host sync."""

    loss_sum: Tensor
    obj_sum: Tensor
    seen: int = 0
    steps: int = 0
    consumed: int = 0  # batches drawn so far
    draws: dict = field(default_factory=dict)  # batch k -> generator state before its draw (for a resume)

    @classmethod
    def fresh(cls, device: torch.device) -> _EpochSums:
        zero = torch.zeros((), dtype=torch.float64, device=device)
        return cls(zero, zero.clone())

    @classmethod
    def restored(cls, saved: dict, device: torch.device) -> _EpochSums:
        sums = saved["sums"]
        return cls(
            sums["loss_sum"].to(device),
            sums["obj_sum"].to(device),
            sums["seen"],
            sums["steps"],
            saved["consumed"],
            dict(saved["draws"]),
        )

    def add(self, losses: Tensor, objective: Tensor) -> None:
        self.loss_sum += losses.sum()
        self.obj_sum += objective.detach()
        self.seen += len(losses)
        self.steps += 1

    def to_checkpoint(self) -> dict:
        return {"loss_sum": self.loss_sum.cpu(), "obj_sum": self.obj_sum.cpu(), "seen": self.seen, "steps": self.steps}


# --------------------------------------------------------------------------- setting up


def _check_arguments(model, train, strategy, epochs, batch_size, lr, scheduler, lr_schedule) -> Strategy:
    check_module(model)
    check_int(epochs, "epochs")
    check_int(batch_size, "batch_size")
    check_number(lr, "lr", low=0, low_open=True)
    if len(train) == 0:
        raise ValueError("train is empty: need at least one example")
    strategy = strategy if strategy is not None else Strategy()  # the base class is ERM
    if not isinstance(strategy, Strategy):
        raise TypeError(f"strategy must be a dro_lab.Strategy, got {type(strategy).__name__}")
    if scheduler is not None and lr_schedule is not None:
        raise ValueError("give scheduler or lr_schedule, not both (lr_schedule is a shortcut for LambdaLR)")
    for name, value in (("scheduler", scheduler), ("lr_schedule", lr_schedule)):
        if value is not None and not callable(value):
            raise TypeError(f"{name} must be callable, got {type(value).__name__}")
    return strategy


def _scheduler_factory(scheduler, lr_schedule):
    """The scheduler factory of a run: the user's, ``LambdaLR`` over ``lr_schedule``, or None."""
    if lr_schedule is None:
        return scheduler

    def factor(k: int) -> float:  # LambdaLR counts epochs from 0; lr_schedule from 1
        value = float(lr_schedule(k + 1))
        if not (value >= 0 and value < float("inf")):
            raise ValueError(f"lr_schedule({k + 1}) must be a finite number ≥ 0, got {value!r}")
        return value

    return lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, factor)


def _start(
    model,
    train,
    strategy,
    *,
    test,
    epochs,
    batch_size,
    lr,
    seed,
    optimizer,
    momentum,
    weight_decay,
    loss_fn,
    device,
    eval_train,
    distributed,
    checkpoint,
    checkpoint_every,
    resume,
    scheduler,
) -> _Run:
    """Place the model, set the strategy and optimizer up, and continue from a checkpoint where there is one."""
    path = ckpt.check_arguments(checkpoint, checkpoint_every, resume)
    world_size, rank = layout(distributed)
    dev = rank_device(device, world_size)
    model.to(dev)
    comm = None
    if world_size > 1:
        if not strategy.supports_distributed:
            raise ValueError(
                f"strategy {strategy.describe()!r} does not support distributed training (DDP); "
                "run it in one process (fit(..., distributed=False))"
            )
        comm = comm_device(dev)
        seed = broadcast_seed(seed, comm)  # one seed: every rank draws the same global batches
    header = {
        "format": ckpt.FORMAT,
        "dro_lab": __version__,
        "strategy": strategy.describe(),
        "seed": seed,
        "n": len(train),
        "batch_size": batch_size,
        "world_size": world_size,
        "epochs": epochs,
        "lr": lr,
    }
    saved = ckpt.find(path, header, world_size, comm) if path is not None and resume else None
    if saved is not None:
        model.load_state_dict(saved["model"])  # before DDP's broadcast (every rank loads the same)
    run = _Run(
        model=model,
        net=_wrap_ddp(model, dev, world_size),
        train=train,
        test=test,
        strategy=strategy,
        loss_fn=loss_fn or per_sample_cross_entropy,
        device=dev,
        generator=make_generator(seed),
        global_batch=batch_size * world_size,
        world_size=world_size,
        rank=rank,
        comm=comm,
        eval_train=eval_train,
        epochs=epochs,
        checkpoint=path,
        checkpoint_every=checkpoint_every,
        header=header,
    )
    strategy.setup(
        len(train),
        device=dev,
        generator=run.generator,
        batch_size=run.global_batch,
        model=model,
        train=train,
        loss_fn=run.loss_fn,
    )
    run.opt = _optimizer(strategy, model, optimizer, lr=lr, momentum=momentum, weight_decay=weight_decay)
    run.scheduler = scheduler(run.opt) if scheduler is not None else None
    run.history = History(strategy=strategy.describe(), seed=seed, device=str(dev), world_size=world_size)
    header["optimizer"] = type(run.opt).__name__
    if saved is None:  # a fresh run overwrites an old checkpoint at once: no resuming into another run
        _save(run, 1, _EpochSums.fresh(torch.device("cpu")))
    else:
        _restore(run, saved)
    return run


def _wrap_ddp(model: torch.nn.Module, dev: torch.device, world_size: int) -> torch.nn.Module:
    if world_size == 1:
        return model
    from torch.nn.parallel import DistributedDataParallel  # only under torchrun

    return DistributedDataParallel(model, device_ids=[dev.index] if dev.type == "cuda" else None)


def _optimizer(
    strategy: Strategy, model: torch.nn.Module, optimizer, *, lr: float, momentum: float, weight_decay: float
) -> torch.optim.Optimizer:
    """The strategy's own optimizer (ALSO keeps π), the user's, or one built from a shortcut name."""
    check_number(momentum, "momentum", low=0)
    check_number(weight_decay, "weight_decay", low=0)
    own = strategy.make_optimizer(model.parameters(), lr=lr, weight_decay=weight_decay, momentum=momentum)
    if own is not None:
        return own
    if isinstance(optimizer, torch.optim.Optimizer):
        return optimizer
    cls = OPTIMIZERS[check_choice(optimizer, "optimizer (or a torch.optim.Optimizer)", tuple(OPTIMIZERS))]
    options = {"lr": lr, "weight_decay": weight_decay}
    if cls in (torch.optim.SGD, torch.optim.RMSprop):
        options["momentum"] = momentum
    return cls(model.parameters(), **options)


def _restore(run: _Run, saved: dict) -> None:
    """Continue the run a checkpoint holds: every state, and the rest of a part-run epoch."""
    ckpt.check_header(saved["header"], run.header, run.checkpoint, keys=("optimizer",))
    run.strategy.load_state_dict(saved["strategy"])
    run.opt.load_state_dict(saved["optimizer"])
    if run.scheduler is not None and saved["scheduler"] is not None:
        run.scheduler.load_state_dict(saved["scheduler"])
    run.history.records = list(saved["history"])
    run.first_epoch = saved["epoch"]
    run.resumed = saved if saved["consumed"] else None
    run.generator.set_state(saved["rng"]["fit"])
    ckpt.set_rng_states(saved["rng"])  # last: setup and the optimizer may have drawn from them again


def _save(run: _Run, epoch: int, sums: _EpochSums) -> None:
    """A checkpoint of the run at ``sums.consumed`` batches into ``epoch`` (rank 0 writes; none without a path)."""
    if run.checkpoint is None or run.rank != 0:
        return
    ckpt.write(
        run.checkpoint,
        {
            "header": run.header,
            "model": run.model.state_dict(),
            "optimizer": run.opt.state_dict(),
            "scheduler": run.scheduler.state_dict() if run.scheduler is not None else None,
            "strategy": run.strategy.state_dict(),
            "rng": {"fit": run.generator.get_state(), **ckpt.rng_states()},
            "epoch": epoch,
            "consumed": sums.consumed,
            "draws": dict(sums.draws),
            "sums": sums.to_checkpoint(),
            "history": run.history.records,
        },
    )


# --------------------------------------------------------------------------- training


def _train_epoch(run: _Run, epoch: int) -> dict:
    """One epoch: draw batches until the strategy's iterator ends, checkpointing every k steps; its record."""
    start = time.perf_counter()
    run.net.train()
    sums, batches = _epoch_batches(run, epoch)
    # mid-epoch checkpoints record the generator states the epoch's batch draws started from (a resume replays them)
    track = run.checkpoint is not None and run.checkpoint_every is not None
    while True:
        before = run.generator.get_state() if track else None
        idx = next(batches, None)
        if idx is None:
            break
        if track and not torch.equal(before, run.generator.get_state()):
            sums.draws[sums.consumed] = before
        sums.consumed += 1
        steps_before = sums.steps
        _train_batch(run, sums, idx)
        every = run.checkpoint_every
        if every is not None and sums.steps // every > steps_before // every:
            _save(run, epoch, sums)
    return _epoch_record(run, epoch, sums, start)


def _epoch_batches(run: _Run, epoch: int) -> tuple[_EpochSums, Iterator[Tensor]]:
    """Fresh sums and the strategy's batches; or, resuming mid-epoch, the saved sums and the rest of the epoch."""
    if run.resumed is None:
        return _EpochSums.fresh(run.device), iter(run.strategy.batches(epoch, run.global_batch))
    saved, run.resumed = run.resumed, None
    sums = _EpochSums.restored(saved, run.device)
    batches = run.strategy.resume_batches(epoch, run.global_batch, sums.consumed)
    if batches is None:
        batches = ckpt.replay(run.strategy, epoch, run.global_batch, sums.consumed, sums.draws, run.generator)
    return sums, iter(batches)


def _train_batch(run: _Run, sums: _EpochSums, idx: Tensor) -> None:
    """Fetch a drawn batch, let the strategy turn it into optimizer steps, take them, report the losses."""
    sizes = None
    if run.ddp:  # every rank holds the same global batch; forward this rank's slice
        sizes = split_sizes(len(idx), run.world_size)
        idx = torch.tensor_split(idx, run.world_size)[run.rank]
    x, y, index, groups = fetch_batch(run.train, idx)
    x, y = x.to(run.device, non_blocking=True), y.to(run.device, non_blocking=True)
    groups = groups.to(run.device) if groups is not None else None
    steps = run.strategy.transform(x, y, indices=index, groups=groups, model=run.model)
    for batch in _as_batches(steps, run.strategy):
        losses, objective, at = _optimizer_step(run, batch, index, sizes)
        detached = losses.detach()
        run.strategy.observe(at, detached)
        sums.add(detached, objective)


def _as_batches(steps, strategy: Strategy) -> list[Batch]:
    if not (isinstance(steps, list) and steps and all(isinstance(s, tuple) and len(s) == 3 for s in steps)):
        raise TypeError(
            f"{type(strategy).__name__}.transform must return a non-empty list of "
            f"dro_lab.Batch(x, y, groups), got {type(steps).__name__}"
        )
    return [Batch(*s) for s in steps]


def _optimizer_step(run: _Run, batch: Batch, index: Tensor, sizes: list[int] | None) -> list:
    """Forward, reduce, backward and step on one batch; returns ``[losses, objective, indices]`` (global under DDP)."""
    last: list = []

    def closure():  # extrapolating optimizers (ALSO mode="popov") call it at the point they choose
        run.opt.zero_grad(set_to_none=True)
        out = run.loss_fn(run.net(batch.x), batch.y)
        if out.dim() != 1 or out.shape[0] != batch.y.shape[0]:
            raise ValueError(
                f"loss_fn must return one loss per sample (shape ({batch.y.shape[0]},)), got {tuple(out.shape)}"
            )
        at, grp = index, batch.groups
        if run.ddp:  # the global batch's losses (this rank's slice with its graph)
            out, at, grp = gather_global_batch(out, index, batch.groups, sizes, run.rank, run.comm)
        obj = run.strategy.reduce(out, indices=at, groups=grp)
        # DDP averages the ranks' gradients: scale so the mean is the global objective's gradient
        run.strategy.backward(obj * run.world_size if run.ddp else obj, losses=out, groups=grp)
        last[:] = [out, obj, at]
        return obj

    if getattr(run.opt, "needs_closure", False):
        run.opt.step(closure)
    else:
        closure()
        run.opt.step()
    return last


def _epoch_record(run: _Run, epoch: int, sums: _EpochSums, start: float) -> dict:
    record = {
        "epoch": epoch,
        "train_loss": float(sums.loss_sum) / max(sums.seen, 1),
        "train_objective": float(sums.obj_sum) / max(sums.steps, 1),
        "steps": sums.steps,
        "seconds": time.perf_counter() - start,
        "lr": run.opt.param_groups[0]["lr"],
    }
    record.update(run.strategy.epoch_stats())
    if run.eval_train:  # a full pass at the epoch's end, apart from the batch means above (train_loss stays theirs)
        record.update({f"train_full_{k}": v for k, v in evaluate(run.model, run.train, loss_fn=run.loss_fn).items()})
    if run.test is not None:
        record.update({f"test_{k}": v for k, v in evaluate(run.model, run.test, loss_fn=run.loss_fn).items()})
    return record


def _end_epoch(run: _Run, epoch: int, record: dict) -> None:
    """Record the epoch, move the learning rate to the next epoch's, and checkpoint the epoch boundary."""
    run.history.append(record)
    if run.scheduler is not None and epoch < run.epochs:  # not past the last epoch: OneCycleLR would refuse
        run.scheduler.step()
    _save(run, epoch + 1, _EpochSums.fresh(torch.device("cpu")))


def _progress_bar(strategy: Strategy, first_epoch: int, epochs: int):
    from tqdm.auto import tqdm  # a widget in Jupyter: imported when a bar is asked for

    return tqdm(desc=strategy.describe(), leave=False, total=epochs, initial=first_epoch - 1)


def _show_progress(bar, record: dict) -> None:
    bar.update(1)
    if "test_accuracy" in record:
        worst = record.get("test_worst_group_accuracy", record["test_worst_class_accuracy"])
        bar.set_postfix(acc=f"{record['test_accuracy']:.3f}", worst=f"{worst:.3f}")


def clone_model(model: torch.nn.Module) -> torch.nn.Module:
    """An independent copy (same initial weights), so several strategies start from one initialisation.

    Args:
        model: any ``nn.Module`` (deep-copied).
    """
    check_module(model)
    return copy.deepcopy(model)
