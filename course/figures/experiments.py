"""Figures of a paper's experiment (:class:`dro_lab.experiments.ExperimentResult`): learning curves over
seeds and the final metric seed by seed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dro_course.beside import is_illustration
from dro_course.figures._style import LAYOUT, add_band_traces, add_seed_lines, method_colors
from dro_lab._validation import check_nonempty
from dro_lab.experiments.result import ExperimentResult

__all__ = ["experiment_curves_figure", "experiment_seeds_figure", "reference_beside_live_figure"]


def _prepare(result: ExperimentResult, methods, colors, percent: bool) -> tuple[list[str], float, dict, str]:
    """The methods to draw, the scale (100 for percentages), their colours and the y-axis unit."""
    methods = _methods(result, methods)
    return methods, 100.0 if percent else 1.0, method_colors(methods, colors), " (%)" if percent else ""


def _methods(result: ExperimentResult, methods: Sequence[str] | None) -> list[str]:
    if not isinstance(result, ExperimentResult):
        raise TypeError(f"result must be an ExperimentResult, got {type(result).__name__}")
    methods = list(result.methods if methods is None else methods)
    check_nonempty(methods, "methods")
    unknown = [m for m in methods if m not in result.methods]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; the result has {result.methods}")
    return methods


def experiment_curves_figure(
    result: ExperimentResult,
    metric: str,
    *,
    methods: Sequence[str] | None = None,
    title: str | None = None,
    colors: Mapping[str, str] | None = None,
    percent: bool = True,
) -> go.Figure:
    """A per-epoch ``metric`` of each method: the mean over seeds and a ± one-sd band (kept inside [0, 100] %).

    ``percent=True`` draws fractions as percentages.
    """
    methods, scale, palette, unit = _prepare(result, methods, colors, percent)
    fig = go.Figure()
    for m in methods:
        add_band_traces(
            fig,
            None,
            result.curve(metric, m) * scale,
            name=m,
            color=palette[m],
            bounds=(0.0, 100.0) if percent else None,
        )
    if percent:
        fig.update_yaxes(range=_percent_range([result.curve(metric, m) * scale for m in methods]))
    seeds = len(result.seeds)
    fig.update_layout(
        **LAYOUT,
        title=title or f"{metric.replace('_', ' ')} ({result.dataset}, {seeds} seed{'s' if seeds > 1 else ''})",
        xaxis_title="epoch",
        yaxis_title=metric.replace("_", " ") + unit,
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def experiment_seeds_figure(
    result: ExperimentResult,
    metric: str,
    *,
    methods: Sequence[str] | None = None,
    title: str | None = None,
    colors: Mapping[str, str] | None = None,
    percent: bool = True,
) -> go.Figure:
    """A final ``metric`` seed by seed: one dot per seed, lines joining each seed's methods (the pairing the
    verdicts use), and each method's mean as a bar."""
    methods, scale, palette, unit = _prepare(result, methods, colors, percent)
    finals = result.final(metric)
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=methods,
            y=[float(np.nanmean(finals[m])) * scale for m in methods],
            name="mean",
            marker_color=[palette[m] for m in methods],
            opacity=0.35,
            showlegend=False,
        )
    )
    add_seed_lines(fig, result.seeds, finals, methods, scale)
    fig.update_layout(
        **LAYOUT,
        title=title or f"{metric.replace('_', ' ')}: each seed, paired across methods",
        yaxis_title=metric.replace("_", " ") + unit,
    )
    return fig


def _percent_range(curves: Sequence[np.ndarray]) -> list[float]:
    """A y-axis range for percentages: the mean ± sd bands of ``curves`` (seeds × epochs, in %) with a margin,
    never outside [0, 100] but for a hair of room, and at least 10 points tall (an all-zero smoke run would
    otherwise get plotly's default of −1 … 1, a negative accuracy)."""
    lows, highs = [], []
    for c in curves:
        c = np.atleast_2d(np.asarray(c, dtype=float))
        mean, sd = np.nanmean(c, axis=0), np.nan_to_num(np.nanstd(c, axis=0))
        lows.append(np.nanmin(mean - sd)), highs.append(np.nanmax(mean + sd))
    lo, hi = max(0.0, min(lows) - 3.0), min(100.0, max(highs) + 3.0)
    if hi - lo < 10.0:
        lo, hi = (max(0.0, hi - 10.0), hi) if hi - 10.0 > 0 else (0.0, max(10.0, lo + 10.0))
    return [lo - (1.0 if lo <= 0.0 else 0.0), hi + (1.0 if hi >= 100.0 else 0.0)]


def _run_label(result: ExperimentResult, who: str) -> str:
    # two lines: side by side at the website's width, one-line titles run into each other
    seeds = len(result.seeds)
    return f"{who}<br>{result.dataset}, {seeds} seed{'s' if seeds != 1 else ''}, {result.preset} preset"


def reference_beside_live_figure(
    reference: ExperimentResult,
    live: ExperimentResult,
    metric: str,
    *,
    methods: Sequence[str] | None = None,
    percent: bool = True,
    title: str | None = None,
) -> go.Figure:
    """The shipped reference run (left) and the reader's own run (right) of one experiment, side by side: the
    per-epoch ``metric`` of each method (mean over seeds, ± one-sd band), one colour per method in both panels,
    each panel titled with its data set, seeds and preset. The live run's y-axis is its own (a smoke run on
    other data need not share the reference's scale)."""
    if not isinstance(live, ExperimentResult):
        raise TypeError(f"live must be an ExperimentResult, got {type(live).__name__}")
    methods = _methods(reference, methods)
    missing = [m for m in methods if m not in live.methods]
    if missing:
        raise ValueError(f"the live run lacks methods {missing}; pass methods= to draw the shared ones")
    scale, palette, unit = 100.0 if percent else 1.0, method_colors(methods, None), " (%)" if percent else ""
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            _run_label(reference, "Reference run"),
            _run_label(live, "Your run (an illustration)" if is_illustration(live) else "Your run"),
        ),
        horizontal_spacing=0.08,
    )
    for col, result in ((1, reference), (2, live)):
        for m in methods:
            add_band_traces(
                fig,
                None,
                result.curve(metric, m) * scale,
                name=m,
                color=palette[m],
                row=1,
                col=col,
                showlegend=col == 1,
                bounds=(0.0, 100.0) if percent else None,
            )
        fig.update_xaxes(title_text="epoch", row=1, col=col)
        if percent:
            fig.update_yaxes(range=_percent_range([result.curve(metric, m) * scale for m in methods]), row=1, col=col)
    fig.update_yaxes(title_text=metric.replace("_", " ") + unit, row=1, col=1)
    fig.update_layout(
        **{**LAYOUT, "height": 450, "margin": dict(l=60, r=20, t=110, b=50)},
        title=title or f"{metric.replace('_', ' ')}: the reference run beside yours",
        legend=dict(orientation="h", y=-0.25),
    )
    return fig
