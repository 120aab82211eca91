"""Lesson 07, the capstone: choose methods and knobs, press Run, see every method redrawn.

Training is not live: the Run button re-runs the chosen methods on a small budget and redraws
:func:`dro_lab.viz.comparison_figure` in place. Every α says which one it is (CVaR level, importance-sampling
mixing, ALSO's optimism, label smoothing); β is KL-DRO's and HWS's (ALSO's τ = 1/β) and r is DONE's temperature.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as W
import plotly.graph_objects as go

from .. import viz
from .._validation import check_callable
from ..experiments.comparison import pareto_front, summarise
from .panels import figure_box, redraw
from .sliders import (
    STYLE,
    beta_slider,
    cvar_alpha_slider,
    done_r_slider,
    is_alpha_slider,
    ls_alpha_slider,
    optimism_slider,
)

_RUN_TIP = "re-train the selected methods on a small budget (seconds per method)"


def comparison_panel(
    run_fn: Callable[..., object],
    methods,
    *,
    summary=None,
    selected=None,
    beta: float = 10.0,
    done_r: float = 1.0,
    cvar_alpha: float = 0.2,
    is_alpha: float = 0.5,
    also_alpha: float = 1.0,
    ls_alpha: float = 0.1,
    reference: str = "ERM",
) -> W.Box:
    """Choose methods and β / r / α's, press Run, see average vs worst-group accuracy and cost redrawn.

    ``run_fn(methods=[...], beta=, done_r=, cvar_alpha=, is_alpha=, also_alpha=, ls_alpha=)`` trains (e.g.
    :func:`dro_lab.comparison.run_comparison` on a small budget) and returns the per-method summary
    (:func:`dro_lab.comparison.summarise`), or its rows (then they are summarised here). The figure is
    :func:`dro_lab.viz.comparison_figure` with the Pareto front of :func:`dro_lab.comparison.pareto_front`;
    ``summary`` (e.g. the notebook's headless result) is drawn before the first click. The read-out names
    the best worst-group method and the front. Printed output and errors of ``run_fn`` show under the button.
    """
    check_callable(run_fn, "run_fn")
    selector = _method_selector(methods, selected)
    controls = _knob_sliders(
        beta=beta, done_r=done_r, cvar_alpha=cvar_alpha, is_alpha=is_alpha, also_alpha=also_alpha, ls_alpha=ls_alpha
    )
    fig0, text0 = _draw(list(summary), reference) if summary else (_empty_figure(), "not run yet")
    widget, readout, log = go.FigureWidget(fig0), W.HTML(text0), W.Output()
    button = W.Button(description="Run", button_style="primary", icon="play", tooltip=_RUN_TIP)

    def on_click(_=None):
        values = {k: w.value for k, w in controls.items()}
        names = list(selector.value)
        if not names:
            readout.value = "<b>select at least one method</b>"
            return
        button.disabled = True
        readout.value = f"running {len(names)} method(s) …"
        try:
            fig, text = _draw(_run_summary(run_fn, log, reference, methods=names, **values), reference)
            redraw(widget, fig)
            readout.value = text
        finally:
            button.disabled = False

    button.on_click(on_click)
    box = figure_box(
        "Every method on one benchmark", {"methods": selector, **controls}, readout, widget, extra=(button, log)
    )
    box.methods, box.button, box.sliders = selector, button, controls
    return box


def _empty_figure() -> go.Figure:
    """What the panel shows before the first Run when no summary is given."""
    return go.Figure(layout=dict(template="plotly_white", height=560, title="Choose methods and knobs, then press Run"))


def _method_selector(methods, selected) -> W.SelectMultiple:
    """The method list, ``selected`` (default: all) chosen."""
    options = list(methods)
    if not options:
        raise ValueError("methods must list at least one method name")
    chosen = list(selected) if selected is not None else options
    bad = [m for m in chosen if m not in options]
    if bad:
        raise ValueError(f"selected names methods not in methods: {bad}")
    return W.SelectMultiple(
        options=options,
        value=tuple(chosen),
        rows=min(len(options), 13),
        description="methods",
        style=STYLE,
        layout=W.Layout(width="360px"),
    )


def _knob_sliders(*, beta, done_r, cvar_alpha, is_alpha, also_alpha, ls_alpha) -> dict[str, W.Widget]:
    """One slider per knob of the capstone, each saying which β, r or α it is; they update on release only."""
    is_slider = is_alpha_slider(is_alpha, description="α (IS uniform mixing)")
    is_slider.max = 0.99
    controls = {
        "beta": beta_slider(beta, min_exp=-1, max_exp=2, description="β (KL-DRO, HWS; ALSO τ = 1/β)"),
        "done_r": done_r_slider(done_r, description="r (DONE temperature)"),
        "cvar_alpha": cvar_alpha_slider(cvar_alpha, description="α (CVaR level)"),
        "is_alpha": is_slider,
        "also_alpha": optimism_slider(also_alpha, description="α (ALSO optimism)"),
        "ls_alpha": ls_alpha_slider(ls_alpha, description="α (label smoothing, LS / GI-LS)"),
    }
    for w in controls.values():
        w.continuous_update = False
    return controls


def _run_summary(run_fn: Callable[..., object], log: W.Output, reference: str, **kwargs) -> list[dict]:
    """``run_fn(**kwargs)`` with its printed output and errors shown in ``log``; rows are summarised per method."""
    with log:
        log.clear_output(wait=True)
        result = list(run_fn(**kwargs))
    if result and "n_seeds" not in result[0]:
        result = summarise(result, reference=reference)
    return result


def _draw(entries: list[dict], reference: str) -> tuple[go.Figure, str]:
    """The comparison figure with its Pareto front, and the read-out naming the best worst-group method."""
    front = pareto_front(entries)
    fig = viz.comparison_figure(entries, front=front, reference=reference)
    best = max(entries, key=lambda e: e["worst_group_acc"])
    text = (
        f"best worst-group accuracy: <b>{best['method']}</b> ({best['worst_group_acc']:.3f}); "
        f"Pareto front: {', '.join(front)}"
    )
    return fig, text
