"""Lesson 02, the worst-case weights: §3.1 (eqs. 9–12), §3.2 (eq. 20) and §3.6 (eq. 21), and §3.2's pick of losses."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from scipy.special import logsumexp

from dro_course.lessons import CheckResult, require, share, softmax_relative
from dro_course.lessons.hardness_weighted_sampling._shared import DIVERGENCES, NAMES, check_beta, distinct_betas
from dro_lab._rounding import SAFETY, U32, U64, fn_error, gamma
from dro_lab._validation import as_float_vector, check_choice, check_int
from dro_lab.oracles import (
    DualCertificate,
    dual_worst_case,
    fidon_eq21_threshold,
    fidon_eq21_weights,
    penalised_objective,
    simplex_worst_case,
)
from dro_lab.robust import robust_loss, worst_case_weights
from dro_lab.samplers import HardnessWeightedSampler

__all__ = [
    "check_robust_loss",
    "check_worst_case",
    "check_worst_cases",
    "check_sampler_probabilities",
    "check_eq21",
    "check_sampler_chi2",
    "pick_losses",
]


# --------------------------------------------------------------------------- §3.1: the robust loss and its limits


def _library_lme_rounding(n: int, spread: float, big: float, value: float) -> float:
    """Float64 rounding of ``robust_loss(ℓ, "kl", β)`` = max ℓ + log Σ_i p_i e^{β(ℓ_i − max ℓ)} / β (robust.py).

    While M = Σ p·expm1(βs) > −1/2 the library takes log1p(M) (s = ℓ − max ℓ): each term is within 8u + 2u (the
    exponent βs is relative-exact to 2u and expm1 is 1-conditioned for s ≤ 0), the sum of same-signed terms adds
    γ(n − 1), and |M|/β and |log1p M|/β are both at most max − min: no 1/β appears. Otherwise it takes a log-sum-exp,
    whose absolute errors are divided by a β with β(max − R) ≥ log 2, i.e. 1/β ≤ (max − min)/log 2. The two paths'
    bounds are added; the straight-through sum ⟨q, ℓ⟩ + (value − ⟨q, ℓ⟩) adds 2u·max|ℓ| + 3u·|R|.
    """
    f, g = fn_error(), gamma(n - 1)
    log_path = (2 * g + 3 * f + 10 * U64) * spread
    lse_path = (g + f + (2 * f + 3 * U64) * math.log(n)) * spread / math.log(2.0) + 5 * U64 * spread
    return SAFETY * (log_path + lse_path + 2 * U64 * big + 3 * U64 * abs(value))


def _scipy_lme_rounding(n: int, beta: float, big: float, value: float) -> float:
    """Float64 rounding of (logsumexp(βℓ) − log n)/β: the exponents βℓ_i − max carry 4u·β·max|ℓ| (R moves by at most
    that over β), the exps, the sum and the two logs add (γ(n − 1) + 8u(1 + 2 log n) + 2u log n)/β."""
    f, g = fn_error(), gamma(n - 1)
    return SAFETY * (
        4 * U64 * big + (g + f * (1 + 2 * math.log(n)) + 2 * U64 * math.log(n)) / beta + 3 * U64 * abs(value)
    )


def _scipy_lme(ell: np.ndarray, beta: float) -> float:
    return float((logsumexp(beta * ell) - math.log(ell.size)) / beta)


@dataclass(frozen=True)
class RobustLossCheck(CheckResult):
    """:func:`check_robust_loss`' numbers."""

    rows: tuple  #: (β, library, SciPy, allowed |difference|)
    mean: float
    top: float
    limits: tuple  #: (β, R, mean + β(max − min)²/8, max − log(n)/β) at the two extreme β
    grid: tuple  #: (first β, last β, how many)
    drop: float  #: the largest decrease of R between neighbours on the grid (0 when it never decreases)
    drop_allowed: float  #: what rounding allows there

    def lines(self) -> list[str]:
        out = ["      β   dro_lab.robust_loss   SciPy: (logsumexp(βℓ) − log n)/β   |difference|   allowed (rounding)"]
        out += [
            f"{b:7g}   {lib:19.12f}   {ref:32.12f}   {abs(lib - ref):12.1e}   {tol:18.1e}"
            for b, lib, ref, tol in self.rows
        ]
        (b0, r0, hi0, _), (b1, r1, _, lo1) = self.limits
        out.append(
            f"β → 0, the mean: at β = {b0:g}, mean {self.mean:.8f} ≤ R = {r0:.8f} ≤ mean + β(max − min)²/8 = {hi0:.8f}"
        )
        out.append(f"β → ∞, the max: at β = {b1:g}, max − log(n)/β = {lo1:.8f} ≤ R = {r1:.8f} ≤ max = {self.top:.8f}")
        lo, hi, count = self.grid
        out.append(
            f"both intervals hold at all {count} β from {lo:g} to {hi:g}, and R never decreases along them "
            f"(largest drop {self.drop:.0e}; float64 rounding allows {self.drop_allowed:.0e})"
        )
        return out


