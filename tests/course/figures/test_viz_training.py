"""Training-result figures: seed means and sample standard deviations written out with numpy, decision
boundaries, method sweeps and average against worst-group."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dro_course import figures


def test_tradeoff_figure_error_bars_are_the_seed_std():
    rows = [
        {"method": "kl", "beta": b, "seed": s, "accuracy": 0.8 + 0.01 * s, "worst_group_accuracy": 0.5 + b / 100}
        for b in (1, 10)
        for s in range(3)
    ]
    rows += [{"method": "erm", "beta": 0, "seed": s, "accuracy": 0.9, "worst_group_accuracy": 0.4} for s in range(3)]
    fig = figures.tradeoff_figure(rows)
    kl_acc = next(t for t in fig.data if t.name == "kl: accuracy")
    np.testing.assert_allclose(kl_acc.error_y.array, [np.std([0.8, 0.81, 0.82], ddof=1)] * 2)
    np.testing.assert_allclose(kl_acc.y, [0.81, 0.81])


def test_decision_boundary_figure_validates_and_draws_one_contour_per_model():
    torch.manual_seed(0)
    models = {"a": torch.nn.Linear(2, 2), "b": torch.nn.Linear(2, 2)}
    x, y = torch.randn(30, 2), torch.randint(0, 2, (30,))
    fig = figures.decision_boundary_figure(models, x, y, groups=(torch.arange(30) < 5).long(), resolution=20)
    assert sum(t.type == "contour" for t in fig.data) == 2
    with pytest.raises(ValueError, match="2-D"):
        figures.decision_boundary_figure(models, torch.randn(5, 3), torch.zeros(5))


def test_history_figure_mean_band_over_seeds():
    class H:
        def __init__(self, v):
            self.v = v

        def __getitem__(self, k):
            return self.v

    fig = figures.history_figure({"erm": [H([0.1, 0.2]), H([0.3, 0.4])]}, "test_accuracy")
    np.testing.assert_allclose(fig.data[-1].y, [0.2, 0.3])


class _Hist:
    """A stand-in for dro_lab.History: h[metric] is the per-epoch column."""

    def __init__(self, **columns):
        self.columns = columns

    def __getitem__(self, key):
        return self.columns[key]


def test_history_curves_stacks_runs_and_picks_a_class():
    hs = [
        _Hist(acc=[0.1, 0.2, 0.3], per_class=[[0.0, 1.0], [0.5, 0.25], [1.0, 0.75]]),
        _Hist(acc=[0.4, 0.5, 0.6], per_class=[[0.1, 0.9], [0.2, 0.8], [0.3, 0.7]]),
    ]
    np.testing.assert_allclose(figures.history_curves(hs, "acc"), [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    np.testing.assert_allclose(figures.history_curves(hs, "per_class", index=1), [[1.0, 0.25, 0.75], [0.9, 0.8, 0.7]])
    with pytest.raises(ValueError, match="equal length"):
        figures.history_curves([_Hist(acc=[1, 2]), _Hist(acc=[1])], "acc")


def test_curves_figure_mean_and_band_are_the_seed_mean_and_sample_std():
    rng = np.random.default_rng(0)
    erm, dro = rng.random((4, 6)), rng.random((4, 6))
    fig = figures.curves_figure({"ERM": erm, "β=10": dro}, colors={"ERM": "blue", "β=10": "red"}, reference={"u": 0.5})
    lines = {t.name: t for t in fig.data if t.fill is None}
    bands = {t.legendgroup: t for t in fig.data if t.fill == "toself"}
    np.testing.assert_allclose(lines["ERM"].y, erm.mean(0))
    np.testing.assert_allclose(lines["β=10"].x, np.arange(1, 7))
    upper = np.asarray(bands["β=10"].y)[:6]
    lower = np.asarray(bands["β=10"].y)[6:][::-1]
    sd = np.sqrt(((dro - dro.mean(0)) ** 2).sum(0) / 3)  # sample std (ddof=1), written out
    np.testing.assert_allclose(upper, dro.mean(0) + sd)
    np.testing.assert_allclose(lower, dro.mean(0) - sd)
    assert lines["ERM"].line.color == "blue" and lines["β=10"].line.color == "red"
    assert any(s.y0 == 0.5 for s in fig.layout.shapes)
    # one run: a line, no band
    single = figures.curves_figure({"ERM": erm[0]})
    assert len(single.data) == 1 and single.data[0].fill is None


def test_curves_grid_figure_one_legend_entry_per_method():
    rng = np.random.default_rng(1)
    panels = {p: {"ERM": rng.random((3, 5)), "β=10": rng.random((3, 5))} for p in ("a", "b", "c", "d")}
    fig = figures.curves_grid_figure(panels, colors={"ERM": "blue"})
    lines = [t for t in fig.data if t.fill is None]
    assert len(lines) == 8
    assert sum(bool(t.showlegend) for t in lines) == 2
    d_erm = next(t for t in lines if t.name == "ERM" and t.xaxis == "x4")
    np.testing.assert_allclose(d_erm.y, panels["d"]["ERM"].mean(0))
    assert [a.text for a in fig.layout.annotations] == ["a", "b", "c", "d"]


def test_method_sweep_figure_mean_band_and_paper_markers():
    rng = np.random.default_rng(2)
    x = [1, 10, 100]
    also, adam = rng.random((3, 3)), rng.random((4, 3))
    fig = figures.method_sweep_figure(
        x, {"ALSO": also, "Adam": adam}, x_title="uc", y_title="F1", log_x=True, paper={"ALSO": [0.5, 0.6, 0.7]}
    )
    by = {t.name: t for t in fig.data}
    np.testing.assert_allclose(by["ALSO"].y, also.mean(0))
    sd = np.sqrt(((adam - adam.mean(0)) ** 2).sum(0) / 3)
    np.testing.assert_allclose(np.asarray(by["Adam ± std"].y)[:3], adam.mean(0) + sd)
    assert by["ALSO (paper)"].mode == "markers" and list(by["ALSO (paper)"].y) == [0.5, 0.6, 0.7]
    assert by["ALSO (paper)"].marker.color == by["ALSO"].line.color
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis.title.text == "uc"
    with pytest.raises(ValueError, match="len"):
        figures.method_sweep_figure(x, {"ALSO": rng.random((2, 4))}, x_title="uc", y_title="F1")


def test_method_tradeoff_figure_points_are_seed_means_with_std_bars_and_cost_sizes():
    avg = {"ALSO": [0.90, 0.80, 0.85], "Adam": [0.95]}
    worst = {"ALSO": [0.60, 0.70, 0.65], "Adam": [0.30]}
    fig = figures.method_tradeoff_figure(avg, worst, cost={"ALSO": 2.0, "Adam": 1.0})
    also, adam = fig.data
    assert also.x[0] == pytest.approx(0.85) and also.y[0] == pytest.approx(0.65)
    assert also.error_x.array[0] == pytest.approx(np.std(avg["ALSO"], ddof=1))
    assert also.error_y.array[0] == pytest.approx(np.std(worst["ALSO"], ddof=1))
    assert adam.error_x.array[0] == 0.0
    assert also.marker.sizemode == "area" and also.marker.size == 2 * adam.marker.size
    assert "2 s / epoch" in also.text[0]
    with pytest.raises(ValueError, match="same methods"):
        figures.method_tradeoff_figure({"a": [1.0]}, {"b": [1.0]})
