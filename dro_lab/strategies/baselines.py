"""The group-DRO baselines of the ALSO paper, as training-engine strategies.

Feoktistov et al. (2025, "Aligning Distributionally Robust Optimization with Practical Deep
Learning Needs", §6 and App. B.1) compare ALSO with a set of baselines; this module holds them as
:class:`dro_lab.Strategy` objects, so each runs through the one training loop::

    hist = dro_lab.fit(model, train, strategy=SpectralRiskStrategy(n_draws=2.0), epochs=20)

:class:`UpsamplingStrategy` and :class:`StaticWeightsStrategy` (inverse class frequency),
:class:`SpectralRiskStrategy` (Mehta et al., 2023), :class:`FastDROStrategy` (Levy et al., 2020), the
*simplified* RECOVER of the ALSO experiment code (:class:`RecoverStrategy`) and online group DRO (Sagawa et
al., 2020: :class:`OnlineGroupDROStrategy`). Every reducer's weights are detached (Danskin).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
from torch import Tensor

from .._validation import check_choice, check_int, check_number
from ..data.datasets import labels_of
from ..engine.strategy import Strategy
from ..reweighting import class_balanced_weights, extremile_spectrum, spectral_risk_weights
from ..robust import RobustLoss

__all__ = [
    "UpsamplingStrategy",
    "StaticWeightsStrategy",
    "SpectralRiskStrategy",
    "FastDROStrategy",
    "RecoverStrategy",
    "OnlineGroupDROStrategy",
]


def _training_labels(train, who: str, n: int) -> Tensor:
    """The ``n`` class labels of the training set handed to ``setup``."""
    if train is None:
        raise ValueError(f"{who} needs the training set's labels: run it through dro_lab.fit (setup(train=...))")
    labels = labels_of(train)
    if labels.numel() != n:
        raise ValueError(f"the training set has {labels.numel()} labels but n={n}")
    return labels


class UpsamplingStrategy(Strategy):
    r"""Upsampling, the ALSO paper's baseline (appendix B.1): draw ``i`` ∝ ``1/N_{y_i}``, with replacement.

    Every class is drawn equally often on average (``WeightedRandomSampler`` with ``n`` samples per
    epoch, as the paper's code does): ``⌈n/b⌉`` batches per epoch, the last one holding the
    remainder. The loss is the plain batch mean. Draws use ``fit``'s generator.
    """

    name = "upsampling"

    def setup(self, n: int, **context) -> None:
        super().setup(n, **context)
        labels = _training_labels(self.train, "UpsamplingStrategy", n)
        # multinomial draws on the generator's device (fit's generator is a CPU one)
        self.probs = class_balanced_weights(labels.cpu()).to(self.generator.device)

    def batches(self, epoch: int, batch_size: int) -> Iterator[Tensor]:
        for start in range(0, self.n, batch_size):
            size = min(batch_size, self.n - start)
            yield torch.multinomial(self.probs, size, replacement=True, generator=self.generator)


class StaticWeightsStrategy(Strategy):
    r"""Static Weights, the ALSO paper's baseline (appendix B.1): losses weighted by inverse class frequency.

    .. math:: \mathcal L = \sum_{b=1}^{M} \frac{n\,w_{i_b}}{M}\,\ell_b, \qquad
              w_i = \frac{1/N_{y_i}}{\sum_k 1/N_{y_k}}

    an unbiased estimate of the class-balanced risk :math:`\sum_i w_i\ell_i`. It equals ALSO frozen
    at the class-balanced prior (η_π = 0); with balanced classes it is the plain mean.
    """

    name = "static-weights"

    def setup(self, n: int, **context) -> None:
        super().setup(n, **context)
        labels = _training_labels(self.train, "StaticWeightsStrategy", n)
        self.weights = class_balanced_weights(labels).to(self.device)

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        w = self.weights[indices.to(self.weights.device)]
        scale = (self.n / losses.numel()) * w
        return (scale.to(losses.dtype) * losses).sum()


class SpectralRiskStrategy(Strategy):
    r"""Spectral risk minimisation (Mehta et al., 2023; the ``deshift`` code): uniform batches,
    loss :math:`\sum_b q_b\ell_b` with ``q`` = :func:`spectral_risk_weights` of the batch (detached).

    The spectrum is the extremile one (:func:`extremile_spectrum`, ``r = n_draws``) of the batch's
    size (a short last batch gets its own). Defaults are the ALSO unbalanced-experiment settings.

    Args:
        n_draws: ``r ≥ 1`` of :func:`extremile_spectrum` (a smaller one would weigh the easy samples most).
        shift_cost, penalty: ν and the penalty of :func:`spectral_risk_weights`.
    """

    def __init__(self, n_draws: float = 2.0, shift_cost: float = 1.0, penalty: str = "kl"):
        self.n_draws = check_number(n_draws, "n_draws", low=-math.inf)
        extremile_spectrum(1, self.n_draws)  # validates n_draws ≥ 1 with the explanation
        self.shift_cost = check_number(shift_cost, "shift_cost", low=0.0)
        self.penalty = check_choice(penalty, "penalty", ("kl", "chi2"))
        self._spectra: dict[int, Tensor] = {}
        self.name = f"spectral(extremile={self.n_draws:g},ν={self.shift_cost:g},{self.penalty})"

    def spectrum(self, m: int) -> Tensor:
        """The (cached) spectrum for a batch of ``m`` losses."""
        if m not in self._spectra:
            self._spectra[m] = extremile_spectrum(m, self.n_draws)
        return self._spectra[m]

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        q = spectral_risk_weights(
            losses, self.spectrum(losses.numel()), shift_cost=self.shift_cost, penalty=self.penalty
        )
        return (q * losses).sum()


class FastDROStrategy(Strategy):
    r"""FastDRO (Levy et al., 2020, "Large-scale methods for DRO"): mini-batch CVaR or χ² DRO.

    The constrained form (``reg = 0`` in Levy's code), on uniform batches of ``M`` losses:

    * ``kind="cvar"``: :math:`\max_q\langle q,\ell\rangle` s.t. :math:`q_b\le\frac1{\text{size}\cdot M}`
      (dro_lab's ``RobustLoss("cvar", alpha=size)``);
    * ``kind="chi2"``: :math:`\max_q\langle q,\ell\rangle`
      s.t. :math:`\tfrac12\,\mathrm{mean}_b((Mq_b-1)^2)\le\text{size}`
      (dro_lab's ``RobustLoss("chi2", radius=2*size)``: our χ² divergence is twice Levy's).

    The gradient is :math:`\sum_b q^\star_b\nabla\ell_b` (``q*`` detached). The estimator is biased for
    the full-data robust loss at small batches.

    Args:
        kind: ``"cvar"`` or ``"chi2"``.
        size: CVaR level α ∈ (0, 1], or the χ² radius ρ > 0 (Levy's ``size``).
    """

    def __init__(self, kind: str = "cvar", size: float = 0.1):
        self.kind = check_choice(kind, "kind", ("cvar", "chi2"))
        if self.kind == "cvar":
            self.size = check_number(size, "size", low=0.0, low_open=True, high=1.0)
            self.criterion = RobustLoss("cvar", alpha=self.size)
        else:
            self.size = check_number(size, "size", low=0.0, low_open=True)
            self.criterion = RobustLoss("chi2", radius=2.0 * self.size)
        self.name = f"fastdro-{self.kind}({self.size:g})"

    def weights(self, losses: Tensor) -> Tensor:
        """The worst-case batch weights ``q*`` (detached)."""
        return self.criterion.weights(losses)

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        return self.criterion(losses)


class RecoverStrategy(Strategy):
    r"""RECOVER, *simplified*: the surrogate the ALSO experiment code runs (``ImportanceLoss``), not Qi et al.'s
    STORM-type compositional algorithm.

    .. math:: \mathcal L=\frac1t\Big(\mathrm{mean}_b\,e^{\mathrm{clip}(t\,\ell_b,\,-C,\,C)}-1\Big)

    after ``warmup_steps`` optimiser steps, the plain mean before. Its gradient is the KL-DRO
    gradient (weights ∝ :math:`e^{t\ell_b}`, ``t = 1/λ``) up to a positive per-batch factor. The
    clip keeps :math:`e^{t\ell}` finite for large early losses; a clipped sample
    contributes no gradient.

    Args:
        t: the tilt ``t = 1/λ > 0`` (code default 1; split learning U[0.01, 3]).
        clip: ``C > 0``.
        warmup_steps: optimiser steps with the plain mean first (≥ 0; code: 100). The step count is
            advanced in :meth:`observe`, i.e. after each step, and is part of the state.
    """

    def __init__(self, t: float = 1.0, clip: float = 10.0, warmup_steps: int = 100):
        self.t = check_number(t, "t", low=0.0, low_open=True)
        self.clip = check_number(clip, "clip", low=0.0, low_open=True)
        self.warmup_steps = check_int(warmup_steps, "warmup_steps", low=0)
        self.steps = 0
        self.name = f"recover-simplified(t={self.t:g})"

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        if self.steps < self.warmup_steps:
            return losses.mean()
        tilted = torch.exp(torch.clamp(self.t * losses, -self.clip, self.clip))
        return (tilted.mean() - 1.0) / self.t

    def observe(self, indices: Tensor, losses: Tensor) -> None:
        self.steps += 1

    def epoch_stats(self) -> dict:
        return {"recover_warm": float(self.steps >= self.warmup_steps)}

    def state_dict(self) -> dict:
        return {"steps": self.steps}

    def load_state_dict(self, state: dict) -> None:
        self.steps = check_int(state["steps"], "state['steps']", low=0)


class OnlineGroupDROStrategy(Strategy):
    r"""Online group DRO (Sagawa et al., 2020, Algorithm 1): exponentiated-gradient ascent on group weights.

    ``q`` lives on the simplex over the ``G`` groups (uniform at the start). Per uniform batch, with
    :math:`\bar\ell_g` the mean loss of group ``g`` in the batch:

    .. math:: q_g \leftarrow q_g\,e^{\eta\,\bar\ell_g}\ \text{(groups present)},\quad q\leftarrow q/\textstyle\sum q,
              \qquad \mathcal L=\sum_{g\ \text{present}} q_g\,\bar\ell_g

    with the updated ``q`` held constant in the loss: groups weigh by their *mean* loss, whatever their size
    (ALSO's eq. 4 sums them). Mentioned, not run, in the ALSO paper.

    Args:
        step_size: η > 0.
        grouping: ``"class"`` (the training labels, looked up by the batch's dataset indices) or
            ``"group"`` (the dataset's group ids; the data must yield them).

    ``q`` is created at the first :func:`fit` and kept by later calls with as many groups (``fit`` continues).
    """

    def __init__(self, step_size: float = 0.01, grouping: str = "class"):
        self.step_size = check_number(step_size, "step_size", low=0.0, low_open=True)
        self.grouping = check_choice(grouping, "grouping", ("class", "group"))
        self._q: Tensor | None = None
        self._labels: Tensor | None = None
        self.name = f"group-dro(η={self.step_size:g})" + ("" if grouping == "class" else ",groups")

    @property
    def q(self) -> Tensor:
        """The current group weights (float64, sums to 1)."""
        if self._q is None:
            raise RuntimeError("q does not exist yet: it is created when fit sets the strategy up")
        return self._q

    def setup(self, n: int, **context) -> None:
        super().setup(n, **context)
        device, train = self.device, self.train
        if train is None:
            raise ValueError("OnlineGroupDROStrategy needs the training set: run it through dro_lab.fit")
        if self.grouping == "class":
            self._labels = labels_of(train).to(device)
            size = getattr(train, "num_classes", None) or int(self._labels.max()) + 1
        else:
            ids = getattr(train, "groups", None)
            if ids is None:
                raise ValueError(
                    "OnlineGroupDROStrategy(grouping='group') needs a dataset with groups "
                    "(train.groups is None); use grouping='class' or attach groups"
                )
            size = getattr(train, "num_groups", None) or int(ids.max()) + 1
        if self._q is None or self._q.numel() != size:
            self._q = torch.full((size,), 1.0 / size, dtype=torch.float64, device=device)
        else:
            self._q = self._q.to(device)

    def _group_ids(self, indices: Tensor, groups: Tensor | None) -> Tensor:
        if self.grouping == "group":
            if groups is None:
                raise ValueError(
                    "OnlineGroupDROStrategy(grouping='group') needs batches with group ids, got groups=None"
                )
            return groups
        return self._labels[indices.to(self._labels.device)]

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        q = self.q
        ids = self._group_ids(indices, groups).to(losses.device)
        if int(ids.max()) >= q.numel():
            raise ValueError(f"group id {int(ids.max())} out of range for {q.numel()} groups")
        present, inverse = torch.unique(ids, return_inverse=True)
        sums = losses.new_zeros(len(present)).index_add(0, inverse, losses)
        means = sums / torch.bincount(inverse, minlength=len(present)).to(losses.dtype)
        step = self.step_size * means.detach().to(torch.float64)
        logits = torch.log(q)
        logits[present] = logits[present] + step.to(q.device)
        self._q = torch.softmax(logits, 0)  # = q·e^{ηℓ̄} / Σ, without overflow
        weights = self._q[present].to(losses.device, losses.dtype)
        return (weights * means).sum()

    def epoch_stats(self) -> dict:
        q = self.q
        entropy = -torch.xlogy(q, q).sum()
        return {"q_max": float(q.max()), "q_entropy": float(entropy)}

    def state_dict(self) -> dict:
        return {"q": None if self._q is None else self._q.detach().cpu().clone()}

    def load_state_dict(self, state: dict) -> None:
        q = state["q"]
        if q is None:
            self._q = None
            return
        q = torch.as_tensor(q, dtype=torch.float64)
        if q.dim() != 1 or bool((q < 0).any()) or abs(float(q.sum()) - 1.0) > 1e-9:
            raise ValueError("state['q'] must be a 1-D probability vector")
        self._q = q.to(self._q.device) if self._q is not None else q
