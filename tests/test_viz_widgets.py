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


# --------------------------------------------------------------------------- lesson 02 builders


class _Hist:
    """A stand-in for dro_lab.History: h[metric] is the per-epoch column."""

    def __init__(self, **columns):
        self.columns = columns

    def __getitem__(self, key):
        return self.columns[key]


def test_history_curves_stacks_runs_and_picks_a_class():
    hs = [_Hist(acc=[0.1, 0.2, 0.3], per_class=[[0.0, 1.0], [0.5, 0.25], [1.0, 0.75]]),
          _Hist(acc=[0.4, 0.5, 0.6], per_class=[[0.1, 0.9], [0.2, 0.8], [0.3, 0.7]])]
    np.testing.assert_allclose(viz.history_curves(hs, "acc"), [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    np.testing.assert_allclose(viz.history_curves(hs, "per_class", index=1), [[1.0, 0.25, 0.75], [0.9, 0.8, 0.7]])
    with pytest.raises(ValueError, match="equal length"):
        viz.history_curves([_Hist(acc=[1, 2]), _Hist(acc=[1])], "acc")


def test_curves_figure_mean_and_band_are_the_seed_mean_and_sample_std():
    rng = np.random.default_rng(0)
    erm, dro = rng.random((4, 6)), rng.random((4, 6))
    fig = viz.curves_figure({"ERM": erm, "β=10": dro}, colors={"ERM": "blue", "β=10": "red"}, reference={"u": 0.5})
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
    single = viz.curves_figure({"ERM": erm[0]})
    assert len(single.data) == 1 and single.data[0].fill is None


def test_curves_grid_figure_one_legend_entry_per_method():
    rng = np.random.default_rng(1)
    panels = {p: {"ERM": rng.random((3, 5)), "β=10": rng.random((3, 5))} for p in ("a", "b", "c", "d")}
    fig = viz.curves_grid_figure(panels, colors={"ERM": "blue"})
    lines = [t for t in fig.data if t.fill is None]
    assert len(lines) == 8
    assert sum(bool(t.showlegend) for t in lines) == 2
    d_erm = next(t for t in lines if t.name == "ERM" and t.xaxis == "x4")
    np.testing.assert_allclose(d_erm.y, panels["d"]["ERM"].mean(0))
    assert [a.text for a in fig.layout.annotations] == ["a", "b", "c", "d"]


LABELS = torch.tensor([0, 1, 1, 2, 0])


def test_sampling_summary_against_numpy():
    q = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    s = viz.sampling_summary(torch.tensor(q), LABELS, minority=2, batch_size=16, num_classes=4)
    np.testing.assert_allclose(s["class_mass"], [0.35, 0.5, 0.15, 0.0])
    np.testing.assert_allclose(s["class_share"], [0.4, 0.4, 0.2, 0.0])
    assert s["minority_mass"] == pytest.approx(0.15) and s["minority_share"] == pytest.approx(0.2)
    assert s["minority_ratio"] == pytest.approx(0.75)
    assert s["expected_minority_draws"] == pytest.approx(2.4) and s["uniform_minority_draws"] == pytest.approx(3.2)
    assert s["ess"] == pytest.approx(1 / np.sum(q ** 2))
    with pytest.raises(ValueError, match="same length"):
        viz.sampling_summary(q[:3], LABELS)
    with pytest.raises(ValueError, match="minority"):
        viz.sampling_summary(q, LABELS, minority=7)


def test_sampling_figure_points_are_the_probabilities_by_class():
    q = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    fig = viz.sampling_figure(LOSSES, q, LABELS, minority=2, batch_size=8)
    by_name = {t.name: t for t in fig.data}
    minority = by_name["class 2 (minority)"]
    np.testing.assert_allclose(minority.x, [3.0]) and np.testing.assert_allclose(minority.y, [0.15])
    np.testing.assert_allclose(by_name["class 1"].y, [0.2, 0.3])
    np.testing.assert_allclose(by_name["uniform 1/n (ERM)"].y, [0.2, 0.2])
    bars = next(t for t in fig.data if t.type == "bar")
    np.testing.assert_allclose(bars.y, [0.35, 0.5, 0.15])
    assert "1.20" in fig.layout.title.text and "1.60" in fig.layout.title.text  # 8·0.15 vs 8·0.2


def test_hws_sampling_figure_uses_softmax_for_kl_and_a_distribution_for_chi2():
    beta = 3.0
    fig = viz.hws_sampling_figure(LOSSES, LABELS, beta=beta, divergence="kl", minority=2)
    bars = next(t for t in fig.data if t.type == "bar")
    e = np.exp(beta * LOSSES.double().numpy())
    softmax = e / e.sum()
    np.testing.assert_allclose(bars.y, [softmax[[0, 4]].sum(), softmax[[1, 2]].sum(), softmax[3]], rtol=1e-6)
    assert "KL" in fig.layout.title.text
    fig2 = viz.hws_sampling_figure(LOSSES, LABELS, beta=beta, divergence="chi2", minority=2)
    bars2 = next(t for t in fig2.data if t.type == "bar")
    assert sum(bars2.y) == pytest.approx(1.0) and "χ²" in fig2.layout.title.text


def test_age_survival_and_age_figure_against_the_geometric_tail():
    ages = np.array([0, 0, 1, 2, 2, 2, 5, -1])
    k, surv = viz.age_survival(ages)
    np.testing.assert_array_equal(k, np.arange(6))
    np.testing.assert_allclose(surv, [7 / 7, 5 / 7, 4 / 7, 1 / 7, 1 / 7, 1 / 7])
    q = np.array([0.5, 0.3, 0.2])
    fig = viz.age_figure({"x": (ages, q)}, batch_size=2)
    exact = next(t for t in fig.data if "Σ" in t.name)
    bound = next(t for t in fig.data if "bound" in t.name)
    kk = np.arange(6)
    np.testing.assert_allclose(exact.y, [np.mean([(1 - p) ** (2 * j) for p in q]) for j in kk])
    np.testing.assert_allclose(bound.y, 0.8 ** (2 * kk))
    assert np.all(np.asarray(exact.y) <= np.asarray(bound.y) + 1e-12)  # the bound holds entry-wise
    with pytest.raises(ValueError, match="never"):
        viz.age_survival([-1, -1])


def test_mc_error_figure_validates_shapes():
    fig = viz.mc_error_figure([1, 10, 100], {"with": [1.0, 0.3, 0.1]}, reference=[1.0, 0.316, 0.1])
    assert fig.layout.xaxis.type == "log" and len(fig.data) == 2
    with pytest.raises(ValueError, match="shape"):
        viz.mc_error_figure([1, 10], {"with": [1.0]})


def test_hws_panel_redraws_on_beta_and_divergence(monkeypatch):
    widgets = pytest.importorskip("dro_lab.widgets")
    calls = []

    def fake(losses, labels, *, beta, divergence, minority, batch_size):
        calls.append((beta, divergence, minority, batch_size))
        return None

    monkeypatch.setattr(viz, "hws_sampling_figure", fake)
    box = widgets.hws_panel(LOSSES, LABELS, minority=2, batch_size=16, beta=10.0)
    beta_w, div_w = box.children[0].children[1:3]
    assert "β" in beta_w.description and beta_w.min == -2 and beta_w.max == 3
    assert [v for _, v in div_w.options] == ["kl", "chi2"]
    beta_w.value = 0.5
    assert calls[-1] == (0.5, "kl", 2, 16)
    div_w.value = "chi2"
    assert calls[-1] == (0.5, "chi2", 2, 16)
    assert "2β" in box.children[0].children[-1].value


# --------------------------------------------------------------------------- lesson 03 builders


def _gram_and_grads(n=6, d=4, seed=0):
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(n, d)) * rng.uniform(0.1, 3.0, size=(n, 1))
    return G @ G.T, G


def test_is_mixture_endpoints_and_validation():
    g = np.array([1.0, 1.0, 2.0, 4.0])
    np.testing.assert_allclose(viz.is_mixture(g, 0.0), [0.25] * 4)
    np.testing.assert_allclose(viz.is_mixture(g, 1.0), g / g.sum())
    np.testing.assert_allclose(viz.is_mixture(g, 0.5), 0.5 * (0.25 + g / g.sum()))
    np.testing.assert_allclose(viz.is_mixture(np.zeros(3), 1.0), [1 / 3] * 3)
    with pytest.raises(ValueError, match="alpha"):
        viz.is_mixture(g, 1.5)


def test_is_estimator_stats_against_enumeration_and_closed_forms():
    K, G = _gram_and_grads()
    n = len(K)
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(n))
    for e, B in ((1.0, 1), (0.0, 3), (0.5, 5)):
        w = (1 / (n * p)) ** e
        X = w[:, None] * G                                     # the n possible one-draw estimates
        mean = p @ X
        var1 = p @ (X ** 2).sum(1) - mean @ mean
        s = viz.is_estimator_stats(K, p, weight_exponent=e, batch_size=B)
        assert s["variance"] == pytest.approx(var1 / B, rel=1e-10)
        assert s["bias_sq"] == pytest.approx(float(((mean - G.mean(0)) ** 2).sum()), abs=1e-10)
        assert s["mse"] == pytest.approx(s["variance"] + s["bias_sq"])
    g = np.linalg.norm(G, axis=1)
    s_gn = viz.is_estimator_stats(K, g / g.sum())              # H(p^GN)/N² = (Σg)²/N²
    assert s_gn["second_moment"] == pytest.approx(g.sum() ** 2 / n ** 2)
    assert s_gn["bias_sq"] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="gram"):
        viz.is_estimator_stats(K[:3, :3], p)


