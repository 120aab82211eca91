r"""Lahire (2023)'s one-step analysis of importance-sampled SGD, computed exactly on a set of per-sample gradients.

Draw example :math:`i` with probability :math:`p_i` and step with :math:`G_i=w_i\nabla\ell_i`,
:math:`w_i=1/(Np_i)` (eq. 1–2). The paper measures one step (batch 1) by its convergence speed (App. A)

.. math::
    S(p)=-\mathbb E_{i\sim p}\big[\|\theta_{t+1}-\theta^*\|^2-\|\theta_t-\theta^*\|^2\big]
        =2\eta(\theta_t-\theta^*)^T\nabla L-\frac{\eta^2}{N^2}H(p),\qquad H(p)=\sum_i\frac{g_i^2}{p_i},

with :math:`g_i=\|\nabla\ell_i\|`, so the best scheme minimises :math:`H`: :math:`p^{GN}_i=g_i/\sum_jg_j`
(§2.1, App. A). This module holds what a reader needs to check those statements on a real network:

* :func:`gradient_snapshot` — the per-sample gradients of a model at its current parameters (float64, CPU), their
  Gram matrix, norms and the full gradient;
* :func:`optimal_sampling`, :func:`variance_term`, :func:`minimise_variance_term` — :math:`p^{GN}`, :math:`H(p)`
  and SciPy's numerical minimiser of :math:`H` on the simplex (an oracle that knows nothing of the answer);
* :func:`one_step_speed` — :math:`S(p)` by enumerating the :math:`N` possible draws, for SGD with or without
  momentum (App. C);
* :func:`between_theorem_trials` — random trials of the theorem of §3.1 / App. B and of the step of its proof
  that fails;
* :func:`weight_cancellation` — the first step of SGD, Adam and RMSProp with and without importance weights
  (§3.2, App. D–E): a weight common to the batch cancels in the adaptive optimizers.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from dro_lab._validation import check_int, check_module, check_number
from dro_lab.pergrad.ghost import per_sample_grad_norms
from dro_lab.utils import to_numpy

__all__ = [
    "GradientSnapshot",
    "TheoremTrials",
    "WeightCancellation",
    "between_theorem_trials",
    "first_step",
    "gradient_snapshot",
    "minimise_variance_term",
    "one_step_speed",
    "optimal_sampling",
    "variance_term",
    "weight_cancellation",
]


# ------------------------------------------------------------------------------------------------ checks
def _vector(values, name: str) -> np.ndarray:
    """``values`` as a finite, non-empty 1-D float64 array."""
    if isinstance(values, (str, bytes)) or values is None:
        raise TypeError(f"{name} must be a 1-D array or tensor of numbers, got {type(values).__name__}")
    try:
        a = np.asarray(to_numpy(values), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-D array or tensor of numbers, got {type(values).__name__}") from exc
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D vector, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} holds NaN or infinite values")
    return a


def _norms(grad_norms) -> np.ndarray:
    g = _vector(grad_norms, "grad_norms")
    if np.any(g < 0):
        raise ValueError("grad_norms must be non-negative (they are norms ‖∇ℓ_i‖)")
    return g


def _probabilities(p, n: int, *, positive: bool) -> np.ndarray:
    q = _vector(p, "p")
    if q.size != n:
        raise ValueError(f"p must have one probability per example ({n}), got {q.size}")
    if np.any(q < 0) or (positive and np.any(q == 0)):
        raise ValueError(f"p must hold {'positive' if positive else 'non-negative'} probabilities, got min {q.min():g}")
    if abs(q.sum() - 1.0) > 1e-6:
        raise ValueError(f"p must sum to 1, got {q.sum():.8g}")
    return q


def _matrix(grads, name: str = "grads") -> Tensor:
    if isinstance(grads, Tensor):
        G = grads.detach().to("cpu", torch.float64)
    elif isinstance(grads, np.ndarray):
        G = torch.from_numpy(np.asarray(grads, dtype=np.float64))
    else:
        raise TypeError(f"{name} must be an (N, P) tensor or array, got {type(grads).__name__}")
    if G.dim() != 2 or G.shape[0] == 0:
        raise ValueError(f"{name} must be (N, P): one gradient per row, got shape {tuple(G.shape)}")
    return G


def _direction(direction, size: int, name: str) -> Tensor:
    if not isinstance(direction, (Tensor, np.ndarray)):
        raise TypeError(f"{name} must be a tensor or array of {size} numbers, got {type(direction).__name__}")
    d = torch.as_tensor(np.asarray(to_numpy(direction), dtype=np.float64)).reshape(-1)
    if d.numel() != size:
        raise ValueError(f"{name} must have one entry per parameter ({size}), got {d.numel()}")
    return d


# ------------------------------------------------------------------------------------- the scheme and H
def optimal_sampling(grad_norms) -> np.ndarray:
    r"""The optimal scheme of SGD, :math:`p^{GN}_i=g_i/\sum_jg_j` (Lahire 2023, §2.1 and App. A).

    Args:
        grad_norms: the per-example gradient norms :math:`g_i\ge0`, not all zero (1-D).

    Returns:
        :math:`p^{GN}` as a float64 array.
    """
    g = _norms(grad_norms)
    if g.sum() == 0:
        raise ValueError("grad_norms are all zero: every example is fitted and p^GN = g/Σg is undefined")
    return g / g.sum()


def variance_term(grad_norms, p) -> float:
    r"""The variance term :math:`H(p)=\sum_ig_i^2/p_i` of the convergence speed (App. B; :math:`S(p)` is a
    constant minus :math:`\eta^2H(p)/N^2`).

    An example with :math:`g_i=0` adds nothing whatever its :math:`p_i`; one with :math:`g_i>0` and
    :math:`p_i=0` makes :math:`H` infinite (it can never be drawn: the estimate is biased).

    Args:
        grad_norms: :math:`g_i\ge0` (1-D).
        p: a probability vector of the same length.
    """
    g = _norms(grad_norms)
    q = _probabilities(p, g.size, positive=False)
    if np.any((q == 0) & (g > 0)):
        return float("inf")
    used = g > 0
    return float(np.sum(g[used] ** 2 / q[used]))


def minimise_variance_term(grad_norms, *, floor: float = 1e-9) -> np.ndarray:
    """SciPy's SLSQP minimiser of :func:`variance_term` on the simplex (every :math:`p_i\\ge` ``floor``), started
    from uniform: a numerical oracle for the closed form :func:`optimal_sampling` (App. A's Lagrangian)."""
    from scipy.optimize import minimize  # scipy only for this oracle: importing the module stays cheap
    from threadpoolctl import threadpool_limits  # (scikit-learn's dependency) see the ``with`` below

    g = _norms(grad_norms)
    floor = check_number(floor, "floor", low=0.0, high=1.0 / g.size, low_open=True)
    scale = g.sum() ** 2 if g.sum() > 0 else 1.0
    n = g.size
    with threadpool_limits(1):  # hundreds of tiny dense QPs: BLAS threads only contend (10× slower on 2 busy cores)
        result = minimize(
            lambda q: np.sum(g**2 / q) / scale,
            np.full(n, 1.0 / n),
            jac=lambda q: -(g**2) / q**2 / scale,
            method="SLSQP",
            bounds=[(floor, 1.0)] * n,
            constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1.0, "jac": lambda q: np.ones(n)}],
            options={"ftol": 1e-14, "maxiter": 1000},
        )
    return np.asarray(result.x, dtype=np.float64)


