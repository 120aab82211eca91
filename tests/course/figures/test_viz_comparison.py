"""The capstone's figure (figures.comparison_figure, lesson 07) stays readable when methods crowd together.

The labels' boxes are recomputed here from the figure alone — its size, margins and axis ranges give each point's
pixel position, each annotation's pixel offset gives its label's centre, and a label's box is approximated by its
text length × 0.7 × the font size (about a capital letter's width; lower-case letters are narrower) plus the
padding and border — and no two may overlap, none may cover a marker, and all stay inside the plotting area.
Markers: a smaller marker is never drawn under a larger one it overlaps, and every marker is outlined and
partly transparent.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from dro_course import figures
from dro_course.lessons.comparison.study import METHODS

CHAR = 0.7  # font sizes per character: the test's own approximation of a label's width


def _pixels(fig):
    """data (x, y) -> pixel (x, y) from the figure's top-left corner, from the layout alone."""
    lay = fig.layout
    m = lay.margin
    x0, x1 = m.l, lay.width - m.r
    y0, y1 = m.t, lay.height - m.b
    (a, b), (c, d) = lay.xaxis.range, lay.yaxis.range

    def to_px(x, y):
        return x0 + (x - a) / (b - a) * (x1 - x0), y1 - (y - c) / (d - c) * (y1 - y0)

    return to_px, (x0, y0, x1, y1)


def _label_boxes(fig):
    to_px, _ = _pixels(fig)
    boxes = {}
    for ann in fig.layout.annotations:
        if not (ann.name or "").startswith("label: "):
            continue
        px, py = to_px(ann.x, ann.y)
        cx, cy = px + ann.ax, py + ann.ay
        extra = 2 * (ann.borderpad + ann.borderwidth)
        w = len(ann.text) * CHAR * ann.font.size + extra
        h = 1.2 * ann.font.size + extra
        boxes[ann.text] = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
    return boxes


def _marker_boxes(fig):
    to_px, _ = _pixels(fig)
    out = {}
    for t in fig.data:
        if t.mode == "markers":
            px, py = to_px(t.x[0], t.y[0])
            r = t.marker.size / 2
            out[t.name] = (px - r, py - r, px + r, py + r)
    return out


def _overlap(a, b) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def _summary(points, costs, families=None):
    names = list(points)
    return [
        {
            "method": n,
            "avg_acc": points[n][0],
            "worst_group_acc": points[n][1],
            "avg_acc_sd": 0.01,
            "worst_group_acc_sd": 0.02,
            "seconds_per_epoch": costs[n],
            "family": (families or {}).get(n, METHODS[n].family if n in METHODS else ""),
            "n_seeds": 2,
        }
        for n in names
    ]


def _assert_readable(fig, summary):
    boxes = _label_boxes(fig)
    assert sorted(boxes) == sorted(e["method"] for e in summary)  # every method named once
    for (a, box_a), (b, box_b) in itertools.combinations(boxes.items(), 2):
        assert not _overlap(box_a, box_b), f"the labels {a!r} and {b!r} overlap"
    markers = _marker_boxes(fig)
    for (name, box), (marker, mbox) in itertools.product(boxes.items(), markers.items()):
        assert not _overlap(box, mbox), f"the label {name!r} covers the marker of {marker!r}"
    _, (x0, y0, x1, y1) = _pixels(fig)
    for name, (a, b, c, d) in boxes.items():
        assert x0 <= a and c <= x1 and y0 <= b and d <= y1, f"the label {name!r} leaves the plotting area"


def test_a_crowded_summary_has_no_overlapping_labels():
    rng = random.Random(0)
    # every method of the course within one point of accuracy of (0.85, 0.70); ERM and DONE on the same spot,
    # DONE five times dearer (the old figure drew DONE's large marker over ERM's)
    points = {m: (0.85 + rng.uniform(-0.005, 0.005), 0.70 + rng.uniform(-0.005, 0.005)) for m in METHODS}
    points["DONE"] = points["ERM"]
    costs = {m: 0.004 * (1 + 4 * rng.random()) for m in METHODS}
    costs["ERM"], costs["DONE"] = 0.004, 0.02
    summary = _summary(points, costs)
    fig = figures.comparison_figure(summary, front=["Upsampling"])
    _assert_readable(fig, summary)
    order = [t.name for t in fig.data if t.mode == "markers"]
    assert order.index("DONE") < order.index("ERM")  # ERM's small marker is drawn on top of DONE's


