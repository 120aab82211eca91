"""The reference runs shipped with the package: each paper's experiment run once at full size, to show beside a
live run.

A reference is one or more :class:`~dro_lab.experiments.result.ExperimentResult` (one per command: ALSO runs at
two imbalance ratios) with the exact ``dro-lab experiment`` command that made each. The files live in the
package's data (``dro_lab/experiments/reference_results/NAME.json``), so pip, Colab and Binder users have them:

* :func:`load_reference` — a shipped reference (or a file) as a :class:`Reference`;
* :data:`REFERENCES` — what each reference runs: its commands (:meth:`ReferencePlan.commands`);
* :func:`regenerate_reference` — run (or resume) the commands and bundle their results into a reference file;
  :func:`bundle_reference` bundles results already run.

From the command line: ``dro-lab reference --list``, ``dro-lab reference hws`` (its tables and verdicts),
``dro-lab reference hws --regenerate`` (``make reference`` regenerates all five).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from .._files import RecordError, atomic_write_text, read_json_record
from .._validation import check_folder
from .result import ExperimentResult, adjust_rows, verdict_table
from .runner import _git_dirty, run_experiment

__all__ = [
    "REFERENCES",
    "REFERENCE_SCHEMA",
    "Reference",
    "ReferencePart",
    "ReferencePlan",
    "available_references",
    "bundle_reference",
    "load_reference",
    "regenerate_reference",
    "shipped_path",
]

#: Bumped when a reference file's layout changes; :func:`load_reference` refuses other versions.
REFERENCE_SCHEMA = 1
_DATA = "reference_results"
#: Where the reference runs go unless told otherwise (``make reference``).
_RUNS = "build/reference"


@dataclass(frozen=True)
class ReferencePart:
    """One command of a reference: a label (``""`` when the reference has one command), the experiment, the
    preset settings it changes (``{"ratio": 100}``) and, where they differ from the plan's, its seeds, its methods
    (a second seed set runs only the two arms of one claim), how many runs go at once (``1`` for a part whose
    runs are timed) and its preset (a paper's own protocol beside the tuned run)."""

    label: str
    experiment: str
    overrides: Mapping = field(default_factory=dict)
    seeds: str | None = None
    methods: tuple[str, ...] | None = None
    jobs: int | None = None
    preset: str | None = None

    def folder(self) -> str:
        """The run folder's name under the reference runs' folder (``also-ratio100``, ``hws-seeds10-14``)."""
        tail = "".join(f"-{k}{v:g}" if isinstance(v, (int, float)) else f"-{k}{v}" for k, v in self.overrides.items())
        return (
            f"{self.experiment}{tail}"
            + (f"-{self.preset}" if self.preset else "")
            + (f"-seeds{self.seeds}" if self.seeds else "")
        )


@dataclass(frozen=True)
class ReferencePlan:
    """What a reference runs: its parts, and the data set, seeds, preset, runs at once (``jobs``) and torch
    threads per run every part shares unless it says otherwise. Two runs at once of one thread each fill two
    cores; the threads are fixed (and torch's deterministic algorithms on) so that the same command gives the
    same numbers on the same machine."""

    name: str
    parts: tuple[ReferencePart, ...]
    dataset: str = "fashion-mnist"
    seeds: str = "0-9"
    preset: str = "full"
    jobs: int = 2
    threads: int | None = 1

    def commands(
        self, runs: str | os.PathLike = "build/reference", preset: str | None = None, seeds: str | None = None
    ) -> list[str]:
        """The exact ``dro-lab experiment`` command of each part, writing its runs under ``runs``."""
        out = []
        for part in self.parts:
            words = ["dro-lab", "experiment", part.experiment, "--dataset", self.dataset]
            words += ["--seeds", seeds or part.seeds or self.seeds, "--preset", preset or part.preset or self.preset]
            words += ["--methods", *part.methods] if part.methods else []
            words += ["--jobs", str(part.jobs or self.jobs)] if (part.jobs or self.jobs) != 1 else []
            words += ["--threads", str(self.threads)] if self.threads is not None else []
            words += [w for k, v in part.overrides.items() for w in ("--set", f"{k}={v!r}")]
            words += ["--out", str(Path(runs) / part.folder())]
            out.append(shlex.join(words))
        return out


#: The importance-sampling arms the claims of Lahire's §4 compare (RMSProp and Adam with p^GN are in the tuned part).
_PROTOCOL_ARMS = ("SGD u", "SGD p^GN", "SGD p^1/2", "SGD M u", "SGD M p^GN", "RMSProp u", "Adam u", "SGD u+eval")

#: The label of a part that runs one claim's two arms again on five other seeds (tuning included).
_SECOND = "second seed set"


#: The five references, one per paper's experiment. ALSO is judged at two imbalance ratios (10 and 100).
REFERENCES: dict[str, ReferencePlan] = {
    "hws": ReferencePlan("hws", (ReferencePart("", "hws"), ReferencePart(_SECOND, "hws", {}, "10-14", ("HWS", "ERM")))),
    "importance": ReferencePlan(
        "importance",
        (
            ReferencePart("", "importance"),
            ReferencePart(_SECOND, "importance", {}, "10-14", ("SGD u", "Adam u")),
            # §4's own protocol (lr 0.01, batch 5, 300 steps, 45 paired runs), the arms its claims compare, one run at
            # a time so that the timings are not shared with another run
            ReferencePart("the paper's protocol", "importance", {}, "0-44", _PROTOCOL_ARMS, jobs=1, preset="protocol"),
        ),
    ),
    "also": ReferencePlan(
        "also",
        (
            ReferencePart("ratio 10", "also", {"ratio": 10}),
            ReferencePart("ratio 100", "also", {"ratio": 100}),
            ReferencePart(f"ratio 100, {_SECOND}", "also", {"ratio": 100}, "10-14", ("ALSO", "Static Weights")),
        ),
    ),
    # DONE: 5 paired seeds (30 epochs of PGD training each on two CPU cores), then DONE vs AT on 5 other seeds
    "done": ReferencePlan(
        "done",
        (ReferencePart("", "done"), ReferencePart(_SECOND, "done", {"aa_per_class": 0}, "5-9", ("DONE", "AT"))),
        seeds="0-4",
    ),
    "gils": ReferencePlan(
        "gils",
        (ReferencePart("", "gils"), ReferencePart(_SECOND, "gils", {}, "10-14", ("GI-LS", "CE"))),
    ),
}


def available_references() -> list[str]:
    """The names of the references (:data:`REFERENCES`)."""
    return list(REFERENCES)


@dataclass(frozen=True)
class Reference:
    """A reference as shipped: its name and one ``(label, command, result)`` part per command."""

    name: str
    parts: tuple[tuple[str, str, ExperimentResult], ...]

    @property
    def labels(self) -> list[str]:
        return [label for label, _, _ in self.parts]

    def result(self, label: str | None = None) -> ExperimentResult:
        """The result of one part (``label`` may be left out for the first part, the reference's main run)."""
        if label is None:
            return self.parts[0][2]
        for name, _, result in self.parts:
            if name == label:
                return result
        raise ValueError(f"reference {self.name!r} has parts {self.labels}, not {label!r}")

    def verdicts(self) -> list[dict]:
        """Every part's verdicts, each row with its ``part`` label, Holm-adjusted over all of them: a paper's claims
        are one family (ALSO's two imbalance ratios together)."""
        return adjust_rows([{"part": label, **v} for label, _, result in self.parts for v in result.verdicts()])

    def provenance(self, label: str | None = None) -> str:
        """One line: data set, seeds, date, hardware and commit of a part's run."""
        r = self.result(label)
        meta = r.meta
        commit = str(meta.get("commit", "unknown"))[:10] + (
            " (with uncommitted changes)" if meta.get("uncommitted_changes") else ""
        )
        return (
            f"{r.dataset}, {len(r.seeds)} paired seeds, {r.preset} preset, {_trials_text(r.config.get('trials', 1))}; "
            f"run {str(meta.get('date', '?'))[:10]} on {meta.get('hardware', '?')}, commit {commit}"
        )

    def markdown(self) -> str:
        """The reference as Markdown: per part, where it came from, its command, its table and verdicts."""
        lines = [f"### Reference run: {self.parts[0][2].title}", ""]
        for label, command, result in self.parts:
            if label:
                lines += [f"#### {label}", ""]
            lines += [f"*{self.provenance(label)}*", "", f"`{command}`", ""]
            lines += [result.markdown(_shown(result), verdicts=False), "", tuning_markdown(result), ""]
            lines += [sampler_markdown(result), ""] if "sampler_ess" in _curve_names(result) else []
        lines += ["#### Verdicts", "", verdict_table(self.verdicts())]
        return "\n".join(lines).rstrip() + "\n"

    def to_dict(self) -> dict:
        return {
            "schema": REFERENCE_SCHEMA,
            "name": self.name,
            "parts": [{"label": lab, "command": cmd, "result": res.to_dict()} for lab, cmd, res in self.parts],
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> Reference:
        """Rebuild a reference, checking its layout and every part's result (``ValueError`` saying what is wrong).
        Keys other than ``schema``, ``name`` and ``parts`` are ignored (files made by earlier versions carry more)."""
        if not isinstance(data, Mapping):
            raise TypeError(f"a reference is a mapping, got {type(data).__name__}")
        if data.get("schema") != REFERENCE_SCHEMA:
            raise ValueError(f"reference schema {data.get('schema')!r} is not {REFERENCE_SCHEMA}: regenerate it")
        missing = [k for k in ("name", "parts") if k not in data]
        if missing or not data.get("parts"):
            raise ValueError(f"the reference lacks {missing or ['parts']}")
        parts = []
        for i, part in enumerate(data["parts"]):
            lacking = [k for k in ("label", "command", "result") if k not in part]
            if lacking:
                raise ValueError(f"parts[{i}] lacks {lacking}")
            parts.append((part["label"], part["command"], ExperimentResult.from_dict(part["result"])))
        return cls(data["name"], tuple(parts))

    def save(self, path: str | os.PathLike) -> Path:
        """Write the reference as JSON (atomically: :func:`dro_lab._files.atomic_write_text`), making its folder."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.to_dict(), indent=None, separators=(",", ":"), ensure_ascii=False) + "\n"
        return atomic_write_text(path, text)


def tuning_markdown(result: ExperimentResult) -> str:
    """Each arm's tuning effort as a Markdown table: grid size, trials, coverage, its expected best validation
    score after 1 trial and after all of them (Dodge et al.'s curve, first and last point) and the chosen setting."""
    if not result.tuning:
        return "*(this result predates the record of each arm's grid and coverage)*"
    evp = result.expected_validation()
    lines = [
        "| method | grid | trials | coverage | expected best val. score: 1 trial → all | chosen |",
        "|---" * 6 + "|",
    ]
    for method, e in result.tuning.items():
        curve = evp.get(method, [])
        score = f"{curve[0]:.3f} → {curve[-1]:.3f}" if curve else "–"
        chosen = ", ".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.chosen[method].items()
        )
        lines.append(
            f"| {method} | {e['grid_size']} | {e['trials']} | {e['coverage']:.0%} | {score} | {chosen or '–'} |"
        )
    return "\n".join(lines)


def sampler_markdown(result: ExperimentResult) -> str:
    """For arms that sample from a loss history: the sampler's effective sample size and the share of its mass
    on the minority class, at the first and last epoch (mean over seeds)."""
    lines = ["| method | effective sample size: first → last epoch | mass on the minority class |", "|---|---|---|"]
    for method in result.methods:
        try:
            ess = result.curve("sampler_ess", method)
        except (KeyError, ValueError):  # an arm without the curve
            continue
        if np.isnan(ess).all():
            continue
        row = f"| {method} | {np.nanmean(ess[:, 0]):.1f} → {np.nanmean(ess[:, -1]):.1f} |"
        try:
            mass = result.curve("minority_mass", method)
            row += f" {np.nanmean(mass[:, 0]):.1%} → {np.nanmean(mass[:, -1]):.1%} |"
        except (KeyError, ValueError):
            row += " – |"
        lines.append(row)
    return "\n".join(lines)


def _curve_names(result: ExperimentResult) -> set[str]:
    return {k for r in result.runs for k in r["curves"]}


def _trials_text(trials: int) -> str:
    return "untuned (one setting per method)" if trials == 1 else f"tuned with {trials} trials per method"


def _shown(result: ExperimentResult) -> list[str]:
    """The claims' metrics, then the average ones a reader looks for beside them (those the runs recorded)."""
    claimed = list(dict.fromkeys(c["metric"] for c in result.claims))
    average = ("accuracy", "balanced_accuracy", "clean_accuracy", "loss")
    return claimed + [m for m in average if m in result.metric_names() and m not in claimed]


def _plan(name: str) -> ReferencePlan:
    """A reference's plan by its name (``"hws"``)."""
    if isinstance(name, str) and name in REFERENCES:
        return REFERENCES[name]
    raise ValueError(f"no reference {name!r}; references: {', '.join(REFERENCES)}")


def load_reference(name: str | None = None, *, path: str | os.PathLike | None = None) -> Reference:
    """The shipped reference ``name`` (``"hws"`` …), or the reference file at ``path``.

    A missing, truncated or malformed file raises one ``ValueError`` (:class:`dro_lab._files.RecordError`) naming
    the file and the command that makes it again."""
    if (name is None) == (path is None):
        raise ValueError("give a reference name or a path, not both or neither")
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file path, got {type(path).__name__}")
        return _read(Path(path), "regenerate it (`dro-lab reference NAME --regenerate`, or --bundle from its runs)")
    plan = _plan(name)
    shipped = resources.files(__package__).joinpath(_DATA, f"{plan.name}.json")
    if not shipped.is_file():
        raise FileNotFoundError(
            f"the reference {plan.name!r} is not in this installation ({shipped}); "
            f"regenerate it with `dro-lab reference {plan.name} --regenerate`"
        )
    with resources.as_file(shipped) as file:
        return _read(file, f"reinstall dro-lab, or regenerate it with `dro-lab reference {plan.name} --regenerate`")


def _read(path: Path, fix: str) -> Reference:
    """A reference file, or one :class:`RecordError` naming it and ``fix``."""
    data = read_json_record(path, what="reference", fix=fix)
    try:
        return Reference.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise RecordError(path, "reference", f"is malformed ({exc})", fix) from None


def bundle_reference(
    name: str, runs: str | os.PathLike = "build/reference", *, preset: str | None = None, seeds: str | None = None
) -> Reference:
    """The reference made of the results already run under ``runs`` (one folder per part, as its command wrote)."""
    plan = _plan(name)
    runs = check_folder(runs, "runs")
    parts = []
    # the command a reader runs to make it again (into the default folder), whatever folder these runs went to
    commands, here = plan.commands(_RUNS, preset, seeds), plan.commands(runs, preset, seeds)
    for part, command, run_here in zip(plan.parts, commands, here):
        path = runs / part.folder() / "result.json"
        if not path.is_file():
            raise FileNotFoundError(f"no result at {path}: run `{run_here}` first (or regenerate_reference)")
        result = ExperimentResult.load(path)
        expected = len(result.seeds) * len(result.methods)
        if len(result.runs) < expected:
            raise ValueError(f"{path} holds {len(result.runs)} of {expected} runs: finish `{run_here}` first")
        parts.append((part.label, command, result))
    commits = {r.meta.get("commit") for _, _, r in parts}
    if len(commits) > 1:
        raise ValueError(f"the parts of {plan.name!r} were run from different commits {sorted(commits)}: rerun them")
    return Reference(plan.name, tuple(parts))


def regenerate_reference(
    name: str,
    runs: str | os.PathLike = "build/reference",
    *,
    preset: str | None = None,
    seeds: str | None = None,
    device: str = "auto",
    progress: bool = True,
) -> Reference:
    """Run (or resume: finished runs are kept under ``runs``) each command of the reference, then bundle it.
    ``preset`` and ``seeds`` replace the plan's (a smoke regeneration in the tests)."""
    plan = _plan(name)
    runs = check_folder(runs, "runs")
    if preset is None and seeds is None and _git_dirty():
        raise ValueError(
            f"the checkout has uncommitted changes: a reference is made from one fixed commit (commit, or run "
            f"`git stash` first); `dro-lab reference {plan.name} --regenerate` resumes from the runs kept in {runs}"
        )
    for part in plan.parts:
        run_experiment(
            part.experiment,
            dataset=plan.dataset,
            seeds=seeds or part.seeds or plan.seeds,
            preset=preset or part.preset or plan.preset,
            methods=list(part.methods) if part.methods else None,
            out=Path(runs) / part.folder(),
            device=device,
            progress=progress,
            jobs=part.jobs or plan.jobs,
            threads=plan.threads,
            **dict(part.overrides),
        )
    return bundle_reference(name, runs, preset=preset, seeds=seeds)


def shipped_path(name: str) -> Path:
    """Where a source checkout keeps the shipped file of ``name`` (what ``--regenerate --ship`` writes)."""
    return Path(__file__).resolve().parent / _DATA / f"{_plan(name).name}.json"
