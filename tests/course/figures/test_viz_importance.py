"""Lesson 03: the importance-sampling mixture and the exact moments of its gradient estimate against enumeration
of the one-draw estimates, the figure built on them and its panel."""

from __future__ import annotations

import numpy as np
import pytest

from dro_course import figures
from dro_course.lessons import importance_sampling as lesson


def _gram_and_grads(n=6, d=4, seed=0):
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(n, d)) * rng.uniform(0.1, 3.0, size=(n, 1))
    return G @ G.T, G


def test_is_mixture_endpoints_and_validation():
    g = np.array([1.0, 1.0, 2.0, 4.0])
    np.testing.assert_allclose(figures.is_mixture(g, 0.0), [0.25] * 4)
    np.testing.assert_allclose(figures.is_mixture(g, 1.0), g / g.sum())
    np.testing.assert_allclose(figures.is_mixture(g, 0.5), 0.5 * (0.25 + g / g.sum()))
    np.testing.assert_allclose(figures.is_mixture(np.zeros(3), 1.0), [1 / 3] * 3)
    with pytest.raises(ValueError, match="alpha"):
        figures.is_mixture(g, 1.5)


def test_is_estimator_stats_against_enumeration_and_closed_forms():
    K, G = _gram_and_grads()
    n = len(K)
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(n))
    for e, B in ((1.0, 1), (0.0, 3), (0.5, 5)):
        w = (1 / (n * p)) ** e
        X = w[:, None] * G  # the n possible one-draw estimates
        mean = p @ X
        var1 = p @ (X**2).sum(1) - mean @ mean
        s = figures.is_estimator_stats(K, p, weight_exponent=e, batch_size=B)
        assert s["variance"] == pytest.approx(var1 / B, rel=1e-10)
        assert s["bias_sq"] == pytest.approx(float(((mean - G.mean(0)) ** 2).sum()), abs=1e-10)
        assert s["mse"] == pytest.approx(s["variance"] + s["bias_sq"])
    g = np.linalg.norm(G, axis=1)
    s_gn = figures.is_estimator_stats(K, g / g.sum())  # H(p^GN)/N² = (Σg)²/N²
    assert s_gn["second_moment"] == pytest.approx(g.sum() ** 2 / n**2)
    assert s_gn["bias_sq"] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="gram"):
        figures.is_estimator_stats(K[:3, :3], p)


def test_is_variance_figure_is_smallest_at_pgn_with_unbiased_weights_and_rho_rises():
    K, _ = _gram_and_grads()
    fig = lesson.is_variance_figure(K, alpha=0.3, weight_exponent=1.0, batch_size=2)
    var = next(t for t in fig.data if t.name == "tr Var")
    assert np.argmin(var.y) == len(var.y) - 1  # α = 1 is optimal
    assert np.all(np.diff(var.y) <= 1e-12)  # S non-decreasing along the segment
    rho = next(t for t in fig.data if t.name == "ρ(p^(α))")
    assert rho.y[0] == pytest.approx(0.0, abs=1e-9) and rho.y[-1] == pytest.approx(1.0)
    bias = next(t for t in fig.data if t.name == "bias²")
    mse = next(t for t in fig.data if "MSE" in t.name)
    # unbiased weights: bias² is round-off, left out of the log axis (gaps), so the axis spans the real errors
    assert all(b is None or b >= 1e-10 * max(mse.y) for b in bias.y) and bias.y.count(None) > len(bias.y) // 2
    fig0 = lesson.is_variance_figure(K, alpha=0.8, weight_exponent=0.0)
    biased = [b for b in next(t for t in fig0.data if t.name == "bias²").y if b is not None]
    assert max(biased) > 1e-6  # forgotten weights: biased
    assert "ρ" in fig.layout.title.text


def test_is_cost_figure_bars_are_means_with_paper_markers():
    fig = lesson.is_cost_figure(
        {"u": {"SGD": [1.0, 3.0]}, "p^GN": {"SGD": [4.0, 6.0]}}, paper={"u": {"SGD": 26.5}, "p^GN": {"SGD": 53.0}}
    )
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.y[0] for b in bars] == [2.0, 5.0]
    assert bars[0].error_y.array[0] == pytest.approx(np.std([1.0, 3.0], ddof=1))
    assert [t.y[0] for t in fig.data if t.type == "scatter"] == [26.5, 53.0]


