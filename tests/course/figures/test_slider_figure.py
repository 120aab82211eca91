"""viz.slider_figure: one figure, one plotly slider per knob, one frame per precomputed value.

The oracles are closed forms of the test's own builders (a line y = a·x + b, a figure whose trace count, title,
axis range and annotations follow the knob), never the function's own output; a last test moves the sliders in
a real Chromium (skipped where there is none).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import plotly.graph_objects as go
import pytest

from dro_course.figures import slider_figure

X = np.linspace(0.0, 1.0, 11)


def _line(a, b):
    return go.Figure(go.Scatter(x=X, y=a * X + b, name=f"a = {a}"), layout=dict(title=f"a = {a}, b = {b}"))


KNOBS = {
    "a": {"values": [0.5, 1.0, 2.0, 10.0], "default": 1.0, "label": "β"},
    "b": {"values": [-1.0, 0.0, 3.0], "default": 0.0, "label": "r"},
}


def _frame(fig, knob_index, step_index):
    step = fig.layout.sliders[knob_index].steps[step_index]
    name = step.args[0][0]
    return next(f for f in fig.frames if f.name == name)


def _visible(traces):
    return [t for t in traces if t.visible is not False]


def test_every_value_of_every_knob_has_a_step_and_a_frame_with_the_closed_form():
    fig = slider_figure(_line, KNOBS)
    assert len(fig.frames) == 1 + 3 + 2  # the defaults once, then every other value
    assert len(fig.layout.sliders) == 2
    for k, (name, spec) in enumerate(KNOBS.items()):
        slider = fig.layout.sliders[k]
        assert [s.label for s in slider.steps] == [format(v, ".3g") for v in spec["values"]]
        assert slider.active == spec["values"].index(spec["default"])
        assert slider.currentvalue.prefix == f"{spec['label']} = "
        assert "one knob at a time" in slider.currentvalue.suffix
        for j, value in enumerate(spec["values"]):
            step = slider.steps[j]
            assert step.method == "animate"
            assert step.args[1]["frame"] == {"duration": 0, "redraw": True}
            assert step.args[1]["transition"] == {"duration": 0} and step.args[1]["mode"] == "immediate"
            a, b = (value, 0.0) if name == "a" else (1.0, value)
            (trace,) = _visible(_frame(fig, k, j).data)
            np.testing.assert_allclose(trace.y, a * X + b, rtol=1e-3, atol=1e-12)
            assert trace.name == f"a = {a}"
            assert _frame(fig, k, j).layout.title.text == f"a = {a}, b = {b}"
    np.testing.assert_allclose(fig.data[0].y, 1.0 * X + 0.0)  # the initial data: the defaults
    assert fig.layout.title.text == "a = 1.0, b = 0.0"
    # every frame puts the sliders where the figure is: the moved knob at its value, the other at its default
    assert [s.active for s in _frame(fig, 0, 3).layout.sliders] == [3, 1]
    assert [s.active for s in _frame(fig, 1, 2).layout.sliders] == [1, 2]
    assert [s.active for s in _frame(fig, 1, 1).layout.sliders] == [1, 1]


def test_one_knob_has_no_one_at_a_time_note_and_a_value_list_of_strings_works():
    fig = slider_figure(lambda d: go.Figure(go.Bar(x=[d], y=[len(d)])), {"d": {"values": ["kl", "chi2"], "default":
                        "chi2", "labels": ["KL", "χ²"]}})  # fmt: skip
    (slider,) = fig.layout.sliders
    assert [s.label for s in slider.steps] == ["KL", "χ²"] and slider.active == 1
    assert not slider.currentvalue.suffix
    assert list(_frame(fig, 0, 0).data[0].y) == [2] and list(fig.data[0].y) == [4]


def test_floats_keep_four_significant_digits():
    def build(s):
        return go.Figure(go.Scatter(x=[1, 2, 3], y=np.array([1 / 3, 123456.789, -0.000123456]) * s))

    fig = slider_figure(build, {"s": {"values": [1.0, 2.0], "default": 1.0}})
    assert list(fig.data[0].y) == [0.3333, 123500.0, -0.0001235]
    assert list(_frame(fig, 0, 1).data[0].y) == [0.6667, 246900.0, -0.0002469]
    assert "0.33330000" not in fig.to_json()


def test_weights_below_1e_300_stay_finite_and_no_warning_is_printed():
    """An underflowing weight (lesson 02's q at large β reaches 1e-310) would overflow 10**digits: it is kept as is."""

    def build(s):
        return go.Figure(go.Scatter(x=[1, 2, 3], y=np.array([1e-310, 1.234567e-200, 0.5]) * s))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = slider_figure(build, {"s": {"values": [1.0, 2.0], "default": 1.0}})
    assert list(fig.data[0].y) == [1e-310, 1.235e-200, 0.5]


def _varying(n):
    """n lines (a different count per value), a title, an x range only for n = 3, an annotation only for n = 1."""
    fig = go.Figure([go.Scatter(x=X, y=X + k, mode="lines") for k in range(n)])
    fig.update_layout(title=f"{n} lines")
    if n == 3:
        fig.update_xaxes(range=[0, 5])
    if n == 1:
        fig.add_annotation(text="one", x=0.5, y=0.5, showarrow=False)
    return fig


def test_frames_write_every_slot_and_reset_what_a_figure_lacks():
    fig = slider_figure(_varying, {"n": {"values": [1, 2, 3], "default": 2}})
    slots = len(fig.data)
    assert slots == 3
    for j, n in enumerate([1, 2, 3]):
        frame = _frame(fig, 0, j)
        assert len(frame.data) == slots  # every slot written: a frame never leaves a line of the previous one
        shown = _visible(frame.data)
        assert len(shown) == n
        for k, trace in enumerate(shown):
            np.testing.assert_allclose(trace.y, X + k, rtol=1e-3, atol=1e-12)
        assert frame.layout.title.text == f"{n} lines"
        assert frame.layout.xaxis.autorange is (n != 3)
        assert list(frame.layout.xaxis.range or []) == ([0, 5] if n == 3 else [])
        assert len(frame.layout.annotations) == (1 if n == 1 else 0)  # an empty list clears the annotation
    assert len(_visible(fig.data)) == 2  # the defaults (n = 2), the third slot hidden


def test_a_size_budget_drops_the_traces_no_knob_changes_from_the_frames():
    grid = np.random.default_rng(0).random((60, 60))

    def build(a):
        return go.Figure([go.Heatmap(z=grid), go.Scatter(x=X, y=a * X)])

    knobs = {"a": {"values": [1.0, 2.0, 3.0], "default": 1.0}}
    full = slider_figure(build, knobs)
    assert all(len(f.data) == 2 and f.traces is None for f in full.frames)
    small = slider_figure(build, knobs, max_bytes=len(full.to_json()) // 2)
    assert all(list(f.traces) == [1] and len(f.data) == 1 for f in small.frames)
    np.testing.assert_allclose(_frame(small, 0, 2).data[0].y, 3.0 * X, rtol=1e-3)
    np.testing.assert_allclose(np.asarray(small.data[0].z), grid, rtol=1e-3, atol=1e-6)
    assert len(small.to_json()) < len(full.to_json()) / 2


def test_the_figure_round_trips_through_json_with_its_frames():
    fig = slider_figure(_line, KNOBS)
    back = json.loads(fig.to_json())
    assert len(back["frames"]) == 6 and len(back["layout"]["sliders"]) == 2
    assert go.Figure(back).frames[1].name == fig.frames[1].name


def test_sliders_sit_under_the_plot_and_the_figure_grows_by_them():
    fig = slider_figure(_line, KNOBS)
    plain = _line(1.0, 0.0)
    pads = [s.pad.t for s in fig.layout.sliders]
    assert pads[1] > pads[0] >= 0
    assert fig.layout.height - fig.layout.margin.b == (plain.layout.height or 450) - (plain.layout.margin.b or 80)


@pytest.mark.browser
def test_the_sliders_move_the_figure_in_chromium(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    from _browser import CHROMIUM_ARGS, find_chromium

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium on this machine")
    fig = slider_figure(_line, KNOBS)
    page_file = tmp_path / "twin.html"
    fig.write_html(page_file, include_plotlyjs=True, auto_play=False)
    read = "() => { const gd = document.querySelector('.plotly-graph-div'); return Array.from(gd._fullData[0].y); }"
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 900, "height": 900})
        page.goto(page_file.as_uri())
        page.wait_for_selector(".slider-rail-touch-rect")
        start = page.evaluate(read)
        rails = page.query_selector_all(".slider-rail-touch-rect")
        r_box = rails[1].bounding_box()
        page.mouse.click(r_box["x"] + r_box["width"] - 2, r_box["y"] + r_box["height"] / 2)  # r's last step: b = 3
        page.wait_for_timeout(300)
        shifted = page.evaluate(read)
        box = rails[0].bounding_box()
        page.mouse.click(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)  # β's last step: a = 10
        page.wait_for_timeout(300)
        moved = page.evaluate(read)
        active = page.evaluate(
            "() => document.querySelector('.plotly-graph-div')._fullLayout.sliders.map(s => s.active)"
        )
        text = page.evaluate("() => document.querySelector('.slider-container').textContent")
        browser.close()
    np.testing.assert_allclose(start, 1.0 * X, rtol=1e-3, atol=1e-12)
    np.testing.assert_allclose(shifted, 1.0 * X + 3.0, rtol=1e-3, atol=1e-12)
    np.testing.assert_allclose(moved, 10.0 * X, rtol=1e-3, atol=1e-12)  # b back at its default, 0
    assert active == [3, 1]  # and r's slider with it
    assert "β = 10" in text
