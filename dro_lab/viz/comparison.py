"""Lesson 07, the capstone: every method on one figure, average against worst-group accuracy with the cost as
marker area, the Pareto front and the reference method's accuracies (input: :func:`dro_lab.comparison.summarise`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from ._style import PALETTE, layout

_LESSON_SYMBOLS = ["circle", "square", "diamond", "triangle-up", "cross", "x", "star", "hexagon"]


def comparison_figure(
    summary: Sequence[Mapping],
    *,
    front: Sequence[str] | None = None,
    reference: str = "ERM",
    title: str | None = None,
    x_title: str = "average test accuracy",
    y_title: str = "worst-group test accuracy",
    max_marker: float = 44.0,
) -> go.Figure:
    """The capstone's at-a-glance figure: average against worst-group accuracy, cost as marker area.

    ``summary`` is a list of dicts with ``method``, ``avg_acc``, ``worst_group_acc``, ``seconds_per_epoch`` and
    optionally ``avg_acc_sd``, ``worst_group_acc_sd``, ``lesson``, ``n_seeds`` and ``cost_vs_reference``
    (what :func:`dro_lab.comparison.summarise` returns). Traces, in order: one per method (a labelled marker
    with ± std error bars both ways; area ∝ seconds per epoch, the dearest ``max_marker`` px across, none
    below 8 px; colour by lesson, symbol by rank within the lesson), then ``"Pareto front"`` (a line through
    ``front``, the methods in that list, sorted by average accuracy; omitted when ``front`` is ``None`` or
    empty), then ``"<reference> average"`` and ``"<reference> worst group"`` (dashed lines at the reference
    method's two accuracies; omitted when it is not in ``summary``). Up and to the right is better on both.
    """
    entries = _checked_entries(summary, front)
    lessons = list(dict.fromkeys(e.get("lesson", "") for e in entries))
    top = max(float(e["seconds_per_epoch"]) for e in entries)
    rank: dict[str, int] = defaultdict(int)
    fig = go.Figure()
    for e in entries:
        lesson = e.get("lesson", "")
        color = PALETTE[lessons.index(lesson) % len(PALETTE)]
        symbol = _LESSON_SYMBOLS[rank[lesson] % len(_LESSON_SYMBOLS)]
        rank[lesson] += 1
        sec = float(e["seconds_per_epoch"])
        size = max(8.0, max_marker * math.sqrt(sec / top)) if top > 0 else 12.0  # area ∝ cost
        fig.add_trace(_method_point(e, color=color, symbol=symbol, size=size, reference=reference))
    if front:
        pts = sorted((float(e["avg_acc"]), float(e["worst_group_acc"])) for e in entries if e["method"] in front)
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in pts],
                y=[p[1] for p in pts],
                mode="lines",
                name="Pareto front",
                line=dict(color="black", width=1.5, dash="dot"),
                hoverinfo="skip",
            )
        )
    _add_reference_lines(fig, entries, reference)
    n_seeds = max(int(e.get("n_seeds", 1)) for e in entries)
    fig.update_layout(
        **layout(height=560),
        xaxis_title=x_title,
        yaxis_title=y_title,
        title=title
        or (f"Average vs worst-group accuracy (mean ± std over {n_seeds} seed(s)); marker area ∝ seconds per epoch"),
        legend=dict(orientation="v", x=1.02, y=1.0, font=dict(size=10)),
    )
    return fig


def _checked_entries(summary: Sequence[Mapping], front: Sequence[str] | None) -> list[Mapping]:
    """``summary`` as a list, each entry holding the keys the figure needs and ``front`` naming only its methods."""
    entries = list(summary)
    if not entries:
        raise ValueError("summary is empty: nothing to draw")
    for i, e in enumerate(entries):
        missing = [k for k in ("method", "avg_acc", "worst_group_acc", "seconds_per_epoch") if k not in e]
        if missing:
            raise ValueError(f"summary[{i}] lacks {missing}")
    names = [e["method"] for e in entries]
    unknown = [m for m in (front or []) if m not in names]
    if unknown:
        raise ValueError(f"front names methods not in summary: {unknown}")
    return entries


def _method_point(e: Mapping, *, color: str, symbol: str, size: float, reference: str) -> go.Scatter:
    """One method's labelled marker with ± std error bars both ways and its numbers in the hover text."""
    lesson = e.get("lesson", "")
    sec, ratio = float(e["seconds_per_epoch"]), e.get("cost_vs_reference")
    cost_txt = f"{sec * 1e3:.3g} ms / epoch"
    if ratio is not None and math.isfinite(ratio):
        cost_txt += f" (×{ratio:.2f} {reference})"
    hover = (
        f"<b>{e['method']}</b> ({lesson or 'no lesson'})<br>average {e['avg_acc']:.3f} ± "
        f"{e.get('avg_acc_sd', 0.0):.3f}<br>worst group {e['worst_group_acc']:.3f} ± "
        f"{e.get('worst_group_acc_sd', 0.0):.3f}<br>{cost_txt}<br>{e.get('n_seeds', 1)} seed(s)"
    )
    return go.Scatter(
        x=[float(e["avg_acc"])],
        y=[float(e["worst_group_acc"])],
        mode="markers+text",
        name=e["method"],
        text=[e["method"]],
        textposition="top center",
        textfont=dict(size=10, color=color),
        hovertext=[hover],
        hoverinfo="text",
        legendgroup=lesson or e["method"],
        marker=dict(color=color, symbol=symbol, size=size, opacity=0.75, line=dict(width=1, color="black")),
        error_x=dict(type="data", array=[float(e.get("avg_acc_sd", 0.0))], visible=True, color=color),
        error_y=dict(type="data", array=[float(e.get("worst_group_acc_sd", 0.0))], visible=True, color=color),
    )


def _add_reference_lines(fig: go.Figure, entries: Sequence[Mapping], reference: str) -> None:
    """Dashed lines at the reference method's average and worst-group accuracy (nothing when it did not run)."""
    ref = next((e for e in entries if e["method"] == reference), None)
    if ref is None:
        return
    xs = [float(e["avg_acc"]) for e in entries]
    ys = [float(e["worst_group_acc"]) for e in entries]
    dashed = dict(color="grey", width=1, dash="dash")
    fig.add_trace(
        go.Scatter(
            x=[ref["avg_acc"]] * 2,
            y=[min(ys), max(ys)],
            mode="lines",
            name=f"{reference} average",
            hoverinfo="skip",
            line=dashed,
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[min(xs), max(xs)],
            y=[ref["worst_group_acc"]] * 2,
            mode="lines",
            name=f"{reference} worst group",
            hoverinfo="skip",
            line=dashed,
        )
    )
