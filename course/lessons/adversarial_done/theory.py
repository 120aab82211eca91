r"""DONE's theory, measured on a model (Sow, Lin, Wang & Liang, ICLR 2024, §3.1–3.3): each step of the derivation
as a function that the DONE lesson calls and the tests check against an independent oracle.

* :func:`done_objective` — :math:`\Phi(w)=\sum_iw_i\ell_i-r\sum_iw_i\log(Mw_i)`, the maximisation over the weights in
  eq. (5), whose maximiser is :math:`\mathrm{softmax}(\ell/r)` and whose maximum is eq. (6) (§3.2);
* :func:`sample_losses` — the per-example cross-entropy :math:`\ell_i` of a model on given (e.g. adversarial) inputs;
* :func:`parameter_gradient` — the flat θ-gradient of any reduction of those losses (the Danskin check of §3.2);
* :func:`jensen_bias` — the bias :math:`\mathbb E_{\mathcal B}[r\log\bar g_{\mathcal B}]-r\log\bar g` of eq. (6)
  estimated from one minibatch, the reason for CID's running average (§3.3);
* :func:`running_average_stream` — that running average :math:`u` (Algorithm 1 line 11, eq. (10)) over a stream of
  batches: the bias of :math:`r\log u` and the sums of the batch weights;
* :func:`interior_fraction` — the share of coordinates strictly inside the attack box :math:`\mathcal C`, the only
  ones where Proposition 1's :math:`C_i^{-1}` is not zero;
* :func:`implicit_term_size` — CID's implicit term (Proposition 1, Hessian neglected) against the weighted loss,
  in value and in θ-gradient norm;
* :func:`input_curvature` — :math:`v^\top\nabla^2_x\ell\,v/\|v\|^2`, the input curvature that §3.2 neglects for
  ReLU networks.

Every model is run in eval mode (its mode restored) on its own device; results come back on the CPU in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from dro_lab._validation import check_bounds, check_callable, check_int, check_module, check_number
from dro_lab.attacks.implicit import implicit_correction
from dro_lab.reweighting import done_weights
from dro_lab.utils import model_device

__all__ = [
    "done_objective",
    "implicit_term_size",
    "input_curvature",
    "interior_fraction",
    "jensen_bias",
    "parameter_gradient",
    "running_average_stream",
    "sample_losses",
]


def _vector(values, name: str) -> Tensor:
    """A non-empty finite 1-D real vector as a float64 CPU tensor (TypeError for non-numbers, ValueError else)."""
    if isinstance(values, Tensor):
        t = values.detach()
    else:
        try:
            arr = np.asarray(values)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a vector of numbers, got {type(values).__name__}") from None
        if arr.dtype == object or arr.dtype.kind not in "iuf":
            raise TypeError(f"{name} must be a vector of real numbers, got {type(values).__name__}")
        t = torch.as_tensor(arr)
    if t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{name} must hold real numbers, got dtype {t.dtype}")
    t = t.to("cpu", torch.float64)
    if t.dim() != 1 or t.numel() == 0:
        raise ValueError(f"{name} must be a non-empty 1-D vector, got shape {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or inf values; {name} must be finite")
    return t


def _pair(model, x, y) -> tuple[Tensor, Tensor]:
    check_module(model)
    if not isinstance(x, Tensor) or not isinstance(y, Tensor):
        raise TypeError(f"x and y must be tensors, got {type(x).__name__} and {type(y).__name__}")
    if x.dim() == 0 or y.shape != x.shape[:1]:
        raise ValueError(f"y must hold one label per row of x {tuple(x.shape)}, got shape {tuple(y.shape)}")
    device = model_device(model)
    return x.detach().to(device), y.to(device)


def done_objective(weights, losses, r: float) -> float:
    r"""The objective of the maximisation over the weights in eq. (5): :math:`\Phi(w)=\sum_iw_i\ell_i-r\sum_iw_i
    \log(Mw_i)`, the weighted loss minus r times :math:`\mathrm{KL}(w\,\|\,\mathrm{Unif}_M)` (with :math:`0\log0=0`).

    Its maximiser over the simplex is :math:`w^\star=\mathrm{softmax}(\ell/r)` and its maximum
    :math:`r\log\frac1M\sum_ie^{\ell_i/r}` (eq. (6), Sow et al. §3.2); a numerical optimiser that knows nothing of
    the closed form finds both. ``weights`` need not sum to one (an optimiser steps off the simplex).

    Args:
        weights: ``w``, shape ``(M,)``, non-negative.
        losses: ``ℓ``, shape ``(M,)``, finite.
        r: the KL temperature r > 0.

    Returns:
        Φ(w) as a float.
    """
    w, ell = _vector(weights, "weights"), _vector(losses, "losses")
    r = check_number(r, "r", low=0, low_open=True)
    if w.shape != ell.shape:
        raise ValueError(f"weights must have one entry per loss, shape {tuple(ell.shape)}, got {tuple(w.shape)}")
    if bool((w < 0).any()):
        raise ValueError(f"weights must be non-negative, got a minimum of {float(w.min()):g}")
    m = w.numel()
    kl = torch.where(w > 0, w * torch.log(m * w.clamp_min(1e-300)), torch.zeros_like(w)).sum()
    return float((w * ell).sum() - r * kl)


@torch.no_grad()
def sample_losses(model: torch.nn.Module, x: Tensor, y: Tensor) -> Tensor:
    r"""Per-example cross-entropy :math:`\ell_i=\ell(x_i,y_i;\theta)` of ``model`` (eval mode, its mode restored),
    float64 on the CPU: the losses whose softmax over r gives DONE's weights (§3.2).

    ``x`` may be clean or adversarial inputs (:func:`dro_lab.attacks.pgd_attack`); ``y`` one label per row."""
    x, y = _pair(model, x, y)
    was_training = model.training
    model.eval()
    try:
        logits = model(x)
    finally:
        model.train(was_training)
    return F.cross_entropy(logits, y, reduction="none").to("cpu", torch.float64)


def parameter_gradient(model: torch.nn.Module, x: Tensor, y: Tensor, reduce: Callable[[Tensor], Tensor]) -> Tensor:
    r"""The gradient of ``reduce(ℓ)`` with respect to every trainable parameter of ``model``, flattened, float64 CPU.

    ``ℓ`` is the vector of per-example cross-entropies on ``(x, y)`` (eval mode, the mode restored), with its graph,
    so ``reduce`` decides what flows: ``lambda l: l.mean()`` is AT's gradient (eq. (1)),
    ``lambda l: r * torch.logsumexp(l / r, 0)`` the gradient of eq. (6), and
    ``lambda l: (torch.softmax(l / r, 0).detach() * l).sum()`` the weighted loss with the weights held fixed —
    Danskin's theorem says the last two agree. ``.grad`` of the parameters is left untouched."""
    check_callable(reduce, "reduce", "a function of the loss vector returning a scalar")
    x, y = _pair(model, x, y)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters")
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            value = reduce(F.cross_entropy(model(x), y, reduction="none"))
            if not isinstance(value, Tensor) or value.numel() != 1:
                raise ValueError("reduce must return a scalar tensor built from the losses")
            grads = torch.autograd.grad(value.reshape(()), params, allow_unused=True)
    finally:
        model.train(was_training)
    flat = [(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)]
    return torch.cat(flat).to("cpu", torch.float64)


