"""GI-LS on the inputs' scale: the shift report against hand-computed and NumPy oracles, T = 0 as plain label
smoothing, the default η that keeps the labels (and the paper's η = 2 that does not) on embedded digits, and the
search box."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
import torch

import dro_lab
from dro_lab.attacks import gils_shift, gils_shift_report
from dro_lab.data import load_digits
from dro_lab.engine import fit
from dro_lab.experiments import GILS_SEARCH_SPACE
from dro_lab.models import DigitsCNN, LogisticRegression
from dro_lab.strategies.smoothing import GILSStrategy

torch.set_num_threads(1)


def _linear(weight, bias=None) -> LogisticRegression:
    """A LogisticRegression (features = the flattened input) with the given W (k × d) and b."""
    w = torch.as_tensor(weight, dtype=torch.float64)
    model = LogisticRegression(w.shape[1], w.shape[0]).double()
    with torch.no_grad():
        model.classifier.weight.copy_(w)
        model.classifier.bias.copy_(torch.zeros(w.shape[0]) if bias is None else torch.as_tensor(bias))
    return model


# --------------------------------------------------------------------------- the report, by hand


def test_report_matches_a_hand_computed_one_step_shift():
    # W = [[1, 0], [-1, 0]], α = γ = 0, η = 1, T = 1, y = 0: the ascent direction is Wᵀ(p − e₀) = (−2 p₁, 0),
    # with p₁ = σ(−2 x₁). x = (0.1, 1) moves by 2σ(−0.2) ≈ 0.90 to x₁ < 0 (class 1); x = (2, 0) barely moves.
    model = _linear([[1.0, 0.0], [-1.0, 0.0]])
    x = torch.tensor([[0.1, 1.0], [2.0, 0.0]], dtype=torch.float64)
    y = torch.tensor([0, 0])
    step = [2 / (1 + math.exp(0.2)), 2 / (1 + math.exp(4.0))]
    rel = [step[0] / math.hypot(0.1, 1.0), step[1] / 2.0]
    r = gils_shift_report(model, x, y, alpha=0.0, gamma=0.0, eta=1.0, steps=1, clamp=None)
    assert r["relative_shift_mean"] == pytest.approx(sum(rel) / 2, rel=1e-9)
    assert r["relative_shift_max"] == pytest.approx(rel[0], rel=1e-9)
    assert r["label_kept"] == 0.5 and r["clean_accuracy"] == 1.0 and r["label_kept_of_correct"] == 0.5
    assert r["transport_cost_mean"] == pytest.approx((step[0] ** 2 + step[1] ** 2) / 4, rel=1e-9)
    assert r["n"] == 2 and r["judge"] == "model"


def _numpy_shift(w, b, x, y, *, alpha, gamma, eta, steps, clamp):
    """Algorithm 1 for a linear model f(x) = x, s = W f + b: x ← Π(x + η[Wᵀ(p − ȳ_α) − γ(x − x₀)])."""
    k = w.shape[0]
    target = np.full((len(y), k), alpha / (k - 1))
    target[np.arange(len(y)), y] = 1 - alpha
    x0 = x.reshape(len(x), -1)
    xt = x0.copy()
    for _ in range(steps):
        s = xt @ w.T + b
        p = np.exp(s - s.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        xt = np.clip(xt + eta * ((p - target) @ w - gamma * (xt - x0)), *clamp)
    return xt, x0


def test_report_matches_a_numpy_oracle_with_a_judge_model():
    rng = np.random.default_rng(0)
    k, d = 3, 4
    w, b = rng.normal(size=(k, d)) * 2, rng.normal(size=k)
    w_judge, b_judge = rng.normal(size=(k, d)), rng.normal(size=k)
    x = rng.uniform(0.05, 1.0, size=(40, 1, 2, 2))  # images: norms over every non-batch dimension
    y = rng.integers(0, k, size=40)
    kw = dict(alpha=0.3, gamma=0.5, eta=0.4, steps=6, clamp=(0.0, 1.0))
    xt, x0 = _numpy_shift(w, b, x, y, **kw)
    rel = np.linalg.norm(xt - x0, axis=1) / np.linalg.norm(x0, axis=1)
    model, judge = _linear(w, b), _linear(w_judge, b_judge)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)

    r = gils_shift_report(model, xs, ys, **kw, judge_model=judge)
    kept = (xt @ w_judge.T + b_judge).argmax(1) == y
    clean = (x0 @ w_judge.T + b_judge).argmax(1) == y
    assert 0 < rel.mean() < 1 and 0 < kept.mean() < 1  # a non-trivial case
    assert r["relative_shift_mean"] == pytest.approx(rel.mean(), rel=1e-9)
    assert r["relative_shift_max"] == pytest.approx(rel.max(), rel=1e-9)
    assert r["label_kept"] == pytest.approx(kept.mean()) and r["clean_accuracy"] == pytest.approx(clean.mean())
    assert r["label_kept_of_correct"] == pytest.approx(kept[clean].mean())
    assert r["transport_cost_mean"] == pytest.approx((0.5 * ((xt - x0) ** 2).sum(1)).mean(), rel=1e-9)
    assert r["judge"] == "judge_model"

    own = gils_shift_report(model, xs, ys, **kw)  # judged by the model under attack
    assert own["label_kept"] == pytest.approx(((xt @ w.T + b).argmax(1) == y).mean())
    assert own["relative_shift_mean"] == r["relative_shift_mean"]


def test_report_validates_its_inputs():
    model = _linear([[1.0, 0.0], [-1.0, 0.0]])
    x, y = torch.tensor([[0.5, 0.5], [0.0, 0.0]], dtype=torch.float64), torch.tensor([0, 1])
    kw = dict(alpha=0.1, gamma=0.0, eta=0.1, steps=1)
    with pytest.raises(ValueError, match="all-zero"):
        gils_shift_report(model, x, y, **kw)
    with pytest.raises(TypeError, match="judge_model"):
        gils_shift_report(model, x[:1], y[:1], **kw, judge_model="ce")
    with pytest.raises(TypeError, match=r"\by\b"):
        gils_shift_report(model, x[:1], torch.tensor([0.5]), **kw)
    with pytest.raises(TypeError, match=r"\bx\b"):
        gils_shift_report(model, [[0.5, 0.5]], y[:1], **kw)
    with pytest.raises(ValueError, match="eta"):
        gils_shift_report(model, x[:1], y[:1], alpha=0.1, gamma=0.0, eta=0.0, steps=1)


# --------------------------------------------------------------------------- T = 0 is plain label smoothing


@pytest.mark.parametrize("outer", ["sequential", "joint", "generated"])
def test_zero_steps_is_one_plain_label_smoothing_step(outer):
    train, _ = load_digits(seed=0)
    data = train.subset(torch.arange(16))
    alpha, lr = 0.2, 0.5
    torch.manual_seed(4)
    engine = DigitsCNN()
    hand = DigitsCNN()
    hand.load_state_dict(engine.state_dict())
    x, y = data.batch(torch.arange(16))[:2]
    with torch.no_grad():
        logits = hand(x).double().numpy()
    target = np.full((16, 10), alpha / 9)
    target[np.arange(16), y.numpy()] = 1 - alpha
    log_p = logits - logits.max(1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(1, keepdims=True))
    ls_loss = -(target * log_p).sum(1).mean()  # the paper's eq. 3 targets, −Σ ȳ log p

    hist = fit(engine, data, strategy=GILSStrategy(alpha, steps=0, outer=outer), epochs=1, batch_size=16, lr=lr)
    assert hist.last["steps"] == 1  # one step per batch, not the two of T > 0
    assert hist.last["train_loss"] == pytest.approx(ls_loss, rel=1e-5)
    assert hist.last["gils_relative_shift"] == 0.0 and hist.last["gils_transport_cost"] == 0.0

    target_t = torch.from_numpy(target).float()
    (-(target_t * torch.log_softmax(hand(x), 1)).sum(1).mean()).backward()
    with torch.no_grad():
        for p in hand.parameters():
            p -= lr * p.grad
    for a, b in zip(engine.parameters(), hand.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- the default η keeps the labels


@pytest.mark.slow
def test_default_eta_keeps_labels_where_the_papers_eta_changes_them():
    """The audit's finding on embedded digits: GI-LS trained briefly at the paper's η = 2 shifts images into other
    classes (judged by an independent cross-entropy model), at the default η they keep their labels."""
    default_eta = inspect.signature(GILSStrategy).parameters["eta"].default
    train, test = load_digits(seed=0)
    data = train.subset(torch.arange(512))

    def trained(strategy, seed, epochs):
        dro_lab.seed_everything(seed)
        model = DigitsCNN()
        fit(model, data, strategy=strategy, epochs=epochs, batch_size=32, lr=0.005, optimizer="adam", seed=seed)
        return model

    judge = trained(None, 1, 8)  # plain cross-entropy, another seed
    x, y = test.x[:256], test.y[:256]
    report = {}
    for eta in (default_eta, 2.0):
        model = trained(GILSStrategy(0.3, gamma=1e-3, eta=eta, steps=10), 0, 3)
        report[eta] = gils_shift_report(model, x, y, alpha=0.3, gamma=1e-3, eta=eta, steps=10, judge_model=judge)
    new, old = report[default_eta], report[2.0]
    assert new["clean_accuracy"] >= 0.9
    assert new["label_kept_of_correct"] >= 0.9 and new["relative_shift_mean"] <= 0.05
    assert old["label_kept"] <= 0.1 and old["relative_shift_mean"] >= 0.3


# --------------------------------------------------------------------------- the search box


def test_search_box_is_on_the_input_scale_and_contains_plain_ls():
    kind, low, high = GILS_SEARCH_SPACE["eta"]
    default_eta = inspect.signature(GILSStrategy).parameters["eta"].default
    assert kind == "logfloat" and 0 < low <= 1e-3 and default_eta < high <= 0.5  # not the paper's [1.5, 3]
    assert low < default_eta < high
    assert GILS_SEARCH_SPACE["steps"][:2] == ("int", 0)
    assert GILS_SEARCH_SPACE["epochs"][0] == "int" and GILS_SEARCH_SPACE["epochs"][2] <= 60
    for corner in ((0, low), (GILS_SEARCH_SPACE["steps"][2], high)):  # every corner builds a strategy
        GILSStrategy(GILS_SEARCH_SPACE["alpha"][2], eta=corner[1], steps=corner[0])


def test_gils_shift_with_zero_steps_moves_nothing_at_any_eta():
    x, y = torch.rand(4, 1, 8, 8), torch.tensor([0, 1, 2, 3])
    for eta in (1e-3, 2.0):
        out, cost = gils_shift(DigitsCNN(), x, y, alpha=0.3, gamma=1e-3, eta=eta, steps=0)
        assert torch.equal(out, x) and torch.equal(cost, torch.zeros(4))
