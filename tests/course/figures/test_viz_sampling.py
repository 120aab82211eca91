"""Lesson 02: the hardness-weighted sampling figures against numpy (class mass, ESS, softmax, the geometric age
tail) and the panel that redraws them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dro_course.lessons import hardness_weighted_sampling as hws

LOSSES = torch.tensor([0.2, 1.5, 0.7, 3.0, 0.1])


LABELS = torch.tensor([0, 1, 1, 2, 0])


def test_sampling_summary_against_numpy():
    q = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    s = hws.sampling_summary(torch.tensor(q), LABELS, minority=2, batch_size=16, num_classes=4)
    np.testing.assert_allclose(s["class_mass"], [0.35, 0.5, 0.15, 0.0])
    np.testing.assert_allclose(s["class_share"], [0.4, 0.4, 0.2, 0.0])
    assert s["minority_mass"] == pytest.approx(0.15) and s["minority_share"] == pytest.approx(0.2)
    assert s["minority_ratio"] == pytest.approx(0.75)
    assert s["expected_minority_draws"] == pytest.approx(2.4) and s["uniform_minority_draws"] == pytest.approx(3.2)
    assert s["ess"] == pytest.approx(1 / np.sum(q**2))
    with pytest.raises(ValueError, match="same length"):
        hws.sampling_summary(q[:3], LABELS)
    with pytest.raises(ValueError, match="minority"):
        hws.sampling_summary(q, LABELS, minority=7)


def test_sampling_figure_points_are_the_probabilities_by_class():
    q = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    fig = hws.sampling_figure(LOSSES, q, LABELS, minority=2, batch_size=8)
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
    fig = hws.hws_sampling_figure(LOSSES, LABELS, beta=beta, divergence="kl", minority=2)
    bars = next(t for t in fig.data if t.type == "bar")
    e = np.exp(beta * LOSSES.double().numpy())
    softmax = e / e.sum()
    np.testing.assert_allclose(bars.y, [softmax[[0, 4]].sum(), softmax[[1, 2]].sum(), softmax[3]], rtol=1e-6)
    assert "KL" in fig.layout.title.text
    fig2 = hws.hws_sampling_figure(LOSSES, LABELS, beta=beta, divergence="chi2", minority=2)
    bars2 = next(t for t in fig2.data if t.type == "bar")
    assert sum(bars2.y) == pytest.approx(1.0) and "χ²" in fig2.layout.title.text


def test_age_survival_and_age_figure_against_the_geometric_tail():
    ages = np.array([0, 0, 1, 2, 2, 2, 5, -1])
    k, surv = hws.age_survival(ages)
    np.testing.assert_array_equal(k, np.arange(6))
    np.testing.assert_allclose(surv, [7 / 7, 5 / 7, 4 / 7, 1 / 7, 1 / 7, 1 / 7])
    q = np.array([0.5, 0.3, 0.2])
    fig = hws.age_figure({"x": (ages, q)}, batch_size=2)
    exact = next(t for t in fig.data if "Σ" in t.name)
    bound = next(t for t in fig.data if "bound" in t.name)
    kk = np.arange(6)
    np.testing.assert_allclose(exact.y, [np.mean([(1 - p) ** (2 * j) for p in q]) for j in kk])
    np.testing.assert_allclose(bound.y, 0.8 ** (2 * kk))
    assert np.all(np.asarray(exact.y) <= np.asarray(bound.y) + 1e-12)  # the bound holds entry-wise
    with pytest.raises(ValueError, match="never"):
        hws.age_survival([-1, -1])


def test_mc_error_figure_validates_shapes():
    fig = hws.mc_error_figure([1, 10, 100], {"with": [1.0, 0.3, 0.1]}, reference=[1.0, 0.316, 0.1])
    assert fig.layout.xaxis.type == "log" and len(fig.data) == 2
    with pytest.raises(ValueError, match="shape"):
        hws.mc_error_figure([1, 10], {"with": [1.0]})
    with pytest.raises(TypeError, match="note"):
        hws.mc_error_figure([1, 10], {"with": [1.0, 0.3]}, note=3)


def test_mc_error_figure_leaves_out_an_estimator_that_cannot_be_computed():
    fig = hws.mc_error_figure([1, 10], {"with": [1.0, 0.3], "without": None}, note="without: impossible")
    assert [t.name for t in fig.data] == ["with"]
    assert [a.text for a in fig.layout.annotations] == ["without: impossible"]


def test_hws_panel_redraws_on_beta_and_divergence(monkeypatch):
    hws_panels = pytest.importorskip("dro_course.lessons.hardness_weighted_sampling.panels")
    calls = []

    def fake(losses, labels, *, beta, divergence, minority, batch_size):
        calls.append((beta, divergence, minority, batch_size))
        return None

    monkeypatch.setattr(hws_panels, "hws_sampling_figure", fake)
    box = hws.hws_panel(LOSSES, LABELS, minority=2, batch_size=16, beta=10.0)
    beta_w, div_w = box.children[0].children[1:3]
    assert "β" in beta_w.description and beta_w.min == -2 and beta_w.max == 3
    assert [v for _, v in div_w.options] == ["kl", "chi2"]
    beta_w.value = 0.5
    assert calls[-1] == (0.5, "kl", 2, 16)
    div_w.value = "chi2"
    assert calls[-1] == (0.5, "chi2", 2, 16)
    assert "2β" in box.children[0].children[-1].value


def test_minority_mass_figure_draws_the_softmax_mass_of_the_class():
    from scipy.special import softmax  # an independent softmax

    betas = np.array([0.01, 0.1, 1.0, 10.0])
    fig = hws.minority_mass_figure(LOSSES, LABELS, minority=2, betas=betas, batch_size=10)
    by_name = {t.name: t for t in fig.data}
    want = [softmax(b * LOSSES.numpy().astype(float))[LABELS.numpy() == 2].sum() for b in betas]
    np.testing.assert_allclose(by_name["KL at β"].y, want, rtol=1e-9)
    np.testing.assert_allclose(by_name["uniform share n_c/n = 0.2000 (ERM)"].y, [0.2, 0.2])
    np.testing.assert_allclose(by_name["ESS (KL)"].y[0], 1 / np.sum(softmax(0.01 * LOSSES.numpy()) ** 2), rtol=1e-6)
    assert "draws per batch" in fig.layout.title.text
    chi2 = by_name["χ² at 2β"].y
    assert np.all((np.asarray(chi2) >= 0) & (np.asarray(chi2) <= 1))


def test_underflowed_probabilities_are_drawn_below_the_hardest_example():
    """At a large β every q_i but the hardest example's underflows to 0: those dots go a decade below the smallest
    positive q (here 1.0), never on top of it."""
    import numpy as np
    import torch

    from dro_course.lessons import hardness_weighted_sampling as hws

    losses = torch.tensor([0.1, 0.2, 0.3, 50.0])
    labels = torch.tensor([0, 1, 0, 1])
    fig = hws.hws_sampling_figure(losses, labels, beta=1000.0, divergence="kl", minority=1, batch_size=2)
    dots = {t.name: np.asarray(t.y) for t in fig.data if str(t.name).startswith("class")}
    ys = np.concatenate(list(dots.values()))
    assert sorted(ys.tolist()) == [0.1, 0.1, 0.1, 1.0]
