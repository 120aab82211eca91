"""The tidy result of a paper's experiment: what was run, the tuning trials, the per-seed runs, the verdicts.

An :class:`ExperimentResult` is plain data (it saves to and loads from JSON) so a result computed on one
machine — a reference run shipped with the package — reads the same as a student's live run:

* :meth:`~ExperimentResult.rows` — one row per seed × method × epoch × metric (for figures and data frames);
* :meth:`~ExperimentResult.final` — a final metric per method, one value per seed;
* :meth:`~ExperimentResult.table` — mean ± sd per method and metric;
* :meth:`~ExperimentResult.verdicts` — each claim judged with :func:`dro_lab.experiments.judge`: against 0, against
  the paper's effect, and Holm-adjusted over the result's claims;
* :meth:`~ExperimentResult.expected_validation` — each arm's expected best validation score after k trials.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._files import RecordError, atomic_write_text, read_json_record
from .protocol import Claim
from .tuning import expected_validation_performance
from .verdict import effect_verdict, holm, judge_seeds, mean_sd_text, pair_seeds

__all__ = ["ExperimentResult", "SCHEMA_VERSION"]

#: Bumped when the JSON layout changes; :meth:`ExperimentResult.load` refuses other versions.
SCHEMA_VERSION = 1

_REQUIRED = ("experiment", "title", "paper", "dataset", "preset", "seeds", "config", "methods", "trials")
#: The fields of one run's record (``runs`` of a result, and a file of ``OUT/runs/``).
RUN_KEYS = ("seed", "method", "setting", "final", "curves", "seconds")
_TRIAL_KEYS = ("method", "setting", "score")
#: What to do about a result file that cannot be read: its runs are kept beside it, so the command rewrites it.
_LOAD_FIX = (
    "run the `dro-lab experiment` command that wrote it again (its finished runs are kept in the runs/ folder "
    "beside it and are reused), or pass --restart to run everything again"
)


@dataclass
class ExperimentResult:
    """One run of an experiment (see the module notes). Build it with :func:`run_experiment` or :meth:`load`.

    Attributes:
        experiment, title, paper: what was run (the registry name, a title, the paper's section and figure).
        dataset, preset: the data set and the preset the configuration started from.
        seeds: the paired seeds of the final runs.
        config: every setting of the run (sizes, epochs, batch size, trials, the tuning seed …).
        methods: the arm names, in table order.
        trials: one dict per tuning trial: ``method``, ``setting``, ``score`` (the validation metric).
        chosen: method → the setting its final runs used.
        runs: one dict per seed × method: ``seed``, ``method``, ``setting``, ``final`` (metric → value),
            ``curves`` (metric → one value per epoch), ``seconds``.
        claims: the experiment's claims (as dicts of :class:`Claim`'s fields).
        data: what the data function drew, per seed (sizes per class …).
        meta: how it was made: command, git commit, date, hardware, versions, threads, deterministic, jobs.
        plain: the arm that trains plainly; a claim against a baseline below it says so (``baseline_below``).
        tuning: per arm, its grid (knob → values), ``grid_size``, ``trials`` and ``coverage``
            (:func:`dro_lab.experiments.protocol.tuning_effort`); empty in results made before it was recorded.
    """

    experiment: str
    title: str
    paper: str
    dataset: str
    preset: str
    seeds: list[int]
    config: dict
    methods: list[str]
    trials: list[dict] = field(default_factory=list)
    chosen: dict = field(default_factory=dict)
    runs: list[dict] = field(default_factory=list)
    claims: list[dict] = field(default_factory=list)
    data: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    tuning: dict = field(default_factory=dict)
    plain: str | None = None

    # ------------------------------------------------------------------ reading
    def final(self, metric: str) -> dict[str, np.ndarray]:
        """method → the final ``metric`` per seed, in the order of :attr:`seeds` (NaN where a run is missing)."""
        out = {}
        for method in self.methods:
            by_seed = {r["seed"]: r["final"].get(metric, np.nan) for r in self.runs if r["method"] == method}
            if not any(metric in r["final"] for r in self.runs):
                raise ValueError(f"no final metric {metric!r}; metrics: {self.metric_names()}")
            out[method] = np.array([by_seed.get(s, np.nan) for s in self.seeds], dtype=float)
        return out

    def metric_names(self) -> list[str]:
        """The final metrics the runs recorded."""
        return sorted({k for r in self.runs for k in r["final"]})

    def curve(self, metric: str, method: str) -> np.ndarray:
        """A per-epoch ``metric`` of ``method``: an array seeds × epochs."""
        rows = [r["curves"][metric] for s in self.seeds for r in self.runs if r["seed"] == s and r["method"] == method]
        if not rows:
            raise ValueError(f"no curve {metric!r} for {method!r}")
        return np.array(rows, dtype=float)

    def rows(self) -> list[dict]:
        """The tidy long table: one dict per seed × method × epoch × metric (``epoch`` None for final metrics)."""
        out = []
        for r in self.runs:
            for metric, values in r["curves"].items():
                out += [
                    dict(seed=r["seed"], method=r["method"], epoch=e + 1, metric=metric, value=v)
                    for e, v in enumerate(values)
                ]
            out += [
                dict(seed=r["seed"], method=r["method"], epoch=None, metric=m, value=v) for m, v in r["final"].items()
            ]
        return out

    def table(self, metrics: list[str] | None = None) -> list[dict]:
        """One row per method: ``"mean ± sd"`` over seeds of each final metric — accuracies (and every metric a
        claim shows in points) in %, losses and log-ratios as they are."""
        metrics = metrics or self.metric_names()
        finals = {m: self.final(m) for m in metrics}
        scales = {m: _metric_scale(m, self.claims) for m in metrics}
        return [
            {
                "method": method,
                **{m: mean_sd_text(finals[m][method], _digits(scales[m]), scale=scales[m]) for m in metrics},
            }
            for method in self.methods
        ]

    def verdicts(self, **options) -> list[dict]:
        """Each claim judged from the paired seeds: the claim's fields plus

        * ``verdict``, ``interval``, ``mean``, ``n`` (the seeds judged), ``judged_seeds``, ``set_aside``, ``note``
          and ``p_value``: :func:`judge_seeds` on the claim's threshold, or on its ``band``;
        * ``effect_verdict``: "reached", "consistent with" or "short of" the claim's ``paper_effect`` (None without
          one, for a claim stated as a band — the band is the paper's number — or without an interval);
        * ``baseline_below``: where the baseline itself falls below the plain-training arm (:attr:`plain`) on the
          claim's metric by the same rule ("did not hold" for the baseline against it), that finding's text;
        * ``same_as``: the text of an earlier claim whose comparison this one repeats exactly (the same method
          against a baseline with the same per-seed values: arms that made identical runs are judged once);
        * ``verdict_adjusted`` and ``p_adjusted``: Holm's correction over this result's claims
          (:func:`dro_lab.experiments.holm`; a repeated comparison takes no share of the family);
        * ``verdict_text``: all of it in one line, in the claim's units.

        ``options`` go to :func:`judge_seeds` (``min_seeds``, ``confidence``). A seed whose run is missing for
        either method, or whose value is not a finite number (a run that diverged), is set aside and named in
        ``set_aside`` and in the text; a claim left with fewer than ``min_seeds`` paired seeds is "not judged"."""
        out, compared = [], {}
        for stored in self.claims:
            claim = Claim(**stored)
            c = asdict(claim)  # every field, those a file made before it existed included
            by_seed, reasons = self._paired(claim)
            v = judge_seeds(by_seed, reasons=reasons, threshold=claim.threshold, band=claim.band, **options)
            key = (claim.method, claim.metric, claim.threshold, claim.band, json.dumps(by_seed, sort_keys=True))
            # a band is the paper's number already: its verdict is the reading against it
            effect = (
                effect_verdict(v, claim.paper_effect) if claim.paper_effect is not None and not claim.band else None
            )
            out.append(
                {
                    **c,
                    "verdict": v.verdict,
                    "interval": list(v.interval),
                    "mean": v.mean,
                    "n": v.n,
                    "judged_seeds": [s for s in self.seeds if s not in reasons],
                    "set_aside": list(v.set_aside),
                    "note": v.note,
                    "p_value": v.p_value,
                    "effect_verdict": effect,
                    "same_as": compared.setdefault(key, c["text"]) if key in compared else None,
                    "baseline_below": self._below_plain(claim, **options),
                    "confidence": v.confidence,
                    "raw_text": v.text(_digits(claim.scale), scale=claim.scale, unit=claim.unit),
                }
            )
            compared.setdefault(key, c["text"])
        return adjust_rows(out)

    def _below_plain(self, claim: Claim, **options) -> str | None:
        """The text of "the baseline falls below plain training" where it does, else None."""
        if self.plain is None or self.plain in (claim.baseline, claim.method) or self.plain not in self.methods:
            return None
        if claim.band is not None:  # a cost stated as the paper's range compares two methods, not a baseline's training
            return None
        below = Claim(claim.text, claim.metric, claim.baseline, self.plain, claim.higher_is_better)
        by_seed, reasons = self._paired(below)
        v = judge_seeds(by_seed, reasons=reasons, **options)
        if v.verdict != "did not hold":
            return None
        digits = _digits(claim.scale)
        return f"{claim.baseline} is itself below {self.plain} here ({v.mean * claim.scale:+.{digits}f}{claim.unit})"

    def expected_validation(self) -> dict[str, list[float]]:
        """method → its expected best validation score after 1 … N trials (Dodge et al., 2019:
        :func:`dro_lab.experiments.expected_validation_performance`), from the recorded tuning trials."""
        out = {}
        for method in self.methods:
            scores = [t["score"] for t in self.trials if t["method"] == method]
            if scores:
                out[method] = expected_validation_performance(scores)
        return out

    def identical_arms(self) -> dict[str, str]:
        """method → an earlier method whose runs gave exactly the same final metrics on every seed (an arm whose
        tuning chose the special case it shares with a baseline); such arms are one arm, reported once."""
        finals = {
            m: json.dumps(
                [
                    sorted(r["final"].items())
                    for s in self.seeds
                    for r in self.runs
                    if r["seed"] == s and r["method"] == m
                ]
            )  # fmt: skip
            for m in self.methods
        }
        first: dict[str, str] = {}
        return {m: first.setdefault(f, m) for m, f in finals.items() if first.setdefault(f, m) != m}

    def _paired(self, claim: Claim) -> tuple[dict, dict]:
        """Seed → the claim's oriented difference (None where a run is missing), and seed → why a seed is set aside."""
        if not any(claim.metric in r["final"] for r in self.runs):
            raise ValueError(f"no final metric {claim.metric!r}; metrics: {self.metric_names()}")
        values = {
            name: {r["seed"]: r["final"].get(claim.metric) for r in self.runs if r["method"] == name}
            for name in (claim.method, claim.baseline)
        }
        return pair_seeds(self.seeds, values, lambda a, b: claim.orient([a], [b])[0])

    def markdown(self, metrics: list[str] | None = None, *, verdicts: bool = True) -> str:
        """The table (mean ± sd over seeds; accuracies in %) and, unless ``verdicts=False``, each claim's verdict
        with its interval, as Markdown."""
        metrics = metrics or sorted({c["metric"] for c in self.claims}) or self.metric_names()
        rows = self.table(metrics)
        seeds = len(self.seeds)
        lines = [
            f"**{self.title}** — {self.dataset}, {seeds} paired seed{'s' if seeds != 1 else ''} ({self.preset} preset)",
            "",
            "| method | " + " | ".join(_cell(m) for m in metrics) + " |",
            "|---" * (len(metrics) + 1) + "|",
        ]
        lines += ["| " + " | ".join(_cell(str(r[k])) for k in ("method", *metrics)) + " |" for r in rows]
        same = self.identical_arms()
        if same:
            lines += ["", "Identical runs: " + "; ".join(f"{m} = {b} on every seed" for m, b in same.items()) + "."]
        if self.claims and verdicts:
            lines += ["", verdict_table(self.verdicts())]
        return "\n".join(lines)

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict:
        """Plain JSON-ready data, with the schema version."""
        return {"schema": SCHEMA_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExperimentResult:
        """Rebuild a result, checking its layout (``ValueError`` naming what is missing or wrong)."""
        if not isinstance(data, Mapping):
            raise TypeError(f"an experiment result is a mapping, got {type(data).__name__}")
        if data.get("schema") != SCHEMA_VERSION:
            raise ValueError(f"result schema {data.get('schema')!r} is not {SCHEMA_VERSION}: re-run the experiment")
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise ValueError(f"the result lacks {missing}")
        for name, rows, keys in (("runs", data.get("runs", []), RUN_KEYS), ("trials", data["trials"], _TRIAL_KEYS)):
            for i, row in enumerate(rows):
                lacking = [k for k in keys if k not in row]
                if lacking:
                    raise ValueError(f"{name}[{i}] lacks {lacking}")
        for i, c in enumerate(data.get("claims", [])):
            Claim(**c)  # unknown or missing fields raise TypeError
            if c["method"] not in data["methods"] or c["baseline"] not in data["methods"]:
                raise ValueError(f"claims[{i}] names a method that is not in methods")
        fields = {k: v for k, v in data.items() if k != "schema"}
        return cls(**fields)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the result as JSON (atomically: :func:`dro_lab._files.atomic_write_text`)."""
        return atomic_write_text(path, json.dumps(self.to_dict(), indent=1, default=_json_default) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> ExperimentResult:
        """Read a result saved by :meth:`save`. A missing, truncated or malformed file raises one ``ValueError``
        (:class:`dro_lab._files.RecordError`) naming the file and what to do."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file path, got {type(path).__name__}")
        data = read_json_record(path, what="experiment result", fix=_LOAD_FIX)
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError) as exc:
            raise RecordError(path, "experiment result", f"is malformed ({exc})", _LOAD_FIX) from None


