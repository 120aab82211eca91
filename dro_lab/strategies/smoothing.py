r"""Label-smoothing DRO ("GI-LS"), the data-mixing and attack baselines, and Bayesian optimisation.

GI-LS (Wang et al., 2024, §3.3 and Algorithm 1) is Volpi et al.'s adversarial data augmentation
with label-smoothed cross-entropy in both the inner maximisation and the outer minimisation:

* **Inner step** (:func:`gils_shift`): T steps of gradient *ascent* on the input pixels of the
  per-sample objective :math:`\ell_\alpha(\theta;(x^t,y)) - \gamma\cdot\tfrac12\|f(x^t)-f(x)\|_2^2`
  with raw gradient steps of size η, where ``f`` is the penultimate feature map
  (``model.penultimate``). The anchors :math:`f(x)` are computed once and detached, the model is in
  eval mode while generating, and the inputs stay in the data range.
* **Outer step** (:class:`GILSStrategy` through :func:`dro_lab.fit`): one SGD step on the generated
  batch, then one on the original batch, both with the LS loss (our minibatch reading of Algorithm 1,
  which prints its two θ-updates outside the loop over samples).

Conventions: LS as in :mod:`dro_lab.losses` (the paper's eq. 3, α ∈ [0, (k−1)/k]); the ascent objective
is the per-sample *sum* over the batch and the transport cost ½‖·‖² summed over the features; the ascent
uses autograd, so it is a true ascent (the printed eq. 16 has the wrong sign); η is a raw-gradient step on
the inputs' scale, 0.02 by default (:func:`gils_shift` says why); T = 0 is plain label smoothing.

The baselines of the paper's Tables 5–6 run through the same engine: :class:`LabelSmoothingStrategy`
(GI-LS with T = 0), :class:`MixupStrategy`, :class:`CutMixStrategy`, :class:`CutoutStrategy` and
:class:`AttackAugmentStrategy` (FGSM / PGD / PGD-L2 as training-time augmentation). Plain CE is
:class:`dro_lab.ERM`. Every random draw comes from the strategy's generator (seeded by ``fit``).

:func:`tune` runs the paper's Bayesian optimisation over (α, T, η, epochs) with optuna
(``pip install dro-lab[bo]``); its Gaussian-process sampler is the closest to the paper's
Matérn-5/2 GP in Ax.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .._validation import check_bounds, check_int, check_number
from ..attacks import fgsm_attack, gils_shift, pgd_attack
from ..data.transforms import cutmix_batch, cutout_batch, mixup_batch
from ..engine.strategy import Batch, Strategy
from ..losses import check_ls_alpha, smoothed_targets
from ..models import num_classes_of

__all__ = [
    "GILSStrategy",
    "LabelSmoothingStrategy",
    "MixupStrategy",
    "CutMixStrategy",
    "CutoutStrategy",
    "AttackAugmentStrategy",
]


_OUTER_MODES = ("sequential", "joint", "generated")


_ATTACKS = ("fgsm", "pgd", "pgd-l2")


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
    r"""GI-LS through :func:`dro_lab.fit` (Algorithm 1): regenerate the batch by :func:`gils_shift`, train with LS.

    :meth:`transform` shifts the drawn batch (from the real data at every step, as Algorithm 1 restarts from
    :math:`X_i`) and returns its LS targets, so ``fit``'s default cross-entropy *is* the LS loss (a custom
    ``loss_fn`` must accept ``(b, k)`` soft targets).
    ``outer`` picks the outer update:

    * ``"sequential"`` (the paper's, the default): two SGD steps per drawn batch, the generated batch
      then the original one, the second at the updated parameters θ′ (Algorithm 1's last two lines);
    * ``"joint"``: one step on the concatenation (half the updates; a variant);
    * ``"generated"``: one step on the generated batch only (Sinha/Volpi's inner-outer form).

    ``steps=0`` means no shift: whatever ``outer``, one LS step per drawn batch, exactly
    :class:`LabelSmoothingStrategy`. Per epoch, the history records ``gils_transport_cost`` (the mean
    realised ½‖f(x^T) − f(x)‖²), ``gils_input_shift`` (the mean ‖x^T − x‖₂) and ``gils_relative_shift``
    (the mean ‖x^T − x‖₂ / ‖x‖₂ per example; an all-zero image counts its absolute shift).

    Args:
        alpha, gamma, eta, steps, clamp: as in :func:`gils_shift`. Defaults: the paper's γ = 1e-3, α = 0.3
            and T = 10 (about the medians of its Table 3), and η = 0.02 for inputs in [0, 1], not the paper's
            1.5–3 (§4.2, ImageNet-pretrained ResNets), which moves small images by 30–40 % of their norm.
        outer: ``"sequential"``, ``"joint"`` or ``"generated"``.

    Example:
        >>> strategy = GILSStrategy(steps=2, clamp=None)  # inputs not in [0, 1]
        >>> history = fit(LogisticRegression(2, 2), make_minority_blobs(100)[0], strategy=strategy, progress=False)
        >>> history["gils_relative_shift"][-1] > 0  # the generated inputs moved
        True
    """

    def __init__(
        self,
        alpha: float = 0.3,
        gamma: float = 1e-3,
        eta: float = 0.02,
        steps: int = 10,
        *,
        outer: str = "sequential",
        clamp: tuple[float, float] | None = (0.0, 1.0),
    ):
        if outer not in _OUTER_MODES:
            raise ValueError(f"outer must be one of {_OUTER_MODES}, got {outer!r}")
        self.alpha = check_ls_alpha(alpha)
        self.gamma = check_number(gamma, "gamma", low=0)
        self.eta = check_number(eta, "eta", low=0, low_open=True)
        self.steps = check_int(steps, "steps", low=0)
        self.outer = outer
        self.clamp = check_bounds(clamp)
        tag = "" if outer == "sequential" else f",{outer}"
        self.name = f"gi-ls(α={self.alpha:g},T={self.steps},η={self.eta:g},γ={self.gamma:g}{tag})"
        self._reset_stats()

    def setup(self, n: int, **context) -> None:
        super().setup(n, **context)
        if self.model is not None and num_classes_of(self.model) is not None:
            check_ls_alpha(self.alpha, num_classes_of(self.model))
        self._reset_stats()

    def generate(self, x: Tensor, y: Tensor, model: torch.nn.Module) -> tuple[Tensor, Tensor]:
        """The shifted batch and its per-sample transport costs (records the epoch statistics)."""
        x_gen, cost = gils_shift(
            model, x, y, alpha=self.alpha, gamma=self.gamma, eta=self.eta, steps=self.steps, clamp=self.clamp
        )
        shift = (x_gen - x).flatten(1).norm(dim=1)
        size = x.flatten(1).norm(dim=1)
        relative = torch.where(size > 0, shift / size.clamp_min(torch.finfo(size.dtype).tiny), shift)
        self._add_stats(gils_transport_cost=cost, gils_input_shift=shift, gils_relative_shift=relative)
        return x_gen, cost

    def transform(
        self, x: Tensor, y: Tensor, *, indices: Tensor, groups: Tensor | None, model: torch.nn.Module
    ) -> list[Batch]:
        soft = smoothed_targets(y, num_classes_of(model), self.alpha, dtype=x.dtype if x.is_floating_point() else None)
        x_gen, _ = self.generate(x, y, model)
        if self.steps == 0:  # no shift: plain label smoothing, one step on the drawn batch (every outer mode)
            return [Batch(x, soft, groups)]
        if self.outer == "generated":
            return [Batch(x_gen, soft, groups)]
        if self.outer == "joint":
            both_groups = None if groups is None else torch.cat([groups, groups])
            return [Batch(torch.cat([x_gen, x]), torch.cat([soft, soft]), both_groups)]
        return [Batch(x_gen, soft, groups), Batch(x, soft, groups)]


class LabelSmoothingStrategy(Strategy):
    """Plain label smoothing with the paper's convention (GI-LS with T = 0): LS targets, one step per batch.

    Args:
        alpha: the paper's α, in [0, (k−1)/k].
    """

    def __init__(self, alpha: float = 0.1):
        self.alpha = check_ls_alpha(alpha)
        self.name = f"ls(α={self.alpha:g})"

    def transform(
        self, x: Tensor, y: Tensor, *, indices: Tensor, groups: Tensor | None, model: torch.nn.Module
    ) -> list[Batch]:
        k = num_classes_of(model)
        if k is None:
            raise TypeError("LabelSmoothingStrategy needs model.classifier.out_features (the number of classes)")
        return [Batch(x, smoothed_targets(y, k, self.alpha, dtype=x.dtype if x.is_floating_point() else None), groups)]


class _MixStrategy(_MeanStats, Strategy):
    """A strategy that mixes each drawn batch with a permutation of itself (one optimizer step)."""

    def __init__(self, beta_param: float = 1.0):
        self.beta_param = check_number(beta_param, "beta_param", low=0, low_open=True)
        self.name = f"{self.kind}(a={self.beta_param:g})"
        self._reset_stats()

    def transform(
        self, x: Tensor, y: Tensor, *, indices: Tensor, groups: Tensor | None, model: torch.nn.Module
    ) -> list[Batch]:
        x_mix, soft, lam = self.mix(x, y, num_classes_of(model))[:3]
        self._add_stats(mix_lambda=torch.tensor([lam]))
        return [Batch(x_mix, soft, groups)]


class MixupStrategy(_MixStrategy):
    """Mixup through :func:`dro_lab.fit` (:func:`mixup_batch`): mixed inputs and soft targets; records the mean λ.

    Args:
        beta_param: a > 0 of λ ∼ Beta(a, a).
    """

    kind = "mixup"

    def mix(self, x, y, k):
        return mixup_batch(x, y, k, beta_param=self.beta_param, generator=self.generator)


class CutMixStrategy(_MixStrategy):
    """CutMix through :func:`dro_lab.fit` (:func:`cutmix_batch`): a pasted box, labels mixed by area.

    Args:
        beta_param: a > 0 of λ ∼ Beta(a, a).
    """

    kind = "cutmix"

    def mix(self, x, y, k):
        return cutmix_batch(x, y, k, beta_param=self.beta_param, generator=self.generator)


class CutoutStrategy(Strategy):
    """Cutout through :func:`dro_lab.fit` (:func:`cutout_batch`): one zeroed square per image, labels unchanged.

    Args:
        size: the square's side in pixels (default half the image side: DeVries & Taylor's 16 px on 32 px CIFAR).
    """

    def __init__(self, size: int | None = None):
        self.size = None if size is None else check_int(size, "size")
        self.name = f"cutout(size={self.size})" if size is not None else "cutout"

    def transform(
        self, x: Tensor, y: Tensor, *, indices: Tensor, groups: Tensor | None, model: torch.nn.Module
    ) -> list[Batch]:
        size = self.size if self.size is not None else max(1, x.shape[-1] // 2)
        return [Batch(cutout_batch(x, size=size, generator=self.generator)[0], y, groups)]


class AttackAugmentStrategy(Strategy):
    r"""Adversarial examples as training-time augmentation (the paper's Table 6): two steps per batch.

    :meth:`transform` returns ``[(x_adv, y), (x, y)]``: one SGD step on the attacked batch, then one
    on the original batch (as GI-LS's outer update), with the clean test set for evaluation. Attacks
    (dro_lab's own, the model in eval mode): ``"fgsm"`` (:func:`dro_lab.fgsm_attack`), ``"pgd"`` (L∞)
    and ``"pgd-l2"`` (:func:`dro_lab.pgd_attack`, sign / normalised steps, random start drawn from the
    strategy's generator).

    Args:
        attack: ``"fgsm"``, ``"pgd"`` or ``"pgd-l2"``.
        eps: ε (the paper, §4.3, states only "8/225", read as the usual 8/255).
        alpha, steps: the PGD step (default ε/4, torchattacks' 2/255 for ε = 8/255) and steps.
        random_start, clamp: as in :func:`dro_lab.pgd_attack`.
        label_smoothing: the paper's α: both steps train on LS targets.
    """

    def __init__(
        self,
        attack: str = "pgd",
        eps: float = 8 / 255,
        *,
        alpha: float | None = None,
        steps: int = 10,
        random_start: bool = True,
        clamp: tuple[float, float] | None = (0.0, 1.0),
        label_smoothing: float = 0.0,
    ):
        if attack not in _ATTACKS:
            raise ValueError(f"attack must be one of {_ATTACKS}, got {attack!r}")
        self.attack = attack
        self.eps = check_number(eps, "eps", low=0, low_open=True)
        self.alpha = self.eps / 4 if alpha is None else check_number(alpha, "alpha", low=0, low_open=True)
        self.steps = check_int(steps, "steps")
        self.random_start = bool(random_start)
        self.clamp = check_bounds(clamp)
        try:
            self.label_smoothing = check_ls_alpha(label_smoothing)
        except ValueError:
            raise ValueError(
                f"label_smoothing (the paper's α) must lie in [0, (k−1)/k], got {label_smoothing!r}"
            ) from None
        ls = f",α_LS={self.label_smoothing:g}" if self.label_smoothing else ""
        self.name = f"aug-{attack}(ε={self.eps:.4g}{ls})"

    def transform(
        self, x: Tensor, y: Tensor, *, indices: Tensor, groups: Tensor | None, model: torch.nn.Module
    ) -> list[Batch]:
        if self.attack == "fgsm":
            x_adv = fgsm_attack(model, x, y, eps=self.eps, clamp=self.clamp)
        else:
            x_adv = pgd_attack(
                model,
                x,
                y,
                eps=self.eps,
                alpha=self.alpha,
                steps=self.steps,
                norm="linf" if self.attack == "pgd" else "l2",
                random_start=self.random_start,
                clamp=self.clamp,
                generator=self.generator,
            )
        target = y
        if self.label_smoothing:
            target = smoothed_targets(y, num_classes_of(model), self.label_smoothing, dtype=x.dtype)
        return [Batch(x_adv, target, groups), Batch(x, target, groups)]
