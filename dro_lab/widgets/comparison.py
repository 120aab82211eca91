"""Lesson 07, the capstone: choose methods and knobs, press Run, see every method redrawn.

Training is not live: the Run button re-runs the chosen methods on a small budget (one seed) and redraws
:func:`dro_lab.viz.comparison_figure` in place. Every α says which one it is (CVaR level, importance-sampling
mixing, ALSO's optimism, label smoothing); β is KL-DRO's and HWS's (ALSO's τ = 1/β) and r is DONE's temperature.

The panel builds its own run function from the comparison's options (the arguments of
:func:`dro_lab.experiments.run_comparison`: data, budget, device and every knob), or takes one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping

import ipywidgets as W
import plotly.graph_objects as go

from .. import viz
from .._validation import check_callable, check_int
from ..experiments.comparison import METHODS, pareto_front, run_comparison, summarise
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

_RUN_TIP = "re-train the selected methods on a small budget (one seed; seconds per method)"
#: The slider knobs and their defaults (those of run_comparison).
_SLIDER_KNOBS = {"beta": 10.0, "done_r": 1.0, "cvar_alpha": 0.2, "is_alpha": 0.5, "also_alpha": 1.0, "ls_alpha": 0.1}
#: run_comparison's arguments the panel sets itself (the selection, the seed, the epochs, quiet runs).
_PANEL_SET = {"methods", "seeds", "epochs", "progress", "callback"}
#: The panel's figure size: the controls take the left of the output.
FIGURE_SIZE = dict(width=760, height=540)


def comparison_panel(
    run_fn: Callable[..., object] | None = None,
    methods=None,
    *,
    options: Mapping | None = None,
    seed: int = 0,
    epochs: int = 10,
    summary=None,
    selected=None,
    beta: float | None = None,
    done_r: float | None = None,
    cvar_alpha: float | None = None,
    is_alpha: float | None = None,
    also_alpha: float | None = None,
    ls_alpha: float | None = None,
    reference: str = "ERM",
) -> W.Box:
    """Choose methods and β / r / α's, press Run, see average vs worst-group accuracy and cost redrawn.

    Two ways to say what Run does:

    * ``options`` (``run_fn`` left None): the keyword arguments of :func:`dro_lab.experiments.run_comparison`
      — ``data``, ``batch_size``, ``lr``, ``hidden``, ``threads``, ``device`` and the knobs (``beta``, ``done_r``,
      …, ``gils_steps``) — with which the selected methods are trained with one seed (``seed``) for ``epochs``
      epochs, the six sliders' values replacing the knobs of the same name;
    * ``run_fn(methods=[...], beta=, done_r=, cvar_alpha=, is_alpha=, also_alpha=, ls_alpha=)``: trains and
      returns the per-method summary (:func:`dro_lab.experiments.summarise`) or its rows (summarised here).

    ``methods`` lists the selectable names (default: every method of :data:`METHODS`), ``selected`` those chosen
    at first (default: all). A slider starts at its argument, else at the knob of the same name in ``options``,
    else at run_comparison's default. The figure is :func:`dro_lab.viz.comparison_figure` with the Pareto front
    of :func:`dro_lab.experiments.pareto_front`; ``summary`` (e.g. the notebook's headless result) is drawn
    before the first click. The read-out names the best worst-group method and the front. Printed output and
    errors of a run show under the button.
    """
    run_fn = _run_function(run_fn, options, seed, epochs, reference)
    selector = _method_selector(list(METHODS) if methods is None else methods, selected)
    start = {**_SLIDER_KNOBS, **{k: v for k, v in dict(options or {}).items() if k in _SLIDER_KNOBS}}
    given = dict(beta=beta, done_r=done_r, cvar_alpha=cvar_alpha, is_alpha=is_alpha, also_alpha=also_alpha)
    start.update({k: v for k, v in {**given, "ls_alpha": ls_alpha}.items() if v is not None})
    controls = _knob_sliders(**start)
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
        except Exception as exc:  # shown under the button; the panel stays usable
            readout.value = f"<b>the run failed</b>: {type(exc).__name__}: {exc}"
        finally:
            button.disabled = False

    button.on_click(on_click)
    box = figure_box(
        "Every method on one benchmark", {"methods": selector, **controls}, readout, widget, extra=(button, log)
    )
    box.methods, box.button, box.sliders, box.run_fn = selector, button, controls, run_fn
    return box


def _run_function(run_fn, options, seed, epochs, reference) -> Callable[..., object]:
    """``run_fn`` as given, or one built from ``options``: run_comparison with one seed, summarised."""
    if run_fn is not None:
        if options is not None:
            raise ValueError("give run_fn or options, not both (options build the panel's own run function)")
        return check_callable(run_fn, "run_fn")
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict of run_comparison's arguments, got {type(options).__name__}")
    options = dict(options or {})
    accepted = set(inspect.signature(run_comparison).parameters) - _PANEL_SET
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ValueError(f"options: {unknown} are not run_comparison's arguments; accepted: {sorted(accepted)}")
    seed = check_int(seed, "seed", low=0)
    epochs = check_int(epochs, "epochs", low=1)

    def run(*, methods, **knobs):
        """The panel's Run button: the selected methods, one seed, ``epochs`` epochs, the sliders' knobs."""
        rows = run_comparison(methods, seeds=[seed], epochs=epochs, progress=False, **{**options, **knobs})
        return summarise(rows, reference=reference)

    return run


def _empty_figure() -> go.Figure:
    """What the panel shows before the first Run when no summary is given."""
    return go.Figure(
        layout=dict(template="plotly_white", **FIGURE_SIZE, title="Choose methods and knobs, then press Run")
    )


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
    """``run_fn(**kwargs)`` with its printed output shown in ``log``; rows are summarised per method."""
    with log:
        log.clear_output(wait=True)
        result = list(run_fn(**kwargs))
    if result and "n_seeds" not in result[0]:
        result = summarise(result, reference=reference)
    return result


def _draw(entries: list[dict], reference: str) -> tuple[go.Figure, str]:
    """The comparison figure with its Pareto front, and the read-out naming the best worst-group method."""
    front = pareto_front(entries)
    fig = viz.comparison_figure(entries, front=front, reference=reference, **FIGURE_SIZE)
    best = max(entries, key=lambda e: e["worst_group_acc"])
    text = (
        f"best worst-group accuracy: <b>{best['method']}</b> ({best['worst_group_acc']:.3f}); "
        f"Pareto front: {', '.join(front)}"
    )
    return fig, text