def adjust_rows(rows: list[dict]) -> list[dict]:
    """Verdict rows (:meth:`ExperimentResult.verdicts`) with Holm's correction over them as one family:
    ``p_adjusted``, ``verdict_adjusted``, ``family`` (how many claims share it) and ``verdict_text``. A claim that
    repeats another (``same_as``) takes the other's adjusted verdict and no share of the family."""
    decidable = ("held", "did not hold", "not resolved")
    tested = [
        i
        for i, r in enumerate(rows)
        if not r["same_as"] and r["verdict"] in decidable and r["p_value"] is not None and math.isfinite(r["p_value"])
    ]
    alpha = 1 - (rows[0]["confidence"] if rows else 0.95)
    adjusted = dict(zip(tested, holm([rows[i]["p_value"] for i in tested], alpha)))
    by_text, out = {}, []
    for i, r in enumerate(rows):
        p = adjusted.get(i, math.nan)
        decided = r["verdict"] in ("held", "did not hold")
        word = r["verdict"] if not decided or (p == p and p < alpha) else "not resolved"
        row = {**r, "p_adjusted": p, "verdict_adjusted": word, "family": len(tested)}
        if (r.get("part"), r["same_as"]) in by_text:  # a claim's text repeats across parts (ALSO's two ratios)
            row.update({k: by_text[r.get("part"), r["same_as"]][k] for k in ("p_adjusted", "verdict_adjusted")})
        row["verdict_text"] = _verdict_text(row)
        by_text.setdefault((r.get("part"), r["text"]), row)
        out.append(row)
    return out


