"""Lesson 05, attacks: the 2-D attack toy (segments, ε-balls, the PGD panel), per-class robust accuracy and PGD
against AutoAttack, as seed means and sample standard deviations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dro_course import figures
from dro_lab import pgd_attack


def _toy_model_and_data(n=40, seed=0):
    """A fixed linear 2-class model on points in [−3, 3]²: logit₁ − logit₀ = 2·x₁ (boundary x₁ = 0)."""
    torch.manual_seed(seed)
    model = torch.nn.Linear(2, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[-1.0, 0.0], [1.0, 0.0]]))
        model.bias.zero_()
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g) * 6 - 3
    y = (x[:, 0] > 0).long()
    y[:4] = 1 - y[:4]  # a few mistakes: clean accuracy < 1
    return model, x, y


def test_attack_toy_figure_one_segment_per_adversarial_point_and_eps_balls():
    rng = np.random.default_rng(1)
    gx, gy = np.linspace(-3, 3, 7), np.linspace(-3, 3, 5)
    prob = rng.random((5, 7))
    pts, labels = rng.normal(size=(9, 2)), np.array([0, 1] * 4 + [0])
    adv = pts + 0.2
    fig = figures.attack_toy_figure(gx, gy, prob, pts, labels, adv, eps=0.2, norm="linf")
    by = {t.name: t for t in fig.data}
    np.testing.assert_allclose(by["P(class 1)"].z, prob)
    assert by["boundary P = 0.5"].contours.start == 0.5 == by["boundary P = 0.5"].contours.end
    seg = by["clean → adversarial"]
    assert len(seg.x) == 3 * 9 and sum(v is None for v in seg.x) == 9
    np.testing.assert_allclose(np.array(seg.x, dtype=float).reshape(9, 3)[:, :2], np.c_[pts[:, 0], adv[:, 0]])
    np.testing.assert_allclose(by["class 1 (adversarial)"].y, adv[labels == 1, 1])
    np.testing.assert_allclose(by["class 0 (clean)"].x, pts[labels == 0, 0])
    ball = by["ε-ball (L∞, ε = 0.2)"]
    assert sum(v is None for v in ball.x) == 5  # first 5 points
    square = np.array(ball.x[:5], dtype=float)
    np.testing.assert_allclose([square.min(), square.max()], [pts[0, 0] - 0.2, pts[0, 0] + 0.2])
    circle = figures.attack_toy_figure(gx, gy, prob, pts, labels, eps=0.5, norm="l2", n_balls=1).data[-1]
    r = np.hypot(np.array(circle.x[:-1], dtype=float) - pts[0, 0], np.array(circle.y[:-1], dtype=float) - pts[0, 1])
    np.testing.assert_allclose(r, 0.5)
    assert not any(t.name == "clean → adversarial" for t in figures.attack_toy_figure(gx, gy, prob, pts, labels).data)
    with pytest.raises(ValueError, match="grid_prob"):
        figures.attack_toy_figure(gx, gy, prob.T, pts, labels)


def test_per_class_robust_figure_bars_are_seed_means_and_the_worst_are_the_smallest():
    rng = np.random.default_rng(2)
    at, done = rng.random((3, 10)), rng.random((3, 10))
    fig = figures.per_class_robust_figure({"AT": at, "DONE": done}, paper={"DONE": np.linspace(0, 1, 10)})
    bars = {t.name: t for t in fig.data}
    np.testing.assert_allclose(bars["AT"].y, at.mean(0))
    np.testing.assert_allclose(bars["DONE"].error_y.array, done.std(0, ddof=1))
    worst = set(np.argsort(at.mean(0))[:3])
    assert {j for j, w in enumerate(bars["AT"].marker.line.width) if w > 0} == worst
    assert all(w == 0 for w in bars["DONE"].marker.line.width)
    assert {int(round((s.x0 + s.x1) / 2)) for s in fig.layout.shapes} == worst
    assert bars["DONE (paper)"].mode == "markers" and bars["DONE (paper)"].offsetgroup == "DONE"
    one = figures.per_class_robust_figure({"AT": at[0]}, class_names=list("abcdefghij"), highlight_worst=1)
    assert list(one.data[0].x) == list("abcdefghij") and len(one.layout.shapes) == 1
    with pytest.raises(ValueError, match="DONE"):
        figures.per_class_robust_figure({"AT": at, "DONE": done[:, :4]})


def test_attack_gap_figure_bars_are_seed_means_with_paper_markers():
    pgd = {"AT": [0.50, 0.52, 0.54], "DONE": [0.58]}
    aa = {"AT": [0.45, 0.47, 0.46], "DONE": [0.50]}
    fig = figures.attack_gap_figure(pgd, aa, paper={"DONE": (0.57, 0.49)})
    by = {t.name: t for t in fig.data}
    np.testing.assert_allclose(by["PGD-20 (ours)"].y, [0.52, 0.58])
    np.testing.assert_allclose(by["AutoAttack (ours)"].y, [0.46, 0.50])
    np.testing.assert_allclose(by["PGD-20 (ours)"].error_y.array, [np.std(pgd["AT"], ddof=1), 0.0])
    assert list(by["AutoAttack (ours)"].text) == ["gap 0.06", "gap 0.08"]
    assert list(by["PGD-20 (paper)"].x) == ["DONE"] and by["AutoAttack (paper)"].y == (0.49,)
    with pytest.raises(ValueError, match="same"):
        figures.attack_gap_figure({"AT": [0.5]}, {"DONE": [0.4]})


def test_attack_toy_panel_eps_zero_is_clean_and_larger_eps_moves_points():
    panels = pytest.importorskip("dro_course.panels")
    model, x, y = _toy_model_and_data()
    clean = float((model(x).argmax(1) == y).double().mean())
    box = panels.attack_toy_panel(model, x, y, eps=0.0, alpha=0.05, steps=10, grid=20)
    eps_w, a_w = box.sliders["eps"], box.sliders["alpha"]
    assert eps_w.description == "ε (attack radius)" and (eps_w.min, eps_w.max) == (0.0, 1.0)
    assert a_w.description == "α (attack step)" and a_w.min > 0
    by = {t.name: t for t in box.figure.data}
    assert by["P(class 1)"].z.shape == (20, 20)
    seg = np.array(by["clean → adversarial"].x, dtype=float).reshape(-1, 3)
    np.testing.assert_allclose(seg[:, 0], seg[:, 1])  # ε = 0: adversarial = clean
    assert box.readout.value == f"robust accuracy at ε = 0.00: {clean:.3f} (clean {clean:.3f})"
    trace = box.figure.data[2]
    eps_w.value = 0.5
    assert box.figure.data[2] is trace  # redrawn in place
    seg = np.array(box.figure.data[2].x, dtype=float).reshape(-1, 3)
    moved = np.abs(seg[:, 1] - seg[:, 0])
    assert moved.max() > 0.1 and moved.max() <= 0.5 + 1e-6
    x_adv = pgd_attack(
        model, x, y, eps=0.5, alpha=0.05, steps=10, clamp=None, generator=torch.Generator().manual_seed(0)
    )
    robust = float((model(x_adv).argmax(1) == y).double().mean())
    assert robust < clean
    assert box.readout.value == f"robust accuracy at ε = 0.50: {robust:.3f} (clean {clean:.3f})"
    assert "ε = 0.5" in [t.name for t in box.figure.data][-1]


def _result(finals: dict, *, preset="full", dataset="fashion-mnist"):
    """An ExperimentResult whose runs hold ``finals[method][seed] = {metric: value}``."""
    from dro_lab.experiments.result import ExperimentResult

    methods = list(finals)
    seeds = sorted(next(iter(finals.values())))
    runs = [{"method": m, "seed": s, "final": finals[m][s], "curves": {}} for m in methods for s in seeds]
    return ExperimentResult("done", "t", "p", dataset, preset, seeds, {}, methods, runs=runs)


def test_experiment_per_class_figure_bars_are_the_seed_means_in_percent_and_whiskers_stay_in_range():
    rng = np.random.default_rng(3)
    values = {m: rng.random((3, 4)) for m in ("AT", "DONE")}
    values["AT"][:, 2] = [0.0, 0.0, 0.06]  # a class near 0: its whisker must not go below 0
    finals = {m: {s: {f"class_{c}_robust_accuracy": values[m][s, c] for c in range(4)} for s in range(3)}
              for m in values}  # fmt: skip
    fig = figures.experiment_per_class_figure(_result(finals))
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.name for b in bars] == ["AT", "DONE"]
    for b in bars:
        mean = values[b.name].mean(0) * 100
        np.testing.assert_allclose(b.y, mean)
        std = values[b.name].std(0, ddof=1) * 100
        np.testing.assert_allclose(b.error_y.array, np.minimum(std, 100 - mean))
        np.testing.assert_allclose(b.error_y.arrayminus, np.minimum(std, mean))
        assert np.all(mean - np.asarray(b.error_y.arrayminus) >= -1e-12)
    assert list(bars[0].marker.line.width)[2] == 3  # AT's weakest class is outlined
    assert list(bars[0].x) == ["0", "1", "2", "3"]  # four classes: not Fashion-MNIST's ten names
    ten = {m: {s: {f"class_{c}_robust_accuracy": 0.5 for c in range(10)} for s in range(2)} for m in ("AT",)}
    assert list(figures.experiment_per_class_figure(_result(ten)).data[0].x)[:2] == ["T-shirt/top", "Trouser"]
    with pytest.raises(ValueError, match="per-class"):
        figures.experiment_per_class_figure(_result({"AT": {0: {"robust_accuracy": 0.5}}}))
    with pytest.raises(TypeError):
        figures.experiment_per_class_figure({"AT": values["AT"]})


def test_final_metric_beside_figure_shows_means_and_every_paired_seed_in_both_panels():
    ref_vals = {"AT": [0.5, 0.52, 0.48], "DONE": [0.47, 0.5, 0.46]}
    live_vals = {"AT": [0.1, 0.2], "DONE": [0.3, 0.25]}
    ref = _result({m: {s: {"robust_accuracy": v} for s, v in enumerate(vs)} for m, vs in ref_vals.items()})
    live = _result({m: {s: {"robust_accuracy": v} for s, v in enumerate(vs)} for m, vs in live_vals.items()},
                   preset="smoke", dataset="digits")  # fmt: skip
    fig = figures.final_metric_beside_figure(ref, live, "robust_accuracy")
    bars = [t for t in fig.data if t.type == "bar"]
    np.testing.assert_allclose(bars[0].y, [np.mean(ref_vals[m]) * 100 for m in ("AT", "DONE")])
    np.testing.assert_allclose(bars[1].y, [np.mean(live_vals[m]) * 100 for m in ("AT", "DONE")])
    assert bars[0].xaxis == "x" and bars[1].xaxis == "x2"
    seeds = [t for t in fig.data if t.type == "scatter"]
    assert len(seeds) == 3 + 2
    np.testing.assert_allclose(seeds[1].y, [ref_vals["AT"][1] * 100, ref_vals["DONE"][1] * 100])
    assert list(bars[0].marker.color) == list(bars[1].marker.color) and len(set(bars[0].marker.color)) == 2
    titles = [a.text for a in fig.layout.annotations]
    assert titles[0].startswith("Reference run<br>fashion-mnist, 3 seeds, full")  # two lines: no overlap
    assert "digits, 2 seeds, smoke" in titles[1]
    with pytest.raises(ValueError, match="unknown"):
        figures.final_metric_beside_figure(ref, live, "robust_accuracy", methods=["MAIL"])
    with pytest.raises(TypeError):
        figures.final_metric_beside_figure(ref, "live", "robust_accuracy")


def test_final_metric_beside_figure_keeps_an_all_zero_accuracy_axis_at_zero_and_the_title_off_the_panels():
    ref = _result({m: {s: {"tail": v} for s, v in enumerate([0.1, 0.3])} for m in ("AT", "DONE")})
    live = _result({m: {s: {"tail": 0.0} for s in range(2)} for m in ("AT", "DONE")}, preset="smoke")
    fig = figures.final_metric_beside_figure(ref, live, "tail")
    assert tuple(fig.layout.yaxis.range) == pytest.approx((0.0, 1.1 * 30 + 1))
    assert tuple(fig.layout.yaxis2.range) == (0.0, 1.0)  # not centred on 0, never below it
    assert fig.layout.margin.t >= 90 and fig.layout.title.y > 0.9


def test_attack_gap_figure_writes_the_gap_inside_the_bar_not_on_its_whisker():
    fig = figures.attack_gap_figure({"AT": [0.5, 0.52], "DONE": [0.48, 0.5]}, {"AT": [0.45, 0.46], "DONE": [0.4, 0.41]})
    aa = [t for t in fig.data if t.name == "AutoAttack (ours)"][0]
    assert aa.textposition == "inside" and list(aa.text) == ["gap 0.055", "gap 0.085"]


def test_final_metrics_figure_draws_each_metric_with_the_t_interval_of_its_mean():
    from scipy import stats

    vals = {"AT": [0.50, 0.52, 0.48, 0.55], "DONE": [0.47, 0.50, 0.46, 0.49]}
    tails = {"AT": [0.0, 0.1, 0.05, 0.0], "DONE": [0.1, 0.1, 0.2, 0.1]}  # AT's interval reaches below 0
    finals = {m: {s: {"ra": vals[m][s], "tail": tails[m][s]} for s in range(4)} for m in vals}
    fig = figures.final_metrics_figure(_result(finals), ["ra", "tail"], titles=["robust", "tail"])
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.xaxis for b in bars] == ["x", "x2"]
    for bar, source in zip(bars, (vals, tails)):
        for j, m in enumerate(("AT", "DONE")):
            v = np.asarray(source[m]) * 100  # an oracle: the t-interval of the mean, by hand
            half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
            assert bar.y[j] == pytest.approx(v.mean())
            assert bar.error_y.array[j] == pytest.approx(half)
            assert bar.error_y.arrayminus[j] == pytest.approx(min(half, v.mean()))  # not below 0 %
    seeds = [t for t in fig.data if t.type == "scatter"]
    assert len(seeds) == 2 * 4 and sum(t.showlegend for t in seeds) == 1  # every seed, paired, in each panel
    assert [a.text for a in fig.layout.annotations] == ["robust", "tail"]
    assert fig.layout.yaxis2.range[0] == 0.0 and fig.layout.yaxis2.range[1] >= max(
        b + e for b, e in zip(bars[1].y, bars[1].error_y.array)
    )  # the whiskers fit on the axis


def test_final_metric_beside_figure_calls_a_smoke_run_an_illustration():
    ref = _result({m: {s: {"ra": 0.5} for s in range(3)} for m in ("AT", "DONE")})
    live = _result({m: {s: {"ra": 0.2} for s in range(2)} for m in ("AT", "DONE")}, preset="smoke")
    titles = [a.text for a in figures.final_metric_beside_figure(ref, live, "ra").layout.annotations]
    assert titles[1].startswith("Your run (an illustration)<br>") and "(an illustration)" not in titles[0]
