r"""Independent oracles for the worst-case weights: the papers' formulas as printed, and their ranges.

The library's solver (:func:`dro_lab.worst_case_weights`) is the exact maximiser of each inner
problem. The functions here are *not* that solver: they write a paper's closed form out exactly as
printed, so a notebook or a test can put the printed formula beside the exact answer and show where
the two agree and where the paper is wrong.

* :func:`fidon_eq21_weights` and :func:`fidon_eq21_threshold` — Fidon et al. (2020)'s eq. (21), the Pearson-χ²
  worst case with the multiplier fixed at the mean loss: beyond the threshold it is **not a distribution**;
* :func:`cvar_sorted_weights` — the CVaR worst case by hand: pour the cap :math:`1/(n\alpha)` on the worst
  losses until the weights sum to one (Rockafellar & Uryasev, 2000);
* :func:`simplex_worst_case` — every inner problem handed to a general-purpose solver (scipy's SLSQP with tight
  tolerances, HiGHS for CVaR): it knows nothing of softmaxes, projections or duality, but carries no bound;
* :func:`dual_worst_case` — the penalised worst case (KL or χ²) bracketed by a certificate (the convex dual's
  upper bound, the induced primal point's lower bound, both with a bound on their rounding);
* :func:`penalised_objective` — the primal objective at a given point, with the same rounding bound.

Everything here is numpy in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._rounding import SAFETY, U64, fn_error, gamma
from ._validation import as_float_vector, check_choice, check_number

__all__ = [
    "fidon_eq21_weights",
    "fidon_eq21_threshold",
    "cvar_sorted_weights",
    "simplex_worst_case",
    "DualCertificate",
    "dual_worst_case",
    "penalised_objective",
]


def _loss_array(losses, name: str = "losses") -> np.ndarray:
    """``losses`` as a finite 1-D float64 numpy array (tensors are detached and moved to the CPU)."""
    return as_float_vector(losses, name)


def fidon_eq21_weights(losses, beta: float) -> np.ndarray:
    r"""Fidon et al.'s χ² worst case as printed: :math:`\mathrm{ReLU}\big(\frac1n(1+\frac\beta2(\ell_i-\bar\ell))\big)`.

    This is the Pearson-χ² worst case of §3.1, Example 3.1 (penalty :math:`\frac1\beta\chi^2(q\|\hat p)`,
    uniform prior) with the normalising multiplier fixed at the mean loss :math:`\bar\ell`. It is the
    exact maximiser while nothing is clipped, i.e. for ``beta <= fidon_eq21_threshold(losses)``; beyond, the
    result **sums to more than 1 and is not a distribution** (the exact answer moves the multiplier up).
    Returned as is, never renormalised: the point of this oracle is to show the printed formula.

    Args:
        losses: per-sample losses ``ℓ``, shape ``(n,)`` (tensor, array or list; finite).
        beta: the inverse temperature ``β >= 0`` (finite).

    Returns:
        float64 numpy array of shape ``(n,)``, entries ``>= 0``.
    """
    ell = _loss_array(losses)
    beta = check_number(beta, "beta", low=0.0)
    return np.maximum((1.0 + beta / 2.0 * (ell - ell.mean())) / ell.size, 0.0)


def fidon_eq21_threshold(losses) -> float:
    r"""The largest β at which equation 21 clips nothing, :math:`2/(\bar\ell-\min_i\ell_i)` (``inf`` for equal losses).

    For ``0 <= beta <= threshold`` every bracket :math:`1+\frac\beta2(\ell_i-\bar\ell)` is ``>= 0``, the
    weights of :func:`fidon_eq21_weights` sum to 1 and equal the exact χ² worst case (Fidon et al.,
    §3.1, eq. (21)); above it the smallest loss's weight clips first.
    """
    ell = _loss_array(losses)
    if ell.min() == ell.max():  # equal losses: nothing ever clips (their computed mean may differ by an ulp)
        return math.inf
    gap = float(ell.mean() - ell.min())
    return math.inf if gap <= 0.0 else 2.0 / gap


def cvar_sorted_weights(losses, alpha: float) -> np.ndarray:
    r"""The CVaR worst case by hand: cap :math:`1/(n\alpha)` on the worst losses, the rest on the next one.

    With the losses sorted from the worst, :math:`k=\lfloor\alpha n\rfloor` entries get
    :math:`1/(n\alpha)`, the next one gets the remainder :math:`1-k/(n\alpha)`, the others 0, so that
    :math:`\langle q,\ell\rangle=\mathrm{CVaR}_\alpha(\ell)`, the mean of the worst α-fraction. Ties are
    broken by position (the first of equal losses is filled first); the value does not depend on it.

    Args:
        losses: per-sample losses ``ℓ``, shape ``(n,)`` (tensor, array or list; finite).
        alpha: the CVaR level in ``(0, 1]`` (``1`` gives the uniform weights, ``<= 1/n`` the arg-max).

    Returns:
        float64 numpy array of shape ``(n,)`` that sums to 1.
    """
    ell = _loss_array(losses)
    alpha = check_number(alpha, "alpha", low=0.0, high=1.0, low_open=True)
    n = ell.size
    cap = min(1.0, 1.0 / (n * alpha))
    q = np.zeros(n)
    left = 1.0
    for i in np.argsort(-ell, kind="stable"):
        take = min(cap, left)
        q[i] = take
        left -= take
        if left <= 0.0:
            break
    return q


def _prior_array(prior, n: int) -> np.ndarray:
    if prior is None:
        return np.full(n, 1.0 / n)
    p = _loss_array(prior, "prior")
    if p.size != n:
        raise ValueError(f"prior must have one entry per loss ({n}), got {p.size}")
    if (p <= 0).any() or abs(p.sum() - 1.0) > 1e-9:
        raise ValueError("prior must be positive and sum to 1")
    return p


def simplex_worst_case(
    losses,
    *,
    divergence: str,
    beta: float | None = None,
    radius: float | None = None,
    alpha: float | None = None,
    prior=None,
) -> np.ndarray:
    r"""The worst-case weights by a general-purpose solver over the simplex :math:`\Delta_n` (an oracle).

    Exactly one knob: ``beta`` (penalised, :math:`\max_q\langle q,\ell\rangle-\frac1\beta D(q\|p)`, ``β > 0``
    finite), ``radius`` (constrained, :math:`\max_q\langle q,\ell\rangle` s.t. :math:`D(q\|p)\le r`) for
    ``divergence`` ``"kl"`` or ``"chi2"``; ``alpha`` for ``"cvar"`` (:math:`q_i\le p_i/\alpha`). SLSQP starts from
    ``p`` with ``ftol=1e-15`` (weights to about 1e-6, only 1e-4 on a ball's boundary; cost ∝ n³: keep n small).
    No certificate: show it beside an exact answer, never assert with it (:func:`dual_worst_case` is the
    certified oracle of the penalised problems). CVaR is solved exactly by HiGHS.

    Args:
        losses: the loss vector ``ℓ``, shape ``(n,)``; finite.
        divergence: ``"kl"``, ``"chi2"`` or ``"cvar"``.
        beta, radius, alpha: the knob (see above).
        prior: ``p``, positive and summing to 1; uniform when ``None``.

    Returns:
        float64 numpy array of shape ``(n,)``.
    """
    # scipy is imported here: only an oracle call needs the solvers, and scipy.optimize is slow to import.
    from scipy.optimize import linprog, minimize

    ell = _loss_array(losses)
    n = ell.size
    p = _prior_array(prior, n)
    if not isinstance(divergence, str):
        raise TypeError(f"divergence must be 'kl', 'chi2' or 'cvar', got {type(divergence).__name__}")
    if divergence not in ("kl", "chi2", "cvar"):
        raise ValueError(f"divergence must be 'kl', 'chi2' or 'cvar', got {divergence!r}")
    given = [k for k, v in (("beta", beta), ("radius", radius), ("alpha", alpha)) if v is not None]
    allowed = ("alpha",) if divergence == "cvar" else ("beta", "radius")
    if len(given) != 1 or given[0] not in allowed:
        raise ValueError(f"divergence={divergence!r} takes exactly one of {allowed}, got {given or 'none'}")
    if divergence == "cvar":
        alpha = check_number(alpha, "alpha", low=0.0, high=1.0, low_open=True)
        res = linprog(-ell, A_eq=np.ones((1, n)), b_eq=[1.0], bounds=[(0.0, pi / alpha) for pi in p], method="highs")
        return res.x

    def div(q):
        if divergence == "kl":
            return float(np.sum(np.where(q > 0, q * np.log(np.maximum(q, 1e-300) / p), 0.0)))
        return float(np.sum((q - p) ** 2 / p))

    def div_grad(q):
        return np.log(np.maximum(q, 1e-300) / p) + 1.0 if divergence == "kl" else 2.0 * (q - p) / p

    constraints = [{"type": "eq", "fun": lambda q: q.sum() - 1.0, "jac": lambda q: np.ones(n)}]
    if beta is not None:
        beta = check_number(beta, "beta", low=0.0, low_open=True)

        def objective(q):
            return -(q @ ell - div(q) / beta), -(ell - div_grad(q) / beta)
    else:
        radius = check_number(radius, "radius", low=0.0)
        constraints.append({"type": "ineq", "fun": lambda q: radius - div(q), "jac": lambda q: -div_grad(q)})

        def objective(q):
            return -(q @ ell), -ell

    res = minimize(objective, p, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * n, constraints=constraints,
                   options={"ftol": 1e-15, "maxiter": 5000})  # fmt: skip
    q = np.clip(res.x, 0.0, None)
    return q / q.sum()


# --------------------------------------------------------------------------- the certified penalised worst case
# Rounding model of the certificates (Higham, *Accuracy and Stability of Numerical Algorithms*, 2002, §2.2 and §4.2):
# each float64 operation is exact up to a relative error u = 2⁻⁵³; a sum of m terms, in whatever order the library
# adds them, is exact up to γ(m − 1)·Σ|terms| with γ(k) = ku/(1 − ku); exp and log are allowed 4 ulp (8u: glibc's are
# within 1 ulp, numpy's vectorised kernels within 4). The first-order bounds derived below are doubled (SAFETY) to
# cover the second-order terms they drop.
_TINY = 2.0**-1022  # below the smallest normal float64, a result keeps an absolute error of at most this


@dataclass(frozen=True)
class DualCertificate:
    r"""What :func:`dual_worst_case` proves about the maximum
    :math:`R=\max_{q\in\Delta}\langle q,\ell\rangle-\frac1\beta D_\phi(q\|p)`:
    ``lower − rounding ≤ R ≤ upper + rounding``, whatever the bisection reached."""

    lower: float  #: the objective at the primal point ``q`` (weak duality's other side)
    upper: float  #: the dual function at ``eta`` (weak duality: never below R)
    rounding: float  #: bound on the float64 rounding of ``lower`` and of ``upper``
    q: np.ndarray  #: the primal point p·z(η) / Σ p·z(η), float64
    eta: float  #: the multiplier of Σ q = 1 where the dual was evaluated
    steps: int  #: bisection steps taken

    @property
    def gap(self) -> float:
        """``upper − lower``: how far the bisection left the two bounds apart (the duality gap at ``eta``)."""
        return self.upper - self.lower

    def brackets(self, value: float, slack: float = 0.0) -> bool:
        """Whether ``value`` (known up to ``slack``) can be the maximum: in ``[lower − rounding, upper + rounding]``."""
        return self.lower - self.rounding - slack <= value <= self.upper + self.rounding + slack


def _objective(q: np.ndarray, ell: np.ndarray, p: np.ndarray, divergence: str, beta: float) -> tuple[float, float]:
    """⟨q, ℓ⟩ − D(q‖p)/β in float64 and a bound on its distance to the objective at the exactly normalised q/Σq."""
    n = ell.size
    terms = q * ell
    expected = float(terms.sum())
    big = float(np.abs(ell).max())
    theta = abs(math.fsum(q.tolist()) - 1.0) + U64  # q = (1 + θ)·(q/Σq): how far q is from the simplex
    if divergence == "kl":
        logs = np.log(np.where(q > 0, q / p, 1.0))
        pen = q * logs
        div = float(pen.sum())
        # per term: q/p, log (8u, and u from the ratio), product; then the sum; subnormal q: an absolute 2⁻¹⁰²²
        div_err = 2 * U64 * float(q.sum()) + (fn_error() + 2 * U64 + gamma(n - 1)) * float(np.abs(pen).sum())
        div_err += n * _TINY * (1.0 + float(np.abs(logs).max()))
        # D((1 + θ)q̃) − D(q̃) = θ·D(q̃) + (1 + θ)·log(1 + θ)
        feasible = theta * (big + (abs(div) + 1.0 + theta) / beta)
    else:
        pen = (q - p) ** 2 / p
        div = float(pen.sum())
        div_err = (4 * U64 + gamma(n - 1)) * div + n * _TINY  # subtraction (u, doubled by the square), square, division
        # χ²((1 + θ)q̃) − χ²(q̃) = 2θ·χ²(q̃) + θ²·(χ²(q̃) + 1)
        feasible = theta * (big + (2.0 * div + theta * (div + 1.0)) / beta)
    value = expected - div / beta
    dot_err = gamma(n) * float(np.abs(terms).sum())
    rounding = SAFETY * (dot_err + (div_err + 2 * U64 * abs(div)) / beta + U64 * abs(value) + feasible)
    return value, rounding


def _dual(ell: np.ndarray, p: np.ndarray, divergence: str, beta: float, eta: float) -> tuple[float, float, np.ndarray]:
    r"""The dual function :math:`g(\eta)=\eta+\frac1\beta\sum_ip_i\phi^*(\beta(\ell_i-\eta))` at ``eta``, a bound on its
    float64 rounding, and the primal point :math:`p\cdot z(\eta)` (not normalised), :math:`z=(\phi^*)'`."""
    n = ell.size
    d = ell - eta
    if divergence == "kl":  # φ*(s) = e^{s−1}
        x = beta * d - 1.0
        w = p * np.exp(x)
        total = float(w.sum())
        value = eta + total / beta
        err_x = float((U64 * (2.0 * beta * np.abs(d) + np.abs(x))).max()) * (1.0 + 4 * U64)  # β·(ℓ − η) − 1
        rel = math.expm1(err_x) + (fn_error() + 2 * U64) * math.exp(err_x)  # one term p·e^x, relative
        rel_total = rel + gamma(n - 1) * (1.0 + rel)
        rounding = (total / beta) * (rel_total + 2 * U64) + n * _TINY / beta + U64 * (abs(value) + abs(eta))
        return value, SAFETY * rounding, w
    s = beta * d  # χ²: φ*(s) = s + s²/4 for s ≥ −2, −1 below; (1/β)·p·φ*(βd) = p·d·(1 + βd/4) on the first branch
    active = s >= -2.0
    terms = np.where(active, p * d * (1.0 + s / 4.0), -p / beta)
    value = eta + float(terms.sum())
    # an active term has relative error ≤ 6u (1 + βd/4 ≥ 1/2 there); the branches meet at s = −2 with equal slopes
    rounding = (6 * U64 + gamma(n)) * float(np.abs(terms).sum()) + U64 * (abs(value) + abs(eta))
    return value, SAFETY * rounding, p * np.maximum(0.0, 1.0 + s / 2.0)


def dual_worst_case(losses, *, divergence: str, beta: float, prior=None) -> DualCertificate:
    r"""The penalised worst case with a certificate: the maximum :math:`R` bracketed by weak duality.

    :math:`R=\max_{q\in\Delta_n}\langle q,\ell\rangle-\frac1\beta\sum_ip_i\phi(q_i/p_i)` with :math:`\phi(z)=z\log z`
    (``"kl"``) or :math:`(z-1)^2` (``"chi2"``, the library's convention: :math:`\sum_i(q_i-p_i)^2/p_i`). A multiplier
    η for :math:`\sum_iq_i=1` gives, for every η (weak duality),

    .. math:: R\le g(\eta)=\eta+\frac1\beta\sum_ip_i\,\phi^*\big(\beta(\ell_i-\eta)\big),\qquad
              \phi^*(s)=e^{s-1}\ \text{(KL)},\quad \phi^*(s)=s+\tfrac{s^2}4\ (s\ge-2),\ -1\ (s<-2)\ \text{(χ²)},

    the conjugates over :math:`z\ge0`. ``g`` is convex with :math:`g'(\eta)=1-\sum_ip_iz_i(\eta)`,
    :math:`z_i=e^{\beta(\ell_i-\eta)-1}` (KL) or :math:`\max(0,1+\beta(\ell_i-\eta)/2)` (χ²), so its minimiser is
    found by bisection on a bracket where the exponentials cannot overflow: KL
    :math:`[\max\ell-(1+\log(1/\min p))/\beta,\ \max\ell]`, χ² :math:`[\langle p,\ell\rangle,\max\ell]`. The primal
    point :math:`q=p\,z(\eta)/\sum_jp_jz_j(\eta)` is feasible, so its objective is a lower bound. Both bounds carry a
    bound on their float64 rounding (see the comment above :func:`_gamma`), so the certificate holds whether or not
    the bisection converged; at its end the gap is at the level of rounding. Numpy in float64, independent of
    :mod:`dro_lab.robust` (Fidon et al., 2020, Def. 2.4, eq. 9; the conjugates as in App. D.2).

    Args:
        losses: the loss vector ``ℓ``, shape ``(n,)``; finite.
        divergence: ``"kl"`` or ``"chi2"``.
        beta: ``β > 0`` (finite).
        prior: ``p``, positive and summing to 1; uniform when ``None``.

    Returns:
        :class:`DualCertificate`: ``lower``, ``upper``, ``gap``, ``rounding``, ``q``, ``eta``.
    """
    ell = _loss_array(losses)
    divergence = check_choice(divergence, "divergence", ("kl", "chi2"))
    beta = check_number(beta, "beta", low=0.0, low_open=True)
    p = _prior_array(prior, ell.size)
    top = float(ell.max())
    if divergence == "kl":
        lo, hi = top - (1.0 + math.log(1.0 / float(p.min()))) / beta, top
    else:
        lo, hi = min(float(p @ ell), top), top
    if not math.isfinite(lo):
        raise ValueError(f"beta must be large enough for the dual's bracket to fit in float64, got {beta:g}")

    def mass(eta: float) -> float:  # Σ p·z(η), decreasing in η; the root of g' is where it crosses 1
        d = ell - eta
        z = np.exp(beta * d - 1.0) if divergence == "kl" else np.maximum(0.0, 1.0 + beta * d / 2.0)
        return float(p @ z)

    steps = 0
    while steps < 4096:  # each step halves the bracket: float64 runs out of midpoints in at most ~2100
        mid = lo + (hi - lo) / 2.0
        if not lo < mid < hi:
            break
        steps += 1
        if mass(mid) > 1.0:
            lo = mid
        else:
            hi = mid
    candidates = [(*_dual(ell, p, divergence, beta, eta), eta) for eta in (lo, hi)]
    upper, up_round, w, eta = min(candidates, key=lambda c: c[0] + c[1])
    q = w / w.sum()
    lower, low_round = _objective(q, ell, p, divergence, beta)
    return DualCertificate(lower, upper, max(low_round, up_round), q, eta, steps)


def penalised_objective(q, losses, *, divergence: str, beta: float, prior=None) -> tuple[float, float]:
    r"""The objective :math:`\langle q,\ell\rangle-\frac1\beta D_\phi(q\|p)` that weights ``q`` achieve, and a bound on
    its float64 rounding.

    ``q`` (non-negative, with a positive sum) is normalised first; the value is that of the exactly normalised
    :math:`q/\sum_iq_i` (a point of the simplex) up to the returned bound, so a candidate's value compares with a
    :class:`DualCertificate` without further slack. ``divergence``, ``beta`` and ``prior`` as in
    :func:`dual_worst_case`.

    Returns:
        ``(value, rounding)``.
    """
    ell = _loss_array(losses)
    weights = _loss_array(q, "q")
    if weights.size != ell.size:
        raise ValueError(f"q must have one entry per loss ({ell.size}), got {weights.size}")
    if (weights < 0).any() or not weights.sum() > 0:
        raise ValueError("q must be non-negative with a positive sum (weights of a probability vector)")
    divergence = check_choice(divergence, "divergence", ("kl", "chi2"))
    beta = check_number(beta, "beta", low=0.0, low_open=True)
    p = _prior_array(prior, ell.size)
    return _objective(weights / weights.sum(), ell, p, divergence, beta)
