r"""Adversarial examples: FGSM and PGD (sign / GD / Adam steps, L∞ and L2) and robust evaluation (PGD, APGD, AutoAttack).

Attacks follow torchattacks' habits: the model is put in eval mode during the attack and its
train/eval mode restored afterwards, inputs stay in the valid range, gradients are taken w.r.t. the
input only, and the returned examples are detached, on the inputs' device and dtype. The APGD /
AutoAttack rows of :func:`robust_accuracy_report` use torchattacks itself (the ``attacks`` extra).
"""

from __future__ import annotations

import math
import numbers
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from .utils import check_int as _check_int

__all__ = ["fgsm_attack", "pgd_attack", "robust_accuracy_report"]


def fgsm_attack(model: torch.nn.Module, x: Tensor, y: Tensor, *, eps: float,
                loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
                clamp: tuple[float, float] | None = (0.0, 1.0)) -> Tensor:
    r"""Fast gradient sign method (Goodfellow et al., 2015): :math:`x' = \mathrm{clip}(x + \varepsilon\,\mathrm{sign}\nabla_x \ell(f(x), y))`.

    Args:
        model: maps inputs to logits; evaluated in eval mode (restored afterwards).
        x, y: a batch of inputs and labels.
        eps: the L∞ budget ε ≥ 0 (0 returns ``x``).
        loss_fn: ``(logits, y) -> scalar``; default the mean cross-entropy (the sign does not care about the scale).
        clamp: the valid input range, or ``None`` for none.
    """
    _check_model(model)
    eps = _check_eps(eps)
    clamp = _check_clamp(clamp)
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y must have the same batch size, got {x.shape[0]} and {y.shape[0]}")
    if x.device != y.device:
        raise ValueError(f"x and y must be on one device, got x on {x.device} and y on {y.device}")
    if eps == 0:
        return x.detach().clone()
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            x_adv = x.detach().clone().requires_grad_(True)
            logits = model(x_adv)
            loss = loss_fn(logits, y) if loss_fn is not None else F.cross_entropy(logits, y)
            (grad,) = torch.autograd.grad(loss, x_adv)
    finally:
        model.train(was_training)
    out = x.detach() + eps * grad.sign()
    if clamp is not None:
        out = out.clamp(*clamp)
    return out.detach()


_NORMS = ("linf", "l2")
_STEP_RULES = ("sign", "gd", "adam")
_ADAM_BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults, also its eps = 1e-8
_L2_DIVISION_EPS = 1e-10  # torchattacks.PGDL2's eps_for_division, so the two agree to rounding


def _check_model(model) -> None:
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module mapping inputs to logits, got {type(model).__name__}")


def _check_eps(eps) -> float:
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not (eps >= 0 and math.isfinite(eps)):
        raise ValueError(f"eps must be a finite number ≥ 0, got {eps!r}")
    return float(eps)


