"""Plotly figure builders: data in, ``go.Figure`` out. Pure, so tests inspect ``fig.data`` headless.

Importing this module imports plotly; the rest of dro_lab does not.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from .robust import robust_loss, worst_case_weights

__all__ = [
    "PALETTE",
    "weights_figure",
    "robust_value_figure",
    "duality_figure",
    "decision_boundary_figure",
    "tradeoff_figure",
    "history_figure",
    "summarize_runs",
    "weights_for_knobs",
]

# One colour per method across the course (ERM blue and DRO red, as in Fidon et al.'s figures).
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]

_LAYOUT = dict(template="plotly_white", margin=dict(l=60, r=20, t=50, b=50), height=380)


def _np(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=float)


def weights_figure(losses, weights: Mapping[str, Sequence[float]], *, prior=None, title: str | None = None) -> go.Figure:
    """Grouped bars of several weight vectors over the same examples, losses as a line on a second axis.

    ``weights`` maps a label (e.g. ``"KL β=5"``) to a vector ``q`` of the same length as ``losses``.
    """
    losses = _np(losses)
    order = np.argsort(losses)
    xs = [f"{i}" for i in order]
    fig = go.Figure()
    if prior is not None:
        fig.add_bar(x=xs, y=_np(prior)[order], name="prior p", marker_color="#bbbbbb")
    for k, (label, q) in enumerate(weights.items()):
        fig.add_bar(x=xs, y=_np(q)[order], name=label, marker_color=PALETTE[(k + 1) % len(PALETTE)])
    fig.add_scatter(x=xs, y=losses[order], name="loss ℓᵢ", yaxis="y2", mode="lines+markers",
                    line=dict(color="black", width=1), marker=dict(size=4))
    fig.update_layout(
        **_LAYOUT, barmode="group", title=title or "Worst-case weights q (examples sorted by loss)",
        xaxis_title="example (sorted by loss)", yaxis_title="weight qᵢ",
        yaxis2=dict(title="loss ℓᵢ", overlaying="y", side="right", showgrid=False, rangemode="tozero"),
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def robust_value_figure(losses, betas: Iterable[float] | None = None, *, divergence: str = "kl") -> go.Figure:
    """The robust loss R(β) against β (log axis) between the mean (ERM) and the max loss asymptotes.

    Overlays the small-β expansion mean + (β/2)·Var for KL (mean + (β/4)·Var for χ²).
    """
    l = torch.as_tensor(_np(losses))
    betas = np.logspace(-2, 3, 60) if betas is None else np.asarray(list(betas), dtype=float)
    values = [float(robust_loss(l, divergence=divergence, beta=float(b))) for b in betas]
    mean, var, top = float(l.mean()), float(l.var(unbiased=False)), float(l.max())
    factor = 0.5 if divergence == "kl" else 0.25
    quad = [mean + factor * b * var for b in betas]
    fig = go.Figure()
    fig.add_scatter(x=betas, y=values, name=f"R(β), {divergence}", line=dict(color=PALETTE[1], width=3))
    fig.add_scatter(x=betas, y=quad, name=f"mean + {'½' if factor == 0.5 else '¼'}β·Var", line=dict(dash="dot"))
    fig.add_hline(y=mean, line_dash="dash", annotation_text="mean loss (ERM, β→0)")
    fig.add_hline(y=top, line_dash="dash", annotation_text="max loss (β→∞)")
    fig.update_layout(**_LAYOUT, title="Robust loss between the mean and the max", xaxis_type="log",
                      xaxis_title="β", yaxis_title="R(β)", yaxis_range=[mean - 0.1 * (top - mean + 1e-9),
                                                                          top + 0.1 * (top - mean + 1e-9)])
    return fig


def duality_figure(radii: Sequence[float], betas: Sequence[float], *, divergence: str = "kl") -> go.Figure:
    """β ↔ r: for each radius r the penalty β whose penalised maximiser equals the constrained one."""
    fig = go.Figure()
    finite = [(r, b) for r, b in zip(radii, betas) if math.isfinite(b) and b > 0]
    color = PALETTE[1] if divergence == "kl" else PALETTE[2]
    fig.add_scatter(x=[r for r, _ in finite], y=[b for _, b in finite], mode="lines+markers",
                    name=divergence, line=dict(color=color))
    fig.update_layout(**_LAYOUT, title="β ↔ r duality", xaxis_title="radius r", yaxis_title="β(r)",
                      xaxis_type="log", yaxis_type="log")
    return fig


def decision_boundary_figure(models: Mapping[str, torch.nn.Module], x, y, *, groups=None, resolution: int = 120,
                             title: str | None = None) -> go.Figure:
    """2-D scatter (colour = class, symbol = group) with each model's decision boundary (p = ½ contour)."""
    xn, yn = _np(x), _np(y).astype(int)
    if xn.ndim != 2 or xn.shape[1] != 2:
        raise ValueError(f"decision_boundary_figure needs 2-D inputs of shape (n, 2), got {xn.shape}")
    pad = 0.5
    gx = np.linspace(xn[:, 0].min() - pad, xn[:, 0].max() + pad, resolution)
    gy = np.linspace(xn[:, 1].min() - pad, xn[:, 1].max() + pad, resolution)
    grid = torch.tensor(np.stack(np.meshgrid(gx, gy), -1).reshape(-1, 2), dtype=torch.float32)
    fig = go.Figure()
    symbols = ["circle", "x", "diamond", "square"]
    gn = np.zeros_like(yn) if groups is None else _np(groups).astype(int)
    for g in np.unique(gn):
        for c in np.unique(yn):
            m = (gn == g) & (yn == c)
            label = f"class {c}" + (f", group {g}" if groups is not None else "")
            fig.add_scatter(x=xn[m, 0], y=xn[m, 1], mode="markers", name=label, legendgroup="data",
                            marker=dict(color=PALETTE[2 + c % 6], symbol=symbols[g % 4], size=6 if g else 4,
                                        opacity=0.9 if g else 0.45))
    for k, (name, model) in enumerate(models.items()):
        was = model.training
        model.eval()
        with torch.no_grad():
            dev = next(model.parameters()).device
            prob = torch.softmax(model(grid.to(dev)), 1)[:, 1].cpu().numpy().reshape(resolution, resolution)
        model.train(was)
        color = PALETTE[k % len(PALETTE)]
        fig.add_contour(x=gx, y=gy, z=prob, contours=dict(start=0.5, end=0.5, size=1, coloring="lines"),
                        line=dict(color=color, width=3), showscale=False, name=name, showlegend=True,
                        colorscale=[[0, color], [1, color]])
    fig.update_layout(**_LAYOUT, title=title or "Decision boundaries", xaxis_title="x₁", yaxis_title="x₂")
    return fig


