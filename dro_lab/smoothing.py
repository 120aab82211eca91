r"""Label-smoothing DRO ("GI-LS"), the data-mixing and attack baselines, and Bayesian optimisation.

GI-LS (the label-smoothing DRO spec, §0 and §2.2) is Volpi et al.'s adversarial data augmentation
with label-smoothed cross-entropy in both the inner maximisation and the outer minimisation:

* **Inner step** (:func:`gils_shift`): T steps of gradient *ascent* on the input pixels of the
  per-sample objective :math:`\ell_\alpha(\theta;(x^t,y)) - \gamma\cdot\tfrac12\|f(x^t)-f(x)\|_2^2`
  with raw gradient steps of size η, where ``f`` is the penultimate feature map
  (``model.penultimate``). The anchors :math:`f(x)` are computed once and detached, the model is in
  eval mode while generating, and the inputs stay in the data range.
* **Outer step** (:class:`GILSStrategy` through :func:`dro_lab.fit`): one SGD step on the generated
  batch, then one on the original batch, both with the LS loss (the faithful minibatch reading of
  Algorithm 1, spec §2.2 and pitfall 10).

Conventions (stated because the paper does not, spec pitfalls 1, 2, 7, 8):

* LS puts :math:`1-\alpha` on the true class and :math:`\alpha/(k-1)` on each other class (the
  paper's eq. 3), so α ∈ [0, (k−1)/k]. PyTorch's ``label_smoothing=ε`` puts :math:`1-\varepsilon+\varepsilon/k`
  on the true class: the two agree for :math:`\varepsilon=\alpha k/(k-1)` (:func:`torch_label_smoothing`).
* The LS loss is :math:`-\sum_j \bar y_j\log p_j` (eq. 5's double sum is a typo).
* The ascent objective is the per-sample *sum* over the batch (η does not scale with the batch size)
  and the transport cost is ½‖·‖² summed over the features (not an MSE).
* The ascent uses autograd, so it is a true ascent (the printed eq. 16 has the wrong sign).

The baselines of the paper's Tables 5–6 run through the same engine: :class:`LabelSmoothingStrategy`
(GI-LS with T = 0), :class:`MixupStrategy`, :class:`CutMixStrategy`, :class:`CutoutStrategy` and
:class:`AttackAugmentStrategy` (FGSM / PGD / PGD-L2 as training-time augmentation). Plain CE is
:class:`dro_lab.ERM`. Every random draw comes from the strategy's generator (seeded by ``fit``).

:func:`tune` runs the paper's Bayesian optimisation over (α, T, η, epochs) with optuna
(``pip install dro-lab[bo]``); its Gaussian-process sampler is the closest to the paper's
Matérn-5/2 GP in Ax.
"""

from __future__ import annotations

import math
import numbers
from types import MappingProxyType
from typing import Callable, Mapping

import torch
import torch.nn.functional as F
from torch import Tensor

from .adversarial import _check_clamp, _check_int, _check_positive, fgsm_attack, pgd_attack
from .train import Strategy

__all__ = [
    "smoothed_targets",
    "ls_cross_entropy",
    "torch_label_smoothing",
    "gils_shift",
    "GILSStrategy",
    "LabelSmoothingStrategy",
    "mixup_batch",
    "cutmix_batch",
    "cutout_batch",
    "MixupStrategy",
    "CutMixStrategy",
    "CutoutStrategy",
    "AttackAugmentStrategy",
    "GILS_SEARCH_SPACE",
    "tune",
    "best_at_bounds",
]

_OUTER_MODES = ("sequential", "joint", "generated")
_ATTACKS = ("fgsm", "pgd", "pgd-l2")


# --------------------------------------------------------------------------- label smoothing


def _check_num_classes(num_classes) -> int:
    if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral) or num_classes < 2:
        raise ValueError(f"num_classes must be an integer ≥ 2 (LS spreads α over the k − 1 other classes), "
                         f"got {num_classes!r}")
    return int(num_classes)


def _check_alpha(alpha, num_classes: int | None = None) -> float:
    """α ∈ [0, (k−1)/k] (beyond it the true class gets less mass than the others); [0, 1) when k is unknown."""
    high = (num_classes - 1) / num_classes if num_classes is not None else 1.0
    ok = (not isinstance(alpha, bool) and isinstance(alpha, numbers.Real) and math.isfinite(alpha)
          and 0 <= alpha <= high + 1e-12 and (num_classes is not None or alpha < 1))
    if not ok:
        where = f"[0, (k−1)/k] = [0, {high:.6g}] for k = {num_classes}" if num_classes is not None else "[0, (k−1)/k]"
        raise ValueError(f"alpha (the label-smoothing factor) must lie in {where}, got {alpha!r}")
    return float(alpha)


