"""Lesson 07, the capstone: choose methods and knobs, press Run, see every method redrawn.

Training is not live: the Run button re-runs the chosen methods on a small budget (one seed) and redraws
:func:`dro_course.figures.comparison_figure` in place. Every α says which one it is (CVaR level, importance-sampling
mixing, ALSO's optimism, label smoothing); β is KL-DRO's and HWS's (ALSO's τ = 1/β) and r is DONE's temperature.

The panel builds its own run function from the comparison's options (the arguments of the lesson's
:func:`~dro_course.lessons.comparison.study.run_comparison`: data, budget, device, every knob) or takes one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping

import ipywidgets as W
import plotly.graph_objects as go

from dro_course import figures
from dro_course.lessons.comparison.study import METHODS, pareto_front, run_comparison, summarise
from dro_course.panels.panels import _ends, figure_box, redraw
from dro_course.panels.sliders import (
    STYLE,
    beta_slider,
    cvar_alpha_slider,
    done_r_slider,
    is_alpha_slider,
    ls_alpha_slider,
    optimism_slider,
)
from dro_course.panels.twin import knob, knobs_from_controls, static_twin_of, twin_note
from dro_lab._validation import check_callable, check_int

__all__ = ["comparison_panel"]

_RUN_TIP = "re-train the selected methods on a small budget (one seed; seconds per method)"
#: The slider knobs and their defaults (those of run_comparison).
_SLIDER_KNOBS = {"beta": 10.0, "done_r": 1.0, "cvar_alpha": 0.2, "is_alpha": 0.5, "also_alpha": 1.0, "ls_alpha": 0.1}
#: run_comparison's arguments the panel sets itself (the selection, the seed, the epochs, quiet runs).
_PANEL_SET = {"methods", "seeds", "epochs", "progress", "callback"}
#: The panel's figure size: the controls take the left of the output.
FIGURE_SIZE = dict(width=760, height=540)
#: Epochs of the static twin's short runs (the panel's Run button trains ``epochs``).
TWIN_EPOCHS = 2


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

    * ``options`` (``run_fn`` left None): the keyword arguments of :func:`run_comparison`
      — ``data``, ``batch_size``, ``lr``, ``hidden``, ``threads``, ``device`` and the knobs (``beta``, ``done_r``,
      …, ``gils_steps``) — with which the selected methods are trained with one seed (``seed``) for ``epochs``
      epochs, the six sliders' values replacing the knobs of the same name;
    * ``run_fn(methods=[...], beta=, done_r=, cvar_alpha=, is_alpha=, also_alpha=, ls_alpha=)``: trains and
      returns the per-method summary (:func:`summarise`) or its rows (summarised here).

    ``methods`` lists the selectable names (default: every method of :data:`METHODS`), ``selected`` those chosen
    at first (default: all). A slider starts at its argument, else at the knob of the same name in ``options``,
    else at run_comparison's default. The figure is :func:`dro_course.figures.comparison_figure` with the Pareto front
    of :func:`pareto_front`; ``summary`` (e.g. the notebook's headless result) is drawn
    before the first click. The read-out names the best worst-group method and the front. Printed output and
    errors of a run show under the button.

    The static twin (on first display) holds β at its start and its range's two ends, and each other slider at
    its start and the farther end of its range, one slider at a time. With ``options`` it trains short runs
    (:data:`TWIN_EPOCHS` epochs, the seed ``seed``): every selected method once at the starting knobs, then, per
    other knob value, only the methods that knob moves (found by comparing their options; ERM runs beside them
    as the cost reference): 13 + 19 method runs for lesson 07's smoke setting, about two seconds on one CPU
    thread. With ``run_fn`` it calls ``run_fn`` with every selected method at each of those values (8 calls).
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
    title = "Every method on one benchmark"
    box = figure_box(title, {"methods": selector, **controls}, readout, widget, extra=(button, log))
    box.methods, box.button, box.sliders, box.run_fn = selector, button, controls, run_fn
    own = _own_run(run_fn)
    twin_run = _run_function(None, options, seed, min(epochs, TWIN_EPOCHS), reference) if own else run_fn
    factory, note = _twin(twin_run, controls, list(selector.value), reference, by_method=own)
    return box.set_twin(factory, title=title, note=note)


def _own_run(run_fn) -> bool:
    """Whether ``run_fn`` is the panel's own (built from ``options``): then the twin knows which methods a knob
    moves."""
    return getattr(run_fn, "__qualname__", "").startswith("_run_function.")


def _twin(run, controls, names, reference, *, by_method: bool):
    """The static twin's factory and note: the summary at the starting knobs, and per other knob value the
    methods it moves re-run (every method when ``run`` is the reader's own function)."""
    knobs = knobs_from_controls(controls, {k: _ends(w) if k == "beta" else _far_end(w) for k, w in controls.items()})
    start = {k: w.value for k, w in controls.items()}
    cache: dict = {}
    log = W.Output()  # the runs' printed output goes nowhere visible

    def summary(methods: list[str], values: Mapping) -> dict:
        key = (tuple(methods), tuple(sorted(values.items())))
        if key not in cache:
            cache[key] = {e["method"]: e for e in _run_summary(run, log, reference, methods=methods, **values)}
        return cache[key]

    def build(**values):
        values = {**start, **values}
        entries = dict(summary(names, start))
        moved = [k for k in values if values[k] != start[k]]
        if moved:
            users = _moved_by(moved[0], names) if by_method else names
            again = list(dict.fromkeys(([reference] if reference in names else []) + users))
            entries.update({m: e for m, e in summary(again, values).items() if m in users})
        return _draw([entries[m] for m in names if m in entries], reference)[0]

    how = f"Short runs ({TWIN_EPOCHS} epochs, one seed)" if by_method else "Precomputed runs"
    return static_twin_of(build, knobs), twin_note(knobs, how=how, live="runs any value (Run button)")


def _far_end(widget) -> list:
    """The control's value and the end of its grid farther from it (the capstone's α's and r: one more run
    each keeps the twin within a couple of seconds)."""
    spec = knob(widget)
    values, start = spec["values"], spec["values"].index(spec["default"])
    return [spec["default"], values[0] if start >= len(values) - 1 - start else values[-1]]


def _moved_by(knob: str, names: list[str]) -> list[str]:
    """The methods among ``names`` whose options change with ``knob`` (compared at two values)."""
    base = {k: p.default for k, p in inspect.signature(run_comparison).parameters.items()}
    return [n for n in names if n in METHODS and repr(METHODS[n].options({**base, knob: 0.123}))
            != repr(METHODS[n].options({**base, knob: 0.456}))]  # fmt: skip


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
    fig = figures.comparison_figure(entries, front=front, reference=reference, **FIGURE_SIZE)
    best = max(entries, key=lambda e: e["worst_group_acc"])
    text = (
        f"best worst-group accuracy: <b>{best['method']}</b> ({best['worst_group_acc']:.3f}); "
        f"Pareto front: {', '.join(front)}"
    )
    return fig, text
