"""A figure with its own sliders: plotly frames over a few precomputed knob values, drawn with no kernel.

:func:`slider_figure` calls a figure builder once at the knobs' defaults and once per other value of each knob
(one knob at a time: the others stay at their defaults), and packs the results into ONE ``go.Figure``: the
defaults' figure as its data, one plotly frame per value and one slider per knob whose steps animate to those
frames. A reader of a static page (the course site, an exported notebook) moves β and sees the figure change;
nothing is computed in the browser.

plotly.js merges a frame into the figure it shows (it does not replace it), so the traces are laid out in
*slots*: a slot holds traces of one type and one set of attributes, every frame writes every slot (a slot that a
figure lacks is written hidden), and the layout parts that change between figures (title, axis ranges,
annotations, shapes …) are written in full by every frame, with the ranges, titles and lists a figure lacks reset
rather than left over from the previous frame. With several knobs every frame also sets each slider's position
(the moved knob at its value, the others back at their defaults), so the sliders always say what is drawn.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from dro_lab._validation import check_callable, check_int

__all__ = ["slider_figure"]

#: The keys a knob's description may hold.
KNOB_KEYS = {"values", "default", "label", "labels", "format"}
#: Most frames a slider figure may hold (each is a whole figure): the knobs are meant to be short lists.
MAX_FRAMES = 80
#: Vertical room one slider takes under the plot, in pixels.
SLIDER_PX = 85
#: The frame every knob's default step shows (one copy of the defaults' figure serves every slider).
DEFAULT_FRAME = "defaults"
#: Layout keys that frames never carry: the template and the controls themselves.
_FIXED_LAYOUT = {"template", "sliders", "updatemenus"}


def slider_figure(
    build: Callable[..., go.Figure],
    knobs: Mapping[str, Mapping],
    *,
    digits: int = 4,
    max_bytes: int | None = None,
) -> go.Figure:
    """One ``go.Figure`` with a plotly slider per knob over precomputed values of ``build(**knob_values)``.

    ``knobs`` maps each keyword of ``build`` to its description: ``values`` (a short non-empty list: numbers,
    strings or booleans), ``default`` (one of ``values``), ``label`` (the symbol shown beside the slider, e.g.
    ``"β"``; default the keyword), optionally ``labels`` (one step label per value) or ``format`` (a number
    format, default ``".3g"``). The figure's data and layout are ``build`` at the defaults; moving
    a knob's slider shows ``build`` at that value with the other knobs at their defaults (the slider's read-out
    says so: "β = 10 · one knob at a time"). Floats are rounded to ``digits`` significant digits. With
    ``max_bytes``, a figure whose JSON is larger first drops from its frames the traces that no knob changes
    (``frame.traces`` names the ones a frame carries), then thins lines longer than 500 points.
    """
    check_callable(build, "build", "a function knob values -> go.Figure")
    specs = _check_knobs(knobs)
    digits = check_int(digits, "digits (significant digits kept)", low=2, high=15)
    if max_bytes is not None:
        max_bytes = check_int(max_bytes, "max_bytes", low=1)
    defaults = {name: spec["default"] for name, spec in specs.items()}
    figures = {DEFAULT_FRAME: _built(build, defaults)}
    for name, spec in specs.items():
        for i, value in enumerate(spec["values"]):
            if i != spec["default_index"]:
                figures[_frame_name(name, i)] = _built(build, {**defaults, name: value})
    plain = {key: _plain_figure(fig, digits, len(specs)) for key, fig in figures.items()}
    fig = _assemble(plain, specs)
    if max_bytes is not None and _json_size(fig) > max_bytes:
        fig = _assemble(plain, specs, drop_constant=True)
        if _json_size(fig) > max_bytes:
            fig = _assemble({k: _thinned(f) for k, f in plain.items()}, specs, drop_constant=True)
    return fig


# --------------------------------------------------------------------------- knobs


def _check_knobs(knobs) -> dict[str, dict]:
    """Each knob's values, default (and its index), label and step labels, checked."""
    if not isinstance(knobs, Mapping):
        raise TypeError(f"knobs must be a dict name -> {{'values': [...], 'default': v, 'label': 'β'}}, got {knobs!r}")
    if not knobs:
        raise ValueError("knobs is empty: give at least one knob with its values and default")
    specs = {name: _check_knob(name, spec) for name, spec in knobs.items()}
    frames = 1 + sum(len(s["values"]) - 1 for s in specs.values())
    if frames > MAX_FRAMES:
        raise ValueError(f"knobs ask for {frames} frames; at most {MAX_FRAMES} (give each knob a short list)")
    return specs


