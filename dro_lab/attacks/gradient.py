"""Adversarial examples: FGSM and PGD (sign / GD / Adam steps, L∞ and L2) and robust evaluation (PGD, APGD, AutoAttack).

Attacks follow torchattacks' habits: the model is put in eval mode during the attack and its
train/eval mode restored afterwards, inputs stay in the valid range, gradients are taken w.r.t. the
input only, and the returned examples are detached, on the inputs' device and dtype. The APGD /
AutoAttack rows of :func:`robust_accuracy_report` use torchattacks itself (the ``attacks`` extra).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from .._validation import check_bounds, check_choice, check_int, check_module, check_number
from ..utils import model_device

__all__ = ["fgsm_attack", "NORMS", "STEP_RULES", "fgsm_transform", "pgd_attack"]


def fgsm_attack(
    model: torch.nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    eps: float,
    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
    clamp: tuple[float, float] | None = (0.0, 1.0),
) -> Tensor:
    r"""Fast gradient sign method (Goodfellow et al., 2015): one signed gradient step of size ε.

    :math:`x' = \mathrm{clip}(x + \varepsilon\,\mathrm{sign}\nabla_x \ell(f(x), y))`, detached, on ``x``'s device
    and dtype.

    Args:
        model: maps inputs to logits; evaluated in eval mode (restored afterwards).
        x, y: a batch of inputs and labels.
        eps: the L∞ budget ε ≥ 0 (0 returns ``x``).
        loss_fn: ``(logits, y) -> scalar``; default the mean cross-entropy (the sign does not care about the scale).
        clamp: the valid input range, or ``None`` for none.

    Example:
        >>> model, x, y = torch.nn.Linear(2, 2), torch.full((1, 2), 0.5), torch.tensor([0])
        >>> (fgsm_attack(model, x, y, eps=0.1) - x).abs()  # every input moved by ε
        tensor([[0.1000, 0.1000]])
    """
    check_module(model)
    eps = check_number(eps, "eps", low=0)
    clamp = check_bounds(clamp)
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


#: The ``norm`` values of :func:`pgd_attack`: the L∞ and the L2 ball.
NORMS = ("linf", "l2")


#: The ``step_rule`` values of :func:`pgd_attack`: signed (PGD), raw gradient (DONE-GD) and Adam (DONE-ADAM) steps.
STEP_RULES = ("sign", "gd", "adam")


_ADAM_BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults, also its eps = 1e-8


_L2_DIVISION_EPS = 1e-10  # torchattacks.PGDL2's eps_for_division, so the two agree to rounding


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
    """Π onto the ε-ball around ``x``, then onto the valid range, as torchattacks does (DONE's set C needs both).

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


def fgsm_transform(eps: float, clamp: tuple[float, float] | None = (0.0, 1.0)):
    """FGSM as an input transformation ``t(x, y, model, generator) -> x'`` (a group of
    :class:`dro_lab.TransformGroupsStrategy`: the ALSO paper's robust training over attacks)."""
    eps = check_number(eps, "eps", low=0)
    clamp = check_bounds(clamp)
    return lambda x, y, model, generator: fgsm_attack(model, x, y, eps=eps, clamp=clamp)


def pgd_attack(
    model: torch.nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    eps: float,
    alpha: float,
    steps: int,
    norm: str = "linf",
    random_start: bool = True,
    step_rule: str = "sign",
    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
    clamp: tuple[float, float] | None = (0.0, 1.0),
    generator: torch.Generator | None = None,
    return_kappa: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    r"""Projected gradient ascent on the loss in an ε-ball (Madry et al., 2018), with three step rules.

    .. math::
        x^0 = \Pi(x + \delta^0),\qquad x^{k} = \Pi\big(x^{k-1} + \text{step}(\nabla_x L(x^{k-1}))\big),
        \quad k = 1..K,

    where :math:`L = \sum_i \ell(f(x_i), y_i)` (summed, so each example's gradient does not depend on the
    batch size) and :math:`\Pi` projects onto the ε-ball around ``x`` *and then* onto the valid range
    ``clamp`` after every step (Sow et al.'s attack set C, §3.2). Step rules:

    - ``"sign"`` (PGD): :math:`\alpha\,\mathrm{sign}(g)` for L∞, :math:`\alpha\,g/(\|g\|_2+10^{-10})`
      per sample for L2 (torchattacks' ``PGD`` / ``PGDL2``; same start → same iterates).
    - ``"gd"`` (DONE-GD's inner solver): the raw step :math:`\alpha\,g` on the summed loss, so α is large
      (5000/255 in the Fast-BAT code DONE builds on, Sow et al. App. B.3).
    - ``"adam"`` (DONE-ADAM's inner solver): :class:`torch.optim.Adam` ascent on the input with
      ``lr=alpha`` and torch's defaults, projected after each step; its first step is ≈ α·sign(g).

    The random start is uniform in the ε-ball (L2: radius :math:`\varepsilon U^{1/d}`, not torchattacks' ε·U).
    The model runs in eval mode (restored); gradients are w.r.t. the input only, also under ``no_grad``.

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
        generator: a :class:`torch.Generator` for the random start (``None``: the global RNG).
        return_kappa: also return κ (int64, per sample): the number of the K iterations at whose
            start the model still classified the current adversarial input correctly (GAIRAT's κ,
            as counted by the official GAIRAT code; 0 ≤ κ ≤ K).

    Returns:
        The adversarial inputs, detached, on ``x``'s device and dtype; with ``return_kappa``, the
        pair ``(x_adv, kappa)``.

    Example:
        >>> model, x, y = torch.nn.Linear(2, 2), torch.full((1, 2), 0.5), torch.tensor([0])
        >>> x_adv = pgd_attack(model, x, y, eps=0.1, alpha=0.05, steps=5)
        >>> bool(F.cross_entropy(model(x_adv), y) > F.cross_entropy(model(x), y))  # within ε of x, a larger loss
        True
    """
    check_module(model)
    eps = check_number(eps, "eps", low=0)
    alpha = check_number(alpha, "alpha", low=0, low_open=True)
    steps = check_int(steps, "steps")
    check_choice(norm, "norm", NORMS)
    check_choice(step_rule, "step_rule", STEP_RULES)
    clamp = check_bounds(clamp)
    if y.dim() == 0 or x.dim() == 0 or x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y must have the same batch size, got shapes {tuple(x.shape)} and {tuple(y.shape)}")
    if return_kappa and y.dim() != 1:
        raise ValueError(f"return_kappa needs class labels y of shape (n,), got {tuple(y.shape)}")

    device = model_device(model, x.device)
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
                optimizer = (
                    torch.optim.Adam([x_adv], lr=alpha, betas=_ADAM_BETAS, maximize=True)
                    if step_rule == "adam"
                    else None
                )
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
