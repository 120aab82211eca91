"""Lesson 04: the bilinear game's paths, π* against the closed form π̂·exp(βL) / Σ, π over training, and the
panels that redraw them in place."""

from __future__ import annotations

import numpy as np
import pytest

from dro_course import figures
from dro_lab import bilinear_game_path


def _bilinear_paths(lr=0.1, steps=300):
    return {a: bilinear_game_path(lr=lr, alpha=a, steps=steps).numpy() for a in (0.0, 1.0)}


def _softmax_prior(losses, prior, beta):
    """Closed form π* ∝ π̂ exp(β L), shifted by max(β L) so large β does not overflow."""
    z = np.log(prior) + beta * np.asarray(losses)
    e = np.exp(z - z.max())
    return e / e.sum()


def test_bilinear_figure_marks_saddle_and_start_and_animates_at_most_60_frames():
    paths = _bilinear_paths()
    fig = figures.bilinear_figure({"α = 0": paths[0.0], "α = 1": paths[1.0]}, animate=True)
    names = [t.name for t in fig.data]
    assert "saddle (0, 0)" in names and "start z₀" in names
    saddle = fig.data[names.index("saddle (0, 0)")]
    assert (saddle.x[0], saddle.y[0]) == (0.0, 0.0)
    start = fig.data[names.index("start z₀")]
    np.testing.assert_allclose(start.x, [1.0, 1.0]) and np.testing.assert_allclose(start.y, [1.0, 1.0])
    norm0, norm1 = (float(np.hypot(*paths[a][-1])) for a in (0.0, 1.0))
    assert norm0 > 1.0 > norm1  # descent–ascent spirals out, Popov spirals in
    assert f"{norm0:.3g}" in names[0] and f"{norm1:.3g}" in names[2]
    assert 2 <= len(fig.frames) <= 60
    assert fig.frames[0].name == "0" and fig.frames[-1].name == "300"
    np.testing.assert_allclose(fig.frames[-1].data[2].x, paths[1.0][:, 0])  # α = 1 trail, last frame
    np.testing.assert_allclose(fig.frames[0].data[1].x, [1.0])  # α = 0 iterate at t = 0
    assert [b.label for b in fig.layout.updatemenus[0].buttons][0].endswith("play")
    assert len(fig.layout.sliders[0].steps) == len(fig.frames)
    _assert_every_drawn_point_in_view(fig)


def _assert_every_drawn_point_in_view(fig):
    """Every point of every trace, and of every animation frame, lies inside the square view."""
    (x_low, x_high), (y_low, y_high) = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert (x_low, x_high) == (y_low, y_high) == (-x_high, x_high)
    traces = list(fig.data) + [t for frame in fig.frames for t in frame.data]
    for trace in traces:
        x, y = np.asarray(trace.x, dtype=float), np.asarray(trace.y, dtype=float)
        assert np.isfinite(x).all() and np.isfinite(y).all()
        assert (np.abs(x) <= x_high).all() and (np.abs(y) <= y_high).all(), trace.name


def test_bilinear_figure_shows_the_whole_outward_spiral():
    """The lesson's figure: 300 steps of γ = 0.1 take descent–ascent to ‖z‖ ≈ 6.3; all of it is drawn, in view."""
    paths = _bilinear_paths()
    fig = figures.bilinear_figure({"α = 0": paths[0.0], "α = 1": paths[1.0]}, animate=True)
    assert len(fig.data[0].x) == len(paths[0.0])  # the whole path is drawn
    assert fig.layout.xaxis.range[1] >= np.abs(paths[0.0]).max()
    assert fig.layout.xaxis.range[1] <= 1.1 * np.abs(paths[0.0]).max()  # and the view is no wider than it needs
    _assert_every_drawn_point_in_view(fig)
    assert "drawn to step" not in fig.data[0].name


@pytest.mark.parametrize("lr", [0.05, 0.1, 0.3, 0.5])
def test_bilinear_figure_view_contains_every_drawn_point(lr):
    paths = _bilinear_paths(lr=lr)  # at γ = 0.3 descent–ascent reaches ‖z‖ ~ 6e5
    fig = figures.bilinear_figure({"gda": paths[0.0], "optimistic": paths[1.0]}, animate=True)
    _assert_every_drawn_point_in_view(fig)
    half = fig.layout.xaxis.range[1]
    assert half >= 1.5 * np.abs(paths[1.0]).max() - 1e-12  # the converging path has room
    assert half <= 1.05 * 10 * 1.5 * np.abs(paths[1.0]).max() + 1e-9  # an exploding path is cut, not followed
    drawn = len(fig.data[0].x)
    if drawn < len(paths[0.0]):
        assert f"drawn to step {drawn - 1}" in fig.data[0].name
        np.testing.assert_allclose(fig.data[0].x, paths[0.0][:drawn, 0])
    with pytest.raises(ValueError, match=r"\(T, 2\)"):
        figures.bilinear_figure({"bad": np.zeros((5, 3))})