def one_step_speed(p, grads, direction, *, lr: float, momentum: float = 0.0, velocity=None) -> float:
    r"""The convergence speed :math:`S(p)` of one importance-sampled step, by enumerating the :math:`N` draws.

    With :math:`d=\theta_t-\theta^*` (``direction``), :math:`G_i=\nabla\ell_i/(Np_i)` (row ``i`` of ``grads`` is
    :math:`\nabla\ell_i`) and the step :math:`\theta_{t+1}=\theta_t-\eta v_i`, :math:`v_i=\mu v_{t-1}+G_i`
    (App. C; :math:`\mu=0` is plain SGD, App. A):

    .. math::
        S(p)=-\sum_ip_i\big(\|d-\eta v_i\|^2-\|d\|^2\big)=\sum_ip_i\big(2\eta\,d^Tv_i-\eta^2\|v_i\|^2\big).

    For :math:`\mu=0` this equals :math:`2\eta\,d^T\nabla L-\eta^2H(p)/N^2` for every ``direction``; with
    momentum the difference from SGD's value does not depend on :math:`p` (App. C).

    Args:
        p: the sampling probabilities, all positive (1-D, length N).
        grads: the per-example gradients, an (N, P) tensor or array.
        direction: :math:`\theta_t-\theta^*` (P numbers).
        lr: the learning rate :math:`\eta>0`.
        momentum: :math:`\mu\in[0,1)`.
        velocity: :math:`v_{t-1}` (P numbers); required when ``momentum > 0``.
    """
    G = _matrix(grads)
    n, size = G.shape
    q = torch.from_numpy(_probabilities(p, n, positive=True))
    d = _direction(direction, size, "direction")
    lr = check_number(lr, "lr", low=0.0, low_open=True)
    momentum = check_number(momentum, "momentum", low=0.0, high=1.0, high_open=True)
    if momentum > 0 and velocity is None:
        raise ValueError("momentum > 0 needs the past velocity v_{t-1} (velocity=...)")
    v = _direction(velocity, size, "velocity") if velocity is not None else torch.zeros(size, dtype=torch.float64)
    w = 1.0 / (n * q)
    # v_i = μ v + w_i ∇ℓ_i, so dᵀv_i and ‖v_i‖² come from three matrix-vector products
    d_dot = momentum * float(d @ v) + w * (G @ d)
    sq = momentum**2 * float(v @ v) + 2 * momentum * w * (G @ v) + w**2 * torch.linalg.vector_norm(G, dim=1) ** 2
    return float((q * (2 * lr * d_dot - lr**2 * sq)).sum())


