"""Every panel's static twin (``box.static_twin``): its frames are the figures builder called directly at the knob
values (or a closed form of the test's own run functions), its slider steps are those values, its first data
the starting values' figure; the displayed output carries it as metadata; Colab and VS Code get it instead of the
live panel; ``front_end`` reads the environment.
"""

from __future__ import annotations

import json
import math
import warnings

import ipywidgets as W
import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from IPython.core.formatters import DisplayFormatter

from dro_course import figures, panels
from dro_course.lessons import dro_foundations as toys
from dro_course.lessons import hardness_weighted_sampling as hws
from dro_course.lessons import importance_sampling as isl
from dro_course.panels.twin import TWIN_MAX_BYTES, front_end

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


# --------------------------------------------------------------------------- helpers


def _twin(box) -> go.Figure:
    twin = box.static_twin
    assert isinstance(twin, go.Figure)
    assert len(twin.to_json()) <= TWIN_MAX_BYTES  # a site page holds several twins and stays under 3 MB
    return twin


def _labels(twin, k=0) -> list[str]:
    return [s.label for s in twin.layout.sliders[k].steps]


def _frame(twin, k, label):
    """The traces a frame shows (hidden slots left out) and its layout, for slider ``k``'s step ``label``."""
    (step,) = [s for s in twin.layout.sliders[k].steps if s.label == label]
    frame = next(f for f in twin.frames if f.name == step.args[0][0])
    return [t for t in frame.data if t.visible is not False], frame.layout


def _initial(twin):
    return [t for t in twin.data if t.visible is not False]


def _numbers(values) -> np.ndarray:
    return np.asarray([math.nan if v is None else v for v in np.asarray(values, dtype=object).ravel()], float)


def _assert_same_traces(shown, fig: go.Figure):
    """The twin's traces carry the builder's figure: same names, types and numbers (4 significant digits)."""
    assert [(t.type, t.name) for t in shown] == [(t.type, t.name) for t in fig.data]
    for mine, theirs in zip(shown, fig.data):
        for key in ("x", "y", "z"):
            a, b = getattr(mine, key, None), getattr(theirs, key, None)
            if b is None:
                continue
            if isinstance(np.asarray(b, dtype=object).ravel()[0], str):
                assert list(a) == list(b)
            else:
                np.testing.assert_allclose(_numbers(a), _numbers(b), rtol=1e-3, atol=1e-9, equal_nan=True)


def _softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max())
    return e / e.sum()


LOSSES = np.random.default_rng(0).gamma(2.0, 1.0, 24)
LABELS = np.arange(24) % 4


# --------------------------------------------------------------------------- cheap live panels


def test_weights_panel_twin_is_the_builder_at_each_knob_value_and_kl_is_the_softmax():
    box = panels.weights_panel(LOSSES, beta=2.0, radius=0.1, alpha=0.2)
    twin = _twin(box)
    assert _labels(twin, 0) == ["0.01", "0.1", "1", "2", "10", "100", "1000"]
    assert _labels(twin, 1) == ["0.001", "0.01", "0.1", "1", "10"]
    assert _labels(twin, 2) == ["0.05", "0.1", "0.2", "0.5", "1"]
    assert [s.active for s in twin.layout.sliders] == [3, 2, 2]

    def builder(beta=2.0, radius=0.1, alpha=0.2):
        return figures.weights_figure(LOSSES, figures.weights_for_knobs(LOSSES, beta=beta, radius=radius, alpha=alpha))

    _assert_same_traces(_initial(twin), builder())
    for k, knob, label, value in [(0, "beta", "10", 10.0), (0, "beta", "0.01", 0.01), (1, "radius", "1", 1.0),
                                  (2, "alpha", "0.5", 0.5)]:  # fmt: skip
        shown, _ = _frame(twin, k, label)
        _assert_same_traces(shown, builder(**{knob: value}))
    kl = _frame(twin, 0, "10")[0][0]
    np.testing.assert_allclose(np.sort(_numbers(kl.y)), np.sort(_softmax(10.0 * LOSSES)), rtol=1e-3, atol=1e-9)


