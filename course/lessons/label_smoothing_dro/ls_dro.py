r"""The DRO-LS model of Wang, Zhang, Xu & Guo (2024) on a linear head in feature space: what lesson 06 checks.

The paper moves a sample's penultimate features :math:`z' = f(\theta_r; x)` (the transport cost of eq. 7 is
:math:`\tfrac12\|z - z'\|_2^2`, labels never move) and scores them with the label-smoothed cross-entropy of a
linear head, logits :math:`s = \theta_f^\top z` with :math:`\theta_f\in\mathbb R^{t\times k}` (column j is class
j's weight vector, §1.2 of the paper). Everything here takes ``theta_f`` in that layout, shape ``(t, k)`` (a
``torch.nn.Linear(t, k).weight`` is its transpose).

* :func:`feature_gradient` — :math:`\nabla_z\boldsymbol\ell_\alpha=\theta_f(p-\bar y_\alpha)`, eq. 16 with its
  sign corrected (the printed eq. 16 is minus the gradient);
* :func:`robust_surrogate` — the per-sample robust surrogate
  :math:`\phi_\gamma(z')=\sup_z\{\boldsymbol\ell_\alpha(z)-\tfrac\gamma2\|z-z'\|^2\}` (eq. 11) and its maximiser,
  by Newton's method, exact above :func:`concavity_threshold`;
* :func:`shift_bound` — a Lipschitz constant :math:`L_0` of the loss in z, so that
  :math:`\|z^\star-z'\|\le L_0/\gamma` (sharper than Theorem 3.5's :math:`3L_0/\gamma`);
* :func:`feature_ascent` — Algorithm 1's inner ascent run on the features themselves (the α flip of the lesson);
* :func:`penalised_objective`, :func:`true_class_margin`, :func:`outward_share` — the same quantities for a
  network (``penultimate`` / ``classifier``), as :func:`dro_lab.attacks.gils_shift` moves its inputs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from dro_lab._validation import check_int, check_module, check_number
from dro_lab.losses import check_ls_alpha, ls_cross_entropy, smoothed_targets

__all__ = [
    "concavity_threshold",
    "feature_ascent",
    "feature_gradient",
    "outward_share",
    "penalised_objective",
    "robust_surrogate",
    "shift_bound",
    "true_class_margin",
]


def _head(theta_f) -> Tensor:
    if not isinstance(theta_f, Tensor):
        raise TypeError(f"theta_f must be a torch.Tensor of shape (t, k), got {type(theta_f).__name__}")
    if theta_f.dim() != 2 or theta_f.shape[1] < 2 or not theta_f.dtype.is_floating_point:
        raise ValueError(f"theta_f must be a float tensor (t features, k ≥ 2 classes), got {tuple(theta_f.shape)}")
    return theta_f


def _features(z, y, theta_f, name: str = "z") -> tuple[Tensor, Tensor, Tensor]:
    w = _head(theta_f)
    if not isinstance(z, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (n, t), got {type(z).__name__}")
    if not isinstance(y, Tensor):
        raise TypeError(f"y must be a torch.Tensor of class labels, got {type(y).__name__}")
    if z.dim() != 2 or z.shape[1] != w.shape[0]:
        raise ValueError(f"{name} must have shape (n, t={w.shape[0]}) to match theta_f, got {tuple(z.shape)}")
    if y.shape != (z.shape[0],):
        raise ValueError(f"y must hold one label per row of {name} ({z.shape[0]}), got shape {tuple(y.shape)}")
    return z, y, w.to(z.dtype)


def concavity_threshold(theta_f: Tensor) -> float:
    r""":math:`\tfrac12\|\theta_f\|_2^2` (spectral norm): for γ above it the inner problem of eq. 11 is strictly
    concave in z. The Hessian of the (label-smoothed) cross-entropy in the logits is
    :math:`\mathrm{diag}(p)-pp^\top`, whose largest eigenvalue is at most ½, so in z it is at most
    :math:`\tfrac12\|\theta_f\|_2^2`. The paper's γ = 10⁻³ is below it for any head of non-trivial size."""
    w = _head(theta_f)
    return 0.5 * float(torch.linalg.matrix_norm(w.detach().double(), ord=2)) ** 2


def feature_gradient(z: Tensor, y: Tensor, theta_f: Tensor, *, alpha: float) -> Tensor:
    r""":math:`\nabla_z\boldsymbol\ell_\alpha(\theta;(z,y))=\theta_f\,(p-\bar y_\alpha)` per row, shape ``(n, t)``.

    Eq. 16 of the paper prints :math:`(1-\alpha)\theta_{f,i}+\frac{\alpha}{k-1}\sum_{j\ne i}\theta_{f,j}
    -\sum_jp_j\theta_{f,j}`, which is this vector with the opposite sign (same norm: the regulariser of eq. 20
    is unaffected, an ascent along the printed vector descends the loss)."""
    z, y, w = _features(z, y, theta_f)
    alpha = check_ls_alpha(alpha, w.shape[1])
    p = torch.softmax(z @ w, dim=1)
    return (p - smoothed_targets(y, w.shape[1], alpha, dtype=z.dtype)) @ w.T


