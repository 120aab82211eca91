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
from plotly.subplots import make_subplots

from .robust import robust_loss, worst_case_weights
from .utils import check_int as _check_int

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
    "history_curves",
    "curves_figure",
    "curves_grid_figure",
    "sampling_summary",
    "sampling_figure",
    "hws_sampling_figure",
    "age_survival",
    "age_figure",
    "mc_error_figure",
    "is_mixture",
    "is_estimator_stats",
    "is_variance_figure",
    "is_cost_figure",
]

# One colour per method across the course (ERM blue and DRO red, as in Fidon et al.'s figures).
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]

_LAYOUT = dict(template="plotly_white", margin=dict(l=60, r=20, t=50, b=50), height=380)


def _np(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=float)


def _check_nonempty(value, name: str):
    """A non-empty mapping or sequence (what the figure draws one trace per entry of)."""
    try:
        n = len(value)
    except TypeError:
        raise TypeError(f"{name} must be a mapping or sequence, got {type(value).__name__}") from None
    if n == 0:
        raise ValueError(f"{name} is empty: nothing to draw")
    return value


def _check_finite(a: np.ndarray, name: str) -> np.ndarray:
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or inf values; {name} must be finite")
    return a


def weights_figure(losses, weights: Mapping[str, Sequence[float]], *, prior=None, title: str | None = None) -> go.Figure:
    """Grouped bars of several weight vectors over the same examples, losses as a line on a second axis.

    ``weights`` maps a label (e.g. ``"KL β=5"``) to a vector ``q`` of the same length as ``losses``.
    """
    losses = _check_finite(_np(losses).reshape(-1), "losses")
    for label, q in weights.items():
        if _np(q).shape != losses.shape:
            raise ValueError(f"weights[{label!r}] must have one weight per loss ({losses.size}), got shape "
                             f"{_np(q).shape}")
    if prior is not None and _np(prior).shape != losses.shape:
        raise ValueError(f"prior must have one weight per loss ({losses.size}), got shape {_np(prior).shape}")
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
    if divergence not in ("kl", "chi2"):
        raise ValueError(f"divergence must be 'kl' or 'chi2', got {divergence!r}")
    r_arr, b_arr = _np(radii).reshape(-1), _np(betas).reshape(-1)
    if r_arr.shape != b_arr.shape:
        raise ValueError(f"radii and betas must have the same length, got {r_arr.size} and {b_arr.size}")
    if np.any(r_arr < 0) or np.isnan(r_arr).any():
        raise ValueError("radii must be ≥ 0 (divergence-ball radii)")
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
    _check_nonempty(models, "models")
    for name, model in models.items():
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"models[{name!r}] must be a torch.nn.Module, got {type(model).__name__}")
    resolution = _check_int(resolution, "resolution", 2)
    xn, yn = _np(x), _np(y).astype(int)
    if xn.ndim != 2 or xn.shape[1] != 2:
        raise ValueError(f"x must be 2-D inputs of shape (n, 2) for decision_boundary_figure, got {xn.shape}")
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
    rows = list(rows)
    _check_nonempty(rows, "rows")
    for i, row in enumerate(rows):
        missing = [k for k in (*by, *metrics) if k not in row]
        if missing:
            raise ValueError(f"rows[{i}] lacks {missing} (named in by / metrics)")
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
    _check_nonempty(histories, "histories")
    fig = go.Figure()
    for k, (name, hs) in enumerate(histories.items()):
        hs = list(hs) if isinstance(hs, (list, tuple)) else [hs]
        curves = np.array([_column(h, metric) for h in hs], dtype=float)
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



# --------------------------------------------------------------------------- curves over seeds (lesson 02)


def history_curves(histories: Sequence, metric: str, *, index: int | None = None) -> np.ndarray:
    """A metric of several runs as an array ``(n_runs, n_epochs)``.

    ``histories`` are :class:`dro_lab.History` objects (anything with ``h[metric]`` giving the
    per-epoch column). ``index`` picks one entry of a list-valued metric, e.g.
    ``history_curves(hs, "test_per_class_accuracy", index=3)`` is the accuracy on class 3.
    Runs must have the same number of epochs.
    """
    histories = list(histories)
    _check_nonempty(histories, "histories")
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


def _mean_std(curves) -> tuple[np.ndarray, np.ndarray, int]:
    """Mean and sample standard deviation (ddof=1; 0 for one run) over the first axis."""
    a = np.asarray(curves, dtype=float)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] == 0:
        raise ValueError(f"curves must be an array (n_runs, n_points), got shape {a.shape}")
    std = a.std(0, ddof=1) if a.shape[0] > 1 else np.zeros(a.shape[1])
    return a.mean(0), std, a.shape[0]


def _method_colors(names: Sequence[str], colors: Mapping[str, str] | None) -> dict[str, str]:
    colors = dict(colors or {})
    out, k = {}, 0
    for name in names:
        if name in colors:
            out[name] = colors[name]
        else:
            out[name] = PALETTE[k % len(PALETTE)]
            k += 1
    return out


def _add_band_traces(fig: go.Figure, x, curves, *, name: str, color: str, row=None, col=None,
                     showlegend: bool = True, dash: str | None = None) -> None:
    mean, std, n_runs = _mean_std(curves)
    x = np.arange(1, len(mean) + 1) if x is None else np.asarray(x)
    where = {} if row is None else dict(row=row, col=col)
    if n_runs > 1:
        fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[mean + std, (mean - std)[::-1]], fill="toself",
                                 line=dict(width=0), fillcolor=color, opacity=0.18, showlegend=False,
                                 hoverinfo="skip", legendgroup=name, name=f"{name} ± std"), **where)
    fig.add_trace(go.Scatter(x=x, y=mean, name=name, legendgroup=name, showlegend=showlegend, mode="lines",
                             line=dict(color=color, width=2, dash=dash)), **where)


def curves_figure(curves: Mapping[str, Sequence], *, title: str | None = None, yaxis_title: str = "",
                  xaxis_title: str = "epoch", x=None, colors: Mapping[str, str] | None = None,
                  reference: Mapping[str, float] | None = None) -> go.Figure:
    """One line per method: the mean over runs (seeds) with a ± one-standard-deviation band.

    Args:
        curves: method name → array ``(n_runs, n_points)`` (or one curve). The band is the
            sample standard deviation over runs (``ddof=1``) and is drawn only for ≥ 2 runs.
        x: the x values (default ``1 .. n_points``, the epochs).
        colors: method name → colour (the course draws ERM blue and DRO β = 10 red, as the paper);
            other methods take the palette in order.
        reference: label → y of dashed horizontal reference lines (e.g. a uniform share).
    """
    _check_nonempty(curves, "curves")
    fig = go.Figure()
    palette = _method_colors(list(curves), colors)
    for name, c in curves.items():
        _add_band_traces(fig, x, c, name=name, color=palette[name])
    for label, y in (reference or {}).items():
        fig.add_hline(y=float(y), line=dict(color="grey", dash="dash"), annotation_text=label,
                      annotation_position="top left")
    fig.update_layout(**_LAYOUT, title=title or yaxis_title, xaxis_title=xaxis_title, yaxis_title=yaxis_title,
                      legend=dict(orientation="h", y=-0.25))
    return fig


def curves_grid_figure(panels: Mapping[str, Mapping[str, Sequence]], *, cols: int = 2, title: str | None = None,
                       x=None, colors: Mapping[str, str] | None = None, height: int | None = None) -> go.Figure:
    """A grid of :func:`curves_figure` panels sharing one legend (the paper's Figure 2 is 2 × 2).

    ``panels`` maps a panel title (also its y-axis meaning) to ``{method: (n_runs, n_points)}``.
    """
    titles = list(panels)
    if not titles:
        raise ValueError("curves_grid_figure needs at least one panel")
    cols = _check_int(cols, "cols")
    rows = -(-len(titles) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.1,
                        vertical_spacing=0.14)
    names = list(dict.fromkeys(name for p in panels.values() for name in p))
    palette = _method_colors(names, colors)
    seen: set[str] = set()
    for k, panel_title in enumerate(titles):
        r, c = k // cols + 1, k % cols + 1
        for name, cur in panels[panel_title].items():
            _add_band_traces(fig, x, cur, name=name, color=palette[name], row=r, col=c,
                             showlegend=name not in seen)
            seen.add(name)
        fig.update_xaxes(title_text="epoch", row=r, col=c)
    layout = dict(_LAYOUT)
    layout["height"] = height or 330 * rows + 80
    fig.update_layout(**layout, title=title, legend=dict(orientation="h", y=-0.12))
    return fig


# --------------------------------------------------------------------------- hardness-weighted sampling


def sampling_summary(q, labels, *, minority: int | None = None, batch_size: int | None = None,
                     num_classes: int | None = None) -> dict:
    """How a sampling distribution ``q`` over the training set splits across classes.

    Returns a dict with ``class_mass`` (the q-mass of each class, i.e. how often a draw lands in
    it), ``class_share`` (its uniform share ``n_c / n``, what ERM draws), ``ess`` (the effective
    sample size ``1 / Σ q_i²``) and, for a ``minority`` class, ``minority_mass``,
    ``minority_share``, ``minority_ratio`` (mass / share) and, with ``batch_size = b``,
    ``expected_minority_draws = b · mass`` against ``uniform_minority_draws = b · n_c / n``.
    """
    if batch_size is not None:
        _check_int(batch_size, "batch_size")
    qn = _np(q)
    yn = _np(labels).astype(int)
    if qn.ndim != 1 or qn.shape != yn.shape:
        raise ValueError(f"q and labels must be 1-D of the same length, got {qn.shape} and {yn.shape}")
    if np.any(qn < 0) or not np.isfinite(qn).all():
        raise ValueError("q must be finite and non-negative")
    total = qn.sum()
    if not total > 0:
        raise ValueError("q must have positive mass")
    qn = qn / total
    k = int(num_classes if num_classes is not None else yn.max() + 1)
    mass = np.bincount(yn, weights=qn, minlength=k)
    share = np.bincount(yn, minlength=k) / len(yn)
    out = {"class_mass": mass.tolist(), "class_share": share.tolist(), "ess": float(1.0 / np.sum(qn * qn)),
           "n": int(len(yn))}
    if minority is not None:
        if not 0 <= minority < k:
            raise ValueError(f"minority must be a class in [0, {k}), got {minority}")
        out.update(minority_mass=float(mass[minority]), minority_share=float(share[minority]),
                   minority_ratio=float(mass[minority] / share[minority]) if share[minority] > 0 else float("nan"))
        if batch_size is not None:
            out.update(expected_minority_draws=float(batch_size * mass[minority]),
                       uniform_minority_draws=float(batch_size * share[minority]))
    return out


