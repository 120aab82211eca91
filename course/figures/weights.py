"""Worst-case weights, the robust loss between the mean and the max, and the β ↔ r duality."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from dro_course.figures._style import LAYOUT, PALETTE
from dro_lab._validation import check_finite, check_int, check_number
from dro_lab.robust import divergence_value, radius_to_beta, robust_loss, worst_case_weights
from dro_lab.utils import to_numpy


def weights_figure(
    losses, weights: Mapping[str, Sequence[float]], *, prior=None, title: str | None = None
) -> go.Figure:
    """Grouped bars of several weight vectors over the same examples, losses as a line on a second axis.

    ``weights`` maps a label (e.g. ``"KL β=5"``) to a vector ``q`` of the same length as ``losses``.
    """
    losses = check_finite(to_numpy(losses).reshape(-1), "losses")
    for label, q in weights.items():
        if to_numpy(q).shape != losses.shape:
            raise ValueError(
                f"weights[{label!r}] must have one weight per loss ({losses.size}), got shape {to_numpy(q).shape}"
            )
    if prior is not None and to_numpy(prior).shape != losses.shape:
        raise ValueError(f"prior must have one weight per loss ({losses.size}), got shape {to_numpy(prior).shape}")
    order = np.argsort(losses)
    xs = [f"{i}" for i in order]
    fig = go.Figure()
    if prior is not None:
        fig.add_bar(x=xs, y=to_numpy(prior)[order], name="prior p", marker_color="#bbbbbb")
    for k, (label, q) in enumerate(weights.items()):
        fig.add_bar(x=xs, y=to_numpy(q)[order], name=label, marker_color=PALETTE[(k + 1) % len(PALETTE)])
    fig.add_scatter(
        x=xs,
        y=losses[order],
        name="loss ℓᵢ",
        yaxis="y2",
        mode="lines+markers",
        line=dict(color="black", width=1),
        marker=dict(size=4),
    )
    fig.update_layout(
        **LAYOUT,
        barmode="group",
        title=title or "Worst-case weights q (examples sorted by loss)",
        xaxis_title="example (sorted by loss)",
        yaxis_title="weight qᵢ",
        yaxis2=dict(title="loss ℓᵢ", overlaying="y", side="right", showgrid=False, rangemode="tozero"),
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def robust_value_figure(losses, betas: Iterable[float] | None = None, *, divergence: str = "kl") -> go.Figure:
    """The robust loss R(β) against β (log axis) between the mean (ERM) and the max loss asymptotes.

    Overlays the small-β expansion mean + (β/2)·Var for KL (mean + (β/4)·Var for χ²).
    """
    ell = torch.as_tensor(to_numpy(losses))
    betas = np.logspace(-2, 3, 60) if betas is None else np.asarray(list(betas), dtype=float)
    values = [float(robust_loss(ell, divergence=divergence, beta=float(b))) for b in betas]
    mean, var, top = float(ell.mean()), float(ell.var(unbiased=False)), float(ell.max())
    factor = 0.5 if divergence == "kl" else 0.25
    quad = [mean + factor * b * var for b in betas]
    fig = go.Figure()
    fig.add_scatter(x=betas, y=values, name=f"R(β), {divergence}", line=dict(color=PALETTE[1], width=3))
    fig.add_scatter(x=betas, y=quad, name=f"mean + {'½' if factor == 0.5 else '¼'}β·Var", line=dict(dash="dot"))
    fig.add_hline(y=mean, line_dash="dash", annotation_text="mean loss (ERM, β→0)")
    fig.add_hline(y=top, line_dash="dash", annotation_text="max loss (β→∞)")
    fig.update_layout(
        **LAYOUT,
        title="Robust loss between the mean and the max",
        xaxis_type="log",
        xaxis_title="β",
        yaxis_title="R(β)",
        yaxis_range=[mean - 0.1 * (top - mean + 1e-9), top + 0.1 * (top - mean + 1e-9)],
    )
    return fig


def duality_figure(radii: Sequence[float], betas: Sequence[float], *, divergence: str = "kl") -> go.Figure:
    """β ↔ r: for each radius r the penalty β whose penalised maximiser equals the constrained one."""
    if divergence not in ("kl", "chi2"):
        raise ValueError(f"divergence must be 'kl' or 'chi2', got {divergence!r}")
    r_arr, b_arr = to_numpy(radii).reshape(-1), to_numpy(betas).reshape(-1)
    if r_arr.shape != b_arr.shape:
        raise ValueError(f"radii and betas must have the same length, got {r_arr.size} and {b_arr.size}")
    if np.any(r_arr < 0) or np.isnan(r_arr).any():
        raise ValueError("radii must be ≥ 0 (divergence-ball radii)")
    fig = go.Figure()
    finite = [(r, b) for r, b in zip(radii, betas) if math.isfinite(b) and b > 0]
    color = PALETTE[1] if divergence == "kl" else PALETTE[2]
    fig.add_scatter(
        x=[r for r, _ in finite],
        y=[b for _, b in finite],
        mode="lines+markers",
        name=divergence,
        line=dict(color=color),
    )
    fig.update_layout(
        **LAYOUT, title="β ↔ r duality", xaxis_title="radius r", yaxis_title="β(r)", xaxis_type="log", yaxis_type="log"
    )
    return fig


def duality_curves_figure(losses, *, radius: float | None = None, n_points: int = 30) -> go.Figure:
    """β(r) for KL and χ² on ``losses`` (uniform prior), each up to 98 % of the radius at which its ball reaches the
    point mass on the worst examples (past it β(r) = ∞); ``radius`` adds a marker at (r, β(r)) for KL.

    The radii's ends are the divergences of that point mass: log n for KL (with one worst example), n − 1 for χ².
    """
    ell = torch.as_tensor(check_finite(to_numpy(losses).reshape(-1), "losses"), dtype=torch.float64)
    n_points = check_int(n_points, "n_points", low=2)
    p = torch.full_like(ell, 1.0 / ell.numel())
    top = worst_case_weights(ell, divergence="kl", beta=math.inf)  # the point mass on the arg-max set
    fig = go.Figure()
    for divergence in ("kl", "chi2"):
        r_max = float(divergence_value(top, p, divergence))
        if r_max <= 0:  # all losses equal: every radius gives the prior, there is no curve
            continue
        radii = np.logspace(-3, math.log10(0.98 * r_max), n_points)
        betas = [radius_to_beta(ell, float(r), divergence=divergence) for r in radii]
        fig.add_traces(duality_figure(radii, betas, divergence=divergence).data)
        fig.data[-1].name = "KL" if divergence == "kl" else "χ²"
    if radius is not None:
        radius = check_number(radius, "radius", low=0.0)
        beta_r = radius_to_beta(ell, radius, divergence="kl")
        if 0 < beta_r < math.inf:
            fig.add_scatter(x=[radius], y=[beta_r], mode="markers", marker=dict(size=11, color="black"),
                            name=f"KL, r = {radius:g}: β = {beta_r:.3g}")  # fmt: skip
    fig.update_layout(
        **LAYOUT,
        title="β ↔ r duality: the penalty β whose maximiser solves the radius-r ball",
        xaxis_title="radius r",
        yaxis_title="β(r)",
        xaxis_type="log",
        yaxis_type="log",
    )
    return fig


def weights_for_knobs(losses, *, beta: float, radius: float, alpha: float, prior=None) -> dict[str, torch.Tensor]:
    """The weight vectors the foundations panel shows: KL and χ² penalised (β), KL constrained (r), CVaR (α)."""
    return {
        f"KL, β={beta:.3g}": worst_case_weights(losses, divergence="kl", beta=beta, prior=prior),
        f"χ², β={beta:.3g}": worst_case_weights(losses, divergence="chi2", beta=beta, prior=prior),
        f"KL ball, r={radius:.3g}": worst_case_weights(losses, divergence="kl", radius=radius, prior=prior),
        f"CVaR, α={alpha:.3g}": worst_case_weights(losses, divergence="cvar", alpha=alpha, prior=prior),
    }