def _check_knob(name, spec) -> dict:
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"knobs: each name must be a keyword of build (an identifier), got {name!r}")
    if not isinstance(spec, Mapping):
        raise TypeError(f"knobs[{name!r}] must be a dict with 'values' and 'default', got {type(spec).__name__}")
    unknown = sorted(set(spec) - KNOB_KEYS)
    if unknown:
        raise ValueError(f"knobs[{name!r}]: unknown keys {unknown}; accepted: {sorted(KNOB_KEYS)}")
    if "values" not in spec or "default" not in spec:
        raise ValueError(f"knobs[{name!r}] needs 'values' (a short list) and 'default' (one of them)")
    values = spec["values"]
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"knobs[{name!r}]['values'] must be a list of values, got {values!r}")
    values = list(values)
    if not values:
        raise ValueError(f"knobs[{name!r}]['values'] is empty: give at least one value")
    for v in values:
        if not isinstance(v, (str, bool, int, float, np.number)):
            raise TypeError(f"knobs[{name!r}]['values'] must hold numbers, strings or booleans, got {v!r}")
        if isinstance(v, (float, np.floating)) and not math.isfinite(v):
            raise ValueError(f"knobs[{name!r}]['values'] must be finite, got {v!r}")
    index = _index_of(values, spec["default"])
    if index is None:
        raise ValueError(f"knobs[{name!r}]: the default {spec['default']!r} is not among the values {values}")
    label = spec.get("label", name)
    if not isinstance(label, str) or not label:
        raise TypeError(f"knobs[{name!r}]['label'] must be a non-empty string (the symbol), got {label!r}")
    steps = _step_labels(name, values, spec)
    return {"values": values, "default": values[index], "default_index": index, "label": label, "labels": steps}


def _index_of(values: list, default) -> int | None:
    """The index of ``default`` in ``values`` (floats equal to 1e-9 relative), or None."""
    for i, v in enumerate(values):
        if isinstance(v, str) or isinstance(default, str) or isinstance(v, bool) or isinstance(default, bool):
            if type(v) is type(default) and v == default:
                return i
        elif isinstance(default, (int, float, np.number)) and math.isclose(v, default, rel_tol=1e-9, abs_tol=1e-15):
            return i
    return None


def _step_labels(name: str, values: list, spec: Mapping) -> list[str]:
    """One label per value: the given ``labels``, else each value formatted (``format``, default ``.3g``)."""
    if "labels" in spec:
        labels = spec["labels"]
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence) or len(labels) != len(values):
            raise ValueError(f"knobs[{name!r}]['labels'] must give one label per value ({len(values)})")
        return [str(x) for x in labels]
    fmt = spec.get("format", ".3g")
    if not isinstance(fmt, str):
        raise TypeError(f"knobs[{name!r}]['format'] must be a number format such as '.3g', got {fmt!r}")
    try:
        labels = [v if isinstance(v, str) else str(v) if isinstance(v, bool) else _number(v, fmt) for v in values]
    except ValueError as exc:
        raise ValueError(f"knobs[{name!r}]['format'] {fmt!r} cannot format the values: {exc}") from None
    if len(set(labels)) < len(labels):
        raise ValueError(f"knobs[{name!r}]: two values print the same label {labels}; give 'labels' or a 'format'")
    return labels