def sampling_figure(losses, q, labels, *, minority: int | None = None, batch_size: int | None = None,
                    title: str | None = None, heading: str = "Hardness-weighted sampling distribution") -> go.Figure:
    """The sampling distribution over a training set, by class.

    Left: each example's probability ``q_i`` against its loss (log y-axis), coloured by class,
    the ``minority`` class drawn large and red; the dashed line is uniform sampling ``1/n``.
    Right: the q-mass of each class (how often a draw lands in it) beside its uniform share
    ``n_c / n``. The title reads out the minority's mass and, with ``batch_size``, its expected
    draws per batch (see :func:`sampling_summary`); ``heading`` is its first line, ``title``
    replaces the whole title.
    """
    ln, qn, yn = _np(losses), _np(q), _np(labels).astype(int)
    if not (ln.shape == qn.shape == yn.shape) or ln.ndim != 1:
        raise ValueError(f"losses, q and labels must be 1-D of one length, got {ln.shape}, {qn.shape}, {yn.shape}")
    summary = sampling_summary(qn, yn, minority=minority, batch_size=batch_size)
    qn = qn / qn.sum()
    n = len(qn)
    classes = list(range(len(summary["class_mass"])))
    fig = make_subplots(rows=1, cols=2, column_widths=[0.62, 0.38], horizontal_spacing=0.12,
                        subplot_titles=("q_i against the loss (one dot per example)", "q-mass per class vs uniform"))
    floor = max(qn[qn > 0].min() if np.any(qn > 0) else 1.0 / n, 1e-30)
    for c in classes:
        m = yn == c
        if not m.any():
            continue
        is_min = c == minority
        color = PALETTE[1] if is_min else _CLASS_COLORS[c % len(_CLASS_COLORS)]
        fig.add_trace(go.Scatter(x=ln[m], y=np.maximum(qn[m], floor), mode="markers", name=f"class {c}"
                                 + (" (minority)" if is_min else ""), legendgroup=f"class {c}",
                                 marker=dict(color=color, size=10 if is_min else 5,
                                             opacity=1.0 if is_min else 0.55,
                                             line=dict(width=1, color="black") if is_min else dict(width=0))),
                      row=1, col=1)
    fig.add_trace(go.Scatter(x=[ln.min(), ln.max()], y=[1.0 / n, 1.0 / n], mode="lines", name="uniform 1/n (ERM)",
                             line=dict(color="black", dash="dash")), row=1, col=1)
    bar_colors = [PALETTE[1] if c == minority else "#7f7f7f" for c in classes]
    fig.add_trace(go.Bar(x=[str(c) for c in classes], y=summary["class_mass"], name="q-mass",
                         marker_color=bar_colors, showlegend=False), row=1, col=2)
    fig.add_trace(go.Scatter(x=[str(c) for c in classes], y=summary["class_share"], mode="markers",
                             name="uniform share n_c/n", marker=dict(symbol="line-ew-open", size=22, color="black",
                                                                     line=dict(width=3))), row=1, col=2)
    fig.update_yaxes(type="log", title_text="sampling probability q_i", row=1, col=1)
    fig.update_xaxes(title_text="per-sample loss (history)", row=1, col=1)
    fig.update_xaxes(title_text="class", row=1, col=2)
    fig.update_yaxes(title_text="share of the draws", row=1, col=2)
    if title is None:
        title = heading
        if minority is not None:
            title += (f"<br><sup>class {minority}: q-mass {summary['minority_mass']:.3f} vs uniform "
                      f"{summary['minority_share']:.3f} (×{summary['minority_ratio']:.1f})")
            if batch_size is not None:
                title += (f"; expected draws per batch of {batch_size}: {summary['expected_minority_draws']:.2f} "
                          f"vs {summary['uniform_minority_draws']:.2f}")
            title += f"; ESS {summary['ess']:.0f} of n = {n}</sup>"
    layout = dict(_LAYOUT)
    layout.update(height=430, margin=dict(l=60, r=20, t=90, b=50))
    fig.update_layout(**layout, title=title, legend=dict(orientation="h", y=-0.2))
    return fig


_CLASS_COLORS = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#ff7f0e",
                "#aec7e8"]


def hws_sampling_figure(losses, labels, *, beta: float, divergence: str = "kl", minority: int | None = None,
                        batch_size: int | None = None) -> go.Figure:
    """:func:`sampling_figure` for the hardness-weighted sampler's ``q = worst_case_weights(losses, divergence, β)``.

    The figure the lesson-02 panel redraws when β or the divergence changes. KL and χ² β scales
    are not comparable (χ² at 2β ≈ KL at β to first order).
    """
    l = torch.as_tensor(_np(losses))
    q = worst_case_weights(l, divergence=divergence, beta=float(beta))
    name = {"kl": "KL", "chi2": "χ²"}.get(divergence, divergence)
    return sampling_figure(l, q, labels, minority=minority, batch_size=batch_size,
                           heading=f"Hardness-weighted sampling, {name}, β = {beta:.3g}")


