"""Lesson 03's one-step analysis (dro_course.lessons.importance_sampling.is_variance) against independent oracles: real
torch.optim steps enumerated over the N draws, a per-example autograd loop, the optimizers' first-step closed forms,
Cauchy–Schwarz and the closed forms of H."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dro_course.lessons.importance_sampling import is_variance as isv
from dro_lab.pergrad import per_sample_grad_norms


def _grads(n=7, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.normal(size=(n, d)) * rng.uniform(0.1, 3.0, size=(n, 1)))


def _net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)).double()


def _data(n=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, 4, generator=gen, dtype=torch.float64), torch.arange(n) % 3


# ------------------------------------------------------------------------------------- H and p^GN
def test_variance_term_closed_forms_and_cauchy_schwarz():
    g = np.array([0.5, 1.0, 2.0, 4.0, 0.1])
    n = g.size
    assert isv.variance_term(g, np.full(n, 1 / n)) == pytest.approx(n * np.sum(g**2))
    p_gn = isv.optimal_sampling(g)
    np.testing.assert_allclose(p_gn, g / g.sum())
    assert isv.variance_term(g, p_gn) == pytest.approx(g.sum() ** 2)
    rng = np.random.default_rng(0)
    for _ in range(200):  # (Σg)² ≤ H(p) for every p on the simplex (Cauchy–Schwarz)
        assert isv.variance_term(g, rng.dirichlet(np.ones(n))) >= g.sum() ** 2 * (1 - 1e-12)


def test_variance_term_zero_norms_and_zero_probabilities():
    g = np.array([0.0, 1.0, 3.0])
    assert isv.variance_term(g, [0.0, 0.25, 0.75]) == pytest.approx(1 / 0.25 + 9 / 0.75)  # g = 0 adds nothing
    assert isv.variance_term(g, [0.5, 0.0, 0.5]) == float("inf")  # an example that can never be drawn
    with pytest.raises(ValueError, match="sum to 1"):
        isv.variance_term(g, [0.2, 0.2, 0.2])
    with pytest.raises(ValueError, match="grad_norms"):
        isv.variance_term([-1.0, 1.0], [0.5, 0.5])
    with pytest.raises(TypeError, match="grad_norms"):
        isv.variance_term("abc", [0.5, 0.5])
    with pytest.raises(ValueError, match="all zero"):
        isv.optimal_sampling([0.0, 0.0])


def test_slsqp_finds_the_closed_form():
    g = np.random.default_rng(3).exponential(size=30) ** 2
    np.testing.assert_allclose(isv.minimise_variance_term(g), g / g.sum(), atol=1e-6)


# --------------------------------------------------------------------------------- S(p) by the draws
def _speed_by_torch_steps(p, G, d, lr, momentum=0.0, velocity=None):
    """S(p) from real torch.optim.SGD steps: one per possible draw i, from θ_t = θ* + d."""
    n = len(p)
    theta_star = torch.linspace(-1, 1, G.shape[1], dtype=torch.float64)
    total = 0.0
    for i in range(n):
        theta = torch.nn.Parameter(theta_star + d)
        opt = torch.optim.SGD([theta], lr=lr, momentum=momentum)
        if momentum:
            opt.state[theta]["momentum_buffer"] = velocity.clone()  # v_{t-1}, so the buffer becomes μ v + G_i
        theta.grad = G[i] / (n * p[i])
        before = float(((theta.detach() - theta_star) ** 2).sum())
        opt.step()
        total += p[i] * (before - float(((theta.detach() - theta_star) ** 2).sum()))
    return total


@pytest.mark.parametrize("momentum", [0.0, 0.5])
def test_one_step_speed_equals_real_optimizer_steps(momentum):
    G = _grads()
    n, size = G.shape
    rng = np.random.default_rng(1)
    d = torch.from_numpy(rng.normal(size=size))
    v = torch.from_numpy(rng.normal(size=size)) if momentum else None
    for p in (np.full(n, 1 / n), rng.dirichlet(np.ones(n))):
        want = _speed_by_torch_steps(p, G, d, 0.1, momentum, v)
        assert isv.one_step_speed(p, G, d, lr=0.1, momentum=momentum, velocity=v) == pytest.approx(want, rel=1e-10)


def test_sgd_speed_is_the_closed_form_and_momentum_adds_a_constant():
    G = _grads(n=9, d=4, seed=2)
    n = G.shape[0]
    rng = np.random.default_rng(2)
    d, v = torch.from_numpy(rng.normal(size=4)), torch.from_numpy(rng.normal(size=4))
    g = G.norm(dim=1).numpy()
    gaps = []
    for p in (np.full(n, 1 / n), g / g.sum(), rng.dirichlet(np.ones(n))):
        closed = 2 * 0.05 * float(d @ G.mean(0)) - 0.05**2 * float(np.sum(g**2 / p)) / n**2  # App. A
        assert isv.one_step_speed(p, G, d, lr=0.05) == pytest.approx(closed, rel=1e-10)
        gaps.append(isv.one_step_speed(p, G, d, lr=0.05, momentum=0.5, velocity=v) - closed)
    assert np.ptp(gaps) < 1e-12 * max(abs(x) for x in gaps)  # App. C: the p-dependence is SGD's


def test_one_step_speed_rejects_bad_inputs():
    G = _grads(n=3, d=2)
    with pytest.raises(ValueError, match="velocity"):
        isv.one_step_speed([1 / 3] * 3, G, torch.zeros(2), lr=0.1, momentum=0.5)
    with pytest.raises(ValueError, match=r"\bp\b"):
        isv.one_step_speed([0.5, 0.5, 0.0], G, torch.zeros(2), lr=0.1)
    with pytest.raises(ValueError, match="direction"):
        isv.one_step_speed([1 / 3] * 3, G, torch.zeros(3), lr=0.1)
    with pytest.raises(TypeError, match="grads"):
        isv.one_step_speed([1 / 3] * 3, [[1.0, 2.0]] * 3, torch.zeros(2), lr=0.1)
    with pytest.raises(ValueError, match="lr"):
        isv.one_step_speed([1 / 3] * 3, G, torch.zeros(2), lr=0.0)


# ------------------------------------------------------------------------------------------ the theorem
def test_the_theorem_holds_and_the_proof_step_fails_on_a_shown_case():
    trials = isv.between_theorem_trials(3000, seed=0)
    assert trials.theorem_failures == 0
    assert 0 < trials.step_failures <= trials.in_box <= trials.trials
    ex = trials.example
    g, p = ex["g"], ex["p"]
    n = g.size
    u, gn = np.full(n, 1 / n), g / g.sum()
    assert np.all(p >= np.minimum(u, gn) - 1e-12) and np.all(p <= np.maximum(u, gn) + 1e-12)  # the hypothesis
    t = (p - gn) / (u - gn)  # p_i = t_i u_i + (1 − t_i) p^GN_i (no u_i equals p^GN_i in a random case)
    a, c = (1 / gn - 1 / u) * g**2, (1 - t) * gn / p
    h = {k: float(np.sum(g**2 / q)) for k, q in (("u", u), ("p", p), ("gn", gn))}
    assert np.sum(a * c) == pytest.approx(h["p"] - h["u"])  # App. B's identity is right ...
    assert np.sum(a * c) > c.max() * a.sum()  # ... its bound (⋆) is not ...
    assert h["gn"] <= h["p"] <= h["u"]  # ... and the theorem holds anyway


# ----------------------------------------------------------------------------------- a network's gradients
def test_gradient_snapshot_against_a_per_example_autograd_loop():
    net, (x, y) = _net(), _data()
    net.train()
    before = [p.detach().clone() for p in net.parameters()]
    snap = isv.gradient_snapshot(net.float(), x.float(), y)
    assert net.training and all(torch.equal(a.float(), b) for a, b in zip(before, net.parameters()))
    ref = snap.model
    rows = []
    for i in range(len(x)):
        loss = F.cross_entropy(ref(snap.x[i : i + 1]), snap.y[i : i + 1])
        rows.append(torch.cat([t.reshape(-1) for t in torch.autograd.grad(loss, list(ref.parameters()))]))
    loop = torch.stack(rows)
    torch.testing.assert_close(snap.grads, loop, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(snap.full_grad, loop.mean(0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(snap.gram, (loop @ loop.T).numpy(), rtol=1e-10, atol=1e-12)
    ghost = per_sample_grad_norms(ref, lambda z, t: F.cross_entropy(z, t, reduction="none"), snap.x, snap.y)
    np.testing.assert_allclose(snap.norms, ghost.numpy(), rtol=1e-8)
    assert snap.n == len(x) and snap.grads.dtype == torch.float64


def test_gradient_snapshot_rejects_bad_inputs():
    x, y = _data()
    with pytest.raises(TypeError, match="model"):
        isv.gradient_snapshot("net", x, y)
    with pytest.raises(ValueError, match="same number"):
        isv.gradient_snapshot(_net(), x, y[:3])


# ------------------------------------------------------------------------------ the optimizers' first step
def test_first_step_matches_the_optimizers_closed_forms():
    net, (x, y) = _net(), _data()
    w = torch.linspace(0.5, 2.0, len(x), dtype=torch.float64)
    loss = (w * F.cross_entropy(net(x), y, reduction="none")).mean()
    grad = torch.cat([t.reshape(-1) for t in torch.autograd.grad(loss, list(net.parameters()))])
    lr, eps = 0.01, 1e-8
    closed = {
        "SGD": -lr * grad,
        "Adam": -lr * grad / (grad.abs() + eps),  # m̂ = g, v̂ = g² after one bias-corrected step
        "RMSProp": -lr * grad / ((1 - 0.99) ** 0.5 * grad.abs() + eps),  # v = (1 − α) g², α = 0.99, no correction
    }
    for name, want in closed.items():
        got = isv.first_step(net, x, y, w, optimizer=name, lr=lr, eps=eps)
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-14)
    with pytest.raises(ValueError, match="optimizer"):
        isv.first_step(net, x, y, w, optimizer="adagrad")
    with pytest.raises(ValueError, match="weights"):
        isv.first_step(net, x, y, w[:3])


def test_weight_cancellation_common_weights_cancel_in_adam_and_rmsprop_only():
    net, (x, y) = _net(), _data(n=10)
    x = x * torch.logspace(-1, 1, 10, dtype=torch.float64)[:, None]  # spread norms: weights 1/(N p^GN_i) far apart
    snap = isv.gradient_snapshot(net, x, y)
    table = isv.weight_cancellation(snap, lr=0.01, common_weight=37.0, batch_size=4, seed=0)
    for opt in ("Adam", "RMSProp"):
        assert table.change(opt, 1, True) < 1e-9 and table.change(opt, 4, True) < 1e-9
        assert table.change(opt, 4, False) > 1e-3  # weights that differ within the batch survive (signs flip)
    assert table.change("SGD", 1, True) == pytest.approx(36.0, rel=1e-9)  # SGD's step scales with w
    assert "| Adam | 4 |" in table.markdown()
    with pytest.raises(TypeError, match="snapshot"):
        isv.weight_cancellation(net)
    with pytest.raises(ValueError, match="batch_size"):
        isv.weight_cancellation(snap, batch_size=11)
