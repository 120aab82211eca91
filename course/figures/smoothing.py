"""Lesson 06, label-smoothing DRO (GI-LS): the shift field, the realised transport cost against γ, the
regulariser, generated images, the cost against T and Bayesian-optimisation progress.

Here α is the label-smoothing factor (ȳ_α puts 1 − α on the true class and α/(k−1) on each other), γ the
Wasserstein penalty (β = 1/γ), T the number of ascent steps and r (ρ) the transport radius, realised as
ρ̂ = mean ½‖f(x_T) − f(x)‖².
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dro_course.figures._style import (
    CLASS_COLORS,
    LAYOUT,
    PALETTE,
    add_band_traces,
    layout,
    mean_std,
    polylines,
    seed_array,
)
from dro_lab._validation import check_int, check_nonempty
from dro_lab.utils import to_numpy

_TINTS = ["#c6dbef", "#c7e9c0", "#dadaeb", "#fdd0a2", "#fcbba1", "#d9d9d9", "#f2d7e6", "#c7eae5"]


def _points_2d(points, name: str, n: int | None = None) -> np.ndarray:
    p = to_numpy(points)
    if p.ndim != 2 or p.shape[1] != 2 or (n is not None and p.shape[0] != n):
        raise ValueError(f"{name} must have shape ({n if n is not None else 'n'}, 2), got {p.shape}")
    return p


def shift_field_figure(
    points, shifted: Mapping[str, object], labels, *, grid=None, title: str | None = None
) -> go.Figure:
    r"""The GI-LS shift field on a 2-D toy (the direction of Theorem 3.3's gradient θ_f(p − ȳ_α) drawn in the
    plane; the paper has no such figure): for each setting (e.g. ``"α = 0.3"``) a segment from every point to
    its shifted position :math:`x^T` (one trace of n segments separated by ``None``) and the
    shifted points (small open circles, same colour, same legend group); the clean points by label on top.

    ``grid = (grid_x, grid_y, class_map)`` draws the model's predicted class over the plane as a tinted
    background (``class_map`` of shape ``(len(grid_y), len(grid_x))``, as ``np.meshgrid(grid_x, grid_y)``
    lays it out), its boundaries showing where the tint changes.
    """
    pts = _points_2d(points, "points")
    y = np.asarray(to_numpy(labels)).reshape(-1).astype(int)
    if y.size != pts.shape[0]:
        raise ValueError(f"labels must have one entry per point ({pts.shape[0]}), got {y.size}")
    fig = go.Figure()
    corners = [] if grid is None else _add_class_map(fig, grid, y)
    ranges = [pts]
    for j, (name, values) in enumerate(shifted.items()):
        q = _points_2d(values, f"shifted[{name!r}]", pts.shape[0])
        ranges.append(q)
        _add_shift(fig, pts, q, name=name, color=["#222222", PALETTE[1], PALETTE[3], PALETTE[4], PALETTE[5]][j % 5])
    for c in np.unique(y):
        m = y == c
        fig.add_trace(
            go.Scatter(
                x=pts[m, 0],
                y=pts[m, 1],
                mode="markers",
                name=f"class {c}",
                marker=dict(color=CLASS_COLORS[int(c) % len(CLASS_COLORS)], size=7, line=dict(color="white", width=1)),
            )
        )
    allp = np.concatenate(ranges + corners)
    allp = allp[np.isfinite(allp).all(1)]
    lo, hi = allp.min(0), allp.max(0)
    fig.update_layout(
        **layout(height=480),
        title=title or "GI-LS shift field: x → x_T per setting",
        legend=dict(x=1.02, y=1, xanchor="left", yanchor="top"),
    )
    fig.update_xaxes(title_text="x₁", range=[lo[0], hi[0]], constrain="domain")
    fig.update_yaxes(title_text="x₂", range=[lo[1], hi[1]], scaleanchor="x", scaleratio=1, constrain="domain")
    return fig


def _add_class_map(fig: go.Figure, grid, y: np.ndarray) -> list[np.ndarray]:
    """The predicted class over the plane as a tinted heatmap; returns the grid's corners (part of the view)."""
    gx, gy, cmap = to_numpy(grid[0]).reshape(-1), to_numpy(grid[1]).reshape(-1), to_numpy(grid[2])
    if cmap.shape != (gy.size, gx.size):
        raise ValueError(
            f"grid class_map must have shape (len(grid_y), len(grid_x)) = {(gy.size, gx.size)}, got {cmap.shape}"
        )
    k = int(max(cmap.max(), y.max())) + 1
    scale = []
    for c in range(k):  # a stepped colour scale: class c owns [c/k, (c+1)/k]
        scale += [[c / k, _TINTS[c % len(_TINTS)]], [(c + 1) / k, _TINTS[c % len(_TINTS)]]]
    fig.add_trace(
        go.Heatmap(
            x=gx,
            y=gy,
            z=cmap,
            zmin=-0.5,
            zmax=k - 0.5,
            colorscale=scale,
            showscale=False,
            name="predicted class",
            hovertemplate="predicted class %{z}<extra></extra>",
        )
    )
    return [np.array([[gx.min(), gy.min()], [gx.max(), gy.max()]])]