def _log_batch_means(ell: Tensor, r: float, batch_size: int, draws: int, generator) -> Tensor:
    """``log ḡ_B − log ḡ`` for ``draws`` batches drawn without replacement (in chunks: memory O(256·n))."""
    n = ell.numel()
    log_full = torch.logsumexp(ell / r, 0) - math.log(n)
    out = []
    for start in range(0, draws, 256):
        k = min(256, draws - start)
        idx = torch.rand(k, n, generator=generator, dtype=torch.float64).argsort(dim=1)[:, :batch_size]
        out.append(torch.logsumexp(ell[idx] / r, 1) - math.log(batch_size) - log_full)
    return torch.cat(out)


def jensen_bias(
    losses, r: float, batch_size: int, *, draws: int = 2000, generator: torch.Generator | None = None
) -> float:
    r"""The bias of eq. (6) estimated from one minibatch: :math:`\mathbb E_{\mathcal B}\big[r\log\bar g_{\mathcal B}
    \big]-r\log\bar g`, with :math:`g_i=e^{\ell_i/r}`, :math:`\bar g` the mean over all M losses and
    :math:`\bar g_{\mathcal B}` over a batch of ``batch_size`` drawn without replacement (Sow et al. §3.3: "the
    product … would still be biased, unless f(·) is a linear function").

    :math:`f=r\log` is concave, so the bias is ≤ 0 (Jensen), and 0 when the batch is the whole set. Monte Carlo
    over ``draws`` batches with the zero-mean control variate :math:`r(e^z-1)`, :math:`z=\log(\bar g_{\mathcal B}/
    \bar g)`: each draw contributes :math:`r(z-e^z+1)\le0` — the same expectation, far less noise.

    Args:
        losses: the M losses ℓ (finite).
        r: the KL temperature r > 0.
        batch_size: |B|, 1 ≤ |B| ≤ M.
        draws: the number of batches drawn.
        generator: a :class:`torch.Generator` for the draws (the global RNG when None).
    """
    ell = _vector(losses, "losses")
    r = check_number(r, "r", low=0, low_open=True)
    batch_size = check_int(batch_size, "batch_size", low=1, high=ell.numel())
    draws = check_int(draws, "draws")
    z = _log_batch_means(ell, r, batch_size, draws, generator)
    return float((r * (z - torch.expm1(z))).mean())


