"""Figure builders are pure: their data are checked against the library's math and numpy; the
widget panels are checked to re-run their figure function when a control moves."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from dro_lab import viz, worst_case_weights

LOSSES = torch.tensor([0.2, 1.5, 0.7, 3.0, 0.1])


def test_library_imports_without_plotly_or_ipywidgets():
    code = (
        "import sys, dro_lab\n"
        "import dro_lab.robust, dro_lab.train, dro_lab.data, dro_lab.models, dro_lab.metrics, dro_lab.bench\n"
        "import dro_lab.course, dro_lab.cli\n"
        "[getattr(dro_lab, n) for n in dro_lab.__all__]\n"
        "bad = [m for m in ('plotly', 'ipywidgets') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_weights_figure_bars_are_the_weights_sorted_by_loss():
    q = worst_case_weights(LOSSES, divergence="kl", beta=2.0)
    fig = viz.weights_figure(LOSSES, {"kl": q})
    bar = fig.data[0]
    order = np.argsort(LOSSES.numpy())
    np.testing.assert_allclose(bar.y, q.numpy()[order])
    np.testing.assert_allclose(fig.data[-1].y, LOSSES.numpy()[order])


def test_weights_for_knobs_covers_the_four_sets_and_each_sums_to_one():
    ws = viz.weights_for_knobs(LOSSES, beta=1.0, radius=0.2, alpha=0.4)
    assert len(ws) == 4
    for q in ws.values():
        assert float(q.sum()) == pytest.approx(1.0, abs=1e-6)


def test_robust_value_figure_lies_between_mean_and_max_and_rises_with_beta():
    fig = viz.robust_value_figure(LOSSES, betas=[0.01, 0.1, 1, 10, 100])
    r = np.array(fig.data[0].y)
    assert np.all(np.diff(r) >= -1e-12)
    assert LOSSES.mean() - 1e-9 <= r.min() and r.max() <= LOSSES.max() + 1e-9
    # small-β end close to the mean, large-β end close to the max (log-mean-exp asymptotes)
    assert r[0] == pytest.approx(float(LOSSES.mean()), abs=0.02)
    assert r[-1] == pytest.approx(float(LOSSES.max()), abs=0.02)


def test_tradeoff_figure_error_bars_are_the_seed_std():
    rows = [{"method": "kl", "beta": b, "seed": s, "accuracy": 0.8 + 0.01 * s, "worst_group_accuracy": 0.5 + b / 100}
            for b in (1, 10) for s in range(3)]
    rows += [{"method": "erm", "beta": 0, "seed": s, "accuracy": 0.9, "worst_group_accuracy": 0.4} for s in range(3)]
    fig = viz.tradeoff_figure(rows)
    kl_acc = next(t for t in fig.data if t.name == "kl: accuracy")
    np.testing.assert_allclose(kl_acc.error_y.array, [np.std([0.8, 0.81, 0.82], ddof=1)] * 2)
    np.testing.assert_allclose(kl_acc.y, [0.81, 0.81])


def test_decision_boundary_figure_validates_and_draws_one_contour_per_model():
    torch.manual_seed(0)
    models = {"a": torch.nn.Linear(2, 2), "b": torch.nn.Linear(2, 2)}
    x, y = torch.randn(30, 2), torch.randint(0, 2, (30,))
    fig = viz.decision_boundary_figure(models, x, y, groups=(torch.arange(30) < 5).long(), resolution=20)
    assert sum(t.type == "contour" for t in fig.data) == 2
    with pytest.raises(ValueError, match="2-D"):
        viz.decision_boundary_figure(models, torch.randn(5, 3), torch.zeros(5))


def test_history_figure_mean_band_over_seeds():
    class H:
        def __init__(self, v):
            self.v = v

        def __getitem__(self, k):
            return self.v

    fig = viz.history_figure({"erm": [H([0.1, 0.2]), H([0.3, 0.4])]}, "test_accuracy")
    np.testing.assert_allclose(fig.data[-1].y, [0.2, 0.3])


def test_panel_re_renders_when_a_slider_moves():
    widgets = pytest.importorskip("dro_lab.widgets")
    calls = []

    def figure_fn(beta, alpha):
        calls.append((beta, alpha))
        return viz.weights_figure(LOSSES, {"kl": worst_case_weights(LOSSES, divergence="kl", beta=beta)})

    beta_w, alpha_w = widgets.beta_slider(1.0), widgets.cvar_alpha_slider(0.2)
    box = widgets.panel(figure_fn, {"beta": beta_w, "alpha": alpha_w}, title="t")
    assert box.children[0].children[1] is beta_w
    beta_w.value = 10.0
    assert calls[-1] == (10.0, 0.2)
    assert "β" in beta_w.description and "CVaR" in alpha_w.description


def test_weights_panel_and_run_panel_build():
    widgets = pytest.importorskip("dro_lab.widgets")
    box = widgets.weights_panel(LOSSES)
    sliders = box.children[0].children[1:]
    assert [s.description.split()[0] for s in sliders] == ["β", "r", "α"]
    ran = []
    panel = widgets.run_panel(lambda beta: ran.append(beta), {"beta": widgets.beta_slider(3.0)})
    button = panel.children[0].children[-1]
    button.click()
    assert ran == [3.0]