def check_robust_loss(losses, *, betas, limit_betas=(1e-7, 1e5), grid=None) -> RobustLossCheck:
    r"""Eqs. (9)–(12): ``dro_lab.robust_loss(ℓ, "kl", β)`` is SciPy's log-mean-exp, and R_β is trapped by the limits.

    For every β in ``betas`` the two values agree within the sum of their rounding bounds. For every β in
    ``limit_betas`` and on ``grid`` (default 40 β log-spaced from 1e-3 to 1e4) the exact inequalities
    :math:`\bar\ell\le R_\beta\le\bar\ell+\beta(\max\ell-\min\ell)^2/8` (Jensen; Hoeffding's lemma) and
    :math:`\max\ell-\log(n)/\beta\le R_\beta\le\max\ell` hold up to rounding, so R tends to the mean (eq. 11) and to
    the max (eq. 12); and R never decreases along the grid by more than rounding.
    """
    ell = as_float_vector(losses, "losses")
    betas = distinct_betas(*betas)
    limit_betas = tuple(check_beta(b) for b in limit_betas)
    if len(limit_betas) != 2:
        raise ValueError(f"limit_betas must be a small β and a large one, got {limit_betas}")
    grid = np.logspace(-3, 4, 40) if grid is None else np.asarray([check_beta(b) for b in grid])
    n, big = ell.size, float(np.abs(ell).max())
    spread, top, mean = float(ell.max() - ell.min()), float(ell.max()), math.fsum(ell.tolist()) / ell.size
    losses64 = torch.from_numpy(ell)

    def library(beta: float) -> tuple[float, float]:
        value = float(robust_loss(losses64, divergence="kl", beta=beta))
        return value, _library_lme_rounding(n, spread, big, value)

    rows = []
    for b in betas:
        (lib, tol_lib), ref = library(b), _scipy_lme(ell, b)
        tol = tol_lib + _scipy_lme_rounding(n, b, big, ref)
        require(
            abs(lib - ref) <= tol,
            f"robust_loss = SciPy's log-mean-exp at β = {b:g}",
            f"{lib!r} against {ref!r}, difference {abs(lib - ref):.3e} > {tol:.3e} (float64 rounding)",
        )
        rows.append((b, lib, ref, tol))
    values, limits = [], []
    for b in (*limit_betas, *grid.tolist()):
        value, tol = library(b)
        high11, low12 = mean + b * spread**2 / 8, top - math.log(n) / b
        slack11, slack12 = tol + 4 * U64 * (abs(mean) + abs(high11)), tol + 4 * U64 * (abs(top) + math.log(n) / b)
        require(
            mean - slack11 <= value <= high11 + slack11,
            f"eq. (11): mean ≤ R ≤ mean + β(max − min)²/8 at β = {b:g}",
            f"R = {value!r}, mean = {mean!r}, upper end {high11!r}, rounding {slack11:.3e}",
        )
        require(
            low12 - slack12 <= value <= top + slack12,
            f"eq. (12): max − log(n)/β ≤ R ≤ max at β = {b:g}",
            f"R = {value!r}, max = {top!r}, lower end {low12!r}, rounding {slack12:.3e}",
        )
        values.append((value, tol))
        if len(limits) < 2:
            limits.append((b, value, high11, low12))
    on_grid = values[2:]
    drops = [(a[0] - b[0], a[1] + b[1]) for a, b in zip(on_grid, on_grid[1:])]
    for (drop, allowed), b in zip(drops, grid[1:]):
        require(
            drop <= allowed, f"R_β is non-decreasing in β (at β = {b:g})", f"it drops by {drop:.3e} > {allowed:.3e}"
        )
    drop, allowed = max(drops, default=(0.0, 0.0))
    return RobustLossCheck(
        tuple(rows), mean, top, tuple(limits), (float(grid[0]), float(grid[-1]), len(grid)), max(drop, 0.0), allowed
    )


