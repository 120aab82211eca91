"""The course's look and the drawing helpers several figures share.

``PALETTE`` gives one colour per method across the course, ``LAYOUT`` the common layout; the helpers draw a
mean ± sample-std band over seeds, pick method colours, join segments into one polyline trace and name classes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from dro_lab.utils import to_numpy

# One colour per method across the course (ERM blue and DRO red, as in Fidon et al.'s figures).
# Methods' colours, in order: the first eight are the course's usual ones; the rest keep a figure of a dozen
# methods (lesson 04's ALSO baselines) free of repeats.
PALETTE = [
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
    "#393b79",
    "#e7ba52",
    "#637939",
    "#ad494a",
]

#: The plotly template of every course figure (the website writes it once per site, not once per figure).
TEMPLATE = "plotly_white"
LAYOUT = dict(template=TEMPLATE, margin=dict(l=60, r=20, t=50, b=50), height=380)

# Per-class traces (the highlighted minority class takes PALETTE's red instead).
CLASS_COLORS = [
    "#1f77b4",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
    "#ff7f0e",
    "#aec7e8",
]


def layout(**overrides) -> dict:
    """The common layout with ``overrides`` (a taller figure, wider margins)."""
    return {**LAYOUT, **overrides}


def mean_std(curves) -> tuple[np.ndarray, np.ndarray, int]:
    """Mean and sample standard deviation (ddof=1; 0 for one run) over the first axis."""
    a = np.asarray(curves, dtype=float)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] == 0:
        raise ValueError(f"curves must be an array (n_runs, n_points), got shape {a.shape}")
    std = a.std(0, ddof=1) if a.shape[0] > 1 else np.zeros(a.shape[1])
    return a.mean(0), std, a.shape[0]


def method_colors(names: Sequence[str], colors: Mapping[str, str] | None) -> dict[str, str]:
    """One colour per method: ``colors`` where given, then :data:`PALETTE` in order, then evenly spaced hues,
    never a colour twice (two methods in one colour read as one)."""
    colors = dict(colors or {})
    taken = set(colors.values())
    free = [c for c in PALETTE if c not in taken]
    out, extra = {}, 0
    for name in names:
        if name in colors:
            out[name] = colors[name]
        elif free:
            out[name] = free.pop(0)
        else:
            out[name] = f"hsl({(37 * extra) % 360}, 55%, {40 + 15 * (extra // 10 % 2)}%)"
            extra += 1
    return out


def add_band_traces(
    fig: go.Figure,
    x,
    curves,
    *,
    name: str,
    color: str,
    row=None,
    col=None,
    showlegend: bool = True,
    dash: str | None = None,
    bounds: tuple[float, float] | None = None,
) -> None:
    mean, std, n_runs = mean_std(curves)
    low, high = mean - std, mean + std
    if bounds is not None:  # an accuracy's band stays in [0, 1]
        low, high = np.clip(low, *bounds), np.clip(high, *bounds)
    x = np.arange(1, len(mean) + 1) if x is None else np.asarray(x)
    where = {} if row is None else dict(row=row, col=col)
    if n_runs > 1:
        fig.add_trace(
            go.Scatter(
                x=np.r_[x, x[::-1]],
                y=np.r_[high, low[::-1]],
                fill="toself",
                mode="lines",  # plotly's default for under 20 points adds markers at the band's corners
                line=dict(width=0),
                fillcolor=color,
                opacity=0.18,
                showlegend=False,
                hoverinfo="skip",
                legendgroup=name,
                name=f"{name} ± std",
            ),
            **where,
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=mean,
            name=name,
            legendgroup=name,
            showlegend=showlegend,
            mode="lines",
            line=dict(color=color, width=2, dash=dash),
        ),
        **where,
    )


def add_seed_lines(
    fig: go.Figure,
    seeds: Sequence[int],
    finals: Mapping[str, np.ndarray],
    methods: Sequence[str],
    scale: float,
    *,
    colors: Mapping[str, str] | None = None,
    legend: bool = False,
    row: int | None = None,
    col: int | None = None,
) -> None:
    """One dot per seed and method (a final metric, times ``scale``), the dots of one seed joined across the
    methods: the pairing a verdict uses. With ``colors`` the dots take their method's colour; with ``legend`` the
    first seed's line stands for all in the legend."""
    marker = dict(size=7)
    if colors is not None:
        marker.update(color=[colors[m] for m in methods], line=dict(color="black", width=1))
    for i, seed in enumerate(seeds):
        fig.add_trace(
            go.Scatter(
                x=list(methods),
                y=[float(finals[m][i]) * scale for m in methods],
                mode="lines+markers",
                line=dict(color="#555555", width=1),
                marker=marker,
                name="one seed (paired)",
                legendgroup="seed",
                showlegend=legend and i == 0,
                hovertemplate=f"seed {seed}, %{{x}}: %{{y:.1f}}<extra></extra>",
            ),
            row=row,
            col=col,
        )


def seed_array(values, name: str, k: int | None = None) -> np.ndarray:
    """Per-seed values as a float array (n_seeds, k); a vector is one seed (k given) or k=1 seeds (k None)."""
    a = np.asarray(to_numpy(values), dtype=float)
    if k is None:
        a = a.reshape(-1, 1)
    elif a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[0] == 0 or (k is not None and a.shape[1] != k):
        raise ValueError(f"{name} must be an array (n_seeds, {k if k is not None else 1}), got shape {a.shape}")
    return a


def polylines(pieces: Sequence[np.ndarray]) -> tuple[list, list]:
    """x and y of several polylines in one trace, separated by ``None`` (one gap after each piece)."""
    xs: list = []
    ys: list = []
    for p in pieces:
        xs += p[:, 0].tolist() + [None]
        ys += p[:, 1].tolist() + [None]
    return xs, ys


def class_labels(classes: Sequence, class_names) -> list[str]:
    """Display names of ``classes`` (label values): ``class_names[c]`` (a sequence indexed by the label or a
    mapping), else ``str(c)``."""
    if class_names is None:
        return [str(c) for c in classes]
    if isinstance(class_names, Mapping):
        return [str(class_names.get(c, c)) for c in classes]
    names = list(class_names)
    out = []
    for c in classes:
        if not (isinstance(c, (int, np.integer)) and 0 <= c < len(names)):
            raise ValueError(f"class_names must name label {c!r} (a sequence indexed by the label or a mapping)")
        out.append(str(names[int(c)]))
    return out


def add_paper_markers(
    fig: go.Figure,
    paper: Mapping[str, Sequence[float]] | None,
    x,
    palette: Mapping[str, str],
    *,
    expected: str,
    group: str = "legendgroup",
) -> None:
    """A paper's published values (``paper``: method → one value per ``x``) as open diamonds in the method's colour,
    tied to its bars or line by ``group`` (``"legendgroup"`` or ``"offsetgroup"``); ``expected`` says how many
    values a method needs, for the error message."""
    for name, vals in (paper or {}).items():
        v = np.asarray(vals, dtype=float).reshape(-1)
        if v.size != len(x):
            raise ValueError(f"paper[{name!r}] must have {expected}, got {v.size}")
        fig.add_trace(
            go.Scatter(
                x=x,
                y=v,
                mode="markers",
                name=f"{name} (paper)",
                **{group: name},
                marker=dict(symbol="diamond-open", size=10, color=palette[name], line=dict(width=2)),
            )
        )