def test_is_variance_panel_redraws_and_labels_its_sliders(monkeypatch):
    lesson_panels = pytest.importorskip("dro_course.lessons.importance_sampling.panels")
    calls = []

    def fake(gram, *, alpha, weight_exponent, batch_size):
        calls.append((alpha, weight_exponent, batch_size))
        return None

    monkeypatch.setattr(lesson_panels, "is_variance_figure", fake)
    K, _ = _gram_and_grads()
    box = lesson.is_variance_panel(K, alpha=0.5, batch_size=5)
    a_w, e_w = box.children[0].children[1:3]
    assert "uniform mixing" in a_w.description and "weight exponent" in e_w.description
    assert "β" not in a_w.description + e_w.description
    a_w.value = 0.9
    assert calls[-1] == (0.9, 1.0, 5)
    e_w.value = 0.0
    assert calls[-1] == (0.9, 0.0, 5)


# ------------------------------------------------------------------ the experiment's figures (the shipped run)
def _reference():
    from dro_lab.experiments import load_reference

    return load_reference("importance").result()


def test_is_cost_ratio_figure_draws_the_per_seed_geometric_means_and_table_1():
    ref = _reference()
    fig = lesson.is_cost_ratio_figure(ref, ref, methods=["SGD u", "SGD p^GN", "SGD u+eval"])
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 2 and list(bars[0].x) == ["SGD u", "SGD p^GN", "SGD u+eval"]
    seconds = {(r["method"], r["seed"]): r["final"]["seconds_per_epoch"] for r in ref.runs}
    ratio = np.exp(np.mean([np.log(seconds[("SGD p^GN", s)] / seconds[("SGD u", s)]) for s in ref.seeds]))
    assert bars[0].y[1] == pytest.approx(ratio) and bars[0].y[0] == pytest.approx(1.0)
    paper = next(t for t in fig.data if t.type == "scatter" and t.mode == "markers")
    assert list(paper.x) == ["SGD u", "SGD p^GN"] and list(paper.y) == pytest.approx([1.0, 53.0 / 26.5])
    band = fig.layout.shapes[0]  # Table 1's band: p^GN over u from SGD's 53.0/26.5 to Adam's 61.4/25.7
    assert band.y0 == 2.0 and band.y1 == pytest.approx(61.4 / 25.7) and fig.layout.yaxis.type != "log"
    assert any("2.0–2.39×" in (t.name or "") for t in fig.data)  # the band is named in the legend


def test_log_curves_figure_draws_geometric_means_with_positive_bands():
    from scipy.stats import gmean

    ref = _reference()
    fig = lesson.log_curves_figure({"Reference run": ref, "Again": ref}, "train_loss", methods=["SGD u", "SGD p^GN"])
    lines = [t for t in fig.data if t.fill != "toself"]
    bands = [t for t in fig.data if t.fill == "toself"]
    assert len(lines) == 4 and len(bands) == 4
    np.testing.assert_allclose(lines[0].y, gmean(ref.curve("train_loss", "SGD u"), axis=0), rtol=1e-10)
    assert all(np.all(np.asarray(b.y) > 0) for b in bands)  # a log axis can draw every band
    assert lines[0].line.color == lines[2].line.color != lines[1].line.color  # one colour per method, both panels
    assert [lines[0].showlegend, lines[2].showlegend] == [True, False]
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type == "log"
    with pytest.raises(ValueError, match="methods"):
        lesson.log_curves_figure({"r": ref}, "train_loss", methods=["SGD v"])


def test_loss_against_time_figure_puts_each_epoch_at_its_cumulative_seconds():
    ref = _reference()
    fig = lesson.loss_against_time_figure(ref, "test_loss", methods=["SGD u", "SGD p^GN"])
    trace = fig.data[1]
    np.testing.assert_allclose(trace.x, np.cumsum(ref.curve("seconds", "SGD p^GN").mean(0)))
    np.testing.assert_allclose(trace.y, ref.curve("test_loss", "SGD p^GN").mean(0))
    assert fig.data[0].line.color != fig.data[1].line.color


def test_forgotten_weights_figure_has_a_path_per_run_and_the_optimum():
    paths = {"u": np.array([[0.0, 0.0, 0.0], [1.0, 0.5, 0.1]]), "e = 0": np.array([[0.0, 0.0, 0.0], [2.0, 1.0, 0.2]])}
    fig = lesson.forgotten_weights_figure(paths, [1.1, 0.4, 0.0])
    assert [t.name for t in fig.data][:2] == ["u", "e = 0"] and list(fig.data[1].x) == [0.0, 2.0]
    star = fig.data[-1]
    assert (star.x[0], star.y[0]) == (1.1, 0.4) and star.marker.symbol == "star"