# --------------------------------------------------------------------------- §3.2 and §3.6: the certified worst case

_SLSQP_MAX_N = 40  # SLSQP is shown for the lesson's 12 losses; its cost grows like n³


def _slsqp_shown(ell: np.ndarray, divergence: str, beta: float, certificate: DualCertificate) -> str:
    """What SciPy's SLSQP reaches, to show beside the certificate: never asserted, and it never raises."""
    if ell.size > _SLSQP_MAX_N:
        return f"not run (n > {_SLSQP_MAX_N}: its cost grows like n³)"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = simplex_worst_case(ell, divergence=divergence, beta=beta)
            value, _ = penalised_objective(q, ell, divergence=divergence, beta=beta)
    except Exception as exc:  # shown only: whatever a general-purpose optimiser does, no check depends on it
        return f"no point ({type(exc).__name__})"
    short = certificate.upper - value
    if short <= 2 * certificate.rounding:
        return "at the maximum"
    return f"{short:.1e} below the maximum"


@dataclass(frozen=True)
class WorstCaseCheck(CheckResult):
    """:func:`check_worst_case`' numbers."""

    divergence: str
    beta: float
    certificate: DualCertificate
    closed_form: float  #: KL: SciPy's log-mean-exp; χ²: ``dro_lab.robust_loss(ℓ, "chi2", β)``
    closed_rounding: float
    library_value: float  #: the objective at ``worst_case_weights``
    distance: float  #: certified bound on the distance of those weights to the maximiser
    slsqp: str

    def lines(self) -> list[str]:
        c, name = self.certificate, NAMES[self.divergence]
        norm = "‖q − q*‖₁" if self.divergence == "kl" else "‖q − q*‖₂"
        return [
            f"{name}, β = {self.beta:.4g}: the exact dual ({c.steps} bisection steps) brackets R in "
            f"[{c.lower:.10f}, {c.upper:.10f}] ± {c.rounding:.0e}",
            f"    closed form {self.closed_form:.10f}: inside; worst_case_weights reach {self.library_value:.10f}: "
            f"{norm} ≤ {self.distance:.1e}; SLSQP (shown only): {self.slsqp}",
        ]


