"""How good a sampling distribution is: Lahire's Algorithm 1 (KL and TV to p^GN) and the exact score ρ."""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..utils import to_numpy

__all__ = ["SamplingQuality", "sampling_quality", "is_estimator_stats"]


@dataclass(frozen=True)
class SamplingQuality:
    r"""Algorithm 1 of Lahire (2023) on M evaluated items, plus the exact score ρ.

    All distributions are over the M items: ``p̃ = p / Σp``, ``p̃GN = g / Σg``, ``ũ = 1/M``.
    KL and TV use the paper's order ``D(p̃, p̃GN)``; χ² the order that makes it exact,
    ``χ²(p̃GN ‖ q) = Σ (p̃GN_j − q_j)² / q_j``. ``H(q) = Σ g_j² / q_j`` (raw ``g``).

    Attributes:
        m: Number of items M.
        kl_p: ``KL(p̃ ‖ p̃GN)``; ``inf`` when p̃ puts mass on an item with zero gradient.
        kl_u: ``KL(ũ ‖ p̃GN)``; ``inf`` when some item has a zero gradient.
        tv_p: ``TV(p̃, p̃GN) = ½ Σ|p̃ − p̃GN|`` in [0, 1].
        tv_u: ``TV(ũ, p̃GN)`` in [0, 1 − 1/M].
        kl_rev_p: ``KL(p̃GN ‖ p̃)`` (the other order; ``inf`` when p̃ misses an item with g > 0).
        kl_rev_u: ``KL(p̃GN ‖ ũ)``.
        chi2_p: ``χ²(p̃GN ‖ p̃)`` (``inf`` when p̃ misses an item with g > 0).
        chi2_u: ``χ²(p̃GN ‖ ũ) = M Σ p̃GN² − 1``.
        rho: ``1 − chi2_p / chi2_u = (H(ũ) − H(p̃)) / (H(ũ) − H(p̃GN))``: 1 optimal, 0 as good as
            uniform, < 0 worse than uniform (``-inf`` when p̃ misses an item with g > 0); NaN (with a
            ``RuntimeWarning``) when p̃GN = ũ (all norms equal).
        h_p: ``H(p̃)``; h_u: ``H(ũ) = M Σ g²``; h_gn: ``H(p̃GN) = (Σ g)²``.
        p: p̃ (float64 tensor, CPU); p_gn: p̃GN (float64 tensor, CPU).
    """

    m: int
    kl_p: float
    kl_u: float
    tv_p: float
    tv_u: float
    kl_rev_p: float
    kl_rev_u: float
    chi2_p: float
    chi2_u: float
    rho: float
    h_p: float
    h_u: float
    h_gn: float
    p: Tensor
    p_gn: Tensor

    def as_dict(self) -> dict[str, Any]:
        """The scalar fields as a dict of floats (for logging / a DataFrame row)."""
        d = asdict(self)
        d.pop("p"), d.pop("p_gn")
        return d


def _as_nonneg_vector(v: Any, name: str) -> Tensor:
    if isinstance(v, Tensor):
        t = v.detach()
    else:
        try:
            # Python lists are read as float64 (not torch's float32 default); numpy keeps its dtype
            t = torch.as_tensor(v, dtype=torch.float64 if isinstance(v, (list, tuple)) else None)
        except Exception as exc:
            raise TypeError(f"{name} must be a 1-D tensor or array of numbers, got {type(v).__name__}") from exc
    if t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must hold real numbers, got dtype {t.dtype}")
    t = t.to(device="cpu", dtype=torch.float64)
    if t.dim() != 1:
        raise ValueError(f"{name} must be a 1-D vector, got shape {tuple(t.shape)}")
    if t.numel() == 0:
        raise ValueError(f"{name} is empty: need at least one item")
    if not bool(torch.isfinite(t).all()):
        where = torch.nonzero(~torch.isfinite(t)).flatten()[:5].tolist()
        raise ValueError(f"{name} contains NaN or inf values (first at indices {where}); it must be finite")
    if bool((t < 0).any()):
        where = torch.nonzero(t < 0).flatten()[:5].tolist()
        raise ValueError(f"{name} must be non-negative, got negative entries (first at indices {where})")
    return t


def _kl(a: Tensor, b: Tensor) -> float:
    """Σ a log(a/b) with 0 log 0 = 0 and a log(a/0) = inf (scipy.special.rel_entr semantics)."""
    pos = a > 0
    if bool((pos & (b == 0)).any()):
        return math.inf
    return float((a[pos] * (a[pos].log() - b[pos].log())).sum().clamp_min(0.0))


def _chi2(q: Tensor, p: Tensor) -> float:
    """χ²(q ‖ p) = Σ (q − p)² / p, with 0/0 = 0 and (q>0)/0 = inf."""
    zero = p == 0
    if bool((zero & (q > 0)).any()):
        return math.inf
    nz = ~zero
    return float(((q[nz] - p[nz]).pow(2) / p[nz]).sum())


def _h(g: Tensor, q: Tensor) -> float:
    zero = q == 0
    if bool((zero & (g > 0)).any()):
        return math.inf
    nz = ~zero
    return float((g[nz].pow(2) / q[nz]).sum())