def torch_label_smoothing(alpha: float, num_classes: int) -> float:
    r"""PyTorch's ``label_smoothing`` ε equivalent to the paper's α: :math:`\varepsilon=\alpha k/(k-1)`.

    ``F.cross_entropy(logits, y, label_smoothing=torch_label_smoothing(α, k))`` equals
    :func:`ls_cross_entropy` with ``alpha=α`` (k = 6, α = 0.5 → ε = 0.6; spec pitfall 1).
    """
    k = _check_num_classes(num_classes)
    return _check_alpha(alpha, k) * k / (k - 1)


def smoothed_targets(y: Tensor, num_classes: int, alpha: float, *, dtype: torch.dtype | None = None) -> Tensor:
    r"""The paper's LS targets (eq. 3), shape ``(b, k)``: :math:`1-\alpha` on the true class, :math:`\alpha/(k-1)` elsewhere.

    ``y`` holds hard labels ``(b,)``. Rows sum to one; α = 0 gives one-hot vectors. ``dtype``
    defaults to torch's default float type; the result is on ``y``'s device.

    Raises:
        ValueError: ``num_classes < 2``, α outside [0, (k−1)/k], labels not integers in [0, k).
    """
    k = _check_num_classes(num_classes)
    alpha = _check_alpha(alpha, k)
    if y.dim() != 1 or y.dtype.is_floating_point or y.dtype == torch.bool:
        raise ValueError(f"y must be a 1-D tensor of integer class labels, got shape {tuple(y.shape)} and {y.dtype}")
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= k):
        raise ValueError(f"y (the labels) must lie in [0, {k}), got values in [{int(y.min())}, {int(y.max())}]")
    dtype = dtype or torch.get_default_dtype()
    out = torch.full((y.shape[0], k), alpha / (k - 1), dtype=dtype, device=y.device)
    return out.scatter_(1, y.long().unsqueeze(1), 1.0 - alpha)


def _smooth(y: Tensor, num_classes: int, alpha: float, dtype: torch.dtype) -> Tensor:
    """Hard labels → LS targets; soft targets ``(b, k)`` → the same affine map, (1 − ε)·y + ε/k with ε = αk/(k−1)."""
    if y.dim() == 2 and y.dtype.is_floating_point:
        if y.shape[1] != num_classes:
            raise ValueError(f"soft targets have {y.shape[1]} classes, logits {num_classes}")
        eps = _check_alpha(alpha, num_classes) * num_classes / (num_classes - 1)
        return ((1 - eps) * y + eps / num_classes).to(dtype)
    return smoothed_targets(y, num_classes, alpha, dtype=dtype)


