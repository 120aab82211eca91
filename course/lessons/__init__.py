"""What one lesson needs to check: the facts its code cells assert, one module per lesson.

A lesson's checks are mathematics: each is a function of plain inputs (loss vectors, β, batch sizes, seeds, a model)
that computes the numbers the lesson prints and raises :class:`LessonCheckError` when the fact fails. A fact holds for
every input the lesson's parameters allow, on any machine: where it compares two computations, its tolerance is a
bound derived from a rounding model or a certificate; where it is random, a bound with a stated failure probability.
A module is named for its lesson (``hardness_weighted_sampling`` for lesson 02), so it can move with the lesson.

The float64 and float32 rounding model the bounds use is ``dro_lab._rounding``'s (Higham, *Accuracy and Stability
of Numerical Algorithms*, 2002, §2.2 and §4.2): each operation is exact up to a relative error ``u`` (2⁻⁵³, 2⁻²⁴); a
sum of m terms, in whatever order a library adds them, is exact up to ``gamma(m − 1, u)·Σ|terms|``; ``exp``,
``expm1``, ``log`` and ``log1p`` are allowed 4 ulp (``8u``). The first-order bounds are then multiplied by ``SAFETY``
to cover the second-order terms they drop.
"""

from __future__ import annotations

import math

from dro_lab._rounding import U64, fn_error, gamma


class LessonCheckError(AssertionError):
    """A fact a lesson asserts did not hold: the message says which fact, the numbers and the tolerance.

    A subclass of ``AssertionError``: a failing check stops the lesson like the ``assert`` it replaces.
    """


class CheckResult:
    """Base of the frozen dataclasses the checks return: ``lines()`` is what the lesson prints, ``str()`` joins them."""

    def lines(self) -> list[str]:  # pragma: no cover - every check overrides it
        raise NotImplementedError

    def __str__(self) -> str:
        return "\n".join(self.lines())


def share(used: float) -> str:
    """How much of its tolerance a check used, for the printed lines: ``"23 %"``, or ``"under 1 %"``."""
    return "under 1 %" if used < 0.01 else f"{used:.0%}".replace("%", " %")


def require(holds: bool, fact: str, detail: str) -> None:
    """Raise :class:`LessonCheckError` saying ``fact`` failed, with ``detail`` (the numbers and the tolerance)."""
    if not holds:
        raise LessonCheckError(f"{fact} does not hold: {detail}")


def softmax_relative(n: int, exponent_error: float, u: float = U64) -> float:
    """Relative error of every entry of a max-shifted softmax of ``n`` entries whose exponents carry an absolute
    error of at most ``exponent_error``: a shift common to all cancels, so q_i moves by at most a factor e^{±2δ} from
    the exponents; then one exp per entry, the sum (γ(n − 1), any order) and the division."""
    f = fn_error(u)
    return math.exp(2.0 * exponent_error) * (1.0 + f) * (1.0 + 2.0 * u) / ((1.0 - f) * (1.0 - gamma(n - 1, u))) - 1.0


def kl_bernoulli(a: float, p: float) -> float:
    """kl(a‖p) = a log(a/p) + (1 − a) log((1 − a)/(1 − p)): Chernoff's exponent for a mean of Bernoulli(≤ p) above a."""
    first = 0.0 if a == 0 else a * math.log(a / p)
    second = 0.0 if a == 1 else (1 - a) * math.log((1 - a) / (1 - p))
    return first + second


def chernoff_level(p: float, n: int, budget: float) -> float:
    """The smallest a ≥ p with n·kl(a‖p) ≥ ``budget``: a mean of n negatively associated indicators with means ≤ p
    exceeds it with probability at most e^{−budget}. 1 when even a = 1 falls short (the bound then says nothing)."""
    if p <= 0.0:
        return 0.0
    if p >= 1.0 or -n * math.log(p) < budget:
        return 1.0
    lo, hi = p, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if n * kl_bernoulli(mid, p) >= budget:
            hi = mid
        else:
            lo = mid
    return hi


__all__ = [
    "CheckResult",
    "LessonCheckError",
    "chernoff_level",
    "kl_bernoulli",
    "require",
    "share",
    "softmax_relative",
]
