"""Lesson 05, DONE: the weights per class against a numpy softmax, the r(t) schedule, and the r panel."""

from __future__ import annotations

import numpy as np
import pytest

from dro_course import figures


def _softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max())
    return e / e.sum()


def test_done_weight_figure_boxes_are_log_scaled_weights_and_means_are_class_means():
    rng = np.random.default_rng(0)
    w, labels = rng.dirichlet(np.ones(30)), rng.integers(0, 3, 30)
    fig = figures.done_weight_figure(w, labels, class_names=["zero", "one", "two"])
    boxes = [t for t in fig.data if t.type == "box"]
    assert [b.name for b in boxes] == ["zero", "one", "two"]
    for c, b in enumerate(boxes):
        np.testing.assert_allclose(b.y, np.log10(w[labels == c] * 30))
    bar = fig.data[-1]
    assert bar.type == "bar" and list(bar.x) == ["zero", "one", "two"]
    np.testing.assert_allclose(bar.y, [np.mean(w[labels == c] * 30) for c in range(3)])
    dashed = [s for s in fig.layout.shapes if s.line.dash == "dash"]
    assert sorted(s.y0 for s in dashed) == [0.0, 1.0]
    scat = figures.done_weight_figure(w, labels, class_accuracy=[0.3, 0.5, 0.7]).data[-1]
    assert scat.type == "scatter" and list(scat.x) == [0.3, 0.5, 0.7]
    np.testing.assert_allclose(scat.y, bar.y)
    s = figures.done_weight_stats(w)
    assert s["ess"] == pytest.approx(1 / np.sum(w**2)) and s["max_scaled"] == pytest.approx(w.max() * 30)
    with pytest.raises(ValueError, match="same length"):
        figures.done_weight_figure(w, labels[:-1])


def test_r_schedule_figure_stacks_r_lr_and_metrics():
    t = np.arange(1, 7)
    r = [10, 10, 1, 1, 0.1, 0.1]
    sa = np.array([[0.5, 0.6, 0.7, 0.7, 0.8, 0.8], [0.6, 0.6, 0.7, 0.8, 0.8, 0.9]])
    fig = figures.r_schedule_figure(
        t, r, lr_values=np.linspace(0.1, 0.0, 6), metrics={"test SA": sa, "ESS": np.ones(6)}
    )
    by = {t_.name: t_ for t_ in fig.data}
    np.testing.assert_allclose(by["r(t)"].y, r)
    assert fig.layout.yaxis.type == "log" and by["learning rate"].yaxis == "y2"
    np.testing.assert_allclose(by["test SA"].y, sa.mean(0))
    assert by["ESS"].yaxis == "y3" and "test SA ± std" in by
    only_r = figures.r_schedule_figure(t, r)
    assert len(only_r.data) == 1
    with pytest.raises(ValueError, match="one value per epoch"):
        figures.r_schedule_figure(t, r[:3])


def test_done_r_panel_slider_moves_weights_and_ess_against_numpy_softmax():
    panels = pytest.importorskip("dro_course.panels")
    rng = np.random.default_rng(4)
    losses, labels = rng.gamma(2.0, 1.0, 32), rng.integers(0, 4, 32)
    box = panels.done_r_panel(losses, labels, r=10.0)
    r_w = box.sliders["r"]
    assert r_w.description == "r (DONE temperature, loss units)"
    assert r_w.min == -1.3 and r_w.max == 2 and 0.05 <= 10**r_w.min < 0.051
    before = np.array(box.figure.data[-1].y)
    for r in (10.0, 0.2):
        r_w.value = r
        w = _softmax(losses / r)
        assert box.readout.value == (
            f"ESS = 1/Σω² = {1 / np.sum(w**2):.1f} of |B| = 32; max ω·|B| = {w.max() * 32:.3g}"
        )
        np.testing.assert_allclose(box.figure.data[-1].y, [np.mean(w[labels == c] * 32) for c in range(4)])
        np.testing.assert_allclose(box.figure.data[0].y, np.log10(w[labels == 0] * 32))
    assert not np.allclose(before, box.figure.data[-1].y)


def test_done_weight_figure_labels_of_nearby_classes_take_different_sides_and_the_title_clears_the_panels():
    labels = np.repeat(np.arange(4), 5)
    w = np.empty(20)
    acc = [0.90, 0.905, 0.2, 0.901]  # classes 0, 1 and 3 sit on one spot: their labels must not share a side
    for c in range(4):  # the same class mean for 0, 1 and 3
        w[labels == c] = 0.05 if c != 2 else 0.1
    fig = figures.done_weight_figure(w / w.sum(), labels, class_accuracy=acc)
    scat = fig.data[-1]
    pos = list(scat.textposition)
    for i in range(4):  # brute force: every pair of points close in both coordinates has distinct label sides
        for j in range(i):
            if abs(acc[i] - acc[j]) < 0.05 and abs(scat.y[i] - scat.y[j]) < 0.01:
                assert pos[i] != pos[j], pos
    assert fig.layout.margin.t >= 90 and fig.layout.title.y > 0.9