def test_is_variance_figure_is_smallest_at_pgn_with_unbiased_weights_and_rho_rises():
    K, _ = _gram_and_grads()
    fig = viz.is_variance_figure(K, alpha=0.3, weight_exponent=1.0, batch_size=2)
    var = next(t for t in fig.data if t.name == "tr Var")
    assert np.argmin(var.y) == len(var.y) - 1                  # α = 1 is optimal
    assert np.all(np.diff(var.y) <= 1e-12)                     # S non-decreasing along the segment
    rho = next(t for t in fig.data if t.name == "ρ(p^(α))")
    assert rho.y[0] == pytest.approx(0.0, abs=1e-9) and rho.y[-1] == pytest.approx(1.0)
    bias = next(t for t in fig.data if t.name == "bias²")
    assert max(bias.y) < 1e-10
    fig0 = viz.is_variance_figure(K, alpha=0.8, weight_exponent=0.0)
    assert max(next(t for t in fig0.data if t.name == "bias²").y) > 1e-6   # forgotten weights: biased
    assert "ρ" in fig.layout.title.text


def test_is_cost_figure_bars_are_means_with_paper_markers():
    fig = viz.is_cost_figure({"u": {"SGD": [1.0, 3.0]}, "p^GN": {"SGD": [4.0, 6.0]}},
                             paper={"u": {"SGD": 26.5}, "p^GN": {"SGD": 53.0}})
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.y[0] for b in bars] == [2.0, 5.0]
    assert bars[0].error_y.array[0] == pytest.approx(np.std([1.0, 3.0], ddof=1))
    assert [t.y[0] for t in fig.data if t.type == "scatter"] == [26.5, 53.0]