def _check_positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _check_choice(value, name: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def _check_clamp(clamp) -> tuple[float, float] | None:
    if clamp is None:
        return None
    try:
        lo, hi = (float(c) for c in clamp)
    except (TypeError, ValueError):
        raise ValueError(f"clamp must be None or a pair (low, high), got {clamp!r}") from None
    if not lo < hi:
        raise ValueError(f"clamp must satisfy low < high, got {clamp!r}")
    return lo, hi


def _model_device(model: torch.nn.Module, fallback: torch.device) -> torch.device:
    param = next(model.parameters(), None)
    return param.device if param is not None else fallback


def _per_sample_norm(t: Tensor) -> Tensor:
    """L2 norm of each sample, shaped to broadcast against ``t``."""
    return t.reshape(t.shape[0], -1).norm(p=2, dim=1).reshape(-1, *([1] * (t.dim() - 1)))


def _random_start(x: Tensor, eps: float, norm: str, generator: torch.Generator | None) -> Tensor:
    """δ⁰ uniform in the ε-ball: U[−ε, ε] per coordinate (L∞), or uniform in the L2 ball (direction × ε·U^{1/d})."""
    device = generator.device if generator is not None else x.device
    if norm == "linf":
        u = torch.rand(x.shape, generator=generator, device=device, dtype=x.dtype)
        return ((2 * u - 1) * eps).to(x.device)
    d = x[0].numel()
    direction = torch.randn(x.shape, generator=generator, device=device, dtype=x.dtype)
    radius = torch.rand((x.shape[0],), generator=generator, device=device, dtype=x.dtype) ** (1.0 / d)
    direction = direction / _per_sample_norm(direction).clamp_min(torch.finfo(x.dtype).tiny)
    return (direction * eps * radius.reshape(-1, *([1] * (x.dim() - 1)))).to(x.device)


def _project(x_adv: Tensor, x: Tensor, eps: float, norm: str, clamp: tuple[float, float] | None) -> Tensor:
    """Π onto the ε-ball around ``x``, then onto the valid range (pitfall 8), as torchattacks does.

    L∞: the two coordinate-wise clamps give the exact projection onto the intersection. L2: the
    ball projection (rescaling δ) then the range clamp, which only shrinks |δ_j| (``x`` is inside
    the range), so the result stays in both sets.
    """
    delta = x_adv - x
    if norm == "linf":
        delta = delta.clamp(-eps, eps)
    else:
        factor = torch.clamp(eps / _per_sample_norm(delta), max=1.0)  # δ = 0 gives ε/0 = inf → 1
        delta = delta * factor
    out = x + delta
    return out.clamp(*clamp) if clamp is not None else out


def _adversarial_loss(loss_fn, logits: Tensor, y: Tensor) -> Tensor:
    loss = loss_fn(logits, y) if loss_fn is not None else F.cross_entropy(logits, y, reduction="none")
    return loss.sum() if loss.dim() > 0 else loss


def pgd_attack(model: torch.nn.Module, x: Tensor, y: Tensor, *, eps: float, alpha: float, steps: int,
               norm: str = "linf", random_start: bool = True, step_rule: str = "sign",
               loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
               clamp: tuple[float, float] | None = (0.0, 1.0), generator: torch.Generator | None = None,
               return_kappa: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    r"""Projected gradient ascent on the loss in an ε-ball (Madry et al., 2018), with three step rules.

    .. math::
        x^0 = \Pi(x + \delta^0),\qquad x^{k} = \Pi\big(x^{k-1} + \text{step}(\nabla_x L(x^{k-1}))\big),
        \quad k = 1..K,

    where :math:`L = \sum_i \ell(f(x_i), y_i)` (per-sample losses are summed, so each example's
    gradient does not depend on the batch size) and :math:`\Pi` projects onto the ε-ball around
    ``x`` *and then* onto the valid range ``clamp`` after every step (spec pitfall 8). Step rules:

    - ``"sign"`` (PGD): :math:`\alpha\,\mathrm{sign}(g)` for L∞, :math:`\alpha\,g/(\|g\|_2+10^{-10})`
      per sample for L2 (torchattacks' ``PGD`` / ``PGDL2``; same start → same iterates).
    - ``"gd"`` (DONE-GD's inner solver): the raw step :math:`\alpha\,g` on the summed loss; the
      per-pixel gradients are small, so α is large (the DONE code-base uses 5000/255, pitfall 12).
    - ``"adam"`` (DONE-ADAM's inner solver): :class:`torch.optim.Adam` ascent (``maximize=True``)
      on the adversarial input with ``lr=alpha``, betas (0.9, 0.999), eps 1e-8, no weight decay,
      projected after each step; its first step is ≈ α·sign(g).

    The start :math:`\delta^0` is 0 when ``random_start`` is false; otherwise uniform in the
    ε-ball: U[−ε, ε] per coordinate for L∞, and for L2 a uniform direction times radius
    :math:`\varepsilon U^{1/d}` (truly uniform in the ball, unlike torchattacks' PGDL2, whose
    radius is ε·U). It is drawn from ``generator`` (the global RNG only when it is ``None``, as
    torch's samplers do), then clipped to the valid range.

    The model runs in eval mode (its train/eval mode is restored afterwards, also on errors);
    gradients are taken w.r.t. the input only (``torch.autograd.grad``), so parameters' ``.grad``
    are untouched; grad is enabled inside, so the attack works under ``torch.no_grad()``
    (pitfall 7). Computation runs on the model's device.

    Args:
        model: maps inputs to logits.
        x, y: a batch of inputs and labels (same length).
        eps: the radius ε ≥ 0 of the ball (0 returns ``x``).
        alpha: the step size α > 0 (the learning rate for ``"adam"``).
        steps: the number K ≥ 1 of steps.
        norm: ``"linf"`` or ``"l2"``.
        random_start: start uniformly in the ball (``True``) or at ``x``.
        step_rule: ``"sign"``, ``"gd"`` or ``"adam"``.
        loss_fn: ``(logits, y) -> per-sample losses`` (summed) or a scalar (used as is); default
            the per-sample cross-entropy.
        clamp: the valid input range ``(low, high)``, or ``None`` for none.
        generator: a :class:`torch.Generator` for the random start.
        return_kappa: also return κ (int64, per sample): the number of the K iterations at whose
            start the model still classified the current adversarial input correctly (GAIRAT's κ,
            as counted by the official GAIRAT code; 0 ≤ κ ≤ K).

    Returns:
        The adversarial inputs, detached, on ``x``'s device and dtype; with ``return_kappa``, the
        pair ``(x_adv, kappa)``.

    Raises:
        ValueError: a bad ``eps``, ``alpha``, ``steps``, ``norm``, ``step_rule``, ``clamp``, or
            ``x`` and ``y`` of different lengths.
    """
    _check_model(model)
    eps = _check_eps(eps)
    alpha = _check_positive(alpha, "alpha")
    steps = _check_int(steps, "steps")
    _check_choice(norm, "norm", _NORMS)
    _check_choice(step_rule, "step_rule", _STEP_RULES)
    clamp = _check_clamp(clamp)
    if y.dim() == 0 or x.dim() == 0 or x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y must have the same batch size, got shapes {tuple(x.shape)} and {tuple(y.shape)}")
    if return_kappa and y.dim() != 1:
        raise ValueError(f"return_kappa needs class labels y of shape (n,), got {tuple(y.shape)}")

    device = _model_device(model, x.device)
    x0, y0 = x.detach().to(device), y.detach().to(device)
    kappa = torch.zeros(x.shape[0], dtype=torch.int64, device=device)
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            if eps == 0:  # nothing to search; κ still counts the K (identical) iterations
                if return_kappa:
                    with torch.no_grad():
                        kappa += steps * (model(x0).argmax(1) == y0).long()
                x_adv = x0
            else:
                x_adv = x0.clone()
                if random_start:
                    x_adv = _project(x0 + _random_start(x0, eps, norm, generator), x0, eps, norm, clamp)
                x_adv = x_adv.detach().requires_grad_(True)
                optimizer = torch.optim.Adam([x_adv], lr=alpha, betas=_ADAM_BETAS, maximize=True) \
                    if step_rule == "adam" else None
                for _ in range(steps):
                    logits = model(x_adv)
                    if return_kappa:
                        kappa += (logits.detach().argmax(1) == y0).long()
                    (grad,) = torch.autograd.grad(_adversarial_loss(loss_fn, logits, y0), x_adv)
                    with torch.no_grad():
                        if optimizer is not None:
                            x_adv.grad = grad
                            optimizer.step()
                            x_adv.grad = None
                            x_adv.copy_(_project(x_adv, x0, eps, norm, clamp))
                        else:
                            if step_rule == "gd":
                                step = alpha * grad
                            elif norm == "linf":
                                step = alpha * grad.sign()
                            else:
                                step = alpha * grad / (_per_sample_norm(grad) + _L2_DIVISION_EPS)
                            x_adv = _project(x_adv.detach() + step, x0, eps, norm, clamp).requires_grad_(True)
    finally:
        model.train(was_training)
    out = x_adv.detach().to(device=x.device, dtype=x.dtype)
    if out is x or out.data_ptr() == x.data_ptr():
        out = out.clone()
    return (out, kappa.to(x.device)) if return_kappa else out


# --------------------------------------------------------------------------- robust evaluation

_REPORT_ATTACKS = ("pgd", "fgsm", "apgd-ce", "apgd-dlr", "autoattack")


def _import_torchattacks():
    try:
        import torchattacks
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the APGD / AutoAttack evaluations need torchattacks; install the 'attacks' extra: "
            "pip install 'dro-lab[attacks]'"
        ) from err
    return torchattacks


class _FrozenImageModel(torch.nn.Module):
    """``model`` seen by torchattacks: 4-D inputs (APGD assumes images), detached parameters.

    Inputs of any shape ``(n, *s)`` are passed to torchattacks as ``(n, 1, 1, prod(s))`` and reshaped
    back here; the parameters are detached in the forward (``torch.func.functional_call``), so attacks
    that call ``.backward()`` (FAB) cannot write into ``.grad``.
    """

    def __init__(self, model: torch.nn.Module, sample_shape: torch.Size):
        super().__init__()
        self.model = model
        self.sample_shape = tuple(sample_shape)

    def forward(self, x: Tensor) -> Tensor:
        params = {name: p.detach() for name, p in self.model.named_parameters()}
        x = x.reshape(x.shape[0], *self.sample_shape)
        return torch.func.functional_call(self.model, params, (x,))


def _torchattacks_attack(model: torch.nn.Module, x: Tensor, y: Tensor, *, name: str, eps: float, steps: int,
                         norm: str, seed: int, num_classes: int) -> Tensor:
    """Adversarial inputs from torchattacks' APGD-CE / APGD-DLR / an AutoAttack ensemble; the global RNG untouched."""
    torchattacks = _import_torchattacks()
    wrapped = _FrozenImageModel(model, x.shape[1:])
    ta_norm = "Linf" if norm == "linf" else "L2"
    common = dict(norm=ta_norm, eps=eps, seed=seed)
    if name == "autoattack":  # AutoAttack's standard list, plus untargeted APGD-DLR; each on the survivors
        atk = torchattacks.MultiAttack([
            torchattacks.APGD(wrapped, steps=steps, loss="ce", **common),
            torchattacks.APGD(wrapped, steps=steps, loss="dlr", **common),
            torchattacks.APGDT(wrapped, steps=steps, n_classes=num_classes, **common),
            torchattacks.FAB(wrapped, multi_targeted=True, n_classes=num_classes, **common),
            torchattacks.Square(wrapped, n_queries=5000, **common),
        ])
    else:
        atk = torchattacks.APGD(wrapped, steps=steps, loss=name.removeprefix("apgd-"), **common)
    devices = [x.device] if x.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):  # torchattacks reseeds the global RNG (manual_seed)
        x4 = x.reshape(x.shape[0], 1, 1, -1)
        adv = atk(x4, y)
    return adv.reshape(x.shape).to(x.dtype).detach()


