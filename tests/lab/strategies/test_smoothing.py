"""Label-smoothing DRO (GI-LS), its baselines and the Bayesian optimisation, against independent oracles."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dro_lab.attacks import gils_shift
from dro_lab.data import ArrayDataset, cutmix_batch, cutout_batch, load_digits, mixup_batch
from dro_lab.engine import fit
from dro_lab.experiments import GILS_SEARCH_SPACE, best_at_bounds, tune
from dro_lab.losses import ls_cross_entropy, smoothed_targets, torch_label_smoothing
from dro_lab.models import MLP, DigitsCNN, LogisticRegression
from dro_lab.strategies.smoothing import (
    AttackAugmentStrategy,
    CutMixStrategy,
    CutoutStrategy,
    GILSStrategy,
    LabelSmoothingStrategy,
    MixupStrategy,
)

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def digits():
    train, _ = load_digits(seed=0)
    return train.subset(torch.arange(64))


def _cnn(seed: int = 0) -> DigitsCNN:
    torch.manual_seed(seed)
    return DigitsCNN()


# --------------------------------------------------------------------------- LS-CE


def _numpy_ls_ce(logits: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    b, k = logits.shape
    target = np.full((b, k), alpha / (k - 1))
    target[np.arange(b), y] = 1 - alpha
    shifted = logits - logits.max(1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    return -(target * log_p).sum(1)


@pytest.mark.parametrize("k,alpha", [(2, 0.0), (3, 0.3), (6, 0.5), (10, 0.9)])
def test_ls_cross_entropy_matches_numpy_torch_and_soft_targets(k, alpha):
    gen = torch.Generator().manual_seed(k)
    logits = torch.randn(7, k, generator=gen, dtype=torch.float64) * 3
    y = torch.randint(k, (7,), generator=gen)
    ours = ls_cross_entropy(logits, y, alpha=alpha)
    np.testing.assert_allclose(ours.numpy(), _numpy_ls_ce(logits.numpy(), y.numpy(), alpha), rtol=1e-12)
    eps = torch_label_smoothing(alpha, k)
    assert eps == pytest.approx(alpha * k / (k - 1))
    torch_ls = F.cross_entropy(logits, y, reduction="none", label_smoothing=eps)
    torch.testing.assert_close(ours, torch_ls, rtol=1e-12, atol=1e-12)
    soft = smoothed_targets(y, k, alpha, dtype=torch.float64)
    torch.testing.assert_close(soft.sum(1), torch.ones(7, dtype=torch.float64))
    torch.testing.assert_close(F.cross_entropy(logits, soft, reduction="none"), ours, rtol=1e-12, atol=1e-12)
    assert ls_cross_entropy(logits, y, alpha=alpha, reduction="mean").item() == pytest.approx(ours.mean().item())


def test_ls_convention_values_and_pytorch_epsilon():
    soft = smoothed_targets(torch.tensor([1]), 5, 0.4)
    torch.testing.assert_close(soft, torch.tensor([[0.1, 0.6, 0.1, 0.1, 0.1]]))
    assert torch_label_smoothing(0.5, 6) == pytest.approx(0.6)  # the spec's example


def test_ls_soft_targets_are_smoothed_by_the_same_affine_map():
    logits = torch.randn(4, 3, dtype=torch.float64)
    y = torch.tensor([0, 2, 1, 1])
    onehot = F.one_hot(y, 3).double()
    torch.testing.assert_close(ls_cross_entropy(logits, onehot, alpha=0.2), ls_cross_entropy(logits, y, alpha=0.2))


@pytest.mark.parametrize(
    "alpha, error",
    [(-0.1, ValueError), (0.7, ValueError), (1.0, ValueError), (float("nan"), ValueError), (True, TypeError)],
)
def test_alpha_out_of_range_raises(alpha, error):
    with pytest.raises(error, match="alpha"):
        ls_cross_entropy(torch.zeros(2, 3), torch.tensor([0, 1]), alpha=alpha)
    with pytest.raises(error, match="alpha"):
        smoothed_targets(torch.tensor([0, 1]), 3, alpha)
    smoothed_targets(torch.tensor([0, 1]), 3, 2 / 3)  # the edge (k−1)/k is allowed (uniform targets)


# --------------------------------------------------------------------------- gils_shift


def _penalised_objective(model, x_new, x, y, alpha, gamma):
    """Per-sample LS-CE − γ½‖f(x') − f(x)‖², computed independently (eval mode, numpy targets)."""
    model.eval()
    with torch.no_grad():
        logits = model(x_new).double()
        k = logits.shape[1]
        target = torch.full((len(y), k), alpha / (k - 1), dtype=torch.float64)
        target[torch.arange(len(y)), y] = 1 - alpha
        ce = -(target * torch.log_softmax(logits, 1)).sum(1)
        cost = 0.5 * ((model.penultimate(x_new) - model.penultimate(x)).double() ** 2).sum(1)
    return ce - gamma * cost


def test_gils_shift_zero_steps_is_identity(digits):
    x, y = digits.batch(torch.arange(16))[:2]
    out, cost = gils_shift(_cnn(), x, y, alpha=0.3, gamma=1e-3, eta=2.0, steps=0)
    assert torch.equal(out, x) and torch.equal(cost, torch.zeros(16))


def test_gils_shift_increases_penalised_objective_and_keeps_range(digits):
    x, y = digits.batch(torch.arange(32))[:2]
    model = _cnn()
    model.train()
    for p in model.parameters():
        p.grad = None
    for alpha, gamma in ((0.0, 1.0), (0.3, 1e-3)):
        x_t, cost = gils_shift(model, x, y, alpha=alpha, gamma=gamma, eta=0.5, steps=5)
        assert model.training  # mode restored
        assert all(p.grad is None for p in model.parameters())  # only the inputs got gradients
        assert float(x_t.min()) >= 0.0 and float(x_t.max()) <= 1.0
        before = _penalised_objective(model, x, x, y, alpha, gamma)
        after = _penalised_objective(model, x_t, x, y, alpha, gamma)
        assert after.sum() > before.sum()
        assert (after >= before - 1e-6).float().mean() >= 0.9
        with torch.no_grad():
            expected_cost = 0.5 * ((model.penultimate(x_t) - model.penultimate(x)) ** 2).sum(1)
        torch.testing.assert_close(cost, expected_cost)
        model.train()


def test_gils_shift_uses_eval_mode_and_detached_anchors(digits):
    x, y = digits.batch(torch.arange(8))[:2]
    x = x.flatten(1)
    torch.manual_seed(1)
    model = MLP(64, 10, hidden=(32,), dropout=0.5).train()
    a, _ = gils_shift(model, x, y, alpha=0.1, gamma=1.0, eta=1.0, steps=3)
    b, _ = gils_shift(model, x, y, alpha=0.1, gamma=1.0, eta=1.0, steps=3)
    assert torch.equal(a, b)  # dropout off during generation
    assert not torch.equal(a, x)


def test_transport_cost_falls_as_gamma_grows_and_gamma_matters(digits):
    x, y = digits.batch(torch.arange(32))[:2]
    model = _cnn(3)
    costs, shifted = [], []
    for gamma in (0.0, 1.0, 10.0, 100.0):  # the stable range for this net at η = 0.5 (γ = 1000 diverges)
        x_t, cost = gils_shift(model, x, y, alpha=0.0, gamma=gamma, eta=0.5, steps=10)
        costs.append(float(cost.mean()))
        shifted.append(x_t)
    assert all(later < 0.97 * earlier for earlier, later in zip(costs, costs[1:])), costs
    assert 0 < costs[-1] < 0.1 * costs[0]
    assert not torch.allclose(shifted[0], shifted[2])  # pitfall 20: γ enters the computation


def test_alpha_flips_the_shift_direction_for_a_confident_two_class_sample():
    model = LogisticRegression(2, 2)
    with torch.no_grad():
        model.classifier.weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
        model.classifier.bias.zero_()
    x, y = torch.tensor([[2.0, 0.5]]), torch.tensor([0])
    p0 = torch.softmax(model(x), 1)[0, 0].item()
    assert p0 > 0.7  # confident beyond 1 − α for α = 0.3
    p = {}
    for alpha in (0.0, 0.3):
        x_t, _ = gils_shift(model, x, y, alpha=alpha, gamma=0.0, eta=0.5, steps=10, clamp=None)
        p[alpha] = torch.softmax(model(x_t), 1)[0, 0].item()
    assert p[0.0] < p0 < p[0.3]


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(steps=-1), ValueError),
        (dict(steps=1.5), TypeError),
        (dict(gamma=-1.0), ValueError),
        (dict(eta=0.0), ValueError),
        (dict(alpha=0.95), ValueError),
    ],
)
def test_gils_shift_validation(kwargs, error):
    args = dict(alpha=0.3, gamma=1e-3, eta=2.0, steps=2) | kwargs
    with pytest.raises(error, match=next(iter(kwargs))):
        gils_shift(_cnn(), torch.rand(2, 1, 8, 8), torch.tensor([0, 1]), **args)