def _add_shift(fig: go.Figure, pts: np.ndarray, q: np.ndarray, *, name: str, color: str) -> None:
    """One setting's segments x → x_T (one trace) and its shifted points (open circles, same legend group)."""
    sx, sy = polylines([np.stack([p, s]) for p, s in zip(pts, q)])
    fig.add_trace(
        go.Scatter(
            x=sx,
            y=sy,
            mode="lines",
            name=f"shift, {name}",
            legendgroup=name,
            line=dict(color=color, width=1.2),
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=q[:, 0],
            y=q[:, 1],
            mode="markers",
            name=f"x_T, {name}",
            legendgroup=name,
            showlegend=False,
            marker=dict(color=color, size=5, symbol="circle-open"),
        )
    )


def transport_vs_gamma_figure(
    gammas,
    costs: Mapping[str, object],
    *,
    bounds: Mapping[str, object] | None = None,
    title: str | None = None,
    yaxis_title: str = "realised transport cost ρ̂",
) -> go.Figure:
    r"""Realised transport cost :math:`\hat\rho` (or the mean shift norm) against γ on a log-x axis (the GI-LS
    paper's §4.4 and Table 8's γ, over a wider range): one line per setting, ``costs[name]`` a vector over
    ``gammas`` or an array ``(n_seeds, n_gammas)`` (mean line, ± sample-std band). ``bounds`` maps a label
    (``"L₀/γ"``, ``"3L₀/γ"``) to a vector over ``gammas``, drawn dashed in black. The y axis is logarithmic when
    every finite value is positive; non-finite values (a diverged ascent) leave gaps.
    """
    g = to_numpy(gammas).reshape(-1)
    if g.size == 0 or np.any(g <= 0):
        raise ValueError("gammas must be a non-empty vector of positive values (log axis)")
    fig = go.Figure()
    finite = []
    for j, (name, values) in enumerate(costs.items()):
        a = seed_array(values, f"costs[{name!r}]", g.size)
        finite.append(a[np.isfinite(a)])
        add_band_traces(fig, g, a, name=name, color=PALETTE[j % len(PALETTE)])
        fig.data[-1].mode = "lines+markers"
    for j, (name, values) in enumerate((bounds or {}).items()):
        b = to_numpy(values).reshape(-1)
        if b.size != g.size:
            raise ValueError(f"bounds[{name!r}] must have one value per γ ({g.size}), got {b.size}")
        finite.append(b[np.isfinite(b)])
        fig.add_trace(
            go.Scatter(
                x=g,
                y=b,
                mode="lines",
                name=name,
                line=dict(color="black", width=1, dash=["dash", "dot", "dashdot"][j % 3]),
            )
        )
    vals = np.concatenate(finite) if finite else np.array([])
    fig.update_layout(
        **LAYOUT, title=title or "Realised transport cost vs γ (β = 1/γ)", xaxis_title="γ", yaxis_title=yaxis_title
    )
    fig.update_xaxes(type="log")
    if vals.size and np.all(vals > 0):
        fig.update_yaxes(type="log")
    return fig