def test_saddle_distance_figure_draws_each_run_on_a_log_axis_in_its_own_colour():
    distances = {f"α = {a}": np.geomspace(2.0, 1e-6 * (k + 1), 50) for k, a in enumerate((0, 0.5, 1))}
    fig = figures.saddle_distance_figure(distances, title="t")
    assert fig.layout.yaxis.type == "log" and fig.layout.title.text == "t"
    assert [t.name for t in fig.data] == list(distances)
    for trace, d in zip(fig.data, distances.values()):
        np.testing.assert_allclose(trace.y, d)
        np.testing.assert_array_equal(trace.x, np.arange(1, 51))
    assert len({t.line.color for t in fig.data}) == 3 and len({t.line.dash for t in fig.data}) == 3
    with pytest.raises(ValueError, match="distances"):
        figures.saddle_distance_figure({"a": [1.0, -1.0]})


def test_pi_star_figure_runs_from_the_prior_to_the_worst_group_against_the_closed_form():
    losses, prior = np.array([0.2, 1.0, 0.5]), np.array([0.5, 0.3, 0.2])
    betas = [1e-4, 0.3, 3.0, 1e3]
    fig = figures.pi_star_figure(losses, prior, betas)
    lines = [t for t in fig.data if t.name.startswith("π*")]
    assert len(lines) == 3
    pis = np.stack([np.asarray(t.y) for t in lines], 1)  # (len(betas), groups)
    np.testing.assert_allclose(pis, [_softmax_prior(losses, prior, b) for b in betas], atol=1e-9)
    np.testing.assert_allclose(pis[0], prior, atol=1e-3)  # β → 0: the prior
    assert np.argmax(pis[-1]) == np.argmax(losses) and pis[-1].max() > 0.99
    kl = next(t for t in fig.data if t.name.startswith("r ="))
    expected = [float(np.sum(q * np.log(np.maximum(q, 1e-300) / prior))) for q in pis]
    np.testing.assert_allclose(kl.y, expected, atol=1e-9)
    assert kl.yaxis == "y2" and fig.layout.xaxis.type == "log"
    with pytest.raises(ValueError, match="betas"):
        figures.pi_star_figure(losses, prior, [0.0, 1.0])


def test_pi_trajectory_figure_shows_the_top_groups_and_sums_the_others():
    rng = np.random.default_rng(0)
    pi = rng.dirichlet(np.ones(12), size=25)
    prior = np.arange(1, 13, dtype=float)
    fig = figures.pi_trajectory_figure(
        pi, prior=prior, kl=np.linspace(0, 1, 25), top=4, labels=[f"c{j}" for j in range(12)]
    )
    lines = [t for t in fig.data if t.name.startswith("π: ")]
    assert len(lines) == 5 and lines[-1].name.startswith("π: others (8")
    top = sorted(np.argsort(-pi[-1])[:4])
    assert [t.name for t in lines[:4]] == [f"π: c{j}" for j in top]
    shown = np.sum([np.asarray(t.y) for t in lines[:4]], 0)
    np.testing.assert_allclose(lines[-1].y, 1.0 - shown, atol=1e-12)
    levels = [t for t in fig.data if t.name.startswith("prior")]
    np.testing.assert_allclose([t.y[0] for t in levels[:4]], prior[top] / prior.sum())
    assert all(t.line.dash == "dash" for t in levels)
    kl = next(t for t in fig.data if t.name.startswith("r_t"))
    assert kl.yaxis == "y2"
    few = figures.pi_trajectory_figure(pi[:, :3] / pi[:, :3].sum(1, keepdims=True))
    assert len(few.data) == 3 and not any("others" in t.name for t in few.data)
    with pytest.raises(ValueError, match="kl"):
        figures.pi_trajectory_figure(pi, kl=[0.0])