def age_survival(ages, kmax: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(k, P(age ≥ k))`` for ``k = 0 .. kmax``: the empirical tail of history ages (``-1`` = never, dropped)."""
    a = _np(ages).ravel()
    a = a[a >= 0].astype(np.int64)
    if a.size == 0:
        raise ValueError("no finite ages (all entries are -1: never written)")
    kmax = int(a.max()) if kmax is None else _check_int(kmax, "kmax")
    k = np.arange(kmax + 1)
    counts = np.bincount(a, minlength=kmax + 1)[: kmax + 1]
    at_least = a.size - np.r_[0, np.cumsum(counts)[:-1]]
    return k, at_least / a.size


def age_figure(runs: Mapping[str, tuple], *, batch_size: int, title: str | None = None) -> go.Figure:
    """Staleness of the loss history: ages ``t − t_i(t)`` against the paper's tail bound (eq. 104).

    ``runs`` maps a label (e.g. ``"β = 5"``) to ``(ages, q)``: pooled ages of the history entries
    (any shape; ``-1`` = never written, dropped) and the sampling distribution they were drawn
    with. Left: the distribution of the ages. Right (log y): the empirical ``P(age ≥ k)``
    (solid), the exact tail of b i.i.d. draws per iteration from a fixed ``q``,
    ``(1/n) Σ_i (1 − q_i)^{kb}`` (dotted), and the bound ``(1 − α)^{kb}`` with
    ``α = min_i q_i`` (dashed), which holds for every entry.
    """
    _check_nonempty(runs, "runs")
    batch_size = _check_int(batch_size, "batch_size")
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=("distribution of history ages", "tail P(age ≥ k) and the bound (1 − α)^{kb}"))
    for j, (label, (ages, q)) in enumerate(runs.items()):
        color = PALETTE[(j + 1) % len(PALETTE)]
        k, surv = age_survival(ages)
        probs = np.r_[surv[:-1] - surv[1:], surv[-1]]
        fig.add_trace(go.Bar(x=k, y=probs, name=f"{label}: ages", marker_color=color, opacity=0.6,
                             legendgroup=label), row=1, col=1)
        fig.add_trace(go.Scatter(x=k, y=surv, mode="lines", name=f"{label}: empirical tail", legendgroup=label,
                                 line=dict(color=color, width=3, shape="hv")), row=1, col=2)
        qn = _np(q).ravel()
        qn = qn / qn.sum()
        exact = np.array([np.mean((1.0 - qn) ** (kk * batch_size)) for kk in k])
        alpha = float(qn.min())
        bound = (1.0 - alpha) ** (k * batch_size)
        fig.add_trace(go.Scatter(x=k, y=exact, mode="lines", name=f"{label}: (1/n)Σ(1−q_i)^(kb)", legendgroup=label,
                                 line=dict(color=color, dash="dot")), row=1, col=2)
        fig.add_trace(go.Scatter(x=k, y=bound, mode="lines", name=f"{label}: bound (1−α)^(kb), α={alpha:.2g}",
                                 legendgroup=label, line=dict(color=color, dash="dash")), row=1, col=2)
    fig.update_xaxes(title_text="age k (iterations since the entry was last written)")
    fig.update_yaxes(title_text="share of entries", row=1, col=1)
    fig.update_yaxes(type="log", title_text="P(age ≥ k)", row=1, col=2)
    layout = dict(_LAYOUT)
    layout.update(height=440, barmode="overlay")
    fig.update_layout(**layout, title=title or f"Staleness of the loss history (b = {batch_size})",
                      legend=dict(orientation="h", y=-0.25))
    return fig


def mc_error_figure(ms: Sequence[int], errors: Mapping[str, Sequence[float]], *,
                    reference: Sequence[float] | None = None, reference_label: str = "∝ 1/√M",
                    title: str | None = None) -> go.Figure:
    """Monte-Carlo error against the number of batches ``M`` (log–log), one line per estimator.

    ``reference`` is an optional curve over ``ms`` (e.g. the predicted RMS error
    ``√(tr Σ_q / (bM))`` of an unbiased estimator); drawn dashed black.
    """
    ms = np.asarray(ms, dtype=float)
    if ms.ndim != 1 or ms.size == 0 or not np.isfinite(ms).all() or np.any(ms < 1):
        raise ValueError(f"ms must be a non-empty vector of batch counts M ≥ 1 (a log axis), got {ms.tolist()}")
    fig = go.Figure()
    for j, (label, err) in enumerate(errors.items()):
        err = np.asarray(err, dtype=float)
        if err.shape != ms.shape:
            raise ValueError(f"errors[{label!r}] has shape {err.shape}, expected {ms.shape}")
        fig.add_scatter(x=ms, y=err, name=label, mode="lines", line=dict(color=PALETTE[j % len(PALETTE)], width=2))
    if reference is not None:
        fig.add_scatter(x=ms, y=np.asarray(reference, dtype=float), name=reference_label, mode="lines",
                        line=dict(color="black", dash="dash"))
    fig.update_layout(**_LAYOUT, title=title or "Monte-Carlo estimate of the DRO gradient",
                      xaxis_title="number of batches M", yaxis_title="relative error ‖ĝ_M − ∇R‖ / ‖∇R‖",
                      xaxis_type="log", yaxis_type="log", legend=dict(orientation="h", y=-0.25))
    return fig


# --------------------------------------------------------------------------- importance sampling (lesson 03)


def is_mixture(grad_norms, alpha: float) -> np.ndarray:
    r"""The uniform-mixing family :math:`p^{(\alpha)}=(1-\alpha)u+\alpha\,p^{GN}`, :math:`p^{GN}=g/\sum_jg_j`.

    ``alpha`` ∈ [0, 1] is the uniform-mixing α of the course glossary (0 uniform, ½ the paper's
    :math:`p^{1/2}`, 1 the optimal :math:`p^{GN}`). All-zero norms give the uniform distribution.
    """
    g = np.asarray(_np(grad_norms), dtype=np.float64).reshape(-1)
    if g.size == 0 or np.any(~np.isfinite(g)) or np.any(g < 0):
        raise ValueError("grad_norms must be a non-empty vector of finite, non-negative numbers")
    if not (0.0 <= float(alpha) <= 1.0):
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    n = g.size
    p_gn = g / g.sum() if g.sum() > 0 else np.full(n, 1.0 / n)
    return (1.0 - float(alpha)) / n + float(alpha) * p_gn


def is_estimator_stats(gram, p, *, weight_exponent: float = 1.0, batch_size: int = 1) -> dict[str, float]:
    r"""Exact moments of the importance-sampled gradient estimate, from the Gram matrix of per-sample gradients.

    With :math:`K_{ij}=\nabla\ell_i^T\nabla\ell_j` (``gram``, N × N), draws :math:`i_1..i_B` i.i.d. from ``p``
    and weights :math:`w_i=(1/(Np_i))^{e}` (``e = weight_exponent``; 1 is unbiased), the estimate
    :math:`\hat G=\frac1B\sum_b w_{i_b}\nabla\ell_{i_b}` of :math:`\nabla L=\frac1N\sum_i\nabla\ell_i` has

    * ``second_moment`` :math:`\mathbb E_p\|w_i\nabla\ell_i\|^2=\sum_ip_iw_i^2K_{ii}` (one draw; = H(p)/N² at e = 1),
    * ``variance`` :math:`\mathrm{tr\,Var}[\hat G]=(\text{second\_moment}-\|\mathbb E\hat G\|^2)/B`,
    * ``bias_sq`` :math:`\|\mathbb E\hat G-\nabla L\|^2` (0 at e = 1), ``mse`` = variance + bias_sq,
    * ``full_grad_sq`` :math:`\|\nabla L\|^2`.

    Computed in float64 by exact enumeration over the N items (no sampling).
    """
    K = np.asarray(_np(gram), dtype=np.float64)
    p = np.asarray(_np(p), dtype=np.float64).reshape(-1)
    n = p.size
    if K.shape != (n, n):
        raise ValueError(f"gram must be (N, N) with N = len(p) = {n}, got shape {K.shape}")
    if np.any(p <= 0) or abs(p.sum() - 1) > 1e-6:
        raise ValueError("p must be a probability vector with every p_i > 0")
    if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer ≥ 1, got {batch_size!r}")
    e = float(weight_exponent)
    w = (1.0 / (n * p)) ** e
    a = p * w                                    # E Ĝ = Σ a_i ∇ℓ_i
    second = float(np.sum(p * w ** 2 * np.diag(K)))
    mean_sq = float(a @ K @ a)
    d = a - 1.0 / n
    bias_sq = max(float(d @ K @ d), 0.0)
    var = max(second - mean_sq, 0.0) / batch_size
    u = np.full(n, 1.0 / n)
    return {"second_moment": second, "variance": var, "bias_sq": bias_sq, "mse": var + bias_sq,
            "full_grad_sq": float(u @ K @ u)}


def is_variance_figure(gram, *, alpha: float = 0.5, weight_exponent: float = 1.0, batch_size: int = 1,
                       alphas: Sequence[float] | None = None, title: str | None = None) -> go.Figure:
    r"""The interactive figure of lesson 03: the IS gradient estimate's error and ρ along the α-mixture.

    Left: the exact trace of the variance, the squared bias and their sum (MSE) of the
    importance-sampled mini-batch gradient (:func:`is_estimator_stats`) for
    :math:`p^{(\alpha)}=(1-\alpha)u+\alpha p^{GN}` as α runs over ``alphas``, with the chosen ``alpha``
    marked and the uniform value dashed. Right: the efficiency score ρ of
    :func:`dro_lab.sampling_quality` along α (it depends on p only, not on the weight exponent).
    The norms :math:`g_i=\sqrt{K_{ii}}` come from the Gram matrix ``gram``.
    """
    from .pergrad import sampling_quality

    K = np.asarray(_np(gram), dtype=np.float64)
    g = np.sqrt(np.clip(np.diag(K), 0, None))
    grid = np.linspace(0.0, 1.0, 51) if alphas is None else np.asarray(alphas, dtype=float)
    if float(alpha) == 1.0 and np.any(g == 0):
        raise ValueError("alpha = 1 puts zero probability on an item with a zero gradient; use alpha < 1")
    grid = grid[(grid < 1) | np.all(g > 0)]
    stats = [is_estimator_stats(K, is_mixture(g, a), weight_exponent=weight_exponent, batch_size=batch_size)
             for a in grid]
    here = is_estimator_stats(K, is_mixture(g, alpha), weight_exponent=weight_exponent, batch_size=batch_size)
    uni = is_estimator_stats(K, np.full(len(g), 1.0 / len(g)), weight_exponent=weight_exponent,
                             batch_size=batch_size)
    rho = np.array([sampling_quality(torch.as_tensor(is_mixture(g, a)), torch.as_tensor(g)).rho for a in grid])
    rho_here = sampling_quality(torch.as_tensor(is_mixture(g, alpha)), torch.as_tensor(g)).rho
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=(f"error of the gradient estimate (batch {batch_size})",
                                        "efficiency ρ (1 = optimal, 0 = uniform)"))
    for key, color, dash in (("variance", PALETTE[0], None), ("bias_sq", PALETTE[1], "dot"),
                             ("mse", PALETTE[2], "dash")):
        fig.add_trace(go.Scatter(x=grid, y=[s[key] for s in stats], name={"variance": "tr Var",
                      "bias_sq": "bias²", "mse": "MSE = tr Var + bias²"}[key], mode="lines",
                                 line=dict(color=color, dash=dash, width=2)), row=1, col=1)
    fig.add_trace(go.Scatter(x=[alpha], y=[here["mse"]], mode="markers", name=f"α = {alpha:.2f}",
                             marker=dict(size=11, color="black")), row=1, col=1)
    fig.add_hline(y=uni["mse"], line=dict(color="grey", dash="dash"), row=1, col=1)
    fig.add_trace(go.Scatter(x=grid, y=rho, name="ρ(p^(α))", mode="lines", line=dict(color=PALETTE[3], width=2)),
                  row=1, col=2)
    fig.add_trace(go.Scatter(x=[alpha], y=[rho_here], mode="markers", showlegend=False,
                             marker=dict(size=11, color="black")), row=1, col=2)
    fig.update_xaxes(title_text="α (uniform mixing): p = (1−α)·u + α·p^GN", range=[0, 1])
    fig.update_yaxes(type="log", row=1, col=1)
    ratio = here["mse"] / uni["mse"] if uni["mse"] > 0 else float("nan")
    layout = dict(_LAYOUT)
    layout["height"] = 420
    fig.update_layout(**layout, legend=dict(orientation="h", y=-0.22), title=title or (
        f"α = {alpha:.2f}, weight exponent e = {weight_exponent:.2f}: MSE {ratio:.3f}× uniform, ρ = {rho_here:.3f}"))
    return fig


def is_cost_figure(seconds: Mapping[str, Mapping[str, Sequence[float]]], *,
                   paper: Mapping[str, Mapping[str, float]] | None = None, title: str | None = None) -> go.Figure:
    """Wall-clock seconds per run (Table 1 analogue): bars per optimizer × scheme, error bars = sample std.

    ``seconds`` maps scheme → optimizer → per-run seconds; ``paper`` (optional) scheme → optimizer →
    the paper's mean, drawn as hollow diamonds on a second axis (the paper's laptop is slower).
    """
    _check_nonempty(seconds, "seconds")
    fig = make_subplots(specs=[[{"secondary_y": paper is not None}]])
    for k, (scheme, by_opt) in enumerate(seconds.items()):
        opts = list(by_opt)
        vals = [np.asarray(by_opt[o], dtype=float) for o in opts]
        fig.add_trace(go.Bar(x=opts, y=[v.mean() for v in vals], name=f"{scheme} (ours)",
                             marker_color=PALETTE[k % len(PALETTE)],
                             error_y=dict(type="data", array=[v.std(ddof=1) if v.size > 1 else 0 for v in vals])),
                      secondary_y=False)
        if paper is not None and scheme in paper:
            po = [o for o in opts if o in paper[scheme]]
            fig.add_trace(go.Scatter(x=po, y=[paper[scheme][o] for o in po], mode="markers", name=f"{scheme} (paper)",
                                     marker=dict(symbol="diamond-open", size=12, color=PALETTE[k % len(PALETTE)])),
                          secondary_y=True)
    fig.update_layout(**_LAYOUT, barmode="group", title=title or "Seconds per run", legend=dict(orientation="h", y=-0.2))
    fig.update_yaxes(title_text="seconds per run (ours)", secondary_y=False)
    if paper is not None:
        fig.update_yaxes(title_text="seconds per run (paper, 2017 laptop)", secondary_y=True, rangemode="tozero")
    return fig


# --------------------------------------------------------------------------- lesson 04: group DRO (Mirror-Prox, ALSO)
# Names the lesson-04 notebook calls. ``tradeoff_figure`` is lesson 01's (rows over a knob); the
# average-vs-worst scatter of lesson 04 is ``method_tradeoff_figure``.

__all__ += ["bilinear_traces", "bilinear_figure", "kl_to_prior", "pi_star", "pi_star_figure", "pi_star_bar_figure",
            "pi_trajectory_figure", "method_sweep_figure", "method_tradeoff_figure"]

_MAX_FRAMES = 60


def _path_array(path, name: str) -> np.ndarray:
    p = _np(path)
    if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] < 1:
        raise ValueError(f"paths[{name!r}] must be an array (T, 2) of (x, y) iterates, got shape {p.shape}")
    return p


def _bilinear_extent(arrays: Mapping[str, np.ndarray]) -> float:
    """Half-width of the square view: 1.5 × the extent of the paths that do not grow (‖z_T‖ ≤ ‖z_0‖, finite)."""
    calm = [p for p in arrays.values()
            if np.isfinite(p).all() and np.linalg.norm(p[-1]) <= np.linalg.norm(p[0]) * (1 + 1e-9)]
    pts = np.concatenate(calm) if calm else np.stack([p[0] for p in arrays.values()])
    ext = float(np.abs(pts[np.isfinite(pts)]).max(initial=0.0))
    return 1.5 * (ext if ext > 0 else 1.0)


def _in_view(p: np.ndarray, extent: float) -> np.ndarray:
    """The path up to and including the first iterate past 10× the view (keeps the JSON finite and small)."""
    out = np.flatnonzero(~(np.abs(p) <= 10 * extent).all(1))
    return p if out.size == 0 else p[: out[0] + 1]


def bilinear_traces(paths: Mapping[str, object]) -> tuple[list[go.Scatter], float]:
    r"""The traces of :func:`bilinear_figure` and the half-width of its square view.

    One line per path (legend name with the final distance :math:`\|z_T\|` to the saddle), a
    marker on each path's last iterate, then the start and the saddle (0, 0). The widget panel
    redraws these in place.
    """
    if not paths:
        raise ValueError("paths must map at least one name to a (T, 2) path")
    arrays = {name: _path_array(p, name) for name, p in paths.items()}
    extent = _bilinear_extent(arrays)
    traces: list[go.Scatter] = []
    for k, (name, p) in enumerate(arrays.items()):
        color = PALETTE[k % len(PALETTE)]
        final = float(np.linalg.norm(p[-1]))
        shown = _in_view(p, extent)
        traces.append(go.Scatter(x=shown[:, 0], y=shown[:, 1], mode="lines", name=f"{name}: ‖z_T‖ = {final:.3g}",
                                 legendgroup=name, line=dict(color=color, width=2)))
        traces.append(go.Scatter(x=shown[-1:, 0], y=shown[-1:, 1], mode="markers", name=f"{name}: z_T",
                                 legendgroup=name, showlegend=False, marker=dict(color=color, size=9)))
    starts = np.stack([p[0] for p in arrays.values()])
    traces.append(go.Scatter(x=starts[:, 0], y=starts[:, 1], mode="markers", name="start z₀",
                             marker=dict(symbol="circle-open", size=13, color="black", line=dict(width=2))))
    traces.append(go.Scatter(x=[0.0], y=[0.0], mode="markers", name="saddle (0, 0)",
                             marker=dict(symbol="x", size=12, color="black")))
    return traces, extent


def _frame_steps(lengths: Sequence[int], max_frames: int = _MAX_FRAMES) -> np.ndarray:
    """At most ``max_frames`` step indices from 0 to the longest path's last step, both ends included."""
    last = max(lengths) - 1
    return np.unique(np.linspace(0, last, min(last + 1, max_frames)).round().astype(int))


