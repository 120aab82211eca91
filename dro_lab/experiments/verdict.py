"""Whether a paper's claim held in our runs: the one verdict rule of the course, and its number formatting.

A claim is a sign: "method A beats method B on metric M". The evidence is the per-seed differences
``A − B`` of paired runs (the same data draw, initialisation and batch order for both methods).
:func:`judge` turns them into one of three words:

* ``"held"``: the mean difference is more than two standard errors above 0 **and** A wins in a majority of the
  seeds;
* ``"did not hold"``: the same, the other way round;
* ``"not resolved"``: anything else, and always with fewer than three seeds (a smoke run draws no verdict).

Lessons report the word beside the numbers it came from (:func:`mean_sd_text`), never a word alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from .._validation import check_bool, check_int, check_number

__all__ = ["VERDICTS", "Verdict", "judge", "combine", "mean_sd_text"]

#: The three possible verdicts.
VERDICTS = ("held", "did not hold", "not resolved")


class Verdict(NamedTuple):
    """What :func:`judge` says: the word, the mean paired difference, its standard error and the seeds won."""

    status: str
    mean: float
    se: float
    wins: int


def judge(diffs, *, larger_is_claim: bool = True, min_seeds: int = 3) -> Verdict:
    """The verdict on a claim from paired per-seed differences (the claim: the difference is > 0).

    Args:
        diffs: one difference per seed, ``A − B`` (a sequence or array of finite numbers).
        larger_is_claim: ``False`` when the claim is that the difference is *negative* (a cost, an error).
        min_seeds: below this many seeds the verdict is ``"not resolved"`` whatever the numbers.

    Returns:
        :class:`Verdict` ``(status, mean, se, wins)``; ``mean`` and ``wins`` in the claim's direction, ``se``
        the standard error of the mean (``inf`` for one seed).
    """
    check_bool(larger_is_claim, "larger_is_claim")
    check_int(min_seeds, "min_seeds", low=2)
    d = np.asarray(diffs, dtype=float).reshape(-1)
    if d.size == 0:
        raise ValueError("diffs is empty: need one paired difference per seed")
    for i, v in enumerate(d):
        check_number(float(v), f"diffs[{i}]")
    d = d if larger_is_claim else -d
    n = d.size
    mean = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    wins = int((d > 0).sum())
    if n < min_seeds:
        return Verdict("not resolved", mean, se, wins)
    if mean > 2 * se and wins > n / 2:
        return Verdict("held", mean, se, wins)
    if mean < -2 * se and wins < n / 2:
        return Verdict("did not hold", mean, se, wins)
    return Verdict("not resolved", mean, se, wins)


def combine(statuses: Iterable[str]) -> str:
    """A claim over several comparisons: ``"held"`` only if every one held, ``"did not hold"`` if any did not."""
    statuses = list(statuses)
    unknown = [s for s in statuses if s not in VERDICTS]
    if unknown or not statuses:
        raise ValueError(f"statuses must be a non-empty list of {VERDICTS}, got {statuses!r}")
    if "did not hold" in statuses:
        return "did not hold"
    return "held" if all(s == "held" for s in statuses) else "not resolved"


def mean_sd_text(values, digits: int = 3, *, scale: float = 1.0) -> str:
    """``"0.812 ± 0.034"``: the mean and the sample standard deviation over seeds (the mean alone for one seed).

    ``scale=100`` shows fractions as percentages; ``"–"`` stands for a missing (NaN) value.
    """
    check_int(digits, "digits", low=0)
    a = np.asarray(values, dtype=float).reshape(-1) * check_number(scale, "scale")
    if a.size == 0 or np.isnan(a).any():
        return "–"
    return f"{a.mean():.{digits}f} ± {a.std(ddof=1):.{digits}f}" if a.size > 1 else f"{a.mean():.{digits}f}"
