r"""Distributionally robust objectives on a vector of per-sample losses.

Pure functions: a loss vector ``ℓ`` (shape ``(n,)``; per-sample or per-group losses) in, weights or a
scalar out. The worst case over the simplex :math:`\Delta_n` around a prior ``p`` (uniform by default):

* penalised (``beta``):   :math:`\max_q \langle q,\ell\rangle - \tfrac1\beta D_\phi(q\|p)`
* constrained (``radius``): :math:`\max_q \langle q,\ell\rangle` s.t. :math:`D_\phi(q\|p)\le r`
* CVaR (``alpha``):       :math:`\max_q \langle q,\ell\rangle` s.t. :math:`q_i \le p_i/\alpha`

with :math:`D_\phi(q\|p)=\sum_i p_i\,\phi(q_i/p_i)`, :math:`\phi(z)=z\log z` (``"kl"``) or
:math:`(z-1)^2` (``"chi2"``).

Internal arithmetic runs in float64 (where the device has it) on the losses' device; results come back
in the losses' dtype. Large ``beta`` never overflows (exponents of ``ℓ - max ℓ``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from ._validation import check_number
from .utils import work_dtype

__all__ = [
    "DIVERGENCES",
    "kl_penalised_weights",
    "chi2_penalised_weights",
    "worst_case_weights",
    "radius_to_beta",
    "divergence_value",
    "robust_loss",
    "RobustLoss",
]

#: The ``divergence`` values of :func:`worst_case_weights` and :func:`robust_loss`: KL, χ² and CVaR.
DIVERGENCES = ("kl", "chi2", "cvar")

# Bisection on log(beta): stop when the bracket is this tight (relative), or after this many steps.
_BISECT_RTOL = 1e-13
_BISECT_MAX_STEPS = 200
# The χ² ball's threshold iteration (_chi2_ball): steps before it gives way to the sort-based solve. Every
# step is a few O(n) passes; a few to ~20 steps are typical (more for radii far beyond 1).
_BALL_MAX_STEPS = 60


class _Problem(NamedTuple):
    losses: Tensor  # work dtype, 1-D
    prior: Tensor  # work dtype, 1-D, sums to 1
    divergence: str
    beta: float | None
    radius: float | None
    alpha: float | None
    uniform: bool  # prior is None: fast paths that skip log p and the weighted sort


# --------------------------------------------------------------------------- validation


def _as_loss_vector(losses, name: str = "losses") -> Tensor:
    integer_dtype = torch.get_default_dtype()
    if not isinstance(losses, Tensor):
        try:  # numpy arrays keep their float dtype; Python lists are read as float64
            losses = torch.as_tensor(losses, dtype=torch.float64 if isinstance(losses, (list, tuple)) else None)
        except Exception as exc:
            raise TypeError(f"{name} must be a 1-D tensor or array of floats, got {type(losses).__name__}") from exc
        integer_dtype = torch.float64
    if losses.is_complex() or losses.dtype == torch.bool:
        raise TypeError(f"{name} must hold real numbers, got dtype {losses.dtype}")
    if not losses.is_floating_point():
        losses = losses.to(integer_dtype)
    if losses.dim() != 1:
        raise ValueError(f"{name} must be a 1-D vector, got shape {tuple(losses.shape)}")
    if losses.numel() == 0:
        raise ValueError(f"{name} is empty: need at least one entry")
    # One pass: the sum is finite iff every entry is, unless finite entries overflow it (the exact check decides).
    if not bool(torch.isfinite(losses.detach().sum())):
        bad = ~torch.isfinite(losses.detach())
        if bool(bad.any()):
            where = torch.nonzero(bad).flatten()[:5].tolist()
            raise ValueError(f"{name} contains NaN or inf values (first at indices {where}); {name} must be finite")
    return losses


def _prepare(losses, divergence, beta, radius, alpha, prior, *, weights_only: bool = False) -> tuple[Tensor, _Problem]:
    losses = _as_loss_vector(losses)
    if not isinstance(divergence, str) or divergence.lower() not in DIVERGENCES:
        raise ValueError(f"divergence must be one of {DIVERGENCES}, got {divergence!r}")
    divergence = divergence.lower()
    given = {k: v for k, v in (("beta", beta), ("radius", radius), ("alpha", alpha)) if v is not None}
    if divergence == "cvar":
        if set(given) != {"alpha"}:
            raise ValueError(
                f"divergence='cvar' takes exactly alpha (the CVaR level in (0, 1]); got {sorted(given) or 'none'}"
            )
        alpha = check_number(alpha, "alpha", low=0.0, low_open=True, high=1.0)
    else:
        if len(given) != 1 or "alpha" in given:
            raise ValueError(
                f"divergence={divergence!r} takes exactly one of beta (penalised) or radius (constrained); "
                f"got {sorted(given) or 'none'}"
            )
        if beta is not None:
            beta = check_number(beta, "beta", low=0.0, allow_inf=True)
        else:
            radius = check_number(radius, "radius", low=0.0, allow_inf=True)

    dtype = work_dtype(losses.device)
    if (
        weights_only
        and divergence == "kl"
        and beta is not None
        and losses.dtype == torch.float32
        and beta < torch.finfo(torch.float32).max
    ):
        # The KL weights are one stable softmax (subtract the max, then scale): float32 is exact
        # enough for float32 outputs, and skipping the float64 copy halves its cost at large n. Not
        # for the robust loss's value, (1/β)·log-mean-exp, which cancels catastrophically at small β.
        dtype = torch.float32
    work = losses.detach().to(dtype)
    n = work.numel()
    if prior is None:
        p = torch.full((n,), 1.0 / n, dtype=dtype, device=work.device)
    else:
        p = prior if isinstance(prior, Tensor) else _as_loss_vector(prior, "prior").to(losses.device)
        if p.dim() != 1 or p.numel() != n:
            raise ValueError(
                f"prior must be a 1-D vector of length {n} (one weight per loss), got shape {tuple(p.shape)}"
            )
        if p.device != losses.device:
            raise ValueError(f"prior is on {p.device} but losses are on {losses.device}; put them on one device")
        p = p.detach().to(dtype)
        if not bool(torch.isfinite(p).all()) or bool((p < 0).any()):
            raise ValueError("prior must be finite and non-negative (a probability vector)")
        total = float(p.sum())
        if abs(total - 1.0) > 1e-4:
            raise ValueError(f"prior must sum to 1 (a probability vector), got sum {total:.6g}")
        p = p / p.sum()
    return losses, _Problem(work, p, divergence, beta, radius, alpha, prior is None)


# --------------------------------------------------------------------------- the maximisers


def _argmax_limit(losses: Tensor, prior: Tensor) -> Tensor:
    """β → ∞ (or a large radius): the prior restricted to the arg-max set (on its support), renormalised."""
    support = prior > 0
    q = torch.where(support & (losses == _support_max(losses, prior)), prior, torch.zeros_like(prior))
    return q / q.sum()


def kl_penalised_weights(losses: Tensor, prior: Tensor, beta: float, uniform: bool = False) -> Tensor:
    """q ∝ p·exp(βℓ): a softmax of β(ℓ − max ℓ) + log p (subtract first, then scale: no overflow)."""
    if beta == 0.0:
        return prior.clone()
    if math.isinf(beta):
        return _argmax_limit(losses, prior)
    if uniform:  # log p is a constant: one pass fewer over n
        return torch.softmax(beta * (losses - losses.max()), dim=0)
    return torch.softmax(_tilt_logits(losses, prior, beta), dim=0)


def chi2_penalised_weights(losses: Tensor, prior: Tensor, beta: float, uniform: bool = False) -> Tensor:
    """q_i = p_i·(1 + (β/2)(ℓ_i − λ))₊ with λ the root of Σ_i q_i(λ) = 1, without sorting.

    Write q_i = p_i·(β/2)·(s_i − c)₊ with s = ℓ − max ℓ and c = λ − 2/β. On an active set A the
    normalisation is linear, c = (Σ_A p s − 2/β) / Σ_A p. Start from A = the whole support (the
    unclipped solution, the paper's eq. (21)), drop the entries with s_i ≤ c, recompute c, repeat:
    c only grows and A only shrinks, so this Michelot iteration ends in a few O(n) passes at the
    exact root (it is Newton's method on the piecewise-linear normalisation equation).
    """
    if beta == 0.0:
        return prior.clone()
    if math.isinf(beta):
        return _argmax_limit(losses, prior)
    inv_half = 2.0 / beta
    if math.isinf(inv_half):  # β below 2/float max (subnormal): q = p to every digit
        return prior.clone()
    support = prior > 0
    # Shifting by the max keeps s − c well conditioned at huge β (c → 0 from below, never past it).
    s = torch.where(support, losses - _support_max(losses, prior), torch.full_like(losses, -math.inf))
    n = losses.numel()
    ps = None if uniform else prior * torch.where(support, s, torch.zeros_like(s))
    active, count = support, int(support.sum())
    for _ in range(n + 1):
        if uniform:  # counts instead of p-weighted sums: one pass fewer
            mass, total = count / n, float(torch.where(active, s, torch.zeros_like(s)).sum()) / n
        else:
            mass = float(torch.where(active, prior, torch.zeros_like(prior)).sum())
            total = float(torch.where(active, ps, torch.zeros_like(ps)).sum())
        c = (total - inv_half) / mass
        active = s > c  # off the support s = −∞: never active
        new_count = int(active.sum())
        if new_count == count:  # the active set only shrinks, so an equal count is the same set
            break
        count = new_count
    q = prior * (s - c).clamp_min(0.0)
    total_q = q.sum()
    if not bool(total_q > 0):  # c rounded onto the max (β beyond float range): the β → ∞ limit
        return _argmax_limit(losses, prior)
    return q / total_q


def _support_max(losses: Tensor, prior: Tensor) -> Tensor:
    # Entries with p_i = 0 get q_i = 0 whatever their loss: they must not set the shift either, or a
    # huge loss there would cancel away the precision of the others.
    return losses.masked_fill(prior <= 0, -math.inf).max()


def _tilt_logits(losses: Tensor, prior: Tensor, beta: float) -> Tensor:
    """β(ℓ − max ℓ) + log p on the support, −∞ off it: subtract first, then scale (no overflow)."""
    logits = beta * (losses - _support_max(losses, prior)) + torch.log(prior)
    return torch.where(prior > 0, logits, torch.full_like(logits, -math.inf))


class _Chi2Sorted:
    """χ² maximisers for one loss vector, sorted once so each further β costs O(log n).

    Stationarity gives q_i = p_i·(1 + (β/2)(ℓ_i − λ))₊ with λ the root of Σ_i q_i = 1 (the
    multiplier a bisection on λ would find). With the losses sorted in decreasing order the active
    set {i : q_i > 0} is a prefix; on the prefix of length k+1,
    λ_k = (Σ_{j≤k} p_j ℓ_j − (2/β)(1 − Σ_{j≤k} p_j)) / Σ_{j≤k} p_j, and k is the largest index with
    1 + (β/2)(ℓ_k − λ_k) > 0 (a monotone condition, so a binary search finds it). For a uniform prior
    this is the sort-based Euclidean projection of 1/n + (β/2n)ℓ onto the simplex.
    """

    def __init__(self, losses: Tensor, prior: Tensor):
        support = prior > 0
        self.prior = prior
        # Shift for conditioning: q depends only on ℓ − const.
        self.losses = losses - _support_max(losses, prior)
        order = torch.argsort(self.losses.masked_fill(~support, -math.inf), descending=True, stable=True)
        self.m = int(support.sum())  # the support comes first in this order
        l_sorted = self.losses[order][: self.m]
        p_sorted = prior[order][: self.m]
        # Prefix sums on the host, once: every β after that is a binary search over them.
        self.l = l_sorted.cpu().numpy()
        self.cum_p = torch.cumsum(p_sorted, 0).cpu().numpy()
        self.cum_pl = torch.cumsum(p_sorted * l_sorted, 0).cpu().numpy()
        self.cum_pll = torch.cumsum(p_sorted * l_sorted * l_sorted, 0).cpu().numpy()

    def _lam(self, k: int, half: float) -> float:
        return (self.cum_pl[k] - (1.0 - self.cum_p[k]) / half) / self.cum_p[k]

    def _active(self, half: float) -> tuple[int, float]:
        """Last active position k (in sorted order) and the multiplier λ_k."""
        lo, hi = 0, self.m - 1  # position 0 is always active: 1 + half(ℓ_0 − λ_0) = 1/p_0 > 0
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if 1.0 + half * (self.l[mid] - self._lam(mid, half)) > 0:
                lo = mid
            else:
                hi = mid - 1
        return lo, self._lam(lo, half)

    def divergence(self, beta: float) -> float:
        """χ²(q_β‖p) from the prefix sums: (β/2)² Σ_active p(ℓ − λ)² + (mass of the clipped entries)."""
        half = beta / 2.0
        k, lam = self._active(half)
        p_k = self.cum_p[k]
        spread = self.cum_pll[k] - 2.0 * lam * self.cum_pl[k] + lam * lam * p_k
        return float(half * half * max(spread, 0.0) + max(1.0 - p_k, 0.0))

    def weights(self, beta: float) -> Tensor:
        if beta == 0.0:
            return self.prior.clone()
        if math.isinf(beta):
            return _argmax_limit(self.losses, self.prior)
        half = beta / 2.0
        _, lam = self._active(half)
        q = self.prior * (1.0 + half * (self.losses - lam)).clamp_min(0.0)
        total = q.sum()
        if not bool(total > 0):  # λ rounded past the max at extreme β: the β → ∞ limit
            return _argmax_limit(self.losses, self.prior)
        return q / total


def _chi2_ball(losses: Tensor, prior: Tensor, radius: float, uniform: bool) -> tuple[Tensor, float] | None:
    r"""The χ² ball's maximiser without sorting: (q, its penalty β), or ``None`` to fall back on the sort.

    The maximiser is q_i ∝ p_i(ℓ_i − η)₊ for a threshold η, and D_χ²(q‖p) = S₂/S₁² − 1 with
    S_j = Σ_i p_i(ℓ_i − η)₊^j, non-decreasing in η (its derivative has the sign of P_A·S₂ − S₁² ≥ 0 by
    Cauchy–Schwarz). On an active set A = {ℓ_i > η} with prior mass P, mean μ and variance σ² under p,
    D = r is the quadratic (μ − η)²((1 + r)P − 1) = σ², so η = μ − σ/√((1 + r)P − 1). From A = the
    support, each step solves on the entries above the last η: η only grows and never passes the root
    (as in :func:`chi2_penalised_weights`), so an active set that repeats is the exact one. Raw moments
    of (ℓ − η)₊ drive the steps; the last one (and any whose raw moments cancel) is solved from centred
    moments of ℓ − max ℓ (:func:`_chi2_ball_root`). β = 2/S₁. A radius at or past the arg-max limit's
    χ² = 1/P_max − 1 gives that limit (β = ∞).
    """
    n = losses.numel()
    if uniform:
        s0 = s = losses - losses.amax()  # ≤ 0, 0 at the max
        count_prev, top_mass = n, 1.0 / n  # the arg-max set is counted only if the loop needs it
    else:
        support = prior > 0
        s0 = (losses - _support_max(losses, prior)).masked_fill_(~support, 0.0)  # finite everywhere
        s = s0.masked_fill(~support, -math.inf)  # never active
        count_prev, top_mass = int(support.sum()), float(prior[s == 0].sum())
    if radius >= 1.0 / top_mass - 1.0:  # uniform: ≥ n − 1, past every arg-max limit n/m − 1
        return _argmax_limit(losses, prior), math.inf
    buf, mask = torch.empty_like(s), torch.empty_like(s)  # (ℓ − η)₊ (and q at the end), and A as 0/1
    cancels = 1e10 * torch.finfo(s.dtype).eps  # var/mean² below this: raw moments lose too many digits
    eta = _chi2_ball_root(s0, None, prior, radius, count_prev, 1.0, buf)  # A = the support
    centred = True  # eta came from centred moments
    for _ in range(_BALL_MAX_STEPS):
        x = torch.sub(s, eta, out=buf).clamp_min_(0.0)  # (ℓ − η)₊
        active = torch.sign(x, out=mask)
        count = int(active.sum())  # a float sum of 0s and 1s: exact (faster than count_nonzero)
        px = x if uniform else prior * x
        mass = count / n if uniform else float((prior * active).sum())
        s1 = float(px.sum()) / (n if uniform else 1)
        if count == count_prev and centred:  # eta was solved on this very set: the root
            return px.div_(s1 * n if uniform else s1), 2.0 / s1
        if not (1.0 + radius) * mass > 1.0:  # past the arg-max limit (no root), or rounding overshot it
            if uniform and radius >= n / int((s == 0).sum()) - 1.0:
                return _argmax_limit(losses, prior), math.inf
            return None  # let the sort decide
        centred = count == count_prev  # the set repeats: one more step, from centred moments
        if not centred:
            m1 = s1 / mass  # mean of (ℓ − η) over A under p
            var = (_sum_sq(x) / count if uniform else float((px * x).sum()) / mass) - m1 * m1
            centred = var <= cancels * m1 * m1  # raw moments cancel (near-tied losses): centre them too
            eta += m1 - math.sqrt(max(var, 0.0) / ((1.0 + radius) * mass - 1.0))
        if centred:
            eta = _chi2_ball_root(s0, active, None if uniform else prior, radius, count, mass, buf)
        count_prev = count
    return None


def _chi2_ball_root(
    s0: Tensor, active: Tensor | None, prior: Tensor | None, radius: float, count: int, mass: float, out: Tensor
) -> float:
    """η = μ − σ/√((1 + r)P − 1) from centred moments of ``s0`` (ℓ − max ℓ, 0 off the support) over the
    active set, given as a 0/1 float mask (``None``: the whole support); ``prior`` ``None`` for the uniform
    prior (``count`` entries). ``out`` is scratch space (an n-vector)."""
    if prior is None:
        mu = float(s0.sum() if active is None else torch.mul(s0, active, out=out).sum()) / count
        d = torch.sub(s0, mu, out=out)
        var = _sum_sq(d if active is None else d.mul_(active)) / count
    else:
        w = prior if active is None else prior * active
        mu = float((w * s0).sum()) / mass
        d = s0 - mu
        var = float((w * d * d).sum()) / mass
    return mu - math.sqrt(var / ((1.0 + radius) * mass - 1.0))


def _sum_sq(x: Tensor) -> float:
    # One pass and no temporary (torch's own reduction: BLAS dot threads small vectors on its own).
    return float(torch.linalg.vector_norm(x)) ** 2


def _cvar(losses: Tensor, prior: Tensor, alpha: float, uniform: bool = False) -> Tensor:
    """q_i = p_i/α on the largest losses until the mass reaches 1; ties at the threshold share the rest ∝ p."""
    if alpha >= 1.0:
        return prior.clone()
    if uniform:
        # The threshold is the k-th largest loss, k = ⌈nα⌉: an O(n) selection instead of a sort.
        n = losses.numel()
        k = max(1, min(n, math.ceil(n * alpha - 1e-9)))
        t = torch.kthvalue(losses, n - k + 1).values
        support = torch.ones_like(losses, dtype=torch.bool)
        return _cvar_fill(losses, prior, alpha, t, support)
    support = prior > 0
    masked = losses.masked_fill(~support, -math.inf)
    order = torch.argsort(masked, descending=True, stable=True)
    cap_sorted = prior[order] / alpha
    cum = torch.cumsum(cap_sorted, 0)
    # First position where the capped mass reaches 1: its loss is the threshold t (the α-quantile).
    reach = torch.nonzero(cum >= 1.0 - 1e-12)
    pos = int(reach[0]) if reach.numel() else cum.numel() - 1
    t = masked[order[pos]]
    return _cvar_fill(losses, prior, alpha, t, support)


def _cvar_fill(losses: Tensor, prior: Tensor, alpha: float, t: Tensor, support: Tensor) -> Tensor:
    """Cap p_i/α above the threshold t; the mass left is shared by the losses equal to t, ∝ p."""
    above = support & (losses > t)
    at = support & (losses == t)
    q = torch.where(above, prior / alpha, torch.zeros_like(prior))
    rest = (1.0 - q.sum()).clamp_min(0.0)
    p_at = torch.where(at, prior, torch.zeros_like(prior))
    q = q + rest * p_at / p_at.sum()
    return q / q.sum()


def _divergence(q: Tensor, p: Tensor, divergence: str) -> Tensor:
    support = p > 0
    if divergence == "kl":
        ratio = torch.where(support, q / torch.where(support, p, torch.ones_like(p)), torch.zeros_like(q))
        return torch.where(support, torch.xlogy(q, ratio), torch.zeros_like(q)).sum()
    if divergence == "chi2":
        safe_p = torch.where(support, p, torch.ones_like(p))
        return torch.where(support, (q - p) ** 2 / safe_p, torch.zeros_like(q)).sum()
    raise ValueError(f"divergence must be 'kl' or 'chi2' here, got {divergence!r}")


def _kl_of_tilt(s: Tensor, log_p: Tensor | None, beta: float) -> tuple[float, float]:
    """KL(q_β‖p) for q_β ∝ p·e^{βs}, and its derivative in t = log β.

    ``s`` is ℓ − max ℓ (zero off the support) and ``log_p`` the log prior (``None``: uniform). As
    log q_i − log p_i = βs_i − log Σ_j p_j e^{βs_j}, KL = β⟨q,s⟩ − log Z and d KL/d log β = β² Var_q(s).
    """
    logits = beta * s if log_p is None else beta * s + log_p
    log_z = torch.logsumexp(logits, 0)
    q = torch.exp(logits - log_z)
    if log_p is None:
        log_z = log_z - math.log(s.numel())
    mean = (q * s).sum()
    var = (q * (s - mean) ** 2).sum()
    return float((beta * mean - log_z).clamp_min(0.0)), float(beta * beta * var)


def _solve_beta_for_radius(
    losses: Tensor, prior: Tensor, divergence: str, radius: float, chi2: _Chi2Sorted | None
) -> float:
    """The multiplier β of the penalised problem whose maximiser sits on the boundary D(q‖p) = r.

    D(q_β‖p) is non-decreasing in β (the constraint's KKT multiplier is 1/β), so the root in
    t = log β is bracketed and found by safeguarded Newton steps (KL: the derivative is
    β² Var_q(ℓ), a few O(n) passes) or by bisection (χ²: each step is an O(log n) look-up).
    Returns ``inf`` when the radius reaches the limit distribution (the arg-max set), ``0`` when
    radius = 0, and otherwise the feasible side of the bracket, D(q_β‖p) ≤ r.
    """
    if radius == 0.0:
        return 0.0
    limit = _argmax_limit(losses, prior)
    d_max = float(_divergence(limit, prior, divergence))
    if radius >= d_max:
        return math.inf

    if divergence == "kl":
        support = prior > 0
        shifted = torch.where(support, losses - _support_max(losses, prior), torch.zeros_like(losses))
        log_p = None if bool((prior == prior[0]).all()) else torch.log(prior)

        def d_at(t: float) -> tuple[float, float | None]:
            return _kl_of_tilt(shifted, log_p, math.exp(t))
    else:

        def d_at(t: float) -> tuple[float, float | None]:
            return chi2.divergence(math.exp(t)), None

    support = prior > 0
    spread = float(losses[support].max() - losses[support].min())  # > 0 since radius < d_max
    t = math.log(1.0 / spread)
    lo, hi = -math.inf, math.inf
    for _ in range(_BISECT_MAX_STEPS):
        value, slope = d_at(t)
        if value <= radius:
            lo = t
        else:
            hi = t
        if abs(value - radius) <= _BISECT_RTOL * radius:
            return math.exp(t)  # on the boundary to ~1e-13: feasible up to rounding
        if hi - lo <= _BISECT_RTOL * max(1.0, abs(t)):
            break
        if math.isinf(lo) or math.isinf(hi):
            # Not bracketed yet: a Newton step when it points the right way, at most ×e² per step.
            step = (radius - value) / slope if slope else (2.0 if math.isinf(hi) else -2.0)
            t += max(-2.0, min(2.0, step)) if step else (2.0 if math.isinf(hi) else -2.0)
            if t < -700.0:  # β below 1e-304: the radius is at the resolution of float64
                return math.exp(t)
            continue
        step = (radius - value) / slope if slope else None
        newton = t + step if step is not None else None
        t = newton if newton is not None and lo < newton < hi else 0.5 * (lo + hi)
    return math.exp(lo) if math.isfinite(lo) else math.exp(t)


def _solve(problem: _Problem) -> tuple[Tensor, float | None]:
    """The maximiser q (work dtype) and, for kl/chi2, the effective penalty β (inf = arg-max limit)."""
    losses, prior, div = problem.losses, problem.prior, problem.divergence
    if div == "cvar":
        return _cvar(losses, prior, problem.alpha, problem.uniform), None
    if problem.beta is not None:
        beta = problem.beta
        solver = kl_penalised_weights if div == "kl" else chi2_penalised_weights
        q = solver(losses, prior, beta, problem.uniform)
        return q, beta
    if div == "chi2":  # the ball without sorting, unless its threshold iteration gives up
        if problem.radius == 0.0:
            return prior.clone(), 0.0
        solved = _chi2_ball(losses, prior, problem.radius, problem.uniform)
        if solved is not None:
            return solved
    # Otherwise many β's are tried, so χ² sorts once and answers each β by binary search.
    chi2 = _Chi2Sorted(losses, prior) if div == "chi2" else None
    beta = _solve_beta_for_radius(losses, prior, div, problem.radius, chi2)
    q = kl_penalised_weights(losses, prior, beta, problem.uniform) if div == "kl" else chi2.weights(beta)
    return q, beta


# --------------------------------------------------------------------------- public API


def worst_case_weights(
    losses,
    *,
    divergence: str,
    beta: float | None = None,
    radius: float | None = None,
    alpha: float | None = None,
    prior=None,
) -> Tensor:
    r"""Worst-case (adversarial) weights ``q`` over the simplex for a vector of losses.

    Args:
        losses: per-sample (or per-group) losses ``ℓ``, shape ``(n,)``; finite.
        divergence: ``"kl"``, ``"chi2"`` or ``"cvar"``.
        beta: penalised form, :math:`\max_q \langle q,\ell\rangle - \frac1\beta D_\phi(q\|p)`, ``β ≥ 0``
            (``0`` gives ``p``; ``float('inf')`` the arg-max limit). KL: :math:`q\propto p\,e^{\beta\ell}`.
            χ²: :math:`q_i = p_i(1+\frac\beta2(\ell_i-\lambda))_+` with λ normalising (the paper's
            eq. (21) is the unclipped case and is wrong once weights clip).
        radius: constrained form, :math:`D_\phi(q\|p)\le r`, ``r ≥ 0``; a radius beyond what the
            worst case needs returns the arg-max limit. χ²: :math:`q_i\propto p_i(\ell_i-\eta)_+` with
            the threshold η found by a few O(n) passes, without sorting.
        alpha: CVaR level in ``(0, 1]`` (``divergence="cvar"``): :math:`q_i \le p_i/\alpha`.
        prior: reference distribution ``p`` (non-negative, sums to 1); uniform when ``None``.

    Returns:
        ``q`` with the shape, dtype and device of ``losses`` (detached). Where maximisers tie,
        tied mass is spread in proportion to ``p``.

    Example:
        >>> worst_case_weights(torch.tensor([1.0, 2.0, 3.0]), divergence="kl", beta=1.0)  # softmax(βℓ)
        tensor([0.0900, 0.2447, 0.6652])
    """
    losses, problem = _prepare(losses, divergence, beta, radius, alpha, prior, weights_only=True)
    q, _ = _solve(problem)
    return q.to(losses.dtype)


def radius_to_beta(losses, radius: float, *, divergence: str = "kl", prior=None) -> float:
    r"""The β ↔ r duality: the penalty β whose penalised maximiser solves the radius-r problem.

    For ``r`` below the worst case's divergence, the constrained maximiser equals the penalised one
    at this β (the KKT multiplier of the constraint is 1/β): :math:`D_\phi(q_\beta\|p) = r`.

    Returns β as a float: ``inf`` when the radius reaches the arg-max limit, ``0`` for ``r = 0``.

    Args:
        losses, radius: ``ℓ``, shape ``(n,)``, and ``r ≥ 0``.
        divergence, prior: ``"kl"`` or ``"chi2"``, and ``p`` (uniform when ``None``).

    Example:
        >>> round(radius_to_beta(torch.tensor([1.0, 2.0, 3.0]), 0.1), 4)
        0.5696
    """
    if not isinstance(divergence, str) or divergence.lower() not in ("kl", "chi2"):
        raise ValueError(f"divergence must be 'kl' or 'chi2' for the β ↔ r duality, got {divergence!r}")
    if radius is None:  # _prepare would read a missing radius as "neither beta nor radius given"
        raise TypeError("radius must be a number >= 0, got None")
    _, problem = _prepare(losses, divergence, None, radius, None, prior)
    _, beta = _solve(problem)
    return beta


def divergence_value(q, p, divergence: str) -> Tensor:
    r"""The divergence :math:`D_\phi(q\|p)=\sum_i p_i\,\phi(q_i/p_i)` of two probability vectors, a 0-d tensor.

    Args:
        q, p: non-negative vectors of one shape; where ``p`` is zero ``q`` must be too (else ``inf``).
        divergence: ``"kl"`` (:math:`\phi(z)=z\log z`) or ``"chi2"`` (:math:`\phi(z)=(z-1)^2`).

    Example:
        >>> divergence_value(torch.tensor([0.5, 0.5, 0.0]), torch.full((3,), 1 / 3), "kl")  # log 1.5
        tensor(0.4055)
    """
    if isinstance(q, Tensor) and isinstance(p, Tensor) and q.device != p.device:
        raise ValueError(f"q is on {q.device} but p is on {p.device}; put them on one device")
    q = _as_loss_vector(q, "q")
    p = _as_loss_vector(p, "p")
    if q.shape != p.shape:
        raise ValueError(f"q and p must have the same shape, got {tuple(q.shape)} and {tuple(p.shape)}")
    if divergence not in ("kl", "chi2"):
        raise ValueError(f"divergence must be 'kl' or 'chi2', got {divergence!r}")
    if bool((q < 0).any()) or bool((p < 0).any()):
        raise ValueError("q and p must be non-negative")
    if bool(((p == 0) & (q > 0)).any()):
        return torch.tensor(math.inf, dtype=q.dtype, device=q.device)
    return _divergence(q, p, divergence)


def robust_loss(
    losses: Tensor,
    *,
    divergence: str,
    beta: float | None = None,
    radius: float | None = None,
    alpha: float | None = None,
    prior=None,
) -> Tensor:
    r"""The distributionally robust objective of a loss vector, differentiable: a 0-d tensor in its dtype.

    Value: for the penalised forms :math:`\max_q \langle q,\ell\rangle-\frac1\beta D_\phi(q\|p)`
    (KL: the log-mean-exp :math:`\frac1\beta\log\sum_i p_i e^{\beta\ell_i}`; ``β = 0``: the
    ``p``-weighted mean); for the constrained forms and CVaR, :math:`\langle q^\star,\ell\rangle`.
    Gradient: :math:`q^\star` with respect to ``ℓ`` (``q`` detached; envelope theorem), so the
    parameter gradient is :math:`\mathbb E_{q^\star}[\nabla\ell]`.

    Args:
        losses: per-sample losses ``ℓ``, shape ``(n,)``, e.g. ``F.cross_entropy(..., reduction="none")``.
        divergence: ``"kl"``, ``"chi2"`` or ``"cvar"``; ``beta``, ``radius``, ``alpha`` and ``prior`` as in
            :func:`worst_case_weights`.

    Example:
        >>> losses = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        >>> robust_loss(losses, divergence="kl", beta=1.0).backward()
        >>> losses.grad  # the worst-case weights
        tensor([0.0900, 0.2447, 0.6652])
    """
    losses, problem = _prepare(losses, divergence, beta, radius, alpha, prior)
    q, beta_eff = _solve(problem)
    work = problem.losses
    expected = (q * work).sum()
    if problem.divergence == "kl" and problem.beta is not None and 0.0 < beta_eff < math.inf:
        value = _support_max(work, problem.prior) + _log_mean_exp_shifted(work, problem.prior, beta_eff) / beta_eff
    elif problem.beta is not None and 0.0 < beta_eff < math.inf:
        value = expected - _divergence(q, problem.prior, problem.divergence) / beta_eff
    else:  # constrained, CVaR, β = 0 and β = ∞: the penalty term is zero or absent
        value = expected
    q_out = q.to(losses.dtype)
    # Gradient through ⟨q, ℓ⟩ with q fixed; the detached correction puts the value where it belongs.
    surrogate = (q_out * losses).sum()
    return surrogate + (value.to(losses.dtype) - surrogate.detach())


def _log_mean_exp_shifted(losses: Tensor, prior: Tensor, beta: float) -> Tensor:
    """log Σ p e^{β(ℓ − max ℓ)}, accurate even when it is tiny (small β): log1p(Σ p·expm1(βs)).

    The plain log-sum-exp adds log p to βs and loses ~1e-16·log n absolutely, which the caller's
    division by β would blow up (at β = 1e-16 it returned the max instead of the mean).
    """
    support = prior > 0
    s = torch.where(support, losses - _support_max(losses, prior), torch.zeros_like(losses))
    m = (prior * torch.expm1(beta * s)).sum()
    if bool(m > -0.5):
        return torch.log1p(m)
    return torch.logsumexp(_tilt_logits(losses, prior, beta), 0)


class RobustLoss(torch.nn.Module):
    """Module form of :func:`robust_loss`, fast-dro style: a drop-in reducer of per-sample losses.

    ``criterion(losses, prior=None)`` is :func:`robust_loss`, ``criterion.weights(losses, prior=None)``
    :func:`worst_case_weights`.

    Args:
        divergence: ``"kl"``, ``"chi2"`` or ``"cvar"``; ``beta``, ``radius`` and ``alpha`` as in
            :func:`worst_case_weights`.

    Example:
        >>> RobustLoss("kl", beta=1.0)(torch.tensor([1.0, 2.0, 3.0]))  # (1/β)·log mean e^{βℓ}
        tensor(2.3090)
    """

    def __init__(
        self, divergence: str, *, beta: float | None = None, radius: float | None = None, alpha: float | None = None
    ):
        super().__init__()
        # Validate now, on a dummy vector, so a bad configuration fails at construction.
        _prepare(torch.zeros(1), divergence, beta, radius, alpha, None)
        self.divergence, self.beta, self.radius, self.alpha = divergence, beta, radius, alpha

    def forward(self, losses: Tensor, prior=None) -> Tensor:
        return robust_loss(
            losses, divergence=self.divergence, beta=self.beta, radius=self.radius, alpha=self.alpha, prior=prior
        )

    def weights(self, losses: Tensor, prior=None) -> Tensor:
        return worst_case_weights(
            losses, divergence=self.divergence, beta=self.beta, radius=self.radius, alpha=self.alpha, prior=prior
        )

    def extra_repr(self) -> str:
        knob = {"beta": self.beta, "radius": self.radius, "alpha": self.alpha}
        return f"divergence={self.divergence!r}, " + ", ".join(f"{k}={v}" for k, v in knob.items() if v is not None)