@pytest.mark.slow
def test_hws_and_is_variance_panels_twins_are_their_builders():
    box = hws.hws_panel(LOSSES, LABELS, minority=2, batch_size=8, beta=1.0)
    twin = _twin(box)
    assert _labels(twin, 1) == ["KL", "χ²"]
    shown, _ = _frame(twin, 1, "χ²")
    fig = hws.hws_sampling_figure(LOSSES, LABELS, beta=1.0, divergence="chi2", minority=2, batch_size=8)
    _assert_same_traces(shown, fig)
    _assert_same_traces(_frame(twin, 0, "100")[0], hws.hws_sampling_figure(LOSSES, LABELS, beta=100.0,
                                                                           minority=2, batch_size=8))  # fmt: skip

    g = np.random.default_rng(1).normal(size=(12, 5))
    gram = g @ g.T
    twin = _twin(isl.is_variance_panel(gram, alpha=0.5, batch_size=3))
    assert _labels(twin, 0) == ["0", "0.25", "0.5", "0.75", "1"]
    shown, layout = _frame(twin, 1, "0")
    _assert_same_traces(shown, isl.is_variance_figure(gram, alpha=0.5, weight_exponent=0.0, batch_size=3))
    assert (
        layout.title.text
        == isl.is_variance_figure(gram, alpha=0.5, weight_exponent=0.0, batch_size=3).layout.title.text
    )


def test_tau_and_done_r_twins_follow_their_closed_forms():
    L, prior = np.array([1.0, 2.0, 0.5]), np.array([0.5, 0.3, 0.2])
    twin = _twin(panels.tau_panel(L, prior, beta=10.0, labels=["a", "b", "c"]))
    assert _labels(twin) == ["0.01", "0.1", "1", "10", "100", "1000"]
    shown, _ = _frame(twin, 0, "1")
    _assert_same_traces(shown, figures.pi_star_bar_figure(L, prior, beta=1.0, labels=["a", "b", "c"]))
    star = _softmax(np.log(prior) + 1.0 * L)
    assert any(np.allclose(_numbers(t.y), star, rtol=1e-3) for t in shown if t.type == "bar")

    twin = _twin(panels.done_r_panel(LOSSES, LABELS, r=1.0))
    assert _labels(twin) == ["0.1", "1", "10", "100"]
    for label, r in (("0.1", 0.1), ("100", 100.0)):
        w = _softmax(LOSSES / r)
        bars = _frame(twin, 0, label)[0][-1]
        means = [np.mean(w[np.equal(LABELS, c)] * 24) for c in range(4)]
        np.testing.assert_allclose(_numbers(bars.y), means, rtol=1e-3)


def test_bilinear_twin_is_the_builder_on_the_recomputed_paths():
    from dro_lab import bilinear_game_path

    twin = _twin(panels.bilinear_panel(lr=0.1, alpha=1.0, steps=300))
    assert _labels(twin, 0) == ["0", "0.5", "1", "1.5", "2"] and _labels(twin, 1) == [
        "0.05",
        "0.1",
        "0.2",
        "0.3",
        "0.5",
    ]
    for k, label, alpha, lr in ((0, "2", 2.0, 0.1), (1, "0.3", 1.0, 0.3)):
        paths = {"α = 0 (descent–ascent)": bilinear_game_path(lr=lr, alpha=0.0, steps=300),
                 f"α = {alpha:.2f}": bilinear_game_path(lr=lr, alpha=alpha, steps=300)}  # fmt: skip
        fig = figures.bilinear_figure(paths, title=f"300 steps of size γ = {lr:.3g} on min_x max_y xy")
        shown, layout = _frame(twin, k, label)
        _assert_same_traces(shown, fig)
        assert layout.title.text == fig.layout.title.text


