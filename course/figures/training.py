"""Training results: decision boundaries, metrics against a knob or over epochs (mean ± std over seeds),
and one metric per method against a sweep or average against worst-group."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from dro_course.figures._style import (
    LAYOUT,
    PALETTE,
    add_band_traces,
    add_paper_markers,
    layout,
    mean_std,
    method_colors,
)
from dro_lab._validation import check_int, check_nonempty
from dro_lab.experiments.summary import summarize_runs
from dro_lab.metrics import model_on_grid
from dro_lab.utils import to_numpy


def decision_boundary_figure(
    models: Mapping[str, torch.nn.Module], x, y, *, groups=None, resolution: int = 120, title: str | None = None
) -> go.Figure:
    """2-D scatter (colour = class, symbol = group) with each model's decision boundary (p = ½ contour)."""
    check_nonempty(models, "models")
    for name, model in models.items():
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"models[{name!r}] must be a torch.nn.Module, got {type(model).__name__}")
    resolution = check_int(resolution, "resolution", low=2)
    xn, yn = to_numpy(x), to_numpy(y).astype(int)
    if xn.ndim != 2 or xn.shape[1] != 2:
        raise ValueError(f"x must be 2-D inputs of shape (n, 2) for decision_boundary_figure, got {xn.shape}")
    fig = go.Figure()
    symbols = ["circle", "x", "diamond", "square"]
    gn = np.zeros_like(yn) if groups is None else to_numpy(groups).astype(int)
    for g in np.unique(gn):
        for c in np.unique(yn):
            m = (gn == g) & (yn == c)
            label = f"class {c}" + (f", group {g}" if groups is not None else "")
            fig.add_scatter(
                x=xn[m, 0],
                y=xn[m, 1],
                mode="markers",
                name=label,
                legendgroup="data",
                marker=dict(
                    color=PALETTE[2 + c % 6], symbol=symbols[g % 4], size=6 if g else 4, opacity=0.9 if g else 0.45
                ),
            )
    for k, (name, model) in enumerate(models.items()):
        gx, gy, prob = model_on_grid(model, xn, resolution=resolution, pad=0.5)
        color = PALETTE[k % len(PALETTE)]
        fig.add_contour(
            x=gx,
            y=gy,
            z=prob,
            contours=dict(start=0.5, end=0.5, size=1, coloring="lines"),
            line=dict(color=color, width=3),
            showscale=False,
            name=name,
            showlegend=True,
            colorscale=[[0, color], [1, color]],
        )
    fig.update_layout(**LAYOUT, title=title or "Decision boundaries", xaxis_title="x₁", yaxis_title="x₂")
    return fig


def tradeoff_figure(
    rows: Iterable[Mapping],
    *,
    x: str = "beta",
    metrics: Sequence[str] = ("accuracy", "worst_group_accuracy"),
    method: str = "method",
    title: str | None = None,
) -> go.Figure:
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
            fig.add_scatter(
                x=[p[x] for p in pts],
                y=[p[m] for p in pts],
                name=name,
                line=style,
                mode="lines+markers",
                error_y=dict(type="data", array=[p[f"{m}_std"] for p in pts], visible=True),
            )
    fig.update_layout(
        **LAYOUT,
        title=title or f"Average vs worst-group accuracy across {x}",
        xaxis_title=x,
        yaxis_title="test accuracy",
        legend=dict(orientation="h", y=-0.3),
    )
    xs = [r[x] for r in rows if r[x] not in (None, 0)]
    if xs and min(xs) > 0 and max(xs) / min(xs) >= 50:
        fig.update_xaxes(type="log")
    return fig


def history_figure(histories: Mapping[str, Sequence], metric: str, *, title: str | None = None) -> go.Figure:
    """A metric against epoch, one line per method; several histories per method give mean ± std bands."""
    check_nonempty(histories, "histories")
    fig = go.Figure()
    for k, (name, hs) in enumerate(histories.items()):
        hs = list(hs) if isinstance(hs, (list, tuple)) else [hs]
        curves = np.array([_column(h, metric) for h in hs], dtype=float)
        epochs = np.arange(1, curves.shape[1] + 1)
        mean, std = curves.mean(0), curves.std(0)
        color = PALETTE[k % len(PALETTE)]
        if len(hs) > 1:
            fig.add_scatter(
                x=np.r_[epochs, epochs[::-1]],
                y=np.r_[mean + std, (mean - std)[::-1]],
                fill="toself",
                line=dict(width=0),
                fillcolor=color,
                opacity=0.2,
                showlegend=False,
                hoverinfo="skip",
            )
        fig.add_scatter(x=epochs, y=mean, name=name, line=dict(color=color))
    fig.update_layout(
        **LAYOUT, title=title or metric.replace("_", " "), xaxis_title="epoch", yaxis_title=metric.replace("_", " ")
    )
    return fig