def test_is_variance_panel_redraws_and_labels_its_sliders(monkeypatch):
    widgets = pytest.importorskip("dro_lab.widgets")
    calls = []

    def fake(gram, *, alpha, weight_exponent, batch_size):
        calls.append((alpha, weight_exponent, batch_size))
        return None

    monkeypatch.setattr(viz, "is_variance_figure", fake)
    K, _ = _gram_and_grads()
    box = widgets.is_variance_panel(K, alpha=0.5, batch_size=5)
    a_w, e_w = box.children[0].children[1:3]
    assert "uniform mixing" in a_w.description and "weight exponent" in e_w.description
    assert "β" not in a_w.description + e_w.description
    a_w.value = 0.9
    assert calls[-1] == (0.9, 1.0, 5)
    e_w.value = 0.0
    assert calls[-1] == (0.9, 0.0, 5)


# --------------------------------------------------------------------------- lesson 04 builders and panels


def _bilinear_paths(lr=0.1, steps=300):
    from dro_lab.optim import bilinear_game_path

    return {a: bilinear_game_path(lr=lr, alpha=a, steps=steps).numpy() for a in (0.0, 1.0)}


def _softmax_prior(losses, prior, beta):
    """Closed form π* ∝ π̂ exp(β L), shifted by max(β L) so large β does not overflow."""
    z = np.log(prior) + beta * np.asarray(losses)
    e = np.exp(z - z.max())
    return e / e.sum()


def test_bilinear_figure_marks_saddle_and_start_and_animates_at_most_60_frames():
    paths = _bilinear_paths()
    fig = viz.bilinear_figure({"α = 0": paths[0.0], "α = 1": paths[1.0]}, animate=True)
    names = [t.name for t in fig.data]
    assert "saddle (0, 0)" in names and "start z₀" in names
    saddle = fig.data[names.index("saddle (0, 0)")]
    assert (saddle.x[0], saddle.y[0]) == (0.0, 0.0)
    start = fig.data[names.index("start z₀")]
    np.testing.assert_allclose(start.x, [1.0, 1.0]) and np.testing.assert_allclose(start.y, [1.0, 1.0])
    norm0, norm1 = (float(np.hypot(*paths[a][-1])) for a in (0.0, 1.0))
    assert norm0 > 1.0 > norm1                                  # descent–ascent spirals out, Popov spirals in
    assert f"{norm0:.3g}" in names[0] and f"{norm1:.3g}" in names[2]
    assert 2 <= len(fig.frames) <= 60
    assert fig.frames[0].name == "0" and fig.frames[-1].name == "300"
    np.testing.assert_allclose(fig.frames[-1].data[2].x, paths[1.0][:, 0])    # α = 1 trail, last frame
    np.testing.assert_allclose(fig.frames[0].data[1].x, [1.0])                 # α = 0 iterate at t = 0
    assert [b.label for b in fig.layout.updatemenus[0].buttons][0].endswith("play")
    assert len(fig.layout.sliders[0].steps) == len(fig.frames)
    assert fig.layout.xaxis.range[1] == pytest.approx(1.5 * np.abs(paths[1.0]).max())


def test_bilinear_figure_keeps_the_view_on_the_converging_path():
    paths = _bilinear_paths(lr=0.3)                             # α = 0 reaches ‖z‖ ~ 6e5
    fig = viz.bilinear_figure({"gda": paths[0.0], "optimistic": paths[1.0]})
    half = fig.layout.xaxis.range[1]
    assert half == pytest.approx(1.5 * np.abs(paths[1.0]).max())
    assert np.abs(np.asarray(fig.data[0].x)).max() > half       # the diverging path leaves the frame
    assert np.isfinite(np.asarray(fig.data[0].x, dtype=float)).all() and not fig.frames
    with pytest.raises(ValueError, match=r"\(T, 2\)"):
        viz.bilinear_figure({"bad": np.zeros((5, 3))})


