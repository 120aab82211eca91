"""Lesson 06, GI-LS: the shift field, transport cost, the regulariser's zero at 1 − α, images / cost / BO
figures, and the live toy panel (its γ calibration checked against `gils_shift`)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from dro_course import figures
from dro_lab import MLP, gils_shift


def test_shift_field_figure_draws_one_segment_per_point_per_setting():
    pts = np.array([[0.0, 0.0], [1.0, 2.0], [-1.0, 0.5]])
    shifted = {"α = 0": pts + 0.1, "α = 0.3": pts - 0.2}
    gx, gy = np.linspace(-2, 2, 5), np.linspace(-1, 3, 4)
    cmap = (np.meshgrid(gx, gy)[0] > 0).astype(int)
    fig = figures.shift_field_figure(pts, shifted, [0, 1, 1], grid=(gx, gy, cmap))
    segs = [t for t in fig.data if t.name.startswith("shift, ")]
    assert [t.name for t in segs] == ["shift, α = 0", "shift, α = 0.3"]
    for t, q in zip(segs, shifted.values()):
        assert sum(v is None for v in t.x) == len(pts)  # one segment per point
        xs = np.array([v for v in t.x if v is not None], dtype=float).reshape(-1, 2)
        np.testing.assert_allclose(xs[:, 0], pts[:, 0])
        np.testing.assert_allclose(xs[:, 1], q[:, 0])
    assert fig.data[0].type == "heatmap" and np.array(fig.data[0].z).shape == (4, 5)
    with pytest.raises(ValueError):
        figures.shift_field_figure(pts, {"bad": pts[:2]}, [0, 1, 1])


def test_transport_vs_gamma_lines_equal_inputs_and_bounds():
    g = np.array([1e-3, 1e-1, 1e1, 1e3])
    costs = {
        "α = 0": np.array([4.0, 3.0, 1.0, 0.01]),
        "α = 0.3": np.array([[5.0, 4.0, 2.0, 0.1], [3.0, 2.0, 1.0, 0.05]]),
    }
    fig = figures.transport_vs_gamma_figure(g, costs, bounds={"L₀/γ": 1 / g, "3L₀/γ": 3 / g})
    lines = {t.name: t for t in fig.data if t.mode and "lines" in t.mode}
    np.testing.assert_allclose(lines["α = 0"].y, costs["α = 0"])
    np.testing.assert_allclose(lines["α = 0.3"].y, costs["α = 0.3"].mean(0))
    np.testing.assert_allclose(lines["3L₀/γ"].y, 3 / g)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def test_regularizer_figure_marks_the_zero_at_one_minus_alpha():
    p = np.linspace(0.0, 1.0, 101)
    values = {f"α = {a}": figures.ls_regularizer_values(p, a, k=3) for a in (0.0, 0.2, 0.5)}
    for a, v in zip((0.0, 0.2, 0.5), values.values()):
        assert abs(p[np.argmin(v)] - (1 - a)) < 1e-9 and v.min() < 1e-12
    fig = figures.regularizer_figure(p, values)
    zeros = [t for t in fig.data if t.mode == "markers"]
    np.testing.assert_allclose([t.x[0] for t in zeros], [1.0, 0.8, 0.5])
    np.testing.assert_allclose([t.y[0] for t in zeros], 0.0, atol=1e-12)
    assert len(fig.layout.shapes) == 3
    lines = [t for t in fig.data if t.mode == "lines"]
    np.testing.assert_allclose(lines[1].y, values["α = 0.2"])
    w = np.array([[1.0, 2.0], [0.5, -1.0]])  # theta_f (k=2, d=2): ‖θ_fᵀ(p − ȳ)‖²
    d = np.array([0.7 - 0.9, 0.3 - 0.1])
    np.testing.assert_allclose(figures.ls_regularizer_values([0.7], 0.1, theta_f=w), [np.sum((d @ w) ** 2)])


def test_generated_images_rows_say_what_they_show():
    """Each row's title names what its heatmaps hold: x, then x_T (gain 1) or x + g·(x_T − x), then the (amplified)
    shift — checked on the figure's annotations against the data drawn in that row."""
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(3, 1, 5, 5, generator=gen)
    x_t = (x + 0.004 * torch.randn(3, 1, 5, 5, generator=gen)).clamp(0, 1)
    d = (x_t - x)[:, 0].numpy()
    for gain, middle, bottom in ((1.0, "generated x_T", "shift x_T − x"), (25.0, "x + 25·(x_T − x)", "25·(x_T − x)")):
        fig = figures.generated_images_figure(x, x_t, n=3, gain=gain)
        titles = [a.text for a in fig.layout.annotations]
        assert titles == ["original x", middle, bottom]
        np.testing.assert_allclose(np.array(fig.data[3].z), x[0, 0].numpy() + gain * d[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.array(fig.data[6].z), gain * d[0], rtol=1e-5, atol=1e-7)
        assert bottom.replace("shift ", "") == fig.layout.coloraxis2.colorbar.title.text
    auto = figures.generated_images_figure(x, x_t, n=3, gain="auto")
    g = float(re.match(r"x \+ (\d+)·", auto.layout.annotations[1].text).group(1))
    assert g > 1 and 0.2 <= g * np.abs(d).max() <= 0.6  # amplified to about 0.4, the factor named in the title
    assert all("generated x_T" not in a.text for a in auto.layout.annotations)
    with pytest.raises(ValueError):
        figures.generated_images_figure(x, x_t, gain=0.0)
    with pytest.raises(TypeError):
        figures.generated_images_figure(x, x_t, gain="big")


def test_generated_images_and_cost_and_bo_figures():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(8, 1, 6, 6, generator=gen)
    xs = x + 0.1 * torch.randn(8, 1, 6, 6, generator=gen)
    fig = figures.generated_images_figure(x, xs, n=4)
    assert len(fig.data) == 12
    np.testing.assert_allclose(np.array(fig.data[8].z), (xs - x)[0, 0].numpy(), rtol=1e-6, atol=1e-7)
    assert fig.layout.coloraxis2.cmid == 0.0

    T = np.array([0, 1, 5, 10])
    sec = np.array([[1.0, 1.4, 3.1, 5.9], [1.2, 1.4, 2.9, 6.1]])
    fig = figures.cost_vs_T_figure(T, sec)
    mean = sec.mean(0)
    np.testing.assert_allclose(fig.data[0].y, mean)
    assert list(fig.data[0].text) == [f"×{r:.2f}" for r in mean / mean[0]]
    slope, icpt = np.polyfit(T, mean, 1)
    np.testing.assert_allclose(fig.data[1].y[[0, -1]], [icpt, icpt + 10 * slope])

    vals = {"GP": [0.5, 0.7, 0.6, float("nan"), 0.8], "TPE": [0.6, 0.55, 0.65], "random": [0.4]}
    fig = figures.bo_progress_figure(vals)
    best = {t.legendgroup: np.array(t.y, dtype=float) for t in fig.data if t.mode == "lines"}
    np.testing.assert_allclose(best["GP"], [0.5, 0.7, 0.7, 0.7, 0.8])
    np.testing.assert_allclose(best["TPE"], np.maximum.accumulate(vals["TPE"]))
    assert len({t.marker.color for t in fig.data if t.mode == "markers"}) == 3


def _gils_toy():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(24, 2, generator=gen)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    torch.manual_seed(0)
    model = MLP(2, 2, hidden=(8,), activation="tanh")
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(100):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model, x, y


def _segments(box, name):
    t = next(t for t in box.figure.data if t.name == name)
    return np.array([v for v in t.x if v is not None], dtype=float)


def test_gils_toy_panel_alpha_moves_points_and_T0_means_no_shift():
    panels = pytest.importorskip("dro_course.panels")
    model, x, y = _gils_toy()
    box = panels.gils_toy_panel(model, x, y, alpha=0.3, gamma=0.1, eta=0.2, steps=10)
    assert set(box.sliders) == {"alpha", "T", "gamma"}
    assert box.sliders["alpha"].description == "α (label smoothing)" and box.sliders["T"].max == 30
    before = _segments(box, "shift, α = 0.30")
    box.sliders["alpha"].value = 0.0
    after = _segments(box, "shift, α = 0.00")
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, _segments(box, "shift, α = 0 (ADA/WRM)"), atol=1e-6)
    assert "β = 1/γ = 10" in box.readout.value and "realised ρ̂" in box.readout.value
    box.sliders["T"].value = 0
    seg = _segments(box, "shift, α = 0.00").reshape(-1, 2)
    np.testing.assert_allclose(seg[:, 0], seg[:, 1])  # x_T = x
    assert "ρ̂ = mean ½‖f(x_T) − f(x)‖² = 0<" in box.readout.value + "<"


def test_gils_toy_panel_target_radius_sets_gamma():
    panels = pytest.importorskip("dro_course.panels")
    model, x, y = _gils_toy()
    box = panels.gils_toy_panel(model, x, y, alpha=0.3, eta=0.2, steps=5, target_radius=0.2)
    assert set(box.sliders) == {"alpha", "T", "r"} and "beyond the paper" in box.readout.value
    gamma = float(re.search(r"γ = ([0-9.e+-]+)", box.readout.value).group(1))
    _, cost = gils_shift(model, x, y, alpha=0.3, gamma=gamma, eta=0.2, steps=5, clamp=None)
    assert float(cost.mean()) == pytest.approx(0.2, rel=0.05)
    g, rho = panels.gamma_for_radius(lambda g: 1.0 / g, 0.5)  # ρ̂ = 1/γ: r = 0.5 at γ = 2
    assert g == pytest.approx(2.0, rel=0.01) and rho == pytest.approx(0.5, rel=0.01)