def _animate_bilinear(fig: go.Figure, arrays: Mapping[str, np.ndarray], extent: float) -> None:
    """Frames moving each path's trail and current iterate; play/pause buttons and a step slider."""
    steps = _frame_steps([len(p) for p in arrays.values()])
    moving = list(range(2 * len(arrays)))
    frames = []
    for s in steps:
        data = []
        for p in arrays.values():
            trail = _in_view(p[: min(s, len(p) - 1) + 1], extent)
            data += [go.Scatter(x=trail[:, 0], y=trail[:, 1]), go.Scatter(x=trail[-1:, 0], y=trail[-1:, 1])]
        frames.append(go.Frame(data=data, traces=moving, name=str(int(s))))
    fig.frames = frames
    still = {"mode": "immediate", "frame": {"duration": 0, "redraw": False}, "transition": {"duration": 0}}
    fig.update_layout(
        updatemenus=[dict(type="buttons", direction="left", x=0.0, y=-0.14, xanchor="left", yanchor="top",
                          showactive=False, buttons=[
                              dict(label="▶ play", method="animate",
                                   args=[None, {"frame": {"duration": 80, "redraw": False}, "fromcurrent": True,
                                                "transition": {"duration": 0}}]),
                              dict(label="❚❚ pause", method="animate", args=[[None], still])])],
        sliders=[dict(active=len(frames) - 1, x=0.2, len=0.8, y=-0.1, yanchor="top",
                      currentvalue=dict(prefix="step t = "),
                      steps=[dict(label=f.name, method="animate", args=[[f.name], still]) for f in frames])])


def bilinear_figure(paths: Mapping[str, object], *, animate: bool = False, title: str | None = None) -> go.Figure:
    r"""Iterates of descent–ascent on :math:`\min_x\max_y xy` in the (x, y) plane, saddle and start marked.

    ``paths`` maps a label (e.g. ``"α = 0"``) to a ``(T, 2)`` path, as returned by
    :func:`dro_lab.optim.bilinear_game_path`. The square view is 1.5 × the extent of the paths that
    do not grow, so a diverging path leaves the frame instead of squashing the picture; its
    legend entry gives the final distance :math:`\|z_T\|`. ``animate=True`` adds plotly frames
    (at most 60, sub-sampled) with play/pause buttons and a step slider; the still figure shows
    the whole paths.
    """
    traces, extent = bilinear_traces(paths)
    fig = go.Figure(data=traces)
    if animate:
        _animate_bilinear(fig, {name: _path_array(p, name) for name, p in paths.items()}, extent)
    layout = dict(_LAYOUT)
    layout.update(height=480, margin=dict(l=60, r=20, t=50, b=110 if animate else 50))
    fig.update_layout(**layout, title=title or "Descent–ascent on min_x max_y xy",
                      legend=dict(x=1.02, y=1, xanchor="left", yanchor="top"))
    fig.update_xaxes(title_text="x (minimising player)", range=[-extent, extent], zeroline=True)
    fig.update_yaxes(title_text="y (maximising player)", range=[-extent, extent], zeroline=True,
                     scaleanchor="x", scaleratio=1)
    return fig


def _group_prior(prior, c: int) -> torch.Tensor:
    """The prior π̂ as a float64 probability vector of length ``c`` (uniform for ``None``)."""
    if prior is None:
        return torch.full((c,), 1.0 / c, dtype=torch.float64)
    p = torch.as_tensor(_np(prior)).reshape(-1)
    if p.numel() != c:
        raise ValueError(f"prior must have one weight per group ({c}), got {p.numel()}")
    return p / p.sum()


def kl_to_prior(pi, prior=None) -> float:
    r""":math:`\mathrm{KL}(\pi\|\hat\pi)` of one weight vector (the radius r reached), via
    :func:`dro_lab.divergence_value`; ``prior`` ``None`` is uniform."""
    from .robust import divergence_value

    q = torch.as_tensor(_np(pi)).reshape(-1)
    if q.numel() == 0 or not bool(torch.isfinite(q).all()) or bool((q < 0).any()) or not float(q.sum()) > 0:
        raise ValueError("pi must be a non-empty vector of finite, non-negative weights with positive mass")
    return float(divergence_value(q / q.sum(), _group_prior(prior, q.numel()), "kl"))


def pi_star(group_losses, prior=None, *, beta: float) -> tuple[np.ndarray, float]:
    r"""The inner maximiser :math:`\pi^\star\propto\hat\pi\,e^{\beta L_j}` (β = 1/τ) and the radius
    :math:`r=\mathrm{KL}(\pi^\star\|\hat\pi)` it reaches, via :func:`dro_lab.worst_case_weights` and
    :func:`kl_to_prior`. ``prior`` ``None`` is uniform."""
    losses = torch.as_tensor(_np(group_losses)).reshape(-1)
    p = _group_prior(prior, losses.numel())
    q = worst_case_weights(losses, divergence="kl", beta=float(beta), prior=p)
    return q.numpy(), kl_to_prior(q, p)


def _group_names(c: int, labels: Sequence | None) -> list[str]:
    if labels is None:
        return [f"group {j}" for j in range(c)]
    labels = [str(s) for s in labels]
    if len(labels) != c:
        raise ValueError(f"labels must name the {c} groups, got {len(labels)}")
    return labels


def pi_star_figure(group_losses, prior=None, betas: Sequence[float] | None = None, *,
                   labels: Sequence | None = None, title: str | None = None) -> go.Figure:
    r"""π*_j(β) ∝ π̂_j exp(β L_j) for each group against β = 1/τ (log axis); KL(π*‖π̂) on the right axis.

    β → 0 leaves π at the prior π̂; β → ∞ puts all mass on the worst group. The dotted line is
    the radius :math:`r=\mathrm{KL}(\pi^\star\|\hat\pi)` the penalised problem reaches (it tends to
    :math:`-\log\hat\pi_{j^\star}`). ``betas`` default: 61 points from 10⁻² to 10³.
    """
    betas = np.logspace(-2, 3, 61) if betas is None else np.asarray(list(betas), dtype=float)
    if betas.size == 0 or np.any(~(betas > 0)) or np.any(~np.isfinite(betas)):
        raise ValueError("betas must be finite positive numbers (a log axis; β = 0 is the prior itself)")
    losses = _np(group_losses).reshape(-1)
    solved = [pi_star(losses, prior, beta=b) for b in betas]
    pis = np.stack([s[0] for s in solved])
    kls = np.array([s[1] for s in solved])
    names = _group_names(losses.size, labels)
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for j, name in enumerate(names):
        fig.add_trace(go.Scatter(x=betas, y=pis[:, j], mode="lines", name=f"π*: {name} (L = {losses[j]:.3g})",
                                 line=dict(color=PALETTE[j % len(PALETTE)], width=2)), secondary_y=False)
    fig.add_trace(go.Scatter(x=betas, y=kls, mode="lines", name="r = KL(π*‖π̂)",
                             line=dict(color="black", dash="dot", width=2)), secondary_y=True)
    fig.update_layout(**_LAYOUT, title=title or "Worst-case group weights π*(β), β = 1/τ",
                      legend=dict(orientation="h", y=-0.25))
    fig.update_xaxes(type="log", title_text="β = 1/τ (robustness)")
    fig.update_yaxes(title_text="π*_j", range=[0, 1.02], secondary_y=False)
    fig.update_yaxes(title_text="r = KL(π*‖π̂)", rangemode="tozero", showgrid=False, secondary_y=True)
    return fig


def pi_star_bar_figure(group_losses, prior=None, *, beta: float, labels: Sequence | None = None,
                       title: str | None = None) -> go.Figure:
    r"""Bars of π*(β) per group beside the prior π̂ (the figure the τ panel redraws); the title reads
    out β, τ = 1/β and :math:`r=\mathrm{KL}(\pi^\star\|\hat\pi)`."""
    losses = _np(group_losses).reshape(-1)
    q, r = pi_star(losses, prior, beta=beta)
    p = _group_prior(prior, losses.size).numpy()
    names = [f"{n}<br>L = {l:.3g}" for n, l in zip(_group_names(losses.size, labels), losses)]
    fig = go.Figure()
    fig.add_bar(x=names, y=p, name="prior π̂", marker_color="#bbbbbb")
    fig.add_bar(x=names, y=q, name="π*(β)", marker_color=PALETTE[1])
    fig.update_layout(**_LAYOUT, barmode="group", yaxis_range=[0, 1.02], yaxis_title="weight",
                      title=title or f"π* at β = {beta:.3g} (τ = {1 / beta:.3g}): r = KL(π*‖π̂) = {r:.3f}",
                      legend=dict(orientation="h", y=-0.25))
    return fig


def pi_trajectory_figure(pi_history, *, labels: Sequence | None = None, prior=None, kl=None, top: int = 8,
                         title: str | None = None) -> go.Figure:
    r"""Group weights π_t over steps, one line per group, dashed at each group's prior weight.

    With more than ``top`` groups the ``top`` groups of largest final weight are drawn and the rest
    are summed into one "others" line. ``kl`` (one value per step, e.g.
    ``opt.kl_to_prior()`` recorded along the run) goes on the right axis as
    :math:`r_t=\mathrm{KL}(\pi_t\|\hat\pi)`.
    """
    pi = _np(pi_history)
    if pi.ndim != 2 or pi.shape[0] < 1:
        raise ValueError(f"pi_history must be an array (T, c), got shape {pi.shape}")
    steps, c = pi.shape
    if not isinstance(top, (int, np.integer)) or top < 1:
        raise ValueError(f"top must be an integer ≥ 1, got {top!r}")
    names = _group_names(c, labels)
    p = None if prior is None else _group_prior(prior, c).numpy()
    shown = list(range(c)) if c <= top else sorted(np.argsort(-pi[-1], kind="stable")[:top].tolist())
    rest = [j for j in range(c) if j not in shown]
    t = np.arange(steps)
    fig = make_subplots(specs=[[{"secondary_y": kl is not None}]])
    lines = [(names[j], pi[:, j], None if p is None else p[j]) for j in shown]
    if rest:
        lines.append((f"others ({len(rest)} groups)", pi[:, rest].sum(1), None if p is None else p[rest].sum()))
    for k, (name, y, level) in enumerate(lines):
        color = "#7f7f7f" if rest and k == len(lines) - 1 else PALETTE[k % len(PALETTE)]
        fig.add_trace(go.Scatter(x=t, y=y, mode="lines", name=f"π: {name}", legendgroup=name,
                                 line=dict(color=color, width=2)), secondary_y=False)
        if level is not None:
            fig.add_trace(go.Scatter(x=[t[0], t[-1]], y=[level, level], mode="lines", name=f"prior π̂: {name}",
                                     legendgroup=name, showlegend=False, hoverinfo="name+y",
                                     line=dict(color=color, dash="dash", width=1)), secondary_y=False)
    if kl is not None:
        r = _np(kl).reshape(-1)
        if r.size != steps:
            raise ValueError(f"kl must have one value per step ({steps}), got {r.size}")
        fig.add_trace(go.Scatter(x=t, y=r, mode="lines", name="r_t = KL(π_t‖π̂)",
                                 line=dict(color="black", dash="dot", width=2)), secondary_y=True)
        fig.update_yaxes(title_text="r_t = KL(π_t‖π̂)", rangemode="tozero", showgrid=False, secondary_y=True)
    fig.update_layout(**_LAYOUT, title=title or "Group weights π over training (dashed: prior π̂)",
                      legend=dict(orientation="h", y=-0.25))
    fig.update_xaxes(title_text="step t")
    fig.update_yaxes(title_text="π_j", rangemode="tozero", secondary_y=False)
    return fig