def _alpha_of(key) -> float | None:
    """α from a legend key: the key itself when numeric, else the last number in the string."""
    if isinstance(key, (int, float, np.integer, np.floating)) and not isinstance(key, bool):
        return float(key)
    found = re.findall(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?", str(key))
    return float(found[-1]) if found else None


def regularizer_figure(p_true, values: Mapping[object, object], *, title: str | None = None) -> go.Figure:
    r"""The LS+DRO regulariser :math:`\|\theta_f(p-\bar y_\alpha)\|^2` against the true-class probability
    (the GI-LS paper's eq. 20 with its factor corrected), one line per α; its zero at
    :math:`p_{\text{true}}=1-\alpha` is marked by a dotted vertical line and a diamond. ``values`` maps α (a
    number, or a label whose last number is α, e.g. ``"α = 0.3"``) to a vector over ``p_true`` (e.g.
    :func:`ls_regularizer_values`). Samples right of the zero (more confident than 1 − α) are pushed outward by the
    GI-LS ascent, those left of it toward the boundary.
    """
    p = to_numpy(p_true).reshape(-1)
    fig = go.Figure()
    for j, (key, vals) in enumerate(values.items()):
        v = to_numpy(vals).reshape(-1)
        if v.size != p.size:
            raise ValueError(f"values[{key!r}] must have one value per p_true ({p.size}), got {v.size}")
        name = key if isinstance(key, str) else f"α = {float(key):g}"
        color = PALETTE[j % len(PALETTE)]
        fig.add_trace(go.Scatter(x=p, y=v, mode="lines", name=name, legendgroup=name, line=dict(color=color, width=2)))
        alpha = _alpha_of(key)
        if alpha is not None and p.min() <= 1 - alpha <= p.max():
            order = np.argsort(p)
            z = float(np.interp(1 - alpha, p[order], v[order]))
            fig.add_trace(
                go.Scatter(
                    x=[1 - alpha],
                    y=[z],
                    mode="markers",
                    name=f"zero at 1 − α = {1 - alpha:g}",
                    legendgroup=name,
                    showlegend=False,
                    marker=dict(symbol="diamond", size=10, color=color, line=dict(color="black", width=1)),
                )
            )
            fig.add_vline(x=1 - alpha, line=dict(color=color, width=1, dash="dot"))
    fig.update_layout(
        **LAYOUT,
        title=title or "Regulariser ‖θ_f(p − ȳ_α)‖² vs true-class probability",
        xaxis_title="p_true (softmax probability of the true class)",
        yaxis_title="‖θ_f(p − ȳ_α)‖²",
    )
    fig.update_yaxes(rangemode="tozero")
    return fig


def _images_2d(x, name: str) -> np.ndarray:
    a = to_numpy(x)
    if a.ndim == 4:
        if a.shape[1] != 1:
            raise ValueError(f"{name} must be grey images (n, 1, H, W) or (n, H, W), got {a.shape}")
        a = a[:, 0]
    if a.ndim != 3:
        raise ValueError(f"{name} must be grey images (n, 1, H, W) or (n, H, W), got {a.shape}")
    return a


def _shift_gain(d: np.ndarray, gain) -> float:
    """The amplification of the shift: ``"auto"`` makes the largest |gain·(x_T − x)| about 0.4 (a visible share
    of a [0, 1] grey scale), never below 1; a number is used as given."""
    if gain == "auto":
        return float(max(1, round(0.4 / max(float(np.abs(d).max()), 1e-6))))
    if isinstance(gain, bool) or not isinstance(gain, (int, float, np.integer, np.floating)):
        raise TypeError(f"gain must be a positive number or 'auto', got {type(gain).__name__}")
    if not (np.isfinite(gain) and gain > 0):
        raise ValueError(f"gain must be a positive number or 'auto', got {gain!r}")
    return float(gain)


def _row_titles(gain: float) -> list[str]:
    """What each row of :func:`generated_images_figure` shows, at the shift's amplification ``gain``."""
    if gain == 1:
        return ["original x", "generated x_T", "shift x_T − x"]
    return ["original x", f"x + {gain:g}·(x_T − x)", f"{gain:g}·(x_T − x)"]


def generated_images_figure(
    x, x_shifted, *, n: int = 6, gain: float | str = 1.0, title: str | None = None
) -> go.Figure:
    r"""Original images, GI-LS generated images and the shift between them for the first ``n`` (the samples of the
    GI-LS paper's Algorithm 1; the paper shows none), ``x_shifted`` being the generated :math:`x_T`.

    A shift of a few percent of an image is invisible at its true scale, so ``gain`` amplifies it: the middle row
    shows :math:`x + g\,(x_T-x)` and the bottom row :math:`g\,(x_T-x)` (``"auto"``: the largest amplified
    difference about 0.4, see the row titles for the factor used); at ``gain=1`` they are :math:`x_T` and
    :math:`x_T-x`. Each row's title says which it shows. Rows 1–2 share a grey scale [min, max]; row 3 is on a
    red–blue scale symmetric about 0. ``x`` and ``x_shifted`` are ``(N, 1, H, W)`` or ``(N, H, W)``.
    """
    a, b = _images_2d(x, "x"), _images_2d(x_shifted, "x_shifted")
    if a.shape != b.shape:
        raise ValueError(f"x and x_shifted must have the same shape, got {a.shape} and {b.shape}")
    n = min(check_int(n, "n"), a.shape[0])
    a, b = a[:n], b[:n]
    g = _shift_gain(b - a, gain)
    d = g * (b - a)
    b = a + d
    dmax = float(np.abs(d).max()) or 1.0
    lo, hi = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
    rows = _row_titles(g)
    fig = make_subplots(rows=3, cols=n, horizontal_spacing=0.01, vertical_spacing=0.06, row_titles=rows)
    for r, (imgs, axis) in enumerate(((a, "coloraxis"), (b, "coloraxis"), (d, "coloraxis2")), start=1):
        for c in range(n):
            fig.add_trace(
                go.Heatmap(
                    z=imgs[c], coloraxis=axis, name=f"{rows[r - 1]} #{c}", hovertemplate="%{z:.3f}<extra></extra>"
                ),
                row=r,
                col=c + 1,
            )
    fig.for_each_annotation(lambda a: a.update(font=dict(size=11)) if a.text in rows else None)
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False, autorange="reversed", scaleanchor="x", scaleratio=1)
    shown = "x_T − x" if g == 1 else f"{g:g}·(x_T − x)"
    fig.update_layout(
        **layout(height=160 * 3 + 80),
        title=title or f"Generated images (max |x_T − x| = {float(np.abs(d).max()) / g:.3g}; shift shown ×{g:g})",
        coloraxis=dict(colorscale="gray", cmin=lo, cmax=hi, colorbar=dict(title="pixel", len=0.6, y=0.7, x=1.12)),
        coloraxis2=dict(
            colorscale="RdBu", cmid=0.0, cmin=-dmax, cmax=dmax, colorbar=dict(title=shown, len=0.3, y=0.15, x=1.12)
        ),
    )
    return fig


