"""DONE, GAIRAT and MAIL weights and strategies against independent oracles (numpy loops, closed forms, autograd)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.special import logsumexp, softmax

import dro_lab
from dro_lab.attacks import implicit_correction
from dro_lab.reweighting import done_weights, gairat_weights, mail_weights
from dro_lab.strategies.adversarial import AdversarialTrainingStrategy, DONEStrategy, GAIRATStrategy, MAILStrategy


def test_done_weights_with_eta_one_are_the_batch_softmax():
    rng = np.random.default_rng(0)
    ell = rng.exponential(size=32) * 3
    for r in (10.0, 1.0, 0.1):
        w, log_u = done_weights(torch.tensor(ell), r=r)
        assert np.allclose(w.numpy(), softmax(ell / r), atol=1e-12)
        assert abs(float(w.sum()) - 1) < 1e-12
        assert math.isclose(float(log_u), logsumexp(ell / r) - math.log(32), rel_tol=1e-12)


def test_done_weights_follow_the_compositional_recursion():
    """η < 1: u_{t+1} = (1 − η) u_t + η mean(e^{ℓ/r}), ω = e^{ℓ/r} / (|B| u_{t+1}): a plain numpy loop, linear space."""
    rng = np.random.default_rng(1)
    r, eta = 0.7, 0.3
    u, log_u = None, None
    for _t in range(6):
        ell = rng.exponential(size=16) * 2
        g = np.exp(ell / r)
        u = g.mean() if u is None else (1 - eta) * u + eta * g.mean()
        w, log_u = done_weights(torch.tensor(ell), r=r, log_u=log_u, eta=eta)
        assert np.allclose(w.numpy(), g / (16 * u), rtol=1e-10)
        assert math.isclose(float(log_u), math.log(u), rel_tol=1e-10)
    assert abs(float(w.sum()) - 1) > 1e-3  # with η < 1 the weights no longer sum to one (pitfall 4)


def test_done_weights_do_not_overflow():
    w, log_u = done_weights(torch.tensor([1e3, 9.0, 0.0], dtype=torch.float32), r=0.1)
    assert torch.isfinite(w).all() and torch.isfinite(log_u) and abs(float(w.sum()) - 1) < 1e-6
    with pytest.raises(ValueError, match="r must"):
        done_weights(torch.ones(3), r=0.0)
    with pytest.raises(ValueError, match="eta"):
        done_weights(torch.ones(3), r=1.0, eta=0.0)
    with pytest.raises(ValueError, match="NaN"):
        done_weights(torch.tensor([1.0, float("nan")]), r=1.0)


def _tiny_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def test_gradient_does_not_flow_through_the_weights_and_large_r_is_at():
    torch.manual_seed(0)
    model = _tiny_model()
    x, y = torch.rand(12, 16), torch.randint(0, 3, (12,))
    params = list(model.parameters())
    s = DONEStrategy(0.1, r=0.5)
    losses = F.cross_entropy(model(x), y, reduction="none")
    g = torch.autograd.grad(s.reduce(losses, indices=None, groups=None), params)
    # Danskin: Σ softmax(ℓ/r)_i ∇ℓ_i with constant weights = the gradient of r·logsumexp(ℓ/r)
    losses = F.cross_entropy(model(x), y, reduction="none")
    ref = torch.autograd.grad(0.5 * torch.logsumexp(losses / 0.5, 0), params)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(g, ref))
    # back-propagating through the weights would differ
    losses = F.cross_entropy(model(x), y, reduction="none")
    wrong = torch.autograd.grad((torch.softmax(losses / 0.5, 0) * losses).sum(), params)
    assert max(float((a - b).abs().max()) for a, b in zip(wrong, ref)) > 1e-3
    # r → ∞: the plain mean (AT)
    s_inf = DONEStrategy(0.1, r=1e8)
    losses = F.cross_entropy(model(x), y, reduction="none")
    g_inf = torch.autograd.grad(s_inf.reduce(losses, indices=None, groups=None), params)
    losses = F.cross_entropy(model(x), y, reduction="none")
    g_at = torch.autograd.grad(losses.mean(), params)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(g_inf, g_at))


def test_implicit_correction_matches_a_per_sample_double_backward_loop():
    """θ-gradient of the correction = Σ_i ω_i ∇_θδ ℓ_i C_i⁻¹ ∇_δ ℓ_i, computed one example at a time."""
    torch.manual_seed(1)
    model = _tiny_model(1).double()
    params = list(model.parameters())
    eps, c = 0.2, 0.05
    x = torch.rand(5, 16, dtype=torch.float64)
    delta = (torch.rand(5, 16, dtype=torch.float64) * 2 - 1) * eps
    delta[:, :6] = eps  # some coordinates on a face of the box (C⁻¹ = 0 there)
    x_adv = (x + delta).clamp(0, 1).requires_grad_(True)
    y = torch.randint(0, 3, (5,))
    w = torch.softmax(torch.rand(5, dtype=torch.float64), 0)
    losses = F.cross_entropy(model(x_adv), y, reduction="none")
    corr = implicit_correction(losses, x_adv, x, w, eps=eps, barrier=c)
    ours = torch.autograd.grad(corr, params)
    expect = [torch.zeros_like(p) for p in params]
    for i in range(5):
        xi = x_adv[i : i + 1].detach().clone().requires_grad_(True)
        li = F.cross_entropy(model(xi), y[i : i + 1])
        (gi,) = torch.autograd.grad(li, xi, create_graph=True)
        d = (xi - x[i : i + 1]).detach()
        up, lo = torch.clamp(1 - x[i : i + 1], max=eps), -torch.clamp(x[i : i + 1], max=eps)
        inside = (d < up - 1e-7) & (d > lo + 1e-7)
        cinv = torch.zeros_like(d)
        cinv[inside] = 1 / (c * ((up - d)[inside] ** -2 + (d - lo)[inside] ** -2))
        v = (cinv * gi).detach()
        for e, gg in zip(expect, torch.autograd.grad((gi * v).sum(), params)):
            e += w[i] * gg
    assert all(torch.allclose(a, b, atol=1e-12) for a, b in zip(ours, expect))
    assert max(float(a.abs().max()) for a in ours) > 0


def test_gairat_and_mail_weights_against_their_formulas():
    kappa = torch.tensor([0, 2, 5, 10])
    raw = (1 + np.tanh(-1 + 5 * (1 - 2 * kappa.numpy() / 10))) / 2
    assert np.allclose(gairat_weights(kappa, 10).numpy(), raw * 4 / raw.sum(), atol=1e-6)
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.0, 3.0, 0.5]])
    y = torch.tensor([0, 0])
    p = softmax(logits.numpy(), 1)
    pm = np.array([max(p[0, 1], p[0, 2]) - p[0, 0], max(p[1, 1], p[1, 2]) - p[1, 0]])
    assert np.allclose(mail_weights(logits, y).numpy(), 3 / (1 + np.exp(-(pm - 1.5))), atol=1e-6)
    w = mail_weights(logits, y)
    assert w[1] > w[0]  # the misclassified example weighs more


def test_bad_inputs():
    with pytest.raises(ValueError, match="eps"):
        AdversarialTrainingStrategy(-0.1)
    with pytest.raises(ValueError, match="steps"):
        AdversarialTrainingStrategy(0.1, steps=0)
    with pytest.raises(ValueError, match="r must"):
        DONEStrategy(0.1, r=0.0)
    with pytest.raises(ValueError, match="inner"):
        DONEStrategy(0.1, inner="sgd")
    with pytest.raises(ValueError, match="r_schedule"):
        DONEStrategy(0.1, r_schedule={0: 1.0})
    with pytest.raises(ValueError, match="burn_in_epochs"):
        GAIRATStrategy(0.1, burn_in_epochs=-1)


@pytest.fixture(scope="module")
def digits():
    train, test = dro_lab.load_digits(seed=0)
    return train.subset(torch.arange(200)), test.subset(torch.arange(100))


@pytest.mark.parametrize(
    "make",
    [
        lambda: AdversarialTrainingStrategy(0.1, steps=3),
        lambda: DONEStrategy(0.1, r=0.5, steps=3),
        lambda: DONEStrategy(0.1, r_schedule={1: 10.0, 2: 0.5}, eta=0.5, steps=3, implicit=True),
        lambda: DONEStrategy(0.1, r=1.0, inner="gd", alpha=1.0, steps=2),
        lambda: DONEStrategy(0.1, r=1.0, inner="adam", alpha=0.02, steps=2),
        lambda: GAIRATStrategy(0.1, steps=3, burn_in_epochs=1),
        lambda: MAILStrategy(0.1, steps=3, burn_in_epochs=1),
    ],
)
def test_strategies_train_through_fit_reproducibly(digits, make):
    train, test = digits
    hists = []
    for _ in range(2):
        torch.manual_seed(0)
        model = dro_lab.MLP(64, 10)
        hists.append(
            dro_lab.fit(
                model,
                train,
                test=test,
                strategy=make(),
                epochs=2,
                batch_size=32,
                lr=0.05,
                progress=False,
                device="cpu",
                seed=1,
            )
        )
    assert np.isfinite(hists[0]["train_loss"]).all()
    assert hists[0]["train_loss"] == hists[1]["train_loss"]  # same seed, same run (the attack's start included)


def test_done_resets_u_when_r_changes_and_round_trips(digits):
    train, _ = digits
    s = DONEStrategy(0.1, r_schedule={1: 10.0, 2: 0.5}, eta=0.5, steps=2)
    torch.manual_seed(0)
    h = dro_lab.fit(
        dro_lab.MLP(64, 10), train, strategy=s, epochs=2, batch_size=50, lr=0.05, progress=False, device="cpu"
    )
    assert h["done_r"] == [10.0, 0.5] and s._r_of_u == 0.5
    assert h.records[0]["done_ess_fraction"] > h.records[1]["done_ess_fraction"]  # smaller r, fewer effective samples
    fresh = DONEStrategy(0.1, r=0.5)
    fresh.load_state_dict(s.state_dict())
    assert torch.equal(fresh.log_u, s.log_u)


def test_gairat_uses_the_attacks_kappa(digits):
    train, _ = digits
    s = GAIRATStrategy(0.1, steps=4)
    torch.manual_seed(0)
    model = dro_lab.MLP(64, 10)
    x, y, _ = train.batch(torch.arange(32))
    s.setup(len(train), device=torch.device("cpu"), generator=torch.Generator().manual_seed(0), train=train)
    s.epoch = 1
    [(x_adv, _, _)] = s.transform(x, y, indices=None, groups=None, model=model)
    assert s._kappa.shape == (32,) and int(s._kappa.min()) >= 0 and int(s._kappa.max()) <= 4
    losses = F.cross_entropy(model(x_adv), y, reduction="none")
    expect = (gairat_weights(s._kappa, 4) * losses).mean()
    assert torch.allclose(s.reduce(losses, indices=None, groups=None), expect)


def test_done_implicit_backward_into_the_parameters_only_gives_the_plain_backward_gradient():
    """DONEStrategy.backward (the parameters only, no gradient for the attack's input) = objective.backward()."""
    torch.manual_seed(2)
    model = _tiny_model(2).double()
    x, y = torch.rand(9, 16, dtype=torch.float64), torch.randint(0, 3, (9,))
    grads = []
    for use_strategy in (True, False):
        s = DONEStrategy(0.15, r=0.5, steps=2, implicit=True)
        s.setup(9, device=torch.device("cpu"), generator=torch.Generator().manual_seed(0))
        [(x_adv, _, _)] = s.transform(x, y, indices=None, groups=None, model=model)
        assert x_adv.requires_grad
        model.zero_grad(set_to_none=True)
        losses = F.cross_entropy(model(x_adv), y, reduction="none")
        objective = s.reduce(losses, indices=None, groups=None)
        s.backward(objective, losses=losses, groups=None) if use_strategy else objective.backward()
        assert (x_adv.grad is None) == use_strategy  # the input's gradient is skipped, not just discarded
        grads.append([p.grad.clone() for p in model.parameters()])
    assert all(torch.allclose(a, b, rtol=0, atol=1e-14) for a, b in zip(*grads))
    # a frozen parameter gets no gradient and does not break the restricted backward
    model[1].bias.requires_grad_(False)
    model.zero_grad(set_to_none=True)
    [(x_adv, _, _)] = s.transform(x, y, indices=None, groups=None, model=model)
    losses = F.cross_entropy(model(x_adv), y, reduction="none")
    s.backward(s.reduce(losses, indices=None, groups=None), losses=losses, groups=None)
    assert model[1].bias.grad is None and model[1].weight.grad is not None


def test_done_reduce_matches_done_weights_and_reports_stats_without_a_sync_per_batch():
    """reduce's unchecked float64 path = done_weights (both η); the epoch's ESS / weight sum as per-batch floats."""
    rng = np.random.default_rng(3)
    for eta in (1.0, 0.4):
        s, log_u, ess, total = DONEStrategy(0.1, r=0.7, eta=eta), None, [], []
        for _ in range(4):
            ell = torch.tensor(rng.exponential(size=20) * 2, dtype=torch.float32, requires_grad=True)
            w, log_u = done_weights(ell, r=0.7, log_u=log_u, eta=eta)
            objective = s.reduce(ell, indices=None, groups=None)
            (g,) = torch.autograd.grad(objective, ell)
            assert torch.allclose(g, w, rtol=1e-6, atol=0)  # ∂(Σ ω ℓ)/∂ℓ = ω (detached weights)
            assert math.isclose(float(s.log_u), float(log_u), rel_tol=1e-12)
            wd = w.double()
            ess.append(float(wd.sum() ** 2 / (wd.pow(2).sum() * 20)))
            total.append(float(wd.sum()))
        assert isinstance(s._stats["ess"], torch.Tensor)  # accumulated on the device, read once per epoch
        st = s.epoch_stats()
        assert math.isclose(st["done_ess_fraction"], np.mean(ess), rel_tol=1e-6)
        assert math.isclose(st["done_weight_sum"], np.mean(total), rel_tol=1e-6)
    with pytest.raises(ValueError, match="1-D"):
        DONEStrategy(0.1).reduce(torch.ones(2, 2), indices=None, groups=None)


def test_done_reports_non_finite_losses_at_the_epoch_end():
    s = DONEStrategy(0.1, r=0.5)
    s.reduce(torch.tensor([1.0, float("nan"), 0.5]), indices=None, groups=None)  # no host sync, no raise here
    with pytest.raises(ValueError, match="NaN or inf"):
        s.epoch_stats()
    assert s.epoch_stats()["done_ess_fraction"] == 0.0  # the counters were reset


def test_implicit_correction_with_another_range_and_an_example_with_no_interior_coordinate():
    """The gap form gu²gl²/(c(gu²+gl²)) of C⁻¹ against the spec's 1/(c(1/gu² + 1/gl²)), clamp ≠ [0, 1]."""
    torch.manual_seed(4)
    model = _tiny_model(4).double()
    params = list(model.parameters())
    eps, c, lo, hi = 0.3, 0.1, -0.5, 1.5
    x = torch.rand(6, 16, dtype=torch.float64) * 2 - 0.5
    x[0, :4] = torch.tensor([lo, hi, lo + 0.1, hi - 0.1])  # pixels at (or near) the range's ends: asymmetric boxes
    delta = (torch.rand(6, 16, dtype=torch.float64) * 2 - 1) * eps
    delta[1] = eps * torch.sign(delta[1])  # example 1: every coordinate on a face (its term vanishes)
    x_adv = torch.minimum(torch.maximum(x + delta, x - eps), x + eps).clamp(lo, hi).requires_grad_(True)
    y = torch.randint(0, 3, (6,))
    w = torch.softmax(torch.rand(6, dtype=torch.float64), 0)
    losses = F.cross_entropy(model(x_adv), y, reduction="none")
    ours = torch.autograd.grad(
        implicit_correction(losses, x_adv, x, w, eps=eps, barrier=c, clamp=(lo, hi)), params, retain_graph=True
    )
    (g,) = torch.autograd.grad(losses.sum(), x_adv, create_graph=True)
    d = x_adv.detach() - x
    up, down = torch.clamp(hi - x, max=eps), -torch.clamp(x - lo, max=eps)
    inside = (d < up - 1e-7) & (d > down + 1e-7)
    assert not inside[1].any() and inside.any()
    cinv = torch.zeros_like(d)
    cinv[inside] = 1 / (c * ((up - d)[inside] ** -2 + (d - down)[inside] ** -2))
    expect = torch.autograd.grad((w * (g * (cinv * g).detach()).sum(1)).sum(), params)
    assert all(torch.allclose(a, b, rtol=0, atol=1e-12) for a, b in zip(ours, expect))
