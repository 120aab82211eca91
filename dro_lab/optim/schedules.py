"""Learning-rate schedules as ``torch.optim.lr_scheduler`` factories, the form :func:`dro_lab.fit` takes.

``fit(..., scheduler=one_cycle(epochs))`` builds the scheduler on the run's optimizer and steps it once
per epoch. Any factory ``optimizer -> LRScheduler`` works the same way, e.g.
``lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.3)``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._validation import check_int, check_number

__all__ = ["one_cycle_factor", "one_cycle"]


def one_cycle_factor(epoch: int, epochs: int, peak_fraction: float = 25 / 60) -> float:
    """The one-cycle factor of epoch ``epoch`` (from 1): up linearly to 1 at the peak epoch, then down linearly.

    The peak is epoch ``max(1, round(epochs · peak_fraction))`` (Sow et al.'s CIFAR schedule peaks at 25 of 60
    epochs); the last epoch runs at ``1 / (epochs − peak + 1)`` of the peak rate.
    """
    peak = max(1, round(epochs * peak_fraction))
    return epoch / peak if epoch <= peak else (epochs - epoch + 1) / (epochs - peak + 1)


def one_cycle(epochs: int, *, peak_fraction: float = 25 / 60) -> Callable[[torch.optim.Optimizer], object]:
    """A factory of the per-epoch one-cycle schedule (:func:`one_cycle_factor`) as a ``LambdaLR``."""
    epochs = check_int(epochs, "epochs")
    peak_fraction = check_number(peak_fraction, "peak_fraction", low=0, high=1, low_open=True)

    def factory(optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LambdaLR:
        # LambdaLR counts epochs from 0, the factor from 1
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: one_cycle_factor(k + 1, epochs, peak_fraction))

    return factory