def cost_vs_T_figure(T_values, seconds, *, title: str | None = None) -> go.Figure:
    """Seconds per epoch against T (the cost of Algorithm 1's inner loop; the paper reports none): the
    measurements (``seconds`` a vector over ``T_values`` or ``(n_repeats, n_T)``: mean ± sample std), the
    least-squares line a + b·T, and the ratio of each mean to the one at T = 0 written over its point (to the
    fitted a when T = 0 was not measured)."""
    t = to_numpy(T_values).reshape(-1)
    s = seed_array(seconds, "seconds", t.size)
    if t.size < 2:
        raise ValueError("cost_vs_T_figure needs at least two T values for the linear fit")
    mean, std, _ = mean_std(s)
    slope, intercept = np.polyfit(t, mean, 1)
    base = float(mean[t == 0][0]) if np.any(t == 0) else float(intercept)
    ratios = mean / base
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=t,
            y=mean,
            mode="markers+text",
            name="measured (mean ± std)",
            text=[f"×{r:.2f}" for r in ratios],
            textposition="top center",
            error_y=dict(type="data", array=std, visible=True),
            marker=dict(color=PALETTE[0], size=9),
        )
    )
    tt = np.linspace(t.min(), t.max(), 50)
    fig.add_trace(
        go.Scatter(
            x=tt,
            y=intercept + slope * tt,
            mode="lines",
            name=f"fit {intercept:.3g} + {slope:.3g}·T s",
            line=dict(color="black", dash="dash"),
        )
    )
    fig.update_layout(
        **LAYOUT,
        title=title or f"Cost per epoch vs T (ratio to T = 0; fit slope {slope / base:.2f}× the T = 0 cost per step)",
        xaxis_title="T (ascent steps)",
        yaxis_title="seconds per epoch",
    )
    fig.update_xaxes(tickmode="array", tickvals=t)  # T is an integer: ticks at the measured values only
    fig.update_yaxes(rangemode="tozero")
    return fig


def bo_progress_figure(
    values: Mapping[str, Sequence[float]],
    *,
    title: str | None = None,
    maximize: bool = True,
    yaxis_title: str = "objective (validation accuracy)",
) -> go.Figure:
    """Bayesian-optimisation progress (the GI-LS paper's Fig. 3): each study's objective per trial (markers) and its
    running best (line, the cumulative max — min with ``maximize=False`` — ignoring NaN of failed trials),
    one colour per study (e.g. GP / TPE / random)."""
    check_nonempty(values, "values")
    fig = go.Figure()
    for j, (name, vals) in enumerate(values.items()):
        v = np.asarray([np.nan if u is None else float(u) for u in vals], dtype=float)
        if v.size == 0:
            raise ValueError(f"values[{name!r}] is empty")
        color = PALETTE[j % len(PALETTE)]
        trial = np.arange(1, v.size + 1)
        best = (np.fmax if maximize else np.fmin).accumulate(v)
        fig.add_trace(
            go.Scatter(
                x=trial,
                y=v,
                mode="markers",
                name=f"{name}: trial",
                legendgroup=name,
                marker=dict(color=color, size=7, opacity=0.6),
            )
        )
        fig.add_trace(
            go.Scatter(
                x=trial,
                y=best,
                mode="lines",
                name=f"{name}: running best",
                legendgroup=name,
                line=dict(color=color, width=2, shape="hv"),
            )
        )
    fig.update_layout(
        **LAYOUT,
        title=title or "Bayesian optimisation: objective per trial and running best",
        xaxis_title="trial",
        yaxis_title=yaxis_title,
    )
    longest = max(len(v) for v in values.values())
    fig.update_xaxes(tick0=1, dtick=max(1, -(-longest // 10)))  # whole trials: no tick at 1.5
    return fig