def test_pi_star_figure_runs_from_the_prior_to_the_worst_group_against_the_closed_form():
    losses, prior = np.array([0.2, 1.0, 0.5]), np.array([0.5, 0.3, 0.2])
    betas = [1e-4, 0.3, 3.0, 1e3]
    fig = viz.pi_star_figure(losses, prior, betas)
    lines = [t for t in fig.data if t.name.startswith("π*")]
    assert len(lines) == 3
    pis = np.stack([np.asarray(t.y) for t in lines], 1)         # (len(betas), groups)
    np.testing.assert_allclose(pis, [_softmax_prior(losses, prior, b) for b in betas], atol=1e-9)
    np.testing.assert_allclose(pis[0], prior, atol=1e-3)        # β → 0: the prior
    assert np.argmax(pis[-1]) == np.argmax(losses) and pis[-1].max() > 0.99
    kl = next(t for t in fig.data if t.name.startswith("r ="))
    expected = [float(np.sum(q * np.log(np.maximum(q, 1e-300) / prior))) for q in pis]
    np.testing.assert_allclose(kl.y, expected, atol=1e-9)
    assert kl.yaxis == "y2" and fig.layout.xaxis.type == "log"
    with pytest.raises(ValueError, match="betas"):
        viz.pi_star_figure(losses, prior, [0.0, 1.0])


def test_pi_trajectory_figure_shows_the_top_groups_and_sums_the_others():
    rng = np.random.default_rng(0)
    pi = rng.dirichlet(np.ones(12), size=25)
    prior = np.arange(1, 13, dtype=float)
    fig = viz.pi_trajectory_figure(pi, prior=prior, kl=np.linspace(0, 1, 25), top=4,
                                   labels=[f"c{j}" for j in range(12)])
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
    few = viz.pi_trajectory_figure(pi[:, :3] / pi[:, :3].sum(1, keepdims=True))
    assert len(few.data) == 3 and not any("others" in t.name for t in few.data)
    with pytest.raises(ValueError, match="kl"):
        viz.pi_trajectory_figure(pi, kl=[0.0])


def test_method_sweep_figure_mean_band_and_paper_markers():
    rng = np.random.default_rng(2)
    x = [1, 10, 100]
    also, adam = rng.random((3, 3)), rng.random((4, 3))
    fig = viz.method_sweep_figure(x, {"ALSO": also, "Adam": adam}, x_title="uc", y_title="F1", log_x=True,
                                  paper={"ALSO": [0.5, 0.6, 0.7]})
    by = {t.name: t for t in fig.data}
    np.testing.assert_allclose(by["ALSO"].y, also.mean(0))
    sd = np.sqrt(((adam - adam.mean(0)) ** 2).sum(0) / 3)
    np.testing.assert_allclose(np.asarray(by["Adam ± std"].y)[:3], adam.mean(0) + sd)
    assert by["ALSO (paper)"].mode == "markers" and list(by["ALSO (paper)"].y) == [0.5, 0.6, 0.7]
    assert by["ALSO (paper)"].marker.color == by["ALSO"].line.color
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis.title.text == "uc"
    with pytest.raises(ValueError, match="len"):
        viz.method_sweep_figure(x, {"ALSO": rng.random((2, 4))}, x_title="uc", y_title="F1")


def test_method_tradeoff_figure_points_are_seed_means_with_std_bars_and_cost_sizes():
    avg = {"ALSO": [0.90, 0.80, 0.85], "Adam": [0.95]}
    worst = {"ALSO": [0.60, 0.70, 0.65], "Adam": [0.30]}
    fig = viz.method_tradeoff_figure(avg, worst, cost={"ALSO": 2.0, "Adam": 1.0})
    also, adam = fig.data
    assert also.x[0] == pytest.approx(0.85) and also.y[0] == pytest.approx(0.65)
    assert also.error_x.array[0] == pytest.approx(np.std(avg["ALSO"], ddof=1))
    assert also.error_y.array[0] == pytest.approx(np.std(worst["ALSO"], ddof=1))
    assert adam.error_x.array[0] == 0.0
    assert also.marker.sizemode == "area" and also.marker.size == 2 * adam.marker.size
    assert "2 s / epoch" in also.text[0]
    with pytest.raises(ValueError, match="same methods"):
        viz.method_tradeoff_figure({"a": [1.0]}, {"b": [1.0]})


def test_bilinear_panel_sliders_move_the_paths_and_the_readout():
    widgets = pytest.importorskip("dro_lab.widgets")
    from dro_lab.optim import bilinear_game_path

    box = widgets.bilinear_panel(lr=0.1, alpha=1.0, steps=300)
    a_w, lr_w = box.sliders["alpha"], box.sliders["lr"]
    assert box.children[0].children[1:3] == (a_w, lr_w)
    assert a_w.description == "α (optimism)" and (a_w.min, a_w.max) == (0.0, 2.0)
    assert lr_w.description == "γ (step size)" and (lr_w.min, lr_w.max) == (0.01, 0.5)
    before, trace = np.array(box.figure.data[2].x), box.figure.data[2]
    a_w.value = 0.5
    after = np.array(box.figure.data[2].x)
    assert box.figure.data[2] is trace                          # redrawn in place
    assert before.shape != after.shape or not np.allclose(before, after)
    n = float(bilinear_game_path(lr=0.1, alpha=0.5, steps=300)[-1].norm())
    n0 = float(bilinear_game_path(lr=0.1, alpha=0.0, steps=300)[-1].norm())
    assert box.readout.value.startswith(f"‖z_T‖ = {n:.3g} (α = 0: {n0:.3g})")
    lr_w.value = 0.3
    assert f"{float(bilinear_game_path(lr=0.3, alpha=0.0, steps=300)[-1].norm()):.3g}" in box.readout.value


