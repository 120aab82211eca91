"""Lesson 05, attacks and robust accuracy: PGD on a 2-D toy, per-class robust accuracy, PGD against AutoAttack, and
an experiment's final metrics: one run's with their intervals, and the shipped reference run beside the reader's.

Here α is the attack step and ε the attack radius.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dro_course.beside import is_illustration
from dro_course.figures._style import (
    LAYOUT,
    PALETTE,
    add_paper_markers,
    add_seed_lines,
    class_labels,
    layout,
    mean_std,
    method_colors,
    polylines,
    seed_array,
)
from dro_lab._validation import check_int
from dro_lab.data.fashion import FASHION_MNIST_CLASSES
from dro_lab.experiments.result import ExperimentResult
from dro_lab.experiments.verdict import judge
from dro_lab.utils import to_numpy


def _ball_outline(center: np.ndarray, eps: float, norm: str) -> np.ndarray:
    """The boundary of the ε-ball around ``center``: a closed square (L∞) or a 48-gon circle (L2)."""
    if norm == "linf":
        corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]], dtype=float)
        return center + eps * corners
    t = np.linspace(0.0, 2 * np.pi, 49)
    return center + eps * np.stack([np.cos(t), np.sin(t)], 1)


def attack_toy_figure(
    grid_x,
    grid_y,
    grid_prob,
    points,
    labels,
    adv_points=None,
    *,
    eps: float | None = None,
    norm: str = "linf",
    title: str | None = None,
    n_balls: int = 5,
) -> go.Figure:
    r"""An attack on a 2-D two-class toy: P(class 1) over the grid (``grid_prob`` of shape
    ``(len(grid_y), len(grid_x))``, as ``np.meshgrid(grid_x, grid_y)`` lays it out) with its 0.5 contour,
    the clean points by label and, with ``adv_points``, the adversarial points (crosses) joined to their
    clean points by thin segments (one trace, one segment per point, separated by ``None``). With ``eps``
    the ε-ball (square for ``norm="linf"``, circle for ``"l2"``) is drawn around the first ``n_balls``
    points.
    """
    gx, gy, prob, pts, y, adv, n_balls = _attack_toy_arrays(
        grid_x, grid_y, grid_prob, points, labels, adv_points, eps=eps, norm=norm, n_balls=n_balls
    )
    fig = go.Figure()
    _add_probability_map(fig, gx, gy, prob)
    _add_attack_points(fig, pts, y, adv)
    if eps is not None and n_balls > 0:
        bx, by = polylines([_ball_outline(p, float(eps), norm) for p in pts[:n_balls]])
        name = f"ε-ball ({'L∞' if norm == 'linf' else 'L2'}, ε = {float(eps):.3g})"
        fig.add_trace(
            go.Scatter(
                x=bx, y=by, mode="lines", name=name, hoverinfo="skip", line=dict(color="black", width=1, dash="dot")
            )
        )
    fig.update_layout(
        **layout(height=480),
        legend=dict(x=1.18, y=1, xanchor="left", yanchor="top"),
        title=title or "Attack on a 2-D toy: P(class 1) and the boundary P = 0.5",
    )
    fig.update_xaxes(title_text="x₁", range=[gx.min(), gx.max()], constrain="domain")
    fig.update_yaxes(title_text="x₂", range=[gy.min(), gy.max()], scaleanchor="x", scaleratio=1, constrain="domain")
    return fig


def _attack_toy_arrays(grid_x, grid_y, grid_prob, points, labels, adv_points, *, eps, norm, n_balls):
    """The checked inputs of :func:`attack_toy_figure` as arrays: ``(gx, gy, prob, points, labels, adv, n_balls)``."""
    if norm not in ("linf", "l2"):
        raise ValueError(f"norm must be 'linf' or 'l2', got {norm!r}")
    if eps is not None and not (isinstance(eps, (int, float, np.floating)) and math.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps must be None or a finite number ≥ 0, got {eps!r}")
    n_balls = check_int(n_balls, "n_balls", low=0)
    gx, gy, prob = to_numpy(grid_x).reshape(-1), to_numpy(grid_y).reshape(-1), to_numpy(grid_prob)
    if prob.shape != (gy.size, gx.size):
        raise ValueError(
            f"grid_prob must have shape (len(grid_y), len(grid_x)) = {(gy.size, gx.size)}, got {prob.shape}"
        )
    pts, y = to_numpy(points), np.asarray(to_numpy(labels)).reshape(-1).astype(int)
    if pts.ndim != 2 or pts.shape[1] != 2 or pts.shape[0] != y.size:
        raise ValueError(f"points must be (n, 2) with one label each, got {pts.shape} and {y.size} labels")
    adv = None if adv_points is None else to_numpy(adv_points)
    if adv is not None and adv.shape != pts.shape:
        raise ValueError(f"adv_points must have the shape of points {pts.shape}, got {adv.shape}")
    return gx, gy, prob, pts, y, adv, n_balls


def _add_probability_map(fig: go.Figure, gx, gy, prob) -> None:
    """P(class 1) as a tinted map (class 0 blue, class 1 red, as the points) and its 0.5 contour in black."""
    tint = [[0.0, "#c6dbef"], [0.5, "#ffffff"], [1.0, "#fcbba1"]]
    fig.add_trace(
        go.Contour(
            x=gx,
            y=gy,
            z=prob,
            zmin=0.0,
            zmax=1.0,
            colorscale=tint,
            name="P(class 1)",
            contours=dict(coloring="heatmap", showlines=False),
            line=dict(width=0),
            colorbar=dict(title="P(class 1)", len=0.8),
            hovertemplate="P(class 1) = %{z:.2f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Contour(
            x=gx,
            y=gy,
            z=prob,
            contours=dict(start=0.5, end=0.5, size=1, coloring="lines"),
            colorscale=[[0, "black"], [1, "black"]],
            line=dict(color="black", width=2),
            showscale=False,
            name="boundary P = 0.5",
            showlegend=True,
            hoverinfo="skip",
        )
    )


def _add_attack_points(fig: go.Figure, pts: np.ndarray, y: np.ndarray, adv: np.ndarray | None) -> None:
    """The clean points by label and, with ``adv``, the adversarial points (crosses) joined to them by segments."""
    if adv is not None:
        sx, sy = polylines([np.stack([p, a]) for p, a in zip(pts, adv)])
        fig.add_trace(
            go.Scatter(
                x=sx,
                y=sy,
                mode="lines",
                name="clean → adversarial",
                hoverinfo="skip",
                line=dict(color="#555555", width=1),
            )
        )
    for c in np.unique(y):
        m = y == c
        color = PALETTE[int(c) % len(PALETTE)]
        fig.add_trace(
            go.Scatter(
                x=pts[m, 0],
                y=pts[m, 1],
                mode="markers",
                name=f"class {c} (clean)",
                legendgroup=f"class {c}",
                marker=dict(color=color, size=7, line=dict(color="white", width=1)),
            )
        )
        if adv is not None:
            fig.add_trace(
                go.Scatter(
                    x=adv[m, 0],
                    y=adv[m, 1],
                    mode="markers",
                    name=f"class {c} (adversarial)",
                    legendgroup=f"class {c}",
                    marker=dict(color=color, size=7, symbol="x-thin", line=dict(color=color, width=2)),
                )
            )


def _clipped(mean: np.ndarray, std: np.ndarray, limits) -> tuple[np.ndarray, np.ndarray]:
    """The whiskers below and above ``mean``: ± ``std``, cut at the ``limits`` of the metric (None: not cut)."""
    if limits is None:
        return std, std
    lo, hi = (float(v) for v in limits)
    return np.minimum(std, np.maximum(mean - lo, 0.0)), np.minimum(std, np.maximum(hi - mean, 0.0))


def per_class_robust_figure(
    per_class: Mapping[str, object],
    *,
    class_names=None,
    highlight_worst: int = 3,
    paper: Mapping[str, Sequence[float]] | None = None,
    title: str | None = None,
    yaxis_title: str = "robust accuracy (PGD)",
    colors: Mapping[str, str] | None = None,
    limits: tuple[float, float] | None = None,
) -> go.Figure:
    """Per-class robust accuracy, grouped bars per method (mean ± sample std over seeds; the paper's Fig. 1).

    ``per_class`` maps a method to an array ``(n_seeds, k)``. The ``highlight_worst`` classes with the lowest
    mean of the *first* method are shaded and their bars outlined in black (line width 3, else 0).
    ``paper`` maps a method to its k published values, drawn as open diamonds over the method's bars.
    ``limits`` (e.g. ``(0, 100)`` for percentages) clips the ± std whiskers to the metric's range.
    """
    if not per_class:
        raise ValueError("per_class must map at least one method to an array (n_seeds, k)")
    highlight_worst = check_int(highlight_worst, "highlight_worst", low=0)
    first = next(iter(per_class))
    k = np.asarray(to_numpy(per_class[first])).shape[-1]
    arrays = {m: seed_array(v, f"per_class[{m!r}]", k) for m, v in per_class.items()}
    names = class_labels(list(range(k)), class_names)
    palette = method_colors(list(arrays) + [m for m in (paper or {}) if m not in arrays], colors)
    worst = np.argsort(arrays[first].mean(0), kind="stable")[: max(0, int(highlight_worst))]
    fig = go.Figure()
    for name, a in arrays.items():
        mean, std, _ = mean_std(a)
        width = [3 if (name == first and j in worst) else 0 for j in range(k)]
        down, up = _clipped(mean, std, limits)
        fig.add_trace(
            go.Bar(
                x=names,
                y=mean,
                name=name,
                offsetgroup=name,
                marker_color=palette[name],
                marker_line=dict(color="black", width=width),
                error_y=dict(type="data", array=up, arrayminus=down, visible=True),
            )
        )
    add_paper_markers(fig, paper, names, palette, expected=f"one value per class ({k})", group="offsetgroup")
    for j in worst:
        fig.add_vrect(x0=j - 0.5, x1=j + 0.5, fillcolor="#d62728", opacity=0.08, line_width=0, layer="below")
    worst_txt = ", ".join(names[j] for j in worst)
    fig.update_layout(
        **LAYOUT,
        barmode="group",
        scattermode="group",
        xaxis_title="class",
        yaxis_title=yaxis_title,
        title=title or f"Per-class {yaxis_title} (mean ± std over seeds); worst {len(worst)} of {first}: {worst_txt}",
        legend=dict(orientation="h", y=-0.25),
    )
    fig.update_xaxes(type="category")
    return fig


def attack_gap_figure(
    pgd: Mapping[str, object],
    autoattack: Mapping[str, object],
    *,
    paper: Mapping[str, tuple[float, float]] | None = None,
    title: str | None = None,
) -> go.Figure:
    """PGD-20 against AutoAttack-style robust accuracy per method: two bars each (mean ± sample std over seeds),
    the gap PGD − AA written over the AutoAttack bar. ``paper`` maps a method to its published
    ``(PGD-20, AutoAttack)`` pair, drawn as open diamonds over the bars."""
    missing = set(pgd) ^ set(autoattack)
    if missing or not pgd:
        raise ValueError(f"pgd and autoattack must name the same, non-empty methods; unmatched: {sorted(missing)}")
    methods = list(pgd)
    stats = {}
    for label, source in (("PGD-20", pgd), ("AutoAttack", autoattack)):
        ms = [mean_std(seed_array(source[m], f"{label}[{m!r}]")) for m in methods]
        stats[label] = (np.array([s[0][0] for s in ms]), np.array([s[1][0] for s in ms]))
    gap = stats["PGD-20"][0] - stats["AutoAttack"][0]
    fig = go.Figure()
    for k, label in enumerate(("PGD-20", "AutoAttack")):
        mean, std = stats[label]
        # the gap inside the foot of the AutoAttack bar: at its top, the text would sit on the ± std whisker
        extra = (
            dict(text=[f"gap {g:.3g}" for g in gap], textposition="inside", insidetextanchor="start",
                 textfont=dict(color="white"))
            if label == "AutoAttack"
            else {}
        )  # fmt: skip
        fig.add_trace(
            go.Bar(
                x=methods,
                y=mean,
                name=f"{label} (ours)",
                offsetgroup=label,
                marker_color=["#7f7f7f", PALETTE[1]][k],
                error_y=dict(type="data", array=std, visible=True),
                **extra,
            )
        )
    if paper:
        known = [m for m in methods if m in paper]
        for k, label in enumerate(("PGD-20", "AutoAttack")):
            fig.add_trace(
                go.Scatter(
                    x=known,
                    y=[float(paper[m][k]) for m in known],
                    mode="markers",
                    name=f"{label} (paper)",
                    offsetgroup=label,
                    marker=dict(symbol="diamond-open", size=11, color="black", line=dict(width=2)),
                )
            )
    fig.update_layout(
        **LAYOUT,
        barmode="group",
        scattermode="group",
        title=title or "Robust accuracy: PGD-20 vs AutoAttack (mean ± std over seeds)",
        xaxis_title="method",
        yaxis_title="robust accuracy",
        legend=dict(orientation="h", y=-0.25),
    )
    fig.update_yaxes(rangemode="tozero")
    return fig


def _result_methods(result, methods, name: str) -> list[str]:
    if not isinstance(result, ExperimentResult):
        raise TypeError(f"{name} must be an ExperimentResult, got {type(result).__name__}")
    chosen = list(result.methods if methods is None else methods)
    unknown = [m for m in chosen if m not in result.methods]
    if not chosen or unknown:
        raise ValueError(f"methods must be a non-empty list of {result.methods}; unknown: {unknown}")
    return chosen


def _run_title(result: ExperimentResult, who: str) -> str:
    seeds = len(result.seeds)
    return f"{who}<br>{result.dataset}, {seeds} seed{'s' if seeds != 1 else ''}, {result.preset} preset"


def experiment_per_class_figure(
    result: ExperimentResult,
    *,
    methods: Sequence[str] | None = None,
    highlight_worst: int = 3,
    class_names=None,
    title: str | None = None,
) -> go.Figure:
    """Per-class robust accuracy of an experiment's final runs (Sow et al., §4.2, Fig. 1), in %: the final metrics
    ``class_0_robust_accuracy``, ``class_1_robust_accuracy`` … of ``result``, one array (seeds × classes) per
    method, drawn by :func:`per_class_robust_figure` with the whiskers kept in [0, 100]. The ``highlight_worst``
    outlined classes are the first method's weakest (for AT: the classes of its RA-Tail-30). Fashion-MNIST's classes
    are named (``T-shirt/top`` …) unless ``class_names`` says otherwise."""
    chosen = _result_methods(result, methods, "result")
    names = result.metric_names()
    k = 0
    while f"class_{k}_robust_accuracy" in names:
        k += 1
    if k == 0:
        raise ValueError(f"the result has no per-class robust accuracy (class_0_robust_accuracy …); it has {names}")
    finals = [result.final(f"class_{c}_robust_accuracy") for c in range(k)]
    per_class = {m: np.stack([f[m] for f in finals], axis=1) * 100.0 for m in chosen}
    if class_names is None and result.dataset == "fashion-mnist" and k == len(FASHION_MNIST_CLASSES):
        class_names = FASHION_MNIST_CLASSES
    seeds = len(result.seeds)
    return per_class_robust_figure(
        per_class,
        class_names=class_names,
        highlight_worst=highlight_worst,
        yaxis_title="robust accuracy, PGD (%)",
        limits=(0.0, 100.0),
        title=title
        or f"Per-class robust accuracy: {result.dataset}, {seeds} seed{'s' if seeds != 1 else ''}, "
        f"{result.preset} preset (worst {highlight_worst} of {chosen[0]} outlined)",
    )


def _add_final_metric(
    fig: go.Figure,
    result: ExperimentResult,
    metric: str,
    methods: list[str],
    colors: dict,
    scale: float,
    *,
    col: int,
    legend: bool,
    intervals: bool,
) -> None:
    """One panel of a final metric: a bar at each method's mean over seeds (with ``intervals``, whiskers at the
    95 % t-interval of that mean, kept inside [0, 100] for a percentage), one dot per seed, and the dots of one
    seed joined across methods."""
    finals = result.final(metric)
    means = [float(np.nanmean(finals[m])) * scale for m in methods]
    error = None
    if intervals:
        ends = np.array([_mean_interval(finals[m]) for m in methods]) * scale
        down, up = np.array(means) - ends[:, 0], ends[:, 1] - np.array(means)
        if scale == 100.0:  # an accuracy's interval stops at 0 and 100 %
            down, up = np.minimum(down, np.array(means)), np.minimum(up, 100.0 - np.array(means))
        error = dict(type="data", array=list(up), arrayminus=list(down), visible=True, color="black",
                     thickness=2.5, width=10)  # fmt: skip
    fig.add_trace(
        go.Bar(
            x=methods,
            y=means,
            marker_color=[colors[m] for m in methods],
            opacity=0.45,
            name="mean over seeds" + (" (95 % interval)" if intervals else ""),
            showlegend=legend,
            error_y=error,
            hovertemplate="%{x}: mean %{y:.1f}<extra></extra>",
        ),
        row=1,
        col=col,
    )
    add_seed_lines(fig, result.seeds, finals, methods, scale, colors=colors, legend=legend, row=1, col=col)
    fig.update_xaxes(type="category", row=1, col=col)
    if scale == 100.0:  # an accuracy axis from 0, never below it (an all-zero run would centre on 0)
        top = float(np.nanmax([np.nanmax(finals[m]) for m in methods])) * scale
        if error is not None:
            top = max(top, max(mu + up for mu, up in zip(means, error["array"])))
        fig.update_yaxes(range=[0.0, min(100.0, 1.1 * top + 1.0)], row=1, col=col)


def _mean_interval(values) -> tuple[float, float]:
    """The 95 % t-interval of the mean of a method's seeds (the interval the verdicts read, by the library's
    :func:`~dro_lab.experiments.judge`), missing seeds set aside; the mean itself for fewer than two seeds."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < 2:
        mean = float(v.mean()) if v.size else float("nan")
        return mean, mean
    return tuple(float(end) for end in judge(v, min_seeds=2).interval)


