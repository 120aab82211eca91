"""GI-LS's inner maximisation (Wang et al., 2024, Algorithm 1): inputs shifted by gradient ascent in feature space,
what a shift does to the inputs and their labels (:func:`gils_shift_report`), and the γ that reaches a target
transport radius.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from .._validation import (
    as_label_tensor,
    check_bounds,
    check_callable,
    check_int,
    check_module,
    check_number,
    check_order,
)
from ..losses import check_ls_alpha, ls_cross_entropy
from ..metrics import predict
from ..models import num_classes_of

__all__ = ["gils_shift", "gils_shift_report", "GAMMA_RANGE", "gamma_for_radius"]


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

    with ``f = model.penultimate`` and the logits ``model.classifier(f(x))``. The anchors :math:`f(x)` are
    computed once and detached; the model runs in eval mode (restored afterwards) and gradients are taken
    w.r.t. the inputs only. The per-sample sum makes each step independent of the batch size; the step is
    the raw gradient, not its sign (Algorithm 1's update, unlike PGD). Π clamps to ``clamp``. Large γ·η
    makes the ascent unstable (the penalty's curvature exceeds 1/η).

    **η is on the inputs' scale**: a step moves an image by about η·T·‖∇ₓ‖, whatever its norm. The paper's
    η ∈ [1.5, 3.0] (§4.2) suits ImageNet-normalised 224×224 images (norm ≈ 390); on an 8×8 digit in [0, 1]
    (norm ≈ 3.9) η = 2 moves images by 30–40 % of their norm and GI-LS trains on label noise. On inputs in
    [0, 1] use η of order 10⁻² and check a setting with :func:`gils_shift_report`.

    Args:
        model: a classifier with ``penultimate(x)`` (features) and ``classifier`` (the last layer),
            as every :mod:`dro_lab.models` network.
        x, y: a batch of inputs and hard labels (or soft targets ``(b, k)``).
        alpha: the LS factor α ∈ [0, (k−1)/k] (α = 0: Volpi's ADA / WRM in feature space).
        gamma: the transport penalty γ ≥ 0 (γ = 0: an unpenalised ascent; the paper uses 1e-3).
        eta: the ascent step η > 0, on the inputs' scale (see above).
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


def gils_shift_report(
    model: torch.nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    alpha: float,
    gamma: float,
    eta: float,
    steps: int,
    clamp: tuple[float, float] | None = (0.0, 1.0),
    judge_model: torch.nn.Module | None = None,
) -> dict:
    r"""What a GI-LS shift does to a batch: how far it moves the inputs and how many keep their label.

    Shifts ``x`` by :func:`gils_shift` (same arguments) and measures, per example,

    .. math:: r_b = \frac{\|x^T_b - x_b\|_2}{\|x_b\|_2}

    (in float64), and whether the shifted image keeps its label, :math:`\arg\max_j s_j(x^T_b) = y_b` for the
    logits :math:`s` of ``judge_model`` (by default ``model`` itself). The shift keeps the label by
    construction (eq. 7), so a share far below the clean accuracy means GI-LS trains on label noise.

    Args:
        model, x, y, alpha, gamma, eta, steps, clamp: as in :func:`gils_shift`; ``y`` holds hard labels
            ``(b,)`` and no example of ``x`` may be all zeros (its relative shift is undefined).
        judge_model: the classifier whose predictions decide "keeps its label"; ``None``: ``model``.

    Returns:
        A dict: ``relative_shift_mean`` and ``relative_shift_max`` (of :math:`r_b` over the batch),
        ``label_kept`` (share of shifted images the judge assigns to ``y``), ``clean_accuracy`` (unshifted),
        ``label_kept_of_correct`` (the share among those right unshifted; ``None`` when none are),
        ``transport_cost_mean`` (mean ½‖f(x^T) − f(x)‖² of ``model``), ``n`` (the batch size) and ``judge``
        (``"model"`` or ``"judge_model"``).
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor batch (b, ...), got {type(x).__name__}")
    if judge_model is not None:
        check_module(judge_model, "judge_model")
    labels = as_label_tensor(y, "y (hard class labels)")
    if x.ndim < 2 or x.shape[0] == 0:
        raise ValueError(f"x must be a non-empty batch (b, ...) with b ≥ 1, got shape {tuple(x.shape)}")
    x_norm = x.detach().flatten(1).double().norm(dim=1)
    if bool((x_norm == 0).any()):
        raise ValueError(
            f"x has {int((x_norm == 0).sum())} all-zero example(s): their relative shift ‖Δx‖/‖x‖ is undefined"
        )
    x_t, cost = gils_shift(model, x, y, alpha=alpha, gamma=gamma, eta=eta, steps=steps, clamp=clamp)
    rel = (x_t.flatten(1).double() - x.detach().flatten(1).double()).norm(dim=1) / x_norm
    judge = model if judge_model is None else judge_model
    with torch.no_grad():
        kept = predict(judge, x_t).argmax(1).cpu() == labels.cpu()
        clean = predict(judge, x.detach()).argmax(1).cpu() == labels.cpu()
    return {
        "relative_shift_mean": float(rel.mean()),
        "relative_shift_max": float(rel.max()),
        "label_kept": float(kept.double().mean()),
        "clean_accuracy": float(clean.double().mean()),
        "label_kept_of_correct": float(kept[clean].double().mean()) if bool(clean.any()) else None,
        "transport_cost_mean": float(cost.double().mean()),
        "n": int(x.shape[0]),
        "judge": "model" if judge_model is None else "judge_model",
    }


#: The bracket of γ that :func:`gamma_for_radius` searches.
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