def running_average_stream(
    losses,
    r: float,
    *,
    eta: float,
    batch_size: int,
    batches: int = 300,
    burn_in: int = 50,
    generator: torch.Generator | None = None,
) -> dict[str, float]:
    r"""CID's running average over a stream of batches of fixed losses (a frozen model, so only the estimator moves):
    :math:`u_{t+1}=(1-\eta)u_t+\eta\,\bar g_{\mathcal B_t}` and the weights :math:`\omega_i=e^{\ell_i/r}/(|\mathcal B|
    u_{t+1})` (Algorithm 1 line 11, eq. (10)), through :func:`dro_lab.done_weights`.

    Batches are drawn without replacement within a batch, independently across the stream. After ``burn_in``
    batches the stream records :math:`r\log u_{t+1}` and each batch's weight sum :math:`\sum_i\omega_i=\bar
    g_{\mathcal B}/u_{t+1}`.

    Returns:
        ``bias`` (mean of :math:`r\log u` minus the full value :math:`r\log\bar g`), ``sum_mean``, ``sum_p5`` and
        ``sum_p95`` (the 5th and 95th percentiles of the weight sums; all one when η = 1).
    """
    ell = _vector(losses, "losses")
    r = check_number(r, "r", low=0, low_open=True)
    eta = check_number(eta, "eta", low=0, high=1, low_open=True)
    batch_size = check_int(batch_size, "batch_size", low=1, high=ell.numel())
    batches = check_int(batches, "batches")
    burn_in = check_int(burn_in, "burn_in", low=0, high=batches - 1)
    full = r * (float(torch.logsumexp(ell / r, 0)) - math.log(ell.numel()))
    log_u, values, sums = None, [], []
    for t in range(batches):
        idx = torch.randperm(ell.numel(), generator=generator)[:batch_size]
        w, log_u = done_weights(ell[idx], r=r, log_u=log_u, eta=eta)
        if t >= burn_in:
            values.append(r * float(log_u))
            sums.append(float(w.sum()))
    s = np.asarray(sums)
    return {
        "bias": float(np.mean(values)) - full,
        "sum_mean": float(s.mean()),
        "sum_p5": float(np.percentile(s, 5)),
        "sum_p95": float(np.percentile(s, 95)),
    }


def _box_gaps(x_adv: Tensor, x: Tensor, eps: float, clamp) -> tuple[Tensor, Tensor]:
    """The distances ``u_j − δ_j`` and ``δ_j − l_j`` to the faces of C = {‖δ‖∞ ≤ ε, x + δ in clamp} (§3.2)."""
    hi, lo = (x + eps, x - eps) if clamp is None else ((x + eps).clamp(max=clamp[1]), (x - eps).clamp(min=clamp[0]))
    return hi - x_adv, x_adv - lo


def interior_fraction(x_adv: Tensor, x: Tensor, *, eps: float, clamp=(0.0, 1.0), tol: float = 1e-7) -> float:
    r"""The share of the coordinates of ``x_adv`` strictly inside the attack box :math:`\mathcal C=\{\|\delta\|_\infty
    \le\epsilon,\ x+\delta\in[0,1]^p\}` (more than ``tol`` from both faces): the only coordinates where
    Proposition 1's :math:`[C_i]^{-1}_{jj}` is not zero, so the only ones the implicit term sees (§3.2)."""
    if not isinstance(x_adv, Tensor) or not isinstance(x, Tensor):
        raise TypeError(f"x_adv and x must be tensors, got {type(x_adv).__name__} and {type(x).__name__}")
    if x_adv.shape != x.shape or x.numel() == 0:
        raise ValueError(f"x_adv must have the (non-empty) shape of x {tuple(x.shape)}, got {tuple(x_adv.shape)}")
    eps = check_number(eps, "eps", low=0)
    tol = check_number(tol, "tol", low=0)
    up, down = _box_gaps(x_adv.detach().double(), x.detach().double(), eps, check_bounds(clamp))
    return float((torch.minimum(up, down) > tol).double().mean())


