"""Lesson 01: worst-case weights, the robust loss between the mean and the max, the β ↔ r duality, and the 2-D
minority toy (its decision boundaries and its knob sweeps, from :func:`dro_lab.experiments.toys.run_minority_toy`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from .._validation import check_choice, check_finite, check_int, check_number
from ..experiments.summary import summarize_runs
from ..experiments.toys import TOY_METHODS, MinorityToy
from ..robust import divergence_value, radius_to_beta, robust_loss, worst_case_weights
from ..utils import to_numpy
from ._style import LAYOUT, PALETTE

#: One colour per method of the minority toy, the same in every figure of lesson 01.
TOY_COLORS = dict(zip(TOY_METHODS, PALETTE))


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


def _check_toy(toy) -> MinorityToy:
    if not isinstance(toy, MinorityToy):
        raise TypeError(f"toy must be the MinorityToy that run_minority_toy returns, got {type(toy).__name__}")
    return toy


def toy_boundaries_figure(toy: MinorityToy, *, title: str | None = None) -> go.Figure:
    """The minority toy's training points and each method's decision boundary (P(class 1) = ½), first seed.

    Grey shades are the classes, circles the majority group and crosses the minority; the dashed black line is the
    boundary that is fair to both groups, x₁ = 0. Each legend entry carries the model's test worst-group accuracy.
    """
    toy = _check_toy(toy)
    x, y, g = to_numpy(toy.train.x), to_numpy(toy.train.y).astype(int), to_numpy(toy.train.groups).astype(int)
    fig = go.Figure()
    for group, (symbol, size, opacity) in enumerate((("circle", 5, 0.45), ("x", 8, 0.9))):
        for c, color in enumerate(("#b0b0b0", "#3a3a3a")):
            m = (g == group) & (y == c)
            fig.add_scatter(
                x=x[m, 0],
                y=x[m, 1],
                mode="markers",
                name=f"class {c}, {'majority' if group == 0 else 'minority'}",
                marker=dict(color=color, symbol=symbol, size=size, opacity=opacity),
            )
    method_of = {label: method for method, label in toy.headline.items()}
    for label, (gx, gy, prob) in toy.grids.items():
        color = TOY_COLORS[method_of[label]]
        worst = toy.histories[label].last["test_worst_group_accuracy"]
        fig.add_contour(
            x=gx,
            y=gy,
            z=prob,
            contours=dict(start=0.5, end=0.5, size=1, coloring="lines"),
            line=dict(color=color, width=7 if method_of[label] == "ERM" else 3),  # ERM wide: others often lie on it
            colorscale=[[0, color], [1, color]],
            showscale=False,
            showlegend=True,
            name=f"{label}: worst-group {worst:.2f}",
        )
    lo, hi = float(x[:, 1].min()) - 0.5, float(x[:, 1].max()) + 0.5
    fig.add_scatter(
        x=[0, 0], y=[lo, hi], mode="lines", name="fair boundary x₁ = 0", line=dict(color="black", dash="dash")
    )
    fig.update_layout(
        **{**LAYOUT, "height": 520},
        title=title or f"Decision boundaries on the 2-D toy (training points, seed {toy.seeds[0]})",
        xaxis_title="x₁ (core feature)",
        yaxis_title="x₂ (spurious feature)",
        legend=dict(x=1.02, y=1, font=dict(size=11)),
    )
    return fig


def toy_sweep_figure(toy: MinorityToy, knob: str = "beta", *, title: str | None = None) -> go.Figure:
    """Test accuracy (dotted) and worst-group accuracy (solid) against ``knob`` (``"beta"`` or ``"alpha"``), mean ±
    sd over seeds (bars kept in [0, 1]), for the toy's methods swept over that knob; ERM as horizontal lines."""
    check_choice(knob, "knob", ("beta", "alpha"))
    toy = _check_toy(toy)
    methods = [m for m in toy.headline if TOY_METHODS[m] == knob and len({r["value"] for r in toy.rows([m])}) > 1]
    if not methods:
        raise ValueError(f"the toy has no method swept over {knob!r}: pass kl_betas / cvar_alphas to run_minority_toy")
    metrics = (("worst_group_accuracy", "worst-group", "solid"), ("accuracy", "average", "dot"))
    fig = go.Figure()
    erm = summarize_runs(toy.rows(["ERM"]), by=("method",), metrics=[m for m, _, _ in metrics])[0]
    for metric, word, dash in metrics:
        fig.add_hline(y=erm[metric], line=dict(color=TOY_COLORS["ERM"], dash=dash), opacity=0.8)
        fig.add_scatter(x=[None], y=[None], name=f"ERM: {word}", line=dict(color=TOY_COLORS["ERM"], dash=dash))
    for method in methods:
        rows = sorted(summarize_runs(toy.rows([method]), by=("value",), metrics=[m for m, _, _ in metrics]),
                      key=lambda r: r["value"])  # fmt: skip
        for metric, word, dash in metrics:
            mean = np.array([r[metric] for r in rows])
            sd = np.array([r[f"{metric}_std"] for r in rows])
            fig.add_scatter(
                x=[r["value"] for r in rows],
                y=mean,
                mode="lines+markers",
                name=f"{method}: {word}",
                line=dict(color=TOY_COLORS[method], dash=dash),
                error_y=dict(type="data", array=np.minimum(sd, 1 - mean), arrayminus=np.minimum(sd, mean)),
            )
    symbol = "β" if knob == "beta" else "α (CVaR level)"
    values = sorted({r["value"] for m in methods for r in toy.rows([m])})
    fig.update_xaxes(tickvals=values, ticktext=[f"{v:g}" for v in values], minor=dict(showgrid=False))
    fig.update_layout(
        **LAYOUT,
        title=title or f"The toy across {symbol}: test accuracy, mean ± sd over {len(toy.seeds)} seeds",
        xaxis_title=symbol,
        yaxis_title="test accuracy",
        xaxis_type="log",
        legend=dict(orientation="h", y=-0.25),
    )
    return fig