def check_worst_case(losses, *, divergence: str, beta: float) -> WorstCaseCheck:
    r"""Eq. (20) (KL) and the exact χ² worst case, against the exact one-dimensional dual.

    :func:`dro_lab.oracles.dual_worst_case` brackets the maximum :math:`R` of
    :math:`\langle q,\ell\rangle-\frac1\beta D(q\|\hat p)` between a lower bound (its primal point) and an upper bound
    (weak duality), each up to its float64 rounding. Asserted: the closed form (KL: SciPy's log-mean-exp; χ²: the
    library's robust loss) lies in that bracket up to its own rounding, and the library's weights reach at least the
    lower bound. Strong concavity then bounds their distance to the maximiser: KL, Pinsker,
    :math:`\|q-q^\star\|_1\le\sqrt{2\beta(R-F(q))}`; χ², :math:`\|q-q^\star\|_2\le\sqrt{\beta\max_ip_i(R-F(q))}`.
    SciPy's SLSQP is shown beside, never asserted.
    """
    ell = as_float_vector(losses, "losses")
    divergence = check_choice(divergence, "divergence", DIVERGENCES)
    beta = check_beta(beta)
    n, big = ell.size, float(np.abs(ell).max())
    cert = dual_worst_case(ell, divergence=divergence, beta=beta)
    t = torch.from_numpy(ell)
    weights = worst_case_weights(t, divergence=divergence, beta=beta).numpy()
    value, value_rounding = penalised_objective(weights, ell, divergence=divergence, beta=beta)
    if divergence == "kl":
        closed = _scipy_lme(ell, beta)
        closed_rounding = _scipy_lme_rounding(n, beta, big, closed)
    else:  # the library's value ⟨q, ℓ⟩ − χ²(q‖p)/β at its weights, then its straight-through sum (robust.py)
        closed = float(robust_loss(t, divergence="chi2", beta=beta))
        closed_rounding = value_rounding + SAFETY * (2 * U64 * big + 3 * U64 * abs(closed))
    name = NAMES[divergence]
    bracket = f"[{cert.lower!r}, {cert.upper!r}] ± {cert.rounding:.3e}"
    require(
        cert.brackets(closed, closed_rounding),
        f"{name}, β = {beta:g}: the closed form lies between the dual's bounds",
        f"closed form {closed!r} (± {closed_rounding:.3e}), dual bracket {bracket}",
    )
    require(
        value >= cert.lower - cert.rounding - value_rounding,
        f"{name}, β = {beta:g}: worst_case_weights reach the maximum",
        f"their objective {value!r} (± {value_rounding:.3e}) is below the dual's lower bound {bracket}",
    )
    excess = max(cert.upper + cert.rounding - (value - value_rounding), 0.0)
    distance = math.sqrt(2 * beta * excess) if divergence == "kl" else math.sqrt(beta * excess / n)
    return WorstCaseCheck(
        divergence, beta, cert, closed, closed_rounding, value, distance, _slsqp_shown(ell, divergence, beta, cert)
    )


@dataclass(frozen=True)
class WorstCaseChecks(CheckResult):
    """:func:`check_worst_cases`' results, one per divergence and β."""

    checks: tuple[WorstCaseCheck, ...]

    def lines(self) -> list[str]:
        return [line for check in self.checks for line in check.lines()]


def check_worst_cases(losses, *, betas, divergences=DIVERGENCES) -> WorstCaseChecks:
    """:func:`check_worst_case` for each of ``divergences`` at each of ``betas``, every β once and in increasing
    order (the lesson passes fixed β beside its own ``beta``, which may equal one of them)."""
    betas = distinct_betas(*betas)
    for divergence in divergences:
        check_choice(divergence, "divergence", DIVERGENCES)
    return WorstCaseChecks(tuple(check_worst_case(losses, divergence=d, beta=b) for d in divergences for b in betas))


# --------------------------------------------------------------------------- §3.2: the sampler's softmax


@dataclass(frozen=True)
class SamplerCheck(CheckResult):
    """:func:`check_sampler_probabilities`' numbers."""

    beta: float
    max_difference: float
    relative: float  #: allowed |Δ_i| ≤ q_i·relative + floor
    floor: float
    used: float  #: the largest |Δ_i| / allowed_i

    def lines(self) -> list[str]:
        return [
            f"sampler.probabilities() (float32) against float64 softmax(β·history) at β = {self.beta:g}: "
            f"max |Δ| = {self.max_difference:.1e}",
            f"    every |Δ_i| ≤ q_i·{self.relative:.1e} + {self.floor:.0e} (float32 rounding of the history and of "
            f"the softmax); the closest entry uses {share(self.used)} of its allowance",
        ]


