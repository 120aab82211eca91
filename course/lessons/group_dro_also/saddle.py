r"""The group-DRO problem solved without the optimizers: independent answers to check them against.

Feoktistov et al. (2025) solve the min–max problem (4),

.. math::
    \min_\theta\max_{\pi\in\Delta_c}\ \sum_j\pi_jL_j(\theta)+r(\theta)-\tau\,\mathrm{KL}(\pi\,\|\,\hat\pi),

with a softmax (mirror) step on π and an optimistic step on θ. The functions here compute what those steps should
reach by other means, so that a lesson or a test can put the library's answer beside one it did not make:

* :func:`kl_penalised_value` — the inner objective :math:`\langle\pi,L\rangle-\tau\,\mathrm{KL}(\pi\|\hat\pi)`;
* :func:`numerical_pi_star` — its maximiser over the simplex by SciPy's SLSQP (the closed form is a softmax,
  :func:`dro_lab.optim.pi_star`);
* :func:`numerical_kl_prox` — the KL-prox step of π (Algorithm 5, Option I; :func:`dro_lab.kl_prox_step`) as the
  maximiser of its prox objective, by SLSQP;
* :func:`optimism_spectral_radius` — the rate of optimistic descent–ascent on the bilinear game
  :math:`\min_x\max_y\,a\,xy` (Algorithm 4's negative momentum, Popov 1980) from the eigenvalues of its linear
  recursion (:func:`dro_lab.bilinear_game_path` iterates it);
* :func:`logistic_dro_saddle` — the saddle point of KL-regularised logistic DRO with one weight per example
  (the setting of Theorem 1: convex losses, τ > 0, an L2 term), from the primal
  :math:`\Phi(\theta)=\tau\log\sum_i\hat\pi_ie^{f_i(\theta)/\tau}+\frac\lambda2\|\theta\|^2` minimised by L-BFGS in
  float64, then :math:`\pi^\star=\mathrm{softmax}(\log\hat\pi+f(\theta^\star)/\tau)`.

SciPy is imported inside the functions that use it: importing the optimizers never pays for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from dro_lab._validation import as_float_vector, check_number, check_xy

__all__ = [
    "SaddlePoint",
    "kl_penalised_value",
    "logistic_dro_saddle",
    "numerical_kl_prox",
    "numerical_pi_star",
    "optimism_spectral_radius",
]


def _vector(value, name: str, *, c: int | None = None) -> np.ndarray:
    """``value`` (a tensor, an array or a list of numbers) as a finite float64 vector (of length ``c``, one entry per
    group)."""
    return as_float_vector(value, name, size=c)


def _distribution(value, name: str, c: int, *, positive: bool) -> np.ndarray:
    """A probability vector of length ``c``: ``None`` is uniform; otherwise non-negative (positive) weights,
    normalised to sum to one."""
    if value is None:
        return np.full(c, 1.0 / c)
    p = _vector(value, name, c=c)
    if (p <= 0).any() if positive else (p < 0).any():
        raise ValueError(f"{name} must hold {'positive' if positive else 'non-negative'} weights")
    if not p.sum() > 0:
        raise ValueError(f"{name} must have positive mass")
    return p / p.sum()


def _kl(q: np.ndarray, p: np.ndarray) -> float:
    """KL(q‖p) with 0 log 0 = 0."""
    inside = q > 0
    return float(np.sum(q[inside] * np.log(q[inside] / p[inside])))


def kl_penalised_value(pi, group_losses, *, tau: float, prior=None) -> float:
    r"""The inner objective of problem (4) at fixed θ: :math:`\langle\pi,L\rangle-\tau\,\mathrm{KL}(\pi\|\hat\pi)`.

    Args:
        pi: the group weights π (non-negative, summing to one; normalised here).
        group_losses: the group losses :math:`L_j` (one per group).
        tau: τ ≥ 0, the strength of the KL pull to the prior (β = 1/τ in the course's glossary).
        prior: π̂ (positive weights), ``None`` for uniform.
    """
    losses = _vector(group_losses, "group_losses")
    tau = check_number(tau, "tau", low=0)
    q = _distribution(pi, "pi", losses.size, positive=False)
    p = _distribution(prior, "prior", losses.size, positive=True)
    return float(q @ losses) - tau * _kl(q, p)


def _slsqp_simplex(objective, gradient, start: np.ndarray) -> np.ndarray:
    """Maximise a smooth concave function over the probability simplex with SLSQP (analytic gradient)."""
    from scipy.optimize import minimize  # slow to import: only the checks need it

    c = start.size
    res = minimize(
        lambda q: -objective(q),
        start,
        jac=lambda q: -gradient(q),
        method="SLSQP",
        bounds=[(1e-15, 1.0)] * c,
        constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1.0, "jac": lambda q: np.ones(c)}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    q = np.clip(res.x, 0.0, None)
    return q / q.sum()


def numerical_pi_star(group_losses, *, tau: float, prior=None) -> np.ndarray:
    r"""The maximiser of :func:`kl_penalised_value` over the simplex, found numerically (SLSQP from the uniform
    start, with the objective's gradient :math:`L_j-\tau(\log(\pi_j/\hat\pi_j)+1)`).

    It knows nothing of the closed form :math:`\pi^\star\propto\hat\pi_j e^{L_j/\tau}`; agreement to about
    :math:`10^{-6}` is what SLSQP delivers on a few groups with τ not far below the spread of the losses.
    """
    losses = _vector(group_losses, "group_losses")
    tau = check_number(tau, "tau", low=0, low_open=True)
    p = _distribution(prior, "prior", losses.size, positive=True)
    return _slsqp_simplex(
        lambda q: float(q @ losses) - tau * _kl(q, p),
        lambda q: losses - tau * (np.log(np.maximum(q, 1e-300) / p) + 1.0),
        np.full(losses.size, 1.0 / losses.size),
    )


def numerical_kl_prox(pi, grad, *, lr: float, tau: float, prior=None) -> np.ndarray:
    r"""The KL-prox step of π (Algorithm 5, Option I) as a maximisation, solved numerically:

    .. math::
        \pi^+=\arg\max_{q\in\Delta_c}\ \eta\langle g,q\rangle-\eta\tau\,\mathrm{KL}(q\|\hat\pi)-\mathrm{KL}(q\|\pi).

    Args:
        pi: the current weights π (positive; normalised here).
        grad: g, the ascent direction (the batch's scaled group losses).
        lr: η > 0.
        tau: τ ≥ 0.
        prior: π̂ (positive weights), ``None`` for uniform.
    """
    g = _vector(grad, "grad")
    q0 = _distribution(pi, "pi", g.size, positive=True)
    lr = check_number(lr, "lr", low=0, low_open=True)
    tau = check_number(tau, "tau", low=0)
    p = _distribution(prior, "prior", g.size, positive=True)
    return _slsqp_simplex(
        lambda q: lr * float(q @ g) - lr * tau * _kl(q, p) - _kl(q, q0),
        lambda q: (
            lr * g - lr * tau * (np.log(np.maximum(q, 1e-300) / p) + 1.0) - (np.log(np.maximum(q, 1e-300) / q0) + 1.0)
        ),
        q0,
    )


def optimism_spectral_radius(*, lr: float, alpha: float, coupling: float = 1.0) -> float:
    r"""How fast optimistic descent–ascent contracts (< 1) or spirals out (> 1) on :math:`\min_x\max_y\,a\,xy`.

    With :math:`A=\begin{pmatrix}0&a\\-a&0\end{pmatrix}` the step :math:`z_{t+1}=z_t-\gamma(1+\alpha)Az_t
    +\gamma\alpha Az_{t-1}` is linear in :math:`(z_t,z_{t-1})`; the answer is the largest modulus of the
    eigenvalues of that 4 × 4 companion matrix: the factor by which :math:`\|z_t\|` changes per step in the long
    run. α = 0 (plain descent–ascent) gives :math:`\sqrt{1+\gamma^2a^2}>1` for every γ.
    """
    lr = check_number(lr, "lr", low=0, low_open=True)
    alpha = check_number(alpha, "alpha", low=0)
    a = check_number(coupling, "coupling")
    rotation = np.array([[0.0, a], [-a, 0.0]])
    eye, zero = np.eye(2), np.zeros((2, 2))
    companion = np.block([[eye - lr * (1 + alpha) * rotation, lr * alpha * rotation], [eye, zero]])
    return float(np.abs(np.linalg.eigvals(companion)).max())


@dataclass(frozen=True)
class SaddlePoint:
    """The saddle point of KL-regularised logistic DRO (:func:`logistic_dro_saddle`).

    Attributes:
        theta: θ* as one float64 vector: the weight matrix (classes × features, row by row), then the bias —
            the order of :class:`dro_lab.LogisticRegression`'s ``classifier.weight`` and ``classifier.bias``.
        pi: π* (one weight per example), float64.
        value: Φ(θ*), the primal value.
        grad_norm: the largest entry of |∇Φ(θ*)| at the solution (how well L-BFGS solved it).
    """

    theta: Tensor
    pi: Tensor
    value: float
    grad_norm: float

    def distance(self, theta, pi) -> float:
        r""":math:`\|\theta-\theta^\star\|_2+\|\pi-\pi^\star\|_1` (tensors or arrays, any device)."""
        t = torch.as_tensor(np.asarray(_vector(theta, "theta", c=self.theta.numel())))
        q = torch.as_tensor(np.asarray(_vector(pi, "pi", c=self.pi.numel())))
        return float((t - self.theta).norm()) + float((q - self.pi).abs().sum())


def _features(data) -> tuple[Tensor, Tensor]:
    """``(x, y)`` of a dataset with ``x`` and ``y`` tensors, or of a pair: x as float64 (n, d), y as int64."""
    x, y = check_xy(data)
    x, y = x.detach().cpu().double().flatten(1), y.detach().cpu().long()
    if not bool(torch.isfinite(x).all()):
        raise ValueError("data's x contains NaN or inf values")
    return x, y


def logistic_dro_saddle(data, *, tau: float, l2: float, num_classes: int | None = None, prior=None) -> SaddlePoint:
    r"""The saddle point of :math:`\min_\theta\max_\pi\sum_i\pi_if_i(\theta)+\frac\lambda2\|\theta\|^2
    -\tau\,\mathrm{KL}(\pi\|\hat\pi)` for multinomial logistic regression, one weight per example (c = n).

    Solved through the primal :math:`\Phi(\theta)=\tau\log\sum_i\hat\pi_ie^{f_i(\theta)/\tau}+\frac\lambda2\|\theta\|^2`
    (the inner maximum in closed form), minimised by SciPy's L-BFGS-B in float64 with the gradient from autograd;
    then :math:`\pi^\star=\mathrm{softmax}(\log\hat\pi+f(\theta^\star)/\tau)`. λ > 0 and τ > 0 make the problem
    strongly convex–strongly concave, so the saddle point is unique (the setting of Theorem 1).

    Args:
        data: a dataset with ``x`` (n, d) and ``y`` (n,) tensors, or a pair ``(x, y)``.
        tau: τ > 0.
        l2: λ > 0, the L2 weight on every parameter (bias included, as the optimizers' weight decay).
        num_classes: k; default ``max(y) + 1``.
        prior: π̂ over the n examples, ``None`` for uniform.
    """
    from scipy.optimize import minimize  # slow to import: only the checks need it

    x, y = _features(data)
    tau = check_number(tau, "tau", low=0, low_open=True)
    l2 = check_number(l2, "l2", low=0, low_open=True)
    k = int(y.max()) + 1 if num_classes is None else int(num_classes)
    if k < 2 or int(y.min()) < 0 or int(y.max()) >= k:
        raise ValueError(f"num_classes must be ≥ 2 and cover the labels 0..{int(y.max())}, got {k}")
    n, d = x.shape
    log_prior = torch.as_tensor(np.log(_distribution(prior, "prior", n, positive=True)))

    def losses(theta: Tensor) -> Tensor:
        logits = x @ theta[: k * d].view(k, d).T + theta[k * d :]
        return torch.nn.functional.cross_entropy(logits, y, reduction="none")

    def primal(flat: np.ndarray) -> tuple[float, np.ndarray]:
        theta = torch.tensor(flat, dtype=torch.float64, requires_grad=True)
        value = tau * torch.logsumexp(log_prior + losses(theta) / tau, 0) + l2 / 2 * (theta**2).sum()
        (grad,) = torch.autograd.grad(value, theta)
        return float(value.detach()), grad.numpy()

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # thousands of tiny float64 steps: threads only add synchronisation (10-20× slower)
    try:
        options = {"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000}
        res = minimize(primal, np.zeros(k * d + k), jac=True, method="L-BFGS-B", options=options)
        theta = torch.tensor(res.x, dtype=torch.float64)
        with torch.no_grad():
            pi = torch.softmax(log_prior + losses(theta) / tau, 0)
        value, grad = primal(res.x)
    finally:
        torch.set_num_threads(threads)
    if not math.isfinite(value):
        raise ValueError("the primal is not finite at the solution: standardise x or raise tau")
    return SaddlePoint(theta=theta, pi=pi, value=value, grad_norm=float(np.abs(grad).max()))