# ------------------------------------------------------------------------------------------- the theorem
@dataclass(frozen=True)
class TheoremTrials:
    r"""Random trials of the theorem of §3.1 (App. B): every :math:`p` between :math:`u` and :math:`p^{GN}`
    has :math:`H(p^{GN})\le H(p)\le H(u)`.

    Attributes:
        trials: the draws made; in_box: those whose :math:`p` stayed between :math:`u` and :math:`p^{GN}`
            after normalisation (the theorem's hypothesis; the others are discarded).
        step_failures: trials where App. B's step
            :math:`\sum_ia_ic_i\le\max_jc_j\sum_ia_i` is false (:math:`a_i=(1/p^{GN}_i-1/u_i)g_i^2`,
            :math:`c_i=(1-t_i)p^{GN}_i/p_i`).
        theorem_failures: trials where the theorem's conclusion is false.
        example: the first trial where the step fails: ``g``, ``p``, ``lhs`` (:math:`\sum_ia_ic_i=H(p)-H(u)`),
            ``bound`` (:math:`\max_jc_j\sum_ia_i`), ``h_u``, ``h_p``, ``h_gn``; ``None`` when it never failed.
    """

    trials: int
    in_box: int
    step_failures: int
    theorem_failures: int
    example: dict | None


def between_theorem_trials(trials: int, *, seed: int = 0, max_items: int = 7) -> TheoremTrials:
    """Draw ``trials`` random cases — N from 2 to ``max_items``, :math:`g_i` the square of an exponential draw,
    :math:`p_i=t_iu_i+(1-t_i)p^{GN}_i` with uniform :math:`t_i`, renormalised — and count how often the step of
    App. B's proof and the theorem itself fail (:class:`TheoremTrials`)."""
    trials = check_int(trials, "trials", low=1)
    seed = check_int(seed, "seed", low=0)
    max_items = check_int(max_items, "max_items", low=2)
    rng = np.random.default_rng(seed)
    in_box = step_failures = theorem_failures = 0
    example = None
    for _ in range(trials):
        n = int(rng.integers(2, max_items + 1))
        g = rng.exponential(size=n) ** 2
        u, gn = np.full(n, 1.0 / n), g / g.sum()
        t = rng.random(n)
        p = t * u + (1 - t) * gn
        p = p / p.sum()
        if np.any(p < np.minimum(u, gn) - 1e-15) or np.any(p > np.maximum(u, gn) + 1e-15):
            continue
        in_box += 1
        h_u, h_p, h_gn = (float(np.sum(g**2 / q)) for q in (u, p, gn))
        apart = np.abs(u - gn) > 1e-15
        t_eff = np.where(apart, (p - gn) / np.where(apart, u - gn, 1.0), 1.0)  # p_i = t_i u_i + (1 − t_i) p^GN_i
        a, c = (1 / gn - 1 / u) * g**2, (1 - t_eff) * gn / p
        lhs, bound = float(np.sum(a * c)), float(c.max() * a.sum())
        if lhs > bound + 1e-9 * h_u:
            step_failures += 1
            if example is None:
                example = {"g": g, "p": p, "lhs": lhs, "bound": bound, "h_u": h_u, "h_p": h_p, "h_gn": h_gn}
        theorem_failures += not (h_gn * (1 - 1e-12) <= h_p <= h_u * (1 + 1e-12))
    return TheoremTrials(trials, in_box, step_failures, theorem_failures, example)