def test_gamma_zero_is_legitimate():
    out, _ = gils_shift(_cnn(), torch.rand(2, 1, 8, 8), torch.tensor([0, 1]), alpha=0.3, gamma=0.0, eta=2.0, steps=2)
    assert out.shape == (2, 1, 8, 8)


# --------------------------------------------------------------------------- GI-LS through fit


def _strip(history):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in history.records]


@pytest.mark.parametrize("outer,per_batch", [("sequential", 2), ("joint", 1), ("generated", 1)])
def test_gils_strategy_through_fit(digits, outer, per_batch):
    runs = []
    for _ in range(2):
        hist = fit(
            _cnn(),
            digits,
            strategy=GILSStrategy(alpha=0.2, steps=3, outer=outer),
            epochs=2,
            batch_size=16,
            lr=0.1,
            progress=False,
            seed=5,
        )
        runs.append(hist)
    assert runs[0]["steps"] == [4 * per_batch] * 2
    assert all(c > 0 for c in runs[0]["gils_transport_cost"]) and all(s > 0 for s in runs[0]["gils_input_shift"])
    assert _strip(runs[0]) == _strip(runs[1])


def test_gils_sequential_steps_equal_a_hand_written_loop(digits):
    data = digits.subset(torch.arange(16))
    alpha, lr = 0.3, 0.5
    engine, hand = _cnn(7), _cnn(7)
    fit(
        engine,
        data,
        strategy=GILSStrategy(alpha=alpha, steps=4, eta=1.0),
        epochs=1,
        batch_size=16,
        lr=lr,
        progress=False,
    )
    x, y = data.batch(torch.arange(16))[:2]
    x_gen, _ = gils_shift(hand, x, y, alpha=alpha, gamma=1e-3, eta=1.0, steps=4)
    opt = torch.optim.SGD(hand.parameters(), lr=lr)
    for batch in (x_gen, x):  # the paper's two SGD steps: generated, then original
        opt.zero_grad()
        ls_cross_entropy(hand(batch), y, alpha=alpha, reduction="mean").backward()
        opt.step()
    for a, b in zip(engine.parameters(), hand.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_label_smoothing_strategy_is_one_ls_step(digits):
    data = digits.subset(torch.arange(16))
    engine, hand = _cnn(2), _cnn(2)
    hist = fit(engine, data, strategy=LabelSmoothingStrategy(0.2), epochs=1, batch_size=16, lr=0.5, progress=False)
    assert hist.last["steps"] == 1
    x, y = data.batch(torch.arange(16))[:2]
    ls_cross_entropy(hand(x), y, alpha=0.2, reduction="mean").backward()
    with torch.no_grad():
        for p in hand.parameters():
            p -= 0.5 * p.grad
    for a, b in zip(engine.parameters(), hand.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_gils_strategy_rejects_alpha_beyond_the_class_count():
    data = ArrayDataset(torch.rand(4, 1, 8, 8), torch.tensor([0, 1, 0, 1]))
    with pytest.raises(ValueError, match="alpha"):
        fit(DigitsCNN(num_classes=2), data, strategy=GILSStrategy(alpha=0.6), epochs=1, progress=False)
    with pytest.raises(ValueError, match="outer"):
        GILSStrategy(outer="both")


# --------------------------------------------------------------------------- mixing baselines


def test_mixup_targets_and_inputs(digits):
    x, y = digits.batch(torch.arange(16))[:2]
    gen = torch.Generator().manual_seed(0)
    x_mix, soft, lam, perm = mixup_batch(x, y, 10, beta_param=0.4, generator=gen)
    assert 0.0 <= lam <= 1.0
    torch.testing.assert_close(soft.sum(1), torch.ones(16))
    torch.testing.assert_close(x_mix, lam * x + (1 - lam) * x[perm])
    expected = lam * F.one_hot(y, 10).float() + (1 - lam) * F.one_hot(y[perm], 10).float()
    torch.testing.assert_close(soft, expected)
    again = mixup_batch(x, y, 10, beta_param=0.4, generator=torch.Generator().manual_seed(0))
    assert again[2] == lam and torch.equal(again[0], x_mix)


def test_mixup_lambda_follows_beta():
    gen = torch.Generator().manual_seed(1)
    x, y = torch.zeros(2, 1, 2, 2), torch.tensor([0, 1])
    lams = np.array([mixup_batch(x, y, 2, beta_param=2.0, generator=gen)[2] for _ in range(2000)])
    assert lams.mean() == pytest.approx(0.5, abs=0.02)
    assert lams.var() == pytest.approx(1 / 20, abs=0.006)  # Beta(2, 2): variance 1/20


def test_cutmix_box_area_matches_label_mix(digits):
    x, y = digits.batch(torch.arange(16))[:2]
    for seed in range(10):
        gen = torch.Generator().manual_seed(seed)
        out, soft, kept, (top, bottom, left, right), perm = cutmix_batch(x, y, 10, generator=gen)
        assert 0.0 <= kept <= 1.0
        assert kept == pytest.approx(1 - (bottom - top) * (right - left) / 64)
        torch.testing.assert_close(soft.sum(1), torch.ones(16))
        torch.testing.assert_close(soft, kept * F.one_hot(y, 10).float() + (1 - kept) * F.one_hot(y[perm], 10).float())
        inside = torch.zeros(8, 8, dtype=torch.bool)
        inside[top:bottom, left:right] = True
        assert torch.equal(out[:, :, inside], x[perm][:, :, inside])
        assert torch.equal(out[:, :, ~inside], x[:, :, ~inside])


def test_cutout_zeroes_one_clipped_square(digits):
    x = digits.batch(torch.arange(16))[0] + 0.5  # no zero pixels, so zeros mark the cut
    out, mask = cutout_batch(x, size=4, generator=torch.Generator().manual_seed(0))
    cut = mask[:, 0] == 0
    assert torch.equal(out == 0, cut.unsqueeze(1).expand_as(out))
    areas = cut.flatten(1).sum(1)
    assert bool((areas >= 4).all()) and bool((areas <= 16).all())  # a square, clipped at most to a 2×2 corner
    for m in cut:  # each cut region is a rectangle
        rows, cols = m.any(1).nonzero().flatten(), m.any(0).nonzero().flatten()
        assert int(m.sum()) == len(rows) * len(cols)
    again, _ = cutout_batch(x, size=4, generator=torch.Generator().manual_seed(0))
    assert torch.equal(again, out)


@pytest.mark.parametrize(
    "strategy",
    [
        lambda: MixupStrategy(),
        lambda: CutMixStrategy(0.5),
        lambda: CutoutStrategy(3),
        lambda: AttackAugmentStrategy("pgd", steps=2),
        lambda: AttackAugmentStrategy("fgsm"),
        lambda: AttackAugmentStrategy("pgd-l2", eps=0.5, steps=2),
    ],
)
def test_baselines_through_fit_are_seeded_and_leave_the_global_rng(digits, strategy):
    runs = []
    for _ in range(2):
        model = _cnn()
        state = torch.get_rng_state()
        runs.append(fit(model, digits, strategy=strategy(), epochs=2, batch_size=16, progress=False, seed=3))
        assert torch.equal(torch.get_rng_state(), state)  # all draws from the strategy's generator
    assert _strip(runs[0]) == _strip(runs[1])
    two_steps = isinstance(strategy(), AttackAugmentStrategy)
    assert runs[0].last["steps"] == 4 * (2 if two_steps else 1)


# --------------------------------------------------------------------------- Bayesian optimisation


def _smooth_objective(params: dict) -> float:
    return (
        -((params["alpha"] - 0.3) ** 2)
        - (np.log10(params["eta"]) - np.log10(0.02)) ** 2 / 10
        - (params["steps"] - 8) ** 2 / 200
        - (params["epochs"] - 20) ** 2 / 4000
    )


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["gp", "tpe"])
def test_tune_is_reproducible_and_beats_random(sampler):
    pytest.importorskip("optuna")
    runs = [tune(_smooth_objective, n_trials=12, sampler=sampler, seed=0, n_startup_trials=6) for _ in range(2)]
    assert runs[0].best_params == runs[1].best_params and runs[0].best_value == runs[1].best_value
    assert [t.params for t in runs[0].trials] == [t.params for t in runs[1].trials]
    for trial in runs[0].trials:
        assert isinstance(trial.params["steps"], int) and isinstance(trial.params["epochs"], int)
        eta_low, eta_high = GILS_SEARCH_SPACE["eta"][1:]
        assert 0 <= trial.params["alpha"] <= 0.5 and eta_low <= trial.params["eta"] <= eta_high
        assert GILS_SEARCH_SPACE["steps"][1] <= trial.params["steps"] <= GILS_SEARCH_SPACE["steps"][2]
    random = tune(_smooth_objective, n_trials=12, sampler="random", seed=0)
    assert runs[0].best_value >= random.best_value - 0.01


def test_tune_passes_ints_fixed_values_and_overrides():
    pytest.importorskip("optuna")
    seen = []

    def objective(params):
        seen.append(params)
        return -abs(params["epochs"] - 3)

    space = {**GILS_SEARCH_SPACE, "epochs": ("int", 1, 4), "gamma": 1e-3}
    study = tune(objective, space, n_trials=4, sampler="random", seed=1)
    assert all(type(p["epochs"]) is int and type(p["steps"]) is int and p["gamma"] == 1e-3 for p in seen)
    assert all(1 <= p["epochs"] <= 4 for p in seen)
    assert study.direction.name == "MAXIMIZE"
    assert set(best_at_bounds(study, space)) <= set(space)
    with pytest.raises(ValueError, match="sampler"):
        tune(objective, space, n_trials=1, sampler="ax")
