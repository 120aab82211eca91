r"""The group-DRO baselines of the ALSO paper, as training-engine strategies.

Feoktistov et al. (2025, "Aligning Distributionally Robust Optimization with Practical Deep
Learning Needs", §6 and App. B.1) compare ALSO with a set of baselines; this module holds them as
:class:`dro_lab.train.Strategy` objects, so each runs through the one training loop::

    hist = dro_lab.fit(model, train, strategy=SpectralRiskStrategy(n_draws=2.0), epochs=20)

* :class:`UpsamplingStrategy` — draw example ``i`` with probability ∝ ``1/N_{y_i}``, mean loss.
* :class:`StaticWeightsStrategy` — uniform batches, each loss weighted by the inverse class
  frequency (:func:`class_balanced_weights`); ALSO frozen at its class-balanced prior.
* :class:`SpectralRiskStrategy` — Mehta et al. (2023): the batch's worst case over the
  permutahedron of a spectrum (:func:`extremile_spectrum`, :func:`spectral_risk_weights`).
* :class:`FastDROStrategy` — Levy et al. (2020): mini-batch CVaR or χ²-ball DRO, constrained form.
* :class:`RecoverStrategy` — the *simplified* RECOVER surrogate the ALSO experiment code runs.
* :class:`OnlineGroupDROStrategy` — online group DRO (Sagawa et al., 2020), which the paper
  mentions but does not run.

Every reducer treats its weights as constants (detached), so the parameter gradient is the
weighted sum of per-sample gradients (Danskin / envelope theorem).
"""

from __future__ import annotations

import math
from typing import Callable, Iterator

import torch
from torch import Tensor

from .data import _labels_of, _to_label_tensor
from .robust import RobustLoss, _check_number
from .samplers import _check_int
from .train import Strategy

__all__ = [
    "class_balanced_weights",
    "extremile_spectrum",
    "spectral_risk_weights",
    "UpsamplingStrategy",
    "StaticWeightsStrategy",
    "SpectralRiskStrategy",
    "FastDROStrategy",
    "RecoverStrategy",
    "OnlineGroupDROStrategy",
]


# --------------------------------------------------------------------------- validation helpers