def method_sweep_figure(x, results: Mapping[str, object], *, x_title: str, y_title: str, log_x: bool = False,
                        title: str | None = None, paper: Mapping[str, Sequence[float]] | None = None,
                        colors: Mapping[str, str] | None = None) -> go.Figure:
    """A metric against a sweep (the ALSO paper's Fig. 1: F1 against the imbalance coefficient).

    ``results`` maps a method to an array ``(n_seeds, len(x))``: a mean line with a ± sample-std
    band (drawn for ≥ 2 seeds). ``paper`` maps a method to the paper's values at ``x``, drawn as
    open diamonds in the method's colour.
    """
    xs = np.asarray(x, dtype=float).reshape(-1)
    palette = _method_colors(list(results) + [m for m in (paper or {}) if m not in results], colors)
    fig = go.Figure()
    for name, curves in results.items():
        a = np.asarray(_np(curves), dtype=float)
        if a.shape[-1] != xs.size:
            raise ValueError(f"results[{name!r}] must have len(x) = {xs.size} columns, got shape {a.shape}")
        _add_band_traces(fig, xs, a, name=name, color=palette[name])
    for name, vals in (paper or {}).items():
        v = np.asarray(vals, dtype=float).reshape(-1)
        if v.size != xs.size:
            raise ValueError(f"paper[{name!r}] must have len(x) = {xs.size} values, got {v.size}")
        fig.add_trace(go.Scatter(x=xs, y=v, mode="markers", name=f"{name} (paper)", legendgroup=name,
                                 marker=dict(symbol="diamond-open", size=10, color=palette[name],
                                             line=dict(width=2))))
    fig.update_layout(**_LAYOUT, title=title or f"{y_title} against {x_title}", xaxis_title=x_title,
                      yaxis_title=y_title, legend=dict(orientation="h", y=-0.25))
    if log_x:
        fig.update_xaxes(type="log")
    return fig


def method_tradeoff_figure(average: Mapping[str, Sequence[float]], worst: Mapping[str, Sequence[float]], *,
                           title: str | None = None, cost: Mapping[str, float] | None = None,
                           x_title: str = "average metric", y_title: str = "worst-group metric",
                           colors: Mapping[str, str] | None = None) -> go.Figure:
    """Average against worst-group metric, one point per method (mean over seeds, ± sample-std bars both ways).

    ``average`` and ``worst`` map a method to its per-seed values. With ``cost`` (method → seconds
    per epoch) the marker area grows with the cost and the hover text gives it. Up and to the
    right is better on both counts.
    """
    missing = set(average) ^ set(worst)
    if missing:
        raise ValueError(f"average and worst must name the same methods; unmatched: {sorted(missing)}")
    palette = _method_colors(list(average), colors)
    top_cost = max((float(v) for v in (cost or {}).values()), default=0.0)
    fig = go.Figure()
    for name in average:
        mx, sx, _ = _mean_std(np.asarray(_np(average[name]), dtype=float).reshape(-1, 1))
        my, sy, _ = _mean_std(np.asarray(_np(worst[name]), dtype=float).reshape(-1, 1))
        marker = dict(color=palette[name], size=12, line=dict(width=1, color="black"))
        hover = f"{name}<br>average {mx[0]:.4g} ± {sx[0]:.2g}<br>worst {my[0]:.4g} ± {sy[0]:.2g}"
        if cost is not None and name in cost and top_cost > 0:
            # area ∝ cost: the dearest method is 40 px across, none below 6 px
            marker.update(size=float(cost[name]), sizemode="area", sizeref=2.0 * top_cost / 40 ** 2, sizemin=6)
            hover += f"<br>{float(cost[name]):.3g} s / epoch"
        fig.add_trace(go.Scatter(x=mx, y=my, mode="markers", name=name, text=[hover], hoverinfo="text",
                                 marker=marker,
                                 error_x=dict(type="data", array=sx, visible=True),
                                 error_y=dict(type="data", array=sy, visible=True)))
    fig.update_layout(**_LAYOUT, title=title or "Average vs worst-group (mean ± std over seeds)"
                      + (" — marker area ∝ cost per epoch" if cost else ""),
                      xaxis_title=x_title, yaxis_title=y_title, legend=dict(orientation="h", y=-0.25))
    return fig


# --------------------------------------------------------------------------- lesson 05: doubly robust AT (DONE)
# Names the lesson-05 notebook calls. Here r is DONE's KL temperature (ω = softmax(ℓ/r) over the batch),
# α the attack step and ε the attack radius; ω·|B| = 1 is the uniform weight 1/|B| of plain AT.

__all__ += ["done_weight_stats", "done_weight_figure", "attack_toy_figure", "per_class_robust_figure",
            "attack_gap_figure", "r_schedule_figure"]

_LOG_FLOOR = -12.0  # log10(ω·|B|) of weights that underflow (ω·|B| < 10⁻¹²) is drawn at this floor


def _class_names(classes: Sequence, class_names) -> list[str]:
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


def done_weight_stats(weights) -> dict[str, float]:
    r"""Summary of one batch of instance weights ω: ``ess`` = :math:`1/\sum_i\omega_i^2` (ω summing to one, as
    :func:`dro_lab.adversarial_training.done_weights` gives with η = 1), ``batch`` = |B|, ``ess_fraction`` =
    ESS/|B| and ``max_scaled`` = :math:`\max_i\omega_i|\mathcal B|` (1 everywhere = the uniform weights of AT)."""
    w = _np(weights).reshape(-1)
    if w.size == 0:
        raise ValueError("weights must be a non-empty vector")
    _check_finite(w, "weights")
    ess = float(1.0 / np.sum(w ** 2))
    return {"ess": ess, "batch": int(w.size), "ess_fraction": ess / w.size, "max_scaled": float(w.max() * w.size)}


def done_weight_figure(weights, labels, *, class_names=None, title: str | None = None,
                       class_accuracy=None) -> go.Figure:
    r"""DONE's weights per class (the paper's Fig. 5): left, :math:`\log_{10}(\omega_i|\mathcal B|)` per class as a
    box with all points, dashed at 0 (the uniform weight 1/|B|); right, the class mean of ω·|B| (bars, dashed
    at 1).

    ``weights`` and ``labels`` are one vector each over the same |B| examples. ``class_names`` is a sequence
    indexed by the label (or a mapping label → name). With ``class_accuracy`` (one value per class, in the order
    of the sorted labels, e.g. each class's robust accuracy) the right panel becomes a scatter of class-mean
    weight against it (the paper's negative correlation). Weights below 10⁻¹²/|B| are drawn at −12.
    """
    w, y = _np(weights).reshape(-1), np.asarray(_np(labels)).reshape(-1)
    if w.size != y.size or w.size == 0:
        raise ValueError(f"weights and labels must be non-empty and of the same length, got {w.size} and {y.size}")
    b = w.size
    classes = [int(c) if float(c).is_integer() else c for c in np.unique(y)]
    names = _class_names(classes, class_names)
    scaled = w * b
    logs = np.log10(np.maximum(scaled, 10 ** _LOG_FLOOR))
    means = np.array([scaled[y == c].mean() for c in classes])
    fig = make_subplots(rows=1, cols=2, column_widths=[0.62, 0.38], horizontal_spacing=0.1,
                        subplot_titles=("log₁₀(ω·|B|) per class (0 = uniform 1/|B|)",
                                        "class-mean ω·|B|" + (" vs class accuracy" if class_accuracy is not None
                                                             else "")))
    for k, (c, name) in enumerate(zip(classes, names)):
        color = _CLASS_COLORS[k % len(_CLASS_COLORS)]
        fig.add_trace(go.Box(y=logs[y == c], name=name, legendgroup=name, boxpoints="all", jitter=0.4, pointpos=0,
                             marker=dict(color=color, size=4, opacity=0.6), line=dict(color=color),
                             showlegend=False), row=1, col=1)
    fig.add_hline(y=0.0, line=dict(color="black", dash="dash", width=1), row=1, col=1)
    if class_accuracy is None:
        fig.add_trace(go.Bar(x=names, y=means, name="class-mean ω·|B|", showlegend=False,
                             marker_color=[_CLASS_COLORS[k % len(_CLASS_COLORS)] for k in range(len(classes))]),
                      row=1, col=2)
        fig.update_xaxes(title_text="class", type="category", row=1, col=2)
    else:
        acc = _np(class_accuracy).reshape(-1)
        if acc.size != len(classes):
            raise ValueError(f"class_accuracy must have one value per class ({len(classes)}), got {acc.size}")
        fig.add_trace(go.Scatter(x=acc, y=means, mode="markers+text", text=names, textposition="top center",
                                 name="class-mean ω·|B|", showlegend=False,
                                 marker=dict(size=10, color=[_CLASS_COLORS[k % len(_CLASS_COLORS)]
                                                             for k in range(len(classes))])), row=1, col=2)
        fig.update_xaxes(title_text="class accuracy", row=1, col=2)
    fig.add_hline(y=1.0, line=dict(color="black", dash="dash", width=1), row=1, col=2)
    fig.update_layout(**_LAYOUT, title=title or f"DONE weights per class (|B| = {b})")
    fig.update_xaxes(title_text="class", type="category", row=1, col=1)
    fig.update_yaxes(title_text="log₁₀(ω·|B|)", row=1, col=1)
    fig.update_yaxes(title_text="mean ω·|B|", rangemode="tozero", row=1, col=2)
    return fig


def _ball_outline(center: np.ndarray, eps: float, norm: str) -> np.ndarray:
    """The boundary of the ε-ball around ``center``: a closed square (L∞) or a 48-gon circle (L2)."""
    if norm == "linf":
        corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]], dtype=float)
        return center + eps * corners
    t = np.linspace(0.0, 2 * np.pi, 49)
    return center + eps * np.stack([np.cos(t), np.sin(t)], 1)


def _polylines(pieces: Sequence[np.ndarray]) -> tuple[list, list]:
    """x and y of several polylines in one trace, separated by ``None`` (one gap after each piece)."""
    xs: list = []
    ys: list = []
    for p in pieces:
        xs += p[:, 0].tolist() + [None]
        ys += p[:, 1].tolist() + [None]
    return xs, ys


