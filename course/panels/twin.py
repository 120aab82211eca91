"""Every panel's static twin: the same figure with plotly sliders over a few precomputed knob values, for readers
with no kernel (the course site) and for front-ends that do not draw plotly FigureWidgets (Colab, VS Code).

A panel returns a :class:`TwinHBox` / :class:`TwinVBox`: the live ipywidgets box, plus

- ``box.static_twin``: a ``go.Figure`` with frames and one slider per knob (:func:`dro_course.figures.slider_figure`),
  computed on first access and kept;
- when the box is displayed, its output carries the twin as OUTPUT METADATA,
  ``{"dro_lab": {"static_twin": <figure JSON>, "title": ..., "note": ...}}``: the course site's builder reads the
  executed notebook and draws the twin where the live panel was;
- a ``text/plain`` line that says what the panel is ("Interactive panel: … — run the cell in JupyterLab to use
  it"), not the widget's repr;
- in Colab and VS Code (:func:`front_end`), the twin itself with a one-line note saying why, in place of the
  live panel: Colab gets plotly's own HTML for Colab (plotly.js from its CDN), VS Code an HTML output that loads
  the same plotly.js and draws the figure with its frames (VS Code's plotly renderer drops frames, and loads
  the scripts of an HTML output out of order).
"""

from __future__ import annotations

import html
import importlib.util
import json
import math
import os
import sys
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence

import ipywidgets as W
import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import torch
from plotly.offline import get_plotlyjs_version

from dro_course.figures import slider_figure

__all__ = ["front_end", "TwinHBox", "TwinVBox", "knob", "knobs_from_controls", "twin_note", "FRONT_END_ENV"]

#: Set to "colab", "vscode" or "jupyter" to override the detection of :func:`front_end`.
FRONT_END_ENV = "DRO_LAB_FRONT_END"
FRONT_ENDS = ("jupyter", "colab", "vscode")
#: Largest twin the panels ask for, in bytes of JSON (a site page holds a few of them and must stay under 3 MB).
TWIN_MAX_BYTES = 400_000
#: Why the static twin replaces the live panel, per front-end.
WHY = {
    "colab": "Colab does not draw plotly FigureWidgets",
    "vscode": "VS Code does not draw plotly FigureWidgets",
}


def front_end(environ: Mapping[str, str] | None = None) -> str:
    """Where this kernel's outputs are drawn: ``"colab"``, ``"vscode"`` or ``"jupyter"`` (JupyterLab, Notebook,
    Binder, papermill, a plain script).

    ``DRO_LAB_FRONT_END`` (one of the three) decides when set. VS Code: its Jupyter extension sets
    ``PYDEVD_IPYTHON_COMPATIBLE_DEBUGGING`` in every Python kernel it starts (local or remote); an older one is
    recognised by ``VSCODE_PID`` in a kernel that no Jupyter server launched (no ``JPY_PARENT_PID``: that
    variable alone leaks into JupyterLab started from VS Code's terminal). Colab: ``google.colab`` is imported
    or importable, or ``COLAB_RELEASE_TAG`` is set. ``environ`` defaults to ``os.environ``.
    """
    if environ is None:
        environ = os.environ
    if not isinstance(environ, Mapping):
        raise TypeError(f"environ must be a mapping of environment variables, got {type(environ).__name__}")
    forced = environ.get(FRONT_END_ENV)
    if forced:
        if forced not in FRONT_ENDS:
            raise ValueError(f"{FRONT_END_ENV} must be one of {list(FRONT_ENDS)}, got {forced!r}")
        return forced
    if "PYDEVD_IPYTHON_COMPATIBLE_DEBUGGING" in environ or (
        "VSCODE_PID" in environ and "JPY_PARENT_PID" not in environ
    ):
        return "vscode"
    if "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in environ or _colab_importable():
        return "colab"
    return "jupyter"


def _colab_importable() -> bool:
    try:
        return importlib.util.find_spec("google.colab") is not None
    except (ImportError, ValueError):  # no "google" package at all, or a broken namespace
        return False


# --------------------------------------------------------------------------- the boxes


