"""Whether a paper's claim held in our runs: the one verdict rule of the course, and its number formatting.

A claim is a sign: "method A beats method B on metric M" (by more than a threshold). The evidence is the
per-seed differences of paired runs (the same data draw, initialisation and batch order for both methods),
**oriented so that a positive difference supports the claim**:

* ``A − B`` for a metric where higher is better (an accuracy);
* ``B − A`` for a cost or an error (seconds, a loss);
* ``log(B / A)`` (or ``log(A / B)``) for a claim stated as a ratio ("2× faster"), with the threshold
  ``log 2``.

:func:`judge` turns them into one of three words, from the two-sided Student-t confidence interval of their
mean:

* ``"held"``: the interval's lower bound is above the threshold;
* ``"did not hold"``: its upper bound is below the threshold;
* ``"not resolved"``: the interval contains the threshold, or there are fewer than ``min_seeds`` differences
  (a smoke run draws no verdict).

A claim stated as a band ("2.0–2.4×") is two one-sided claims: :func:`judge_band`. Lessons report the word
beside the interval it came from (:meth:`Verdict.text`), never a word alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
from scipy import stats

from .._validation import check_int, check_number

__all__ = ["VERDICTS", "Verdict", "judge", "judge_band", "combine", "mean_sd_text"]

#: The three possible verdicts.
VERDICTS = ("held", "did not hold", "not resolved")


class Verdict(NamedTuple):
    """What :func:`judge` says.

    Attributes:
        verdict: ``"held"``, ``"did not hold"`` or ``"not resolved"``.
        interval: ``(low, high)``, the t-interval of the mean difference (``(-inf, inf)`` for one seed).
        mean: the mean of the differences.
        n: the number of differences (seeds).
        wins: how many differences are above the threshold.
        threshold: the threshold the interval was compared with.
        confidence: the interval's confidence level.
    """

    verdict: str
    interval: tuple[float, float]
    mean: float
    n: int
    wins: int
    threshold: float
    confidence: float

    @property
    def has_interval(self) -> bool:
        """False for one seed (the interval is ``(-inf, inf)``) or a bound that is not a finite number."""
        return self.n > 1 and all(math.isfinite(float(v)) for v in self.interval)

    def text(self, digits: int = 2, *, scale: float = 1.0, unit: str = "") -> str:
        """``"held: +3.10 (95 % interval 1.20 to 5.00, 5 seeds)"``; ``scale=100`` shows fractions as points.

        Without an interval (one seed: ``(-inf, inf)``; or a bound that is not a finite number) the text says
        ``"(1 seed: no interval)"``, never ``± inf``.
        """
        check_int(digits, "digits", low=0)
        scale = check_number(scale, "scale")
        low, high = sorted(v * scale for v in self.interval)  # a negative scale swaps the bounds
        seeds = f"{self.n} seed" + ("s" if self.n != 1 else "")
        if not self.has_interval or not (math.isfinite(low) and math.isfinite(high)):
            return f"{self.verdict}: {self.mean * scale:+.{digits}f}{unit} ({seeds}: no interval)"
        pct = f"{self.confidence * 100:g} %"
        return (
            f"{self.verdict}: {self.mean * scale:+.{digits}f}{unit} "
            f"({pct} interval {low:+.{digits}f} to {high:+.{digits}f}{unit}, {seeds})"
        )


def _differences(differences) -> np.ndarray:
    d = np.asarray(differences, dtype=float).reshape(-1)
    if d.size == 0:
        raise ValueError("differences is empty: need one paired difference per seed")
    for i, v in enumerate(d):
        check_number(float(v), f"differences[{i}]")
    return d


def judge(differences, *, threshold: float = 0.0, min_seeds: int = 3, confidence: float = 0.95) -> Verdict:
    """The verdict on a claim from its paired per-seed differences (oriented: positive supports the claim).

    Args:
        differences: one difference per seed (a sequence or array of finite numbers), oriented so that a
            positive value supports the claim (see the module notes).
        threshold: the claim is "the mean difference is above ``threshold``" (default 0: "better").
        min_seeds: below this many differences the verdict is ``"not resolved"`` whatever the numbers.
        confidence: the level of the two-sided t-interval, in (0, 1).

    Returns:
        :class:`Verdict`: ``.verdict`` and ``.interval`` (plus the mean, the number of seeds and the wins).
    """
    threshold = check_number(threshold, "threshold")
    check_int(min_seeds, "min_seeds", low=2)
    confidence = check_number(confidence, "confidence", low=0, high=1, low_open=True, high_open=True)
    d = _differences(differences)
    n, mean = d.size, float(d.mean())
    if n > 1:
        se = float(d.std(ddof=1)) / math.sqrt(n)
        half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * se
        interval = (mean - half, mean + half)
    else:
        interval = (-math.inf, math.inf)
    verdict = "not resolved"
    if n >= min_seeds and interval[0] > threshold:
        verdict = "held"
    elif n >= min_seeds and interval[1] < threshold:
        verdict = "did not hold"
    wins = int((d > threshold).sum())
    return Verdict(verdict, interval, mean, n, wins, threshold, confidence)


def judge_band(differences, low: float, high: float, **options) -> str:
    """A claim stated as a band, ``low < mean < high``: two one-sided claims, combined by :func:`combine`.

    ``judge(d, threshold=low)`` for the lower edge and ``judge(-d, threshold=-high)`` for the upper one;
    ``options`` go to :func:`judge`.
    """
    low, high = check_number(low, "low"), check_number(high, "high")
    if not low < high:
        raise ValueError(f"a band needs low < high, got low={low}, high={high}")
    d = _differences(differences)
    return combine([judge(d, threshold=low, **options).verdict, judge(-d, threshold=-high, **options).verdict])


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

    ``scale=100`` shows fractions as percentages; ``"–"`` stands for a missing (NaN) value. A value of ±inf (a
    run that diverged) is shown without a spread (``"inf"``): never ``± inf`` nor ``± nan``.
    """
    check_int(digits, "digits", low=0)
    a = np.asarray(values, dtype=float).reshape(-1) * check_number(scale, "scale")
    if a.size == 0 or np.isnan(a).any():
        return "–"
    if np.isposinf(a).any() and np.isneginf(a).any():  # inf − inf: no mean
        return "–"
    mean = float(a.mean())  # ±inf when a run diverged
    if a.size == 1 or not math.isfinite(mean):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {a.std(ddof=1):.{digits}f}"