def attack_toy_figure(grid_x, grid_y, grid_prob, points, labels, adv_points=None, *, eps: float | None = None,
                      norm: str = "linf", title: str | None = None, n_balls: int = 5) -> go.Figure:
    r"""An attack on a 2-D two-class toy: P(class 1) over the grid (``grid_prob`` of shape
    ``(len(grid_y), len(grid_x))``, as ``np.meshgrid(grid_x, grid_y)`` lays it out) with its 0.5 contour,
    the clean points by label and, with ``adv_points``, the adversarial points (crosses) joined to their
    clean points by thin segments (one trace, one segment per point, separated by ``None``). With ``eps``
    the ε-ball (square for ``norm="linf"``, circle for ``"l2"``) is drawn around the first ``n_balls``
    points.
    """
    if norm not in ("linf", "l2"):
        raise ValueError(f"norm must be 'linf' or 'l2', got {norm!r}")
    if eps is not None and not (isinstance(eps, (int, float, np.floating)) and math.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps must be None or a finite number ≥ 0, got {eps!r}")
    n_balls = _check_int(n_balls, "n_balls", 0)
    gx, gy, prob = _np(grid_x).reshape(-1), _np(grid_y).reshape(-1), _np(grid_prob)
    if prob.shape != (gy.size, gx.size):
        raise ValueError(f"grid_prob must have shape (len(grid_y), len(grid_x)) = {(gy.size, gx.size)}, "
                         f"got {prob.shape}")
    pts, y = _np(points), np.asarray(_np(labels)).reshape(-1).astype(int)
    if pts.ndim != 2 or pts.shape[1] != 2 or pts.shape[0] != y.size:
        raise ValueError(f"points must be (n, 2) with one label each, got {pts.shape} and {y.size} labels")
    adv = None if adv_points is None else _np(adv_points)
    if adv is not None and adv.shape != pts.shape:
        raise ValueError(f"adv_points must have the shape of points {pts.shape}, got {adv.shape}")
    tint = [[0.0, "#c6dbef"], [0.5, "#ffffff"], [1.0, "#fcbba1"]]   # class 0 blue, class 1 red, as the points
    fig = go.Figure()
    fig.add_trace(go.Contour(x=gx, y=gy, z=prob, zmin=0.0, zmax=1.0, colorscale=tint, name="P(class 1)",
                             contours=dict(coloring="heatmap", showlines=False), line=dict(width=0),
                             colorbar=dict(title="P(class 1)", len=0.8), hovertemplate="P(class 1) = %{z:.2f}"
                             "<extra></extra>"))
    fig.add_trace(go.Contour(x=gx, y=gy, z=prob, contours=dict(start=0.5, end=0.5, size=1, coloring="lines"),
                             colorscale=[[0, "black"], [1, "black"]], line=dict(color="black", width=2),
                             showscale=False, name="boundary P = 0.5", showlegend=True, hoverinfo="skip"))
    if adv is not None:
        sx, sy = _polylines([np.stack([p, a]) for p, a in zip(pts, adv)])
        fig.add_trace(go.Scatter(x=sx, y=sy, mode="lines", name="clean → adversarial", hoverinfo="skip",
                                 line=dict(color="#555555", width=1)))
    for c in np.unique(y):
        m = y == c
        color = PALETTE[int(c) % len(PALETTE)]
        fig.add_trace(go.Scatter(x=pts[m, 0], y=pts[m, 1], mode="markers", name=f"class {c} (clean)",
                                 legendgroup=f"class {c}",
                                 marker=dict(color=color, size=7, line=dict(color="white", width=1))))
        if adv is not None:
            fig.add_trace(go.Scatter(x=adv[m, 0], y=adv[m, 1], mode="markers", name=f"class {c} (adversarial)",
                                     legendgroup=f"class {c}", marker=dict(color=color, size=7, symbol="x-thin",
                                                                           line=dict(color=color, width=2))))
    if eps is not None and n_balls > 0:
        bx, by = _polylines([_ball_outline(p, float(eps), norm) for p in pts[:n_balls]])
        fig.add_trace(go.Scatter(x=bx, y=by, mode="lines", name=f"ε-ball ({'L∞' if norm == 'linf' else 'L2'}, "
                                 f"ε = {float(eps):.3g})", hoverinfo="skip",
                                 line=dict(color="black", width=1, dash="dot")))
    layout = dict(_LAYOUT)
    layout.update(height=480)
    fig.update_layout(**layout, title=title or "Attack on a 2-D toy: P(class 1) and the boundary P = 0.5",
                      legend=dict(x=1.18, y=1, xanchor="left", yanchor="top"))
    fig.update_xaxes(title_text="x₁", range=[gx.min(), gx.max()], constrain="domain")
    fig.update_yaxes(title_text="x₂", range=[gy.min(), gy.max()], scaleanchor="x", scaleratio=1, constrain="domain")
    return fig


def _seed_array(values, name: str, k: int | None = None) -> np.ndarray:
    """Per-seed values as a float array (n_seeds, k); a vector is one seed (k given) or k=1 seeds (k None)."""
    a = np.asarray(_np(values), dtype=float)
    if k is None:
        a = a.reshape(-1, 1)
    elif a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[0] == 0 or (k is not None and a.shape[1] != k):
        raise ValueError(f"{name} must be an array (n_seeds, {k if k is not None else 1}), got shape {a.shape}")
    return a


def per_class_robust_figure(per_class: Mapping[str, object], *, class_names=None, highlight_worst: int = 3,
                            paper: Mapping[str, Sequence[float]] | None = None, title: str | None = None,
                            yaxis_title: str = "robust accuracy (PGD)",
                            colors: Mapping[str, str] | None = None) -> go.Figure:
    """Per-class robust accuracy, grouped bars per method (mean ± sample std over seeds; the paper's Fig. 1).

    ``per_class`` maps a method to an array ``(n_seeds, k)``. The ``highlight_worst`` classes with the lowest
    mean of the *first* method are shaded and their bars outlined in black (line width 3, else 0).
    ``paper`` maps a method to its k published values, drawn as open diamonds over the method's bars.
    """
    if not per_class:
        raise ValueError("per_class must map at least one method to an array (n_seeds, k)")
    highlight_worst = _check_int(highlight_worst, "highlight_worst", 0)
    first = next(iter(per_class))
    k = np.asarray(_np(per_class[first])).shape[-1]
    arrays = {m: _seed_array(v, f"per_class[{m!r}]", k) for m, v in per_class.items()}
    names = _class_names(list(range(k)), class_names)
    palette = _method_colors(list(arrays) + [m for m in (paper or {}) if m not in arrays], colors)
    worst = np.argsort(arrays[first].mean(0), kind="stable")[:max(0, int(highlight_worst))]
    fig = go.Figure()
    for name, a in arrays.items():
        mean, std, _ = _mean_std(a)
        width = [3 if (name == first and j in worst) else 0 for j in range(k)]
        fig.add_trace(go.Bar(x=names, y=mean, name=name, offsetgroup=name, marker_color=palette[name],
                             marker_line=dict(color="black", width=width),
                             error_y=dict(type="data", array=std, visible=True)))
    for name, vals in (paper or {}).items():
        v = np.asarray(vals, dtype=float).reshape(-1)
        if v.size != k:
            raise ValueError(f"paper[{name!r}] must have one value per class ({k}), got {v.size}")
        fig.add_trace(go.Scatter(x=names, y=v, mode="markers", name=f"{name} (paper)", offsetgroup=name,
                                 marker=dict(symbol="diamond-open", size=10, color=palette[name],
                                             line=dict(width=2))))
    for j in worst:
        fig.add_vrect(x0=j - 0.5, x1=j + 0.5, fillcolor="#d62728", opacity=0.08, line_width=0, layer="below")
    worst_txt = ", ".join(names[j] for j in worst)
    fig.update_layout(**_LAYOUT, barmode="group", scattermode="group",
                      title=title or f"Per-class {yaxis_title} (mean ± std over seeds); worst {len(worst)} of "
                                     f"{first}: {worst_txt}",
                      xaxis_title="class", yaxis_title=yaxis_title, legend=dict(orientation="h", y=-0.25))
    fig.update_xaxes(type="category")
    return fig


def attack_gap_figure(pgd: Mapping[str, object], autoattack: Mapping[str, object], *,
                      paper: Mapping[str, tuple[float, float]] | None = None, title: str | None = None) -> go.Figure:
    """PGD-20 against AutoAttack-style robust accuracy per method: two bars each (mean ± sample std over seeds),
    the gap PGD − AA written over the AutoAttack bar. ``paper`` maps a method to its published
    ``(PGD-20, AutoAttack)`` pair, drawn as open diamonds over the bars."""
    missing = set(pgd) ^ set(autoattack)
    if missing or not pgd:
        raise ValueError(f"pgd and autoattack must name the same, non-empty methods; unmatched: {sorted(missing)}")
    methods = list(pgd)
    stats = {}
    for label, source in (("PGD-20", pgd), ("AutoAttack", autoattack)):
        ms = [_mean_std(_seed_array(source[m], f"{label}[{m!r}]")) for m in methods]
        stats[label] = (np.array([s[0][0] for s in ms]), np.array([s[1][0] for s in ms]))
    gap = stats["PGD-20"][0] - stats["AutoAttack"][0]
    fig = go.Figure()
    for k, label in enumerate(("PGD-20", "AutoAttack")):
        mean, std = stats[label]
        extra = dict(text=[f"gap {g:.3g}" for g in gap], textposition="outside") if label == "AutoAttack" else {}
        fig.add_trace(go.Bar(x=methods, y=mean, name=f"{label} (ours)", offsetgroup=label,
                             marker_color=["#7f7f7f", PALETTE[1]][k],
                             error_y=dict(type="data", array=std, visible=True), **extra))
    if paper:
        known = [m for m in methods if m in paper]
        for k, label in enumerate(("PGD-20", "AutoAttack")):
            fig.add_trace(go.Scatter(x=known, y=[float(paper[m][k]) for m in known], mode="markers",
                                     name=f"{label} (paper)", offsetgroup=label,
                                     marker=dict(symbol="diamond-open", size=11, color="black", line=dict(width=2))))
    fig.update_layout(**_LAYOUT, barmode="group", scattermode="group",
                      title=title or "Robust accuracy: PGD-20 vs AutoAttack (mean ± std over seeds)",
                      xaxis_title="method", yaxis_title="robust accuracy", legend=dict(orientation="h", y=-0.25))
    fig.update_yaxes(rangemode="tozero")
    return fig


def r_schedule_figure(epochs, r_values, lr_values=None, metrics: Mapping[str, object] | None = None, *,
                      title: str | None = None) -> go.Figure:
    """The learning process (the paper's Fig. 2): r(t) on a log axis, then (optional) the learning rate
    and per-epoch metrics, in stacked subplots sharing the epoch axis.

    ``metrics`` maps a name (e.g. ``"test SA"``, ``"test RA-PGD"``, ``"ESS/|B|"``) to a vector over the
    epochs or an array ``(n_seeds, n_epochs)`` (mean line, ± sample-std band).
    """
    t = _np(epochs).reshape(-1)
    r = _np(r_values).reshape(-1)
    if r.size != t.size or t.size == 0:
        raise ValueError(f"r_values must have one value per epoch ({t.size}), got {r.size}")
    if np.isnan(r).any() or np.any(r <= 0):
        raise ValueError("r_values must be > 0 (DONE's temperature, a log axis)")
    rows = ["r (DONE temperature)"]
    if lr_values is not None:
        rows.append("learning rate β_t")
    if metrics:
        rows.append("per-epoch metrics")
    fig = make_subplots(rows=len(rows), cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=rows)
    fig.add_trace(go.Scatter(x=t, y=r, mode="lines+markers", name="r(t)", line=dict(color="black", width=2),
                             marker=dict(size=4)), row=1, col=1)
    fig.update_yaxes(type="log", title_text="r", row=1, col=1)
    row = 1
    if lr_values is not None:
        row += 1
        lr = _np(lr_values).reshape(-1)
        if lr.size != t.size:
            raise ValueError(f"lr_values must have one value per epoch ({t.size}), got {lr.size}")
        fig.add_trace(go.Scatter(x=t, y=lr, mode="lines", name="learning rate", line=dict(color=PALETTE[0])),
                      row=row, col=1)
        fig.update_yaxes(title_text="lr", rangemode="tozero", row=row, col=1)
    if metrics:
        row += 1
        for k, (name, values) in enumerate(metrics.items()):
            a = _seed_array(values, f"metrics[{name!r}]", t.size)
            _add_band_traces(fig, t, a, name=name, color=PALETTE[(k + 1) % len(PALETTE)], row=row, col=1)
        fig.update_yaxes(title_text="value", row=row, col=1)
    fig.update_xaxes(title_text="epoch", row=len(rows), col=1)
    layout = dict(_LAYOUT)
    layout.update(height=220 + 200 * len(rows))
    fig.update_layout(**layout, title=title or "Learning process: r(t), learning rate and test metrics",
                      legend=dict(orientation="h", y=-0.12))
    return fig


# --------------------------------------------------------------------------- lesson 06: label-smoothing DRO (GI-LS)
# Names the lesson-06 notebook calls. Here α is the label-smoothing factor (ȳ_α puts 1 − α on the true class and
# α/(k−1) on each other), γ the Wasserstein penalty (β = 1/γ), T the number of ascent steps and r (ρ) the
# transport radius, realised as ρ̂ = mean ½‖f(x_T) − f(x)‖² (spec §5, figures 5–8, 10, 11).

__all__ += ["shift_field_figure", "transport_vs_gamma_figure", "ls_regularizer_values", "regularizer_figure",
            "generated_images_figure", "cost_vs_T_figure", "bo_progress_figure"]

_TINTS = ["#c6dbef", "#c7e9c0", "#dadaeb", "#fdd0a2", "#fcbba1", "#d9d9d9", "#f2d7e6", "#c7eae5"]


def _points_2d(points, name: str, n: int | None = None) -> np.ndarray:
    p = _np(points)
    if p.ndim != 2 or p.shape[1] != 2 or (n is not None and p.shape[0] != n):
        raise ValueError(f"{name} must have shape ({n if n is not None else 'n'}, 2), got {p.shape}")
    return p


def shift_field_figure(points, shifted: Mapping[str, object], labels, *, grid=None,
                       title: str | None = None) -> go.Figure:
    r"""The GI-LS shift field on a 2-D toy (spec §5, figure 5): for each setting (e.g. ``"α = 0.3"``) a segment
    from every point to its shifted position :math:`x^T` (one trace of n segments separated by ``None``) and the
    shifted points (small open circles, same colour, same legend group); the clean points by label on top.

    ``grid = (grid_x, grid_y, class_map)`` draws the model's predicted class over the plane as a tinted
    background (``class_map`` of shape ``(len(grid_y), len(grid_x))``, as ``np.meshgrid(grid_x, grid_y)``
    lays it out), its boundaries showing where the tint changes.
    """
    pts = _points_2d(points, "points")
    y = np.asarray(_np(labels)).reshape(-1).astype(int)
    if y.size != pts.shape[0]:
        raise ValueError(f"labels must have one entry per point ({pts.shape[0]}), got {y.size}")
    fig = go.Figure()
    ranges = [pts]
    if grid is not None:
        gx, gy, cmap = _np(grid[0]).reshape(-1), _np(grid[1]).reshape(-1), _np(grid[2])
        if cmap.shape != (gy.size, gx.size):
            raise ValueError(f"grid class_map must have shape (len(grid_y), len(grid_x)) = {(gy.size, gx.size)}, "
                             f"got {cmap.shape}")
        k = int(max(cmap.max(), y.max())) + 1
        scale = []
        for c in range(k):   # a stepped colour scale: class c owns [c/k, (c+1)/k]
            scale += [[c / k, _TINTS[c % len(_TINTS)]], [(c + 1) / k, _TINTS[c % len(_TINTS)]]]
        fig.add_trace(go.Heatmap(x=gx, y=gy, z=cmap, zmin=-0.5, zmax=k - 0.5, colorscale=scale, showscale=False,
                                 name="predicted class", hovertemplate="predicted class %{z}<extra></extra>"))
    for j, (name, values) in enumerate(shifted.items()):
        q = _points_2d(values, f"shifted[{name!r}]", pts.shape[0])
        ranges.append(q)
        color = ["#222222", PALETTE[1], PALETTE[3], PALETTE[4], PALETTE[5]][j % 5]
        sx, sy = _polylines([np.stack([p, s]) for p, s in zip(pts, q)])
        fig.add_trace(go.Scatter(x=sx, y=sy, mode="lines", name=f"shift, {name}", legendgroup=name,
                                 line=dict(color=color, width=1.2), hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=q[:, 0], y=q[:, 1], mode="markers", name=f"x_T, {name}", legendgroup=name,
                                 showlegend=False, marker=dict(color=color, size=5, symbol="circle-open")))
    for c in np.unique(y):
        m = y == c
        fig.add_trace(go.Scatter(x=pts[m, 0], y=pts[m, 1], mode="markers", name=f"class {c}",
                                 marker=dict(color=_CLASS_COLORS[int(c) % len(_CLASS_COLORS)], size=7,
                                             line=dict(color="white", width=1))))
    allp = np.concatenate(ranges)
    allp = allp[np.isfinite(allp).all(1)]
    lo, hi = allp.min(0), allp.max(0)
    if grid is not None:
        lo, hi = np.minimum(lo, [gx.min(), gy.min()]), np.maximum(hi, [gx.max(), gy.max()])
    layout = dict(_LAYOUT)
    layout.update(height=480)
    fig.update_layout(**layout, title=title or "GI-LS shift field: x → x_T per setting",
                      legend=dict(x=1.02, y=1, xanchor="left", yanchor="top"))
    fig.update_xaxes(title_text="x₁", range=[lo[0], hi[0]], constrain="domain")
    fig.update_yaxes(title_text="x₂", range=[lo[1], hi[1]], scaleanchor="x", scaleratio=1, constrain="domain")
    return fig


def transport_vs_gamma_figure(gammas, costs: Mapping[str, object], *, bounds: Mapping[str, object] | None = None,
                              title: str | None = None, yaxis_title: str = "realised transport cost ρ̂") -> go.Figure:
    r"""Realised transport cost :math:`\hat\rho` (or the mean shift norm) against γ on a log-x axis (spec §5,
    figure 6): one line per setting, ``costs[name]`` a vector over ``gammas`` or an array ``(n_seeds, n_gammas)``
    (mean line, ± sample-std band). ``bounds`` maps a label (``"L₀/γ"``, ``"3L₀/γ"``) to a vector over
    ``gammas``, drawn dashed in black. The y axis is logarithmic when every finite value is positive;
    non-finite values (a diverged ascent) leave gaps.
    """
    g = _np(gammas).reshape(-1)
    if g.size == 0 or np.any(g <= 0):
        raise ValueError("gammas must be a non-empty vector of positive values (log axis)")
    fig = go.Figure()
    finite = []
    for j, (name, values) in enumerate(costs.items()):
        a = _seed_array(values, f"costs[{name!r}]", g.size)
        finite.append(a[np.isfinite(a)])
        _add_band_traces(fig, g, a, name=name, color=PALETTE[j % len(PALETTE)])
        fig.data[-1].mode = "lines+markers"
    for j, (name, values) in enumerate((bounds or {}).items()):
        b = _np(values).reshape(-1)
        if b.size != g.size:
            raise ValueError(f"bounds[{name!r}] must have one value per γ ({g.size}), got {b.size}")
        finite.append(b[np.isfinite(b)])
        fig.add_trace(go.Scatter(x=g, y=b, mode="lines", name=name,
                                 line=dict(color="black", width=1, dash=["dash", "dot", "dashdot"][j % 3])))
    vals = np.concatenate(finite) if finite else np.array([])
    fig.update_layout(**_LAYOUT, title=title or "Realised transport cost vs γ (β = 1/γ)", xaxis_title="γ",
                      yaxis_title=yaxis_title)
    fig.update_xaxes(type="log")
    if vals.size and np.all(vals > 0):
        fig.update_yaxes(type="log")
    return fig


def ls_regularizer_values(p_true, alpha: float, *, k: int = 2, theta_f=None) -> np.ndarray:
    r""":math:`\|\theta_f(p-\bar y_\alpha)\|^2` (eq. 20, corrected form) for a model whose softmax puts ``p_true``
    on the true class (class 0) and spreads the rest evenly over the k − 1 others; ȳ_α = (1 − α, α/(k−1), …).
    ``theta_f`` is the last layer's weight (k, d) — :math:`\theta_f^\top(p-\bar y_\alpha)` is used, so a
    ``torch.nn.Linear(d, k).weight`` fits — the identity by default. Zero at ``p_true = 1 − α``."""
    p = _np(p_true).reshape(-1)
    if not (isinstance(k, (int, np.integer)) and k >= 2):
        raise ValueError(f"k must be an int ≥ 2, got {k!r}")
    if not (isinstance(alpha, (int, float, np.floating)) and 0 <= alpha <= 1):
        raise ValueError(f"alpha (the label-smoothing factor) must lie in [0, 1], got {alpha!r}")
    if not (np.isfinite(p).all() and np.all((p >= 0) & (p <= 1))):
        raise ValueError("p_true must hold probabilities in [0, 1]")
    diff = np.empty((p.size, k))
    diff[:, 0] = p - (1 - alpha)
    diff[:, 1:] = ((1 - p) - alpha)[:, None] / (k - 1)
    w = np.eye(k) if theta_f is None else _np(theta_f)
    if w.ndim != 2 or w.shape[0] != k:
        raise ValueError(f"theta_f must have shape (k={k}, d), got {w.shape}")
    return np.sum((diff @ w) ** 2, axis=1)


def _alpha_of(key) -> float | None:
    """α from a legend key: the key itself when numeric, else the last number in the string."""
    import re

    if isinstance(key, (int, float, np.integer, np.floating)) and not isinstance(key, bool):
        return float(key)
    found = re.findall(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?", str(key))
    return float(found[-1]) if found else None


def regularizer_figure(p_true, values: Mapping[object, object], *, title: str | None = None) -> go.Figure:
    r"""The LS+DRO regulariser :math:`\|\theta_f(p-\bar y_\alpha)\|^2` against the true-class probability
    (spec §5, figure 7), one line per α; its zero at :math:`p_{\text{true}}=1-\alpha` is marked by a dotted
    vertical line and a diamond. ``values`` maps α (a number, or a label whose last number is α, e.g.
    ``"α = 0.3"``) to a vector over ``p_true`` (e.g. :func:`ls_regularizer_values`). Samples right of the zero
    (more confident than 1 − α) are pushed outward by the GI-LS ascent, those left of it toward the boundary.
    """
    p = _np(p_true).reshape(-1)
    fig = go.Figure()
    for j, (key, vals) in enumerate(values.items()):
        v = _np(vals).reshape(-1)
        if v.size != p.size:
            raise ValueError(f"values[{key!r}] must have one value per p_true ({p.size}), got {v.size}")
        name = key if isinstance(key, str) else f"α = {float(key):g}"
        color = PALETTE[j % len(PALETTE)]
        fig.add_trace(go.Scatter(x=p, y=v, mode="lines", name=name, legendgroup=name, line=dict(color=color, width=2)))
        alpha = _alpha_of(key)
        if alpha is not None and p.min() <= 1 - alpha <= p.max():
            order = np.argsort(p)
            z = float(np.interp(1 - alpha, p[order], v[order]))
            fig.add_trace(go.Scatter(x=[1 - alpha], y=[z], mode="markers", name=f"zero at 1 − α = {1 - alpha:g}",
                                     legendgroup=name, showlegend=False,
                                     marker=dict(symbol="diamond", size=10, color=color, line=dict(color="black",
                                                                                                   width=1))))
            fig.add_vline(x=1 - alpha, line=dict(color=color, width=1, dash="dot"))
    fig.update_layout(**_LAYOUT, title=title or "Regulariser ‖θ_f(p − ȳ_α)‖² vs true-class probability",
                      xaxis_title="p_true (softmax probability of the true class)",
                      yaxis_title="‖θ_f(p − ȳ_α)‖²")
    fig.update_yaxes(rangemode="tozero")
    return fig


def _images_2d(x, name: str) -> np.ndarray:
    a = _np(x)
    if a.ndim == 4:
        if a.shape[1] != 1:
            raise ValueError(f"{name} must be grey images (n, 1, H, W) or (n, H, W), got {a.shape}")
        a = a[:, 0]
    if a.ndim != 3:
        raise ValueError(f"{name} must be grey images (n, 1, H, W) or (n, H, W), got {a.shape}")
    return a


def generated_images_figure(x, x_shifted, *, n: int = 6, title: str | None = None) -> go.Figure:
    """Original images, GI-LS generated images and their difference for the first ``n`` (spec §5, figure 11).

    Rows: x and x_T on a shared grey scale [min, max] of both; x_T − x on a red–blue scale symmetric about 0
    (its largest |difference| in the title). ``x`` and ``x_shifted`` are ``(N, 1, H, W)`` or ``(N, H, W)``.
    """
    a, b = _images_2d(x, "x"), _images_2d(x_shifted, "x_shifted")
    if a.shape != b.shape:
        raise ValueError(f"x and x_shifted must have the same shape, got {a.shape} and {b.shape}")
    n = min(_check_int(n, "n"), a.shape[0])
    a, b = a[:n], b[:n]
    d = b - a
    dmax = float(np.abs(d).max()) or 1.0
    lo, hi = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
    rows = ["original x", "generated x_T", "difference x_T − x"]
    fig = make_subplots(rows=3, cols=n, horizontal_spacing=0.01, vertical_spacing=0.06,
                        row_titles=rows)
    for r, (imgs, axis) in enumerate(((a, "coloraxis"), (b, "coloraxis"), (d, "coloraxis2")), start=1):
        for c in range(n):
            fig.add_trace(go.Heatmap(z=imgs[c], coloraxis=axis, name=f"{rows[r - 1]} #{c}",
                                     hovertemplate="%{z:.3f}<extra></extra>"), row=r, col=c + 1)
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False, autorange="reversed", scaleanchor="x", scaleratio=1)
    layout = dict(_LAYOUT)
    layout.update(height=160 * 3 + 80)
    fig.update_layout(**layout, title=title or f"Generated images (max |x_T − x| = {float(np.abs(d).max()):.3g})",
                      coloraxis=dict(colorscale="gray", cmin=lo, cmax=hi,
                                     colorbar=dict(title="pixel", len=0.6, y=0.7, x=1.06)),
                      coloraxis2=dict(colorscale="RdBu", cmid=0.0, cmin=-dmax, cmax=dmax,
                                      colorbar=dict(title="x_T − x", len=0.3, y=0.15, x=1.06)))
    return fig


def cost_vs_T_figure(T_values, seconds, *, title: str | None = None) -> go.Figure:
    """Seconds per epoch against T (spec §5, figure 10): the measurements (``seconds`` a vector over
    ``T_values`` or ``(n_repeats, n_T)``: mean ± sample std), the least-squares line a + b·T, and the ratio of
    each mean to the one at T = 0 written over its point (to the fitted a when T = 0 was not measured)."""
    t = _np(T_values).reshape(-1)
    s = _seed_array(seconds, "seconds", t.size)
    if t.size < 2:
        raise ValueError("cost_vs_T_figure needs at least two T values for the linear fit")
    mean, std, _ = _mean_std(s)
    slope, intercept = np.polyfit(t, mean, 1)
    base = float(mean[t == 0][0]) if np.any(t == 0) else float(intercept)
    ratios = mean / base
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=t, y=mean, mode="markers+text", name="measured (mean ± std)",
                             text=[f"×{r:.2f}" for r in ratios], textposition="top center",
                             error_y=dict(type="data", array=std, visible=True),
                             marker=dict(color=PALETTE[0], size=9)))
    tt = np.linspace(t.min(), t.max(), 50)
    fig.add_trace(go.Scatter(x=tt, y=intercept + slope * tt, mode="lines",
                             name=f"fit {intercept:.3g} + {slope:.3g}·T s", line=dict(color="black", dash="dash")))
    fig.update_layout(**_LAYOUT, title=title or f"Cost per epoch vs T (ratio to T = 0; fit slope "
                                                f"{slope / base:.2f}× the T = 0 cost per step)",
                      xaxis_title="T (ascent steps)", yaxis_title="seconds per epoch")
    fig.update_yaxes(rangemode="tozero")
    return fig


