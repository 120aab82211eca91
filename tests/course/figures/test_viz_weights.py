"""Lesson 01 figures (worst-case weights, robust loss against β) checked against the library and its closed
forms; the generic panels re-run their figure function when a control moves."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dro_course import figures
from dro_lab import worst_case_weights

LOSSES = torch.tensor([0.2, 1.5, 0.7, 3.0, 0.1])


def test_weights_figure_bars_are_the_weights_sorted_by_loss():
    q = worst_case_weights(LOSSES, divergence="kl", beta=2.0)
    fig = figures.weights_figure(LOSSES, {"kl": q})
    bar = fig.data[0]
    order = np.argsort(LOSSES.numpy())
    np.testing.assert_allclose(bar.y, q.numpy()[order])
    np.testing.assert_allclose(fig.data[-1].y, LOSSES.numpy()[order])


def test_weights_for_knobs_covers_the_four_sets_and_each_sums_to_one():
    ws = figures.weights_for_knobs(LOSSES, beta=1.0, radius=0.2, alpha=0.4)
    assert len(ws) == 4
    for q in ws.values():
        assert float(q.sum()) == pytest.approx(1.0, abs=1e-6)


def test_robust_value_figure_lies_between_mean_and_max_and_rises_with_beta():
    fig = figures.robust_value_figure(LOSSES, betas=[0.01, 0.1, 1, 10, 100])
    r = np.array(fig.data[0].y)
    assert np.all(np.diff(r) >= -1e-12)
    assert LOSSES.mean() - 1e-9 <= r.min() and r.max() <= LOSSES.max() + 1e-9
    # small-β end close to the mean, large-β end close to the max (log-mean-exp asymptotes)
    assert r[0] == pytest.approx(float(LOSSES.mean()), abs=0.02)
    assert r[-1] == pytest.approx(float(LOSSES.max()), abs=0.02)


def test_panel_re_renders_when_a_slider_moves():
    panels = pytest.importorskip("dro_course.panels")
    calls = []

    def figure_fn(beta, alpha):
        calls.append((beta, alpha))
        return figures.weights_figure(LOSSES, {"kl": worst_case_weights(LOSSES, divergence="kl", beta=beta)})

    beta_w, alpha_w = panels.beta_slider(1.0), panels.cvar_alpha_slider(0.2)
    box = panels.panel(figure_fn, {"beta": beta_w, "alpha": alpha_w}, title="t")
    assert box.children[0].children[1] is beta_w
    beta_w.value = 10.0
    assert calls[-1] == (10.0, 0.2)
    assert "β" in beta_w.description and "CVaR" in alpha_w.description


def test_weights_panel_and_run_panel_build():
    panels = pytest.importorskip("dro_course.panels")
    box = panels.weights_panel(LOSSES)
    sliders = box.children[0].children[1:]
    assert [s.description.split()[0] for s in sliders] == ["β", "r", "α"]
    ran = []
    panel = panels.run_panel(lambda beta: ran.append(beta), {"beta": panels.beta_slider(3.0)})
    button = panel.children[0].children[-1]
    button.click()
    assert ran == [3.0]


def test_duality_curves_figure_points_solve_the_ball_and_stop_before_the_point_mass():
    ell = LOSSES.double().numpy()
    n = len(ell)
    fig = figures.duality_curves_figure(ell, radius=0.2, n_points=12)
    kl, chi2, marker = fig.data
    assert max(kl.x) == pytest.approx(0.98 * np.log(n)) and max(chi2.x) == pytest.approx(0.98 * (n - 1))
    for r, b in zip(kl.x, kl.y):  # KL(softmax(β ℓ) ‖ uniform) = r, in numpy
        q = np.exp(b * (ell - ell.max()))
        q /= q.sum()
        assert np.sum(q * np.log(q * n)) == pytest.approx(r, rel=1e-6)
    assert marker.x[0] == 0.2 and "β" in marker.name