def _verdict_text(row: dict) -> str:
    """``"held: +3.1 points (95 % interval …, 10 seeds); Holm over 8 claims: not resolved (p 0.004 → 0.09);
    consistent with the paper's +5.8 points"``."""
    text = row["raw_text"]
    if row["same_as"]:
        return f"{text}; the same comparison as “{row['same_as']}”"
    if row.get("baseline_below"):
        text += f"; note: {row['baseline_below']}"
    p, q = row["p_value"], row["p_adjusted"]
    if p == p and q == q:
        text += f"; Holm over {row['family']} claims: {row['verdict_adjusted']} (p {p:.2g} → {q:.2g})"
    if row.get("paper_effect") is not None and row.get("effect_verdict"):
        scale, unit = row.get("scale", 100.0), row.get("unit", " points")
        text += f"; {row['effect_verdict']} the paper's {row['paper_effect'] * scale:+.{_digits(scale)}f}{unit}"
    if row.get("band") is not None:
        low, high = row["band"]
        text += f" (the paper's band {low:g} to {high:g})"
    return text


def verdict_table(rows: list[dict]) -> str:
    """Verdict rows as a Markdown table: the claim and the paper's words, the verdict against 0 (raw), the
    Holm-adjusted verdict (what the course quotes) and the reading against the paper's effect."""
    lines = ["| claim (the paper) | verdict (raw) | Holm-adjusted | against the paper's effect |", "|---|---|---|---|"]
    for v in rows:
        effect = v.get("effect_verdict") or "–"
        if v.get("paper_effect") is not None and v.get("effect_verdict"):
            scale = v.get("scale", 100.0)
            effect = f"{v['effect_verdict']} {v['paper_effect'] * scale:+.{_digits(scale)}f}{v.get('unit', '')}"
        adjusted = v["verdict_adjusted"] if not v["same_as"] else f"{v['verdict_adjusted']} (same comparison as above)"
        part = f"{v['part']}: " if v.get("part") else ""
        raw = v["raw_text"] + (f"; note: {v['baseline_below']}" if v.get("baseline_below") else "")
        lines.append(
            f"| {_cell(part + v['text'])} <br><small>{_cell(v['paper'])}</small> | {_cell(raw)} "
            f"| {_cell(adjusted)} | {_cell(effect)} |"
        )
    return "\n".join(lines)


def _digits(scale: float) -> int:
    """Decimals for a shown difference: 1 for points (scale 100), 3 for losses and log-ratios."""
    return 1 if scale >= 100 else 3


def _metric_scale(metric: str, claims: list[dict]) -> float:
    """The scale a table shows ``metric`` at: its claims' scale, else 100 for an accuracy and 1 for the rest."""
    for c in claims:
        if c["metric"] == metric:
            return float(c.get("scale", 100.0))
    return 100.0 if "accuracy" in metric else 1.0


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell (a ``|`` would split it)."""
    return text.replace("|", "\\|").replace("\n", " ")


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON data")
