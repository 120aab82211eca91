r"""Independent oracles for the worst-case weights: the papers' formulas as printed, and their ranges.

The library's solver (:func:`dro_lab.worst_case_weights`) is the exact maximiser of each inner
problem. The functions here are *not* that solver: they write a paper's closed form out exactly as
printed, so a lesson or a test can put the printed formula beside the exact answer and show where
the two agree and where the paper is wrong.

* :func:`fidon_eq21_weights` — Fidon, Ourselin & Vercauteren (2020), §3.1, Example 3.1, eq. (21):
  the Pearson-χ² worst case :math:`\bar p_i=\mathrm{ReLU}\big(\frac1n(1+\frac\beta2(\ell_i-\bar\ell))\big)`.
  The multiplier of :math:`\sum_i q_i=1` is fixed at the mean loss, which is right only while no
  entry is clipped: beyond :func:`fidon_eq21_threshold` the printed weights are **not a
  distribution** (they sum to more than 1).
* :func:`fidon_eq21_threshold` — the largest β for which eq. (21) is exact, :math:`2/(\bar\ell-\min_i\ell_i)`.
* :func:`cvar_sorted_weights` — the CVaR worst case written as the rule a reader would apply by hand:
  sort the losses, pour the cap :math:`1/(n\alpha)` on the worst, then the next, until the weights
  sum to one (Rockafellar & Uryasev, 2000; Levy et al., 2020).

* :func:`simplex_worst_case` — every inner problem handed to a general-purpose solver over the simplex (scipy's
  SLSQP with analytic gradients and tight tolerances; HiGHS for the CVaR linear programme). It knows nothing of
  softmaxes, projections or duality, which is what makes it an oracle. (The timing baseline
  :func:`dro_lab.bench.weights.scipy_worst_case` keeps scipy's default tolerances, as a reader would; at those
  SLSQP can stop well short of the KL ball's maximum, so it is no oracle.)

Everything here is numpy in float64.
"""

from __future__ import annotations

import math

import numpy as np

from ._validation import check_number

__all__ = ["fidon_eq21_weights", "fidon_eq21_threshold", "cvar_sorted_weights", "simplex_worst_case"]


def _loss_array(losses, name: str = "losses") -> np.ndarray:
    """``losses`` as a finite 1-D float64 numpy array (tensors are detached and moved to the CPU)."""
    if hasattr(losses, "detach"):  # a torch tensor: leave autograd and the device behind
        losses = losses.detach().cpu().numpy()
    if isinstance(losses, (str, bytes, dict, set)) or losses is None or isinstance(losses, (bool, int, float)):
        raise TypeError(f"{name} must be a 1-D tensor, array or list of floats, got {type(losses).__name__}")
    try:
        arr = np.asarray(losses, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a 1-D tensor, array or list of floats, got {type(losses).__name__}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D vector, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: need at least one entry")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf values; {name} must be finite")
    return arr


def fidon_eq21_weights(losses, beta: float) -> np.ndarray:
    r"""Fidon et al.'s eq. (21) as printed: :math:`\mathrm{ReLU}\big(\frac1n(1+\frac\beta2(\ell_i-\bar\ell))\big)`.

    This is the Pearson-χ² worst case of §3.1, Example 3.1 (penalty :math:`\frac1\beta\chi^2(q\|\hat p)`,
    uniform prior) with the normalising multiplier fixed at the mean loss :math:`\bar\ell`. It is the
    exact maximiser while nothing is clipped, i.e. for ``beta <= fidon_eq21_threshold(losses)``.
    Beyond that threshold some entries clip at 0 and the rest keep their unclipped values, so the
    result **sums to more than 1 and is not a distribution**; the exact answer then moves the
    multiplier up (:func:`dro_lab.worst_case_weights` with ``divergence="chi2"``). Returned as is,
    never renormalised: the point of this oracle is to show the printed formula.

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
    r"""The largest β at which eq. (21) clips nothing, :math:`2/(\bar\ell-\min_i\ell_i)` (``inf`` for equal losses).

    For ``0 <= beta <= threshold`` every bracket :math:`1+\frac\beta2(\ell_i-\bar\ell)` is ``>= 0``, the
    weights of :func:`fidon_eq21_weights` sum to 1 and equal the exact χ² worst case (Fidon et al.,
    §3.1, eq. (21)); above it the smallest loss's weight clips first.
    """
    ell = _loss_array(losses)
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
    ``p`` with ``ftol=1e-15``; agreement with an exact solver is to about 1e-6 for n up to a few dozen (SLSQP's
    cost grows like n³: keep n small). CVaR is solved exactly by HiGHS.

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
