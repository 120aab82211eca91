"""The generic panels: controls wired to a figure function (live), heavy work behind a Run button, and the
FigureWidget panels of lessons 04–07 whose traces are redrawn in place (no flicker).

A live panel's figure, sliders and read-out are attributes of the returned box (``box.figure``, ``box.sliders``,
``box.readout``). Every box is a :class:`~dro_course.panels.twin.TwinHBox` / ``TwinVBox``: ``box.static_twin`` is
the figure with plotly sliders over precomputed knob values, which the course site draws where the live panel was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import ipywidgets as W
import plotly.graph_objects as go
from IPython.display import display

from dro_course.panels.twin import TwinHBox, TwinVBox, knob, knobs_from_controls, static_twin_of, twin_note
from dro_lab._validation import check_callable


def _check_controls(controls) -> None:
    if not isinstance(controls, Mapping):
        raise TypeError(f"controls must be a mapping name -> widget, got {type(controls).__name__}")


def _check_twin(twin) -> None:
    if twin is not None and not isinstance(twin, (bool, Mapping)):
        raise TypeError(f"twin must be True, False or a dict control name -> values, got {type(twin).__name__}")


def panel(
    figure_fn: Callable[..., object],
    controls: Mapping[str, W.Widget],
    *,
    title: str | None = None,
    twin: Mapping[str, list] | bool | None = None,
) -> W.Box:
    """Controls on the left, the figure returned by ``figure_fn(**values)`` on the right, live.

    ``figure_fn`` is a plain function returning a plotly figure; it is re-run when a control moves. The static
    twin (``box.static_twin``, built on first display) calls it once per value of a short grid over each
    control's range, one control at a time (``twin`` maps a control's name to its own values; ``False``: no
    twin): about 15 calls for three sliders.
    """
    check_callable(figure_fn, "figure_fn")
    _check_controls(controls)
    _check_twin(twin)

    def show(**kwargs):
        display(figure_fn(**kwargs))

    out = W.interactive_output(show, dict(controls))
    left = [W.HTML(f"<b>{title}</b>")] if title else []
    box = TwinHBox([W.VBox(left + list(controls.values())), out])
    return _with_twin(box, figure_fn, controls, twin, title=title or "panel")


def _with_twin(box, figure_fn, controls, twin, *, title: str, how: str = "Precomputed", live: str | None = None):
    """``box`` with the twin of ``figure_fn`` over its controls' knobs (the other controls fixed at their value)."""
    knobs = {} if twin is False else knobs_from_controls(controls, twin if isinstance(twin, Mapping) else None)
    if not knobs:
        return box.set_twin(None, title=title, note="")
    fixed = {name: w.value for name, w in controls.items() if name not in knobs}
    factory = static_twin_of(lambda **values: figure_fn(**fixed, **values), knobs)
    return box.set_twin(factory, title=title, note=twin_note(knobs, how=how, live=live or "computes any value"))


def run_panel(
    run_fn: Callable[..., object],
    controls: Mapping[str, W.Widget],
    *,
    button: str = "Run",
    title: str | None = None,
    twin: Mapping[str, list] | bool | None = None,
) -> W.Box:
    """Heavy work behind a button: ``run_fn(**values)`` runs on click; its output (figures, logs) shows below.

    The static twin calls ``run_fn`` at each control's value and at the two ends of its range, one control at a
    time (1 + 2 calls per control, on first display: pass ``twin=False`` when a run is long), or at ``twin``'s
    values (a dict control name -> values); ``run_fn`` must return a plotly figure for the twin to exist.
    """
    check_callable(run_fn, "run_fn")
    _check_controls(controls)
    _check_twin(twin)
    btn = W.Button(description=button, button_style="primary", icon="play")
    out = W.Output()

    def on_click(_):
        with out:
            out.clear_output(wait=True)
            result = run_fn(**{k: w.value for k, w in controls.items()})
            if result is not None:
                display(result)

    btn.on_click(on_click)
    head = [W.HTML(f"<b>{title}</b>")] if title else []
    box = TwinVBox(head + [W.HBox(list(controls.values()) + [btn]), out])
    if twin is None or twin is True:
        twin = {name: ends for name, ends in ((n, _ends(w)) for n, w in controls.items()) if ends is not None}
    return _with_twin(box, run_fn, controls, twin, title=title or "panel", how="Precomputed runs",
                      live=f"runs any value ({button} button)")  # fmt: skip


def _ends(widget) -> list | None:
    """The control's value and the two ends of its grid (a Run panel's twin: three runs per knob)."""
    spec = knob(widget)
    if spec is None:
        return None
    values = spec["values"]
    return list(dict.fromkeys([values[0], spec["default"], values[-1]]))


def redraw(widget, fig) -> None:
    """Copy ``fig`` into the FigureWidget ``widget``: traces updated in place when they have the same
    shape (number, types and set properties: a live redraw, nothing stale left behind), replaced
    otherwise; the layout follows."""

    def shape(traces):
        return [(t.type, sorted(k for k in t.to_plotly_json() if k != "uid")) for t in traces]

    new = list(fig.data)
    with widget.batch_update():
        if shape(widget.data) == shape(new):
            for old, trace in zip(widget.data, new):
                props = trace.to_plotly_json()
                props.pop("type", None)
                props.pop("uid", None)
                old.update(props, overwrite=True)
        else:
            widget.data = []
            widget.add_traces(new)
        widget.update_layout(fig.layout.to_plotly_json(), overwrite=True)


def figure_box(title: str, controls: Mapping[str, W.Widget], readout: W.HTML, widget, extra=()) -> TwinHBox:
    """The FigureWidget panels' box (controls, read-out and ``extra`` on the left, the figure on the right); its
    twin is set by the caller."""
    box = TwinHBox([W.VBox([W.HTML(f"<b>{title}</b>")] + list(controls.values()) + [readout] + list(extra)), widget])
    box.figure, box.sliders, box.readout = widget, dict(controls), readout
    return box.set_twin(None, title=title, note="")


def live_panel(
    build: Callable[..., tuple[object, str]],
    controls: Mapping[str, W.Widget],
    *,
    title: str,
    twin: Mapping[str, list] | bool | None = None,
) -> W.Box:
    """``build(**values) -> (figure, read-out html)``, redrawn in a FigureWidget whenever a control moves.

    The static twin draws ``build``'s figure over a short grid of each control's values (or ``twin``'s), one
    control at a time, on first display.
    """
    _check_twin(twin)
    fig, text = build(**{k: w.value for k, w in controls.items()})
    widget = go.FigureWidget(fig)
    readout = W.HTML(text)

    def update(_=None):
        fig, text = build(**{k: w.value for k, w in controls.items()})
        redraw(widget, fig)
        readout.value = text

    for w in controls.values():
        w.observe(update, names="value")
    box = figure_box(title, controls, readout, widget)
    return _with_twin(box, lambda **values: build(**values)[0], controls, twin, title=title)
