"""Group-DRO strategies through the engine: GroupDROStrategy, transform groups, Perm-K workers, FGSM."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.stats import chisquare

import dro_lab
from dro_lab.data import ArrayDataset
from dro_lab.models import MLP
from dro_lab.strategies.group_dro import CompressedWorkersStrategy, GroupDROStrategy, TransformGroupsStrategy


@pytest.fixture(scope="module")
def train():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(90, 6, generator=g)
    y = torch.cat([torch.zeros(60), torch.ones(20), torch.full((10,), 2.0)]).long()
    groups = torch.arange(90) % 3
    return ArrayDataset(x, y, groups, num_classes=3)


def _fit(strategy, train, epochs=2, **kw):
    torch.manual_seed(0)
    model = MLP(6, 3)
    hist = dro_lab.fit(
        model,
        train,
        strategy=strategy,
        epochs=epochs,
        batch_size=16,
        lr=1e-2,
        progress=False,
        device="cpu",
        seed=3,
        **kw,
    )
    return model, hist


def test_frozen_also_through_fit_is_adam_erm(train):
    ref, h_ref = _fit(dro_lab.ERM(), train, optimizer="adam", weight_decay=1e-3)
    net, h = _fit(GroupDROStrategy(grouping="class", pi_lr=0.0, alpha=0.0), train, weight_decay=1e-3)
    for p, q in zip(net.parameters(), ref.parameters()):
        assert float(((p - q).abs().max() / q.abs().max()).detach()) < 1e-6
    assert np.allclose(h["train_loss"], h_ref["train_loss"], rtol=1e-6)
    assert h.last["pi_kl_to_prior"] == pytest.approx(0.0, abs=1e-12)


def test_class_balanced_prior_per_sample_and_per_class(train):
    s = GroupDROStrategy(grouping="sample", prior="class_balanced")
    _fit(s, train, epochs=1)
    counts = {0: 60, 1: 20, 2: 10}
    expect = np.array([1 / counts[int(c)] for c in train.y])
    assert np.allclose(s.optimizer.prior.numpy(), expect / expect.sum())
    s = GroupDROStrategy(grouping="class", prior="class_balanced", pi_lr=0.0)
    _fit(s, train, epochs=1)
    w = np.array([1 / 60, 1 / 20, 1 / 10])
    assert np.allclose(s.optimizer.pi.numpy(), w / w.sum())


def test_pi_weighted_group_batches_follow_pi(train):
    pi = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
    s = GroupDROStrategy(grouping="group", sampling="pi", pi_lr=0.0, alpha=0.0, pi_init=pi)
    _fit(s, train, epochs=1)
    idx = torch.cat(list(s.batches(1, 500)) * 1)
    counts = torch.bincount(train.groups[idx], minlength=3).numpy()
    n = counts.sum()
    assert chisquare(counts, pi.numpy() * n).pvalue > 1e-3
    assert chisquare(counts, np.full(3, n / 3)).pvalue < 1e-6  # and uniform is rejected


def test_a_second_fit_continues_and_state_round_trips(train):
    s = GroupDROStrategy(grouping="class", tau=0.1, pi_lr=0.5)
    torch.manual_seed(0)
    model = MLP(6, 3)
    dro_lab.fit(model, train, strategy=s, epochs=1, batch_size=16, progress=False, device="cpu")
    opt, pi1 = s.optimizer, s.optimizer.pi
    dro_lab.fit(model, train, strategy=s, epochs=1, batch_size=16, progress=False, device="cpu")
    assert s.optimizer is opt and not torch.equal(s.optimizer.pi, pi1)
    fresh = GroupDROStrategy(grouping="class", tau=0.1, pi_lr=0.5)
    fresh.load_state_dict(s.state_dict())
    fresh.setup(len(train), device=torch.device("cpu"), generator=torch.Generator(), train=train)
    fresh.make_optimizer(model.parameters(), lr=1e-3, weight_decay=0.0, momentum=0.0)
    assert torch.equal(fresh.optimizer.pi, s.optimizer.pi)


def test_transform_groups_are_drawn_from_pi_and_applied(train):
    shifts = [lambda x, y, m, g, k=k: x + 10.0 * k for k in range(3)]
    inner = GroupDROStrategy(
        grouping="group",
        sampling="pi",
        pi_lr=0.0,
        alpha=0.0,
        pi_init=torch.tensor([0.7, 0.2, 0.1], dtype=torch.float64),
    )
    s = TransformGroupsStrategy(inner, shifts)
    _fit(s, train, epochs=1)
    x = torch.zeros(20_000, 6)
    [(out, _, g)] = s.transform(
        x, torch.zeros(20_000, dtype=torch.long), indices=torch.arange(20_000), groups=None, model=None
    )
    assert torch.equal(out[:, 0], 10.0 * g.float())  # transform j applied to exactly the examples of group j
    counts = torch.bincount(g, minlength=3).numpy()
    assert chisquare(counts, np.array([0.7, 0.2, 0.1]) * 20_000).pvalue > 1e-3
    erm = TransformGroupsStrategy(dro_lab.ERM(), shifts)
    _fit(erm, train, epochs=1)
    [(_, _, g)] = erm.transform(x, torch.zeros(20_000, dtype=torch.long), indices=None, groups=None, model=None)
    assert chisquare(torch.bincount(g, minlength=3).numpy()).pvalue > 1e-3
    with pytest.raises(ValueError, match="grouping='group'"):
        TransformGroupsStrategy(GroupDROStrategy(grouping="class"), shifts)


@pytest.mark.slow
def test_perm_k_server_gradient_is_unbiased(train):
    """Averaged over permutations, Σ_j 1_{B_j} ⊙ x_j → Σ_j w_j x_j; with one worker it is the gradient itself."""
    torch.manual_seed(0)
    model = MLP(6, 3)
    x, y, _, groups = train.batch(torch.arange(30))
    params = list(model.parameters())

    def worker_grads(c):
        out = []
        for j in range(c):
            losses = F.cross_entropy(model(x), y, reduction="none")
            part = losses[groups == j].sum() * c / 30
            out.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(part, params)]))
        return out

    s = CompressedWorkersStrategy(dro_lab.ERM(), 3)
    s.setup(90, device=torch.device("cpu"), generator=torch.Generator().manual_seed(1), train=train)
    s.make_optimizer(params, lr=1e-3, weight_decay=0.0, momentum=0.0)
    total = None
    reps = 3000
    for _ in range(reps):
        losses = F.cross_entropy(model(x), y, reduction="none")
        s.backward(losses.mean(), losses=losses, groups=groups)
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        total = flat if total is None else total + flat
    expect = sum(worker_grads(3)) / 3
    assert torch.allclose(total / reps, expect, atol=4 * float(expect.abs().max()) / np.sqrt(reps))
    assert s.floats_sent == reps * sum(p.numel() for p in params)
    one = CompressedWorkersStrategy(dro_lab.ERM(), 1)
    one.setup(90, device=torch.device("cpu"), generator=torch.Generator(), train=train)
    one.make_optimizer(params, lr=1e-3, weight_decay=0.0, momentum=0.0)
    losses = F.cross_entropy(model(x), y, reduction="none")
    one.backward(losses.mean(), losses=losses, groups=torch.zeros(30, dtype=torch.long))
    mean_grad = torch.autograd.grad(F.cross_entropy(model(x), y), params)
    assert torch.allclose(
        torch.cat([p.grad.reshape(-1) for p in params]), torch.cat([g.reshape(-1) for g in mean_grad]), atol=1e-7
    )


def test_all_methods_run_through_fit(train):
    for s in (
        GroupDROStrategy(grouping="sample", tau=0.1, pi_lr=0.01),
        GroupDROStrategy("omp", grouping="class", tau=0.5),
        GroupDROStrategy("drago", grouping="class", tau=0.5),
        GroupDROStrategy(grouping="class", mode="popov", tau=0.5, pi_lr=0.1),
        CompressedWorkersStrategy(GroupDROStrategy(grouping="group", tau=0.5, pi_lr=0.1), 3),
    ):
        _, h = _fit(s, train)
        assert np.isfinite(h["train_loss"]).all(), s.describe()
    _, h1 = _fit(GroupDROStrategy(grouping="class", tau=0.5, pi_lr=0.1), train)
    _, h2 = _fit(GroupDROStrategy(grouping="class", tau=0.5, pi_lr=0.1), train)
    assert h1["train_loss"] == h2["train_loss"]  # same seed, same history


def test_group_dro_strategy_errors(train):
    with pytest.raises(ValueError, match="method"):
        GroupDROStrategy("sgda")
    with pytest.raises(ValueError, match="grouping"):
        GroupDROStrategy(grouping="worker")
    with pytest.raises(ValueError, match="lr"):
        GroupDROStrategy(lr=0.1)
    with pytest.raises(ValueError, match="n_groups"):
        _fit(GroupDROStrategy(grouping="group"), ArrayDataset(torch.rand(10, 6), torch.arange(10) % 3))
    with pytest.raises(ValueError, match="n_workers"):
        CompressedWorkersStrategy(dro_lab.ERM(), 0)


def test_fgsm_is_the_sign_of_the_closed_form_input_gradient():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3).train()
    x, y = torch.rand(10, 4), torch.randint(0, 3, (10,))
    # ∇_x mean CE = Wᵀ (softmax(Wx + b) − e_y) / b
    p = torch.softmax(model(x), 1).detach()
    grad = (p - F.one_hot(y, 3)) @ model.weight.detach() / 10
    adv = dro_lab.fgsm_attack(model, x, y, eps=0.1)
    assert torch.allclose(adv, (x + 0.1 * grad.sign()).clamp(0, 1))
    assert model.training and not adv.requires_grad
    assert torch.equal(dro_lab.fgsm_attack(model, x, y, eps=0.0), x)
    with pytest.raises(ValueError, match="eps"):
        dro_lab.fgsm_attack(model, x, y, eps=-0.1)
