"""The capstone's read-out (lesson 07): the methods, the results table and what held, as Markdown.

:func:`run_comparison` gives one row per method × seed; :class:`ComparisonReport` turns them into what the lesson
shows, with the text beside every number honest about what it can carry:

* a run on the smoke preset or with fewer than three paired seeds is **an illustration**
  (:func:`is_illustration_run`, the rule of :func:`dro_course.beside.is_illustration`): its table and its
  narrative give the measured means and paired differences and say that no verdict is drawn;
* otherwise every comparison with ERM is judged from the paired per-seed differences by the course's one rule,
  :func:`judge` (the 95 % Student-t interval of the mean difference: "held", "did not hold", "not resolved"),
  and the word is shown beside its interval.

The claims are the capstone's three questions: does a method beat ERM on the worst group (paired differences
of worst-group accuracy), what does it cost in average accuracy, and in time per epoch; plus one across
families: do the methods told the groups beat those that find the hard examples on their own?
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

from dro_course.lessons.comparison.study import METHODS, _check_rows, pareto_front, summarise
from dro_lab._validation import check_int
from dro_lab.experiments.verdict import Verdict, judge, mean_sd_text

__all__ = ["ComparisonReport", "comparison_methods", "is_illustration_run", "methods_markdown"]


#: The lesson each method of :data:`METHODS` comes from (the methods table's "lesson" column).
LESSON_OF_METHOD: dict[str, str] = {
    "ERM": "01_dro_foundations",
    "Static weights": "04_group_dro_also",
    "Upsampling": "04_group_dro_also",
    "KL-DRO": "01_dro_foundations",
    "CVaR": "01_dro_foundations",
    "HWS": "02_hardness_weighted_sampling",
    "IS (grad norm)": "03_importance_sampling",
    "Online group DRO": "04_group_dro_also",
    "ALSO": "04_group_dro_also",
    "AT": "05_adversarial_done",
    "DONE": "05_adversarial_done",
    "LS": "06_label_smoothing_dro",
    "GI-LS": "06_label_smoothing_dro",
}


def is_illustration_run(preset: str | None, n_seeds: int, *, min_seeds: int = 3) -> bool:
    """True when no verdict may be drawn from a run: the smoke preset, or fewer than ``min_seeds`` paired seeds
    (the rule of :func:`dro_course.beside.is_illustration`, for runs that are not an ExperimentResult)."""
    if preset is not None and not isinstance(preset, str):
        raise TypeError(f"preset must be a preset name (str) or None, got {type(preset).__name__}")
    n_seeds = check_int(n_seeds, "n_seeds", low=1)
    min_seeds = check_int(min_seeds, "min_seeds", low=2)
    return preset == "smoke" or n_seeds < min_seeds


def comparison_methods(methods: Sequence[str] | None, *, reference: str = "ERM") -> list[str]:
    """The method names a lesson compares: every method of :data:`METHODS` for ``None``, else ``methods``,
    checked: known names, no repeats, and ``reference`` (the method every other is compared with) among them."""
    names = list(METHODS) if methods is None else methods
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise TypeError(f"methods must be None or a list of method names, got {type(methods).__name__}")
    names = list(names)
    unknown = [m for m in names if m not in METHODS]
    if unknown:
        raise ValueError(f"Invalid parameter methods={methods!r}: unknown {unknown}; available: {list(METHODS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"Invalid parameter methods={methods!r}: a method is named twice")
    if reference not in names:
        raise ValueError(
            f"Invalid parameter methods={methods!r}: expected a list that includes {reference!r} "
            "(the reference of every comparison)"
        )
    return names


def methods_markdown(methods: Sequence[str], knobs: Mapping) -> str:
    """A Markdown table of ``methods``: the lesson each comes from, its knob in the paper's symbols, the knob's
    value in ``knobs`` (the keyword arguments given to :func:`run_comparison`), what it does and what it knows of
    the groups (:data:`FAMILIES`)."""
    if not isinstance(knobs, Mapping):
        raise TypeError(f"knobs must be a dict of run_comparison's knobs, got {type(knobs).__name__}")
    if isinstance(methods, str) or not isinstance(methods, Sequence):
        raise TypeError(f"methods must be a list of method names, got {type(methods).__name__}")
    names = list(methods)
    unknown = [m for m in names if m not in METHODS]
    if unknown or not names:
        raise ValueError(f"methods must name methods of METHODS, got {unknown or names}; available: {list(METHODS)}")
    lines = ["| method | lesson | symbol | this run | what it does | groups |", "|---|---|---|---|---|---|"]
    for name in names:
        spec = METHODS[name]
        try:
            value = spec.knob(knobs) or "—"
        except KeyError as exc:
            raise ValueError(f"knobs lacks {exc.args[0]!r}, the knob of {name}") from None
        family = {"groups": "told", "hard examples": "not told", "baseline": "not told (baseline)"}[spec.family]
        lesson = LESSON_OF_METHOD.get(name, "—").split("_")[0]
        lines.append(f"| **{name}** | {lesson} | {spec.symbol} | {value} | {_cell(spec.description)} | {family} |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _points(x: float) -> str:
    return f"{round(x * 100, 1) + 0.0:+.1f} points"  # + 0.0: no "-0.0"


class ComparisonReport:
    """What a comparison showed, for the lesson: its figure's title, its table, its narrative and its records.

    Args:
        rows: :func:`run_comparison`'s rows (every method with the same seeds; ``reference`` among them).
        preset: the preset the run used (``"smoke"`` makes it an illustration whatever the seeds), or None.
        reference: the method every other is compared with.
        min_seeds: fewer paired seeds than this make the run an illustration (and :func:`judge` needs as many).

    Attributes:
        summary, front: :func:`summarise` and :func:`pareto_front` of the rows.
        seeds, epochs: the paired seeds and the epochs of the runs.
        illustration: True when no verdict is drawn (:func:`is_illustration_run`).
        worst_group, average: method → its paired per-seed differences to ``reference`` (sorted by seed).
        verdicts: method → :class:`Verdict` on "beats ``reference`` on the worst group" (empty for an
            illustration).
    """

    def __init__(self, rows, *, preset: str | None, reference: str = "ERM", min_seeds: int = 3):
        rows = _check_rows(rows)
        if not isinstance(reference, str):
            raise TypeError(f"reference must be a method name (str), got {type(reference).__name__}")
        self.rows, self.preset, self.reference = rows, preset, reference
        self.table_by = _by_method_and_seed(rows, reference)
        self.seeds = sorted(self.table_by[reference])
        self.illustration = is_illustration_run(preset, len(self.seeds), min_seeds=min_seeds)
        self.min_seeds = min_seeds
        self.summary = summarise(rows, reference=reference)
        self.front = pareto_front(self.summary)
        self.epochs = sorted({int(r.get("epochs", 0)) for r in rows})
        self.worst_group = self._differences("worst_group_acc")
        self.average = self._differences("avg_acc")
        self.verdicts: dict[str, Verdict] = (
            {} if self.illustration else {m: judge(d, min_seeds=min_seeds) for m, d in self.worst_group.items()}
        )

    # ------------------------------------------------------------------ numbers
    def _differences(self, metric: str) -> dict[str, np.ndarray]:
        ref = self.table_by[self.reference]
        return {
            m: np.array([by_seed[s][metric] - ref[s][metric] for s in self.seeds], dtype=float)
            for m, by_seed in self.table_by.items()
            if m != self.reference
        }

    @property
    def n_seeds(self) -> int:
        return len(self.seeds)

    def _entry(self, method: str) -> dict:
        return next(e for e in self.summary if e["method"] == method)

    def _family(self, family: str) -> list[str]:
        out = []
        for m in self.table_by:
            row = next(r for r in self.rows if r["method"] == m)
            found = row.get("family") or (METHODS[m].family if m in METHODS else "baseline")
            if found == family and m != self.reference:
                out.append(m)
        return out

    def family_differences(self) -> tuple[list[str], list[str], np.ndarray | None]:
        """The methods told the groups, those that find hard examples on their own, and per seed the mean
        worst-group accuracy of the first minus that of the second (None when a family did not run)."""
        told, finds = self._family("groups"), self._family("hard examples")
        if not told or not finds:
            return told, finds, None
        d = np.mean([self.worst_group[m] for m in told], axis=0) - np.mean([self.worst_group[m] for m in finds], 0)
        return told, finds, d

    # ------------------------------------------------------------------ text
    def _seeds_text(self) -> str:
        return f"{self.n_seeds} paired seed" + ("s" if self.n_seeds != 1 else "")

    def title(self) -> str:
        """The figure's title: methods, seeds, epochs, the preset and, for an illustration, that it is one."""
        epochs = "/".join(str(e) for e in self.epochs)
        what = f"{self.preset} preset, " if self.preset else ""
        what += "an illustration" if self.illustration else "judged"
        return f"{len(self.summary)} methods × {self._seeds_text()}, {epochs} epochs ({what})"

    def heading(self) -> str:
        """One paragraph on what the numbers can carry: an illustration (and why), or the rule they are judged by."""
        if not self.illustration:
            what = f"The {self.preset} preset" if self.preset else "This run"
            return (
                f"**{what}, {self._seeds_text()}**: each method's worst-group change is judged "
                f"against {self.reference} by the course's rule — the 95 % Student-t interval of the paired per-seed "
                "differences: *held* when it lies above 0, *did not hold* when below, otherwise *not resolved*."
            )
        if self.n_seeds >= 2:
            t = float(stats.t.ppf(0.975, self.n_seeds - 1))
            width = f"with {self.n_seeds} seeds the 95 % interval reaches ± {t:.1f} standard errors"
        else:
            width = "one seed has no interval at all"
        if self.preset == "smoke":
            width = f"the smoke preset trains briefly, and {width}"
        return (
            f"**An illustration, not a verdict** ({self.preset or 'this'} preset, {self._seeds_text()}): the numbers "
            f"show the comparison at work, but no verdict is drawn from them — {width}. Run with `-p preset full` "
            f"for a run whose verdicts can be read (at least {self.min_seeds} seeds)."
        )

    def table(self) -> str:
        """The heading, then one row per method: accuracies (mean ± sd over seeds, in %), the worst-group change
        to the reference (a verdict with its interval, or for an illustration the paired mean and the seeds
        ahead), the cost per epoch and its ratio to the reference's, and whether it is on the Pareto front."""
        change = "worst-group change vs {ref}, points " + (
            "(paired mean, seeds ahead; no verdict)" if self.illustration else "(verdict, 95 % interval)"
        )
        lines = [
            self.heading(),
            "",
            f"| method | knob | average acc. % | worst-group acc. % | {change.format(ref=self.reference)} | "
            f"ms / epoch | cost × {self.reference} | on the front |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for e in self.summary:
            m = e["method"]
            by_seed = self.table_by[m]
            avg = mean_sd_text([by_seed[s]["avg_acc"] for s in self.seeds], 1, scale=100)
            wg = mean_sd_text([by_seed[s]["worst_group_acc"] for s in self.seeds], 1, scale=100)
            cost = e["cost_vs_reference"]
            lines.append(
                f"| **{m}** | {_cell(e.get('knob') or '—')} | {avg} | {wg} | {self._change_text(m)} | "
                f"{e['seconds_per_epoch'] * 1e3:.1f} | {'—' if math.isnan(cost) else f'{cost:.2f}'} | "
                f"{'✓' if m in self.front else ''} |"
            )
        return "\n".join(lines)

    def _change_text(self, method: str) -> str:
        if method == self.reference:
            return "—"
        if method in self.verdicts:
            return self.verdicts[method].text(1, scale=100)
        d = self.worst_group[method]
        return f"{d.mean() * 100 + 0.0:+.1f} ({int((d > 0).sum())} of {d.size} ahead)"

    def narrative(self) -> str:
        """What held, as Markdown bullets computed from the rows: verdicts through :func:`judge` only, or, for an
        illustration, the measured numbers of this run with no verdict drawn."""
        erm = self._entry(self.reference)
        epochs = "/".join(str(e) for e in self.epochs)
        lines = [
            "**What this run shows** (an illustration: no verdict)" if self.illustration else "**What held**",
            "",
            f"* **{self.reference}** reached {erm['avg_acc']:.1%} average and {erm['worst_group_acc']:.1%} "
            f"worst-group accuracy ({self._seeds_text()}, {epochs} epochs).",
        ]
        lines += self._verdict_lines() if not self.illustration else []
        lines += [self._best_line(), self._front_line(), self._cost_line()]
        family = self._family_line()
        lines += [family] if family else []
        if self.illustration:
            lines.append(
                f"* **No verdict:** every difference above is a mean over {self._seeds_text()} of "
                f"{'a smoke' if self.preset == 'smoke' else 'an'} run; `-p preset full` judges them."
            )
        return "\n".join(lines)

    def _verdict_lines(self) -> list[str]:
        lines = []
        for word, heading in (
            ("held", f"Beat {self.reference} on the worst group (held)"),
            ("did not hold", f"Below {self.reference} on the worst group (the claim did not hold)"),
        ):
            ms = [m for m, v in self.verdicts.items() if v.verdict == word]
            ms.sort(key=lambda m: -self.verdicts[m].mean)
            parts = [
                f"{m} ({self.verdicts[m].text(1, scale=100, unit=' points')}; average "
                f"{_points(float(self.average[m].mean()))}, ×{self._entry(m)['cost_vs_reference']:.1f} time)"
                for m in ms
            ]
            if parts:
                lines.append(f"* **{heading}:** " + "; ".join(parts) + ".")
        if not any(v.verdict == "held" for v in self.verdicts.values()):
            lines.append(f"* **No method beat {self.reference} on the worst group** by the verdict rule.")
        unresolved = [m for m, v in self.verdicts.items() if v.verdict == "not resolved"]
        if unresolved:
            lines.append("* **Not resolved** (the interval contains 0): " + ", ".join(unresolved) + ".")
        return lines

    def _best_line(self) -> str:
        best = max(self.summary, key=lambda e: e["worst_group_acc"])
        m = best["method"]
        if m == self.reference:
            return f"* **Highest worst-group accuracy:** {self.reference} itself ({best['worst_group_acc']:.1%})."
        gain, avg = float(self.worst_group[m].mean()), float(self.average[m].mean())
        change = (
            self.verdicts[m].text(1, scale=100, unit=" points")
            if m in self.verdicts
            else f"{_points(gain)} over {self.reference} as a paired mean"
        )
        return (
            f"* **Highest worst-group accuracy:** {m} ({best['worst_group_acc']:.1%}; {change}), at {_points(avg)} "
            f"of average accuracy and ×{best['cost_vs_reference']:.2f} {self.reference}'s time per epoch."
        )

    def _front_line(self) -> str:
        erm = self._entry(self.reference)
        on = self.reference in self.front
        dominating = [
            e["method"]
            for e in self.summary
            if e["method"] != self.reference
            and e["avg_acc"] >= erm["avg_acc"]
            and e["worst_group_acc"] >= erm["worst_group_acc"]
        ]
        return f"* **Pareto front** (of the mean accuracies): {', '.join(self.front)}. {self.reference} is " + (
            "on it." if on else f"not on it (dominated by {', '.join(dominating)})."
        )

    def _cost_line(self) -> str:
        dear = max(self.summary, key=lambda e: e["cost_vs_reference"])
        cheap = min((self._entry(m) for m in self.front), key=lambda e: e["cost_vs_reference"])
        gain = dear["worst_group_acc"] - self._entry(self.reference)["worst_group_acc"]
        return (
            f"* **Cost:** the dearest method, {dear['method']}, took ×{dear['cost_vs_reference']:.1f} "
            f"{self.reference}'s time per epoch for {_points(gain)} of worst-group accuracy; the cheapest on the "
            f"front, {cheap['method']}, took ×{cheap['cost_vs_reference']:.2f}."
        )

    def _family_line(self) -> str | None:
        told, finds, d = self.family_differences()
        if d is None:
            return None
        head = (
            f"* **Knowing the groups:** do the methods told the groups ({', '.join(told)}) beat those that find the "
            f"hard examples on their own ({', '.join(finds)}) on the worst group? Their mean accuracies, seed by "
            "seed: "
        )
        if self.illustration:
            return head + f"{_points(float(d.mean()))} as a paired mean (no verdict)."
        v = judge(d, min_seeds=self.min_seeds)
        meaning = {
            "held": "group labels were worth more than robustness to the worst samples here.",
            "did not hold": "robustness to the worst samples did better than knowing the groups here.",
            "not resolved": "the seeds cannot tell the two families apart here.",
            "not judged": "too few paired seeds for a verdict.",
        }[v.verdict]
        return head + f"{v.text(1, scale=100, unit=' points')}: {meaning}"

    # ------------------------------------------------------------------ records
    def records(self) -> dict:
        """The numbers a batch run records (``dro_course.record``): the reference's accuracies, the best
        worst-group method and its changes, the costs, the front, the verdicts and every method's means."""
        erm = self._entry(self.reference)
        best = max(self.summary, key=lambda e: e["worst_group_acc"])
        dear = max(self.summary, key=lambda e: e["cost_vs_reference"])
        out = {
            "illustration": self.illustration,
            "n_seeds": self.n_seeds,
            "erm_avg_acc": erm["avg_acc"],
            "erm_worst_group_acc": erm["worst_group_acc"],
            "best_method_worst_group": best["method"],
            "worst_group_gain_best_points": (best["worst_group_acc"] - erm["worst_group_acc"]) * 100,
            "avg_change_best_points": (best["avg_acc"] - erm["avg_acc"]) * 100,
            "cost_ratio_max": dear["cost_vs_reference"],
            "cost_ratio_max_method": dear["method"],
            "pareto_front": list(self.front),
            "methods_beating_erm_worst_group": [m for m, v in self.verdicts.items() if v.verdict == "held"],
            "train_seconds": float(sum(float(r.get("seconds_total", 0.0)) for r in self.rows)),
        }
        for e in self.summary:
            key = e["method"].lower().replace(" ", "_").replace("(", "").replace(")", "").replace("-", "_")
            out[f"{key}_worst_group_acc"] = e["worst_group_acc"]
            out[f"{key}_avg_acc"] = e["avg_acc"]
            out[f"{key}_cost_ratio"] = e["cost_vs_reference"]
        return out


def _by_method_and_seed(rows: list[dict], reference: str) -> dict[str, dict[int, dict]]:
    """method → seed → row, every method with the reference's seeds (a comparison is paired)."""
    table: dict[str, dict[int, dict]] = {}
    for r in rows:
        by_seed = table.setdefault(r["method"], {})
        if int(r["seed"]) in by_seed:
            raise ValueError(f"rows hold {r['method']!r} twice with seed {r['seed']}")
        by_seed[int(r["seed"])] = r
    if reference not in table:
        raise ValueError(f"reference {reference!r} was not run; methods in rows: {list(table)}")
    seeds = set(table[reference])
    unpaired = [m for m, by_seed in table.items() if set(by_seed) != seeds]
    if unpaired:
        raise ValueError(f"rows: {unpaired} did not run with the same seeds as {reference!r} ({sorted(seeds)})")
    return table