# ------------------------------------------------------------------------------- a network's gradients
@dataclass(frozen=True)
class GradientSnapshot:
    r"""The per-sample gradients of a model at one point :math:`\theta_t`, in float64 on the CPU.

    Attributes:
        model: the float64 CPU copy of the model they were taken on (eval mode).
        x, y: the examples (float64 inputs) and their targets.
        grads: an (N, P) tensor, row :math:`i` the gradient :math:`\nabla_\theta\ell_i` over every trainable
            parameter.
        gram: the Gram matrix :math:`K_{ij}=\nabla\ell_i^T\nabla\ell_j` (N × N, numpy).
        norms: :math:`g_i=\|\nabla\ell_i\|=\sqrt{K_{ii}}` (numpy).
        full_grad: :math:`\nabla L=\frac1N\sum_i\nabla\ell_i`, by autograd on the mean loss (P).
    """

    model: nn.Module
    x: Tensor
    y: Tensor
    grads: Tensor
    gram: np.ndarray
    norms: np.ndarray
    full_grad: Tensor

    @property
    def n(self) -> int:
        """The number of examples N."""
        return int(self.grads.shape[0])


def _cross_entropy(logits: Tensor, y: Tensor) -> Tensor:
    return F.cross_entropy(logits, y, reduction="none")


def gradient_snapshot(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
    chunk_size: int | None = 25,
) -> GradientSnapshot:
    """The per-sample gradients of ``model`` on ``(x, y)`` (:func:`dro_lab.per_sample_grad_norms` with
    ``return_grads=True``), on a float64 CPU copy of the model in eval mode; ``model`` itself is left untouched.

    Args:
        model: the network, at the parameters to look at.
        x, y: the examples; all N at once (the Gram matrix is N × N, the gradients N × P floats).
        loss_fn: per-sample loss ``(logits, y) -> (N,)``; default cross-entropy.
        chunk_size: examples per ``torch.func`` chunk (memory), ``None`` for all at once.
    """
    check_module(model)
    if not isinstance(x, Tensor) or not isinstance(y, Tensor):
        raise TypeError(f"x and y must be tensors, got {type(x).__name__} and {type(y).__name__}")
    if x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"x and y must hold the same number (≥ 1) of examples, got {x.shape[0]} and {y.shape[0]}")
    loss_fn = _cross_entropy if loss_fn is None else loss_fn
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    net = copy.deepcopy(model).to(device="cpu", dtype=torch.float64).eval()
    xd, yd = x.detach().to("cpu", torch.float64), y.detach().to("cpu")
    _, per_sample = per_sample_grad_norms(net, loss_fn, xd, yd, return_grads=True, chunk_size=chunk_size)
    named = dict(net.named_parameters())
    names = list(per_sample)  # the trainable parameters, in the order of G's columns
    G = torch.cat([per_sample.pop(name).reshape(len(xd), -1) for name in names], 1)
    full = torch.autograd.grad(loss_fn(net(xd), yd).mean(), [named[name] for name in names])
    full_grad = torch.cat([t.reshape(-1) for t in full])
    gram = (G @ G.T).numpy()
    return GradientSnapshot(net, xd, yd, G, gram, np.sqrt(np.clip(np.diag(gram), 0.0, None)), full_grad)


# -------------------------------------------------------------------------- the optimizers' first step
_OPTIMIZERS = {
    "SGD": lambda params, lr, eps: torch.optim.SGD(params, lr=lr),
    "Adam": lambda params, lr, eps: torch.optim.Adam(params, lr=lr, eps=eps),
    "RMSProp": lambda params, lr, eps: torch.optim.RMSprop(params, lr=lr, eps=eps),
}