def test_tau_panel_bars_follow_beta_against_the_closed_form():
    widgets = pytest.importorskip("dro_lab.widgets")
    losses, prior = np.array([0.2, 1.0, 0.5]), np.array([0.5, 0.3, 0.2])
    box = widgets.tau_panel(losses, prior, beta=1.0)
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
    widgets = pytest.importorskip("dro_lab.widgets")
    rng = np.random.default_rng(3)
    calls = []

    def simulate(*, beta, alpha):
        calls.append((beta, alpha))
        pi = rng.dirichlet(np.ones(3), size=6)
        return {"pi": pi, "kl": np.linspace(0.0, 0.25, 6), "labels": ["a", "b", "c"]}

    box = widgets.pi_run_panel(simulate, beta=10.0, alpha=1.0)
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
    more = {"pi": rng.dirichlet(np.ones(4), size=6), "prior": np.ones(4)}   # another shape: traces replaced
    box2 = widgets.pi_run_panel(lambda *, beta, alpha: simulate(beta=beta, alpha=alpha) if alpha > 1 else more)
    run2 = next(w for w in box2.children[0].children if getattr(w, "description", "") == "Run")
    run2.click()
    box2.sliders["alpha"].value = 1.5
    run2.click()
    assert [t.name for t in box2.figure.data] == ["π: a", "π: b", "π: c", "r_t = KL(π_t‖π̂)"]
    assert all(t.line.dash is None for t in box2.figure.data[:3])


def test_pi_run_panel_computes_the_final_radius_when_simulate_gives_no_kl():
    widgets = pytest.importorskip("dro_lab.widgets")
    pi = np.array([[0.25, 0.25, 0.5], [0.1, 0.2, 0.7]])
    prior = np.array([0.2, 0.3, 0.5])
    box = widgets.pi_run_panel(lambda *, beta, alpha: {"pi": pi, "prior": prior})
    next(w for w in box.children[0].children if getattr(w, "description", "") == "Run").click()
    r = float(np.sum(pi[-1] * np.log(pi[-1] / prior)))
    assert box.readout.value == f"final r = KL(π_T‖π̂) = {r:.4f}"
    levels = [t for t in box.figure.data if t.name.startswith("prior")]
    np.testing.assert_allclose([t.y[0] for t in levels], prior)


# --------------------------------------------------------------------------- lesson 05 builders and panels (DONE)


def _softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max())
    return e / e.sum()


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
    y[:4] = 1 - y[:4]                        # a few mistakes: clean accuracy < 1
    return model, x, y


def test_done_weight_figure_boxes_are_log_scaled_weights_and_means_are_class_means():
    rng = np.random.default_rng(0)
    w, labels = rng.dirichlet(np.ones(30)), rng.integers(0, 3, 30)
    fig = viz.done_weight_figure(w, labels, class_names=["zero", "one", "two"])
    boxes = [t for t in fig.data if t.type == "box"]
    assert [b.name for b in boxes] == ["zero", "one", "two"]
    for c, b in enumerate(boxes):
        np.testing.assert_allclose(b.y, np.log10(w[labels == c] * 30))
    bar = fig.data[-1]
    assert bar.type == "bar" and list(bar.x) == ["zero", "one", "two"]
    np.testing.assert_allclose(bar.y, [np.mean(w[labels == c] * 30) for c in range(3)])
    dashed = [s for s in fig.layout.shapes if s.line.dash == "dash"]
    assert sorted(s.y0 for s in dashed) == [0.0, 1.0]
    scat = viz.done_weight_figure(w, labels, class_accuracy=[0.3, 0.5, 0.7]).data[-1]
    assert scat.type == "scatter" and list(scat.x) == [0.3, 0.5, 0.7]
    np.testing.assert_allclose(scat.y, bar.y)
    s = viz.done_weight_stats(w)
    assert s["ess"] == pytest.approx(1 / np.sum(w ** 2)) and s["max_scaled"] == pytest.approx(w.max() * 30)
    with pytest.raises(ValueError, match="same length"):
        viz.done_weight_figure(w, labels[:-1])