def _number(value, fmt: str) -> str:
    """``value`` formatted by ``fmt``; 1000 reads "1000", not "1e+03"."""
    text = format(value, fmt)
    if "e+0" in text and float(value).is_integer() and abs(value) < 1e6:
        text = str(int(value))
    return text


def _frame_name(knob: str, index: int) -> str:
    return f"{knob}:{index}"


def _built(build, values: dict) -> go.Figure:
    fig = build(**values)
    if not isinstance(fig, go.Figure):
        raise TypeError(f"build must return a plotly go.Figure, got {type(fig).__name__} for {values}")
    return fig


# --------------------------------------------------------------------------- plain JSON, rounded


def _plain_figure(fig: go.Figure, digits: int, n_knobs: int) -> dict:
    """The figure as plain JSON-ready lists and dicts, floats rounded, room made under it for the sliders."""
    raw = fig.to_plotly_json()
    data = [_plain(trace, digits) for trace in raw.get("data", [])]
    for trace in data:
        trace.setdefault("visible", True)  # explicit, so a frame showing this slot undoes a hidden one
    layout = {k: _plain(v, digits) for k, v in raw.get("layout", {}).items() if k != "template"}
    margin = dict(layout.get("margin", {}))
    height, old_bottom = layout.get("height", 450), margin.get("b", 80)
    bottom = _reach_below_plot(layout, height - margin.get("t", 100) - old_bottom)
    margin["b"] = bottom + SLIDER_PX * n_knobs  # the plot area keeps its size: the figure grows by the sliders
    layout["margin"] = margin
    layout["height"] = height + margin["b"] - old_bottom
    return {"data": data, "layout": layout, "template": raw.get("layout", {}).get("template"), "bottom": bottom}


def _reach_below_plot(layout: dict, plot_px: float) -> float:
    """How far (pixels) the builder's own content reaches under the plot area: its bottom margin (the axis
    titles), or a legend placed under the plot (``legend.y < 0``; plotly keeps such a legend clear of the axis
    title, so about 60 px more for one row and a gap), whichever is lower."""
    bottom = layout.get("margin", {}).get("b", 80)
    legend = layout.get("legend", {})
    y = legend.get("y")
    if isinstance(y, (int, float)) and y < 0 and layout.get("showlegend", True) is not False:
        bottom = max(bottom, -y * max(plot_px, 50) + 60)
    return round(bottom)


