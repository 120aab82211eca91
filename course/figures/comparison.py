"""Lesson 07, the capstone: every method on one figure, average against worst-group accuracy with the cost as
marker area, the Pareto front and the reference method's accuracies (input: the lesson's
:func:`~dro_course.lessons.comparison.study.summarise`).

Several methods land close together (the group methods near the top, ERM under the adversarial ones), so the
figure is drawn to stay readable when crowded: each method's name is a boxed label with a thin leader line,
placed by :mod:`._labels` so that no two labels overlap and none covers a marker; the markers are drawn largest
first (a small marker is never under a large one), with an outline and some transparency.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from dro_course.figures._labels import Frame, label_size, place_labels
from dro_course.figures._style import PALETTE, layout
from dro_lab._validation import check_number

_SYMBOLS = ["circle", "square", "diamond", "triangle-up", "cross", "x", "star", "hexagon"]
#: Margins of the figure in pixels: the legend sits in the right one (fixed, so labels can be placed in pixels).
MARGIN = dict(l=70, r=200, t=60, b=60)
LABEL_FONT = 11
MARKER_OPACITY = 0.7


def comparison_figure(
    summary: Sequence[Mapping],
    *,
    front: Sequence[str] | None = None,
    reference: str = "ERM",
    title: str | None = None,
    x_title: str = "average test accuracy",
    y_title: str = "worst-group test accuracy",
    max_marker: float = 44.0,
    width: float = 980,
    height: float = 600,
) -> go.Figure:
    """The capstone's at-a-glance figure: average against worst-group accuracy, cost as marker area.

    ``summary`` is a list of dicts with ``method``, ``avg_acc``, ``worst_group_acc``, ``seconds_per_epoch`` and
    optionally ``avg_acc_sd``, ``worst_group_acc_sd``, ``family``, ``n_seeds`` and ``cost_vs_reference``
    (what :func:`~dro_course.lessons.comparison.summarise` gives). Traces, in order: one per method, the largest marker
    first (a marker with ± std error bars both ways, clipped to [0, 1]; area ∝ seconds per epoch, the dearest
    ``max_marker`` px across, none below 8 px; colour by family (groups, hard examples, baseline), symbol by rank within
    it; the legend keeps ``summary``'s order), then ``"Pareto front"`` (a line through ``front``, the methods in that
    list, sorted by average accuracy; omitted when ``front`` is ``None`` or empty), then ``"<reference> average"`` and
    ``"<reference> worst group"`` (dashed lines at the reference method's two accuracies; omitted when it is not in
    ``summary``). Each method is named by an annotation (``name="label: <method>"``) with a leader line to its marker,
    placed so that no two labels overlap and none covers a marker. The figure is ``width`` × ``height`` pixels with
    fixed margins and axis ranges (the labels are placed in pixels). Up and to the right is better on both axes."""
    entries = _checked_entries(summary, front)
    width = check_number(width, "width", low=300)
    height = check_number(height, "height", low=250)
    max_marker = check_number(max_marker, "max_marker", low=8)
    families = list(dict.fromkeys(e.get("family", "") for e in entries))
    top = max(float(e["seconds_per_epoch"]) for e in entries)
    rank: dict[str, int] = defaultdict(int)
    styles = []
    for e in entries:
        family = e.get("family", "")
        sec = float(e["seconds_per_epoch"])
        size = max(8.0, max_marker * math.sqrt(sec / top)) if top > 0 else 12.0  # area ∝ cost
        styles.append((PALETTE[families.index(family) % len(PALETTE)], _SYMBOLS[rank[family] % 8], size))
        rank[family] += 1
    frame = _frame(entries, width, height, max_marker)
    fig = go.Figure()
    order = sorted(range(len(entries)), key=lambda i: -styles[i][2])  # largest first: small markers stay on top
    for i in order:
        color, symbol, size = styles[i]
        fig.add_trace(_method_point(entries[i], color=color, symbol=symbol, size=size, reference=reference, rank=i))
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
                legendrank=len(entries) + 1,
            )
        )
    _add_reference_lines(fig, entries, reference, frame)
    n_seeds = max(int(e.get("n_seeds", 1)) for e in entries)
    fig.update_layout(
        **layout(height=height, width=width, margin=dict(**MARGIN, autoexpand=False)),
        xaxis=dict(title=x_title, range=list(frame.x_range), autorange=False),
        yaxis=dict(title=y_title, range=list(frame.y_range), autorange=False),
        title=dict(
            text=title or f"Average vs worst-group accuracy (mean ± std, {n_seeds} seed(s)); marker area ∝ s / epoch",
            font=dict(size=15),
        ),
        legend=dict(orientation="v", x=1.02, y=1.0, font=dict(size=10), itemsizing="constant"),
        annotations=_labels(entries, styles, frame),
    )
    return fig


def _checked_entries(summary: Sequence[Mapping], front: Sequence[str] | None) -> list[Mapping]:
    """``summary`` as a list, each entry holding the keys the figure needs and ``front`` naming only its methods."""
    if isinstance(summary, (str, bytes, Mapping)) or not isinstance(summary, Sequence):
        raise TypeError(f"summary must be a list of dicts (from summarise), got {type(summary).__name__}")
    entries = list(summary)
    if not entries:
        raise ValueError("summary is empty: nothing to draw")
    for i, e in enumerate(entries):
        if not isinstance(e, Mapping):
            raise TypeError(f"summary[{i}] must be a dict, got {type(e).__name__}")
        missing = [k for k in ("method", "avg_acc", "worst_group_acc", "seconds_per_epoch") if k not in e]
        if missing:
            raise ValueError(f"summary[{i}] lacks {missing}")
        for key in ("avg_acc", "worst_group_acc", "seconds_per_epoch"):
            check_number(float(e[key]), f"summary[{i}][{key!r}]")
    names = [e["method"] for e in entries]
    unknown = [m for m in (front or []) if m not in names]
    if unknown:
        raise ValueError(f"front names methods not in summary: {unknown}")
    return entries


def _frame(entries: Sequence[Mapping], width: float, height: float, max_marker: float) -> Frame:
    """The figure's pixel frame: axis ranges that hold every marker and error bar with room for the labels."""
    area_w = width - MARGIN["l"] - MARGIN["r"]
    area_h = height - MARGIN["t"] - MARGIN["b"]
    ranges = []
    for key, room in (("avg_acc", area_w), ("worst_group_acc", area_h)):
        lo = min(max(0.0, float(e[key]) - float(e.get(f"{key}_sd", 0.0))) for e in entries)
        hi = max(min(1.0, float(e[key]) + float(e.get(f"{key}_sd", 0.0))) for e in entries)
        span = max(hi - lo, 0.02)
        edge = min(max_marker / 2 + 45, room / 4)  # pixels kept free on each side for the markers and labels
        pad = span * edge / (room - 2 * edge)
        ranges.append((lo - pad, hi + pad))
    return Frame(width, height, MARGIN["l"], MARGIN["r"], MARGIN["t"], MARGIN["b"], ranges[0], ranges[1])


