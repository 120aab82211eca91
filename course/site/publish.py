"""An executed lesson made fit for the website: :func:`publish_notebook`.

What a page must not carry, and why:

- saved widget state (``metadata.widgets``): each plotly FigureWidget stores its 5 MB front-end bundle there, and a
  static page cannot run a widget anyway;
- a widget output: it draws nothing without a kernel. A panel of :mod:`dro_course.panels` leaves its *static twin* in
  the output's metadata (``{"dro_lab": {"static_twin": figure, "title": ..., "note": ...}}``): the page shows that
  plotly figure, whose own sliders move over precomputed values; any other widget becomes a one-line note;
- a plotly figure as ``application/vnd.plotly.v1+json`` (what JupyterLab and VS Code draw): the site's HTML builder
  does not know that type, so each figure becomes a ``<div>`` and a ``Plotly.newPlot`` call that use the site's one
  shared plotly.js bundle (no copy of plotly.js inside any page);
- an empty Markdown output (``display(Markdown(""))``): JupyterLab draws nothing, and the page neither.
"""

from __future__ import annotations

import base64
import copy
import html
import json
import re
from typing import Any

import nbformat
import numpy as np

PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
_DISPLAY = ("display_data", "execute_result")

#: The sentence under a panel's static twin.
TWIN_NOTE = "Static version of an interactive panel: its sliders move over precomputed values."
#: What replaces a widget that left no static twin.
LIVE_ONLY = (
    "Interactive panel: it runs in JupyterLab, Binder or Colab (open the notebook with the launch buttons "
    "at the top of the page); a static page has no kernel to compute it."
)