def final_metrics_figure(
    result: ExperimentResult,
    metrics: Sequence[str],
    *,
    methods: Sequence[str] | None = None,
    percent: bool = True,
    titles: Sequence[str] | None = None,
    title: str | None = None,
) -> go.Figure:
    """Final metrics of one run of an experiment (the shipped reference run, say), one panel per metric: a bar at
    each method's mean over seeds with whiskers at the 95 % t-interval of that mean, one dot per seed, and the dots
    of one seed joined across methods (the paired differences behind the verdicts). One colour per method in every
    panel; each panel keeps its own y-axis. ``titles`` names the panels (default: the metrics' names);
    ``percent`` draws fractions in %."""
    chosen = _result_methods(result, methods, "result")
    if isinstance(metrics, str) or not metrics or not all(isinstance(m, str) for m in metrics):
        raise TypeError(f"metrics must be a non-empty list of metric names, got {metrics!r}")
    names = list(titles) if titles is not None else [m.replace("_", " ") for m in metrics]
    if len(names) != len(metrics):
        raise ValueError(f"titles must name each of the {len(metrics)} metrics, got {len(names)}")
    scale, unit = (100.0, " (%)") if percent else (1.0, "")
    colors = method_colors(chosen, None)
    fig = make_subplots(rows=1, cols=len(metrics), horizontal_spacing=0.08, subplot_titles=names)
    for col, metric in enumerate(metrics, 1):
        _add_final_metric(fig, result, metric, chosen, colors, scale, col=col, legend=col == 1, intervals=True)
        fig.update_yaxes(title_text=("accuracy" if percent else "value") + unit if col == 1 else None, row=1, col=col)
    seeds = len(result.seeds)
    fig.update_layout(
        **layout(height=500, margin=dict(l=60, r=20, t=110, b=120)),
        title=dict(
            text=title
            or f"{result.dataset}, {seeds} paired seed{'s' if seeds != 1 else ''}, "
            f"{result.preset} preset: mean, 95 % interval and every seed",
            y=0.97,
        ),
        legend=dict(orientation="h", y=-0.32),
    )
    return fig


