"""ERM, mini-batch DRO through a robust loss, and online hard example mining."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .._validation import check_number
from ..engine.strategy import Strategy
from ..robust import RobustLoss

__all__ = ["ERM", "RobustLossStrategy", "OHEMStrategy"]


class ERM(Strategy):
    """Empirical risk minimisation: uniform shuffled batches, mean loss.

    Example:
        >>> history = fit(LogisticRegression(2, 2), make_minority_blobs(100)[0], strategy=ERM(), progress=False)
        >>> history.strategy, len(history)
        ('erm', 10)
    """

    name = "erm"


class RobustLossStrategy(Strategy):
    r"""Mini-batch DRO: each batch's per-sample losses reduced by :func:`dro_lab.robust_loss`.

    The batch is drawn uniformly and the worst case is taken over the batch (the fast-dro
    estimator; it is biased for the full-data robust loss except with ``batch_size = n``).

    Args:
        divergence, beta, radius, alpha: as in :func:`dro_lab.worst_case_weights`.
        over: ``"samples"``, or ``"groups"``: the robust reducer runs on the batch's per-group mean losses.
        group_prior: the prior over the groups: ``"uniform"`` (β → 0 is group-balanced ERM) or
            ``"empirical"`` (each group weighted by its share of the batch, so β → 0 is plain ERM).
    """

    def __init__(
        self,
        divergence: str = "kl",
        *,
        beta: float | None = None,
        radius: float | None = None,
        alpha: float | None = None,
        over: str = "samples",
        group_prior: str = "uniform",
    ):
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


class OHEMStrategy(Strategy):
    """Online hard example mining (Shrivastava et al., 2016): uniform batches, back-propagate the top-k losses.

    The baseline that hardness-weighted sampling generalises (Fidon et al., §3.4).

    Args:
        keep: the fraction of each uniformly drawn batch, the hardest, that makes the loss (at least one example).
    """

    def __init__(self, keep: float = 0.5):
        self.keep = check_number(keep, "keep", low=0, high=1, low_open=True)
        self.name = f"ohem(keep={self.keep:g})"

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        k = max(1, math.ceil(round(self.keep * losses.numel(), 9)))  # round: 0.28 * 25 = 7.000000000000001
        return torch.topk(losses, k, sorted=False).values.mean()