def test_attack_toy_figure_one_segment_per_adversarial_point_and_eps_balls():
    rng = np.random.default_rng(1)
    gx, gy = np.linspace(-3, 3, 7), np.linspace(-3, 3, 5)
    prob = rng.random((5, 7))
    pts, labels = rng.normal(size=(9, 2)), np.array([0, 1] * 4 + [0])
    adv = pts + 0.2
    fig = viz.attack_toy_figure(gx, gy, prob, pts, labels, adv, eps=0.2, norm="linf")
    by = {t.name: t for t in fig.data}
    np.testing.assert_allclose(by["P(class 1)"].z, prob)
    assert by["boundary P = 0.5"].contours.start == 0.5 == by["boundary P = 0.5"].contours.end
    seg = by["clean → adversarial"]
    assert len(seg.x) == 3 * 9 and sum(v is None for v in seg.x) == 9
    np.testing.assert_allclose(np.array(seg.x, dtype=float).reshape(9, 3)[:, :2], np.c_[pts[:, 0], adv[:, 0]])
    np.testing.assert_allclose(by["class 1 (adversarial)"].y, adv[labels == 1, 1])
    np.testing.assert_allclose(by["class 0 (clean)"].x, pts[labels == 0, 0])
    ball = by["ε-ball (L∞, ε = 0.2)"]
    assert sum(v is None for v in ball.x) == 5                       # first 5 points
    square = np.array(ball.x[:5], dtype=float)
    np.testing.assert_allclose([square.min(), square.max()], [pts[0, 0] - 0.2, pts[0, 0] + 0.2])
    circle = viz.attack_toy_figure(gx, gy, prob, pts, labels, eps=0.5, norm="l2", n_balls=1).data[-1]
    r = np.hypot(np.array(circle.x[:-1], dtype=float) - pts[0, 0], np.array(circle.y[:-1], dtype=float) - pts[0, 1])
    np.testing.assert_allclose(r, 0.5)
    assert not any(t.name == "clean → adversarial" for t in viz.attack_toy_figure(gx, gy, prob, pts, labels).data)
    with pytest.raises(ValueError, match="grid_prob"):
        viz.attack_toy_figure(gx, gy, prob.T, pts, labels)


def test_per_class_robust_figure_bars_are_seed_means_and_the_worst_are_the_smallest():
    rng = np.random.default_rng(2)
    at, done = rng.random((3, 10)), rng.random((3, 10))
    fig = viz.per_class_robust_figure({"AT": at, "DONE": done}, paper={"DONE": np.linspace(0, 1, 10)})
    bars = {t.name: t for t in fig.data}
    np.testing.assert_allclose(bars["AT"].y, at.mean(0))
    np.testing.assert_allclose(bars["DONE"].error_y.array, done.std(0, ddof=1))
    worst = set(np.argsort(at.mean(0))[:3])
    assert {j for j, w in enumerate(bars["AT"].marker.line.width) if w > 0} == worst
    assert all(w == 0 for w in bars["DONE"].marker.line.width)
    assert {int(round((s.x0 + s.x1) / 2)) for s in fig.layout.shapes} == worst
    assert bars["DONE (paper)"].mode == "markers" and bars["DONE (paper)"].offsetgroup == "DONE"
    one = viz.per_class_robust_figure({"AT": at[0]}, class_names=list("abcdefghij"), highlight_worst=1)
    assert list(one.data[0].x) == list("abcdefghij") and len(one.layout.shapes) == 1
    with pytest.raises(ValueError, match="DONE"):
        viz.per_class_robust_figure({"AT": at, "DONE": done[:, :4]})


def test_attack_gap_figure_bars_are_seed_means_with_paper_markers():
    pgd = {"AT": [0.50, 0.52, 0.54], "DONE": [0.58]}
    aa = {"AT": [0.45, 0.47, 0.46], "DONE": [0.50]}
    fig = viz.attack_gap_figure(pgd, aa, paper={"DONE": (0.57, 0.49)})
    by = {t.name: t for t in fig.data}
    np.testing.assert_allclose(by["PGD-20 (ours)"].y, [0.52, 0.58])
    np.testing.assert_allclose(by["AutoAttack (ours)"].y, [0.46, 0.50])
    np.testing.assert_allclose(by["PGD-20 (ours)"].error_y.array, [np.std(pgd["AT"], ddof=1), 0.0])
    assert list(by["AutoAttack (ours)"].text) == ["gap 0.06", "gap 0.08"]
    assert list(by["PGD-20 (paper)"].x) == ["DONE"] and by["AutoAttack (paper)"].y == (0.49,)
    with pytest.raises(ValueError, match="same"):
        viz.attack_gap_figure({"AT": [0.5]}, {"DONE": [0.4]})


def test_r_schedule_figure_stacks_r_lr_and_metrics():
    t = np.arange(1, 7)
    r = [10, 10, 1, 1, 0.1, 0.1]
    sa = np.array([[0.5, 0.6, 0.7, 0.7, 0.8, 0.8], [0.6, 0.6, 0.7, 0.8, 0.8, 0.9]])
    fig = viz.r_schedule_figure(t, r, lr_values=np.linspace(0.1, 0.0, 6), metrics={"test SA": sa, "ESS": np.ones(6)})
    by = {t_.name: t_ for t_ in fig.data}
    np.testing.assert_allclose(by["r(t)"].y, r)
    assert fig.layout.yaxis.type == "log" and by["learning rate"].yaxis == "y2"
    np.testing.assert_allclose(by["test SA"].y, sa.mean(0))
    assert by["ESS"].yaxis == "y3" and "test SA ± std" in by
    only_r = viz.r_schedule_figure(t, r)
    assert len(only_r.data) == 1
    with pytest.raises(ValueError, match="one value per epoch"):
        viz.r_schedule_figure(t, r[:3])