def implicit_term_size(
    model: torch.nn.Module,
    x_adv: Tensor,
    x: Tensor,
    y: Tensor,
    weights: Tensor | None = None,
    *,
    eps: float,
    barrier: float,
    clamp=(0.0, 1.0),
) -> dict[str, float]:
    r"""How large CID's implicit term is next to the weighted loss (Proposition 1 with
    :math:`\nabla^2_\delta\ell'` neglected, through :func:`dro_lab.attacks.implicit_correction`):

    .. math:: \mathrm{corr}=\sum_i\omega_i\,\langle\nabla_\delta\ell_i,\
       \mathrm{sg}(C_i^{-1}\nabla_\delta\ell_i)\rangle,\qquad
       \text{value ratio}=\frac{\mathrm{corr}}{\sum_i\omega_i\ell_i},\quad
       \text{gradient ratio}=\frac{\|\nabla_\theta\mathrm{corr}\|}{\|\nabla_\theta\sum_i\omega_i\ell_i\|}.

    ``weights`` default to uniform (AT's); the model runs in eval mode (restored). Returns ``value_ratio`` and
    ``gradient_ratio``."""
    x, y = _pair(model, x, y)
    if not isinstance(x_adv, Tensor) or x_adv.shape != x.shape:
        raise ValueError(f"x_adv must be a tensor of the shape of x {tuple(x.shape)}")
    n = x.shape[0]
    w = torch.full((n,), 1.0 / n) if weights is None else _vector(weights, "weights")
    if w.numel() != n:
        raise ValueError(f"weights must have one entry per example ({n}), got {w.numel()}")
    params = [p for p in model.parameters() if p.requires_grad]
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            xa = x_adv.detach().to(x.device).clone().requires_grad_(True)
            ell = F.cross_entropy(model(xa), y, reduction="none")
            w = w.to(ell.device, ell.dtype)
            base = (w * ell).sum()
            corr = implicit_correction(ell, xa, x, w, eps=eps, barrier=barrier, clamp=clamp)
            g_base = torch.autograd.grad(base, params, retain_graph=True)
            g_corr = torch.autograd.grad(corr, params, allow_unused=True)
    finally:
        model.train(was_training)
    norm_base = torch.cat([g.reshape(-1) for g in g_base]).norm()
    norm_corr = torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(g_corr, params)])
    return {
        "value_ratio": float(corr.detach() / base.detach()),
        "gradient_ratio": float(norm_corr.norm() / norm_base),
    }


def input_curvature(model: torch.nn.Module, x: Tensor, y: Tensor, directions: Tensor | None = None) -> Tensor:
    r"""The curvature of each example's loss along a direction of its input: :math:`v_i^\top\nabla^2_x\ell_i\,v_i/
    \|v_i\|^2` (a Hessian-vector product by double backward), float64 CPU, one value per example.

    ``directions`` default to each input gradient :math:`\nabla_x\ell_i`. Sow et al. (§3.2, after Proposition 1)
    neglect :math:`\nabla^2_\delta\ell'` because "ReLU network[s] generally lead to piece-wise linear decision
    boundaries"; the cross-entropy on top is not linear: for logits :math:`z=Wx` its Hessian is
    :math:`W^\top(\mathrm{diag}(p)-pp^\top)W`, positive semi-definite and not zero. The model runs in eval mode
    (restored); it must treat examples independently (no BatchNorm in train mode)."""
    x, y = _pair(model, x, y)
    if directions is not None and (not isinstance(directions, Tensor) or directions.shape != x.shape):
        raise ValueError(f"directions must be a tensor of the shape of x {tuple(x.shape)}")
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            xg = x.clone().requires_grad_(True)
            (grad,) = torch.autograd.grad(F.cross_entropy(model(xg), y, reduction="sum"), xg, create_graph=True)
            v = (grad if directions is None else directions.to(grad)).detach()
            (hv,) = torch.autograd.grad((grad * v).sum(), xg)
    finally:
        model.train(was_training)
    dims = tuple(range(1, x.dim()))
    quad = (hv * v).sum(dim=dims) if dims else hv * v
    norm2 = (v * v).sum(dim=dims) if dims else v * v
    return (quad / norm2.clamp_min(torch.finfo(norm2.dtype).tiny)).to("cpu", torch.float64)
