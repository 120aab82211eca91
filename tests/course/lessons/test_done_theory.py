"""DONE's theory checks (dro_course.lessons.adversarial_done.theory) against independent oracles: closed forms on a
linear model, central finite differences, brute-force enumeration of every minibatch, a plain float64 recursion,
coordinate loops."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp, softmax, xlogy

from dro_course.lessons.adversarial_done.theory import (
    done_objective,
    implicit_term_size,
    input_curvature,
    interior_fraction,
    jensen_bias,
    parameter_gradient,
    running_average_stream,
    sample_losses,
)


def _linear(seed: int = 0, d: int = 6, k: int = 3) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(d, k)).double()


def _probs_and_grads(model, x, y):
    """Softmax probabilities and the input gradients of the CE of a linear model, by hand: (p − e_y) W."""
    lin = model[1]
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    z = x.reshape(len(x), -1).numpy() @ w.T + b
    p = softmax(z, axis=1)
    onehot = np.eye(w.shape[0])[y.numpy()]
    return z, p, (p - onehot) @ w


def test_done_objective_is_the_formula_and_peaks_at_the_softmax_with_the_log_mean_exp_value():
    rng = np.random.default_rng(0)
    ell, r = rng.gamma(2.0, 1.0, 7), 0.7
    w = rng.dirichlet(np.ones(7))
    by_hand = w @ ell - r * xlogy(w, 7 * w).sum()
    assert done_objective(w, ell, r) == pytest.approx(by_hand, rel=1e-12)
    w_star = softmax(ell / r)
    value = r * (logsumexp(ell / r) - math.log(7))
    assert done_objective(w_star, ell, r) == pytest.approx(value, rel=1e-12)
    for _ in range(50):  # every other point of the simplex is lower (Φ strictly concave, w* its maximiser)
        assert done_objective(rng.dirichlet(np.ones(7)), ell, r) < value
    zeros = np.array([1.0, 0.0, 0.0])  # 0 log 0 = 0: a vertex is the loss minus r log M
    assert done_objective(zeros, [2.0, 5.0, 1.0], 1.0) == pytest.approx(2.0 - math.log(3))


def test_done_objective_refuses_bad_inputs():
    with pytest.raises(TypeError):
        done_objective("ab", [1.0, 2.0], 1.0)
    with pytest.raises(TypeError):
        done_objective([0.5, 0.5], [1.0, 2.0], "1")
    with pytest.raises(ValueError, match="one entry per loss"):
        done_objective([1.0], [1.0, 2.0], 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        done_objective([1.5, -0.5], [1.0, 2.0], 1.0)
    with pytest.raises(ValueError, match="r must be"):
        done_objective([0.5, 0.5], [1.0, 2.0], 0.0)
    with pytest.raises(ValueError, match="finite"):
        done_objective([0.5, 0.5], [1.0, float("nan")], 1.0)


def test_sample_losses_are_the_cross_entropy_of_a_linear_model_by_hand_and_keep_the_mode():
    model = _linear()
    model.train()
    x, y = torch.randn(9, 6, dtype=torch.float64), torch.randint(0, 3, (9,))
    z, _, _ = _probs_and_grads(model, x, y)
    expected = logsumexp(z, axis=1) - z[np.arange(9), y.numpy()]
    got = sample_losses(model, x, y)
    assert got.dtype == torch.float64 and got.device.type == "cpu" and model.training
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    with pytest.raises(TypeError):
        sample_losses("model", x, y)
    with pytest.raises(ValueError, match="one label per row"):
        sample_losses(model, x, y[:3])


def test_parameter_gradient_matches_central_differences_and_danskin():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).double()
    x, y = torch.randn(8, 4, dtype=torch.float64), torch.randint(0, 3, (8,))
    r = 0.5

    def value():
        with torch.no_grad():
            ell = torch.nn.functional.cross_entropy(model(x), y, reduction="none")
            return float(r * torch.logsumexp(ell / r, 0))

    params = list(model.parameters())
    numeric, h = [], 1e-6
    for p in params:
        flat = p.data.view(-1)
        for j in range(flat.numel()):
            old = float(flat[j])
            flat[j] = old + h
            up = value()
            flat[j] = old - h
            down = value()
            flat[j] = old
            numeric.append((up - down) / (2 * h))
    numeric = torch.tensor(numeric, dtype=torch.float64)
    lse = parameter_gradient(model, x, y, lambda ell: r * torch.logsumexp(ell / r, 0))
    detached = parameter_gradient(model, x, y, lambda ell: (torch.softmax(ell / r, 0).detach() * ell).sum())
    through = parameter_gradient(model, x, y, lambda ell: (torch.softmax(ell / r, 0) * ell).sum())
    assert torch.allclose(lse, numeric, rtol=1e-6, atol=1e-8)
    assert torch.allclose(detached, numeric, rtol=1e-6, atol=1e-8)  # Danskin: the weights held fixed
    assert float((through - numeric).norm() / numeric.norm()) > 1e-2  # not detached: another gradient
    assert all(p.grad is None for p in params)
    with pytest.raises(TypeError):
        parameter_gradient(model, x, y, "mean")
    with pytest.raises(ValueError, match="scalar"):
        parameter_gradient(model, x, y, lambda ell: ell)


def _exact_jensen_bias(ell, r, b):
    """E over every batch of size b (without replacement) of r log mean e^{ℓ/r}, minus the full value."""
    full = r * (logsumexp(ell / r) - math.log(len(ell)))
    values = [r * (logsumexp(ell[list(s)] / r) - math.log(b)) for s in itertools.combinations(range(len(ell)), b)]
    return float(np.mean(values)) - full


def test_jensen_bias_matches_the_enumeration_of_every_batch():
    ell = np.array([0.1, 0.4, 0.3, 2.5, 0.2, 1.7, 0.05, 0.9])
    for r, b in ((0.5, 3), (2.0, 2), (0.2, 5)):
        exact = _exact_jensen_bias(ell, r, b)
        got = jensen_bias(ell, r, b, draws=20000, generator=torch.Generator().manual_seed(0))
        assert exact < 0 and got <= 0
        assert got == pytest.approx(exact, rel=0.05, abs=1e-3)
    assert jensen_bias(ell, 0.5, 8, draws=10) == pytest.approx(0.0, abs=1e-12)  # the whole set: no bias
    with pytest.raises(ValueError, match="batch_size"):
        jensen_bias(ell, 0.5, 9)
    with pytest.raises(TypeError):
        jensen_bias(ell, 0.5, 2.0)


def test_running_average_stream_is_the_plain_recursion_of_algorithm_1():
    rng = np.random.default_rng(3)
    ell = rng.gamma(1.5, 0.6, 40)
    r, eta, b, batches, burn = 0.7, 0.3, 6, 80, 10
    got = running_average_stream(
        ell, r, eta=eta, batch_size=b, batches=batches, burn_in=burn, generator=torch.Generator().manual_seed(5)
    )
    replay = torch.Generator().manual_seed(5)  # the same batches, then u by the update of line 11, not in log space
    u, values, sums = None, [], []
    for t in range(batches):
        idx = torch.randperm(40, generator=replay)[:b].numpy()
        g_bar = np.mean(np.exp(ell[idx] / r))
        u = g_bar if u is None else (1 - eta) * u + eta * g_bar
        if t >= burn:
            values.append(r * math.log(u))
            sums.append(g_bar / u)
    full = r * math.log(np.mean(np.exp(ell / r)))
    assert got["bias"] == pytest.approx(np.mean(values) - full, rel=1e-9)
    assert got["sum_mean"] == pytest.approx(np.mean(sums), rel=1e-9)
    assert got["sum_p5"] == pytest.approx(np.percentile(sums, 5), rel=1e-9)
    assert got["sum_p95"] == pytest.approx(np.percentile(sums, 95), rel=1e-9)


def test_running_average_with_eta_one_is_the_batch_softmax_and_its_jensen_bias():
    ell = np.array([0.1, 0.4, 0.3, 2.5, 0.2, 1.7, 0.05, 0.9])
    got = running_average_stream(ell, 0.5, eta=1.0, batch_size=3, batches=6000, burn_in=0,
                                 generator=torch.Generator().manual_seed(2))  # fmt: skip
    assert got["sum_p5"] == pytest.approx(1.0) and got["sum_p95"] == pytest.approx(1.0)
    exact = _exact_jensen_bias(ell, 0.5, 3)
    assert got["bias"] == pytest.approx(exact, rel=0.1)
    with pytest.raises(ValueError, match="eta"):
        running_average_stream(ell, 0.5, eta=0.0, batch_size=3)
    with pytest.raises(ValueError, match="burn_in"):
        running_average_stream(ell, 0.5, eta=0.5, batch_size=3, batches=5, burn_in=5)


def test_interior_fraction_counts_coordinates_strictly_inside_the_box_one_by_one():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(5, 1, 4, 4, generator=g)
    x[0, 0, 0, :2] = torch.tensor([0.0, 1.0])  # pixels at the ends of [0, 1]
    eps = 0.1
    delta = (torch.randint(-1, 2, x.shape, generator=g) * eps).float()  # on a face or at the centre
    delta[1] = (torch.rand(x[1].shape, generator=g) * 2 - 1) * eps
    x_adv = (x + delta).clamp(0, 1).clamp(x - eps, x + eps)
    inside = 0
    for xa, xc in zip(x_adv.reshape(-1).tolist(), x.reshape(-1).tolist()):
        hi, lo = min(xc + eps, 1.0), max(xc - eps, 0.0)
        inside += (hi - xa > 1e-7) and (xa - lo > 1e-7)
    assert interior_fraction(x_adv, x, eps=eps) == pytest.approx(inside / x.numel())
    assert interior_fraction(x, x, eps=0.0) == 0.0  # ε = 0: every coordinate on both faces
    with pytest.raises(ValueError, match="shape"):
        interior_fraction(x_adv[:2], x, eps=eps)
    with pytest.raises(TypeError):
        interior_fraction(x_adv.numpy(), x, eps=eps)


def test_implicit_term_size_on_a_linear_model_by_hand_and_by_central_differences():
    torch.manual_seed(2)
    model = _linear(2)
    x = torch.rand(7, 1, 2, 3, dtype=torch.float64)
    y = torch.randint(0, 3, (7,))
    eps, c = 0.2, 0.05
    x_adv = (x + (torch.rand_like(x) * 2 - 1) * eps).clamp(0, 1)
    w = torch.softmax(torch.randn(7, dtype=torch.float64), 0)
    got = implicit_term_size(model, x_adv, x, y, w, eps=eps, barrier=c)

    hi, lo = (x + eps).clamp(max=1.0), (x - eps).clamp(min=0.0)
    gu, gl = (hi - x_adv).reshape(7, -1).numpy(), (x_adv - lo).reshape(7, -1).numpy()
    c_inv = np.where(np.minimum(gu, gl) > 1e-7, 1.0 / (c * (1 / gu**2 + 1 / gl**2)), 0.0)
    z, _, grads = _probs_and_grads(model, x_adv, y)
    ell = logsumexp(z, axis=1) - z[np.arange(7), y.numpy()]
    corr = float(np.sum(w.numpy()[:, None] * c_inv * grads**2))
    assert got["value_ratio"] == pytest.approx(corr / float(w.numpy() @ ell), rel=1e-9)

    v = c_inv * grads  # held fixed: the θ-gradient of corr is that of Σ ω ⟨G(θ), v⟩
    lin = model[1]

    def surrogate(kind):
        z_now, _, g_now = _probs_and_grads(model, x_adv, y)
        loss = logsumexp(z_now, axis=1) - z_now[np.arange(7), y.numpy()]
        return float(np.sum(w.numpy()[:, None] * g_now * v)) if kind == "corr" else float(w.numpy() @ loss)

    norms = {}
    for kind in ("corr", "base"):
        grad = []
        for p in (lin.weight, lin.bias):
            flat = p.data.view(-1)
            for j in range(flat.numel()):
                old = float(flat[j])
                flat[j] = old + 1e-6
                up = surrogate(kind)
                flat[j] = old - 1e-6
                down = surrogate(kind)
                flat[j] = old
                grad.append((up - down) / 2e-6)
        norms[kind] = np.linalg.norm(grad)
    assert got["gradient_ratio"] == pytest.approx(norms["corr"] / norms["base"], rel=1e-5)
    on_faces = implicit_term_size(model, (x + eps).clamp(max=1.0), x, y, eps=eps, barrier=c)
    assert on_faces["value_ratio"] == 0.0 and on_faces["gradient_ratio"] == 0.0
    with pytest.raises(ValueError, match="one entry per example"):
        implicit_term_size(model, x_adv, x, y, w[:3], eps=eps, barrier=c)


def test_input_curvature_is_the_softmax_hessian_of_a_linear_model():
    model = _linear(4)
    x, y = torch.randn(6, 6, dtype=torch.float64), torch.randint(0, 3, (6,))
    _, p, grads = _probs_and_grads(model, x, y)
    w = model[1].weight.detach().numpy()
    dirs = torch.randn(6, 6, dtype=torch.float64)
    for directions, vs in ((None, grads), (dirs, dirs.numpy())):
        got = input_curvature(model, x, y, directions)
        for i in range(6):
            hess = w.T @ (np.diag(p[i]) - np.outer(p[i], p[i])) @ w
            assert float(got[i]) == pytest.approx(vs[i] @ hess @ vs[i] / (vs[i] @ vs[i]), rel=1e-9)
    assert bool((got >= -1e-12).all())  # positive semi-definite, and not zero
    with pytest.raises(ValueError, match="directions"):
        input_curvature(model, x, y, dirs[:2])