@pytest.mark.parametrize("trial", range(12))
def test_random_summaries_have_no_overlapping_labels(trial):
    rng = random.Random(100 + trial)
    names = rng.sample(list(METHODS), rng.randint(2, len(METHODS)))
    spread = rng.choice([0.005, 0.05, 0.3])
    cx, cy = rng.uniform(0.4, 0.9), rng.uniform(0.2, 0.8)
    points = {m: (cx + rng.uniform(-spread, spread), cy + rng.uniform(-spread, spread)) for m in names}
    costs = {m: rng.uniform(0.001, 0.05) for m in names}
    summary = _summary(points, costs)
    width, height = rng.choice([(980, 600), (760, 540)])
    fig = figures.comparison_figure(summary, width=width, height=height)
    _assert_readable(fig, summary)


def test_no_marker_hides_another():
    rng = random.Random(7)
    points = {m: (0.8 + rng.uniform(-0.01, 0.01), 0.6 + rng.uniform(-0.01, 0.01)) for m in METHODS}
    costs = {m: rng.uniform(0.001, 0.05) for m in METHODS}
    fig = figures.comparison_figure(_summary(points, costs))
    traces = [t for t in fig.data if t.mode == "markers"]
    to_px, _ = _pixels(fig)
    for i, j in itertools.combinations(range(len(traces)), 2):  # trace j is drawn over trace i
        a, b = traces[i], traces[j]
        (ax_, ay_), (bx, by) = to_px(a.x[0], a.y[0]), to_px(b.x[0], b.y[0])
        if math.hypot(ax_ - bx, ay_ - by) < (a.marker.size + b.marker.size) / 2:
            assert b.marker.size <= a.marker.size, f"{b.name} is drawn over the smaller {a.name}"
    for t in traces:
        assert 0 < t.marker.opacity < 1 and t.marker.line.width > 0 and t.mode == "markers"


def test_the_legend_keeps_the_summary_order_and_bars_stay_in_0_1():
    points = {"ERM": (0.99, 0.97), "LS": (0.5, 0.01), "AT": (0.7, 0.5)}
    summary = _summary(points, {"ERM": 0.001, "LS": 0.01, "AT": 0.05})
    summary[0]["avg_acc_sd"] = summary[0]["worst_group_acc_sd"] = 0.05  # ± 0.05 would pass 1
    fig = figures.comparison_figure(summary)
    methods = sorted((t for t in fig.data if t.mode == "markers"), key=lambda t: t.legendrank)
    assert [t.name for t in methods] == ["ERM", "LS", "AT"]
    for t in methods:
        for axis, value in ((t.error_x, t.x[0]), (t.error_y, t.y[0])):
            assert value - axis.arrayminus[0] >= 0 and value + axis.array[0] <= 1 + 1e-12
    erm = next(t for t in methods if t.name == "ERM")
    assert erm.error_x.array[0] == pytest.approx(0.01) and erm.error_x.arrayminus[0] == pytest.approx(0.05)
    assert erm.error_y.array[0] == pytest.approx(0.03) and erm.error_y.arrayminus[0] == pytest.approx(0.05)


def test_bad_inputs():
    good = _summary({"ERM": (0.8, 0.6)}, {"ERM": 0.01})
    with pytest.raises(TypeError, match="summary"):
        figures.comparison_figure("ERM")
    with pytest.raises(ValueError, match="avg_acc"):
        figures.comparison_figure([{**good[0], "avg_acc": math.nan}])
    with pytest.raises(ValueError, match="width"):
        figures.comparison_figure(good, width=10)