def summarize_runs(rows: Iterable[Mapping], *, by: Sequence[str], metrics: Sequence[str]) -> list[dict]:
    """Mean and standard deviation of ``metrics`` over the rows sharing the keys ``by`` (e.g. over seeds)."""
    groups: dict[tuple, list[Mapping]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[k] for k in by)].append(row)
    out = []
    for key, members in groups.items():
        rec = dict(zip(by, key))
        rec["n_runs"] = len(members)
        for m in metrics:
            vals = np.array([r[m] for r in members], dtype=float)
            rec[m] = float(vals.mean())
            rec[f"{m}_std"] = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
        out.append(rec)
    return out


def tradeoff_figure(rows: Iterable[Mapping], *, x: str = "beta", metrics: Sequence[str] = ("accuracy", "worst_group_accuracy"),
                    method: str = "method", title: str | None = None) -> go.Figure:
    """Metrics (mean ± std over seeds) against a robustness knob, one line per method and metric.

    ``rows`` are flat dicts, one per run, e.g. ``{"method": "kl", "beta": 10, "seed": 0, "accuracy": .9, ...}``.
    Methods with a single x value (ERM) are drawn as horizontal reference lines.
    """
    rows = list(rows)
    summary = summarize_runs(rows, by=(method, x), metrics=metrics)
    fig = go.Figure()
    dashes = ["solid", "dash", "dot"]
    methods = list(dict.fromkeys(r[method] for r in rows))
    for k, meth in enumerate(methods):
        pts = sorted((r for r in summary if r[method] == meth), key=lambda r: r[x])
        for j, m in enumerate(metrics):
            name = f"{meth}: {m.replace('_', ' ')}"
            style = dict(color=PALETTE[k % len(PALETTE)], dash=dashes[j % 3])
            if len(pts) == 1:
                fig.add_hline(y=pts[0][m], line=style, annotation_text=name, annotation_position="bottom right")
                fig.add_scatter(x=[None], y=[None], name=name, line=style)  # legend entry
                continue
            fig.add_scatter(x=[p[x] for p in pts], y=[p[m] for p in pts], name=name, line=style,
                            mode="lines+markers",
                            error_y=dict(type="data", array=[p[f"{m}_std"] for p in pts], visible=True))
    fig.update_layout(**_LAYOUT, title=title or f"Average vs worst-group accuracy across {x}",
                      xaxis_title=x, yaxis_title="test accuracy", legend=dict(orientation="h", y=-0.3))
    xs = [r[x] for r in rows if r[x] not in (None, 0)]
    if xs and min(xs) > 0 and max(xs) / min(xs) >= 50:
        fig.update_xaxes(type="log")
    return fig


def history_figure(histories: Mapping[str, Sequence], metric: str, *, title: str | None = None) -> go.Figure:
    """A metric against epoch, one line per method; several histories per method give mean ± std bands."""
    fig = go.Figure()
    for k, (name, hs) in enumerate(histories.items()):
        hs = list(hs) if isinstance(hs, (list, tuple)) else [hs]
        curves = np.array([h[metric] for h in hs], dtype=float)
        epochs = np.arange(1, curves.shape[1] + 1)
        mean, std = curves.mean(0), curves.std(0)
        color = PALETTE[k % len(PALETTE)]
        if len(hs) > 1:
            fig.add_scatter(x=np.r_[epochs, epochs[::-1]], y=np.r_[mean + std, (mean - std)[::-1]], fill="toself",
                            line=dict(width=0), fillcolor=color, opacity=0.2, showlegend=False, hoverinfo="skip")
        fig.add_scatter(x=epochs, y=mean, name=name, line=dict(color=color))
    fig.update_layout(**_LAYOUT, title=title or metric.replace("_", " "), xaxis_title="epoch",
                      yaxis_title=metric.replace("_", " "))
    return fig


def weights_for_knobs(losses, *, beta: float, radius: float, alpha: float, prior=None) -> dict[str, torch.Tensor]:
    """The weight vectors the foundations panel shows: KL and χ² penalised (β), KL constrained (r), CVaR (α)."""
    return {
        f"KL, β={beta:.3g}": worst_case_weights(losses, divergence="kl", beta=beta, prior=prior),
        f"χ², β={beta:.3g}": worst_case_weights(losses, divergence="chi2", beta=beta, prior=prior),
        f"KL ball, r={radius:.3g}": worst_case_weights(losses, divergence="kl", radius=radius, prior=prior),
        f"CVaR, α={alpha:.3g}": worst_case_weights(losses, divergence="cvar", alpha=alpha, prior=prior),
    }