def _labels(entries: Sequence[Mapping], styles, frame: Frame) -> list[dict]:
    """One boxed label per method with a leader line to its marker, placed clear of every label and marker."""
    points = [frame.to_pixels(float(e["avg_acc"]), float(e["worst_group_acc"])) for e in entries]
    texts = [str(e["method"]) for e in entries]
    sizes = [label_size(t, LABEL_FONT) for t in texts]
    radii = [s / 2 + 1 for _, _, s in styles]
    offsets = place_labels(points, sizes, radii, frame.area)
    return [
        dict(
            name=f"label: {e['method']}",
            x=float(e["avg_acc"]),
            y=float(e["worst_group_acc"]),
            xref="x",
            yref="y",
            text=text,
            showarrow=True,
            arrowhead=0,
            arrowwidth=1,
            arrowcolor=color,
            standoff=r,
            ax=dx,
            ay=dy,
            axref="pixel",
            ayref="pixel",
            xanchor="center",
            yanchor="middle",
            font=dict(size=LABEL_FONT, color="#222"),
            bgcolor="rgba(255,255,255,0.85)",
            bordercolor=color,
            borderwidth=1,
            borderpad=2,
        )
        for e, text, (color, _, _), r, (dx, dy) in zip(entries, texts, styles, radii, offsets)
    ]


def _method_point(e: Mapping, *, color: str, symbol: str, size: float, reference: str, rank: int) -> go.Scatter:
    """One method's marker with ± std error bars both ways (clipped to [0, 1]) and its numbers in the hover."""
    family = e.get("family", "")
    sec, ratio = float(e["seconds_per_epoch"]), e.get("cost_vs_reference")
    cost_txt = f"{sec * 1e3:.3g} ms / epoch"
    if ratio is not None and math.isfinite(ratio):
        cost_txt += f" (×{ratio:.2f} {reference})"
    x, y = float(e["avg_acc"]), float(e["worst_group_acc"])
    sx, sy = float(e.get("avg_acc_sd", 0.0)), float(e.get("worst_group_acc_sd", 0.0))
    hover = (
        f"<b>{e['method']}</b> ({family or 'no family'})<br>average {x:.3f} ± {sx:.3f}<br>worst group {y:.3f} ± "
        f"{sy:.3f}<br>{cost_txt}<br>{e.get('n_seeds', 1)} seed(s)"
    )
    return go.Scatter(
        x=[x],
        y=[y],
        mode="markers",
        name=e["method"],
        hovertext=[hover],
        hoverinfo="text",
        legendgroup=family or e["method"],
        legendrank=rank + 1,
        marker=dict(color=color, symbol=symbol, size=size, opacity=MARKER_OPACITY, line=dict(width=1.5, color="#333")),
        error_x=_bar(x, sx, color),
        error_y=_bar(y, sy, color),
    )


def _bar(value: float, sd: float, color: str) -> dict:
    """± ``sd`` error bars cut at the accuracies' range [0, 1]."""
    return dict(
        type="data",
        symmetric=False,
        array=[max(0.0, min(sd, 1.0 - value))],
        arrayminus=[max(0.0, min(sd, value))],
        visible=True,
        color=color,
        thickness=1.2,
    )


def _add_reference_lines(fig: go.Figure, entries: Sequence[Mapping], reference: str, frame: Frame) -> None:
    """Dashed lines across the plot at the reference method's average and worst-group accuracy (none when it
    did not run)."""
    ref = next((e for e in entries if e["method"] == reference), None)
    if ref is None:
        return
    dashed = dict(color="grey", width=1, dash="dash")
    rank = len(entries) + 2
    for name, xs, ys in (
        (f"{reference} average", [ref["avg_acc"]] * 2, list(frame.y_range)),
        (f"{reference} worst group", list(frame.x_range), [ref["worst_group_acc"]] * 2),
    ):
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=name, hoverinfo="skip", line=dashed, legendrank=rank))
