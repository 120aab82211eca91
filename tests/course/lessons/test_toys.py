"""Lesson 01's 2-D minority toy: each method trains the objective it names (checked against closed forms of the
robust losses), the runs are paired over seeds, and the figures draw what the runs hold.

Oracles: the log-mean-exp, mean + (β/4)·Var, the mean of the top-k and the two-group log-mean-exp written out
here in numpy; a hand-run ``dro_lab.fit`` for the pairing; the logistic model's sigmoid for the boundary grids.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

import dro_lab
from dro_course.lessons.dro_foundations import MinorityToy, run_minority_toy, toy_strategy
from dro_lab.data import make_minority_blobs
from dro_lab.experiments import judge

LOSSES = torch.tensor([0.3, 1.2, 0.1, 2.0, 0.8, 0.5], dtype=torch.float64)
GROUPS = torch.tensor([0, 0, 0, 0, 1, 1])
IDX = torch.arange(6)


def _reduce(method, value, losses=LOSSES):
    return float(toy_strategy(method, value).reduce(losses, indices=IDX, groups=GROUPS))


def test_each_method_reduces_to_its_closed_form():
    ell = LOSSES.numpy()
    beta = 1.5
    assert _reduce("ERM", None) == pytest.approx(ell.mean())
    assert _reduce("KL", beta) == pytest.approx(math.log(np.mean(np.exp(beta * ell))) / beta, rel=1e-10)
    small = 0.5  # below 2/(mean - min): χ² is mean + (β/4)·Var exactly (population variance)
    assert small < 2 / (ell.mean() - ell.min())
    assert _reduce("χ²", small) == pytest.approx(ell.mean() + small / 4 * ell.var(), rel=1e-10)
    # CVaR at α = 1/3 of n = 6: the mean of the two largest losses
    assert _reduce("CVaR", 1 / 3) == pytest.approx(np.sort(ell)[-2:].mean(), rel=1e-10)
    # group KL: the log-mean-exp of the two group means (uniform prior over groups)
    m = np.array([ell[:4].mean(), ell[4:].mean()])
    assert _reduce("group KL", beta) == pytest.approx(math.log(np.mean(np.exp(beta * m))) / beta, rel=1e-10)
    # the KL ball at radius r is KL penalised at its dual β(r): the max of <q, l> with KL(q||p) = r
    q = dro_lab.worst_case_weights(LOSSES, divergence="kl", radius=0.1)
    assert _reduce("KL ball", 0.1) == pytest.approx(float(q @ LOSSES), rel=1e-8)
    kl = float((q * torch.log(q * len(q))).sum())
    assert kl == pytest.approx(0.1, abs=1e-8)


@pytest.fixture(scope="module")
def toy() -> MinorityToy:
    torch.set_num_threads(1)
    return run_minority_toy(
        beta=2.0, radius=0.1, alpha=0.2, seeds=[3, 4], kl_betas=[0.5, 10.0], cvar_alphas=[0.5], n_train=80, epochs=30
    )


def test_runs_cover_every_arm_and_seed(toy):
    arms = {(r["method"], r["value"]) for r in toy.runs}
    assert arms == {
        ("ERM", None),
        ("KL", 0.5),
        ("KL", 2.0),
        ("KL", 10.0),
        ("χ²", 2.0),
        ("KL ball", 0.1),
        ("CVaR", 0.5),
        ("CVaR", 0.2),
        ("group KL", 0.5),
        ("group KL", 2.0),
        ("group KL", 10.0),
    }
    assert len(toy.runs) == 2 * len(arms)
    assert {r["label"] for r in toy.rows(headline=True)} == set(toy.headline.values()) == set(toy.models)
    for r in toy.runs:
        assert 0 <= r["worst_group_accuracy"] <= r["accuracy"] + 1e-12 <= 1 + 1e-12  # the groups are balanced in test
        assert r["worst_group_accuracy"] == pytest.approx(min(r["majority_accuracy"], r["minority_accuracy"]))


def test_erm_run_is_a_plain_fit_from_the_shared_initialisation(toy):
    train, test = make_minority_blobs(80, minority_fraction=0.1, noise=1.0, seed=3)
    dro_lab.seed_everything(3)
    model = dro_lab.LogisticRegression(2, 2)
    hist = dro_lab.fit(model, train, test=test, epochs=30, batch_size=80, lr=0.05, momentum=0.9, device="cpu", seed=3,
                       progress=False)  # fmt: skip
    erm = next(r for r in toy.runs if r["method"] == "ERM" and r["seed"] == 3)
    assert erm["accuracy"] == pytest.approx(hist.last["test_accuracy"])
    w = (model.classifier.weight[1] - model.classifier.weight[0]).detach().double()
    assert erm["angle"] == pytest.approx(math.degrees(math.atan2(float(w[1]), float(w[0]))), abs=1e-6)
    assert erm["weight_norm"] == pytest.approx(float(w.norm()), rel=1e-6)


def test_differences_are_paired_by_seed_and_judged(toy):
    d = toy.differences("group KL")
    by = {(r["method"], r["seed"]): r["worst_group_accuracy"] for r in toy.rows(headline=True)}
    np.testing.assert_allclose(d, [by["group KL", s] - by["ERM", s] for s in (3, 4)])
    verdicts = toy.verdicts()
    assert set(verdicts) == set(toy.headline.values()) - {"ERM"}
    v = verdicts[toy.headline["group KL"]]
    assert v == judge(d)
    assert v.verdict == "not judged"  # two seeds never give a verdict
    assert "2 paired seeds" in toy.verdicts_markdown()
    with pytest.raises(ValueError, match="method"):
        toy.differences("nope")


def test_a_diverged_toy_run_is_named_in_its_verdict_not_dropped(toy):
    runs = [dict(r) for r in toy.runs]
    for r in runs:
        if r["method"] == "KL" and r["headline"] and r["seed"] == 4:
            r["worst_group_accuracy"] = math.nan  # what a diverged run records
    broken = dataclasses.replace(toy, runs=runs)
    v = broken.verdicts()[toy.headline["KL"]]
    assert v.verdict == "not judged" and v.n == 1 and v.of == 2
    assert v.set_aside == ("seed 4 diverged (KL: nan)",)
    assert "only 1 of 2 paired: seed 4 diverged (KL: nan)" in broken.verdicts_markdown()
    assert broken.verdicts()[toy.headline["CVaR"]] == toy.verdicts()[toy.headline["CVaR"]]  # the others untouched


def test_boundary_grid_is_the_logistic_model(toy):
    label = toy.headline["KL"]
    gx, gy, prob = toy.grids[label]
    model = toy.models[label]
    W, b = model.classifier.weight.detach().double(), model.classifier.bias.detach().double()
    i, j = 7, 50
    logit = (W[1] - W[0]) @ torch.tensor([gx[j], gy[i]], dtype=torch.float64) + (b[1] - b[0])
    assert prob[i, j] == pytest.approx(float(torch.sigmoid(logit)), abs=1e-5)


def test_table_lists_every_method_at_the_lessons_knobs(toy):
    table = toy.table_markdown()
    for label in toy.headline.values():
        assert f"| {label} |" in table


def test_figures_draw_the_runs(toy):
    lesson = pytest.importorskip("dro_course.lessons.dro_foundations")
    fig = lesson.toy_boundaries_figure(toy)
    contours = [t for t in fig.data if t.type == "contour"]
    assert len(contours) == len(toy.models)
    colors = [t.line.color for t in contours]
    assert len(set(colors)) == len(colors)
    fair = next(t for t in fig.data if t.name and "fair" in t.name)
    assert list(fair.x) == [0, 0]
    sweep = lesson.toy_sweep_figure(toy, "beta")
    lines = [t for t in sweep.data if t.x and t.x[0] is not None]
    assert {t.name.split(":")[0] for t in lines} == {"KL", "group KL"}
    for t in lines:
        y = np.array(t.y)
        assert np.all(y + np.array(t.error_y.array) <= 1 + 1e-12)
        assert np.all(y - np.array(t.error_y.arrayminus) >= -1e-12)
    kl_worst = next(t for t in lines if t.name == "KL: worst-group")
    want = [np.mean([r["worst_group_accuracy"] for r in toy.rows(["KL"]) if r["value"] == b]) for b in (0.5, 2, 10)]
    np.testing.assert_allclose(kl_worst.y, want)
    assert "α" in lesson.toy_sweep_figure(toy, "alpha").layout.xaxis.title.text


def test_toy_panel_builds():
    lesson = pytest.importorskip("dro_course.lessons.dro_foundations")
    box = lesson.toy_panel(beta=3.0, radius=0.2, alpha=0.3, n_train=40, epochs=2)
    sliders = box.children[1].children[:3]
    assert [s.value for s in sliders] == pytest.approx([3.0, 0.2, 0.3])
    assert "β" in sliders[0].description


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"seeds": []}, TypeError, "seeds"),
        ({"seeds": [0.5]}, TypeError, r"seeds\[0\]"),
        ({"beta": 0.0}, ValueError, "beta"),
        ({"alpha": 1.5}, ValueError, "alpha"),
        ({"radius": -1.0}, ValueError, "radius"),
        ({"kl_betas": [-1.0]}, ValueError, "kl_betas"),
        ({"kl_betas": "1"}, TypeError, "kl_betas"),
        ({"methods": ["SVM"]}, ValueError, "methods"),
        ({"sweep": ["SVM"]}, ValueError, "sweep"),
        ({"n_train": 5}, ValueError, "n_train"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    base = dict(beta=1.0, radius=0.1, alpha=0.2, seeds=[0], n_train=40, epochs=1)
    with pytest.raises(error, match=match):
        run_minority_toy(**{**base, **kwargs})


def test_toy_strategy_bad_arguments():
    with pytest.raises(TypeError, match="method"):
        toy_strategy(3)
    with pytest.raises(ValueError, match="method"):
        toy_strategy("SVM")
    with pytest.raises(ValueError, match="alpha"):
        toy_strategy("CVaR", 0.0)
    with pytest.raises(TypeError, match="beta"):
        toy_strategy("KL", None)


def test_hardest_minority_share_counts_the_top_losses(toy):
    model = toy.models[toy.headline["ERM"]]
    with torch.no_grad():
        logits = model(toy.train.x)
    # cross-entropy written out: log-sum-exp of the logits minus the true class's logit
    losses = torch.logsumexp(logits, 1) - logits.gather(1, toy.train.y[:, None])[:, 0]
    order = np.argsort(-losses.numpy(), kind="stable")[:8]  # 10 % of 80
    assert toy.hardest_minority_share(0.1) == pytest.approx(float((toy.train.groups.numpy()[order] == 1).mean()))
    assert toy.hardest_minority_share(1.0) == pytest.approx(float((toy.train.groups == 1).double().mean()))
    with pytest.raises(ValueError, match="fraction"):
        toy.hardest_minority_share(0.0)


def test_unsettled_flags_an_oscillating_objective():
    # KL at β = 50 with lr = 0.5 is far too sharp for the step; ERM at lr = 0.01 settles
    toy = run_minority_toy(beta=50.0, radius=0.1, alpha=0.2, seeds=[0], methods=["KL"], n_train=80, epochs=60, lr=0.5)
    for r in toy.runs:
        h = toy.histories[r["label"]]
        tail = np.array([rec["train_objective"] for rec in h.records[-10:]])
        assert r["wobble"] == pytest.approx((tail.max() - tail.min()) / abs(tail.mean()))
    assert "KL, β=50" in toy.unsettled(0.01)
    calm = run_minority_toy(
        beta=1.0, radius=0.1, alpha=0.2, seeds=[0], methods=["ERM"], n_train=80, epochs=200, lr=0.01
    )
    assert calm.unsettled(0.01) == {}