def first_step(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    weights,
    *,
    optimizer: str = "Adam",
    lr: float = 0.01,
    eps: float = 1e-8,
    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
) -> Tensor:
    r"""The parameter change of the first step of a fresh PyTorch ``optimizer`` (``"SGD"``, ``"Adam"``,
    ``"RMSProp"``, defaults but ``lr`` and ``eps``) on the weighted mean loss :math:`\frac1B\sum_bw_b\ell_b`, taken
    on a copy of ``model`` (left untouched)."""
    check_module(model)
    if optimizer not in _OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {sorted(_OPTIMIZERS)}, got {optimizer!r}")
    lr = check_number(lr, "lr", low=0.0, low_open=True)
    eps = check_number(eps, "eps", low=0.0)
    net = copy.deepcopy(model)
    params = [p for p in net.parameters() if p.requires_grad]
    dtype = params[0].dtype
    w = torch.as_tensor(np.asarray(to_numpy(weights), dtype=np.float64), dtype=dtype).reshape(-1)
    if w.numel() != len(x):
        raise ValueError(f"weights must hold one weight per example ({len(x)}), got {w.numel()}")
    opt = _OPTIMIZERS[optimizer](params, lr, eps)
    before = torch.cat([p.detach().reshape(-1).clone() for p in params])
    loss = (w * (_cross_entropy if loss_fn is None else loss_fn)(net(x), y)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return torch.cat([p.detach().reshape(-1) for p in params]) - before


@dataclass(frozen=True)
class WeightCancellation:
    """What an importance weight does to the first step of each optimizer (:func:`weight_cancellation`).

    ``rows``: one dict per optimizer × case, with ``optimizer``, ``batch`` (its size), ``weights`` (text),
    ``common`` (one weight for the whole batch) and ``change`` (the relative change of the step at each ε of
    ``eps``: :math:`\\|\\Delta_w-\\Delta_1\\|/\\|\\Delta_1\\|`).
    """

    rows: list
    eps: tuple

    def change(self, optimizer: str, batch: int, common: bool, eps_index: int = -1) -> float:
        """The relative change of one row (the last ε by default)."""
        for row in self.rows:
            if (row["optimizer"], row["batch"], row["common"]) == (optimizer, batch, common):
                return row["change"][eps_index]
        raise KeyError((optimizer, batch, common))

    def markdown(self) -> str:
        head = " | ".join(f"rel. change, ε = {e:g}" for e in self.eps)
        lines = [f"| first step of | batch | weights | {head} |", "|---|---|---|" + "---|" * len(self.eps)]
        for row in self.rows:
            changes = " | ".join(f"{c:.2e}" for c in row["change"])
            lines.append(f"| {row['optimizer']} | {row['batch']} | {row['weights']} | {changes} |")
        return "\n".join(lines)


def weight_cancellation(
    snapshot: GradientSnapshot,
    *,
    lr: float = 0.01,
    common_weight: float = 37.0,
    batch_size: int = 5,
    eps: Sequence[float] = (1e-8, 1e-30),
    seed: int = 0,
) -> WeightCancellation:
    r"""The first step of SGD, Adam and RMSProp on ``snapshot``'s network with weights against without (§3.2,
    App. D–E): on the example of largest gradient norm with the weight ``common_weight``; on ``batch_size``
    random examples with that weight for all; and on the same batch with the weights :math:`1/(Np^{GN}_i)`.

    Adam's first step (bias-corrected, batch 1) is :math:`\eta\,G/(|G|+\epsilon)`, RMSProp's
    :math:`\eta\,G/(\sqrt{1-\alpha}|G|+\epsilon)`: a weight common to the batch cancels as ε → 0, weights that differ
    within the batch do not. SGD's step scales with the weight.
    """
    if not isinstance(snapshot, GradientSnapshot):
        raise TypeError(f"snapshot must be a GradientSnapshot, got {type(snapshot).__name__}")
    common_weight = check_number(common_weight, "common_weight", low=0.0, low_open=True)
    batch_size = check_int(batch_size, "batch_size", low=1, high=snapshot.n)
    eps = tuple(check_number(e, "eps", low=0.0) for e in eps)
    if not eps:
        raise ValueError("eps is empty: give at least one ε")
    n, g = snapshot.n, snapshot.norms
    batch = [int(i) for i in np.random.default_rng(check_int(seed, "seed", low=0)).choice(n, batch_size, replace=False)]
    w_gn = [float(w) for w in 1.0 / (n * optimal_sampling(g)[batch])]
    cases = (
        ([int(np.argmax(g))], [common_weight], f"common w = {common_weight:g}", True),
        (batch, [common_weight] * batch_size, f"common w = {common_weight:g}", True),
        (batch, w_gn, f"w_i = 1/(N p^GN_i), {min(w_gn):.2g}…{max(w_gn):.2g}", False),
    )
    rows = []
    for name in _OPTIMIZERS:
        for idx, weights, text, common in cases:
            x, y = snapshot.x[idx], snapshot.y[idx]
            change = []
            for e in eps:
                base = first_step(snapshot.model, x, y, [1.0] * len(idx), optimizer=name, lr=lr, eps=e)
                step = first_step(snapshot.model, x, y, weights, optimizer=name, lr=lr, eps=e)
                change.append(float((step - base).norm() / base.norm()))
            rows.append({"optimizer": name, "batch": len(idx), "weights": text, "common": common, "change": change})
    return WeightCancellation(rows, eps)