class _Twin:
    """What a panel box adds to ipywidgets' box: the static twin, its output metadata and the fallbacks."""

    _twin_factory: Callable[[], go.Figure] | None = None
    _twin_figure: go.Figure | None = None
    twin_title: str = "panel"
    twin_note: str = ""

    def set_twin(self, factory: Callable[[], go.Figure] | None, *, title: str, note: str):
        """Attach the function that builds the twin (called once, on first use), the title and the note."""
        self._twin_factory, self._twin_figure = factory, None
        self.twin_title, self.twin_note = title, note
        return self

    @property
    def static_twin(self) -> go.Figure | None:
        """The panel's figure with plotly sliders over precomputed knob values (None for a panel without one)."""
        if self._twin_figure is None and self._twin_factory is not None:
            self._twin_figure = self._twin_factory()
        return self._twin_figure

    def _plain_line(self) -> str:
        return f"Interactive panel: {self.twin_title} — run the cell in JupyterLab to use it"

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        """The widget view with a readable ``text/plain`` and the twin as output metadata; in Colab and VS Code
        the twin itself, with a note saying why."""
        try:
            twin = self.static_twin
        except Exception as exc:  # a failed twin must not hide the live panel: say so and show the panel
            warnings.warn(f"the static twin of {self.twin_title!r} could not be built: {exc!r}", stacklevel=2)
            twin = None
        meta = {}
        if twin is not None:
            meta = {"dro_lab": {"static_twin": json.loads(twin.to_json()), "title": self.twin_title,
                                "note": self.twin_note}}  # fmt: skip
        try:
            where = front_end()
        except ValueError as exc:  # a mistyped DRO_LAB_FRONT_END: say so, and show the live panel
            warnings.warn(str(exc), stacklevel=2)
            where = "jupyter"
        if twin is not None and where in WHY:
            return _fallback_bundle(twin, where, self.twin_title, self._plain_line()), meta
        data = super()._repr_mimebundle_(include=include, exclude=exclude, **kwargs) or {}
        data["text/plain"] = self._plain_line()
        return data, meta


class TwinHBox(_Twin, W.HBox):
    """An ``HBox`` panel with a static twin (see the module's docstring)."""


class TwinVBox(_Twin, W.VBox):
    """A ``VBox`` panel with a static twin (see the module's docstring)."""


def _fallback_note(where: str) -> str:
    return (
        f"{WHY[where]}: this is the panel's static version; the sliders move precomputed values. "
        "In JupyterLab or Binder the panel is live."
    )


def _fallback_bundle(twin: go.Figure, where: str, title: str, plain: str) -> dict:
    """The twin as an HTML output with the note above it: plotly's own HTML in Colab (what its Colab renderer
    makes, without auto-play), a loader that draws the frames too in VS Code."""
    note = (
        f'<p class="dro-lab-static-note" style="margin:4px 0;font-size:13px"><b>{html.escape(title)}</b> — '
        f"{html.escape(_fallback_note(where))}</p>"
    )
    if where == "colab":
        page = pio.to_html(twin, include_plotlyjs="cdn", full_html=True, auto_play=False)
        page = page.replace("<body>", "<body>" + note, 1)
    else:
        page = note + _loader_html(twin)
    return {"text/html": page, "text/plain": plain + " (static version: " + _fallback_note(where) + ")"}


def _loader_html(fig: go.Figure) -> str:
    """A div and a script that draws ``fig`` (frames included) once plotly.js is there, loading it if needed."""
    div = f"dro-lab-twin-{uuid.uuid4().hex}"
    cdn = f"https://cdn.plot.ly/plotly-{get_plotlyjs_version()}.min.js"
    figure = fig.to_json().replace("</", "<\\/")
    return (
        f'<div id="{div}"></div><script>(function () {{ var fig = {figure};'
        f' function draw() {{ window.Plotly.newPlot("{div}", fig); }}'
        " if (window.Plotly) { draw(); return; }"
        f' var s = document.createElement("script"); s.src = "{cdn}"; s.onload = draw;'
        " document.head.appendChild(s); })();</script>"
    )


# --------------------------------------------------------------------------- knobs from the controls


def knob(widget: W.Widget, values=None, *, label: str | None = None) -> dict | None:
    """A knob of :func:`dro_course.figures.slider_figure` from a control: its current value as the default, ``values``
    (or a short grid over the control's range: decades on a log slider, about five round numbers on a linear
    one, every option of a menu) and its symbol (the description up to its parenthesis: "β", "r", "α").
    None for a control that is not a knob (a multiple selection, a text box)."""
    if values is None:
        values, labels = _grid(widget)
        if values is None:
            return None
    else:
        labels = None
    default = widget.value
    values = list(values)
    if not any(_same(v, default) for v in values):
        values.append(default)
        labels = None
    if labels is None and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        values = sorted(values)
    spec = {"values": values, "default": default, "label": label or _symbol(widget)}
    if labels is not None:
        spec["labels"] = labels
    return spec


