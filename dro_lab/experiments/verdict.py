"""Whether a paper's claim held in our runs: the one verdict rule of the course, and its number formatting.

A claim is a sign: "method A beats method B on metric M" (by more than a threshold). The evidence is the
per-seed differences of paired runs (the same data draw, initialisation and batch order for both methods),
**oriented so that a positive difference supports the claim**:

``A − B`` where higher is better (an accuracy), ``B − A`` for a cost or an error, ``log(B / A)`` for a
ratio ("2× faster", with the threshold ``log 2``).

:func:`judge` turns them into one of three words, from the two-sided Student-t confidence interval of their
mean:

* ``"held"``: the interval's lower bound is above the threshold;
* ``"did not hold"``: its upper bound is below the threshold;
* ``"not resolved"``: the interval contains the threshold — or every difference is the same non-zero number, so
  there is no spread to build an interval from (``Verdict.note`` says ``"no spread"``);
* ``"identical"``: every difference is exactly 0 (the two arms made the same runs: one comparison, not a finding);
* ``"not judged"``: there are fewer than ``min_seeds`` differences (a smoke run draws no verdict), whatever the
  interval.

Beside that word, a claim gets two more readings. **Against the paper's effect** (:func:`effect_verdict`): the
interval "reached" the paper's number (its lower end is above it), is "consistent with" it (contains it) or falls
"short of" it. **Holm-adjusted** (:func:`holm`): each verdict carries the p-value of its test (``Verdict.p_value``,
the two-sided t-test of "the mean difference is the threshold", exactly the interval rule at ``1 − confidence``);
over a paper's family of claims Holm's step-down correction adjusts them (:func:`holm`; a result's verdicts carry
both, :meth:`dro_lab.experiments.ExperimentResult.verdicts`), so that the chance of any false "held" or "did not
hold" in the family stays at 5 %; quote the adjusted word.

:func:`judge` takes finite numbers only. Paired runs where a seed is missing or not a finite number (a run that
diverged) go through :func:`judge_seeds`: it sets those seeds aside, judges the others, and its verdict names each
seed set aside and why ("judged on 4 of 5 seeds: seed 3 diverged (HWS β=10: nan)"); nothing is dropped silently. A
claim left with fewer than ``min_seeds`` paired seeds is "not judged". A claim stated as a band ("2.0–2.4×") is two
one-sided claims: :func:`judge_band` ("held" when the whole interval lies inside the band). Report the word beside
the interval it came from (:meth:`Verdict.text`), never a word alone.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

import numpy as np
from scipy import stats

from .._validation import check_int, check_number

__all__ = [
    "VERDICTS",
    "EFFECT_VERDICTS",
    "Verdict",
    "judge",
    "judge_seeds",
    "pair_seeds",
    "judge_band",
    "effect_verdict",
    "holm",
    "combine",
    "mean_sd_text",
]

#: The possible verdicts: the three words of the interval rule, "identical" (every difference 0) and "not judged"
#: (too few paired seeds).
VERDICTS = ("held", "did not hold", "not resolved", "identical", "not judged")
#: How an interval sits against the paper's effect size (:func:`effect_verdict`).
EFFECT_VERDICTS = ("reached", "consistent with", "short of")


class Verdict(NamedTuple):
    """What :func:`judge` (or :func:`judge_seeds`) says.

    Attributes:
        verdict: one of :data:`VERDICTS`.
        interval: ``(low, high)``, the t-interval of the mean difference (``(-inf, inf)`` for one seed, NaN for
            none).
        mean: the mean of the differences.
        n: the number of differences (paired seeds) judged.
        wins: how many differences are above the threshold.
        threshold: the threshold the interval was compared with.
        confidence: the interval's confidence level.
        min_seeds: the fewest differences a verdict needs.
        of: the seeds the claim had, those set aside included (``None``: ``n``).
        set_aside: one note per seed set aside, ``"seed 3 diverged (HWS β=10: nan)"``, ``"seed 4 missing (ERM)"``.
        p_value: the two-sided p-value of the test the word comes from (NaN without a spread or below
            ``min_seeds``); ``p_value < 1 − confidence`` exactly when the word is "held" or "did not hold".
        note: ``"no spread"`` when every difference is the same non-zero number, else ``""``.
    """

    verdict: str
    interval: tuple[float, float]
    mean: float
    n: int
    wins: int
    threshold: float
    confidence: float
    min_seeds: int = 3
    of: int | None = None
    set_aside: tuple[str, ...] = ()
    p_value: float = math.nan
    note: str = ""

    @property
    def has_interval(self) -> bool:
        """False for one seed (the interval is ``(-inf, inf)``) or a bound that is not a finite number."""
        return self.n > 1 and all(math.isfinite(float(v)) for v in self.interval)

    def text(self, digits: int = 2, *, scale: float = 1.0, unit: str = "") -> str:
        """``"held: +3.10 (95 % interval 1.20 to 5.00, 5 seeds)"``; ``scale=100`` shows fractions as points.

        Without an interval (one seed: ``(-inf, inf)``; or a bound that is not a finite number) the text says
        ``"(1 seed: no interval)"``, never ``± inf``. A verdict "not judged" says how many seeds it needs, and seeds
        set aside are named after it: ``"...; judged on 4 of 5 seeds: seed 3 diverged (HWS: nan)"``.
        """
        check_int(digits, "digits", low=0)
        scale = check_number(scale, "scale")
        low, high = sorted(v * scale for v in self.interval)  # a negative scale swaps the bounds
        seeds = f"{self.n} seed" + ("s" if self.n != 1 else "")
        if self.n == 0:
            out = f"{self.verdict}: no paired seeds"
        elif self.note == "no spread" or self.verdict == "identical":
            what = "every difference 0" if self.verdict == "identical" else "every difference the same: no spread"
            out = f"{self.verdict}: {self.mean * scale:+.{digits}f}{unit} ({seeds}, {what})"
        elif not self.has_interval or not (math.isfinite(low) and math.isfinite(high)):
            out = f"{self.verdict}: {self.mean * scale:+.{digits}f}{unit} ({seeds}: no interval)"
        else:
            pct = f"{self.confidence * 100:g} %"
            out = (
                f"{self.verdict}: {self.mean * scale:+.{digits}f}{unit} "
                f"({pct} interval {low:+.{digits}f} to {high:+.{digits}f}{unit}, {seeds})"
            )
        if self.verdict == "not judged":
            out += f"; a verdict needs {self.min_seeds} paired seeds"
        if self.set_aside:
            total = self.of if self.of is not None else self.n
            on = (
                f"judged on {self.n} of {total} seeds"
                if self.verdict != "not judged"
                else f"only {self.n} of {total} paired"
            )
            out += f"; {on}: {', '.join(self.set_aside)}"
        return out


def _differences(differences) -> np.ndarray:
    """``differences`` as a 1-D float array of finite numbers, or the ``TypeError`` / ``ValueError`` saying why not."""
    if isinstance(differences, (str, bytes, Mapping, set, frozenset)) or not hasattr(differences, "__len__"):
        raise TypeError(
            f"differences must be a 1-D sequence of numbers (one per seed), got {type(differences).__name__}"
        )
    try:
        d = np.asarray(differences)
    except ValueError:  # a ragged nesting
        raise ValueError("differences must be a 1-D sequence of numbers (one per seed), got a nested one") from None
    if d.ndim != 1:
        raise ValueError(f"differences must be 1-D (one paired difference per seed), got shape {d.shape}")
    if d.size == 0:
        raise ValueError("differences is empty: need one paired difference per seed")
    if d.dtype.kind not in "iuf":
        odd = next((v for v in d.tolist() if isinstance(v, bool) or not isinstance(v, numbers.Real)), d.tolist()[0])
        raise TypeError(f"differences must hold numbers, got {type(odd).__name__} {odd!r}")
    d = d.astype(float)
    bad = np.flatnonzero(~np.isfinite(d))
    if bad.size:
        raise ValueError(
            f"differences[{int(bad[0])}] is {d[bad[0]]}: judge takes finite numbers only; a seed that is missing "
            "or diverged goes to judge_seeds, which sets it aside and names it"
        )
    return d


def judge(differences, *, threshold: float = 0.0, min_seeds: int = 3, confidence: float = 0.95) -> Verdict:
    """The verdict on a claim from its paired per-seed differences (oriented: positive supports the claim).

    Args:
        differences: one difference per seed (a 1-D sequence or array of finite numbers), oriented so that a
            positive value supports the claim (see the module notes). Anything else (a nested list, text, NaN,
            inf, nothing) raises ``TypeError`` / ``ValueError``; :func:`judge_seeds` takes seeds that are missing.
        threshold: the claim is "the mean difference is above ``threshold``" (default 0: "better").
        min_seeds: below this many differences the verdict is ``"not judged"`` whatever the numbers.
        confidence: the level of the two-sided t-interval, in (0, 1).

    Returns:
        :class:`Verdict`: ``.verdict`` and ``.interval`` (plus the mean, the number of seeds and the wins).

    Example:
        >>> verdict = judge([0.02, 0.03, 0.01, 0.04])  # four seeds, each better
        >>> verdict.verdict, [round(end, 3) for end in verdict.interval]
        ('held', [0.004, 0.046])
    """
    threshold = check_number(threshold, "threshold")
    check_int(min_seeds, "min_seeds", low=2)
    confidence = check_number(confidence, "confidence", low=0, high=1, low_open=True, high_open=True)
    d = _differences(differences)
    n, mean = d.size, float(d.mean())
    wins = int((d > threshold).sum())
    if n >= min_seeds and np.all(d == d[0]):  # no spread: an interval of width 0 would claim a certainty it lacks
        verdict, note = ("identical", "") if d[0] == 0 else ("not resolved", "no spread")
        return Verdict(verdict, (mean, mean), mean, n, wins, threshold, confidence, min_seeds, n, (), math.nan, note)
    p_value = math.nan
    if n > 1:
        se = float(d.std(ddof=1)) / math.sqrt(n)
        half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * se
        interval = (mean - half, mean + half)
        p_value = float(2 * stats.t.sf(abs(mean - threshold) / se, n - 1)) if se > 0 else math.nan
    else:
        interval = (-math.inf, math.inf)
    verdict = "not judged" if n < min_seeds else "not resolved"
    if n >= min_seeds and interval[0] > threshold:
        verdict = "held"
    elif n >= min_seeds and interval[1] < threshold:
        verdict = "did not hold"
    p_value = p_value if n >= min_seeds else math.nan
    return Verdict(verdict, interval, mean, n, wins, threshold, confidence, min_seeds, n, (), p_value)


def judge_seeds(
    by_seed: Mapping[int, float | None],
    *,
    reasons: Mapping[int, str] | None = None,
    threshold: float = 0.0,
    band: tuple[float, float] | None = None,
    min_seeds: int = 3,
    confidence: float = 0.95,
) -> Verdict:
    """:func:`judge` (or :func:`judge_band` with ``band=(low, high)``) on paired per-seed differences of which some may
    be missing or not finite: those seeds are set
    aside and named in the verdict (``Verdict.set_aside``, and its text), never dropped silently.

    Args:
        by_seed: seed → its oriented difference; ``None`` (or NaN) for a seed with no paired runs, NaN or ±inf for
            one whose runs diverged.
        reasons: seed → why it is set aside (``"diverged (HWS β=10: nan)"``, ``"missing (ERM)"``); a seed set aside
            without one is said to be missing (``None``) or diverged (``"diverged (nan)"``).
        threshold, min_seeds, confidence: as for :func:`judge`; fewer than ``min_seeds`` seeds left is "not judged".
        band: ``(low, high)`` for a claim stated as a band (then ``threshold`` is ignored): :func:`judge_band`.

    Returns:
        :class:`Verdict` on the finite differences, with ``of`` (all the seeds) and ``set_aside``.
    """
    if not isinstance(by_seed, Mapping):
        raise TypeError(f"by_seed must be a mapping seed -> difference, got {type(by_seed).__name__}")
    if not by_seed:
        raise ValueError("by_seed is empty: need one paired difference per seed")
    if reasons is not None and not isinstance(reasons, Mapping):
        raise TypeError(f"reasons must be a mapping seed -> text or None, got {type(reasons).__name__}")
    threshold = check_number(threshold, "threshold")
    check_int(min_seeds, "min_seeds", low=2)
    confidence = check_number(confidence, "confidence", low=0, high=1, low_open=True, high_open=True)
    kept, notes = [], []
    for seed, value in by_seed.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
            raise TypeError(f"by_seed[{seed!r}] must be a number or None, got {type(value).__name__} {value!r}")
        if value is not None and math.isfinite(value):
            kept.append(float(value))
            continue
        why = (reasons or {}).get(seed) or ("missing" if value is None else f"diverged ({float(value)})")
        notes.append(f"seed {seed} {why}")
    if not kept:
        nan = math.nan
        return Verdict(
            "not judged", (nan, nan), nan, 0, 0, threshold, confidence, min_seeds, len(by_seed), tuple(notes)
        )
    options = {"min_seeds": min_seeds, "confidence": confidence}
    v = judge_band(kept, *band, **options) if band is not None else judge(kept, threshold=threshold, **options)
    return v._replace(of=len(by_seed), set_aside=tuple(notes))


def pair_seeds(
    seeds: Iterable[int], values: Mapping[str, Mapping[int, float | None]], orient: Callable | None = None
) -> tuple[dict[int, float | None], dict[int, str]]:
    """The paired per-seed differences of two methods, and why a seed is set aside: the input of :func:`judge_seeds`.

    Args:
        seeds: the seeds the claim is judged on.
        values: two entries, the method's and then the baseline's: name → seed → value (a seed absent, or None,
            when its run is missing).
        orient: ``orient(method_value, baseline_value)`` → the difference that supports the claim when positive;
            default ``method − baseline``.

    Returns:
        ``(by_seed, reasons)``: seed → difference (None when a run is missing) and, for each seed to set aside,
        ``"missing (ERM)"`` or ``"diverged (HWS β=10: nan)"``.
    """
    if not isinstance(values, Mapping) or len(values) != 2:
        raise TypeError("values must map the method's and the baseline's names to their values per seed")
    (method, a), (baseline, b) = values.items()
    orient = orient if orient is not None else (lambda x, y: x - y)
    by_seed, reasons = {}, {}
    for seed in seeds:
        pair = {method: a.get(seed), baseline: b.get(seed)}
        missing = [name for name, v in pair.items() if v is None]
        if missing:
            by_seed[seed], reasons[seed] = None, f"missing ({', '.join(missing)})"
            continue
        d = float(orient(pair[method], pair[baseline]))
        by_seed[seed] = d
        odd = [f"{name}: {float(v)}" for name, v in pair.items() if not math.isfinite(v)]
        if odd or not math.isfinite(d):
            reasons[seed] = f"diverged ({'; '.join(odd) or f'difference {d}'})"
    return by_seed, reasons


def judge_band(differences, low: float, high: float, **options) -> Verdict:
    """A claim stated as a band, ``low < mean < high`` ("2.0–2.4× slower"): held when the whole interval lies
    inside the band, did not hold when it lies wholly outside, not resolved otherwise.

    The interval and mean are :func:`judge`'s; ``threshold`` is ``low``. The p-value is that of the reading the word
    comes from: for "inside", the larger of the two one-sided p-values (both edges must be passed), for "outside"
    the smaller, each doubled as :func:`judge`'s two-sided p-value is, so that ``p_value < 1 − confidence``
    exactly when the word is "held" or "did not hold". ``options`` go to :func:`judge`.
    """
    low, high = check_number(low, "low"), check_number(high, "high")
    if not low < high:
        raise ValueError(f"a band needs low < high, got low={low}, high={high}")
    d = _differences(differences)
    base = judge(d, threshold=low, **options)
    if base.verdict in ("not judged", "identical") or base.note:
        return base
    above_low, above_high = (judge(d, threshold=t, **options) for t in (low, high))
    if above_low.verdict == "held" and above_high.verdict == "did not hold":
        verdict = "held"
    elif above_low.verdict == "did not hold" or above_high.verdict == "held":
        verdict = "did not hold"
    else:
        verdict = "not resolved"
    t_low, t_high = ((d.mean() - t) / (d.std(ddof=1) / math.sqrt(d.size)) for t in (low, high))
    p_inside = max(stats.t.sf(t_low, d.size - 1), stats.t.cdf(t_high, d.size - 1))
    p_outside = min(stats.t.cdf(t_low, d.size - 1), stats.t.sf(t_high, d.size - 1))
    one_sided = {"held": p_inside, "did not hold": p_outside}.get(verdict, min(p_inside, p_outside))
    p = float(min(1.0, 2 * one_sided))
    return base._replace(verdict=verdict, p_value=p)


def effect_verdict(verdict: Verdict, effect: float) -> str | None:
    """How ``verdict``'s interval sits against the paper's effect size ``effect`` (in the same oriented units):
    ``"reached"`` (its lower end is above it), ``"consistent with"`` (it contains it) or ``"short of"`` (its upper end
    is below it); ``None`` when there is no interval to compare (too few seeds, no spread, one seed).

    Example:
        >>> effect_verdict(judge([0.06, 0.07, 0.08]), 0.0576)
        'consistent with'
    """
    effect = check_number(effect, "effect")
    if verdict.verdict in ("not judged", "identical") or verdict.note or not verdict.has_interval:
        return None
    low, high = verdict.interval
    return "reached" if low > effect else "short of" if high < effect else "consistent with"


def holm(p_values, alpha: float = 0.05) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979): claim ``i`` is rejected at family level ``alpha`` exactly when
    its adjusted p-value is at most ``alpha``; the chance of one or more false rejections in the family is at most
    ``alpha``, whatever the dependence between the tests. NaN (no test) stays NaN and takes no share of the family.

    Sorted ascending, the ``k``-th smallest of ``m`` p-values becomes ``max over j ≤ k of min(1, (m − j + 1) p_(j))``.

    Example:
        >>> [round(p, 3) for p in holm([0.01, 0.04, 0.03])]
        [0.03, 0.06, 0.06]
    """
    check_number(alpha, "alpha", low=0, high=1, low_open=True, high_open=True)
    p = np.asarray(p_values, dtype=float).reshape(-1)
    if np.any((p < 0) | (p > 1)):
        raise ValueError(f"p_values must lie in [0, 1] (or be NaN), got {p.tolist()}")
    tested = np.flatnonzero(~np.isnan(p))
    out = np.full(p.shape, np.nan)
    order = tested[np.argsort(p[tested], kind="stable")]
    running, m = 0.0, order.size
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * p[i]))
        out[i] = running
    return out.tolist()


def combine(statuses: Iterable[str]) -> str:
    """A claim over several comparisons: ``"held"`` only if every one held, ``"did not hold"`` if any did not;
    otherwise ``"not judged"`` if one was not judged, else ``"not resolved"``."""
    statuses = list(statuses)
    unknown = [s for s in statuses if s not in VERDICTS]
    if unknown or not statuses:
        raise ValueError(f"statuses must be a non-empty list of {VERDICTS}, got {statuses!r}")
    if "did not hold" in statuses:
        return "did not hold"
    if all(s == "held" for s in statuses):
        return "held"
    return "not judged" if "not judged" in statuses else "not resolved"


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