def _newton_step(z, z0, y, w, alpha, gamma):
    """Newton's direction for F(z) = ℓ_α(z) − γ/2‖z − z0‖² (concave above the threshold), one per row."""
    p = torch.softmax(z @ w, dim=1)
    grad = (p - smoothed_targets(y, w.shape[1], alpha, dtype=z.dtype)) @ w.T - gamma * (z - z0)
    curvature = torch.diag_embed(p) - p.unsqueeze(2) * p.unsqueeze(1)  # Hessian of ℓ in the logits
    eye = torch.eye(w.shape[0], dtype=z.dtype, device=z.device)
    hessian = w @ curvature @ w.T - gamma * eye  # (n, t, t), negative definite
    return -torch.linalg.solve(hessian, grad.unsqueeze(2)).squeeze(2), grad


def _penalised(z, z0, y, w, alpha, gamma) -> Tensor:
    return ls_cross_entropy(z @ w, y, alpha=alpha) - 0.5 * gamma * (z - z0).pow(2).sum(1)


def robust_surrogate(
    z0: Tensor, y: Tensor, theta_f: Tensor, *, alpha: float, gamma: float, tol: float = 1e-12, max_iter: int = 100
) -> tuple[Tensor, Tensor]:
    r"""The robust surrogate of eq. 11, per row of ``z0``, and its maximiser:

    .. math:: \phi_\gamma(\theta;(z',y))=\sup_z\Big\{\boldsymbol\ell_\alpha(\theta;(z,y))
              -\tfrac\gamma2\|z-z'\|_2^2\Big\},\qquad z^\star=\arg\max .

    Solved by damped Newton steps (the Hessian :math:`\theta_f(\mathrm{diag}\,p-pp^\top)\theta_f^\top-\gamma I`
    is exact), which converge to the unique maximiser when γ exceeds :func:`concavity_threshold`; below it the
    problem may have several local maxima and this raises. Computed in float64.

    Args:
        z0: anchor features :math:`z'`, ``(n, t)``; y: labels ``(n,)``; theta_f: the head ``(t, k)``.
        alpha: the LS factor α ∈ [0, (k−1)/k]; gamma: the penalty, above the concavity threshold.
        tol: stop when every row's gradient norm is below it; max_iter: at most this many Newton steps.

    Returns:
        ``(phi, z_star)``: ``(n,)`` values and ``(n, t)`` maximisers, float64.

    Raises:
        ValueError: γ at or below the concavity threshold; no convergence in ``max_iter`` steps.
    """
    z0, y, w = _features(z0, y, theta_f, "z0")
    w, z0 = w.detach().double(), z0.detach().double()
    alpha = check_ls_alpha(alpha, w.shape[1])
    gamma = check_number(gamma, "gamma (the transport penalty)", low=0, low_open=True)
    check_number(tol, "tol", low=0, low_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    threshold = concavity_threshold(w)
    if gamma <= threshold:
        raise ValueError(
            f"gamma must exceed the concavity threshold ½‖θ_f‖² = {threshold:.4g} for a unique maximiser, got {gamma!r}"
        )
    z = z0.clone()
    for _ in range(max_iter):
        step, grad = _newton_step(z, z0, y, w, alpha, gamma)
        if float(grad.norm(dim=1).max()) < tol:
            return _penalised(z, z0, y, w, alpha, gamma), z
        value, size = _penalised(z, z0, y, w, alpha, gamma), torch.ones_like(z[:, :1])
        for _ in range(30):  # backtracking per row: keep a step only where it does not lower F
            trial = z + size * step
            worse = _penalised(trial, z0, y, w, alpha, gamma) < value - 1e-15
            if not bool(worse.any()):
                break
            size[worse] *= 0.5
        z = z + size * step
    _, grad = _newton_step(z, z0, y, w, alpha, gamma)
    if float(grad.norm(dim=1).max()) < max(tol, 1e-9):
        return _penalised(z, z0, y, w, alpha, gamma), z
    raise ValueError(f"Newton's method did not converge in {max_iter} steps (gradient {float(grad.norm()):.2e})")


def shift_bound(theta_f: Tensor) -> float:
    r"""A Lipschitz constant of :math:`z\mapsto\boldsymbol\ell_\alpha(\theta;(z,y))` for every α and y:
    :math:`L_0=\max_{i,j}\|\theta_{f,i}-\theta_{f,j}\|_2`. The gradient :math:`\theta_f(p-\bar y_\alpha)` is a
    combination of the columns with coefficients summing to 0 and of ℓ₁ norm at most 2, hence a difference of two
    points of the columns' convex hull. Stationarity at an interior maximiser gives
    :math:`\|z^\star-z'\|=\|\nabla\boldsymbol\ell_\alpha(z^\star)\|/\gamma\le L_0/\gamma`; Theorem 3.5 states the
    looser :math:`3L_0/\gamma`."""
    w = _head(theta_f).detach().double()
    return float(torch.cdist(w.T, w.T).max())


def feature_ascent(
    z: Tensor, y: Tensor, theta_f: Tensor, *, alpha: float, gamma: float = 0.0, eta: float, steps: int
) -> Tensor:
    r"""Algorithm 1's inner loop on the features: T raw gradient-ascent steps
    :math:`z^{t+1}=z^t+\eta\,\big[\theta_f(p(z^t)-\bar y_\alpha)-\gamma(z^t-z)\big]`, returns :math:`z^T`.

    In the logits the loss ascends along :math:`p-\bar y_\alpha`: a sample already more confident than the smoothed
    target (:math:`p_\text{true}>1-\alpha`) is pushed to *more* confidence, away from the boundary; with α = 0
    (Volpi's ADA) every sample is pushed toward it."""
    z, y, w = _features(z, y, theta_f)
    alpha = check_ls_alpha(alpha, w.shape[1])
    gamma = check_number(gamma, "gamma (the transport penalty)", low=0)
    eta = check_number(eta, "eta (the ascent step)", low=0, low_open=True)
    steps = check_int(steps, "steps", low=0)
    zt, anchor = z.detach().clone(), z.detach()
    for _ in range(steps):
        zt = zt + eta * (feature_gradient(zt, y, w, alpha=alpha) - gamma * (zt - anchor))
    return zt


def _network(model, x, y) -> None:
    check_module(model)
    if not (hasattr(model, "penultimate") and isinstance(getattr(model, "classifier", None), torch.nn.Module)):
        raise TypeError("model needs penultimate(x) and a classifier module (every dro_lab.models network has both)")
    if not isinstance(x, Tensor) or not isinstance(y, Tensor):
        raise TypeError(f"x and y must be torch tensors, got {type(x).__name__} and {type(y).__name__}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y must have the same batch size, got {x.shape[0]} and {y.shape[0]}")


def penalised_objective(model, x_t: Tensor, x: Tensor, y: Tensor, *, alpha: float, gamma: float) -> Tensor:
    r"""Per sample, what Algorithm 1's inner loop ascends: :math:`\boldsymbol\ell_\alpha(\theta;(x^t,y))
    -\gamma\cdot\tfrac12\|f(x^t)-f(x)\|_2^2` with ``f = model.penultimate`` (no gradient; the model's mode is
    left as it is, so call it in eval mode as :func:`~dro_lab.attacks.gils_shift` does)."""
    _network(model, x, y)
    if not isinstance(x_t, Tensor) or x_t.shape != x.shape:
        raise ValueError(f"x_t must be a tensor of x's shape {tuple(x.shape)}")
    gamma = check_number(gamma, "gamma (the transport penalty)", low=0)
    with torch.no_grad():
        z, z0 = model.penultimate(x_t), model.penultimate(x)
        loss = ls_cross_entropy(model.classifier(z), y, alpha=alpha)
        return loss - 0.5 * gamma * (z - z0).pow(2).flatten(1).sum(1)


def true_class_margin(logits: Tensor, y: Tensor) -> Tensor:
    """The true class's logit minus the largest other logit, per row (positive: classified right). Unlike the
    softmax probability it does not saturate near 1, so it shows which way a confident sample moved."""
    if not isinstance(logits, Tensor) or not isinstance(y, Tensor):
        raise TypeError("logits and y must be torch tensors")
    if logits.dim() != 2 or logits.shape[1] < 2 or y.shape != (logits.shape[0],):
        raise ValueError(f"logits must be (n, k ≥ 2) and y (n,), got {tuple(logits.shape)} and {tuple(y.shape)}")
    own = F.one_hot(y.long(), logits.shape[1]).bool()
    return logits[own] - logits.masked_fill(own, -torch.inf).max(1).values


def outward_share(model, x: Tensor, y: Tensor, x_shifted: Tensor, *, alpha: float) -> dict:
    r"""Which way a shift moved the samples, by the model's margin (:func:`true_class_margin`): among the
    *confident* samples (:math:`p_\text{true}>1-\alpha`) and the others, the share whose margin grew (pushed
    outward, away from the boundary) and the mean change. Returns a dict with ``confident`` / ``others`` (counts),
    ``confident_outward`` / ``others_outward`` (shares, NaN for an empty group) and ``confident_change``."""
    _network(model, x, y)
    if not isinstance(x_shifted, Tensor) or x_shifted.shape != x.shape:
        raise ValueError(f"x_shifted must be a tensor of x's shape {tuple(x.shape)}")
    alpha = check_number(alpha, "alpha (the label-smoothing factor)", low=0, high=1)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            before, after = model(x), model(x_shifted)
    finally:
        model.train(was_training)
    p_true = F.softmax(before, 1)[torch.arange(x.shape[0]), y]
    change = true_class_margin(after, y) - true_class_margin(before, y)
    confident = p_true > 1 - alpha
    nan = float("nan")
    return {
        "confident": int(confident.sum()),
        "others": int((~confident).sum()),
        "confident_outward": float((change[confident] > 0).double().mean()) if bool(confident.any()) else nan,
        "others_outward": float((change[~confident] > 0).double().mean()) if bool((~confident).any()) else nan,
        "confident_change": float(change[confident].mean()) if bool(confident.any()) else nan,
    }