def knobs_from_controls(controls: Mapping[str, W.Widget], values: Mapping | None = None) -> dict[str, dict]:
    """The knobs of a panel's controls (``values`` overrides a control's grid, by name); controls that are
    not knobs are left out (they stay at their value). Two knobs with the same symbol (the capstone's α's) are
    labelled by their whole description ("α (CVaR level)")."""
    values = dict(values or {})
    unknown = sorted(set(values) - set(controls))
    if unknown:
        raise ValueError(f"twin names {unknown}, which are not controls of the panel ({sorted(controls)})")
    for name, given in values.items():
        if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
            raise TypeError(f"twin[{name!r}] must be a list of the control's values, got {given!r}")
    out = {}
    for name, widget in controls.items():
        spec = knob(widget, values.get(name))
        if spec is not None:
            out[name] = spec
    symbols = [spec["label"] for spec in out.values()]
    for name, spec in out.items():
        if symbols.count(spec["label"]) > 1:
            spec["label"] = controls[name].description or name
    return out


def twin_note(
    knobs: Mapping[str, Mapping], *, how: str = "Precomputed", live: str = "computes any value", aside: str = ""
) -> str:
    """One sentence for the site: how the values were made, which values the sliders hold (``aside`` after
    them), and what the live panel adds."""
    counts = [f"{len(k['values'])} {'values of ' if i == 0 else 'of '}{k['label']}" for i, k in enumerate(
        knobs.values())]  # fmt: skip
    listed = counts[0] if len(counts) == 1 else ", ".join(counts[:-1]) + " and " + counts[-1]
    once = ", one knob at a time" if len(counts) > 1 else ""
    return f"{how} at {listed}{once}{aside}; in JupyterLab the live panel {live}."


def _symbol(widget: W.Widget) -> str:
    text = getattr(widget, "description", "") or "value"
    return text.split(" (")[0].strip() or text


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)
    return type(a) is type(b) and a == b


def _grid(widget: W.Widget) -> tuple[list | None, list | None]:
    """A short grid of values over the control's range, and their labels (menus), or (None, None)."""
    if isinstance(widget, W.FloatLogSlider):
        return _log_grid(widget.min, widget.max, widget.base), None
    if isinstance(widget, (W.FloatSlider, W.BoundedFloatText)):
        return _round_grid(widget.min, widget.max), None
    if isinstance(widget, (W.IntSlider, W.BoundedIntText)):
        return sorted({int(round(v)) for v in np.linspace(widget.min, widget.max, 5)}), None
    if isinstance(widget, (W.Dropdown, W.ToggleButtons, W.RadioButtons, W.Select)):
        return list(widget._options_values), [str(x) for x in widget._options_labels]
    if isinstance(widget, (W.Checkbox, W.ToggleButton)):
        return [False, True], None
    return None, None


def _log_grid(lo_exp: float, hi_exp: float, base: float) -> list[float]:
    """Whole powers of ``base`` between the exponents (every other one beyond seven), else five log-spaced
    values rounded to two digits."""
    exps = list(range(math.ceil(lo_exp), math.floor(hi_exp) + 1))
    if len(exps) > 7:
        exps = exps[::2]
    if len(exps) >= 3:
        return [float(base**e) for e in exps]
    return [float(f"{base**e:.2g}") for e in np.linspace(lo_exp, hi_exp, 5)]


def _round_grid(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round numbers (steps of 1, 2, 2.5 or 5 times a power of ten) within [lo, hi]."""
    if hi <= lo:
        return [float(lo)]
    raw = (hi - lo) / (n - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = min((m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw), default=10 * power)
    first = math.ceil(lo / step - 1e-9) * step
    values = [round(first + k * step, 10) for k in range(int((hi - first) / step + 1e-9) + 1)]
    return [v for v in values if lo - 1e-12 <= v <= hi + 1e-12] or [float(lo)]


def static_twin_of(build: Callable[..., go.Figure], knobs: Mapping[str, Mapping]) -> Callable[[], go.Figure]:
    """The twin factory of a panel: :func:`dro_course.figures.slider_figure` over ``knobs``, within the size budget,
    computed on one torch thread (the twins' runs are tiny: on a shared CPU two threads made lesson 04's iris
    run 20 times slower); the thread count is restored afterwards."""

    def factory() -> go.Figure:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return slider_figure(build, knobs, max_bytes=TWIN_MAX_BYTES)
        finally:
            torch.set_num_threads(threads)

    return factory
