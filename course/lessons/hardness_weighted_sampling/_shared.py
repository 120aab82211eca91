"""What the checks of lesson 02 share: the two divergences, their printed names, the failure probability."""

from __future__ import annotations

from dro_lab._validation import check_number

DIVERGENCES = ("kl", "chi2")
NAMES = {"kl": "KL", "chi2": "χ²"}
DELTA = 1e-6  # the failure probability of every Monte-Carlo check of the lesson


def check_beta(beta) -> float:
    """β > 0, finite (every β the lesson's slider allows)."""
    return check_number(beta, "beta", low=0.0, low_open=True)


def distinct_betas(*betas) -> tuple[float, ...]:
    """The β of a check table, each once and in increasing order: the lesson's ``beta`` may equal one of the fixed
    β beside it (β = 1), and a table must not print its row twice."""
    return tuple(sorted({check_beta(b) for b in betas}))
