"""The DRO-LS model on a linear head (dro_course.lessons.label_smoothing_dro.ls_dro), against independent oracles:
SciPy's BFGS on the penalised objective, autograd, the closed forms of the linearised problem and brute-force
eigenvalues."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.optimize import minimize

from dro_course.lessons.label_smoothing_dro.ls_dro import (
    concavity_threshold,
    feature_ascent,
    feature_gradient,
    outward_share,
    penalised_objective,
    robust_surrogate,
    shift_bound,
    true_class_margin,
)
from dro_lab import MLP, gils_shift


def _toy(seed=0, n=12, t=3, k=4):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(t, k, generator=g, dtype=torch.float64) * 0.8
    z = torch.randn(n, t, generator=g, dtype=torch.float64) * 1.5
    y = torch.randint(k, (n,), generator=g)
    return w, z, y


def _explicit_loss(z: np.ndarray, label: int, w: np.ndarray, alpha: float) -> float:
    """ℓ_α written out from eq. 3 and the single-sum loss, in numpy."""
    k = w.shape[1]
    s = z @ w
    log_p = s - s.max() - np.log(np.exp(s - s.max()).sum())
    ybar = np.full(k, alpha / (k - 1))
    ybar[label] = 1 - alpha
    return float(-(ybar * log_p).sum())


def _scipy_phi(z0: np.ndarray, label: int, w: np.ndarray, alpha: float, gamma: float) -> tuple[float, np.ndarray]:
    """sup_z ℓ_α(z) − γ/2‖z − z0‖² by BFGS with numerical gradients (no torch)."""
    res = minimize(
        lambda z: -(_explicit_loss(z, label, w, alpha) - 0.5 * gamma * float(((z - z0) ** 2).sum())),
        z0,
        method="BFGS",
        options={"gtol": 1e-10},
    )
    return -float(res.fun), res.x


@pytest.mark.parametrize("alpha", [0.0, 0.2, 0.5])
@pytest.mark.parametrize("mult", [1.05, 2.0, 30.0])
def test_robust_surrogate_matches_scipy_bfgs(alpha, mult):
    w, z, y = _toy()
    gamma = mult * concavity_threshold(w)
    phi, z_star = robust_surrogate(z, y, w, alpha=alpha, gamma=gamma)
    for i in range(z.shape[0]):
        value, arg = _scipy_phi(z[i].numpy(), int(y[i]), w.numpy(), alpha, gamma)
        assert math.isclose(float(phi[i]), value, rel_tol=1e-7, abs_tol=1e-9)
        np.testing.assert_allclose(z_star[i].numpy(), arg, atol=1e-4)
        assert float(phi[i]) >= _explicit_loss(z[i].numpy(), int(y[i]), w.numpy(), alpha) - 1e-12  # d = 0 is feasible


def test_robust_surrogate_tends_to_the_linearised_closed_form():
    """(φ_γ − ℓ)·γ/‖g‖² → ½: the linearised sup of gᵀd − γ/2‖d‖² is ‖g‖²/(2γ), at d = g/γ (eq. 20 with ½)."""
    w, z, y = _toy(1)
    g = feature_gradient(z, y, w, alpha=0.3)
    ell = torch.tensor(
        [_explicit_loss(z[i].numpy(), int(y[i]), w.numpy(), 0.3) for i in range(len(y))], dtype=torch.float64
    )
    gamma = 1e4 * concavity_threshold(w)
    phi, z_star = robust_surrogate(z, y, w, alpha=0.3, gamma=gamma)
    ratio = (phi - ell) * gamma / g.pow(2).sum(1)
    np.testing.assert_allclose(ratio.numpy(), 0.5, atol=1e-3)
    np.testing.assert_allclose(((z_star - z) * gamma).numpy(), g.numpy(), rtol=1e-3, atol=1e-6)


def test_robust_surrogate_refuses_gamma_below_the_concavity_threshold():
    w, z, y = _toy()
    with pytest.raises(ValueError, match="concavity threshold"):
        robust_surrogate(z, y, w, alpha=0.2, gamma=0.9 * concavity_threshold(w))


def test_concavity_threshold_bounds_the_hessian_and_is_attained_for_two_classes():
    """Brute force: the largest eigenvalue of θ_f(diag p − ppᵀ)θ_fᵀ over many p never exceeds the threshold; for
    θ_f = I (k = 2) it reaches it at p = (½, ½)."""
    w, _, _ = _toy(2)
    gen = torch.Generator().manual_seed(3)
    top = 0.0
    for _ in range(500):
        p = torch.softmax(torch.randn(w.shape[1], generator=gen, dtype=torch.float64) * 3, 0)
        hessian = w @ (torch.diag(p) - torch.outer(p, p)) @ w.T
        top = max(top, float(torch.linalg.eigvalsh(hessian).max()))
    assert top <= concavity_threshold(w) + 1e-12
    eye = torch.eye(2, dtype=torch.float64)
    p = torch.tensor([0.5, 0.5], dtype=torch.float64)
    attained = float(torch.linalg.eigvalsh(eye @ (torch.diag(p) - torch.outer(p, p)) @ eye).max())
    assert math.isclose(attained, concavity_threshold(eye), rel_tol=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.6])
def test_feature_gradient_is_autograd_and_minus_the_printed_eq16(alpha):
    w, z, y = _toy(4, k=5)
    zz = z.clone().requires_grad_(True)
    ybar = torch.full((len(y), 5), alpha / 4, dtype=torch.float64)
    ybar[torch.arange(len(y)), y] = 1 - alpha
    (auto,) = torch.autograd.grad(-(ybar * F.log_softmax(zz @ w, 1)).sum(), zz)
    got = feature_gradient(z, y, w, alpha=alpha)
    torch.testing.assert_close(got, auto, rtol=1e-12, atol=1e-12)
    p = torch.softmax(z @ w, 1)
    for b in range(len(y)):  # eq. 16 as printed: (1 − α)θ_i + α/(k−1) Σ_{j≠i} θ_j − Σ_j p_j θ_j
        i = int(y[b])
        printed = (1 - alpha) * w[:, i] + alpha / 4 * (w.sum(1) - w[:, i]) - (w * p[b]).sum(1)
        torch.testing.assert_close(got[b], -printed, rtol=1e-12, atol=1e-12)


def test_shift_bound_holds_for_every_maximiser_and_is_a_lipschitz_constant():
    w, z, y = _toy(5, n=20)
    l0 = shift_bound(w)
    for mult in (1.1, 3.0, 50.0):
        gamma = mult * concavity_threshold(w)
        _, z_star = robust_surrogate(z, y, w, alpha=0.25, gamma=gamma)
        assert float((z_star - z).norm(dim=1).max()) <= l0 / gamma + 1e-9
    gen = torch.Generator().manual_seed(6)
    zs = torch.randn(400, w.shape[0], generator=gen, dtype=torch.float64) * 4
    labels = torch.randint(w.shape[1], (400,), generator=gen)
    norms = feature_gradient(zs, labels, w, alpha=0.4).norm(dim=1)
    assert float(norms.max()) <= l0 + 1e-12


def test_feature_ascent_flips_with_alpha_on_two_classes():
    """k = 2, γ = 0: the true-class logit margin moves by −η·‖θ_0 − θ_1‖²·(1 − α − p) per step, so the confident
    point (p ≈ 0.978) loses confidence at α = 0 and gains it at α = 0.3 (closed form of one step checked too)."""
    w = torch.tensor([[1.0, -1.0], [0.5, -0.5]], dtype=torch.float64)
    z = torch.tensor([[1.7, 0.4]], dtype=torch.float64)
    y = torch.tensor([0])
    p0 = float(torch.softmax(z @ w, 1)[0, 0])
    for alpha, grows in ((0.0, False), (0.3, True)):
        z1 = feature_ascent(z, y, w, alpha=alpha, eta=0.5, steps=1)
        d = w[:, 0] - w[:, 1]
        margin_step = float((z1 - z)[0] @ d)
        assert math.isclose(margin_step, -0.5 * float(d @ d) * (1 - alpha - p0), rel_tol=1e-12)
        after = float(torch.softmax(feature_ascent(z, y, w, alpha=alpha, eta=0.5, steps=10) @ w, 1)[0, 0])
        assert (after > p0) is grows
    assert torch.equal(feature_ascent(z, y, w, alpha=0.3, eta=0.5, steps=0), z)


def _net():
    torch.manual_seed(0)
    return MLP(2, 3, hidden=(8,)).double().eval()


def test_penalised_objective_is_the_explicit_formula_and_grows_along_gils_shift():
    model = _net()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(10, 2, generator=gen, dtype=torch.float64)
    y = torch.randint(3, (10,), generator=gen)
    x_t = x + 0.1 * torch.randn(10, 2, generator=gen, dtype=torch.float64)
    got = penalised_objective(model, x_t, x, y, alpha=0.2, gamma=0.5)
    with torch.no_grad():
        z, z0 = model.penultimate(x_t), model.penultimate(x)
        logits = model.classifier(z).numpy()
    for b in range(10):
        log_p = logits[b] - np.log(np.exp(logits[b]).sum())
        ybar = np.full(3, 0.1)
        ybar[int(y[b])] = 0.8
        want = -(ybar * log_p).sum() - 0.25 * float(((z[b] - z0[b]) ** 2).sum())
        assert math.isclose(float(got[b]), want, rel_tol=1e-10)
    shifted, _ = gils_shift(model, x, y, alpha=0.2, gamma=0.5, eta=0.05, steps=5, clamp=None)
    assert float(penalised_objective(model, shifted, x, y, alpha=0.2, gamma=0.5).sum()) > float(
        penalised_objective(model, x, x, y, alpha=0.2, gamma=0.5).sum()
    )


def test_true_class_margin_and_outward_share_by_brute_force():
    logits = torch.tensor([[2.0, 1.0, -1.0], [0.0, 3.0, 1.0], [1.0, 1.0, 5.0]])
    y = torch.tensor([0, 0, 2])
    want = [float(logits[b, y[b]]) - max(float(v) for j, v in enumerate(logits[b]) if j != y[b]) for b in range(3)]
    np.testing.assert_allclose(true_class_margin(logits, y).numpy(), want)
    model = _net()
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(30, 2, generator=gen, dtype=torch.float64)
    y = torch.randint(3, (30,), generator=gen)
    same = outward_share(model, x, y, x.clone(), alpha=0.9)
    assert same["confident"] + same["others"] == 30
    assert same["confident_change"] == 0.0 or math.isnan(same["confident_change"])
    with torch.no_grad():
        p_true = torch.softmax(model(x), 1)[torch.arange(30), y]
    assert same["confident"] == int((p_true > 0.1).sum())


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda w, z, y: feature_gradient(z.numpy(), y, w, alpha=0.1), TypeError),
        (lambda w, z, y: feature_gradient(z, y, w.numpy(), alpha=0.1), TypeError),
        (lambda w, z, y: feature_gradient(z[:, :2], y, w, alpha=0.1), ValueError),
        (lambda w, z, y: feature_gradient(z, y[:3], w, alpha=0.1), ValueError),
        (lambda w, z, y: feature_gradient(z, y, w, alpha=0.9), ValueError),
        (lambda w, z, y: robust_surrogate(z, y, w, alpha=0.1, gamma="big"), TypeError),
        (lambda w, z, y: robust_surrogate(z, y, w, alpha=0.1, gamma=-1.0), ValueError),
        (lambda w, z, y: feature_ascent(z, y, w, alpha=0.1, eta=0.0, steps=1), ValueError),
        (lambda w, z, y: feature_ascent(z, y, w, alpha=0.1, eta=0.1, steps=1.5), TypeError),
        (lambda w, z, y: concavity_threshold(w[:, :1]), ValueError),
        (lambda w, z, y: shift_bound([[1.0]]), TypeError),
        (lambda w, z, y: true_class_margin(z, y[:2]), ValueError),
        (lambda w, z, y: penalised_objective("model", z, z, y, alpha=0.1, gamma=1.0), TypeError),
    ],
)
def test_bad_inputs_raise_clear_errors(call, error):
    w, z, y = _toy()
    with pytest.raises(error):
        call(w, z, y)