def _float32(node: Any) -> Any:
    """``node`` with every float64 array plotly wrote as base64 (``{"dtype": "f8", "bdata": ...}``) stored as float32:
    half the bytes, and seven significant digits, more than a figure can show. An array with values float32 cannot
    hold (beyond its range, or so small that they would round to 0 on a log axis) stays float64."""
    if isinstance(node, list):
        return [_float32(item) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get("dtype") == "f8" and isinstance(node.get("bdata"), str):
        values = np.frombuffer(base64.b64decode(node["bdata"]), dtype="<f8")
        finite = np.abs(values[np.isfinite(values) & (values != 0)])
        if finite.size and (finite.max() > 1e30 or finite.min() < 1e-30):
            return node
        return {**node, "dtype": "f4", "bdata": base64.b64encode(values.astype("<f4").tobytes()).decode("ascii")}
    return {key: _float32(value) for key, value in node.items()}


def _compact(part: Any) -> str:
    # "</" inside JSON would end the <script> element early
    return json.dumps(_float32(part), separators=(",", ":")).replace("</", "<\\/")


def figure_html(figure: dict[str, Any], div_id: str, template: dict[str, Any] | None = None) -> str:
    """A plotly figure (its JSON dict) as a ``<div>`` and the script that draws it with the page's plotly.js.

    The script waits for ``window.Plotly`` (loaded once per page from the site's ``_static`` folder) and adds the
    figure's frames, so that a figure with a slider over frames (a static twin) animates between them. A figure
    whose layout template is ``template`` (the course's, written once into ``_static``) names it
    (``window.droLabTemplate``) instead of carrying it; float64 arrays are stored as float32 (:func:`_float32`).
    """
    layout = dict(figure.get("layout", {}))
    shared = template is not None and layout.get("template") == template
    if shared:
        del layout["template"]
    data, frames = _compact(figure.get("data", [])), _compact(figure.get("frames", []))
    height = layout.get("height") or 450
    with_template = "if(window.droLabTemplate){l.template=window.droLabTemplate;}" if shared else ""
    return (
        f'<div id="{div_id}" class="plotly-graph-div dro-lab-figure" style="height:{int(height)}px;width:100%;"></div>'
        f'<script type="text/javascript">(function(){{var el=document.getElementById("{div_id}");'
        f"var l={_compact(layout)};{with_template}"
        f"Plotly.newPlot(el,{data},l,{{responsive:true,displaylogo:false}})"
        f".then(function(){{var f={frames};if(f.length){{return Plotly.addFrames(el,f);}}}});}})();</script>"
    )


def _note(text: str, css: str) -> str:
    return f'<p class="{css}"><em>{html.escape(text)}</em></p>'


def _twin_output(meta: dict[str, Any], div_id: str, template: dict[str, Any] | None) -> dict[str, Any]:
    twin = meta["static_twin"]
    note = meta.get("note") or TWIN_NOTE
    title = meta.get("title")
    head = f"<p class='dro-lab-twin-title'><strong>{html.escape(title)}</strong></p>" if title else ""
    body = head + figure_html(twin, div_id, template) + _note(note, "dro-lab-twin-note")
    return {"output_type": "display_data", "metadata": {}, "data": {"text/html": body}}


_PROGRESS_BAR = re.compile(r"\d+%\|.*\|\s*\d+/\d+")  # tqdm's text: "  0%|          | 0/4 [00:00<?, ?run/s]"


def _is_progress_bar(text: Any) -> bool:
    text = "".join(text) if isinstance(text, list) else str(text)
    return bool(_PROGRESS_BAR.search(text))


def _published_output(output: dict[str, Any], div_id: str, template: dict[str, Any] | None) -> dict[str, Any] | None:
    """One output as the page shows it (None: nothing to show)."""
    if output.get("output_type") not in _DISPLAY:
        return output
    data = output.get("data", {})
    if WIDGET_MIME in data:
        meta = (output.get("metadata") or {}).get("dro_lab") or {}
        if isinstance(meta.get("static_twin"), dict):
            return _twin_output(meta, div_id, template)
        if _is_progress_bar(data.get("text/plain", "")):
            return None  # a tqdm bar: it said how far a run had got, nothing a reader of the page needs
        return {"output_type": "display_data", "metadata": {}, "data": {"text/html": _note(LIVE_ONLY, "dro-lab-live")}}
    if data.get("text/markdown", None) in ("", []):
        return None  # display(Markdown("")): JupyterLab shows nothing, and neither does the page
    if PLOTLY_MIME in data:
        figure = data[PLOTLY_MIME]
        shown = figure_html(figure, div_id, template)
        return {"output_type": "display_data", "metadata": {}, "data": {"text/html": shown}}
    return output


def publish_notebook(notebook: Any, *, name: str, template: dict[str, Any] | None = None) -> Any:
    """A copy of the executed ``notebook`` (an nbformat node) that a static page can show in full.

    Saved widget state is dropped; widget outputs become their static twins (or a note); plotly figures become
    ``<div>`` + script pairs drawn by the page's shared plotly.js, with ids ``<name>-fig-<n>`` (stable between
    builds). ``name`` is the lesson id; a figure whose layout template is ``template`` (the site's shared one,
    :func:`dro_course.site.assets.shared_template`) refers to it instead of carrying it. Every other output is
    kept as it is, but an empty Markdown output, which draws nothing.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string (the lesson id), got {name!r}")
    nb = copy.deepcopy(notebook)
    nb.metadata.pop("widgets", None)
    count = 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        outputs = []
        for output in cell.get("outputs", []):
            count += 1
            shown = _published_output(output, f"{name}-fig-{count}", template)
            if shown is not None:
                outputs.append(nbformat.from_dict(shown))
        cell.outputs = outputs
    return nb


def _twin_as_figure(output: dict[str, Any]) -> dict[str, Any]:
    """A panel's widget output as its static twin, a plain plotly figure output (JupyterLab and VS Code draw it
    without a kernel); a widget without a twin is left as it is (its text fallback shows)."""
    meta = (output.get("metadata") or {}).get("dro_lab") or {}
    if output.get("output_type") not in _DISPLAY or WIDGET_MIME not in output.get("data", {}):
        return output
    if not isinstance(meta.get("static_twin"), dict):
        return output
    text = output["data"].get("text/plain", "")
    return nbformat.from_dict(
        {"output_type": "display_data", "metadata": {}, "data": {PLOTLY_MIME: meta["static_twin"], "text/plain": text}}
    )


def strip_widget_state(notebook: Any) -> Any:
    """A copy of the executed ``notebook`` for download: no saved widget state (a FigureWidget stores 5 MB of
    front-end code there) and each panel shown as its static twin, a plotly figure that draws in JupyterLab and
    VS Code even in an untrusted notebook. Plotly figures keep their mime type."""
    nb = copy.deepcopy(notebook)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell.outputs = [_twin_as_figure(output) for output in cell.get("outputs", [])]
    return nb