def sampling_quality(p: Any, grad_norms: Any) -> SamplingQuality:
    r"""How good is a sampling scheme ``p`` on M evaluated items? (Lahire 2023, Algorithm 1 + ρ.)

    One step of Algorithm 1: the paper's KL / TV distances of ``p̃`` and of uniform to ``p̃GN`` (both
    renormalised over the M items) and the exact score

    .. math::
        \rho = \frac{H(\tilde u) - H(\tilde p)}{H(\tilde u) - H(\tilde p^{GN})}
             = 1 - \frac{\chi^2(\tilde p^{GN}\|\tilde p)}{\chi^2(\tilde p^{GN}\|\tilde u)},
        \qquad H(q) = \sum_j g_j^2 / q_j,

    the fraction of the best possible SGD variance-term reduction that ``p`` achieves (1 optimal,
    0 as uniform, negative worse; TV and KL closeness do not imply ρ > 0). Float64 on the CPU.

    Args:
        p: the scheme's non-negative probabilities or scores of the M items, not all zero (1-D).
        grad_norms: their exact per-sample gradient norms (:func:`per_sample_grad_norms`), not all zero.

    Returns:
        A :class:`SamplingQuality` (``.as_dict()`` for the scalars).

    Raises:
        TypeError: Non-numeric inputs.
        ValueError: Not 1-D, empty, different lengths, NaN/inf/negative entries, all-zero ``p`` or
            all-zero ``grad_norms``.
    """
    pt = _as_nonneg_vector(p, "p")
    g = _as_nonneg_vector(grad_norms, "grad_norms")
    if pt.numel() != g.numel():
        raise ValueError(
            f"p and grad_norms must have the same length (one entry per evaluated item), "
            f"got {pt.numel()} and {g.numel()}"
        )
    if float(pt.sum()) == 0.0:
        raise ValueError("p is all zeros: it must put positive mass on at least one item")
    if float(g.sum()) == 0.0:
        raise ValueError("grad_norms are all zero: p^GN = g / Σg is undefined (every item is fitted)")
    m = pt.numel()
    # Scale first (g may be tiny or huge), then normalise.
    pt = pt / pt.max()
    pt = pt / pt.sum()
    g_scaled = g / g.max()
    pgn = g_scaled / g_scaled.sum()
    u = torch.full((m,), 1.0 / m, dtype=torch.float64)

    chi2_p = _chi2(pgn, pt)
    chi2_u = _chi2(pgn, u)
    if chi2_u <= 1e-13 * max(1.0, chi2_p if math.isfinite(chi2_p) else 1.0):
        warnings.warn(
            "sampling_quality: all gradient norms are equal (p^GN = uniform), so rho is undefined (NaN)",
            RuntimeWarning,
            stacklevel=2,
        )
        rho = math.nan
    else:
        rho = 1.0 - chi2_p / chi2_u
    return SamplingQuality(
        m=m,
        kl_p=_kl(pt, pgn),
        kl_u=_kl(u, pgn),
        tv_p=float(0.5 * (pt - pgn).abs().sum()),
        tv_u=float(0.5 * (u - pgn).abs().sum()),
        kl_rev_p=_kl(pgn, pt),
        kl_rev_u=_kl(pgn, u),
        chi2_p=chi2_p,
        chi2_u=chi2_u,
        rho=rho,
        h_p=_h(g, pt),
        h_u=_h(g, u),
        h_gn=float(g.sum() ** 2),
        p=pt,
        p_gn=pgn,
    )


def is_estimator_stats(gram, p, *, weight_exponent: float = 1.0, batch_size: int = 1) -> dict[str, float]:
    r"""Exact moments of the importance-sampled gradient estimate, from the Gram matrix of per-sample gradients.

    With :math:`K_{ij}=\nabla\ell_i^T\nabla\ell_j` (``gram``, N × N), draws :math:`i_1..i_B` i.i.d. from ``p``
    and weights :math:`w_i=(1/(Np_i))^{e}` (``e = weight_exponent``; 1 is unbiased), the estimate
    :math:`\hat G=\frac1B\sum_b w_{i_b}\nabla\ell_{i_b}` of :math:`\nabla L=\frac1N\sum_i\nabla\ell_i` has

    * ``second_moment`` :math:`\mathbb E_p\|w_i\nabla\ell_i\|^2=\sum_ip_iw_i^2K_{ii}` (one draw; = H(p)/N² at e = 1),
    * ``variance`` :math:`\mathrm{tr\,Var}[\hat G]=(\text{second\_moment}-\|\mathbb E\hat G\|^2)/B`,
    * ``bias_sq`` :math:`\|\mathbb E\hat G-\nabla L\|^2` (0 at e = 1), ``mse`` = variance + bias_sq,
    * ``full_grad_sq`` :math:`\|\nabla L\|^2`.

    Computed in float64 by exact enumeration over the N items (no sampling).
    """
    K = np.asarray(to_numpy(gram), dtype=np.float64)
    p = np.asarray(to_numpy(p), dtype=np.float64).reshape(-1)
    n = p.size
    if K.shape != (n, n):
        raise ValueError(f"gram must be (N, N) with N = len(p) = {n}, got shape {K.shape}")
    if np.any(p <= 0) or abs(p.sum() - 1) > 1e-6:
        raise ValueError("p must be a probability vector with every p_i > 0")
    if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer ≥ 1, got {batch_size!r}")
    e = float(weight_exponent)
    w = (1.0 / (n * p)) ** e
    a = p * w  # E Ĝ = Σ a_i ∇ℓ_i
    second = float(np.sum(p * w**2 * np.diag(K)))
    mean_sq = float(a @ K @ a)
    d = a - 1.0 / n
    bias_sq = max(float(d @ K @ d), 0.0)
    var = max(second - mean_sq, 0.0) / batch_size
    u = np.full(n, 1.0 / n)
    return {
        "second_moment": second,
        "variance": var,
        "bias_sq": bias_sq,
        "mse": var + bias_sq,
        "full_grad_sq": float(u @ K @ u),
    }