def history_curves(histories: Sequence, metric: str, *, index: int | None = None) -> np.ndarray:
    """A metric of several runs as an array ``(n_runs, n_epochs)``.

    ``histories`` are :class:`dro_lab.History` objects (anything with ``h[metric]`` giving the
    per-epoch column). ``index`` picks one entry of a list-valued metric, e.g.
    ``history_curves(hs, "test_per_class_accuracy", index=3)`` is the accuracy on class 3.
    Runs must have the same number of epochs.
    """
    histories = list(histories)
    check_nonempty(histories, "histories")
    rows = []
    for h in histories:
        column = _column(h, metric)
        rows.append([col[index] for col in column] if index is not None else list(column))
    lengths = {len(r) for r in rows}
    if len(lengths) > 1:
        raise ValueError(f"history_curves needs runs of equal length, got {sorted(lengths)} epochs")
    return np.asarray(rows, dtype=float).reshape(len(rows), -1)


def _column(history, metric: str) -> list:
    """``history[metric]`` (a :class:`dro_lab.History`), with a ValueError naming ``metric`` when absent."""
    try:
        return history[metric]
    except (KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"metric {metric!r} is not in the history ({exc})") from None


def curves_figure(
    curves: Mapping[str, Sequence],
    *,
    title: str | None = None,
    yaxis_title: str = "",
    xaxis_title: str = "epoch",
    x=None,
    colors: Mapping[str, str] | None = None,
    reference: Mapping[str, float] | None = None,
) -> go.Figure:
    """One line per method: the mean over runs (seeds) with a ± one-standard-deviation band.

    Args:
        curves: method name → array ``(n_runs, n_points)`` (or one curve). The band is the
            sample standard deviation over runs (``ddof=1``) and is drawn only for ≥ 2 runs.
        x: the x values (default ``1 .. n_points``, the epochs).
        colors: method name → colour (the course draws ERM blue and DRO β = 10 red, as the paper);
            other methods take the palette in order.
        reference: label → y of dashed horizontal reference lines (e.g. a uniform share).
    """
    check_nonempty(curves, "curves")
    fig = go.Figure()
    palette = method_colors(list(curves), colors)
    for name, c in curves.items():
        add_band_traces(fig, x, c, name=name, color=palette[name])
    for label, y in (reference or {}).items():
        fig.add_hline(
            y=float(y), line=dict(color="grey", dash="dash"), annotation_text=label, annotation_position="top left"
        )
    fig.update_layout(
        **LAYOUT,
        title=title or yaxis_title,
        xaxis_title=xaxis_title,
        yaxis_title=yaxis_title,
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def curves_grid_figure(
    panels: Mapping[str, Mapping[str, Sequence]],
    *,
    cols: int = 2,
    title: str | None = None,
    x=None,
    colors: Mapping[str, str] | None = None,
    height: int | None = None,
) -> go.Figure:
    """A grid of :func:`curves_figure` panels sharing one legend (the paper's Figure 2 is 2 × 2).

    ``panels`` maps a panel title (also its y-axis meaning) to ``{method: (n_runs, n_points)}``.
    """
    titles = list(panels)
    if not titles:
        raise ValueError("curves_grid_figure needs at least one panel")
    cols = check_int(cols, "cols")
    rows = -(-len(titles) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.1, vertical_spacing=0.14)
    names = list(dict.fromkeys(name for p in panels.values() for name in p))
    palette = method_colors(names, colors)
    seen: set[str] = set()
    for k, panel_title in enumerate(titles):
        r, c = k // cols + 1, k % cols + 1
        for name, cur in panels[panel_title].items():
            add_band_traces(fig, x, cur, name=name, color=palette[name], row=r, col=c, showlegend=name not in seen)
            seen.add(name)
        fig.update_xaxes(title_text="epoch", row=r, col=c)
    fig.update_layout(**layout(height=height or 330 * rows + 80), title=title, legend=dict(orientation="h", y=-0.12))
    return fig


def method_sweep_figure(
    x,
    results: Mapping[str, object],
    *,
    x_title: str,
    y_title: str,
    log_x: bool = False,
    title: str | None = None,
    paper: Mapping[str, Sequence[float]] | None = None,
    colors: Mapping[str, str] | None = None,
) -> go.Figure:
    """A metric against a sweep (the ALSO paper's Fig. 1: F1 against the imbalance coefficient).

    ``results`` maps a method to an array ``(n_seeds, len(x))``: a mean line with a ± sample-std
    band (drawn for ≥ 2 seeds). ``paper`` maps a method to the paper's values at ``x``, drawn as
    open diamonds in the method's colour.
    """
    xs = np.asarray(x, dtype=float).reshape(-1)
    palette = method_colors(list(results) + [m for m in (paper or {}) if m not in results], colors)
    fig = go.Figure()
    for name, curves in results.items():
        a = np.asarray(to_numpy(curves), dtype=float)
        if a.shape[-1] != xs.size:
            raise ValueError(f"results[{name!r}] must have len(x) = {xs.size} columns, got shape {a.shape}")
        add_band_traces(fig, xs, a, name=name, color=palette[name])
    add_paper_markers(fig, paper, xs, palette, expected=f"len(x) = {xs.size} values")
    fig.update_layout(
        **LAYOUT,
        title=title or f"{y_title} against {x_title}",
        xaxis_title=x_title,
        yaxis_title=y_title,
        legend=dict(orientation="h", y=-0.25),
    )
    if log_x:
        fig.update_xaxes(type="log")
    return fig


def method_tradeoff_figure(
    average: Mapping[str, Sequence[float]],
    worst: Mapping[str, Sequence[float]],
    *,
    title: str | None = None,
    cost: Mapping[str, float] | None = None,
    x_title: str = "average metric",
    y_title: str = "worst-group metric",
    colors: Mapping[str, str] | None = None,
) -> go.Figure:
    """Average against worst-group metric, one point per method (mean over seeds, ± sample-std bars both ways).

    ``average`` and ``worst`` map a method to its per-seed values. With ``cost`` (method → seconds
    per epoch) the marker area grows with the cost and the hover text gives it. Up and to the
    right is better on both counts.
    """
    missing = set(average) ^ set(worst)
    if missing:
        raise ValueError(f"average and worst must name the same methods; unmatched: {sorted(missing)}")
    palette = method_colors(list(average), colors)
    top_cost = max((float(v) for v in (cost or {}).values()), default=0.0)
    fig = go.Figure()
    for name in average:
        mx, sx, _ = mean_std(np.asarray(to_numpy(average[name]), dtype=float).reshape(-1, 1))
        my, sy, _ = mean_std(np.asarray(to_numpy(worst[name]), dtype=float).reshape(-1, 1))
        marker = dict(color=palette[name], size=12, line=dict(width=1, color="black"))
        hover = f"{name}<br>average {mx[0]:.4g} ± {sx[0]:.2g}<br>worst {my[0]:.4g} ± {sy[0]:.2g}"
        if cost is not None and name in cost and top_cost > 0:
            # area ∝ cost: the dearest method is 40 px across, none below 6 px
            marker.update(size=float(cost[name]), sizemode="area", sizeref=2.0 * top_cost / 40**2, sizemin=6)
            hover += f"<br>{float(cost[name]):.3g} s / epoch"
        fig.add_trace(
            go.Scatter(
                x=mx,
                y=my,
                mode="markers",
                name=name,
                text=[hover],
                hoverinfo="text",
                marker=marker,
                error_x=dict(type="data", array=sx, visible=True),
                error_y=dict(type="data", array=sy, visible=True),
            )
        )
    fig.update_layout(
        **LAYOUT,
        title=title
        or "Average vs worst-group (mean ± std over seeds)" + (" — marker area ∝ cost per epoch" if cost else ""),
        xaxis_title=x_title,
        yaxis_title=y_title,
        legend=dict(orientation="h", y=-0.25),
    )
    return fig
