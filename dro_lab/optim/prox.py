"""The pure maths of the group-weight step: simplex projection, the KL-prox mirror step, a bilinear game."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from .._validation import check_int, check_number
from ..robust import divergence_value, worst_case_weights
from ..utils import to_numpy

__all__ = [
    "PI_OPTIONS",
    "simplex_projection",
    "kl_prox_step",
    "bilinear_game_path",
    "group_prior",
    "kl_to_prior",
    "pi_star",
]


#: The π steps of :func:`kl_prox_step` (``option``, the optimizers' ``pi_option``): exact prox, explicit, projected.
PI_OPTIONS = ("I", "II", "II-euclid")


def simplex_projection(v: Tensor) -> Tensor:
    r"""Euclidean projection of ``v`` onto the probability simplex (sort-based, Held et al. / Duchi et al.).

    :math:`\arg\min_{q\in\Delta}\lVert q-v\rVert_2 = (v-\theta)_+`, θ such that the result sums to one.

    Args:
        v: a finite vector, shape ``(n,)``.

    Example:
        >>> simplex_projection(torch.tensor([0.5, 1.5, -1.0]))
        tensor([0., 1., 0.])
    """
    if not isinstance(v, Tensor):
        raise TypeError(f"v must be a 1-D tensor, got {type(v).__name__}")
    if v.dim() != 1 or v.numel() == 0:
        raise ValueError(f"v must be a non-empty 1-D tensor, got shape {tuple(v.shape)}")
    if not bool(torch.isfinite(v).all()):
        raise ValueError("v contains NaN or inf values; v must be finite")
    return _simplex_projection(v)


def _simplex_projection(v: Tensor) -> Tensor:  # unchecked: the optimizers' hot path
    u, _ = torch.sort(v, descending=True)
    css = torch.cumsum(u, 0) - 1
    k = torch.arange(1, v.numel() + 1, device=v.device, dtype=v.dtype)
    rho = int((u - css / k > 0).nonzero().max())
    theta = css[rho] / (rho + 1)
    return torch.clamp(v - theta, min=0)


def kl_prox_step(
    log_pi: Tensor,
    grad: Tensor,
    *,
    lr: float,
    tau: float,
    log_prior: Tensor | float,
    option: str = "I",
    temperature: float = 1.0,
) -> Tensor:
    r"""One mirror-ascent step for π with the KL pull to the prior; returns the new **log** π.

    * Option I (the paper's practice; the exact prox, Prop. 6):
      :math:`\pi^+ = \mathrm{SM}\big((\log\pi + \eta\tau\log\hat\pi + \eta g)/(1+\eta\tau)\big)`.
    * Option II (the theory's explicit step, KL geometry):
      :math:`\pi^+ = \mathrm{SM}\big((1-\eta\tau)\log\pi + \eta\tau\log\hat\pi + \eta g\big)`; it flips the sign of
      the pull when ητ > 1, so that is refused.
    * Option II-euclid: projected gradient ascent,
      :math:`\pi^+ = \mathrm{Proj}_\Delta\big(\pi + \eta(g - \tau(\log(\pi/\hat\pi) + 1))\big)`.

    Args:
        log_pi, grad: ``log π`` and ``g``, the ascent direction (the group losses), shape ``(c,)``.
        lr: η ≥ 0; ``tau``: τ ≥ 0; ``log_prior``: ``log π̂`` (a tensor or a number).
        option: one of :data:`PI_OPTIONS`.
        temperature: divides the logits of options I and II (not in the paper; the official code's).

    Example:
        >>> half = torch.log(torch.tensor([0.5, 0.5]))
        >>> kl_prox_step(half, torch.tensor([0.0, 1.0]), lr=1.0, tau=1.0, log_prior=half).exp()
        tensor([0.3775, 0.6225])
    """
    lr, tau = check_number(lr, "lr", low=0), check_number(tau, "tau", low=0)
    if not isinstance(log_pi, Tensor) or not isinstance(grad, Tensor):
        raise TypeError(f"log_pi and grad must be tensors, got {type(log_pi).__name__} and {type(grad).__name__}")
    if grad.shape != log_pi.shape:
        raise ValueError(f"grad must have the shape of log_pi {tuple(log_pi.shape)}, got {tuple(grad.shape)}")
    if not bool(torch.isfinite(grad).all()):
        raise ValueError("grad contains NaN or inf values; grad must be finite")
    return _kl_prox_step(log_pi, grad, lr=lr, tau=tau, log_prior=log_prior, option=option, temperature=temperature)


def _kl_prox_step(
    log_pi: Tensor,
    grad: Tensor,
    *,
    lr: float,
    tau: float,
    log_prior: Tensor | float,
    option: str = "I",
    temperature: float = 1.0,
) -> Tensor:
    """:func:`kl_prox_step` without the argument checks (the optimizers validate once, at construction)."""
    if option == "I":
        logits = (log_pi + lr * tau * log_prior + lr * grad) / (1 + lr * tau)
    elif option == "II":
        if lr * tau > 1:
            raise ValueError(f"option 'II' needs pi_lr·tau ≤ 1 (the explicit step flips sign), got {lr * tau:g}")
        logits = (1 - lr * tau) * log_pi + lr * tau * log_prior + lr * grad
    elif option == "II-euclid":
        pi = log_pi.exp()
        pi_new = _simplex_projection(pi + lr * (grad - tau * (log_pi - log_prior + 1)))
        return torch.log(pi_new.clamp_min(torch.finfo(pi_new.dtype).tiny))
    else:
        raise ValueError(f"pi_option must be one of {PI_OPTIONS}, got {option!r}")
    return torch.log_softmax(logits / temperature, 0)


def bilinear_game_path(
    *, lr: float = 0.1, alpha: float = 0.0, steps: int = 200, start: Sequence[float] = (1.0, 1.0), coupling: float = 1.0
) -> Tensor:
    r"""Iterates of simultaneous descent–ascent on :math:`\min_x\max_y\ a\,xy` with optimism α.

    The update is the one-sequence optimistic step of Algorithm 4/5, :math:`\hat g_t = g_t + \alpha(g_t -
    g_{t-1})` (:math:`g_{-1} = g_0`), applied to :math:`(x, y)` with gradient :math:`(a y, -a x)`. α = 0 is plain
    descent–ascent, which spirals out (the iteration matrix has modulus :math:`\sqrt{1+\gamma^2a^2}>1`);
    α = 1 is Popov's method, which converges for small γ. Returns a float64 ``(steps + 1, 2)`` tensor.

    Args:
        lr: γ > 0; ``alpha``: α ≥ 0; ``steps``: the number of steps; ``start``: (x₀, y₀); ``coupling``: a.
    """
    check_number(lr, "lr", low=0, low_open=True)
    check_number(alpha, "alpha", low=0)
    check_int(steps, "steps")
    z = torch.tensor([float(v) for v in start], dtype=torch.float64)
    if z.shape != (2,):
        raise ValueError(f"start must be two numbers (x, y), got {start!r}")
    path = [z.clone()]
    prev = None
    for _ in range(steps):
        g = torch.stack([coupling * z[1], -coupling * z[0]])
        prev = g if prev is None else prev
        z = z - lr * (g + alpha * (g - prev))
        prev = g
        path.append(z.clone())
    return torch.stack(path)


def group_prior(prior, c: int) -> torch.Tensor:
    """The prior π̂ as a float64 probability vector of length ``c`` (uniform for ``None``)."""
    if prior is None:
        return torch.full((c,), 1.0 / c, dtype=torch.float64)
    p = torch.as_tensor(to_numpy(prior)).reshape(-1)
    if p.numel() != c:
        raise ValueError(f"prior must have one weight per group ({c}), got {p.numel()}")
    return p / p.sum()


def kl_to_prior(pi, prior=None) -> float:
    r""":math:`\mathrm{KL}(\pi\|\hat\pi)` of one weight vector (the radius r reached), via
    :func:`dro_lab.divergence_value`; ``prior`` ``None`` is uniform."""
    q = torch.as_tensor(to_numpy(pi)).reshape(-1)
    if q.numel() == 0 or not bool(torch.isfinite(q).all()) or bool((q < 0).any()) or not float(q.sum()) > 0:
        raise ValueError("pi must be a non-empty vector of finite, non-negative weights with positive mass")
    return float(divergence_value(q / q.sum(), group_prior(prior, q.numel()), "kl"))


def pi_star(group_losses, prior=None, *, beta: float) -> tuple[np.ndarray, float]:
    r"""The inner maximiser :math:`\pi^\star\propto\hat\pi\,e^{\beta L_j}` (β = 1/τ) and the radius
    :math:`r=\mathrm{KL}(\pi^\star\|\hat\pi)` it reaches, via :func:`dro_lab.worst_case_weights` and
    :func:`kl_to_prior`. ``prior`` ``None`` is uniform."""
    losses = torch.as_tensor(to_numpy(group_losses)).reshape(-1)
    p = group_prior(prior, losses.numel())
    q = worst_case_weights(losses, divergence="kl", beta=float(beta), prior=p)
    return q.numpy(), kl_to_prior(q, p)