def check_sampler_probabilities(history, *, beta: float) -> SamplerCheck:
    r"""Eq. (20) in the sampler: ``HardnessWeightedSampler(...).probabilities()`` is softmax(β·history) up to float32.

    The sampler stores the history in float32 (each entry within :math:`2^{-24}|\ell_i|`) and takes a float32 softmax
    of β·history (samplers/hardness.py): the exponents carry at most :math:`7\cdot2^{-24}\beta\max|\ell|` (history,
    β and the product, the shift by the max), which moves every :math:`q_i` by a relative
    :math:`e^{2\delta}-1`, and the exps, the sum (γ(n − 1)) and the division add theirs. Below float32's smallest
    normal number, :math:`2^{-126}`, only an absolute error survives: the floor.
    """
    h = as_float_vector(history, "history")
    beta = check_beta(beta)
    n, big = h.size, float(np.abs(h).max())
    sampler = HardnessWeightedSampler(
        n, 1, beta=beta, warm_start=False, history_init=torch.from_numpy(h).float(), device="cpu"
    )
    got = sampler.probabilities().double().numpy()
    exact = torch.softmax(beta * torch.from_numpy(h), 0).numpy()
    rel32 = softmax_relative(n, 7 * U32 * beta * big * (1 + 8 * U32), U32)
    rel64 = softmax_relative(n, 3 * U64 * beta * big * (1 + 4 * U64), U64)
    relative = SAFETY * (rel32 + rel64) * (1 + rel64)
    floor = 2.0 * 2.0**-126 + 2.0**-1022
    allowed = exact * relative + floor
    diff = np.abs(got - exact)
    worst = int(np.argmax(diff / allowed))
    require(
        bool(np.all(diff <= allowed)),
        f"the sampler draws from softmax(β·history) at β = {beta:g}",
        f"entry {worst}: {got[worst]!r} against {exact[worst]!r}, |Δ| = {diff[worst]:.3e} > {allowed[worst]:.3e}",
    )
    return SamplerCheck(beta, float(diff.max()), relative, floor, float((diff / allowed).max()))


# --------------------------------------------------------------------------- §3.6: eq. (21) and the χ² sampler


@dataclass(frozen=True)
class Eq21Check(CheckResult):
    """:func:`check_eq21`' numbers: one row per β (half the threshold, four times it)."""

    threshold: float
    rows: tuple  #: (β, eq. 21's zeros, its sum, the allowed low end of its sum, library's zeros, its sum, certified)

    def lines(self) -> list[str]:
        if math.isinf(self.threshold):
            return ["the 12 losses are equal: the χ² formula clips nothing at any β (the threshold is infinite)"]
        out = [f"no clipping while β ≤ 2/(mean − min) = {self.threshold:.3f}"]
        for beta, zeros, total, low, lib_zeros, lib_total, cert in self.rows:
            claim = "1, and reaches the maximum" if low is None else f"≥ 1 + 3/n = {low:.4f}: not a distribution"
            out.append(
                f"β = {beta:.4g}: the paper's formula as printed zeroes {zeros} weights and sums to {total:.4f} "
                f"(must be {claim}); the library zeroes {lib_zeros} and sums to {lib_total:.15f}"
            )
            out += ["    " + line for line in cert.lines()]
        return out


def check_eq21(losses) -> Eq21Check:
    r"""Eq. (21) as printed, :math:`\frac1n(1+\frac\beta2(\ell_i-\bar\ell))_+`, against the exact χ² worst case.

    At half the threshold :math:`2/(\bar\ell-\min\ell)` nothing clips: the printed weights sum to 1 and reach the
    maximum (certified by the exact dual). At four times it the smallest loss's bracket is :math:`1-4=-3`, and as the
    brackets sum to n, the clipped formula sums to at least :math:`1+3/n`: not a distribution. The library's weights
    sum to 1 and reach the maximum at both (:func:`check_worst_case`). Equal losses: nothing ever clips; said, not
    asserted.
    """
    ell = as_float_vector(losses, "losses")
    n, big, spread = ell.size, float(np.abs(ell).max()), float(ell.max() - ell.min())
    threshold = fidon_eq21_threshold(ell)
    if math.isinf(threshold):
        return Eq21Check(threshold, ())
    rows = []
    for beta, clips in ((0.5 * threshold, False), (4.0 * threshold, True)):
        printed = fidon_eq21_weights(ell, beta)
        library = worst_case_weights(torch.from_numpy(ell), divergence="chi2", beta=beta).numpy()
        total, lib_total = math.fsum(printed.tolist()), math.fsum(library.tolist())
        # numpy's mean (γ(n + 1)·max|ℓ|) moves every bracket 1 + (β/2)(ℓ_i − mean) by (β/2) times that; each
        # bracket adds 2u·(β/2)(max − min) + u·|bracket| and the division by n one more u (math.fsum sums exactly)
        tol21 = SAFETY * (beta / 2 * (gamma(n + 1) * big + 2 * U64 * spread) + 2 * U64 * (1 + beta * spread / 2))
        require(
            abs(lib_total - 1) <= SAFETY * (gamma(n) + 2 * U64),
            f"χ², β = {beta:g}: the library's weights sum to 1",
            f"they sum to {lib_total!r}",
        )
        cert = check_worst_case(ell, divergence="chi2", beta=beta)
        low = None
        if clips:
            low = 1 + 3 / n
            require(
                total >= low - tol21,
                f"β = {beta:g} = 4 × threshold: eq. (21) as printed sums to ≥ 1 + 3/n",
                f"it sums to {total!r} < {low!r} − {tol21:.3e}",
            )
        else:
            require(
                abs(total - 1) <= tol21,
                f"β = {beta:g} ≤ threshold: eq. (21) as printed sums to 1",
                f"it sums to {total!r}, allowed {tol21:.3e}",
            )
            value, rounding = penalised_objective(printed, ell, divergence="chi2", beta=beta)
            c = cert.certificate
            require(
                value >= c.lower - c.rounding - rounding,
                f"β = {beta:g} ≤ threshold: eq. (21) is the maximiser",
                f"its objective {value!r} is below the dual's lower bound {c.lower!r} − {c.rounding:.3e}",
            )
        rows.append((beta, int((printed == 0).sum()), total, low, int((library == 0).sum()), lib_total, cert))
    return Eq21Check(threshold, tuple(rows))