@pytest.mark.slow
def test_attack_toy_twin_moves_the_points_by_pgd_and_not_at_all_at_eps_zero():
    import dro_lab
    from dro_lab.data import ArrayDataset

    gen = torch.Generator().manual_seed(0)
    y = torch.arange(60) % 2
    x = torch.randn(60, 2, generator=gen) * 0.6 + torch.stack([2.0 * y - 1.0, torch.zeros(60)], 1)
    dro_lab.seed_everything(0)
    model = dro_lab.MLP(2, 2, hidden=(8,))
    dro_lab.fit(model, ArrayDataset(x, y, num_classes=2), epochs=5, batch_size=16, lr=0.05, device="cpu",
                progress=False)  # fmt: skip
    twin = _twin(panels.attack_toy_panel(model, x, y, eps=0.3, alpha=0.05, steps=10, grid=30))
    assert _labels(twin, 0) == ["0", "0.1", "0.2", "0.3", "0.5", "1"]
    adversarial = lambda shown: [t for t in shown if "(adversarial)" in (t.name or "")]  # noqa: E731
    for c, trace in enumerate(adversarial(_frame(twin, 0, "0")[0])):
        np.testing.assert_allclose(_numbers(trace.x), x[y == c, 0].numpy(), rtol=1e-3, atol=1e-4)
    x_adv = dro_lab.pgd_attack(model, x, y, eps=0.5, alpha=0.05, steps=10, norm="linf", clamp=None,
                               generator=torch.Generator().manual_seed(0)).detach()  # fmt: skip
    for c, trace in enumerate(adversarial(_frame(twin, 0, "0.5")[0])):
        np.testing.assert_allclose(_numbers(trace.x), x_adv[y == c, 0].numpy(), rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(_numbers(trace.y), x_adv[y == c, 1].numpy(), rtol=1e-3, atol=1e-4)
    assert float((x_adv - x).abs().max()) <= 0.5 + 1e-6


def test_gils_twin_has_no_shift_at_zero_steps():
    from dro_course.lessons.label_smoothing_dro.studies import gils_toy_problem

    model, x, y = gils_toy_problem(0, n=30, epochs=5)
    twin = _twin(panels.gils_toy_panel(model, x, y, alpha=0.3, gamma=1.0, eta=0.1, steps=10, grid=20))
    assert _labels(twin, 1) == ["0", "2", "5", "10", "20"]
    assert [s.currentvalue.prefix for s in twin.layout.sliders] == ["α = ", "T = ", "γ = "]
    shown, layout = _frame(twin, 1, "0")
    assert layout.title.text.startswith("GI-LS shift: T = 0")
    moved = [t for t in shown if t.type == "scatter" and (t.name or "") == "x_T, α = 0.30"]
    assert moved, [t.name for t in shown]
    clean = np.sort(x[:, 0].numpy())
    assert any(np.allclose(np.sort(_numbers(t.x)), clean, rtol=1e-3, atol=1e-4) for t in moved)


# --------------------------------------------------------------------------- Run / Train panels


def _fake_simulate(calls):
    def simulate(*, beta, alpha):
        calls.append((beta, alpha))
        L = np.array([0.2, 1.0, 0.5])
        pi = np.stack([_softmax(t / 10 * beta * L / (1 + alpha)) for t in range(11)])
        return {"pi": pi, "labels": ["a", "b", "c"], "prior": np.full(3, 1 / 3), "x_title": "epoch"}

    return simulate


def test_pi_run_panel_twin_calls_simulate_five_times_and_draws_its_results():
    calls = []
    box = panels.pi_run_panel(_fake_simulate(calls), beta=10.0, alpha=1.0)
    assert calls == []  # nothing runs before the twin is asked for
    twin = _twin(box)
    assert sorted(calls) == sorted([(10.0, 1.0), (1.0, 1.0), (100.0, 1.0), (10.0, 0.0), (10.0, 2.0)])
    assert _labels(twin, 0) == ["1", "10", "100"] and _labels(twin, 1) == ["0", "1", "2"]
    result = _fake_simulate([])(beta=100.0, alpha=1.0)
    fig = figures.pi_trajectory_figure(result["pi"], labels=result["labels"], prior=result["prior"], x_title="epoch",
                                   title="π over training, β = 100 (τ = 0.01), α = 1.00")  # fmt: skip
    shown, layout = _frame(twin, 0, "100")
    _assert_same_traces(shown, fig)
    assert layout.title.text == fig.layout.title.text


def test_training_panel_twin_holds_the_runs_first_epochs_at_each_value():
    epochs_run = []

    def train(callback, lr):
        for epoch in range(1, 21):  # a long run: the twin stops it after its third epoch
            epochs_run.append(epoch)
            callback(epoch, {"train_loss": lr * epoch, "test_accuracy": 1 - lr / epoch})

    box = panels.training_panel(train, {"lr": W.FloatSlider(value=0.5, min=0.1, max=1.0)})
    twin = _twin(box)
    assert _labels(twin) == ["0.25", "0.5", "1"]
    for label, lr in (("0.25", 0.25), ("1", 1.0)):
        loss, acc = _frame(twin, 0, label)[0]
        np.testing.assert_allclose(_numbers(loss.y), [lr, 2 * lr, 3 * lr], rtol=1e-3)
        np.testing.assert_allclose(_numbers(acc.y), [1 - lr, 1 - lr / 2, 1 - lr / 3], rtol=1e-3)
        assert list(loss.x) == [1, 2, 3]
    np.testing.assert_allclose(_numbers(_initial(twin)[0].y), [0.5, 1.0, 1.5], rtol=1e-3)
    assert epochs_run == [1, 2, 3] * 3  # three runs, each stopped after three epochs


def test_toy_panel_twin_is_a_smaller_toy_at_three_betas():
    from dro_course.lessons.dro_foundations import run_minority_toy

    box = toys.toy_panel(beta=3.0, radius=0.2, alpha=0.3, n_train=40, epochs=2)
    twin = _twin(box)
    assert _labels(twin) == ["0.5", "3", "10"]
    small = run_minority_toy(beta=10.0, radius=0.2, alpha=0.3, seeds=[0], n_train=40, epochs=2, resolution=40)
    fig = toys.toy_boundaries_figure(small, title="A smaller toy (40 points, 2 epochs): β = 10, r = 0.2, α = 0.3")
    shown, layout = _frame(twin, 0, "10")
    _assert_same_traces(shown, fig)
    assert layout.title.text == fig.layout.title.text


def test_experiment_panel_twin_retrains_only_the_methods_that_take_the_knob():
    from dro_course.panels.training import TWIN_BUDGET, _small_splits
    from dro_lab.experiments import EXPERIMENTS, train_arm

    experiment = EXPERIMENTS["hws"]
    config = experiment.config("digits", "smoke", {"epochs": 3})
    splits = experiment.data("digits", 0, config)
    slider = W.FloatLogSlider(value=10.0, base=10, min=-1, max=2, description="β (HWS)")
    box = panels.experiment_training_panel(experiment, splits, config, methods=["ERM", "HWS"],
                                            controls={"beta": slider}, metrics=("train_loss", "minority_accuracy"),
                                            device="cpu")  # fmt: skip
    twin = _twin(box)
    assert _labels(twin) == ["0.1", "10", "100"]
    small = _small_splits(splits, 0, TWIN_BUDGET)
    counts, small_counts = np.bincount(splits.train.y.numpy()), np.bincount(small.train.y.numpy())
    np.testing.assert_array_equal(small_counts, np.maximum(1, np.round(counts * 256 / counts.sum())))
    records = []
    train_arm(experiment, "HWS", small, config, seed=0, device="cpu", epochs=2, beta=100.0,
              callback=lambda e, r: records.append(r))  # fmt: skip
    shown, _ = _frame(twin, 0, "100")
    by_name = {(t.name, t.xaxis): t for t in shown if t.type == "scatter" and t.mode and "lines" in t.mode}
    hws_loss = next(t for (name, axis), t in by_name.items() if name == "HWS" and axis in (None, "x"))
    np.testing.assert_allclose(_numbers(hws_loss.y), [r["train_loss"] for r in records], rtol=1e-3)
    erm = [next(t for (name, axis), t in by_name.items() if name == "ERM" and axis in (None, "x"))
           for by_name in ({(t.name, t.xaxis): t for t in _frame(twin, 0, lab)[0] if t.type == "scatter"}
                           for lab in ("0.1", "100"))]  # fmt: skip
    np.testing.assert_allclose(_numbers(erm[0].y), _numbers(erm[1].y))  # ERM has no β: the same run
    assert "3 values of β" in box.twin_note and "2 epochs" in box.twin_note


def test_comparison_panel_twin_draws_run_fns_summaries():
    from dro_course.lessons.comparison import comparison_panel, pareto_front

    calls = []

    def run_fn(*, methods, beta, done_r, cvar_alpha, is_alpha, also_alpha, ls_alpha):
        calls.append(dict(beta=beta, done_r=done_r))
        return [{"method": m, "n_seeds": 1, "avg_acc": 0.8 + 0.01 * k, "avg_acc_sd": 0.0,
                 "worst_group_acc": 0.3 + 0.001 * beta * (m == "KL-DRO") + 0.05 * done_r * (m == "DONE"),
                 "worst_group_acc_sd": 0.0, "seconds_per_epoch": 1.0 + k, "seconds_per_epoch_sd": 0.0,
                 "cost_vs_reference": 1.0 + k, "family": "", "symbol": "", "knob": ""}
                for k, m in enumerate(methods)]  # fmt: skip

    names = ["ERM", "KL-DRO", "DONE"]
    box = comparison_panel(run_fn, names, beta=10.0)
    twin = _twin(box)
    assert _labels(twin, 0) == ["0.1", "10", "100"] and len(twin.layout.sliders) == 6
    assert len(twin.frames) == 1 + 2 + 5  # β at both ends, every other knob at its farther end
    entries = run_fn(methods=names, beta=100.0, done_r=1.0, cvar_alpha=0.2, is_alpha=0.5, also_alpha=1.0,
                     ls_alpha=0.1)  # fmt: skip
    fig = figures.comparison_figure(entries, front=pareto_front(entries), reference="ERM", width=760, height=540)
    _assert_same_traces(_frame(twin, 0, "100")[0], fig)


# --------------------------------------------------------------------------- display, metadata, fallbacks


def test_the_display_carries_the_twin_as_metadata_and_a_readable_plain_line(monkeypatch):
    monkeypatch.setenv("DRO_LAB_FRONT_END", "jupyter")
    box = panels.tau_panel([1.0, 2.0], beta=10.0)
    data, meta = DisplayFormatter().format(box)
    assert WIDGET_VIEW in data
    assert data["text/plain"] == "Interactive panel: Worst-case group weights π* — run the cell in JupyterLab to use it"
    entry = meta["dro_lab"]
    assert entry["title"] == "Worst-case group weights π*"
    assert entry["note"].startswith("Precomputed at 6 values of β = 1/τ") and "JupyterLab" in entry["note"]
    assert entry["static_twin"] == json.loads(box.static_twin.to_json())
    assert box.static_twin is box.static_twin  # computed once


@pytest.mark.parametrize("where, why", [("colab", "Colab does not draw"), ("vscode", "VS Code does not draw")])
def test_colab_and_vscode_get_the_twin_with_a_note(monkeypatch, where, why):
    monkeypatch.delenv("DRO_LAB_FRONT_END", raising=False)
    if where == "colab":
        monkeypatch.setitem(__import__("sys").modules, "google.colab", object())
    else:
        monkeypatch.setenv("PYDEVD_IPYTHON_COMPATIBLE_DEBUGGING", "1")
    box = panels.done_r_panel(LOSSES, LABELS, r=1.0)
    data, meta = DisplayFormatter().format(box)
    assert WIDGET_VIEW not in data
    page = data["text/html"]
    assert why in page and "static version" in page and "In JupyterLab or Binder the panel is live" in page
    assert "cdn.plot.ly/plotly-" in page and ("Plotly.addFrames" in page or '"frames"' in page)
    assert "static version" in data["text/plain"]
    assert meta["dro_lab"]["static_twin"]["frames"]


@pytest.mark.parametrize(
    "environ, expected",
    [
        ({}, "jupyter"),
        ({"VSCODE_PID": "12"}, "vscode"),
        ({"VSCODE_PID": "12", "JPY_PARENT_PID": "3"}, "jupyter"),  # JupyterLab started from VS Code's terminal
        ({"PYDEVD_IPYTHON_COMPATIBLE_DEBUGGING": "1", "JPY_PARENT_PID": "3"}, "vscode"),
        ({"COLAB_RELEASE_TAG": "release-colab"}, "colab"),
        ({"DRO_LAB_FRONT_END": "colab", "VSCODE_PID": "12"}, "colab"),
    ],
)
def test_front_end_reads_the_environment(environ, expected, monkeypatch):
    monkeypatch.delitem(__import__("sys").modules, "google.colab", raising=False)
    assert front_end(environ) == expected


def test_a_twin_that_cannot_be_built_warns_and_the_live_panel_still_shows():
    def figure_fn(beta):
        if beta > 100:
            raise RuntimeError("no figure past 100")
        return go.Figure(go.Scatter(x=[0, 1], y=[0, beta]))

    box = panels.panel(figure_fn, {"beta": panels.beta_slider(1.0)}, title="t")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data, meta = DisplayFormatter().format(box)
    assert WIDGET_VIEW in data and not meta
    assert any("could not be built" in str(w.message) for w in caught)
    assert panels.panel(figure_fn, {"beta": panels.beta_slider(1.0)}, twin=False).static_twin is None


@pytest.mark.browser
@pytest.mark.parametrize("where", ["colab", "vscode"])
def test_the_fallback_page_draws_the_twin_and_its_slider_moves_in_chromium(where, monkeypatch, tmp_path):
    """The Colab and VS Code outputs, opened in Chromium with plotly.js served for its CDN address: the figure is
    drawn (through the loader script in VS Code's case) and a slider step changes the drawn bars."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from _browser import CHROMIUM_ARGS, find_chromium
    from plotly.offline import get_plotlyjs

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium on this machine")
    monkeypatch.setenv("DRO_LAB_FRONT_END", where)
    data, _ = DisplayFormatter().format(panels.done_r_panel(LOSSES, LABELS, r=1.0))
    page_file = tmp_path / "out.html"
    page_file.write_text(data["text/html"] if where == "colab" else f"<html><body>{data['text/html']}</body></html>")
    read = "() => Array.from(document.querySelector('.js-plotly-plot')._fullData.slice(-1)[0].y)"
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 900, "height": 900})
        page.route(
            "https://cdn.plot.ly/**",
            lambda route: route.fulfill(body=get_plotlyjs(), content_type="application/javascript"),
        )
        page.goto(page_file.as_uri())
        page.wait_for_selector(".slider-rail-touch-rect")
        before = page.evaluate(read)
        box = page.query_selector(".slider-rail-touch-rect").bounding_box()
        page.mouse.click(box["x"] + 2, box["y"] + box["height"] / 2)  # r = 0.1
        page.wait_for_timeout(300)
        after = page.evaluate(read)
        note = page.inner_text(".dro-lab-static-note")
        browser.close()
    w = _softmax(LOSSES / 0.1)
    np.testing.assert_allclose(after, [np.mean(w[np.equal(LABELS, c)] * 24) for c in range(4)], rtol=1e-3)
    assert not np.allclose(before, after)
    assert "static version" in note
