"""GI-LS's inner maximisation (Wang et al., 2024, Algorithm 1): inputs shifted by gradient ascent in feature space,
and the γ that reaches a target transport radius.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from .._validation import check_bounds, check_callable, check_int, check_number, check_order
from ..losses import check_ls_alpha, ls_cross_entropy
from ..models import num_classes_of

__all__ = ["gils_shift", "GAMMA_RANGE", "gamma_for_radius"]


def gils_shift(
    model: torch.nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    alpha: float,
    gamma: float,
    eta: float,
    steps: int,
    clamp: tuple[float, float] | None = (0.0, 1.0),
    return_cost: bool = True,
) -> Tensor | tuple[Tensor, Tensor]:
    r"""GI-LS's inner maximisation: T raw gradient-ascent steps on the inputs (Wang et al., 2024, Algorithm 1).

    .. math::
        x^{t+1} = \Pi\Big(x^t + \eta\,\nabla_x \sum_b\big[\ell_\alpha(\theta;(x^t_b,y_b))
                  - \gamma\cdot\tfrac12\|f(x^t_b)-f(x_b)\|_2^2\big]\Big),\qquad t=0..T-1,

    with ``f = model.penultimate`` and the logits ``model.classifier(f(x))``. The anchors
    :math:`f(x)` are computed once, at the current parameters, and detached (recomputed from
    :math:`x^t` the cost would vanish); the model runs in eval mode (the paper does not say; BatchNorm
    statistics untouched, dropout off) and its mode is restored afterwards, also on errors; gradients
    are taken w.r.t. the inputs only, so the parameters' ``.grad`` are untouched. The per-sample sum
    makes each sample's step independent of the batch size (the paper does not say whether it sums or
    averages); the step is the raw gradient, not its sign (Algorithm 1's update, unlike PGD). Π clamps
    to ``clamp`` (``None``: no clamp). Large γ·η makes the ascent unstable (the penalty's curvature
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
    steps = check_int(steps, "steps", low=0)
    check_number(gamma, "gamma", low=0)
    eta = check_number(eta, "eta", low=0, low_open=True)
    clamp = check_bounds(clamp)
    k = num_classes_of(model)
    alpha = check_ls_alpha(alpha, k)
    if not (hasattr(model, "penultimate") and isinstance(getattr(model, "classifier", None), torch.nn.Module)):
        raise TypeError(
            "gils_shift needs a model with penultimate(x) and a classifier module "
            "(every dro_lab.models network has both)"
        )
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
                objective = ls_cross_entropy(model.classifier(z), y, alpha=alpha) - gamma * 0.5 * (z - anchor).pow(
                    2
                ).flatten(1).sum(1)
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


GAMMA_RANGE = (1e-3, 1e3)


def gamma_for_radius(
    shift: Callable[[float], float],
    radius: float,
    *,
    lo: float = GAMMA_RANGE[0],
    hi: float = GAMMA_RANGE[1],
    grid_points: int = 13,
    iters: int = 8,
) -> tuple[float, float]:
    r"""The γ whose realised transport cost ``shift(γ)`` (= ρ̂) is closest to ``radius``. Returns ``(γ, ρ̂(γ))``.

    ρ̂ falls as γ grows over the stable range only: once η·γ·‖J_f‖² ≳ 2 the explicit ascent oscillates and ρ̂
    grows again (and blows up). So ρ̂ is scanned on ``grid_points`` log-spaced γ in [lo, hi] up to its first
    rise or non-finite value (the stable, decreasing range), then bisected on log γ (``iters`` steps) in the
    bracket holding r. Out of reach, the nearest end of the stable range is returned (r ≥ ρ̂(lo): γ = lo;
    r below every stable ρ̂: the γ with the smallest one). Beyond the paper, which fixes γ.
    """
    check_callable(shift, "shift")
    check_number(radius, "radius (the target transport radius r)", low=0.0)
    check_number(lo, "lo (the smallest γ)", low=0.0, low_open=True)
    check_order(lo, hi, "lo", "hi")
    check_int(grid_points, "grid_points (the number of scanned γ)", low=2)
    check_int(iters, "iters (the bisection steps)", low=0)
    step = (math.log(hi) - math.log(lo)) / max(int(grid_points) - 1, 1)
    scan: list[tuple[float, float]] = []
    for i in range(max(int(grid_points), 2)):
        g = math.exp(math.log(lo) + i * step)
        rho = shift(g)
        if not math.isfinite(rho) or (scan and rho > scan[-1][1] * (1 + 1e-3) + 1e-12):
            break  # unstable from here on
        scan.append((g, rho))
        if rho < radius:
            break
    if not scan:
        return lo, float("nan")
    if scan[0][1] <= radius or scan[-1][1] >= radius:  # r out of reach (or hit at the first point)
        return scan[0] if scan[0][1] <= radius else scan[-1]
    (g_a, _), (g_b, _) = scan[-2], scan[-1]  # ρ̂(g_a) ≥ r > ρ̂(g_b)
    best = min(scan[-2:], key=lambda p: abs(p[1] - radius))
    a, b = math.log(g_a), math.log(g_b)
    for _ in range(int(iters)):
        mid = 0.5 * (a + b)
        rho = shift(math.exp(mid))
        if abs(rho - radius) < abs(best[1] - radius):
            best = (math.exp(mid), rho)
        if rho > radius:
            a = mid
        else:
            b = mid
    return best