def bo_progress_figure(values: Mapping[str, Sequence[float]], *, title: str | None = None,
                       maximize: bool = True, yaxis_title: str = "objective (validation accuracy)") -> go.Figure:
    """Bayesian-optimisation progress (spec §5, figure 3): each study's objective per trial (markers) and its
    running best (line, the cumulative max — min with ``maximize=False`` — ignoring NaN of failed trials),
    one colour per study (e.g. GP / TPE / random)."""
    _check_nonempty(values, "values")
    fig = go.Figure()
    for j, (name, vals) in enumerate(values.items()):
        v = np.asarray([np.nan if u is None else float(u) for u in vals], dtype=float)
        if v.size == 0:
            raise ValueError(f"values[{name!r}] is empty")
        color = PALETTE[j % len(PALETTE)]
        trial = np.arange(1, v.size + 1)
        best = (np.fmax if maximize else np.fmin).accumulate(v)
        fig.add_trace(go.Scatter(x=trial, y=v, mode="markers", name=f"{name}: trial", legendgroup=name,
                                 marker=dict(color=color, size=7, opacity=0.6)))
        fig.add_trace(go.Scatter(x=trial, y=best, mode="lines", name=f"{name}: running best", legendgroup=name,
                                 line=dict(color=color, width=2, shape="hv")))
    fig.update_layout(**_LAYOUT, title=title or "Bayesian optimisation: objective per trial and running best",
                      xaxis_title="trial", yaxis_title=yaxis_title)
    return fig