def _plain(value, digits: int):
    """``value`` with numpy arrays (and plotly's base64 typed arrays) as (nested) lists and every float rounded
    to ``digits`` significant digits."""
    if isinstance(value, dict) and "bdata" in value and "dtype" in value:
        value = _decoded(value)
    if isinstance(value, dict):
        return {k: _plain(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, float) for v in value):
            return _rounded(np.asarray(value, dtype=float), digits).tolist()
        return [_plain(v, digits) for v in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            return _rounded(value.astype(float), digits).tolist()
        if value.dtype.kind in "iub":
            return value.tolist()
        return [_plain(v, digits) for v in value.tolist()]
    if isinstance(value, (float, np.floating)):
        return float(_rounded(np.asarray([value], dtype=float), digits)[0])
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _decoded(typed: dict) -> np.ndarray:
    """plotly's typed-array JSON (``{"dtype": "f8", "bdata": base64, "shape": "3, 4"}``) as a numpy array."""
    flat = np.frombuffer(base64.b64decode(typed["bdata"]), dtype=np.dtype(typed["dtype"]).newbyteorder("<"))
    shape = typed.get("shape")
    if shape:
        flat = flat.reshape([int(s) for s in str(shape).split(",")])
    return flat


def _rounded(a: np.ndarray, digits: int) -> np.ndarray:
    """``a`` rounded to ``digits`` significant digits; the scale is a power of ten applied on the side where it is
    an exact integer, so 0.1234 stays 0.1234 (not 0.12340000000000001) in JSON."""
    out = a.copy()
    ok = np.isfinite(a) & (a != 0)
    if not ok.any():
        return out
    exponent = np.floor(np.log10(np.abs(a[ok]))).astype(int)
    shift = digits - 1 - exponent
    vals = a[ok]
    up = shift >= 0
    scale_up = 10.0 ** np.minimum(shift[up], 300)  # 10**308 is float64's limit
    scale_down = 10.0 ** (-shift[~up])
    res = np.empty_like(vals)
    res[up] = np.round(vals[up] * scale_up) / scale_up
    res[~up] = np.round(vals[~up] / scale_down) * scale_down
    tiny = shift > 300  # below about 1e-300 (underflowing weights): kept as they are
    res[tiny] = vals[tiny]
    out[ok] = res
    return out


def _thinned(plain: dict, limit: int = 500) -> dict:
    """The figure with each line (a scatter drawn without markers) longer than ``limit`` points kept at every
    k-th point (and its last)."""
    data = []
    for trace in plain["data"]:
        x, y = trace.get("x"), trace.get("y")
        lines = trace.get("type", "scatter") == "scatter" and "markers" not in str(trace.get("mode", "lines"))
        if lines and isinstance(y, list) and len(y) > limit and (x is None or len(x) == len(y)):
            keep = sorted(set(range(0, len(y), math.ceil(len(y) / limit))) | {len(y) - 1})
            trace = {**trace, "y": [y[i] for i in keep]}
            if x is not None:
                trace["x"] = [x[i] for i in keep]
        data.append(trace)
    return {**plain, "data": data}


# --------------------------------------------------------------------------- slots, frames, sliders


def _signature(trace: dict) -> tuple:
    """A trace's type and the paths of every attribute it sets (lists not entered): traces sharing it may take
    turns in one slot, since each overwrites everything the other set."""

    def paths(d: dict, prefix: str = "") -> list[str]:
        out = []
        for k, v in d.items():
            out.extend(paths(v, f"{prefix}{k}.") if isinstance(v, dict) else [f"{prefix}{k}"])
        return out

    return (trace.get("type", "scatter"), tuple(sorted(paths(trace))))


def _slots(figures: list[dict]) -> list[tuple]:
    """The slots of all ``figures``: the k-th trace of a signature in a figure takes the k-th slot of that
    signature; a new slot goes right after the slot of the figure's previous trace (drawing order kept)."""
    order: list[tuple] = []
    for fig in figures:
        seen: dict[tuple, int] = {}
        previous = -1
        for trace in fig["data"]:
            sig = _signature(trace)
            slot = (sig, seen.get(sig, 0))
            seen[sig] = slot[1] + 1
            if slot not in order:
                order.insert(previous + 1, slot)
            previous = order.index(slot)
    return order


def _slotted(fig: dict, order: list[tuple]) -> list[dict]:
    """The figure's traces in slot order; a slot it lacks is a hidden trace of the slot's type."""
    by_slot, seen = {}, {}
    for trace in fig["data"]:
        sig = _signature(trace)
        by_slot[(sig, seen.get(sig, 0))] = trace
        seen[sig] = seen.get(sig, 0) + 1
    return [by_slot.get(slot, {"type": slot[0][0], "visible": False}) for slot in order]


def _changing_layout(figures: list[dict]) -> list[str]:
    """The top-level layout keys whose value differs between two of the figures (or that one of them lacks)."""
    keys = sorted({k for f in figures for k in f["layout"]} - _FIXED_LAYOUT)
    first = figures[0]["layout"]
    return [k for k in keys if any(json.dumps(f["layout"].get(k), sort_keys=True) != json.dumps(first.get(k),
            sort_keys=True) for f in figures[1:]) or any(k not in f["layout"] for f in figures)]  # fmt: skip


def _frame_layout(layout: dict, keys: list[str], figures: list[dict]) -> dict:
    """The changing layout keys of one figure, with what it lacks reset (empty lists, empty titles, automatic
    ranges and axis types) so that nothing stays over from the frame shown before."""
    out = {}
    for key in keys:
        others = [f["layout"].get(key) for f in figures]
        value = layout.get(key)
        if value is None:
            sample = next(v for v in others if v is not None)
            value = [] if isinstance(sample, list) else {"text": ""} if key == "title" else {} if isinstance(
                sample, dict) else None  # fmt: skip
            if value is None:
                continue
        if isinstance(value, dict):
            value = dict(value)
            sub = {s for v in others if isinstance(v, dict) for s in v}
            if "range" in sub:
                value.setdefault("autorange", "range" not in value)
            if "title" in sub and "title" not in value:
                value["title"] = {"text": ""}
            if "type" in sub and "type" not in value:
                value["type"] = "-"
        out[key] = value
    return out


def _step(frame: str, label: str) -> dict:
    return dict(
        method="animate",
        label=label,
        args=[[frame], {"mode": "immediate", "frame": {"duration": 0, "redraw": True}, "transition": {"duration": 0}}],
    )


def _sliders(specs: dict[str, dict], bottom: float) -> list[dict]:
    """One slider per knob under the plot, its default step active, its read-out "β = 10"."""
    sliders = []
    several = len(specs) > 1
    for i, (name, spec) in enumerate(specs.items()):
        steps = [
            _step(DEFAULT_FRAME if j == spec["default_index"] else _frame_name(name, j), spec["labels"][j])
            for j in range(len(spec["values"]))
        ]
        suffix = "   · one knob at a time (the others at their defaults)" if several else ""
        sliders.append(
            dict(
                name=name,
                active=spec["default_index"],
                steps=steps,
                currentvalue=dict(prefix=f"{spec['label']} = ", suffix=suffix, font=dict(size=13)),
                x=0.0,
                len=1.0,
                xanchor="left",
                y=0.0,
                yanchor="top",
                pad=dict(t=bottom + SLIDER_PX * i, b=0),
            )
        )
    return sliders


def _active(slider: dict, frame: str) -> int:
    """The step of ``slider`` that shows ``frame``, else its default step."""
    steps = [step["args"][0][0] for step in slider["steps"]]
    return steps.index(frame) if frame in steps else slider["active"]


def _assemble(plain: dict[str, dict], specs: dict[str, dict], *, drop_constant: bool = False) -> go.Figure:
    """The figure: the defaults' traces in every slot, one frame per other value, one slider per knob."""
    names = list(plain)
    figures = [plain[k] for k in names]
    order = _slots(figures)
    slotted = {k: _slotted(plain[k], order) for k in names}
    keep = list(range(len(order)))
    if drop_constant:
        first = [json.dumps(t, sort_keys=True) for t in slotted[names[0]]]
        keep = [i for i in keep if any(json.dumps(slotted[k][i], sort_keys=True) != first[i] for k in names[1:])]
    changing = _changing_layout(figures)
    base = plain[DEFAULT_FRAME]
    sliders = _sliders(specs, base["bottom"])
    frames = []
    for key in names:
        frame = {"name": key, "data": [slotted[key][i] for i in keep], "layout": _frame_layout(
            plain[key]["layout"], changing, figures)}  # fmt: skip
        if len(sliders) > 1:  # the other sliders go back to their defaults, as the figure does
            frame["layout"]["sliders"] = [{**s, "active": _active(s, key)} for s in sliders]
        if drop_constant:
            frame["traces"] = keep
        frames.append(frame)
    layout = {k: v for k, v in base["layout"].items() if k != "updatemenus"}  # no play button over the knobs
    fig = go.Figure(data=slotted[DEFAULT_FRAME], layout={**layout, "sliders": sliders}, frames=frames)
    if base["template"] is not None:
        fig.layout.template = base["template"]
    return fig


def _json_size(fig: go.Figure) -> int:
    return len(fig.to_json())