def test_done_r_panel_slider_moves_weights_and_ess_against_numpy_softmax():
    widgets = pytest.importorskip("dro_lab.widgets")
    rng = np.random.default_rng(4)
    losses, labels = rng.gamma(2.0, 1.0, 32), rng.integers(0, 4, 32)
    box = widgets.done_r_panel(losses, labels, r=10.0)
    r_w = box.sliders["r"]
    assert r_w.description == "r (DONE temperature, loss units)"
    assert r_w.min == -1.3 and r_w.max == 2 and 0.05 <= 10 ** r_w.min < 0.051
    before = np.array(box.figure.data[-1].y)
    for r in (10.0, 0.2):
        r_w.value = r
        w = _softmax(losses / r)
        assert box.readout.value == (f"ESS = 1/Σω² = {1 / np.sum(w ** 2):.1f} of |B| = 32; "
                                     f"max ω·|B| = {w.max() * 32:.3g}")
        np.testing.assert_allclose(box.figure.data[-1].y, [np.mean(w[labels == c] * 32) for c in range(4)])
        np.testing.assert_allclose(box.figure.data[0].y, np.log10(w[labels == 0] * 32))
    assert not np.allclose(before, box.figure.data[-1].y)


def test_attack_toy_panel_eps_zero_is_clean_and_larger_eps_moves_points():
    widgets = pytest.importorskip("dro_lab.widgets")
    model, x, y = _toy_model_and_data()
    clean = float((model(x).argmax(1) == y).double().mean())
    box = widgets.attack_toy_panel(model, x, y, eps=0.0, alpha=0.05, steps=10, grid=20)
    eps_w, a_w = box.sliders["eps"], box.sliders["alpha"]
    assert eps_w.description == "ε (attack radius)" and (eps_w.min, eps_w.max) == (0.0, 1.0)
    assert a_w.description == "α (attack step)" and a_w.min > 0
    by = {t.name: t for t in box.figure.data}
    assert by["P(class 1)"].z.shape == (20, 20)
    seg = np.array(by["clean → adversarial"].x, dtype=float).reshape(-1, 3)
    np.testing.assert_allclose(seg[:, 0], seg[:, 1])                   # ε = 0: adversarial = clean
    assert box.readout.value == f"robust accuracy at ε = 0.00: {clean:.3f} (clean {clean:.3f})"
    trace = box.figure.data[2]
    eps_w.value = 0.5
    assert box.figure.data[2] is trace                                  # redrawn in place
    seg = np.array(box.figure.data[2].x, dtype=float).reshape(-1, 3)
    moved = np.abs(seg[:, 1] - seg[:, 0])
    assert moved.max() > 0.1 and moved.max() <= 0.5 + 1e-6
    from dro_lab.adversarial import pgd_attack
    x_adv = pgd_attack(model, x, y, eps=0.5, alpha=0.05, steps=10, clamp=None,
                       generator=torch.Generator().manual_seed(0))
    robust = float((model(x_adv).argmax(1) == y).double().mean())
    assert robust < clean
    assert box.readout.value == f"robust accuracy at ε = 0.50: {robust:.3f} (clean {clean:.3f})"
    assert "ε = 0.5" in [t.name for t in box.figure.data][-1]


# --------------------------------------------------------------------------- lesson 06: label-smoothing DRO (GI-LS)


def test_shift_field_figure_draws_one_segment_per_point_per_setting():
    pts = np.array([[0.0, 0.0], [1.0, 2.0], [-1.0, 0.5]])
    shifted = {"α = 0": pts + 0.1, "α = 0.3": pts - 0.2}
    gx, gy = np.linspace(-2, 2, 5), np.linspace(-1, 3, 4)
    cmap = (np.meshgrid(gx, gy)[0] > 0).astype(int)
    fig = viz.shift_field_figure(pts, shifted, [0, 1, 1], grid=(gx, gy, cmap))
    segs = [t for t in fig.data if t.name.startswith("shift, ")]
    assert [t.name for t in segs] == ["shift, α = 0", "shift, α = 0.3"]
    for t, (name, q) in zip(segs, shifted.items()):
        assert sum(v is None for v in t.x) == len(pts)   # one segment per point
        xs = np.array([v for v in t.x if v is not None], dtype=float).reshape(-1, 2)
        np.testing.assert_allclose(xs[:, 0], pts[:, 0])
        np.testing.assert_allclose(xs[:, 1], q[:, 0])
    assert fig.data[0].type == "heatmap" and np.array(fig.data[0].z).shape == (4, 5)
    with pytest.raises(ValueError):
        viz.shift_field_figure(pts, {"bad": pts[:2]}, [0, 1, 1])


