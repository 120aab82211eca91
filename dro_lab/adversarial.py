r"""Adversarial examples (FGSM for now; PGD, AutoAttack-style evaluation and DONE come with lesson 05).

Attacks follow torchattacks' habits: the device comes from the inputs, the model is put in eval
mode during the attack and its train/eval mode restored afterwards, inputs stay in the valid range,
and the returned examples are detached.
"""

from __future__ import annotations

import math
import numbers
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["fgsm_attack"]


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
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not (eps >= 0 and math.isfinite(eps)):
        raise ValueError(f"eps must be a finite number ≥ 0, got {eps!r}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y must have the same batch size, got {x.shape[0]} and {y.shape[0]}")
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