def final_metric_beside_figure(
    reference: ExperimentResult,
    live: ExperimentResult,
    metric: str,
    *,
    methods: Sequence[str] | None = None,
    percent: bool = True,
    title: str | None = None,
) -> go.Figure:
    """One final metric of every method, the shipped reference run (left) beside the reader's run (right): a bar
    at the mean over seeds, one dot per seed, and the dots of one seed joined across methods (the paired
    differences behind the verdicts). One colour per method in both panels; each panel is titled with its data
    set, seeds and preset (the reader's "an illustration" when it is too small to judge,
    :func:`~dro_course.beside.is_illustration`), and keeps its own y-axis (a smoke run on other data need not
    share the reference's scale). ``percent`` draws fractions in %."""
    chosen = _result_methods(reference, methods, "reference")
    _result_methods(live, chosen, "live")
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a metric's name, got {type(metric).__name__}")
    scale, unit = (100.0, " (%)") if percent else (1.0, "")
    colors = method_colors(chosen, None)
    yours = "Your run (an illustration)" if is_illustration(live) else "Your run"
    fig = make_subplots(
        rows=1, cols=2, horizontal_spacing=0.1,
        subplot_titles=(_run_title(reference, "Reference run"), _run_title(live, yours)),
    )  # fmt: skip
    for col, result in ((1, reference), (2, live)):
        _add_final_metric(fig, result, metric, chosen, colors, scale, col=col, legend=col == 1, intervals=False)
    fig.update_yaxes(title_text=metric.replace("_", " ") + unit, row=1, col=1)
    fig.update_layout(
        **layout(height=500, margin=dict(l=60, r=20, t=110, b=120)),
        title=dict(text=title or f"{metric.replace('_', ' ')}: the reference run beside yours", y=0.97),
        legend=dict(orientation="h", y=-0.32),
    )
    return fig
