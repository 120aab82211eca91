"""Lesson 05, doubly robust adversarial training (DONE): the instance weights per class and the learning process
(r(t), the learning rate and per-epoch metrics).

Here r is DONE's KL temperature (ω = softmax(ℓ/r) over the batch); ω·|B| = 1 is the uniform weight 1/|B| of plain
adversarial training.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dro_course.figures._style import CLASS_COLORS, PALETTE, add_band_traces, class_labels, layout, seed_array
from dro_lab.utils import to_numpy

_LOG_FLOOR = -12.0  # log10(ω·|B|) of weights that underflow (ω·|B| < 10⁻¹²) is drawn at this floor


def done_weight_figure(
    weights, labels, *, class_names=None, title: str | None = None, class_accuracy=None
) -> go.Figure:
    r"""DONE's weights per class (the paper's Fig. 5): left, :math:`\log_{10}(\omega_i|\mathcal B|)` per class as a
    box with all points, dashed at 0 (the uniform weight 1/|B|); right, the class mean of ω·|B| (bars, dashed
    at 1).

    ``weights`` and ``labels`` are one vector each over the same |B| examples. ``class_names`` is a sequence
    indexed by the label (or a mapping label → name). With ``class_accuracy`` (one value per class, in the order
    of the sorted labels, e.g. each class's robust accuracy) the right panel becomes a scatter of class-mean
    weight against it (the paper's negative correlation). Weights below 10⁻¹²/|B| are drawn at −12.
    """
    w, y = to_numpy(weights).reshape(-1), np.asarray(to_numpy(labels)).reshape(-1)
    if w.size != y.size or w.size == 0:
        raise ValueError(f"weights and labels must be non-empty and of the same length, got {w.size} and {y.size}")
    b = w.size
    classes = [int(c) if float(c).is_integer() else c for c in np.unique(y)]
    names = class_labels(classes, class_names)
    colors = [CLASS_COLORS[k % len(CLASS_COLORS)] for k in range(len(classes))]
    scaled = w * b
    logs = np.log10(np.maximum(scaled, 10**_LOG_FLOOR))
    means = np.array([scaled[y == c].mean() for c in classes])
    right = "class-mean ω·|B|" + (" vs class accuracy" if class_accuracy is not None else "")
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.62, 0.38],
        horizontal_spacing=0.1,
        subplot_titles=("log₁₀(ω·|B|) per class (0 = uniform 1/|B|)", right),
    )
    for c, name, color in zip(classes, names, colors):
        fig.add_trace(
            go.Box(
                y=logs[y == c],
                name=name,
                legendgroup=name,
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                marker=dict(color=color, size=4, opacity=0.6),
                line=dict(color=color),
                showlegend=False,
            ),
            row=1,
            col=1,
        )
    fig.add_hline(y=0.0, line=dict(color="black", dash="dash", width=1), row=1, col=1)
    _add_class_means(fig, names, means, colors, class_accuracy)
    fig.add_hline(y=1.0, line=dict(color="black", dash="dash", width=1), row=1, col=2)
    # the figure's title above the two panels' titles, not on them
    text = title or f"DONE weights per class (|B| = {b})"
    fig.update_layout(**layout(margin=dict(l=60, r=20, t=95, b=50), height=420), title=dict(text=text, y=0.97))
    fig.update_xaxes(title_text="class", type="category", row=1, col=1)
    fig.update_yaxes(title_text="log₁₀(ω·|B|)", row=1, col=1)
    fig.update_yaxes(title_text="mean ω·|B|", rangemode="tozero", row=1, col=2)
    return fig


_POSITIONS = ("top center", "bottom center", "middle right", "middle left")


def _label_positions(x: np.ndarray, y: np.ndarray) -> list[str]:
    """A text position per point such that two labels of nearby points (within 6 % of the x range and 8 % of the
    y range) take different sides; the first free one of above, below, right, left."""
    span_x, span_y = max(np.ptp(x), 1e-12), max(np.ptp(y), 1e-12)
    placed: list[tuple[float, float, str]] = []
    out = []
    for xi, yi in zip(x, y):
        near = {p for (xj, yj, p) in placed if abs(xi - xj) < 0.06 * span_x and abs(yi - yj) < 0.08 * span_y}
        pos = next((p for p in _POSITIONS if p not in near), _POSITIONS[0])
        placed.append((float(xi), float(yi), pos))
        out.append(pos)
    return out


def _add_class_means(fig: go.Figure, names: list[str], means: np.ndarray, colors: list[str], class_accuracy) -> None:
    """The class-mean ω·|B| as bars, or against each class's accuracy as a labelled scatter (right panel)."""
    if class_accuracy is None:
        fig.add_trace(
            go.Bar(x=names, y=means, name="class-mean ω·|B|", showlegend=False, marker_color=colors), row=1, col=2
        )
        fig.update_xaxes(title_text="class", type="category", row=1, col=2)
        return
    acc = to_numpy(class_accuracy).reshape(-1)
    if acc.size != len(names):
        raise ValueError(f"class_accuracy must have one value per class ({len(names)}), got {acc.size}")
    fig.add_trace(
        go.Scatter(
            x=acc,
            y=means,
            mode="markers+text",
            text=names,
            textposition=_label_positions(acc, means),
            name="class-mean ω·|B|",
            showlegend=False,
            marker=dict(size=10, color=colors),
        ),
        row=1,
        col=2,
    )
    fig.update_xaxes(title_text="class accuracy", row=1, col=2)


def r_schedule_figure(
    epochs, r_values, lr_values=None, metrics: Mapping[str, object] | None = None, *, title: str | None = None
) -> go.Figure:
    """The learning process (the paper's Fig. 2): r(t) on a log axis, then (optional) the learning rate
    and per-epoch metrics, in stacked subplots sharing the epoch axis.

    ``metrics`` maps a name (e.g. ``"test SA"``, ``"test RA-PGD"``, ``"ESS/|B|"``) to a vector over the
    epochs or an array ``(n_seeds, n_epochs)`` (mean line, ± sample-std band).
    """
    t = to_numpy(epochs).reshape(-1)
    r = to_numpy(r_values).reshape(-1)
    if r.size != t.size or t.size == 0:
        raise ValueError(f"r_values must have one value per epoch ({t.size}), got {r.size}")
    if np.isnan(r).any() or np.any(r <= 0):
        raise ValueError("r_values must be > 0 (DONE's temperature, a log axis)")
    rows = ["r (DONE temperature)"]
    if lr_values is not None:
        rows.append("learning rate β_t")
    if metrics:
        rows.append("per-epoch metrics")
    fig = make_subplots(rows=len(rows), cols=1, shared_xaxes=True, vertical_spacing=0.08, subplot_titles=rows)
    fig.add_trace(
        go.Scatter(x=t, y=r, mode="lines+markers", name="r(t)", line=dict(color="black", width=2), marker=dict(size=4)),
        row=1,
        col=1,
    )
    fig.update_yaxes(type="log", title_text="r", row=1, col=1)
    row = 1
    if lr_values is not None:
        row += 1
        lr = to_numpy(lr_values).reshape(-1)
        if lr.size != t.size:
            raise ValueError(f"lr_values must have one value per epoch ({t.size}), got {lr.size}")
        fig.add_trace(
            go.Scatter(x=t, y=lr, mode="lines", name="learning rate", line=dict(color=PALETTE[0])), row=row, col=1
        )
        fig.update_yaxes(title_text="lr", rangemode="tozero", row=row, col=1)
    if metrics:
        row += 1
        for k, (name, values) in enumerate(metrics.items()):
            a = seed_array(values, f"metrics[{name!r}]", t.size)
            add_band_traces(fig, t, a, name=name, color=PALETTE[(k + 1) % len(PALETTE)], row=row, col=1)
        fig.update_yaxes(title_text="value", row=row, col=1)
    fig.update_xaxes(title_text="epoch", row=len(rows), col=1)
    fig.update_layout(
        **layout(height=220 + 200 * len(rows)),
        title=title or "Learning process: r(t), learning rate and test metrics",
        legend=dict(orientation="h", y=-0.12),
    )
    return fig