# --------------------------------------------------------------------------- lesson 07: the capstone comparison
# One point per method: x the average test accuracy, y the worst-group test accuracy (mean ± sample std over
# seeds), marker area ∝ seconds per training epoch, colour = the lesson the method comes from; the Pareto front
# and the reference method's (ERM's) two accuracies as dashed lines. Input: the dicts of
# :func:`dro_lab.comparison.summarise`.

__all__ += ["comparison_figure"]

_LESSON_SYMBOLS = ["circle", "square", "diamond", "triangle-up", "cross", "x", "star", "hexagon"]


def comparison_figure(summary: Sequence[Mapping], *, front: Sequence[str] | None = None, reference: str = "ERM",
                      title: str | None = None, x_title: str = "average test accuracy",
                      y_title: str = "worst-group test accuracy", max_marker: float = 44.0) -> go.Figure:
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
    lessons: list[str] = []
    for e in entries:
        if e.get("lesson", "") not in lessons:
            lessons.append(e.get("lesson", ""))
    top = max(float(e["seconds_per_epoch"]) for e in entries)
    rank: dict[str, int] = defaultdict(int)
    fig = go.Figure()
    for e in entries:
        lesson = e.get("lesson", "")
        color = PALETTE[lessons.index(lesson) % len(PALETTE)]
        symbol = _LESSON_SYMBOLS[rank[lesson] % len(_LESSON_SYMBOLS)]
        rank[lesson] += 1
        sec = float(e["seconds_per_epoch"])
        size = max(8.0, max_marker * math.sqrt(sec / top)) if top > 0 else 12.0   # area ∝ cost
        ratio = e.get("cost_vs_reference")
        cost_txt = f"{sec * 1e3:.3g} ms / epoch" + (f" (×{ratio:.2f} {reference})"
                                                     if ratio is not None and math.isfinite(ratio) else "")
        hover = (f"<b>{e['method']}</b> ({lesson or 'no lesson'})<br>average {e['avg_acc']:.3f} ± "
                 f"{e.get('avg_acc_sd', 0.0):.3f}<br>worst group {e['worst_group_acc']:.3f} ± "
                 f"{e.get('worst_group_acc_sd', 0.0):.3f}<br>{cost_txt}<br>{e.get('n_seeds', 1)} seed(s)")
        fig.add_trace(go.Scatter(
            x=[float(e["avg_acc"])], y=[float(e["worst_group_acc"])], mode="markers+text", name=e["method"],
            text=[e["method"]], textposition="top center", textfont=dict(size=10, color=color),
            hovertext=[hover], hoverinfo="text", legendgroup=lesson or e["method"],
            marker=dict(color=color, symbol=symbol, size=size, opacity=0.75, line=dict(width=1, color="black")),
            error_x=dict(type="data", array=[float(e.get("avg_acc_sd", 0.0))], visible=True, color=color),
            error_y=dict(type="data", array=[float(e.get("worst_group_acc_sd", 0.0))], visible=True, color=color)))
    if front:
        pts = sorted((float(e["avg_acc"]), float(e["worst_group_acc"])) for e in entries if e["method"] in front)
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines", name="Pareto front",
                                 line=dict(color="black", width=1.5, dash="dot"), hoverinfo="skip"))
    ref = next((e for e in entries if e["method"] == reference), None)
    if ref is not None:
        xs = [float(e["avg_acc"]) for e in entries]
        ys = [float(e["worst_group_acc"]) for e in entries]
        fig.add_trace(go.Scatter(x=[ref["avg_acc"]] * 2, y=[min(ys), max(ys)], mode="lines",
                                 name=f"{reference} average", hoverinfo="skip",
                                 line=dict(color="grey", width=1, dash="dash")))
        fig.add_trace(go.Scatter(x=[min(xs), max(xs)], y=[ref["worst_group_acc"]] * 2, mode="lines",
                                 name=f"{reference} worst group", hoverinfo="skip",
                                 line=dict(color="grey", width=1, dash="dash")))
    layout = dict(_LAYOUT)
    layout.update(height=560)
    n_seeds = max(int(e.get("n_seeds", 1)) for e in entries)
    fig.update_layout(**layout, title=title or (f"Average vs worst-group accuracy (mean ± std over {n_seeds} seed(s)); "
                                                "marker area ∝ seconds per epoch"),
                      xaxis_title=x_title, yaxis_title=y_title,
                      legend=dict(orientation="v", x=1.02, y=1.0, font=dict(size=10)))
    return fig