def test_bilinear_panel_sliders_move_the_paths_and_the_readout():
    panels = pytest.importorskip("dro_course.panels")
    box = panels.bilinear_panel(lr=0.1, alpha=1.0, steps=300)
    a_w, lr_w = box.sliders["alpha"], box.sliders["lr"]
    assert box.children[0].children[1:3] == (a_w, lr_w)
    assert a_w.description == "α (optimism)" and (a_w.min, a_w.max) == (0.0, 2.0)
    assert lr_w.description == "γ (step size)" and (lr_w.min, lr_w.max) == (0.01, 0.5)
    before, trace = np.array(box.figure.data[2].x), box.figure.data[2]
    a_w.value = 0.5
    after = np.array(box.figure.data[2].x)
    assert box.figure.data[2] is trace  # redrawn in place
    assert before.shape != after.shape or not np.allclose(before, after)
    n = float(bilinear_game_path(lr=0.1, alpha=0.5, steps=300)[-1].norm())
    n0 = float(bilinear_game_path(lr=0.1, alpha=0.0, steps=300)[-1].norm())
    assert box.readout.value.startswith(f"‖z_T‖ = {n:.3g} (α = 0: {n0:.3g})")
    lr_w.value = 0.3
    assert f"{float(bilinear_game_path(lr=0.3, alpha=0.0, steps=300)[-1].norm()):.3g}" in box.readout.value


def test_tau_panel_bars_follow_beta_against_the_closed_form():
    panels = pytest.importorskip("dro_course.panels")
    losses, prior = np.array([0.2, 1.0, 0.5]), np.array([0.5, 0.3, 0.2])
    box = panels.tau_panel(losses, prior, beta=1.0)
    b_w = box.sliders["beta"]
    assert b_w.description == "β = 1/τ (robustness)" and (b_w.min, b_w.max) == (-2, 3)
    bars = {t.name: t for t in box.figure.data}
    np.testing.assert_allclose(bars["prior π̂"].y, prior)
    np.testing.assert_allclose(bars["π*(β)"].y, _softmax_prior(losses, prior, 1.0), atol=1e-9)
    b_w.value = 100.0
    q = _softmax_prior(losses, prior, 100.0)
    np.testing.assert_allclose(box.figure.data[1].y, q, atol=1e-9)
    r = float(np.sum(q * np.log(np.maximum(q, 1e-300) / prior)))
    assert box.readout.value == f"r = KL(π*‖π̂) = {r:.4f}, τ = 0.01"


def test_pi_run_panel_button_calls_simulate_with_the_slider_values():
    panels = pytest.importorskip("dro_course.panels")
    rng = np.random.default_rng(3)
    calls = []

    def simulate(*, beta, alpha):
        calls.append((beta, alpha))
        pi = rng.dirichlet(np.ones(3), size=6)
        return {"pi": pi, "kl": np.linspace(0.0, 0.25, 6), "labels": ["a", "b", "c"]}

    box = panels.pi_run_panel(simulate, beta=10.0, alpha=1.0)
    b_w, a_w = box.sliders["beta"], box.sliders["alpha"]
    assert b_w.description.startswith("β = 1/τ") and a_w.description == "α (optimism)"
    button = next(w for w in box.children[0].children if getattr(w, "description", "") == "Run")
    assert not calls and len(box.figure.data) == 0
    b_w.value, a_w.value = 1.0, 0.5
    button.click()
    assert calls == [(1.0, 0.5)]
    assert [t.name for t in box.figure.data] == ["π: a", "π: b", "π: c", "r_t = KL(π_t‖π̂)"]
    assert box.readout.value == "final r = KL(π_T‖π̂) = 0.2500"
    first = np.array(box.figure.data[0].y)
    a_w.value = 2.0
    button.click()
    assert calls[-1] == (1.0, 2.0) and not np.allclose(first, box.figure.data[0].y)
    assert "α = 2.00" in box.figure.layout.title.text
    more = {"pi": rng.dirichlet(np.ones(4), size=6), "prior": np.ones(4)}  # another shape: traces replaced
    box2 = panels.pi_run_panel(lambda *, beta, alpha: simulate(beta=beta, alpha=alpha) if alpha > 1 else more)
    run2 = next(w for w in box2.children[0].children if getattr(w, "description", "") == "Run")
    run2.click()
    box2.sliders["alpha"].value = 1.5
    run2.click()
    assert [t.name for t in box2.figure.data] == ["π: a", "π: b", "π: c", "r_t = KL(π_t‖π̂)"]
    assert all(t.line.dash is None for t in box2.figure.data[:3])