def _choice(value, name: str, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def _training_labels(train, who: str, n: int) -> Tensor:
    """The ``n`` class labels of the training set handed to ``setup``."""
    if train is None:
        raise ValueError(f"{who} needs the training set's labels: run it through dro_lab.fit (setup(train=...))")
    labels = _labels_of(train)
    if labels.numel() != n:
        raise ValueError(f"the training set has {labels.numel()} labels but n={n}")
    return labels


# --------------------------------------------------------------------------- class balance


def class_balanced_weights(labels) -> Tensor:
    r"""Per-example inverse-class-frequency weights, normalised to sum to 1.

    .. math:: w_i = \frac{1/N_{y_i}}{\sum_k 1/N_{y_k}}

    so every class present gets total mass ``1/C`` (``C`` the number of classes present).

    Args:
        labels: integer class ids, shape ``(n,)``, non-negative, non-empty.

    Returns:
        ``w``, float64, shape ``(n,)``, on the labels' device.
    """
    labels = _to_label_tensor(labels, "labels")
    if labels.numel() == 0:
        raise ValueError("labels is empty: need at least one example")
    counts = torch.bincount(labels)
    inv = 1.0 / counts[labels].to(torch.float64)
    return inv / inv.sum()


# --------------------------------------------------------------------------- upsampling / static weights


class UpsamplingStrategy(Strategy):
    r"""Upsampling (ALSO paper, App. B.1): draw ``i`` with probability ∝ ``1/N_{y_i}``, with replacement.

    Every class is drawn equally often on average (``WeightedRandomSampler`` with ``n`` samples per
    epoch, as the paper's code does): ``⌈n/b⌉`` batches per epoch, the last one holding the
    remainder. The loss is the plain batch mean. Draws use ``fit``'s generator.
    """

    name = "upsampling"

    def setup(self, n: int, *, device: torch.device, generator: torch.Generator, batch_size: int | None = None,
              model: torch.nn.Module | None = None, train=None, loss_fn: Callable | None = None) -> None:
        super().setup(n, device=device, generator=generator)
        labels = _training_labels(train, "UpsamplingStrategy", n)
        # multinomial draws on the generator's device (fit's generator is a CPU one)
        self.probs = class_balanced_weights(labels.cpu()).to(generator.device)

    def batches(self, epoch: int, batch_size: int) -> Iterator[Tensor]:
        for start in range(0, self.n, batch_size):
            size = min(batch_size, self.n - start)
            yield torch.multinomial(self.probs, size, replacement=True, generator=self.generator)


class StaticWeightsStrategy(Strategy):
    r"""Static Weights (ALSO paper, App. B.1): uniform batches, losses weighted by inverse class frequency.

    .. math:: \mathcal L = \sum_{b=1}^{M} \frac{n\,w_{i_b}}{M}\,\ell_b, \qquad
              w_i = \frac{1/N_{y_i}}{\sum_k 1/N_{y_k}}

    an unbiased estimate of the class-balanced risk :math:`\sum_i w_i\ell_i`. It equals ALSO frozen
    at the class-balanced prior (η_π = 0); with balanced classes it is the plain mean.
    """

    name = "static-weights"

    def setup(self, n: int, *, device: torch.device, generator: torch.Generator, batch_size: int | None = None,
              model: torch.nn.Module | None = None, train=None, loss_fn: Callable | None = None) -> None:
        super().setup(n, device=device, generator=generator)
        labels = _training_labels(train, "StaticWeightsStrategy", n)
        self.weights = class_balanced_weights(labels).to(device)

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        w = self.weights[indices.to(self.weights.device)]
        scale = (self.n / losses.numel()) * w
        return (scale.to(losses.dtype) * losses).sum()


# --------------------------------------------------------------------------- spectral risk


def extremile_spectrum(m: int, n_draws: float) -> Tensor:
    r"""The extremile spectrum of a batch of ``m`` losses: :math:`\sigma_k=\frac{k^r-(k-1)^r}{m^r}`, ``r = n_draws``.

    ``σ_k`` weighs the ``k``-th smallest loss; it is the law of the maximum of ``r`` draws, so it
    sums to 1 and is nondecreasing for ``r ≥ 1`` (``r = 1``: uniform, the mean).

    Returns:
        ``σ``, float64, shape ``(m,)``.

    Raises:
        ValueError: ``n_draws < 1``: the spectrum would *decrease*, weighting the easy samples most
            (pitfall 14 of the ALSO spec; the official deshift asserts ``n_draws ≥ 1``, though the
            paper's split-learning search space goes down to 1e-3).
    """
    m = _check_int(m, "m", low=1)
    r = _check_number(n_draws, "n_draws", low=-math.inf, low_inclusive=True)
    if r < 1:
        raise ValueError(
            f"n_draws must be ≥ 1, got {r:g}: with n_draws < 1 the extremile spectrum decreases, "
            "so the largest weights go to the smallest losses (easy-sample mining, not robustness)"
        )
    k = torch.arange(1, m + 1, dtype=torch.float64)
    return (k / m) ** r - ((k - 1) / m) ** r  # the ratio form: k^r / m^r overflows for large m, r


def _check_spectrum(spectrum, m: int) -> Tensor:
    if not isinstance(spectrum, Tensor):
        spectrum = torch.as_tensor(spectrum, dtype=torch.float64)
    if spectrum.is_complex() or not spectrum.is_floating_point():
        raise TypeError(f"spectrum must be a float tensor, got dtype {spectrum.dtype}")
    spectrum = spectrum.detach().to("cpu", torch.float64)
    if spectrum.shape != (m,):
        raise ValueError(f"spectrum must have one weight per loss, shape ({m},), got {tuple(spectrum.shape)}")
    if not bool(torch.isfinite(spectrum).all()) or bool((spectrum < 0).any()):
        raise ValueError("spectrum must hold finite non-negative weights")
    if abs(float(spectrum.sum()) - 1.0) > 1e-6:
        raise ValueError(f"spectrum must sum to 1, got {float(spectrum.sum())}")
    if m > 1 and bool((spectrum[1:] < spectrum[:-1] - 1e-12).any()):
        raise ValueError("spectrum must be nondecreasing "
                         "(σ_1 ≤ … ≤ σ_m weigh the sorted losses, smallest first)")
    return spectrum


def _pav_kl(s: list[float], sigma: list[float], nu: float) -> list[float]:
    """KL penalty: pool-adjacent-violators on the sorted losses; returns the sorted weights.

    Block level ``ν·logΣ_B e^{ℓ/ν} − ν·logΣ_B σ`` (deshift's negative-entropy isotonic regression,
    times ν, so it stays finite as ν → 0); blocks merge while levels fail to increase. Within a
    block, ``q = (Σ_B σ)·softmax(ℓ_B/ν)``, i.e. ``exp(ℓ/ν − c*)/M``.
    """
    blocks: list[list[float]] = []  # [start, end(excl), max ℓ, Σ e^{(ℓ-max)/ν}, Σ σ, level]
    for i, (li, si) in enumerate(zip(s, sigma)):
        block = [i, i + 1, li, 1.0, si, 0.0]
        block[5] = li - nu * math.log(si) if si > 0 else math.inf
        blocks.append(block)
        while len(blocks) > 1 and blocks[-2][5] >= blocks[-1][5]:
            b2 = blocks.pop()
            b1 = blocks[-1]
            top = max(b1[2], b2[2])
            e = b1[3] * math.exp((b1[2] - top) / nu) + b2[3] * math.exp((b2[2] - top) / nu)
            mass = b1[4] + b2[4]
            level = top + nu * math.log(e) - nu * math.log(mass) if mass > 0 else math.inf
            blocks[-1] = [b1[0], b2[1], top, e, mass, level]
    q = [0.0] * len(s)
    for start, end, top, e, mass, _ in blocks:
        for i in range(start, end):
            q[i] = mass * math.exp((s[i] - top) / nu) / e
    return q


def _pav_chi2(s: list[float], sigma: list[float], nu: float, m: int) -> list[float]:
    """χ² penalty: pool-adjacent-violators on the sorted losses; returns the sorted weights.

    With our ``D(q‖u) = M Σ (q − 1/M)²`` the stationarity condition reads
    ``q = ℓ/(2Mν) − c* + 1/M`` (deshift's ``shift_cost`` is ``2Mν``). Block level
    ``mean_B ℓ − 2Mν·mean_B σ`` (the l2 centered isotonic regression, times 2Mν); within a block
    ``q_i = (ℓ_i − mean_B ℓ)/(2Mν) + mean_B σ``.
    """
    scale = 2.0 * m * nu
    blocks: list[list[float]] = []  # [start, end(excl), Σ ℓ, Σ σ, level]
    for i, (li, si) in enumerate(zip(s, sigma)):
        blocks.append([i, i + 1, li, si, li - scale * si])
        while len(blocks) > 1 and blocks[-2][4] >= blocks[-1][4]:
            b2 = blocks.pop()
            b1 = blocks[-1]
            count = b2[1] - b1[0]
            tot_l, tot_s = b1[2] + b2[2], b1[3] + b2[3]
            blocks[-1] = [b1[0], b2[1], tot_l, tot_s, (tot_l - scale * tot_s) / count]
    q = [0.0] * len(s)
    for start, end, tot_l, tot_s, _ in blocks:
        count = end - start
        for i in range(start, end):
            q[i] = max((s[i] - tot_l / count) / scale + tot_s / count, 0.0)  # ≥ 0 exactly; clamp rounding
    return q


def spectral_risk_weights(losses: Tensor, spectrum, *, shift_cost: float, penalty: str = "kl") -> Tensor:
    r"""The worst-case weights of a spectral risk measure with a shift penalty (Mehta et al., 2023).

    .. math:: q^\star=\arg\max_{q\in\mathcal P(\sigma)}\ \langle q,\ell\rangle-\nu\,D(q\,\|\,\tfrac1M\mathbf 1)

    over the permutahedron :math:`\mathcal P(\sigma)` (the convex hull of the permutations of the
    spectrum), with ``ν = shift_cost`` and ``D`` dro_lab's KL (:math:`\sum q\log(Mq)`) or χ²
    (:math:`M\sum(q-\frac1M)^2`). Solved exactly by pool-adjacent-violators on the sorted losses
    (the deshift algorithm; O(M log M)):

    * KL: :math:`q=\exp(\ell/\nu-c^\star)/M`, :math:`c^\star` the negative-entropy isotonic regression;
    * χ²: :math:`q=\ell/(2M\nu)-c^\star+1/M` (deshift writes ``ℓ/ν'``: its ``shift_cost`` ν' is our ``2Mν``);
    * ``ν = 0``: :math:`q_b=\sigma_{\mathrm{rank}(\ell_b)}` (the plain spectral risk).

    Args:
        losses: the batch's per-sample losses, shape ``(M,)``, finite.
        spectrum: ``σ``, shape ``(M,)``, non-negative, nondecreasing, summing to 1 (e.g.
            :func:`extremile_spectrum`).
        shift_cost: ``ν ≥ 0``.
        penalty: ``"kl"`` or ``"chi2"``.

    Returns:
        ``q`` (sums to 1), detached, in the losses' dtype and on their device. The arithmetic runs
        in float64 on the CPU (PAV is sequential; one host transfer per batch).
    """
    nu = _check_number(shift_cost, "shift_cost", low=0.0, low_inclusive=True)
    penalty = _choice(penalty, "penalty", ("kl", "chi2"))
    if not isinstance(losses, Tensor):
        raise TypeError(f"losses must be a tensor, got {type(losses).__name__}")
    if losses.dim() != 1 or losses.numel() == 0:
        raise ValueError(f"losses must be a non-empty 1-D vector, got shape {tuple(losses.shape)}")
    if not losses.is_floating_point():
        raise TypeError(f"losses must be floating point, got dtype {losses.dtype}")
    m = losses.numel()
    sigma = _check_spectrum(spectrum, m)
    work = losses.detach().to("cpu", torch.float64)
    if not bool(torch.isfinite(work).all()):
        raise ValueError("losses contains NaN or inf values; losses must be finite")
    order = torch.argsort(work, stable=True)
    if nu == 0.0:
        q_sorted = sigma.clone()
    else:
        s, sig = work[order].tolist(), sigma.tolist()
        solved = _pav_kl(s, sig, nu) if penalty == "kl" else _pav_chi2(s, sig, nu, m)
        q_sorted = torch.tensor(solved, dtype=torch.float64)
    q = torch.empty_like(q_sorted)
    q[order] = q_sorted
    return q.to(device=losses.device, dtype=losses.dtype)


class SpectralRiskStrategy(Strategy):
    r"""Spectral risk minimisation (Mehta et al., 2023; the ``deshift`` code): uniform batches,
    loss :math:`\sum_b q_b\ell_b` with ``q`` = :func:`spectral_risk_weights` of the batch (detached).

    The spectrum is the extremile one (:func:`extremile_spectrum`, ``r = n_draws``) of the batch's
    size (a short last batch gets its own). Defaults are the ALSO unbalanced-experiment settings:
    KL penalty, ``shift_cost`` ν = 1, ``n_draws`` = 2. ``n_draws`` must be ≥ 1 (pitfall 14).
    """

    def __init__(self, n_draws: float = 2.0, shift_cost: float = 1.0, penalty: str = "kl"):
        self.n_draws = _check_number(n_draws, "n_draws", low=-math.inf, low_inclusive=True)
        extremile_spectrum(1, self.n_draws)  # validates n_draws ≥ 1 with the explanation
        self.shift_cost = _check_number(shift_cost, "shift_cost", low=0.0, low_inclusive=True)
        self.penalty = _choice(penalty, "penalty", ("kl", "chi2"))
        self._spectra: dict[int, Tensor] = {}
        self.name = f"spectral(extremile={self.n_draws:g},ν={self.shift_cost:g},{self.penalty})"

    def spectrum(self, m: int) -> Tensor:
        """The (cached) spectrum for a batch of ``m`` losses."""
        if m not in self._spectra:
            self._spectra[m] = extremile_spectrum(m, self.n_draws)
        return self._spectra[m]

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        q = spectral_risk_weights(losses, self.spectrum(losses.numel()), shift_cost=self.shift_cost,
                                  penalty=self.penalty)
        return (q * losses).sum()


# --------------------------------------------------------------------------- FastDRO


class FastDROStrategy(Strategy):
    r"""FastDRO (Levy et al., 2020, "Large-scale methods for DRO"): mini-batch CVaR or χ² DRO.

    The constrained form (``reg = 0`` in Levy's code), on uniform batches of ``M`` losses:

    * ``kind="cvar"``: :math:`\max_q\langle q,\ell\rangle` s.t. :math:`q_b\le\frac1{\text{size}\cdot M}`
      (dro_lab's ``RobustLoss("cvar", alpha=size)``);
    * ``kind="chi2"``: :math:`\max_q\langle q,\ell\rangle` s.t. :math:`\tfrac12\,\mathrm{mean}_b((Mq_b-1)^2)\le\text{size}`
      (dro_lab's ``RobustLoss("chi2", radius=2*size)``: our χ² divergence is twice Levy's).

    The gradient is :math:`\sum_b q^\star_b\nabla\ell_b` (``q*`` detached). The estimator is biased for
    the full-data robust loss at small batches (pitfall 14).

    Args:
        kind: ``"cvar"`` or ``"chi2"``.
        size: CVaR level α ∈ (0, 1], or the χ² radius ρ > 0 (Levy's ``size``).
    """

    def __init__(self, kind: str = "cvar", size: float = 0.1):
        self.kind = _choice(kind, "kind", ("cvar", "chi2"))
        if self.kind == "cvar":
            self.size = _check_number(size, "size", low=0.0, low_inclusive=False, high=1.0)
            self.criterion = RobustLoss("cvar", alpha=self.size)
        else:
            self.size = _check_number(size, "size", low=0.0, low_inclusive=False)
            self.criterion = RobustLoss("chi2", radius=2.0 * self.size)
        self.name = f"fastdro-{self.kind}({self.size:g})"

    def weights(self, losses: Tensor) -> Tensor:
        """The worst-case batch weights ``q*`` (detached)."""
        return self.criterion.weights(losses)

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        return self.criterion(losses)


# --------------------------------------------------------------------------- RECOVER (simplified)


class RecoverStrategy(Strategy):
    r"""RECOVER, *simplified*: the surrogate the ALSO experiment code runs (``ImportanceLoss``), not Qi et al.'s
    STORM-type compositional algorithm.

    .. math:: \mathcal L=\frac1t\Big(\mathrm{mean}_b\,e^{\mathrm{clip}(t\,\ell_b,\,-C,\,C)}-1\Big)

    after ``warmup_steps`` optimiser steps, the plain mean before. Its gradient is the KL-DRO
    gradient (weights ∝ :math:`e^{t\ell_b}`, ``t = 1/λ``) up to a positive per-batch factor. The
    clip keeps :math:`e^{t\ell}` finite for large early losses (pitfall 14); a clipped sample
    contributes no gradient.

    Args:
        t: the tilt ``t = 1/λ > 0`` (code default 1; split learning U[0.01, 3]).
        clip: ``C > 0``.
        warmup_steps: optimiser steps with the plain mean first (≥ 0; code: 100). The step count is
            advanced in :meth:`observe`, i.e. after each step, and is part of the state.
    """

    def __init__(self, t: float = 1.0, clip: float = 10.0, warmup_steps: int = 100):
        self.t = _check_number(t, "t", low=0.0, low_inclusive=False)
        self.clip = _check_number(clip, "clip", low=0.0, low_inclusive=False)
        self.warmup_steps = _check_int(warmup_steps, "warmup_steps", low=0)
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
        self.steps = _check_int(state["steps"], "state['steps']", low=0)


# --------------------------------------------------------------------------- online group DRO


class OnlineGroupDROStrategy(Strategy):
    r"""Online group DRO (Sagawa et al., 2020, Algorithm 1): exponentiated-gradient ascent on group weights.

    ``q`` lives on the simplex over the ``G`` groups (uniform at the start). Per uniform batch, with
    :math:`\bar\ell_g` the mean loss of group ``g`` in the batch:

    .. math:: q_g \leftarrow q_g\,e^{\eta\,\bar\ell_g}\ \text{(groups present)},\quad q\leftarrow q/\textstyle\sum q,
              \qquad \mathcal L=\sum_{g\ \text{present}} q_g\,\bar\ell_g

    with the updated ``q`` held constant in the loss. Unlike ALSO's class-grouped π (pitfall 5)
    this weights groups by their *mean* loss, whatever their size. Mentioned, not run, in the
    ALSO paper.

    Args:
        step_size: η > 0.
        grouping: ``"class"`` (the training labels, looked up by the batch's dataset indices) or
            ``"group"`` (the dataset's group ids; the data must yield them).

    ``q`` is created at the first :func:`fit` (float64, on the training device) and kept by later
    calls with the same number of groups, so a second ``fit`` continues.
    """

    def __init__(self, step_size: float = 0.01, grouping: str = "class"):
        self.step_size = _check_number(step_size, "step_size", low=0.0, low_inclusive=False)
        self.grouping = _choice(grouping, "grouping", ("class", "group"))
        self._q: Tensor | None = None
        self._labels: Tensor | None = None
        self.name = f"group-dro(η={self.step_size:g})" + ("" if grouping == "class" else ",groups")

    @property
    def q(self) -> Tensor:
        """The current group weights (float64, sums to 1)."""
        if self._q is None:
            raise RuntimeError("q does not exist yet: it is created when fit sets the strategy up")
        return self._q

    def setup(self, n: int, *, device: torch.device, generator: torch.Generator, batch_size: int | None = None,
              model: torch.nn.Module | None = None, train=None, loss_fn: Callable | None = None) -> None:
        super().setup(n, device=device, generator=generator)
        if train is None:
            raise ValueError("OnlineGroupDROStrategy needs the training set: run it through dro_lab.fit")
        if self.grouping == "class":
            self._labels = _labels_of(train).to(device)
            size = getattr(train, "num_classes", None) or int(self._labels.max()) + 1
        else:
            ids = getattr(train, "groups", None)
            if ids is None:
                raise ValueError("OnlineGroupDROStrategy(grouping='group') needs a dataset with groups "
                                 "(train.groups is None); use grouping='class' or attach groups")
            size = getattr(train, "num_groups", None) or int(ids.max()) + 1
        if self._q is None or self._q.numel() != size:
            self._q = torch.full((size,), 1.0 / size, dtype=torch.float64, device=device)
        else:
            self._q = self._q.to(device)

    def _group_ids(self, indices: Tensor, groups: Tensor | None) -> Tensor:
        if self.grouping == "group":
            if groups is None:
                raise ValueError("OnlineGroupDROStrategy(grouping='group') needs batches with group ids, "
                                 "got groups=None")
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
