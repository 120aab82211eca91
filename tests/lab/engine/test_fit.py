"""The training engine against brute-force oracles: hand-written gradient steps, per-sample loops,
plain Python counting. Nothing here compares the engine with its own earlier output except the
determinism tests, whose point is exactly that."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import TensorDataset

import dro_lab
from dro_lab import ERM, Batch, RobustLossStrategy, Strategy, fit
from dro_lab.data import ArrayDataset, IndexedDataset, fetch_batch
from dro_lab.metrics import accuracy_report


def _toy(n=40, d=3, k=3, seed=0, groups=True):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = torch.randint(0, k, (n,), generator=g)
    grp = (torch.arange(n) % 4 == 0).long() if groups else None
    return ArrayDataset(x, y, grp)


def _linear(d=3, k=3, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(d, k)


def _manual_full_batch_gd(x, y, W, b, lr, steps, weights_fn):
    """Oracle: softmax-regression gradient written out by hand, weights q from ``weights_fn(losses)``."""
    W, b = W.clone().double(), b.clone().double()
    x, onehot = x.double(), F.one_hot(y, W.shape[0]).double()
    for _ in range(steps):
        logits = x @ W.T + b
        p = torch.softmax(logits, 1)
        losses = -(onehot * torch.log(p)).sum(1)
        q = torch.as_tensor(weights_fn(losses.numpy()))
        resid = (p - onehot) * q[:, None]  # d(Σ q_i ℓ_i)/d logits
        W -= lr * resid.T @ x
        b -= lr * resid.sum(0)
    return W, b


def test_erm_full_batch_equals_hand_written_gradient_descent():
    data = _toy()
    model = _linear()
    W0, b0 = model.weight.detach().clone(), model.bias.detach().clone()
    fit(model, data, epochs=5, batch_size=len(data), lr=0.3, progress=False)
    n = len(data)
    W, b = _manual_full_batch_gd(data.x, data.y, W0, b0, 0.3, 5, lambda l: np.full(len(l), 1.0 / n))
    torch.testing.assert_close(model.weight.detach().double(), W, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.bias.detach().double(), b, rtol=1e-5, atol=1e-6)


def test_kl_dro_full_batch_equals_gradient_descent_on_softmax_weights():
    data = _toy(seed=1)
    model = _linear(seed=1)
    W0, b0 = model.weight.detach().clone(), model.bias.detach().clone()
    beta = 2.0

    def softmax_weights(l):  # independent numpy oracle for q ∝ exp(βℓ)
        z = np.exp(beta * (l - l.max()))
        return z / z.sum()

    fit(
        model,
        data,
        strategy=RobustLossStrategy("kl", beta=beta),
        epochs=4,
        batch_size=len(data),
        lr=0.2,
        progress=False,
    )
    W, b = _manual_full_batch_gd(data.x, data.y, W0, b0, 0.2, 4, softmax_weights)
    torch.testing.assert_close(model.weight.detach().double(), W, rtol=1e-5, atol=1e-6)


def test_group_reduction_is_the_robust_loss_of_group_means():
    strat = RobustLossStrategy("cvar", alpha=0.5, over="groups")
    losses = torch.tensor([1.0, 3.0, 2.0, 10.0, 0.0], requires_grad=True)
    groups = torch.tensor([0, 0, 1, 2, 2])
    out = strat.reduce(losses, indices=torch.arange(5), groups=groups)
    # group means 2, 2, 5 → CVaR at α=0.5 over 3 groups: 2/3 mass cap per group → (5·(2/3) + 2·(1/3)) = 4
    assert float(out.detach()) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="groups"):
        strat.reduce(losses, indices=torch.arange(5), groups=None)


def test_group_reduction_with_empirical_prior_tends_to_erm():
    # Empirical group prior: β → 0 gives Σ_g (n_g/n)·mean_g = the plain batch mean.
    strat = RobustLossStrategy("kl", beta=1e-9, over="groups", group_prior="empirical")
    losses = torch.tensor([1.0, 3.0, 2.0, 10.0, 0.0])
    out = strat.reduce(losses, indices=torch.arange(5), groups=torch.tensor([0, 0, 1, 2, 2]))
    assert float(out) == pytest.approx(float(losses.mean()), rel=1e-6)
    with pytest.raises(ValueError, match="group_prior"):
        RobustLossStrategy("kl", beta=1.0, over="groups", group_prior="sizes")


def test_erm_epoch_visits_every_example_once_and_seed_fixes_the_order():
    s = ERM()
    s.setup(23, device=torch.device("cpu"), generator=torch.Generator().manual_seed(5))
    batches = list(s.batches(1, 5))
    assert [len(b) for b in batches] == [5, 5, 5, 5, 3]
    assert sorted(torch.cat(batches).tolist()) == list(range(23))
    s2 = ERM()
    s2.setup(23, device=torch.device("cpu"), generator=torch.Generator().manual_seed(5))
    assert torch.equal(torch.cat(list(s2.batches(1, 5))), torch.cat(batches))


def test_same_seed_same_history_and_weights_on_cpu():
    data = _toy(n=64)
    runs = []
    for _ in range(2):
        dro_lab.seed_everything(3)
        model = dro_lab.MLP(3, 3, hidden=(8,))
        hist = fit(
            model,
            data,
            test=data,
            strategy=RobustLossStrategy("kl", beta=1.0),
            epochs=3,
            batch_size=16,
            lr=0.1,
            seed=3,
            progress=False,
        )
        runs.append((hist.records, [p.detach().clone() for p in model.parameters()]))
    (h1, p1), (h2, p2) = runs
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in h1] == [
        {k: v for k, v in r.items() if k != "seconds"} for r in h2
    ]
    for a, b in zip(p1, p2):
        assert torch.equal(a, b)


def test_history_metrics_match_a_brute_force_count():
    data = _toy(n=50, seed=2)
    model = _linear(seed=2)
    hist = fit(model, data, test=data, epochs=1, batch_size=10, lr=0.1, progress=False)
    with torch.no_grad():
        pred = model(data.x).argmax(1)
    per_class = []
    for c in range(3):
        members = [i for i in range(50) if int(data.y[i]) == c]
        per_class.append(sum(int(pred[i] == data.y[i]) for i in members) / len(members))
    per_group = []
    for g in range(2):
        members = [i for i in range(50) if int(data.groups[i]) == g]
        per_group.append(sum(int(pred[i] == data.y[i]) for i in members) / len(members))
    rec = hist.last
    assert rec["test_per_class_accuracy"] == pytest.approx(per_class)
    assert rec["test_worst_class_accuracy"] == pytest.approx(min(per_class))
    assert rec["test_per_group_accuracy"] == pytest.approx(per_group)
    assert rec["test_worst_group_accuracy"] == pytest.approx(min(per_group))
    assert rec["test_accuracy"] == pytest.approx(float((pred == data.y).double().mean()))
    assert hist["epoch"] == [1] and len(hist) == 1


def test_accuracy_report_marks_absent_classes_nan_and_ignores_them():
    rep = accuracy_report(torch.tensor([0, 1, 1]), torch.tensor([0, 1, 0]), num_classes=3)
    assert rep["per_class_accuracy"][:2] == [0.5, 1.0] and np.isnan(rep["per_class_accuracy"][2])
    assert rep["worst_class_accuracy"] == 0.5


def test_generic_map_style_dataset_through_indexed_wrapper():
    base = TensorDataset(torch.randn(12, 2), torch.randint(0, 2, (12,)))
    ds = IndexedDataset(base)
    x, y, idx, grp = fetch_batch(ds, torch.tensor([3, 7]))
    assert torch.equal(x, base.tensors[0][[3, 7]]) and idx.tolist() == [3, 7] and grp is None
    hist = fit(torch.nn.Linear(2, 2), ds, epochs=2, batch_size=5, lr=0.1, progress=False)
    assert hist.last["steps"] == 3


def test_observe_receives_each_batch_indices_and_detached_losses():
    seen = []

    class Spy(Strategy):
        def observe(self, indices, losses):
            seen.append((indices.clone(), losses))

    data = _toy(n=20)
    fit(_linear(), data, strategy=Spy(), epochs=2, batch_size=7, lr=0.1, progress=False)
    assert len(seen) == 6
    assert all(not l.requires_grad and l.shape == i.shape for i, l in seen)
    assert sorted(torch.cat([i for i, _ in seen[:3]]).tolist()) == list(range(20))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epochs": 0}, "epochs"),
        ({"batch_size": 0}, "batch_size"),
        ({"lr": -1.0}, "lr"),
        ({"optimizer": "lbfgs"}, "optimizer"),
        ({"device": "tpu"}, "device"),
        ({"loss_fn": lambda out, y: F.cross_entropy(out, y)}, "one loss per sample"),
    ],
)
def test_fit_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit(_linear(), _toy(), progress=False, **kwargs)


def test_fit_rejects_a_non_strategy_and_an_empty_dataset():
    with pytest.raises(TypeError, match="strategy"):
        fit(_linear(), _toy(), strategy="erm", progress=False)
    with pytest.raises(ValueError, match="empty|at least one"):
        fit(_linear(), TensorDataset(torch.empty(0, 3), torch.empty(0, dtype=torch.long)), progress=False)


def test_resolve_device_and_seed_validation():
    assert dro_lab.resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert dro_lab.resolve_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            dro_lab.resolve_device("cuda")
    with pytest.raises(ValueError, match="seed"):
        dro_lab.seed_everything(-1)
    g1, g2 = dro_lab.seed_everything(7), dro_lab.make_generator(7)
    assert torch.equal(torch.rand(3, generator=g1), torch.rand(3, generator=g2))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_fit_on_cuda_keeps_everything_on_the_device():
    data = _toy(n=64)
    model = _linear()
    hist = fit(
        model,
        data,
        test=data,
        strategy=RobustLossStrategy("chi2", beta=1.0),
        epochs=2,
        batch_size=16,
        lr=0.1,
        device="cuda",
        progress=False,
    )
    assert next(model.parameters()).is_cuda and hist.device.startswith("cuda")
    q = dro_lab.worst_case_weights(torch.rand(100, device="cuda"), divergence="kl", radius=0.1)
    assert q.is_cuda and abs(float(q.sum()) - 1) < 1e-5


def test_lr_schedule_sets_each_epochs_learning_rate():
    import dro_lab
    from dro_lab.data import ArrayDataset

    data = ArrayDataset(torch.rand(20, 3), torch.arange(20) % 2, num_classes=2)
    torch.manual_seed(0)
    model = dro_lab.LogisticRegression(3, 2)
    hist = dro_lab.fit(
        model, data, epochs=3, lr=0.1, lr_schedule=lambda e: [1.0, 0.5, 0.0][e - 1], progress=False, device="cpu"
    )
    assert hist["lr"] == [0.1, 0.05, 0.0]
    before = [p.detach().clone() for p in model.parameters()]
    dro_lab.fit(model, data, epochs=1, lr=0.1, lr_schedule=lambda e: 0.0, progress=False, device="cpu")
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))  # factor 0: no step moves θ
    with pytest.raises(ValueError, match="lr_schedule"):
        dro_lab.fit(model, data, epochs=1, lr=0.1, lr_schedule=lambda e: float("nan"), progress=False, device="cpu")


def test_a_transform_may_return_several_sequential_steps():
    """A list of (x, y, groups) from transform = one optimizer step each, in order (checked by hand-made SGD)."""
    import dro_lab
    from dro_lab.data import ArrayDataset

    class TwoSteps(dro_lab.ERM):
        def transform(self, x, y, *, indices, groups, model):
            return [Batch(x * 2.0, y, groups), Batch(x, y, groups)]

    data = ArrayDataset(torch.rand(8, 3), torch.arange(8) % 2, num_classes=2)
    torch.manual_seed(0)
    model = dro_lab.LogisticRegression(3, 2)
    ref = copy.deepcopy(model)
    hist = dro_lab.fit(model, data, strategy=TwoSteps(), epochs=1, batch_size=8, lr=0.1, progress=False, device="cpu")
    assert hist["steps"] == [2]
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    x, y, _ = data.batch(torch.randperm(8, generator=torch.Generator().manual_seed(0)))
    for xx in (x * 2.0, x):
        opt.zero_grad()
        F.cross_entropy(ref(xx), y).backward()
        opt.step()
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(model.parameters(), ref.parameters()))


def test_history_membership():
    from dro_lab.engine import History

    h = History()
    assert "test_accuracy" not in h
    h.append({"epoch": 1, "test_accuracy": 0.5})
    assert "test_accuracy" in h and "nope" not in h