def ls_cross_entropy(logits: Tensor, y: Tensor, *, alpha: float, reduction: str = "none") -> Tensor:
    r"""Label-smoothed cross-entropy :math:`-\sum_j \bar y_{\alpha,j}\log\mathrm{softmax}(s)_j` (the paper's bold ℓ).

    Args:
        logits: ``(b, k)``.
        y: hard labels ``(b,)``, or soft targets ``(b, k)`` (e.g. Mixup's), which are smoothed by the
            same affine map, :math:`(1-\varepsilon)y+\varepsilon/k` with :math:`\varepsilon=\alpha k/(k-1)`
            (for one-hot ``y`` this is exactly eq. 3).
        alpha: the paper's smoothing factor, in [0, (k−1)/k].
        reduction: ``"none"`` (per-sample, the default), ``"mean"`` or ``"sum"``.
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    if logits.dim() != 2:
        raise ValueError(f"logits must be (batch, classes), got shape {tuple(logits.shape)}")
    if y.dim() == 0 or y.shape[0] != logits.shape[0]:
        raise ValueError(f"y must have one label (or target row) per logits row: logits shape {tuple(logits.shape)}, "
                         f"y shape {tuple(y.shape)}")
    targets = _smooth(y, logits.shape[1], alpha, logits.dtype)
    losses = -(targets * F.log_softmax(logits, dim=1)).sum(1)
    return losses if reduction == "none" else (losses.mean() if reduction == "mean" else losses.sum())


def _num_classes_of(model: torch.nn.Module) -> int | None:
    classifier = getattr(model, "classifier", None)
    return getattr(classifier, "out_features", None)


# --------------------------------------------------------------------------- the GI-LS shift


def gils_shift(model: torch.nn.Module, x: Tensor, y: Tensor, *, alpha: float, gamma: float, eta: float,
               steps: int, clamp: tuple[float, float] | None = (0.0, 1.0),
               return_cost: bool = True) -> Tensor | tuple[Tensor, Tensor]:
    r"""GI-LS's inner maximisation: T raw gradient-ascent steps on the inputs (Algorithm 1, spec §2.2).

    .. math::
        x^{t+1} = \Pi\Big(x^t + \eta\,\nabla_x \sum_b\big[\ell_\alpha(\theta;(x^t_b,y_b))
                  - \gamma\cdot\tfrac12\|f(x^t_b)-f(x_b)\|_2^2\big]\Big),\qquad t=0..T-1,

    with ``f = model.penultimate`` and the logits ``model.classifier(f(x))``. The anchors
    :math:`f(x)` are computed once, at the current parameters, and detached (pitfall 6); the model
    runs in eval mode (BatchNorm statistics untouched, dropout off) and its mode is restored
    afterwards, also on errors (pitfall 9); gradients are taken w.r.t. the inputs only, so the
    parameters' ``.grad`` are untouched. The per-sample sum makes each sample's step independent of
    the batch size (pitfall 7); the step is the raw gradient, not its sign (pitfall 8). Π clamps to
    ``clamp`` (``None``: no clamp). Large γ·η makes the ascent unstable (the penalty's curvature
    exceeds 1/η). Very large pixel values slow CPUs down (denormals): consider
    ``torch.set_flush_denormal(True)``.

    Args:
        model: a classifier with ``penultimate(x)`` (features) and ``classifier`` (the last layer),
            as every :mod:`dro_lab.models` network.
        x, y: a batch of inputs and hard labels (or soft targets ``(b, k)``).
        alpha: the LS factor α ∈ [0, (k−1)/k] (α = 0: Volpi's ADA / WRM in feature space).
        gamma: the transport penalty γ ≥ 0 (γ = 0: an unpenalised ascent; the paper uses 1e-3).
        eta: the ascent step η > 0 (the paper searches [1.5, 3.0] on [0, 1] ImageNet-normalised inputs).
        steps: T ≥ 0 (T = 0 returns ``x`` unchanged: plain LS).
        clamp: the valid input range.
        return_cost: also return the realised per-sample transport cost :math:`\tfrac12\|f(x^T)-f(x)\|^2`.

    Returns:
        ``x^T`` (detached, ``x``'s dtype and device) and, with ``return_cost``, the ``(b,)`` costs.
    """
    steps = _check_int(steps, "steps", minimum=0)
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real) or not (gamma >= 0 and math.isfinite(gamma)):
        raise ValueError(f"gamma must be a finite number ≥ 0 (γ = 0 is allowed), got {gamma!r}")
    eta = _check_positive(eta, "eta")
    clamp = _check_clamp(clamp)
    k = _num_classes_of(model)
    alpha = _check_alpha(alpha, k)
    if not (hasattr(model, "penultimate") and isinstance(getattr(model, "classifier", None), torch.nn.Module)):
        raise TypeError("gils_shift needs a model with penultimate(x) and a classifier module "
                        "(every dro_lab.models network has both)")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y must have the same batch size, got {x.shape[0]} and {y.shape[0]}")
    x0 = x.detach()
    if steps == 0:
        out = x0.clone()
        return (out, x0.new_zeros(x0.shape[0])) if return_cost else out
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            anchor = model.penultimate(x0).detach()
        xt = x0.clone()
        with torch.enable_grad():
            for _ in range(steps):
                xt.requires_grad_(True)
                z = model.penultimate(xt)
                objective = ls_cross_entropy(model.classifier(z), y, alpha=alpha) \
                    - gamma * 0.5 * (z - anchor).pow(2).flatten(1).sum(1)
                (grad,) = torch.autograd.grad(objective.sum(), xt)
                xt = xt.detach() + eta * grad
                if clamp is not None:
                    xt = xt.clamp(*clamp)
        if not return_cost:
            return xt.detach()
        with torch.no_grad():
            cost = 0.5 * (model.penultimate(xt) - anchor).pow(2).flatten(1).sum(1)
    finally:
        model.train(was_training)
    return xt.detach(), cost.detach()


class _MeanStats:
    """Per-epoch running sums of a few per-sample statistics (reset when read)."""

    def _reset_stats(self) -> None:
        self._sums: dict[str, float] = {}
        self._count = 0

    def _add_stats(self, **values: Tensor) -> None:
        if not hasattr(self, "_sums"):
            self._reset_stats()
        for key, v in values.items():
            self._sums[key] = self._sums.get(key, 0.0) + float(v.detach().double().sum())
        self._count += int(next(iter(values.values())).numel())

    def epoch_stats(self) -> dict:
        if not getattr(self, "_count", 0):
            return {}
        stats = {key: s / self._count for key, s in self._sums.items()}
        self._reset_stats()
        return stats

    def state_dict(self) -> dict:
        """The epoch's running sums (a run resumed mid-epoch reports the same epoch statistics)."""
        return {"stat_sums": dict(getattr(self, "_sums", {})), "stat_count": getattr(self, "_count", 0)}

    def load_state_dict(self, state: dict) -> None:
        self._sums = {str(k): float(v) for k, v in state.get("stat_sums", {}).items()}
        self._count = int(state.get("stat_count", 0))


class GILSStrategy(_MeanStats, Strategy):
    r"""GI-LS through :func:`dro_lab.fit` (spec §2.2): regenerate the batch by :func:`gils_shift`, train with LS.

    :meth:`transform` shifts the drawn batch (from the real data at every step: regenerate, don't
    accumulate, pitfall 11) and returns its LS targets :func:`smoothed_targets`, so ``fit``'s default
    per-sample cross-entropy (which accepts probability targets) *is* the LS loss. A custom
    ``loss_fn`` must accept ``(b, k)`` soft targets. ``outer`` picks the outer update:

    * ``"sequential"`` (the paper's, the default): two SGD steps per drawn batch, the generated batch
      then the original one, the second at the updated parameters (pitfall 10);
    * ``"joint"``: one step on the concatenation (half the updates; a variant);
    * ``"generated"``: one step on the generated batch only (Sinha/Volpi's inner-outer form).

    ``steps=0`` with ``"sequential"`` trains twice on the same LS batch; :class:`LabelSmoothingStrategy`
    is the faithful LS baseline. Per epoch, the history records ``gils_transport_cost`` (the mean
    realised ½‖f(x^T) − f(x)‖²) and ``gils_input_shift`` (the mean ‖x^T − x‖₂).

    Args:
        alpha, gamma, eta, steps, clamp: as in :func:`gils_shift` (defaults: the paper's γ = 1e-3,
            α = 0.3, η = 2, T = 10).
        outer: ``"sequential"``, ``"joint"`` or ``"generated"``.
    """

    def __init__(self, alpha: float = 0.3, gamma: float = 1e-3, eta: float = 2.0, steps: int = 10, *,
                 outer: str = "sequential", clamp: tuple[float, float] | None = (0.0, 1.0)):
        if outer not in _OUTER_MODES:
            raise ValueError(f"outer must be one of {_OUTER_MODES}, got {outer!r}")
        self.alpha = _check_alpha(alpha)
        if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real) or not (gamma >= 0 and math.isfinite(gamma)):
            raise ValueError(f"gamma must be a finite number ≥ 0 (γ = 0 is allowed), got {gamma!r}")
        self.gamma = float(gamma)
        self.eta = _check_positive(eta, "eta")
        self.steps = _check_int(steps, "steps", minimum=0)
        self.outer = outer
        self.clamp = _check_clamp(clamp)
        tag = "" if outer == "sequential" else f",{outer}"
        self.name = f"gi-ls(α={self.alpha:g},T={self.steps},η={self.eta:g},γ={self.gamma:g}{tag})"
        self._reset_stats()

    def setup(self, n: int, *, device: torch.device, generator: torch.Generator, batch_size: int | None = None,
              model: torch.nn.Module | None = None, train=None, loss_fn: Callable | None = None) -> None:
        super().setup(n, device=device, generator=generator)
        if model is not None and _num_classes_of(model) is not None:
            _check_alpha(self.alpha, _num_classes_of(model))
        self._reset_stats()

    def generate(self, x: Tensor, y: Tensor, model: torch.nn.Module) -> tuple[Tensor, Tensor]:
        """The shifted batch and its per-sample transport costs (records the epoch statistics)."""
        x_gen, cost = gils_shift(model, x, y, alpha=self.alpha, gamma=self.gamma, eta=self.eta, steps=self.steps,
                                 clamp=self.clamp)
        self._add_stats(gils_transport_cost=cost, gils_input_shift=(x_gen - x).flatten(1).norm(dim=1))
        return x_gen, cost

    def transform(self, x: Tensor, y: Tensor, *, indices: Tensor, groups: Tensor | None,
                  model: torch.nn.Module) -> list:
        soft = smoothed_targets(y, _num_classes_of(model), self.alpha, dtype=x.dtype if x.is_floating_point() else None)
        x_gen, _ = self.generate(x, y, model)
        if self.outer == "generated":
            return [(x_gen, soft, groups)]
        if self.outer == "joint":
            both_groups = None if groups is None else torch.cat([groups, groups])
            return [(torch.cat([x_gen, x]), torch.cat([soft, soft]), both_groups)]
        return [(x_gen, soft, groups), (x, soft, groups)]


class LabelSmoothingStrategy(Strategy):
    """Plain label smoothing with the paper's convention (GI-LS with T = 0): LS targets, one step per batch."""

    def __init__(self, alpha: float = 0.1):
        self.alpha = _check_alpha(alpha)
        self.name = f"ls(α={self.alpha:g})"

    def transform(self, x: Tensor, y: Tensor, *, indices: Tensor, groups: Tensor | None,
                  model: torch.nn.Module) -> tuple[Tensor, Tensor, Tensor | None]:
        k = _num_classes_of(model)
        if k is None:
            raise TypeError("LabelSmoothingStrategy needs model.classifier.out_features (the number of classes)")
        return x, smoothed_targets(y, k, self.alpha, dtype=x.dtype if x.is_floating_point() else None), groups


# --------------------------------------------------------------------------- data-mixing baselines


def _beta_draw(beta_param: float, generator: torch.Generator | None) -> float:
    """λ ~ Beta(a, a) by inversion of a uniform drawn from ``generator`` (torch's Beta takes no generator)."""
    from scipy.special import betaincinv

    u = float(torch.rand((), generator=generator, dtype=torch.float64))
    return float(betaincinv(beta_param, beta_param, u))


def _one_hot(y: Tensor, num_classes: int, dtype: torch.dtype) -> Tensor:
    if y.dim() == 2 and y.dtype.is_floating_point:
        return y.to(dtype)
    return F.one_hot(y.long(), _check_num_classes(num_classes)).to(dtype)


def _perm(b: int, generator: torch.Generator | None, device: torch.device) -> Tensor:
    gen_device = generator.device if generator is not None else torch.device("cpu")
    return torch.randperm(b, generator=generator, device=gen_device).to(device)


def mixup_batch(x: Tensor, y: Tensor, num_classes: int, *, beta_param: float = 1.0,
                generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, float, Tensor]:
    r"""Mixup (Zhang et al. 2018): :math:`\tilde x=\lambda x+(1-\lambda)x_\pi`, :math:`\tilde y=\lambda e_y+(1-\lambda)e_{y_\pi}`.

    One λ ~ Beta(a, a) per batch and a random permutation π, both from ``generator``. ``y`` may
    already be soft ``(b, k)``. Returns ``(x_mix, soft_targets, λ, π)``.
    """
    a = _check_positive(beta_param, "beta_param")
    lam = _beta_draw(a, generator)
    perm = _perm(x.shape[0], generator, x.device)
    onehot = _one_hot(y, num_classes, x.dtype)
    return lam * x + (1 - lam) * x[perm], lam * onehot + (1 - lam) * onehot[perm], lam, perm


def _uniform_int(high: int, generator: torch.Generator | None) -> int:
    return int(torch.randint(high, (), generator=generator))


def cutmix_batch(x: Tensor, y: Tensor, num_classes: int, *, beta_param: float = 1.0,
                 generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, float, tuple[int, int, int, int], Tensor]:
    r"""CutMix (Yun et al. 2019): paste a box of a permuted batch; mix the labels by the kept area.

    As the official code: λ ~ Beta(a, a); a box of side ⌊H√(1−λ)⌋ × ⌊W√(1−λ)⌋ centred at a uniform
    pixel, clipped to the image; one box per batch; the label weight is the area actually kept,
    :math:`\lambda' = 1 - \text{box area}/(HW)`. ``x`` must be ``(b, c, H, W)``. Returns
    ``(x_mix, soft_targets, λ', (top, bottom, left, right), π)``.
    """
    if x.dim() != 4:
        raise ValueError(f"cutmix needs image batches (b, c, H, W), got shape {tuple(x.shape)}")
    a = _check_positive(beta_param, "beta_param")
    lam = _beta_draw(a, generator)
    perm = _perm(x.shape[0], generator, x.device)
    h, w = x.shape[-2:]
    cut = math.sqrt(1.0 - lam)
    ch, cw = int(h * cut), int(w * cut)
    cy, cx = _uniform_int(h, generator), _uniform_int(w, generator)
    top, bottom = min(max(cy - ch // 2, 0), h), min(max(cy + ch // 2, 0), h)
    left, right = min(max(cx - cw // 2, 0), w), min(max(cx + cw // 2, 0), w)
    out = x.clone()
    out[:, :, top:bottom, left:right] = x[perm][:, :, top:bottom, left:right]
    kept = 1.0 - (bottom - top) * (right - left) / (h * w)
    onehot = _one_hot(y, num_classes, x.dtype)
    return out, kept * onehot + (1 - kept) * onehot[perm], kept, (top, bottom, left, right), perm


def cutout_batch(x: Tensor, *, size: int, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """Cutout (DeVries & Taylor 2017): zero a ``size`` × ``size`` square per image at a uniform centre, clipped.

    Returns ``(x_cut, mask)``, the mask ``(b, 1, H, W)`` being 0 on the cut pixels and 1 elsewhere.
    """
    if x.dim() != 4:
        raise ValueError(f"cutout needs image batches (b, c, H, W), got shape {tuple(x.shape)}")
    size = _check_int(size, "size")
    b, h, w = x.shape[0], x.shape[-2], x.shape[-1]
    gen_device = generator.device if generator is not None else torch.device("cpu")
    cy = torch.randint(h, (b,), generator=generator, device=gen_device).to(x.device)
    cx = torch.randint(w, (b,), generator=generator, device=gen_device).to(x.device)
    rows = torch.arange(h, device=x.device).view(1, h, 1)
    cols = torch.arange(w, device=x.device).view(1, 1, w)
    lo_y, lo_x = (cy - size // 2).view(b, 1, 1), (cx - size // 2).view(b, 1, 1)
    inside = (rows >= lo_y) & (rows < lo_y + size) & (cols >= lo_x) & (cols < lo_x + size)
    mask = (~inside).to(x.dtype).unsqueeze(1)
    return x * mask, mask


class _MixStrategy(_MeanStats, Strategy):
    """A strategy that mixes each drawn batch with a permutation of itself (one optimizer step)."""

    def __init__(self, beta_param: float = 1.0):
        self.beta_param = _check_positive(beta_param, "beta_param")
        self.name = f"{self.kind}(a={self.beta_param:g})"
        self._reset_stats()

    def transform(self, x: Tensor, y: Tensor, *, indices: Tensor, groups: Tensor | None,
                  model: torch.nn.Module) -> tuple[Tensor, Tensor, Tensor | None]:
        x_mix, soft, lam = self.mix(x, y, _num_classes_of(model))[:3]
        self._add_stats(mix_lambda=torch.tensor([lam]))
        return x_mix, soft, groups


class MixupStrategy(_MixStrategy):
    """Mixup through :func:`dro_lab.fit` (:func:`mixup_batch`): mixed inputs and soft targets; records the mean λ."""

    kind = "mixup"

    def mix(self, x, y, k):
        return mixup_batch(x, y, k, beta_param=self.beta_param, generator=self.generator)


class CutMixStrategy(_MixStrategy):
    """CutMix through :func:`dro_lab.fit` (:func:`cutmix_batch`): a pasted box, labels mixed by area."""

    kind = "cutmix"

    def mix(self, x, y, k):
        return cutmix_batch(x, y, k, beta_param=self.beta_param, generator=self.generator)


class CutoutStrategy(Strategy):
    """Cutout through :func:`dro_lab.fit` (:func:`cutout_batch`): one zeroed square per image, labels unchanged.

    ``size`` defaults to half the image side (DeVries & Taylor's 16 px on 32 px CIFAR; 4 px on 8 px digits).
    """

    def __init__(self, size: int | None = None):
        self.size = None if size is None else _check_int(size, "size")
        self.name = f"cutout(size={self.size})" if size is not None else "cutout"

    def transform(self, x: Tensor, y: Tensor, *, indices: Tensor, groups: Tensor | None,
                  model: torch.nn.Module) -> tuple[Tensor, Tensor, Tensor | None]:
        size = self.size if self.size is not None else max(1, x.shape[-1] // 2)
        return cutout_batch(x, size=size, generator=self.generator)[0], y, groups


class AttackAugmentStrategy(Strategy):
    r"""Adversarial examples as training-time augmentation (the paper's Table 6): two steps per batch.

    :meth:`transform` returns ``[(x_adv, y), (x, y)]``: one SGD step on the attacked batch, then one
    on the original batch (as GI-LS's outer update), with the clean test set for evaluation. Attacks
    (dro_lab's own, the model in eval mode): ``"fgsm"`` (:func:`dro_lab.fgsm_attack`), ``"pgd"`` (L∞)
    and ``"pgd-l2"`` (:func:`dro_lab.pgd_attack`, sign / normalised steps, random start drawn from the
    strategy's generator). The paper states only ε ("8/225", read as 8/255, pitfall 16); the step
    ``alpha`` defaults to ε/4 (torchattacks' PGD: 2/255 for ε = 8/255) and ``steps`` to 10.
    ``label_smoothing`` (the paper's α) optionally trains both steps on LS targets.
    """

    def __init__(self, attack: str = "pgd", eps: float = 8 / 255, *, alpha: float | None = None, steps: int = 10,
                 random_start: bool = True, clamp: tuple[float, float] | None = (0.0, 1.0),
                 label_smoothing: float = 0.0):
        if attack not in _ATTACKS:
            raise ValueError(f"attack must be one of {_ATTACKS}, got {attack!r}")
        self.attack = attack
        self.eps = _check_positive(eps, "eps")
        self.alpha = self.eps / 4 if alpha is None else _check_positive(alpha, "alpha")
        self.steps = _check_int(steps, "steps")
        self.random_start = bool(random_start)
        self.clamp = _check_clamp(clamp)
        try:
            self.label_smoothing = _check_alpha(label_smoothing)
        except ValueError:
            raise ValueError(f"label_smoothing (the paper's α) must lie in [0, (k−1)/k], "
                             f"got {label_smoothing!r}") from None
        ls = f",α_LS={self.label_smoothing:g}" if self.label_smoothing else ""
        self.name = f"aug-{attack}(ε={self.eps:.4g}{ls})"

    def transform(self, x: Tensor, y: Tensor, *, indices: Tensor, groups: Tensor | None,
                  model: torch.nn.Module) -> list:
        if self.attack == "fgsm":
            x_adv = fgsm_attack(model, x, y, eps=self.eps, clamp=self.clamp)
        else:
            x_adv = pgd_attack(model, x, y, eps=self.eps, alpha=self.alpha, steps=self.steps,
                               norm="linf" if self.attack == "pgd" else "l2", random_start=self.random_start,
                               clamp=self.clamp, generator=self.generator)
        target = y
        if self.label_smoothing:
            target = smoothed_targets(y, _num_classes_of(model), self.label_smoothing, dtype=x.dtype)
        return [(x_adv, target, groups), (x, target, groups)]


# --------------------------------------------------------------------------- Bayesian optimisation


#: The paper's 4-D search space (§4.2): name → (type, low, high). Keys are the GI-LS arguments
#: ``alpha``, ``steps`` (T), ``eta`` and the number of ``epochs``. Copy and override entries for
#: narrower ranges, e.g. ``{**GILS_SEARCH_SPACE, "epochs": ("int", 2, 6)}``.
GILS_SEARCH_SPACE: Mapping[str, tuple] = MappingProxyType({
    "alpha": ("float", 0.0, 0.5),
    "steps": ("int", 1, 15),
    "eta": ("float", 1.5, 3.0),
    "epochs": ("int", 21, 60),
})

_SAMPLERS = ("gp", "tpe", "random")


def _import_optuna():
    try:
        import optuna
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("dro_lab.smoothing.tune needs optuna: pip install 'dro-lab[bo]' "
                          "(or pip install optuna)") from err
    return optuna


def _check_space(space: Mapping) -> dict:
    """Validate entries: (``"float"``|``"int"``|``"logfloat"``, low, high), (``"categorical"``, choices), or a fixed value."""
    if not isinstance(space, Mapping):
        raise TypeError(f"space must be a mapping name -> spec, got {type(space).__name__}")
    if not space:
        raise ValueError("space is empty: name at least one parameter to tune")
    out = {}
    for name, spec in space.items():
        if isinstance(spec, tuple) and spec and spec[0] in ("float", "int", "logfloat"):
            if len(spec) != 3 or not spec[1] <= spec[2]:
                raise ValueError(f"space[{name!r}] must be (type, low, high) with low ≤ high, got {spec!r}")
            if spec[0] == "int" and not all(isinstance(v, numbers.Integral) for v in spec[1:]):
                raise ValueError(f"space[{name!r}]: integer bounds needed, got {spec!r}")
        elif isinstance(spec, tuple) and spec and spec[0] == "categorical":
            if len(spec) != 2 or not len(spec[1]):
                raise ValueError(f"space[{name!r}] must be ('categorical', choices), got {spec!r}")
        out[name] = spec
    return out


def _suggest(trial, name: str, spec):
    if not isinstance(spec, tuple) or not spec or spec[0] not in ("float", "int", "logfloat", "categorical"):
        return spec  # a fixed value, passed through
    if spec[0] == "int":
        return int(trial.suggest_int(name, int(spec[1]), int(spec[2])))
    if spec[0] == "categorical":
        return trial.suggest_categorical(name, list(spec[1]))
    return float(trial.suggest_float(name, float(spec[1]), float(spec[2]), log=spec[0] == "logfloat"))


def tune(objective: Callable[[dict], float], space: Mapping = GILS_SEARCH_SPACE, *, n_trials: int,
         sampler: str = "gp", seed: int = 0, n_startup_trials: int | None = None, direction: str = "maximize",
         verbose: bool = False):
    r"""Bayesian optimisation of hyper-parameters with optuna (the paper's §4.2, with a validation split).

    ``objective(params) -> float`` receives a dict of suggested values (``space``'s names; ints for
    ``"int"`` entries; fixed entries passed through) and returns the score to maximise. **The caller
    trains on a training split and scores on a VALIDATION split** carved from the training data: the
    paper maximised test accuracy and reported the best of its 20 test evaluations (an optimistic,
    selection-biased number, spec pitfall 13). Evaluate the chosen parameters on the test split once,
    afterwards.

    Args:
        objective: ``params -> score``.
        space: name → ``("float"|"int"|"logfloat", low, high)``, ``("categorical", choices)`` or a
            fixed value; default :data:`GILS_SEARCH_SPACE` (α ∈ [0, 0.5], T ∈ {1..15}, η ∈ [1.5, 3],
            epochs ∈ {21..60}).
        n_trials: the budget (the paper: 20 full trainings).
        sampler: ``"gp"`` (:class:`optuna.samplers.GPSampler`, a Matérn-5/2 GP with a log-EI
            acquisition: the closest to the paper's Ax set-up), ``"tpe"``
            (:class:`optuna.samplers.TPESampler`) or ``"random"``.
        seed: the sampler's seed (same seed and deterministic objective → same study).
        n_startup_trials: random trials before the model-based proposals; ``None`` takes
            ``min(10, max(1, n_trials // 3))`` — optuna's own default of 10 would make a study of ≤ 10 trials
            pure random search (the paper's Ax uses a few Sobol points; ignored by ``"random"``).
        direction: ``"maximize"`` (accuracy, the default) or ``"minimize"``.
        verbose: keep optuna's per-trial log lines (silenced to WARNING by default).

    Returns:
        The :class:`optuna.Study`: ``study.best_params``, ``study.best_value``, ``study.trials_dataframe()``
        and ``optuna.visualization`` plots (history, importances, contours) all apply.
    """
    optuna = _import_optuna()
    if not callable(objective):
        raise TypeError(f"objective must be callable params -> float, got {type(objective).__name__}")
    n_trials = _check_int(n_trials, "n_trials")
    if sampler not in _SAMPLERS:
        raise ValueError(f"sampler must be one of {_SAMPLERS}, got {sampler!r}")
    if direction not in ("maximize", "minimize"):
        raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
    space = _check_space(space)
    startup = {"n_startup_trials": min(10, max(1, n_trials // 3)) if n_startup_trials is None
               else _check_int(n_startup_trials, "n_startup_trials")}
    if not verbose:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
    if sampler == "gp":
        chosen = optuna.samplers.GPSampler(seed=seed, **startup)
    elif sampler == "tpe":
        chosen = optuna.samplers.TPESampler(seed=seed, **startup)
    else:
        chosen = optuna.samplers.RandomSampler(seed=seed)
    study = optuna.create_study(direction=direction, sampler=chosen)

    def run_trial(trial) -> float:
        params = {name: _suggest(trial, name, spec) for name, spec in space.items()}
        return float(objective(params))

    study.optimize(run_trial, n_trials=n_trials)
    return study


def best_at_bounds(study, space: Mapping = GILS_SEARCH_SPACE) -> list[str]:
    """The names of the best trial's parameters that sit on an edge of ``space`` (spec pitfall 18: widen the box)."""
    best = study.best_params
    return [name for name, spec in space.items()
            if isinstance(spec, tuple) and spec and spec[0] in ("float", "int", "logfloat") and name in best
            and (math.isclose(best[name], spec[1], abs_tol=1e-9) or math.isclose(best[name], spec[2], abs_tol=1e-9))]
