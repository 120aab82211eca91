"""Lesson 03: the error of the importance-sampled gradient along the uniform mixture, the cost per run, the loss
against wall-clock time, and forgotten weights on a logistic regression."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from dro_course.figures._style import LAYOUT, PALETTE, layout, method_colors
from dro_course.figures.experiments import reference_beside_live_figure
from dro_course.lessons.importance_sampling.live import run_label
from dro_course.lessons.importance_sampling.studies import PAPER_TABLE1, cost_ratios, paper_cost_ratios
from dro_lab._validation import check_nonempty
from dro_lab.experiments.result import ExperimentResult
from dro_lab.pergrad.quality import is_estimator_stats, sampling_quality
from dro_lab.samplers.importance import is_mixture
from dro_lab.utils import to_numpy

__all__ = [
    "forgotten_weights_figure",
    "is_cost_figure",
    "is_cost_ratio_figure",
    "is_variance_figure",
    "log_curves_figure",
    "accuracy_beside_figure",
    "loss_against_time_figure",
]


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
        **layout(height=440, margin=dict(l=60, r=20, t=90, b=50)),
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


def _result(value, name: str) -> ExperimentResult:
    if not isinstance(value, ExperimentResult):
        raise TypeError(f"{name} must be an ExperimentResult, got {type(value).__name__}")
    return value


def is_cost_ratio_figure(
    reference: ExperimentResult,
    live: ExperimentResult | None = None,
    *,
    methods: Sequence[str] | None = None,
    title: str | None = None,
) -> go.Figure:
    """Table 1 analogue: each arm's cost per epoch as a multiple of plain SGD's (``"SGD u"``), for the reference
    run, the reader's run (optional; labelled an illustration when it is one, :func:`.live.run_label`) and the
    paper (Table 1's seconds per run over plain SGD's 26.5 s), as grouped bars over Table 1's band: p^GN's cost over
    u's across the four optimizers, 2.0–2.39×, the range the cost claims are judged against (a band, not a
    threshold: a far larger cost does not hold either).

    Ratios are geometric means over seeds of the per-seed ratio
    (:func:`dro_course.lessons.importance_sampling.studies.cost_ratios`); timings from other machines compare only as
    ratios.
    """
    runs = {"reference run": _result(reference, "reference")}
    if live is not None:
        runs[run_label(_result(live, "live")).lower()] = live
    methods = list(reference.methods if methods is None else methods)
    check_nonempty(methods, "methods")
    for label, result in runs.items():
        missing = [m for m in methods if m not in result.methods]
        if missing or "SGD u" not in result.methods:
            raise ValueError(f"the {label} lacks {missing or ['SGD u']}; pass methods= the runs share")
    paper = paper_cost_ratios()
    fig = go.Figure()
    for k, (label, result) in enumerate(runs.items()):
        ratios = cost_ratios(result)
        name = f"{label} ({result.dataset}, {len(result.seeds)} seed{'s' if len(result.seeds) != 1 else ''})"
        fig.add_trace(go.Bar(x=methods, y=[ratios[m] for m in methods], name=name, marker_color=PALETTE[k],
                             text=[f"{ratios[m]:.1f}×" for m in methods], textposition="outside"))  # fmt: skip
    shown = [m for m in methods if m in paper]
    fig.add_trace(
        go.Scatter(
            x=shown,
            y=[paper[m] for m in shown],
            mode="markers",
            name="the paper (its timing table: seconds per run)",
            marker=dict(symbol="diamond", size=12, color="black"),
        )
    )
    band = [PAPER_TABLE1["p^GN"][o] / PAPER_TABLE1["u"][o] for o in PAPER_TABLE1["p^GN"]]  # 2.00 (SGD) … 2.39 (Adam)
    low, high = min(band), max(band)
    fig.add_hrect(y0=low, y1=high, fillcolor="grey", opacity=0.25, line_width=0, layer="below")
    # the band's name goes in the legend: a label on the plot would sit on the bars
    name = f"the paper's band, {low:.1f}–{high:.2f}× (p^GN over u: the cost claims)"
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(color="rgba(128, 128, 128, 0.4)", width=10),
                             name=name))  # fmt: skip
    fig.update_yaxes(title_text="cost per epoch ÷ plain SGD's", rangemode="tozero")
    fig.update_layout(
        **layout(height=440),
        barmode="group",
        title=title or "What an epoch costs, as a multiple of plain SGD (SGD u)",
        legend=dict(orientation="h", y=-0.3),
    )
    return fig


def loss_against_time_figure(
    result: ExperimentResult,
    metric: str = "test_loss",
    *,
    methods: Sequence[str] | None = None,
    title: str | None = None,
) -> go.Figure:
    """Each arm's mean ``metric`` (over seeds) drawn at its mean cumulative training time, log axis: the paper's
    remark that with time on the x-axis "the advantage of p^GN over u would disappear" (§4)."""
    result = _result(result, "result")
    methods = list(result.methods if methods is None else methods)
    check_nonempty(methods, "methods")
    unknown = [m for m in methods if m not in result.methods]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; the result has {result.methods}")
    colours = method_colors(methods, None)
    fig = go.Figure()
    for m in methods:
        seconds = np.cumsum(np.nanmean(result.curve("seconds", m), axis=0))
        values = np.nanmean(result.curve(metric, m), axis=0)
        fig.add_trace(go.Scatter(x=seconds, y=values, mode="lines+markers", name=m, line=dict(color=colours[m]),
                                 marker=dict(size=5)))  # fmt: skip
    seeds = len(result.seeds)
    fig.update_yaxes(type="log", title_text=f"{metric.replace('_', ' ')} (mean over seeds)")
    fig.update_layout(
        **layout(height=400),
        xaxis_title="seconds of training (cumulative)",
        title=title or f"{metric.replace('_', ' ')} against wall-clock time ({result.dataset}, {seeds} seeds)",
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def forgotten_weights_figure(paths: Mapping[str, np.ndarray], theta_star, *, title: str | None = None) -> go.Figure:
    """The paths of logistic-regression runs in the plane of the first two coordinates of the logit contrast
    (``paths``: name → (epochs, ≥ 2) array, e.g.
    :class:`dro_course.lessons.importance_sampling.studies.ForgottenWeights`'s) and the optimum ``theta_star`` as a
    star: a run without the importance weights ends elsewhere."""
    if not isinstance(paths, Mapping):
        raise TypeError(f"paths must map run names to (epochs, 2+) arrays, got {type(paths).__name__}")
    check_nonempty(paths, "paths")
    arrays = {name: np.asarray(to_numpy(p), dtype=float) for name, p in paths.items()}
    if any(a.ndim != 2 or a.shape[1] < 2 or a.shape[0] == 0 for a in arrays.values()):
        raise ValueError("paths must map each run to an (epochs, ≥ 2) array")
    star = np.asarray(to_numpy(theta_star), dtype=float).reshape(-1)
    if star.size < 2:
        raise ValueError(f"theta_star must have at least 2 coordinates, got {star.size}")
    colours = method_colors(list(arrays), None)
    fig = go.Figure()
    for name, a in arrays.items():
        fig.add_trace(go.Scatter(x=a[:, 0], y=a[:, 1], mode="lines+markers", name=name, marker=dict(size=4),
                                 line=dict(color=colours[name])))  # fmt: skip
    fig.add_trace(go.Scatter(x=[star[0]], y=[star[1]], mode="markers", name="θ* (optimum of the empirical loss)",
                             marker=dict(symbol="star", size=16, color="black")))  # fmt: skip
    fig.update_layout(
        **layout(height=440),
        xaxis_title="w₁ − w₀ (first feature)",
        yaxis_title="w₁ − w₀ (second feature)",
        title=title or "Forgotten weights: SGD converges to another point",
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def _seeds_text(result: ExperimentResult) -> str:
    seeds = len(result.seeds)
    return f"{result.dataset}, {seeds} seed{'s' if seeds != 1 else ''}, {result.preset} preset"


def _add_log_band(fig: go.Figure, logs: np.ndarray, *, name: str, color: str, col: int) -> None:
    """The line 10^mean(log10) over seeds (rows of ``logs``) and, with two seeds or more, a band 10^(mean ± sd)."""
    mean = np.nanmean(logs, axis=0)
    x = np.arange(1, mean.size + 1)
    if logs.shape[0] > 1:
        sd = np.nanstd(logs, axis=0, ddof=1)
        band = go.Scatter(
            x=np.r_[x, x[::-1]],
            y=10 ** np.r_[mean + sd, (mean - sd)[::-1]],
            fill="toself",
            mode="lines",  # no markers at the band's corners (plotly's default below 20 points)
            line=dict(width=0),
            fillcolor=color,
            opacity=0.15,
            showlegend=False,
            hoverinfo="skip",
            legendgroup=name,
        )
        fig.add_trace(band, row=1, col=col)
    line = go.Scatter(x=x, y=10**mean, name=name, legendgroup=name, showlegend=col == 1, mode="lines",
                      line=dict(color=color, width=2))  # fmt: skip
    fig.add_trace(line, row=1, col=col)


def log_curves_figure(
    runs: Mapping[str, ExperimentResult],
    metric: str = "train_loss",
    *,
    methods: Sequence[str] | None = None,
    title: str | None = None,
) -> go.Figure:
    r"""A positive per-epoch ``metric`` (a loss, the variance ratio) on a log axis, one panel per run of ``runs``
    (label → result, e.g. ``{"Reference run": ref, "Your run": live}``), one colour per method in every panel.

    The line is the geometric mean over seeds (the mean of :math:`\log_{10}`, what the training-loss claim
    averages) and the band ± one standard deviation of :math:`\log_{10}` over seeds, so the band stays positive
    and symmetric on the log axis (an arithmetic mean ± sd of a loss near 0 dips below 0, which a log axis cannot
    draw).
    """
    if not isinstance(runs, Mapping):
        raise TypeError(f"runs must map labels to ExperimentResults, got {type(runs).__name__}")
    check_nonempty(runs, "runs")
    results = {label: _result(r, "runs[...]") for label, r in runs.items()}
    first = next(iter(results.values()))
    methods = list(first.methods if methods is None else methods)
    check_nonempty(methods, "methods")
    for label, result in results.items():
        missing = [m for m in methods if m not in result.methods]
        if missing:
            raise ValueError(f"{label} lacks methods {missing}; pass methods= the runs share")
    colours = method_colors(methods, None)
    fig = make_subplots(rows=1, cols=len(results), horizontal_spacing=0.08,
                        subplot_titles=[f"{label}:<br>{_seeds_text(r)}" for label, r in results.items()])  # fmt: skip
    for col, result in enumerate(results.values(), start=1):
        for m in methods:
            logs = np.log10(np.clip(np.asarray(result.curve(metric, m), dtype=float), 1e-300, None))
            _add_log_band(fig, logs, name=m, color=colours[m], col=col)
        fig.update_xaxes(title_text="epoch", row=1, col=col)
        fig.update_yaxes(type="log", row=1, col=col)
    fig.update_yaxes(title_text=f"{metric.replace('_', ' ')} (geometric mean over seeds)", row=1, col=1)
    fig.update_layout(
        **layout(height=470, margin=dict(l=70, r=20, t=110, b=50)),
        title=title or f"{metric.replace('_', ' ')} per epoch, log scale (band: ± one sd of log10 over seeds)",
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def accuracy_beside_figure(
    reference: ExperimentResult,
    live: ExperimentResult,
    *,
    methods: Sequence[str] | None = None,
    title: str | None = None,
) -> go.Figure:
    """:func:`dro_course.figures.reference_beside_live_figure` of the test accuracy (each panel labelled on two
    lines, the live one an illustration when it is one)."""
    return reference_beside_live_figure(reference, _result(live, "live"), "test_accuracy", methods=methods, title=title)