def _tail_mean(values: list[float], fraction: float) -> float:
    finite = sorted(v for v in values if v == v)
    if not finite:
        return float("nan")
    m = max(1, math.ceil(round(fraction * len(finite), 9)))  # round: 0.3 * 10 must give 3, not 4
    return sum(finite[:m]) / m


def robust_accuracy_report(model: torch.nn.Module, dataset, *, attack: str = "pgd", eps: float,
                           alpha: float | None = None, steps: int = 20, norm: str = "linf", batch_size: int = 256,
                           generator: torch.Generator | None = None, tail_fraction: float = 0.3) -> dict:
    r"""Clean and robust accuracy of ``model`` on ``dataset`` under one attack: SA, RA, worst-class RA, RA-Tail.

    The paper's metrics (DONE spec §4.1): SA = clean accuracy, RA-PGD = accuracy under PGD-20,
    RA-AA = accuracy under AutoAttack, RA-Tail-30 = the mean robust accuracy of the
    :math:`m = \lceil 0.3\,k\rceil` worst classes (``tail_fraction`` = 0.3; 10 classes → 3, 43 → 13;
    classes absent from the data are left out of k). An example counts as robust only if it is
    classified correctly both clean and on its adversarial input (as AutoAttack counts it), so
    robust accuracy ≤ clean accuracy.

    Attacks (``attack``):

    - ``"pgd"``: :func:`pgd_attack` with ``steps`` steps (PGD-20 by default), step α = ε/4 unless
      ``alpha`` is given, and **no random start** (the DONE code-base draws one only with more
      than one restart; with 1 restart the evaluation is deterministic).
    - ``"fgsm"``: :func:`fgsm_attack` (L∞ only).
    - ``"apgd-ce"`` / ``"apgd-dlr"``: torchattacks' ``APGD`` with ``steps`` iterations, 1 restart,
      the cross-entropy or the DLR loss (DLR needs ≥ 3 classes).
    - ``"autoattack"``: the worst case per example over AutoAttack's standard ensemble (Croce &
      Hein, 2020) built from torchattacks' parts with ``torchattacks.MultiAttack`` (each attack
      runs on the examples that survived the previous ones): APGD-CE, APGD-DLR, APGD-T (targeted
      DLR, k − 1 targets), all with ``steps`` iterations, then FAB-T (torchattacks' defaults) and
      Square (5000 queries). The original AutoAttack uses 100 APGD iterations: pass
      ``steps=100`` to match it (torchattacks' own ``AutoAttack`` class uses 10).

    torchattacks (the ``attacks`` extra) is imported only for the APGD / AutoAttack rows; its seed
    is drawn from ``generator`` (the global RNG when ``None``) and the global RNG state is restored
    afterwards. The model runs in eval mode; its train/eval mode is restored.

    Args:
        model: maps inputs (in the valid range [0, 1]) to logits.
        dataset: yields ``(x, y, index[, group])`` (see :func:`dro_lab.train.fetch_batch`).
        attack: one of ``"pgd"``, ``"fgsm"``, ``"apgd-ce"``, ``"apgd-dlr"``, ``"autoattack"``.
        eps: the budget ε ≥ 0 (0 gives robust = clean).
        alpha: PGD's step (default ε/4).
        steps: PGD / APGD iterations ≥ 1.
        norm: ``"linf"`` or ``"l2"``.
        batch_size: examples attacked at once.
        generator: randomness of the APGD / AutoAttack seeds.
        tail_fraction: the share of worst classes averaged into ``tail_robust_accuracy``, in (0, 1].

    Returns:
        ``clean_accuracy``, ``robust_accuracy``, ``per_class_clean_accuracy``,
        ``per_class_robust_accuracy`` (lists, ``nan`` for absent classes),
        ``worst_class_robust_accuracy``, ``tail_robust_accuracy``, and ``attack``, ``eps``, ``n``.
    """
    from .metrics import accuracy_report
    from .train import fetch_batch  # local import, as in dro_lab.metrics

    _check_model(model)
    _check_choice(attack, "attack", _REPORT_ATTACKS)
    eps = _check_eps(eps)
    steps = _check_int(steps, "steps")
    batch_size = _check_int(batch_size, "batch_size")
    _check_choice(norm, "norm", _NORMS)
    if attack == "fgsm" and norm != "linf":
        raise ValueError(f"norm must be 'linf' for attack='fgsm', got {norm!r}")
    alpha = eps / 4 if alpha is None else _check_positive(alpha, "alpha")
    if isinstance(tail_fraction, bool) or not isinstance(tail_fraction, numbers.Real) or not 0 < tail_fraction <= 1:
        raise ValueError(f"tail_fraction must be in (0, 1], got {tail_fraction!r}")
    n = len(dataset)
    if n == 0:
        raise ValueError("dataset must not be empty")

    device = _model_device(model, torch.device("cpu"))
    was_training = model.training
    model.eval()
    clean_pred, adv_pred, labels = [], [], []
    try:
        num_classes = None
        for start in range(0, n, batch_size):
            x, y, _, _ = fetch_batch(dataset, torch.arange(start, min(start + batch_size, n)))
            x, y = x.to(device), y.to(device)
            with torch.no_grad():
                logits = model(x)
            num_classes = num_classes or getattr(dataset, "num_classes", None) or logits.shape[1]
            if eps == 0:
                x_adv = x
            elif attack == "pgd":
                x_adv = pgd_attack(model, x, y, eps=eps, alpha=alpha, steps=steps, norm=norm, random_start=False)
            elif attack == "fgsm":
                x_adv = fgsm_attack(model, x, y, eps=eps)
            else:
                if attack == "apgd-dlr" and logits.shape[1] < 3:
                    raise ValueError(f"attack='apgd-dlr' needs at least 3 classes, the model has {logits.shape[1]}")
                seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator,
                                         device=generator.device if generator is not None else "cpu"))
                x_adv = _torchattacks_attack(model, x, y, name=attack, eps=eps, steps=steps, norm=norm, seed=seed,
                                             num_classes=logits.shape[1])
            with torch.no_grad():
                adv_logits = model(x_adv)
            clean_ok = logits.argmax(1) == y
            clean_pred.append(logits.argmax(1).cpu())
            # robust = right on the clean AND the adversarial input (AutoAttack's robust flags start
            # from clean correctness), so RA ≤ SA even if an attack happens to fix a mistake
            adv_pred.append(torch.where(clean_ok, adv_logits.argmax(1), -1).cpu())
            labels.append(y.cpu())
    finally:
        model.train(was_training)
    y_all = torch.cat(labels)
    clean = accuracy_report(torch.cat(clean_pred), y_all, num_classes=num_classes)
    robust = accuracy_report(torch.cat(adv_pred), y_all, num_classes=num_classes)
    return {
        "attack": attack,
        "eps": eps,
        "n": robust["n"],
        "clean_accuracy": clean["accuracy"],
        "robust_accuracy": robust["accuracy"],
        "per_class_clean_accuracy": clean["per_class_accuracy"],
        "per_class_robust_accuracy": robust["per_class_accuracy"],
        "worst_class_robust_accuracy": robust["worst_class_accuracy"],
        "tail_robust_accuracy": _tail_mean(robust["per_class_accuracy"], float(tail_fraction)),
    }
