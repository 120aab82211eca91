"""The tidy result of a paper's experiment: what was run, the tuning trials, the per-seed runs, the verdicts.

An :class:`ExperimentResult` is plain data (it saves to and loads from JSON) so a result computed on one
machine — a reference run shipped with the package — reads the same as a student's live run:

* :meth:`~ExperimentResult.rows` — one row per seed × method × epoch × metric (for figures and data frames);
* :meth:`~ExperimentResult.final` — a final metric per method, one value per seed;
* :meth:`~ExperimentResult.table` — mean ± sd per method and metric;
* :meth:`~ExperimentResult.verdicts` — each claim judged with :func:`dro_lab.experiments.judge`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .protocol import Claim
from .verdict import judge, mean_sd_text

__all__ = ["ExperimentResult", "SCHEMA_VERSION"]

#: Bumped when the JSON layout changes; :meth:`ExperimentResult.load` refuses other versions.
SCHEMA_VERSION = 1

_REQUIRED = ("experiment", "title", "paper", "dataset", "preset", "seeds", "config", "methods", "trials")
_RUN_KEYS = ("seed", "method", "setting", "final", "curves", "seconds")
_TRIAL_KEYS = ("method", "setting", "score")


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
        meta: how it was made: command, git commit, date, hardware, versions, threads.
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
        """Each claim judged from the paired seeds: the claim's fields plus ``verdict``, ``interval``, ``mean``,
        ``n`` and ``verdict_text`` (the word beside its interval, in the claim's units); ``options`` go to
        :func:`judge` (``min_seeds``, ``confidence``)."""
        out = []
        for c in self.claims:
            claim = Claim(**c)
            finals = self.final(claim.metric)
            d = claim.orient(finals[claim.method], finals[claim.baseline])
            d = d[~np.isnan(d)]
            if d.size == 0:
                out.append(
                    {
                        **c,
                        "verdict": "not resolved",
                        "interval": [np.nan, np.nan],
                        "mean": np.nan,
                        "n": 0,
                        "verdict_text": "not resolved: no paired runs",
                    }
                )
                continue
            v = judge(d, threshold=claim.threshold, **options)
            out.append(
                {
                    **c,
                    "verdict": v.verdict,
                    "interval": list(v.interval),
                    "mean": v.mean,
                    "n": v.n,
                    "verdict_text": v.text(_digits(claim.scale), scale=claim.scale, unit=claim.unit),
                }
            )
        return out

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
        if self.claims and verdicts:
            lines += ["", "| claim (the paper) | verdict |", "|---|---|"]
            lines += [
                f"| {_cell(v['text'])} <br><small>{_cell(v['paper'])}</small> | {_cell(v['verdict_text'])} |"
                for v in self.verdicts()
            ]
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
        for name, rows, keys in (("runs", data.get("runs", []), _RUN_KEYS), ("trials", data["trials"], _TRIAL_KEYS)):
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
        """Write the result as JSON (atomically: a temporary file, then a rename)."""
        path = Path(path)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1, default=_json_default) + "\n")
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> ExperimentResult:
        """Read a result saved by :meth:`save`."""
        return cls.from_dict(json.loads(Path(path).read_text()))


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
