"""The Strategy interface: how a batch is drawn, changed, reduced and learnt from.

:func:`dro_lab.fit` is the one loop; a training method is a :class:`Strategy` that overrides some of
its hooks. :class:`Batch` is what :meth:`Strategy.transform` returns: the inputs of one optimizer step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

import torch
from torch import Tensor

__all__ = ["Batch", "Strategy"]


class Batch(NamedTuple):
    """The inputs of one optimizer step.

    Args:
        x: the inputs.
        y: the targets: labels, or soft targets ``(b, k)`` when the loss accepts them.
        groups: the group ids (``None`` when the data have none).
    """

    x: Tensor
    y: Tensor
    groups: Tensor | None = None


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
    * :attr:`supports_distributed` — whether the method can run under :func:`fit`'s DDP.
    * :meth:`epoch_stats` — extra numbers for the epoch's :class:`History` record.
    * :meth:`state_dict` / :meth:`load_state_dict` — everything needed to resume, mid-epoch included
      (running per-epoch statistics too: ``fit(checkpoint=...)`` resumes bit-identically from them).
    * :meth:`resume_batches` — the rest of an interrupted epoch, for batch iterators that change the
      strategy's own state (samplers); the default lets :func:`fit` rebuild it.
    """

    name = "erm"

    @property
    def supports_distributed(self) -> bool:
        """False for a method that cannot train under :func:`fit`'s DDP (its backward bypasses DDP's reducer)."""
        return True

    def setup(
        self,
        n: int,
        *,
        device: torch.device,
        generator: torch.Generator,
        batch_size: int | None = None,
        model: torch.nn.Module | None = None,
        train=None,
        loss_fn: Callable | None = None,
    ) -> None:
        """Remember the run's context as attributes of the same names (``self.n``, ``self.device``, ...).

        A method that needs set-up overrides it as ``def setup(self, n, **context)``, calls
        ``super().setup(n, **context)`` first and reads what it needs from ``self`` (a sampler refreshes
        its table from ``self.model`` and ``self.train``, a reweighting method reads the training labels).
        """
        self.n = n
        self.device = device
        self.generator = generator
        self.batch_size = batch_size
        self.model = model
        self.train = train
        self.loss_fn = loss_fn

    def batches(self, epoch: int, batch_size: int) -> Iterator[Tensor]:
        perm = torch.randperm(self.n, generator=self.generator)
        for start in range(0, self.n, batch_size):
            yield perm[start : start + batch_size]

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        return losses.mean()

    def observe(self, indices: Tensor, losses: Tensor) -> None:
        pass

    def make_optimizer(
        self, params, *, lr: float, weight_decay: float, momentum: float
    ) -> torch.optim.Optimizer | None:
        """An optimizer this strategy needs (group-DRO methods own π), or ``None`` for ``fit``'s ``optimizer``."""
        return None

    def transform(
        self, x: Tensor, y: Tensor, *, indices: Tensor, groups: Tensor | None, model: torch.nn.Module
    ) -> list[Batch]:
        """The optimizer steps to take on a drawn batch: usually one, the batch itself.

        Change the batch before the forward pass (input transformations, attacks) or set its groups by
        returning ``[Batch(x', y', groups')]``; return several for sequential optimizer steps on one drawn
        batch (GI-LS: the generated batch, then the original one). ``y`` may become soft labels ``(b, k)``
        when ``loss_fn`` accepts them (the default cross-entropy does).
        """
        return [Batch(x, y, groups)]

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