def test_transport_vs_gamma_lines_equal_inputs_and_bounds():
    g = np.array([1e-3, 1e-1, 1e1, 1e3])
    costs = {"α = 0": np.array([4.0, 3.0, 1.0, 0.01]), "α = 0.3": np.array([[5.0, 4.0, 2.0, 0.1],
                                                                            [3.0, 2.0, 1.0, 0.05]])}
    fig = viz.transport_vs_gamma_figure(g, costs, bounds={"L₀/γ": 1 / g, "3L₀/γ": 3 / g})
    lines = {t.name: t for t in fig.data if t.mode and "lines" in t.mode}
    np.testing.assert_allclose(lines["α = 0"].y, costs["α = 0"])
    np.testing.assert_allclose(lines["α = 0.3"].y, costs["α = 0.3"].mean(0))
    np.testing.assert_allclose(lines["3L₀/γ"].y, 3 / g)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def test_regularizer_figure_marks_the_zero_at_one_minus_alpha():
    p = np.linspace(0.0, 1.0, 101)
    values = {f"α = {a}": viz.ls_regularizer_values(p, a, k=3) for a in (0.0, 0.2, 0.5)}
    for a, v in zip((0.0, 0.2, 0.5), values.values()):
        assert abs(p[np.argmin(v)] - (1 - a)) < 1e-9 and v.min() < 1e-12
    fig = viz.regularizer_figure(p, values)
    zeros = [t for t in fig.data if t.mode == "markers"]
    np.testing.assert_allclose([t.x[0] for t in zeros], [1.0, 0.8, 0.5])
    np.testing.assert_allclose([t.y[0] for t in zeros], 0.0, atol=1e-12)
    assert len(fig.layout.shapes) == 3
    lines = [t for t in fig.data if t.mode == "lines"]
    np.testing.assert_allclose(lines[1].y, values["α = 0.2"])
    w = np.array([[1.0, 2.0], [0.5, -1.0]])   # theta_f (k=2, d=2): ‖θ_fᵀ(p − ȳ)‖²
    d = np.array([0.7 - 0.9, 0.3 - 0.1])
    np.testing.assert_allclose(viz.ls_regularizer_values([0.7], 0.1, theta_f=w), [np.sum((d @ w) ** 2)])


def test_generated_images_and_cost_and_bo_figures():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(8, 1, 6, 6, generator=gen)
    xs = x + 0.1 * torch.randn(8, 1, 6, 6, generator=gen)
    fig = viz.generated_images_figure(x, xs, n=4)
    assert len(fig.data) == 12
    np.testing.assert_allclose(np.array(fig.data[8].z), (xs - x)[0, 0].numpy(), rtol=1e-6, atol=1e-7)
    assert fig.layout.coloraxis2.cmid == 0.0

    T = np.array([0, 1, 5, 10])
    sec = np.array([[1.0, 1.4, 3.1, 5.9], [1.2, 1.4, 2.9, 6.1]])
    fig = viz.cost_vs_T_figure(T, sec)
    mean = sec.mean(0)
    np.testing.assert_allclose(fig.data[0].y, mean)
    assert list(fig.data[0].text) == [f"×{r:.2f}" for r in mean / mean[0]]
    slope, icpt = np.polyfit(T, mean, 1)
    np.testing.assert_allclose(fig.data[1].y[[0, -1]], [icpt, icpt + 10 * slope])

    vals = {"GP": [0.5, 0.7, 0.6, float("nan"), 0.8], "TPE": [0.6, 0.55, 0.65], "random": [0.4]}
    fig = viz.bo_progress_figure(vals)
    best = {t.legendgroup: np.array(t.y, dtype=float) for t in fig.data if t.mode == "lines"}
    np.testing.assert_allclose(best["GP"], [0.5, 0.7, 0.7, 0.7, 0.8])
    np.testing.assert_allclose(best["TPE"], np.maximum.accumulate(vals["TPE"]))
    assert len({t.marker.color for t in fig.data if t.mode == "markers"}) == 3


def _gils_toy():
    from dro_lab.models import MLP

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
    widgets = pytest.importorskip("dro_lab.widgets")
    pytest.importorskip("dro_lab.smoothing")
    model, x, y = _gils_toy()
    box = widgets.gils_toy_panel(model, x, y, alpha=0.3, gamma=0.1, eta=0.2, steps=10)
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
    np.testing.assert_allclose(seg[:, 0], seg[:, 1])   # x_T = x
    assert "ρ̂ = mean ½‖f(x_T) − f(x)‖² = 0<" in box.readout.value + "<"


def test_gils_toy_panel_target_radius_sets_gamma():
    widgets = pytest.importorskip("dro_lab.widgets")
    smoothing = pytest.importorskip("dro_lab.smoothing")
    model, x, y = _gils_toy()
    box = widgets.gils_toy_panel(model, x, y, alpha=0.3, eta=0.2, steps=5, target_radius=0.2)
    assert set(box.sliders) == {"alpha", "T", "r"} and "beyond the paper" in box.readout.value
    import re

    gamma = float(re.search(r"γ = ([0-9.e+-]+)", box.readout.value).group(1))
    _, cost = smoothing.gils_shift(model, x, y, alpha=0.3, gamma=gamma, eta=0.2, steps=5, clamp=None)
    assert float(cost.mean()) == pytest.approx(0.2, rel=0.05)
    g, rho = widgets.gamma_for_radius(lambda g: 1.0 / g, 0.5)   # ρ̂ = 1/γ: r = 0.5 at γ = 2
    assert g == pytest.approx(2.0, rel=0.01) and rho == pytest.approx(0.5, rel=0.01)
