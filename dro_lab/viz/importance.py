"""Lesson 03: the error of the importance-sampled gradient along the uniform mixture, and the cost per run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from .._validation import check_nonempty
from ..pergrad.quality import is_estimator_stats, sampling_quality
from ..samplers.importance import is_mixture
from ..utils import to_numpy
from ._style import LAYOUT, PALETTE, layout


def is_variance_figure(
    gram,
    *,
    alpha: float = 0.5,
    weight_exponent: float = 1.0,
    batch_size: int = 1,
    alphas: Sequence[float] | None = None,
    title: str | None = None,
) -> go.Figure:
    r"""The interactive figure of lesson 03: the IS gradient estimate's error and ρ along the α-mixture.

    Left: the exact trace of the variance, the squared bias and their sum (MSE) of the
    importance-sampled mini-batch gradient (:func:`is_estimator_stats`) for
    :math:`p^{(\alpha)}=(1-\alpha)u+\alpha p^{GN}` as α runs over ``alphas``, with the chosen ``alpha``
    marked and the uniform value dashed. Right: the efficiency score ρ of
    :func:`dro_lab.sampling_quality` along α (it depends on p only, not on the weight exponent).
    The norms :math:`g_i=\sqrt{K_{ii}}` come from the Gram matrix ``gram``.
    """
    K = np.asarray(to_numpy(gram), dtype=np.float64)
    g = np.sqrt(np.clip(np.diag(K), 0, None))
    grid = np.linspace(0.0, 1.0, 51) if alphas is None else np.asarray(alphas, dtype=float)
    if float(alpha) == 1.0 and np.any(g == 0):
        raise ValueError("alpha = 1 puts zero probability on an item with a zero gradient; use alpha < 1")
    grid = grid[(grid < 1) | np.all(g > 0)]
    moments = dict(weight_exponent=weight_exponent, batch_size=batch_size)
    (here,), (rho_here,) = _error_and_rho(K, g, [alpha], **moments)  # checks alpha first
    stats, rho = _error_and_rho(K, g, grid, **moments)
    uni = is_estimator_stats(K, np.full(len(g), 1.0 / len(g)), **moments)
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.12,
        subplot_titles=(
            f"error of the gradient estimate (batch {batch_size})",
            "efficiency ρ (1 = optimal, 0 = uniform)",
        ),
    )
    _add_error_curves(fig, grid, stats, alpha=alpha, here=here["mse"], uniform=uni["mse"])
    fig.add_trace(
        go.Scatter(x=grid, y=rho, name="ρ(p^(α))", mode="lines", line=dict(color=PALETTE[3], width=2)), row=1, col=2
    )
    fig.add_trace(
        go.Scatter(x=[alpha], y=[rho_here], mode="markers", showlegend=False, marker=dict(size=11, color="black")),
        row=1,
        col=2,
    )
    fig.update_xaxes(title_text="α (uniform mixing): p = (1−α)·u + α·p^GN", range=[0, 1])
    fig.update_yaxes(type="log", row=1, col=1)
    ratio = here["mse"] / uni["mse"] if uni["mse"] > 0 else float("nan")
    fig.update_layout(
        **layout(height=420),
        legend=dict(orientation="h", y=-0.22),
        title=title
        or (
            f"α = {alpha:.2f}, weight exponent e = {weight_exponent:.2f}: MSE {ratio:.3f}× uniform, ρ = {rho_here:.3f}"
        ),
    )
    return fig


def _error_and_rho(K: np.ndarray, g: np.ndarray, alphas, **moments) -> tuple[list[dict], np.ndarray]:
    """:func:`is_estimator_stats` and the ρ of :func:`dro_lab.sampling_quality` of p^(α) at each α of ``alphas``."""
    stats = [is_estimator_stats(K, is_mixture(g, a), **moments) for a in alphas]
    rho = np.array([sampling_quality(torch.as_tensor(is_mixture(g, a)), torch.as_tensor(g)).rho for a in alphas])
    return stats, rho


def _add_error_curves(fig: go.Figure, grid, stats: list[dict], *, alpha: float, here: float, uniform: float) -> None:
    """tr Var, bias² and MSE along α (left panel), the chosen α's MSE marked and the uniform MSE dashed."""
    names = {"variance": "tr Var", "bias_sq": "bias²", "mse": "MSE = tr Var + bias²"}
    # On a log axis a bias² of 1e-36 (float round-off of an unbiased estimate) would stretch the axis over 30
    # decades: values below 1e-10 of the largest error are round-off and are left out (a gap in the line).
    floor = 1e-10 * max(max(s["mse"] for s in stats), uniform)
    for key, color, dash in (
        ("variance", PALETTE[0], None),
        ("bias_sq", PALETTE[1], "dot"),
        ("mse", PALETTE[2], "dash"),
    ):
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=[s[key] if s[key] >= floor else None for s in stats],
                name=names[key],
                mode="lines",
                line=dict(color=color, dash=dash, width=2),
            ),
            row=1,
            col=1,
        )
    fig.add_trace(
        go.Scatter(x=[alpha], y=[here], mode="markers", name=f"α = {alpha:.2f}", marker=dict(size=11, color="black")),
        row=1,
        col=1,
    )
    fig.add_hline(y=uniform, line=dict(color="grey", dash="dash"), row=1, col=1)


def is_cost_figure(
    seconds: Mapping[str, Mapping[str, Sequence[float]]],
    *,
    paper: Mapping[str, Mapping[str, float]] | None = None,
    title: str | None = None,
) -> go.Figure:
    """Wall-clock seconds per run (Table 1 analogue): bars per optimizer × scheme, error bars = sample std.

    ``seconds`` maps scheme → optimizer → per-run seconds; ``paper`` (optional) scheme → optimizer →
    the paper's mean, drawn as hollow diamonds on a second axis (the paper's laptop is slower).
    """
    check_nonempty(seconds, "seconds")
    fig = make_subplots(specs=[[{"secondary_y": paper is not None}]])
    for k, (scheme, by_opt) in enumerate(seconds.items()):
        opts = list(by_opt)
        vals = [np.asarray(by_opt[o], dtype=float) for o in opts]
        fig.add_trace(
            go.Bar(
                x=opts,
                y=[v.mean() for v in vals],
                name=f"{scheme} (ours)",
                marker_color=PALETTE[k % len(PALETTE)],
                error_y=dict(type="data", array=[v.std(ddof=1) if v.size > 1 else 0 for v in vals]),
            ),
            secondary_y=False,
        )
        if paper is not None and scheme in paper:
            po = [o for o in opts if o in paper[scheme]]
            fig.add_trace(
                go.Scatter(
                    x=po,
                    y=[paper[scheme][o] for o in po],
                    mode="markers",
                    name=f"{scheme} (paper)",
                    marker=dict(symbol="diamond-open", size=12, color=PALETTE[k % len(PALETTE)]),
                ),
                secondary_y=True,
            )
    fig.update_layout(**LAYOUT, barmode="group", title=title or "Seconds per run", legend=dict(orientation="h", y=-0.2))
    fig.update_yaxes(title_text="seconds per run (ours)", secondary_y=False)
    if paper is not None:
        fig.update_yaxes(title_text="seconds per run (paper, 2017 laptop)", secondary_y=True, rangemode="tozero")
    return fig
