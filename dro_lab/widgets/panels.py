"""The generic panels: controls wired to a figure function (live), heavy work behind a Run button, and the
FigureWidget panels of lessons 04–07 whose traces are redrawn in place (no flicker).

A live panel's figure, sliders and read-out are attributes of the returned box (``box.figure``, ``box.sliders``,
``box.readout``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import ipywidgets as W
import plotly.graph_objects as go
from IPython.display import display

from .._validation import check_callable


def _check_controls(controls) -> None:
    if not isinstance(controls, Mapping):
        raise TypeError(f"controls must be a mapping name -> widget, got {type(controls).__name__}")


def panel(figure_fn: Callable[..., object], controls: Mapping[str, W.Widget], *, title: str | None = None) -> W.Box:
    """Controls on the left, the figure returned by ``figure_fn(**values)`` on the right, live.

    ``figure_fn`` is a plain function returning a plotly figure; it is re-run when a control moves.
    """
    check_callable(figure_fn, "figure_fn")
    _check_controls(controls)

    def show(**kwargs):
        display(figure_fn(**kwargs))

    out = W.interactive_output(show, dict(controls))
    left = [W.HTML(f"<b>{title}</b>")] if title else []
    box = W.HBox([W.VBox(left + list(controls.values())), out])
    return box


def run_panel(
    run_fn: Callable[..., object], controls: Mapping[str, W.Widget], *, button: str = "Run", title: str | None = None
) -> W.Box:
    """Heavy work behind a button: ``run_fn(**values)`` runs on click; its output (figures, logs) shows below."""
    check_callable(run_fn, "run_fn")
    _check_controls(controls)
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
    return W.VBox(head + [W.HBox(list(controls.values()) + [btn]), out])


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


def figure_box(title: str, controls: Mapping[str, W.Widget], readout: W.HTML, widget, extra=()) -> W.Box:
    box = W.HBox([W.VBox([W.HTML(f"<b>{title}</b>")] + list(controls.values()) + [readout] + list(extra)), widget])
    box.figure, box.sliders, box.readout = widget, dict(controls), readout
    return box


def live_panel(build: Callable[..., tuple[object, str]], controls: Mapping[str, W.Widget], *, title: str) -> W.Box:
    """``build(**values) -> (figure, read-out html)``, redrawn in a FigureWidget whenever a control moves."""
    fig, text = build(**{k: w.value for k, w in controls.items()})
    widget = go.FigureWidget(fig)
    readout = W.HTML(text)

    def update(_=None):
        fig, text = build(**{k: w.value for k, w in controls.items()})
        redraw(widget, fig)
        readout.value = text

    for w in controls.values():
        w.observe(update, names="value")
    return figure_box(title, controls, readout, widget)