@dataclass(frozen=True)
class SamplerChi2Check(CheckResult):
    """:func:`check_sampler_chi2`' numbers."""

    beta: float
    total: float
    allowed: float
    zeros: int
    n: int
    eq21_total: float

    def lines(self) -> list[str]:
        return [
            f"sampler (χ², β = {self.beta:g}) on the whole history: sum {self.total:.10f} (1 within "
            f"{self.allowed:.0e}), {self.zeros} of {self.n} examples at probability exactly 0; the paper's "
            f"formula as printed would sum to {self.eq21_total:.3f}"
        ]


def check_sampler_chi2(history, *, beta: float) -> SamplerChi2Check:
    """§3.6: the χ² sampler's probabilities are a distribution. They are computed in float64 (a sum of n terms and a
    division: within γ(n − 1) + u of summing to 1) and rounded once to float32 (2⁻²⁴ each, samplers/hardness.py);
    their sum is taken exactly (``math.fsum``)."""
    h = as_float_vector(history, "history")
    beta = check_beta(beta)
    n = h.size
    sampler = HardnessWeightedSampler(
        n, 1, beta=beta, divergence="chi2", warm_start=False, history_init=torch.from_numpy(h).float(), device="cpu"
    )
    q = sampler.probabilities().double().numpy()
    total = math.fsum(q.tolist())
    allowed = SAFETY * (U32 + gamma(n) + 2 * U64)
    require(
        abs(total - 1) <= allowed,
        f"the χ² sampler's probabilities sum to 1 at β = {beta:g}",
        f"they sum to {total!r}, allowed {allowed:.3e}",
    )
    eq21 = math.fsum(fidon_eq21_weights(h.astype(np.float32).astype(np.float64), beta).tolist())
    return SamplerChi2Check(beta, total, allowed, int((q == 0).sum()), n, eq21)


# --------------------------------------------------------------------------- §3.2: the 12 losses


def pick_losses(rare, others, generator: np.random.Generator, *, count: int = 12, rare_count: int = 3) -> np.ndarray:
    """``count`` indices without replacement: up to ``rare_count`` from ``rare`` (fewer when it has fewer), the rest
    from ``others`` (§3.2's 12 losses, 3 of the rare class when it has 3)."""
    rare, others = np.asarray(rare, dtype=np.int64), np.asarray(others, dtype=np.int64)
    if not isinstance(generator, np.random.Generator):
        raise TypeError(f"generator must be a numpy.random.Generator, got {type(generator).__name__}")
    count = check_int(count, "count")
    take = min(check_int(rare_count, "rare_count", low=0), len(rare), count)
    if len(others) < count - take:
        raise ValueError(f"others must hold at least {count - take} indices, got {len(others)}")
    return np.r_[generator.choice(rare, take, replace=False), generator.choice(others, count - take, replace=False)]