def test_pi_run_panel_computes_the_final_radius_when_simulate_gives_no_kl():
    panels = pytest.importorskip("dro_course.panels")
    pi = np.array([[0.25, 0.25, 0.5], [0.1, 0.2, 0.7]])
    prior = np.array([0.2, 0.3, 0.5])
    box = panels.pi_run_panel(lambda *, beta, alpha: {"pi": pi, "prior": prior})
    next(w for w in box.children[0].children if getattr(w, "description", "") == "Run").click()
    r = float(np.sum(pi[-1] * np.log(pi[-1] / prior)))
    assert box.readout.value == f"final r = KL(π_T‖π̂) = {r:.4f}"
    levels = [t for t in box.figure.data if t.name.startswith("prior")]
    np.testing.assert_allclose([t.y[0] for t in levels], prior)


def test_also_training_panel_trains_the_chosen_method_with_the_sliders_values():
    panels = pytest.importorskip("dro_course.panels")
    from dro_lab.experiments import train_arm
    from dro_lab.experiments.papers.also import ALSO_EXPERIMENT

    config = ALSO_EXPERIMENT.config("digits", "smoke", {"epochs": 3})
    splits = ALSO_EXPERIMENT.data("digits", 0, config)
    box = panels.also_training_panel(splits, config, pi_lr=1e-2, tau=0.1, alpha=0.0, device="cpu")
    menu = box.controls["method"]
    assert list(menu.options) == ["ERM (Adam)", "Static Weights", "ALSO"]
    assert [box.controls[k].description for k in ("pi_lr", "tau", "alpha")] == [
        "η_π (π's step)",
        "τ (β = 1/τ)",
        "α (optimism)",
    ]
    menu.value = "ALSO"
    box.button.click()
    _, curves, _ = train_arm(ALSO_EXPERIMENT, "ALSO", splits, config, device="cpu", pi_lr=1e-2, tau=0.1, alpha=0.0)
    loss, worst = box.figure.data
    assert list(worst.x) == [1, 2, 3]
    np.testing.assert_allclose(worst.y, curves["worst_class_accuracy"])
    menu.value = "Static Weights"  # a method without η_π, τ or α ignores those sliders
    box.button.click()
    _, curves, _ = train_arm(ALSO_EXPERIMENT, "Static Weights", splits, config, device="cpu")
    np.testing.assert_allclose(box.figure.data[1].y, curves["worst_class_accuracy"])
    assert "stopped" not in box.status.value


def test_reference_parts_figure_draws_each_part_in_its_panel_as_the_mean_over_seeds():
    from dro_course.figures.group_dro import reference_parts_figure
    from dro_lab.experiments import load_reference

    reference = load_reference("also")
    parts = {"uc = 10": reference.result("ratio 10"), "uc = 100": reference.result("ratio 100")}
    fig = reference_parts_figure(parts, "worst_class_accuracy", methods=["ERM (Adam)", "ALSO"])
    assert [a.text for a in fig.layout.annotations] == ["uc = 10: fashion-mnist, 10 seeds",
                                                       "uc = 100: fashion-mnist, 10 seeds"]  # fmt: skip
    for axis, result in (("x", parts["uc = 10"]), ("x2", parts["uc = 100"])):
        for method in ("ERM (Adam)", "ALSO"):
            line = next(t for t in fig.data if t.name == method and (t.xaxis or "x") == axis and t.mode == "lines"
                        and t.fill != "toself")  # fmt: skip
            runs = [r["curves"]["worst_class_accuracy"] for r in result.runs if r["method"] == method]
            np.testing.assert_allclose(line.y, 100 * np.mean(runs, axis=0))  # the mean over the seeds, in %
    assert sum(t.showlegend is not False for t in fig.data if t.fill != "toself") == 2  # one legend entry each
    second = {"uc = 10": parts["uc = 10"], "seeds 10-14": reference.result("ratio 100, second seed set")}
    with pytest.raises(ValueError, match=r"parts\['seeds 10-14'\] lacks methods \['ERM \(Adam\)'\]"):
        reference_parts_figure(second, "worst_class_accuracy", methods=["ERM (Adam)", "ALSO"])
    with pytest.raises(ValueError, match="two labels"):
        reference_parts_figure({"uc = 10": parts["uc = 10"]}, "worst_class_accuracy")
