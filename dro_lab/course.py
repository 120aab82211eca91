"""The course runner: syllabus loading, batch execution of the lessons, HTML export, records.

The lessons are Jupyter notebooks listed in ``course/syllabus.yaml``. This module reads that file
into small frozen dataclasses (:func:`load_syllabus`), executes lessons with papermill, one
papermill process and kernel per lesson and optionally several lessons at once (:func:`run_course`),
exports every executed notebook to HTML with nbconvert, and writes a summary (``summary.md``,
``summary.json`` and an ``index.html`` that links every page). A lesson already executed into the
same folder with the same preset, parameters and notebook is not run again (resume; ``force``
re-runs). :func:`run_sweep` runs lessons once per value of one parameter and draws every recorded
number against that value (:func:`sweep_figure`, :func:`sweep_table`).

Inside a lesson, :func:`record` stores a named value (a metric, a figure's key number) so that a
batch run, a test or a parameter sweep can read results without parsing cell outputs::

    from dro_lab.course import record
    record("kl_weights_max", float(q.max()))

Importing this module is cheap: papermill, nbformat and nbconvert are imported only when a course
is run, so a notebook may import :func:`record` freely.

Every lesson checks its injected parameters in the cell after its ``parameters`` cell with
:func:`check_parameter`, so that ``-p epochs 0`` stops there with a message naming the parameter
and its valid values, before any heavy cell.

Faults: a lesson that raises, times out (``timeout`` per cell) or whose kernel dies is reported
``failed`` with its failure kind (:data:`FAILURE_KINDS`), failing cell and message, and the other
lessons run on. A run stopped by Ctrl-C or SIGTERM stops its papermill processes and kernels, marks
the half-run lessons ``failed`` (``interrupted``), writes the summary and raises
:class:`RunInterrupted`; run the same command again to resume. Every record and summary file is
written atomically (a temporary file, then :func:`os.replace`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

__all__ = [
    "DEFAULT_PRESETS",
    "DEFAULT_TIMEOUT",
    "RECORD_ENV",
    "PRESET_ENV",
    "FAILURE_KINDS",
    "FailingCell",
    "Lesson",
    "LessonResult",
    "RunInterrupted",
    "Syllabus",
    "SweepResult",
    "SyllabusError",
    "check_parameter",
    "find_failing_cell",
    "find_syllabus",
    "load_syllabus",
    "notebook_parameters",
    "parse_parameter_value",
    "parse_sweep",
    "read_records",
    "record",
    "run_course",
    "run_sweep",
    "summary_table",
    "sweep_figure",
    "sweep_table",
    "syllabus_markdown",
    "write_summary",
    "write_sweep_summary",
]

#: Environment variable naming the JSON file that :func:`record` writes to.
RECORD_ENV = "DRO_LAB_RECORD"
#: Environment variable a lesson may read to override its stored ``preset`` (``make test`` sets it);
#: the runner sets it to the preset it passes, so both ways of choosing a preset agree.
PRESET_ENV = "DRO_LAB_PRESET"
#: Presets every syllabus has unless it declares its own.
DEFAULT_PRESETS: dict[str, str] = {
    "smoke": "seconds per lesson on a CPU; every figure, tiny sizes (CI, nbval)",
    "full": "the paper-sized experiment on a laptop CPU",
    "gpu": "the largest runs, on a CUDA device",
}
#: Default per-cell execution timeout of :func:`run_course`, in seconds.
DEFAULT_TIMEOUT = 600.0
#: How a failed lesson failed (``LessonResult.failure``): a cell raised; a cell ran past the timeout;
#: the kernel died (killed, out of memory, a crash in native code); papermill itself was killed by a
#: signal that the runner did not send; the run was interrupted (Ctrl-C, SIGTERM) while it ran.
FAILURE_KINDS = ("raised", "timed out", "kernel died", "killed", "interrupted")
#: Where the syllabus lives relative to the repository root.
SYLLABUS_RELPATH = Path("course") / "syllabus.yaml"

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TOP_KEYS = {"title", "description", "root", "presets", "lessons"}
_LESSON_KEYS = {"id", "title", "notebook", "goals", "prerequisites", "paper", "minutes", "presets"}
_LESSON_REQUIRED = ("id", "title", "notebook")


# --------------------------------------------------------------------------------------------
# Syllabus
# --------------------------------------------------------------------------------------------


class SyllabusError(ValueError):
    """The syllabus file is malformed; the message lists every problem found, one per line."""


@dataclass(frozen=True)
class Lesson:
    """One lesson of the syllabus.

    Attributes:
        id: short unique name, also the stem of every output file (``<id>.ipynb``, ``<id>.html``).
        title: human title.
        notebook: absolute path of the lesson notebook.
        notebook_relpath: the path as written in the syllabus (relative to the course root).
        goals: learning goals, in order.
        prerequisites: ids of earlier lessons a student should have done first.
        paper: the paper(s) the lesson follows (may be empty).
        minutes: expected running time per preset, in minutes (may be partial).
        presets: preset name -> papermill parameters for that preset.
    """

    id: str
    title: str
    notebook: Path
    notebook_relpath: str
    goals: tuple[str, ...] = ()
    prerequisites: tuple[str, ...] = ()
    paper: tuple[str, ...] = ()
    minutes: Mapping[str, float] = field(default_factory=dict)
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def parameters(self, preset: str) -> dict[str, Any]:
        """Papermill parameters for ``preset``: the lesson's own mapping, else ``{"preset": preset}``."""
        if preset in self.presets:
            return dict(self.presets[preset])
        return {"preset": preset}


@dataclass(frozen=True)
class Syllabus:
    """The validated syllabus: course title, preset names and the lessons in teaching order."""

    title: str
    path: Path
    root: Path
    presets: Mapping[str, str]
    lessons: tuple[Lesson, ...]
    description: str = ""

    def __iter__(self) -> Iterator[Lesson]:
        return iter(self.lessons)

    def __len__(self) -> int:
        return len(self.lessons)

    @property
    def ids(self) -> list[str]:
        """Lesson ids in teaching order."""
        return [lesson.id for lesson in self.lessons]

    def lesson(self, lesson_id: str) -> Lesson:
        """The lesson called ``lesson_id`` (exact id or a unique prefix such as ``"01"``)."""
        return self.select([lesson_id])[0]

    def select(self, only: Iterable[str] | None) -> list[Lesson]:
        """Lessons named in ``only`` (exact ids or unique prefixes), in teaching order; all if None."""
        if only is None:
            return list(self.lessons)
        if isinstance(only, str):
            only = [only]
        chosen: set[str] = set()
        for name in only:
            if name in self.ids:
                chosen.add(name)
                continue
            matches = [i for i in self.ids if i.startswith(name)]
            if len(matches) != 1:
                why = "matches several lessons" if matches else "is not a lesson"
                raise ValueError(f"Invalid lesson {name!r}: it {why}; lessons are {', '.join(self.ids)}")
            chosen.add(matches[0])
        return [lesson for lesson in self.lessons if lesson.id in chosen]


def find_syllabus(start: str | os.PathLike[str] | None = None) -> Path:
    """Locate ``course/syllabus.yaml``: in ``start`` (default: the current dir) or a parent of it,
    else in the repository this package was installed from (editable installs)."""
    here = Path(start) if start is not None else Path.cwd()
    for folder in [here.resolve(), *here.resolve().parents]:
        candidate = folder / SYLLABUS_RELPATH
        if candidate.is_file():
            return candidate
    candidate = Path(__file__).resolve().parent.parent / SYLLABUS_RELPATH
    if candidate.is_file():
        return candidate
    raise FileNotFoundError(
        f"No {SYLLABUS_RELPATH.as_posix()} found in {here} or its parents; run from the dro_lab "
        "repository or pass the syllabus path explicitly (--syllabus PATH)"
    )


def _is_scalar_or_list(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, list):
        return all(_is_scalar_or_list(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_scalar_or_list(v) for k, v in value.items())
    return False


def _str_list(value: Any, where: str, problems: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        problems.append(f"{where}: expected a list of non-empty strings, got {value!r}")
        return ()
    return tuple(value)


def load_syllabus(
    path: str | os.PathLike[str] | None = None, *, check_notebooks: bool = True
) -> Syllabus:
    """Read and validate a syllabus file.

    Args:
        path: the YAML file; default: :func:`find_syllabus` (``course/syllabus.yaml`` of the repo).
        check_notebooks: also require every lesson's notebook to exist (turn off to list a course
            whose notebooks are still being written).

    Returns:
        the :class:`Syllabus`, lessons in the file's order.

    Raises:
        FileNotFoundError: no syllabus file.
        SyllabusError: unknown or missing keys, duplicate ids, missing notebooks, prerequisites
            that are unknown or come later in the order, malformed presets/minutes. Every problem
            found is listed in the message.
    """
    import yaml  # a core dependency, but only needed here

    path = Path(path) if path is not None else find_syllabus()
    if not path.is_file():
        raise FileNotFoundError(f"Syllabus file not found: {path}")
    path = path.resolve()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SyllabusError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise SyllabusError(f"{path}: expected a mapping with a 'lessons' list at the top level")

    problems: list[str] = []
    unknown = sorted(set(map(str, data)) - _TOP_KEYS)
    if unknown:
        problems.append(f"unknown top-level key(s) {unknown}; allowed: {sorted(_TOP_KEYS)}")

    # The course root: notebook paths are relative to it. Default: the folder holding course/.
    root_value = data.get("root")
    if root_value is None:
        root = path.parent.parent if path.parent.name == "course" else path.parent
    elif isinstance(root_value, str):
        root = (path.parent / root_value).resolve()
    else:
        problems.append(f"root: expected a path string, got {root_value!r}")
        root = path.parent

    presets_value = data.get("presets")
    presets: dict[str, str]
    if presets_value is None:
        presets = dict(DEFAULT_PRESETS)
    elif isinstance(presets_value, list) and all(isinstance(p, str) for p in presets_value):
        presets = {p: DEFAULT_PRESETS.get(p, "") for p in presets_value}
    elif isinstance(presets_value, dict) and all(
        isinstance(k, str) and isinstance(v, (str, type(None))) for k, v in presets_value.items()
    ):
        presets = {k: v or "" for k, v in presets_value.items()}
    else:
        problems.append(f"presets: expected a list of names or a mapping name -> description, got {presets_value!r}")
        presets = dict(DEFAULT_PRESETS)
    for name in presets:
        if not _ID_RE.match(name):
            problems.append(f"presets: invalid preset name {name!r}")

    raw_lessons = data.get("lessons")
    if not isinstance(raw_lessons, list) or not raw_lessons:
        problems.append("lessons: expected a non-empty list of lessons")
        raw_lessons = []

    lessons: list[Lesson] = []
    seen_ids: set[str] = set()
    seen_notebooks: dict[Path, str] = {}
    for position, raw in enumerate(raw_lessons, start=1):
        where = f"lesson #{position}"
        if not isinstance(raw, dict):
            problems.append(f"{where}: expected a mapping, got {raw!r}")
            continue
        if isinstance(raw.get("id"), str):
            where = f"lesson {raw['id']!r}"
        unknown = sorted(set(map(str, raw)) - _LESSON_KEYS)
        if unknown:
            problems.append(f"{where}: unknown key(s) {unknown}; allowed: {sorted(_LESSON_KEYS)}")
        missing = [k for k in _LESSON_REQUIRED if k not in raw]
        if missing:
            problems.append(f"{where}: missing required key(s) {missing}")
            continue

        lesson_id, title, notebook = raw["id"], raw["title"], raw["notebook"]
        if not isinstance(lesson_id, str) or not _ID_RE.match(lesson_id):
            problems.append(f"{where}: id must be a string of letters, digits, '_', '.', '-', got {lesson_id!r}")
            continue
        if lesson_id in seen_ids:
            problems.append(f"{where}: duplicate id {lesson_id!r}")
        if not isinstance(title, str) or not title.strip():
            problems.append(f"{where}: title must be a non-empty string")
        if not isinstance(notebook, str) or not notebook.endswith(".ipynb"):
            problems.append(f"{where}: notebook must be a path to a .ipynb file, got {notebook!r}")
            continue
        notebook_path = (root / notebook).resolve()
        if check_notebooks and not notebook_path.is_file():
            problems.append(f"{where}: notebook {notebook!r} not found (looked for {notebook_path})")
        if notebook_path in seen_notebooks:
            problems.append(f"{where}: notebook {notebook!r} is also lesson {seen_notebooks[notebook_path]!r}")
        seen_notebooks[notebook_path] = lesson_id

        goals = _str_list(raw.get("goals"), f"{where}: goals", problems)
        prerequisites = _str_list(raw.get("prerequisites"), f"{where}: prerequisites", problems)
        for prereq in prerequisites:
            if prereq == lesson_id:
                problems.append(f"{where}: lists itself as a prerequisite")
            elif prereq not in seen_ids:
                later = any(isinstance(r, dict) and r.get("id") == prereq for r in raw_lessons)
                problems.append(
                    f"{where}: prerequisite {prereq!r} "
                    + ("comes later in the lesson order" if later else "is not a lesson id")
                )
        paper = _str_list(raw.get("paper"), f"{where}: paper", problems)

        minutes: dict[str, float] = {}
        raw_minutes = raw.get("minutes") or {}
        if not isinstance(raw_minutes, dict):
            problems.append(f"{where}: minutes must map preset -> minutes, got {raw_minutes!r}")
            raw_minutes = {}
        for name, value in raw_minutes.items():
            if name not in presets:
                problems.append(f"{where}: minutes for unknown preset {name!r}; presets: {list(presets)}")
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                problems.append(f"{where}: minutes[{name!r}] must be a positive number, got {value!r}")
            else:
                minutes[name] = float(value)

        lesson_presets: dict[str, dict[str, Any]] = {}
        raw_presets = raw.get("presets") or {}
        if not isinstance(raw_presets, dict):
            problems.append(f"{where}: presets must map preset -> parameters, got {raw_presets!r}")
            raw_presets = {}
        for name, params in raw_presets.items():
            if name not in presets:
                problems.append(f"{where}: unknown preset {name!r}; presets: {list(presets)}")
                continue
            params = params or {}
            if not isinstance(params, dict):
                problems.append(f"{where}: presets[{name!r}] must be a mapping of parameters, got {params!r}")
                continue
            for key, value in params.items():
                if not isinstance(key, str) or not _IDENT_RE.match(key):
                    problems.append(f"{where}: presets[{name!r}]: {key!r} is not a Python identifier")
                elif not _is_scalar_or_list(value):
                    problems.append(f"{where}: presets[{name!r}][{key!r}] must be a literal, got {value!r}")
            lesson_presets[name] = dict(params)

        seen_ids.add(lesson_id)
        lessons.append(
            Lesson(
                id=lesson_id,
                title=str(title),
                notebook=notebook_path,
                notebook_relpath=notebook,
                goals=goals,
                prerequisites=prerequisites,
                paper=paper,
                minutes=minutes,
                presets=lesson_presets,
            )
        )

    title = data.get("title", "dro_lab course")
    if not isinstance(title, str):
        problems.append(f"title: expected a string, got {title!r}")
    description = data.get("description") or ""
    if not isinstance(description, str):
        problems.append(f"description: expected a string, got {description!r}")
    if problems:
        raise SyllabusError(f"{path}: invalid syllabus:\n  - " + "\n  - ".join(problems))
    return Syllabus(
        title=str(title),
        path=path,
        root=root,
        presets=presets,
        lessons=tuple(lessons),
        description=str(description),
    )


# --------------------------------------------------------------------------------------------
# Records written from inside a lesson
# --------------------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """Plain-Python version of ``value`` (tensors and numpy values via ``tolist``)."""
    if hasattr(value, "tolist") and callable(value.tolist):
        value = value.tolist()  # torch.Tensor, numpy array or numpy scalar
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def record(name: str, value: Any) -> None:
    """Record ``value`` under ``name`` for whoever runs this notebook in batch.

    When the environment variable ``DRO_LAB_RECORD`` names a file (the course runner sets it to
    ``<out>/<lesson id>.record.json``), the file holds a JSON object and ``name`` is set in it;
    recording a name twice keeps the last value. Otherwise (a student in JupyterLab) this does
    nothing. Displays nothing and returns None.

    Args:
        name: a non-empty string.
        value: anything JSON can hold; tensors and numpy values are converted with ``tolist()``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"Invalid record name: {name!r} (expected a non-empty string)")
    target = os.environ.get(RECORD_ENV)
    if not target:
        return None
    plain = _jsonable(value)
    try:
        json.dumps(plain)
    except (TypeError, ValueError) as exc:
        kind = type(value).__name__
        raise TypeError(f"record({name!r}, ...): value of type {kind} is not JSON-serialisable") from exc
    path = Path(target)
    data = read_records(path)
    data[name] = plain
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True))  # a reader never sees half a file
    return None


def read_records(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The records in ``path`` written by :func:`record`; ``{}`` if the file does not exist."""
    path = Path(path)
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8") or "{}")
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object of records")
    return data


# --------------------------------------------------------------------------------------------
# Parameter checks inside a lesson
# --------------------------------------------------------------------------------------------

_KIND_WORDS = {
    "int": ("an integer", "integers"),
    "number": ("a number", "numbers"),
    "str": ("a string", "strings"),
    "bool": ("True or False", "booleans"),
}


def _kind_ok(kind: str | None, value: Any) -> bool:
    if kind is None:
        return True
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    raise ValueError(f"check_parameter: invalid kind {kind!r}; kinds: {', '.join(_KIND_WORDS)}")


def _number_text(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def check_parameter(
    name: str,
    value: Any,
    kind: str | None = None,
    *,
    choices: Iterable[Any] | None = None,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    none_ok: bool = False,
    each: bool = False,
) -> Any:
    """Check one parameter of a lesson (as papermill injected it); return it unchanged.

    Lessons call this in the cell after their ``parameters`` cell, so that a bad value stops the
    lesson there, with a message that names the parameter and what it accepts::

        check_parameter("preset", preset, choices=("smoke", "full", "gpu"))
        check_parameter("seed", seed, "int", low=0)
        check_parameter("device", device, "str")
        check_parameter("cvar_alpha", cvar_alpha, "number", low=0, high=1, low_open=True)  # (0, 1]
        check_parameter("betas", betas, "number", low=0, low_open=True, each=True)          # a list

    Args:
        name: the parameter's name, as in the ``parameters`` cell.
        value: its value.
        kind: ``"int"`` (not bool), ``"number"`` (int or float, finite, not bool), ``"str"``,
            ``"bool"``, or None (any type).
        choices: the allowed values.
        low, high: bounds (inclusive unless ``low_open`` / ``high_open``).
        none_ok: None is allowed too (``None`` = "take it from the preset").
        each: ``value`` must be a non-empty list (or tuple) whose every item passes the checks.

    Raises:
        ValueError: ``Invalid parameter NAME=VALUE: expected ...``.
    """
    choices = tuple(choices) if choices is not None else None
    singular, plural = _KIND_WORDS.get(kind, ("a value", "values")) if kind is not None else ("a value", "values")
    _kind_ok(kind, None)  # rejects an unknown kind even when value is fine

    conditions = []
    if low is not None and high is not None:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        conditions.append(f"in {left}{_number_text(low)}, {_number_text(high)}{right}")
    elif low is not None:
        conditions.append(f"{'>' if low_open else '≥'} {_number_text(low)}")
    elif high is not None:
        conditions.append(f"{'<' if high_open else '≤'} {_number_text(high)}")
    if choices is not None:
        what = "one of " + ", ".join(repr(c) for c in choices)
        if each:
            what = f"a non-empty list of values drawn from {', '.join(repr(c) for c in choices)}"
    elif each:
        what = f"a non-empty list of {plural}" + (f" {conditions[0]}" if conditions else "")
    else:
        what = singular + (f" {conditions[0]}" if conditions else "")
    if none_ok:
        what += " or None"

    def ok(item: Any) -> bool:
        if not _kind_ok(kind, item):
            return False
        # True == 1 in Python; a choice of 1 must not accept True (nor the reverse)
        if choices is not None and not any(item == c and isinstance(item, bool) == isinstance(c, bool)
                                           for c in choices):
            return False
        if low is not None and not (item > low if low_open else item >= low):
            return False
        if high is not None and not (item < high if high_open else item <= high):
            return False
        return True

    if value is None and none_ok:
        return value
    if each:
        if not isinstance(value, (list, tuple)) or not value:
            raise ValueError(f"Invalid parameter {name}={value!r}: expected {what}")
        for position, item in enumerate(value):
            if not ok(item):
                raise ValueError(f"Invalid parameter {name}={value!r}: expected {what} (item {position} is {item!r})")
        return value
    if not ok(value):
        raise ValueError(f"Invalid parameter {name}={value!r}: expected {what}")
    return value


# --------------------------------------------------------------------------------------------
# Running the course
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FailingCell:
    """Where a lesson failed.

    Attributes:
        index: 0-based index of the cell in the lesson's *source* notebook.
        executed_index: index of the same cell in the executed notebook (which has papermill's
            injected-parameters cell).
        exec_count: the ``In [n]`` number in the executed notebook.
        first_line: first non-empty line of the cell's source.
        ename, evalue: the exception's name and message.
    """

    index: int
    executed_index: int
    exec_count: int | None
    first_line: str
    ename: str
    evalue: str

    def describe(self) -> str:
        """One line: ``cell 2 (In [3]) `raise ValueError("x")` -> ValueError: x``."""
        count = f" (In [{self.exec_count}])" if self.exec_count is not None else ""
        value = f": {self.evalue}" if self.evalue else ""
        return f"cell {self.index}{count} `{self.first_line}` -> {self.ename}{value}"


@dataclass
class LessonResult:
    """The outcome of one lesson of a :func:`run_course` run.

    Attributes:
        id, title: the lesson's.
        status: ``"ok"``, ``"failed"`` or ``"skipped"`` (not selected with ``only``).
        seconds: wall time of execution (and export).
        notebook: the executed notebook, if one was written (also for failures).
        html: its HTML export, if written.
        record_file: the JSON file :func:`record` wrote to, if the lesson recorded anything.
        log: papermill's log of the run (and the kernel's stderr).
        records: the recorded values.
        parameters: the parameters passed to papermill.
        error: one line describing the failure, else None (for a lesson not started because the
            run was interrupted: why it did not run).
        failing_cell: where it failed, when papermill could tell.
        failure: how a failed lesson failed, one of :data:`FAILURE_KINDS`, else None.
    """

    id: str
    title: str
    status: str
    seconds: float = 0.0
    notebook: Path | None = None
    html: Path | None = None
    record_file: Path | None = None
    log: Path | None = None
    records: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    failing_cell: FailingCell | None = None
    failure: str | None = None

    @property
    def problem(self) -> str:
        """One line for summaries: the failure kind, the failing cell and the message ('' when ok).

        ``raised: cell 2 (In [3]) `raise ValueError("x")` -> ValueError: x``,
        ``timed out after 3 s in cell 1 (`import time`)``, ``kernel died in cell 2 (`os.kill(...)`)``.
        """
        if self.status != "failed":
            return self.error or ""
        if self.failure in (None, "raised"):
            text = self.failing_cell.describe() if self.failing_cell else (self.error or "")
            return f"raised: {text}" if self.failure else text
        return self.error or self.failure

    @property
    def ok(self) -> bool:
        """True unless the lesson failed (a skipped lesson did not fail)."""
        return self.status != "failed"

    def to_dict(self, relative_to: Path | None = None) -> dict[str, Any]:
        """JSON-ready dict; paths relative to ``relative_to`` when given."""
        out = dataclasses.asdict(self)
        for key in ("notebook", "html", "record_file", "log"):
            value = getattr(self, key)
            if value is not None and relative_to is not None:
                value = os.path.relpath(value, relative_to)
            out[key] = None if value is None else Path(value).as_posix()
        return out


def parse_parameter_value(text: str) -> Any:
    """Turn a command-line parameter value into a Python value.

    Python literals are parsed (``0.5``, ``1e3``, ``[1, 2]``, ``'x'``, ``None``), as are the words
    ``true``/``false``/``null``/``none`` in any case; anything else stays a string (``cuda``).
    """
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    words = {"true": True, "false": False, "null": None, "none": None}
    return words.get(text.strip().lower(), text)


def _first_line(source: str) -> str:
    for line in source.splitlines():
        if line.strip():
            return line.strip()
    return ""


_ERROR_MARKER_TAG = "papermill-error-cell-tag"  # papermill's "An Exception was encountered" cells
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?::\s*(.*))?$")


def _last_exception_line(log: str) -> tuple[str, str] | None:
    """(name, message) of the last ``SomeError: message`` line of a traceback in ``log``."""
    for line in reversed(log.strip().splitlines()):
        match = _EXCEPTION_LINE.match(line.strip())
        if match and re.search(r"(Error|Exception|Exit|Interrupt|Timeout)$", match.group(1)):
            return match.group(1).rsplit(".", 1)[-1], (match.group(2) or "").strip()
    return None


def find_failing_cell(notebook: Any, log: str = "") -> FailingCell | None:
    """Locate the failure in an executed notebook (a path or a ``NotebookNode``).

    The same rule as papermill's ``PapermillExecutionError``: the first cell with an error output
    (``SystemExit`` with status 0 excepted) or marked ``papermill.exception``. A cell still marked
    ``running`` counts too. When ``log`` (papermill's output) ends in a ``CellTimeoutError`` or
    ``DeadKernelError``, that is reported as the cell's error (nbclient interrupts a timed-out
    cell, which then shows a ``KeyboardInterrupt``). Returns None when no cell failed.
    """
    import nbformat

    nb = notebook
    if not isinstance(nb, nbformat.NotebookNode):
        try:
            nb = nbformat.read(str(notebook), as_version=4)
        except Exception:  # missing or half-written: nothing to locate
            return None
    # papermill inserts its error-marker cells after locating the error; drop them to match.
    cells = [c for c in nb.cells if _ERROR_MARKER_TAG not in c.get("metadata", {}).get("tags", [])]
    # A cell timeout or a dead kernel stops papermill itself; its log names the real reason.
    reason = _last_exception_line(log)
    if reason is not None and reason[0] not in ("CellTimeoutError", "DeadKernelError"):
        reason = None
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        ename = evalue = None
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                if output.get("ename") == "SystemExit" and output.get("evalue") in ("", "0"):
                    continue
                ename, evalue = output.get("ename", ""), output.get("evalue", "")
                break
        papermill_meta = cell.get("metadata", {}).get("papermill", {})
        if ename is None and papermill_meta.get("exception") is True:
            ename, evalue = "CellExecutionError", ""
        if ename is None and papermill_meta.get("status") == "running":
            ename, evalue = reason or ("Error", "the cell did not finish")
        if ename is None:
            continue
        if reason is not None:  # the cell's own error (KeyboardInterrupt) is nbclient's interrupt
            ename, evalue = reason
        injected_before = sum("injected-parameters" in c.get("metadata", {}).get("tags", []) for c in cells[:index])
        return FailingCell(
            index=index - injected_before,
            executed_index=index,
            exec_count=cell.get("execution_count"),
            first_line=_first_line(cell.get("source", "")),
            ename=str(ename),
            evalue=str(evalue),
        )
    if reason is not None:
        # A dead kernel leaves no error output and papermill marks the cell completed: the failing
        # cell is the last one that started.
        started = [i for i, c in enumerate(cells) if c.get("cell_type") == "code"
                   and c.get("metadata", {}).get("papermill", {}).get("start_time")]
        if started:
            index = started[-1]
            cell = cells[index]
            injected_before = sum("injected-parameters" in c.get("metadata", {}).get("tags", [])
                                  for c in cells[:index])
            return FailingCell(
                index=index - injected_before, executed_index=index, exec_count=cell.get("execution_count"),
                first_line=_first_line(cell.get("source", "")), ename=reason[0], evalue=reason[1],
            )
    return None


def _write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and :func:`os.replace`,
    so that a reader (or a run interrupted mid-write) never sees half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _export_html(notebook: Path, target: Path, title: str) -> None:
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(notebook), as_version=4)
    body, _ = HTMLExporter().from_notebook_node(nb, resources={"metadata": {"name": title}})
    _write_text_atomic(target, body)


def _papermill_command(task: Mapping[str, Any], executed: Path) -> list[str]:
    import yaml

    command = [
        sys.executable, "-m", "papermill", task["notebook"], str(executed),
        "-y", yaml.safe_dump(task["parameters"], default_flow_style=True),
        "--cwd", str(Path(task["notebook"]).parent),
        "--no-progress-bar", "--log-level", "WARNING",
    ]
    if task["timeout"] is not None:
        command += ["--execution-timeout", str(max(1, math.ceil(task["timeout"])))]
    if task["kernel_name"]:
        command += ["--kernel", task["kernel_name"]]
    return command


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _canonical(value: Any) -> str:
    """A stable text form of a JSON value, for comparing parameters across runs."""
    return json.dumps(_jsonable(value), sort_keys=True, default=str)


def _run_record_path(task: Mapping[str, Any]) -> Path:
    return Path(task["out"]) / f"{task['id']}.run.json"


def _write_run_record(task: Mapping[str, Any], result: LessonResult) -> None:
    """``<out>/<id>.run.json``: what ran and how it ended (the key of resume)."""
    from . import __version__

    payload = {
        "id": task["id"],
        "preset": task["preset"],
        "parameters": _jsonable(task["parameters"]),
        "notebook": task["notebook"],
        "notebook_sha256": task["notebook_sha256"],
        "dro_lab": __version__,
        "status": result.status,
        "failure": result.failure,
        "error": result.error,
        "seconds": result.seconds,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    _write_text_atomic(_run_record_path(task), json.dumps(payload, indent=2, default=str))


def _cached_result(task: Mapping[str, Any], html_lock: threading.Lock) -> LessonResult | None:
    """The earlier run of ``task`` if it can stand for a new one (resume), else None.

    Reusable: ``<id>.run.json`` says ``ok`` for the same preset, parameters and source-notebook
    hash, and the executed notebook is still there. A missing HTML page is exported again.
    """
    out = Path(task["out"])
    lesson_id = task["id"]
    try:
        previous = json.loads(_run_record_path(task).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    executed = out / f"{lesson_id}.ipynb"
    if not (
        isinstance(previous, dict)
        and previous.get("status") == "ok"
        and previous.get("preset") == task["preset"]
        and previous.get("notebook_sha256") == task["notebook_sha256"]
        and _canonical(previous.get("parameters")) == _canonical(task["parameters"])
        and executed.is_file()
    ):
        return None
    seconds = previous.get("seconds")
    result = LessonResult(
        id=lesson_id, title=task["title"], status="cached", parameters=dict(task["parameters"]),
        seconds=float(seconds) if isinstance(seconds, (int, float)) else 0.0, notebook=executed,
    )
    html_path = out / f"{lesson_id}.html"
    if task["html"]:
        if not html_path.is_file():  # the earlier run had --no-html: export now, no re-execution
            try:
                with html_lock:
                    _export_html(executed, html_path, task["title"])
            except Exception:
                return None
        result.html = html_path
    elif html_path.is_file():
        result.html = html_path
    record_path = out / f"{lesson_id}.record.json"
    if record_path.is_file():
        result.record_file = record_path
        result.records = read_records(record_path)
    log_path = out / f"{lesson_id}.log"
    result.log = log_path if log_path.is_file() else None
    return result


#: Seconds between two papermill launches of this process. jupyter_client chooses a kernel's ports by
#: binding and releasing them, so kernels started at the same moment can pick the same ports and
#: lose messages (a hang until the cell timeout; papermill issue #511). Spacing the launches lets
#: each kernel bind its ports before the next one chooses.
_LAUNCH_GAP = 2.0
_launch_lock = threading.Lock()
_last_launch = [-math.inf]
#: Seconds a stopped papermill process and its kernel get to exit after SIGTERM before SIGKILL.
_STOP_GRACE = 3.0


class _Cancelled(Exception):
    """The run was interrupted before this lesson started."""


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C (SIGINT) or, from ``dro-lab``, SIGTERM/SIGHUP.

    Raised by :func:`run_course` and :func:`run_sweep` after they have stopped the running lessons'
    papermill processes and kernels, marked those lessons ``failed`` (failure ``interrupted``; their
    ``<id>.run.json`` says so, so resume runs them again), reported the lessons that had not started
    as ``skipped`` and written the summary. Finished lessons keep their outputs; run again to resume.

    Attributes:
        results: one :class:`LessonResult` per lesson (per syllabus lesson for :func:`run_course`).
        signum: the signal that stopped the run (``signal.SIGINT`` for Ctrl-C).
    """

    def __init__(self, results: Sequence[LessonResult] = (), signum: int = signal.SIGINT):
        super().__init__(f"run interrupted by {signal.Signals(signum).name}")
        self.results = list(results)
        self.signum = int(signum)


class _RunControl:
    """The papermill processes of one run, so that an interrupt can stop them (and their kernels)."""

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self._lock = threading.Lock()
        self._processes: set[subprocess.Popen] = set()

    def launch(self, command: list[str], **kwargs: Any) -> subprocess.Popen:
        with _launch_lock:
            wait = _last_launch[0] + _LAUNCH_GAP - time.monotonic()
            if wait > 0:
                self.cancel.wait(wait)
            with self._lock:
                if self.cancel.is_set():
                    raise _Cancelled()
                # Its own session: a Ctrl-C in the terminal reaches the runner only, which then stops
                # each lesson in order (papermill, then its kernel) and records what happened.
                process = subprocess.Popen(command, start_new_session=True, **kwargs)
                self._processes.add(process)
            _last_launch[0] = time.monotonic()
        return process

    def forget(self, process: subprocess.Popen) -> None:
        with self._lock:
            self._processes.discard(process)

    def stop_all(self) -> None:
        """Set the cancel flag; SIGTERM every running papermill and its kernel, SIGKILL after a grace."""
        self.cancel.set()
        with self._lock:
            processes = [p for p in self._processes if p.poll() is None]
        try:
            import psutil
        except ImportError:  # ipykernel depends on psutil; without it, stop papermill only (its
            psutil = None    # kernel notices that its parent is gone and exits)
        descendants: list[Any] = []
        for process in processes:
            if psutil is not None:
                try:
                    descendants += psutil.Process(process.pid).children(recursive=True)
                except psutil.Error:
                    pass
        for victim in [*processes, *descendants]:
            try:
                victim.terminate()
            except Exception:
                pass
        deadline = time.monotonic() + _STOP_GRACE
        # Popen.wait for our own children (only it may reap them: their exit status tells the worker
        # thread what happened), psutil's wait for the kernels (not our children).
        for victim in [*processes, *descendants]:
            try:
                victim.wait(max(0.01, deadline - time.monotonic()))
            except Exception:
                try:
                    victim.kill()
                except Exception:
                    pass


def _launch(command: list[str], **kwargs: Any) -> subprocess.Popen:
    """Start ``command`` (papermill) after the launch gap; outside a run's control."""
    return _RunControl().launch(command, **kwargs)


def _where(cell: FailingCell | None) -> str:
    return f" in cell {cell.index} (`{cell.first_line}`)" if cell is not None else ""


def _classify_failure(
    task: Mapping[str, Any], returncode: int, executed: Path, log: str, log_name: str, interrupted: bool,
) -> tuple[str, FailingCell | None, str]:
    """(failure kind, failing cell, one-line error) of a papermill run that exited with ``returncode``."""
    if interrupted:
        cell = find_failing_cell(executed)
        if cell is not None:
            cell = dataclasses.replace(cell, ename="Interrupted", evalue="the run was stopped while this cell ran")
        return "interrupted", cell, f"interrupted: the run was stopped{_where(cell)}; run again to resume"
    reason = _last_exception_line(log)
    cell = find_failing_cell(executed, log)
    name = reason[0] if reason else ""
    if name == "CellTimeoutError":
        limit = max(1, math.ceil(task["timeout"])) if task.get("timeout") is not None else None
        after = f" after {limit} s" if limit is not None else ""
        return "timed out", cell, f"timed out{after}{_where(cell)} (the per-cell timeout; raise --timeout)"
    if name == "DeadKernelError":
        return "kernel died", cell, f"kernel died{_where(cell)} (killed, out of memory or crashed; see {log_name})"
    if returncode < 0:
        try:
            signame = signal.Signals(-returncode).name
        except ValueError:
            signame = f"signal {-returncode}"
        return "killed", cell, f"papermill was killed by {signame}{_where(cell)} (see {log_name})"
    if cell is not None:
        return "raised", cell, f"{cell.ename}: {cell.evalue}" if cell.evalue else cell.ename
    error = f"{reason[0]}: {reason[1]}" if reason else f"papermill exited with status {returncode}"
    return "raised", None, f"{error} (see {log_name})"


def _execute_lesson(
    task: Mapping[str, Any], html_lock: threading.Lock, control: _RunControl | None = None
) -> LessonResult:
    """Run one lesson: papermill in a subprocess (its own kernel), then the HTML export. Never raises
    for a failing lesson; writes ``<id>.run.json`` at the end. Raises :class:`_Cancelled` when the
    run was interrupted before the lesson started."""
    control = control if control is not None else _RunControl()
    if control.cancel.is_set():
        raise _Cancelled()
    out = Path(task["out"])
    lesson_id = task["id"]
    executed = out / f"{lesson_id}.ipynb"
    html_path = out / f"{lesson_id}.html"
    record_path = out / f"{lesson_id}.record.json"
    log_path = out / f"{lesson_id}.log"
    for stale in (_run_record_path(task), executed, html_path, record_path):
        stale.unlink(missing_ok=True)  # results must come from this run only

    env = {
        **os.environ,
        RECORD_ENV: str(record_path),
        # plotly >= 6 stores only its own mime type under nbconvert, which HTML cannot show.
        "PLOTLY_RENDERER": "notebook",
        PRESET_ENV: str(task["parameters"].get("preset", task["preset"])),
        **task["env"],
    }
    result = LessonResult(id=lesson_id, title=task["title"], status="ok", parameters=dict(task["parameters"]))
    start = time.perf_counter()
    # A subprocess, not a worker of ours: papermill's own CLI, whose log (and the kernel's stderr)
    # goes to <id>.log instead of the terminal; and no multiprocessing re-import of the caller.
    with open(log_path, "w", encoding="utf-8") as log_file:
        process = control.launch(
            _papermill_command(task, executed), env=env, stdin=subprocess.DEVNULL,
            stdout=log_file, stderr=subprocess.STDOUT,
        )
        start = time.perf_counter()  # not counting the wait for a launch slot
        try:
            returncode = process.wait()
        finally:
            control.forget(process)
    log = log_path.read_text(encoding="utf-8", errors="replace")
    interrupted = returncode != 0 and control.cancel.is_set()
    if returncode != 0:
        result.status = "failed"
        result.failure, result.failing_cell, result.error = _classify_failure(
            task, returncode, executed, log, log_path.name, interrupted)

    if executed.is_file():
        result.notebook = executed
        if task["html"] and not interrupted:  # stopping: no export, exit fast
            try:
                with html_lock:  # nbconvert's exporters are not documented as thread-safe
                    _export_html(executed, html_path, task["title"])
                result.html = html_path
            except Exception as exc:
                result.status = "failed"
                result.failure = result.failure or "raised"
                result.error = result.error or f"HTML export failed: {type(exc).__name__}: {exc}"
    if record_path.is_file():
        try:
            result.records = read_records(record_path)
            result.record_file = record_path
        except ValueError:  # half-written by a killed kernel (record() writes atomically; belt and braces)
            pass
    result.log = log_path
    result.seconds = time.perf_counter() - start
    _write_run_record(task, result)
    return result


def notebook_parameters(notebook: str | os.PathLike[str]) -> set[str]:
    """Names assigned in the notebook's (first) ``parameters`` cell (empty if it has none).

    Read with :mod:`ast`: ``papermill.inspect_notebook`` skips lines whose comment it cannot parse
    (``beta = 10.0  # β = 1/τ ...``), which would hide declared parameters.
    """
    import ast

    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    for cell in nb.cells:
        if cell.get("cell_type") != "code" or "parameters" not in cell.get("metadata", {}).get("tags", []):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:  # e.g. IPython magics: fall back on papermill's own reader
            import papermill

            return set(papermill.inspect_notebook(str(notebook)))
        names: set[str] = set()
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names.add(name.id)
        return names
    return set()


def _check_run_arguments(
    syllabus: Syllabus | str | os.PathLike[str] | None,
    preset: str,
    jobs: int,
    timeout: float | None,
    only: Sequence[str] | None,
) -> tuple[Syllabus, list[Lesson]]:
    if not isinstance(syllabus, Syllabus):
        syllabus = load_syllabus(syllabus)
    if preset not in syllabus.presets:
        raise ValueError(f"Invalid preset: {preset!r}; the syllabus has {', '.join(syllabus.presets)}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"Invalid number of jobs: {jobs!r} (expected an integer >= 1)")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"Invalid timeout: {timeout!r} (expected seconds > 0 or None)")
    selected = syllabus.select(only)
    for lesson in selected:
        if not lesson.notebook.is_file():
            raise FileNotFoundError(f"Lesson {lesson.id!r}: notebook not found: {lesson.notebook}")
    return syllabus, selected


def _check_overrides(
    selected: Sequence[Lesson], overrides: Mapping[str, Any], declared: Mapping[str, set[str]]
) -> None:
    undeclared = [name for name in overrides if not any(name in d for d in declared.values())]
    if undeclared:
        raise ValueError(
            f"Invalid parameter(s) {undeclared}: not declared in the parameters cell of any selected "
            f"lesson ({', '.join(lesson.id for lesson in selected)})"
        )


def _make_task(
    lesson: Lesson, *, preset: str, params: dict[str, Any], out_dir: Path, timeout: float | None,
    kernel_name: str | None, html: bool, notebook_sha256: str,
) -> dict[str, Any]:
    return {
        "id": lesson.id,
        "title": lesson.title,
        "notebook": str(lesson.notebook),
        "notebook_sha256": notebook_sha256,
        "out": str(out_dir),
        "preset": preset,
        "parameters": params,
        "timeout": timeout,
        "kernel_name": kernel_name,
        "html": html,
        "env": {},
    }


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """While the runner stops its lessons (a few seconds at most), further SIGINT/SIGTERM/SIGHUP are
    ignored, so that pressing Ctrl-C twice cannot orphan a kernel. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            try:
                previous[number] = signal.signal(number, signal.SIG_IGN)
            except (ValueError, OSError):
                pass
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


def _not_started(task: Mapping[str, Any]) -> LessonResult:
    return LessonResult(id=task["id"], title=task["title"], status="skipped", parameters=dict(task["parameters"]),
                        error="not started: the run was interrupted")


def _run_tasks(
    tasks: Sequence[dict[str, Any]],
    *,
    jobs: int,
    force: bool,
    on_result: Callable[[LessonResult], None] | None,
) -> list[LessonResult]:
    """Run ``tasks`` (reusing earlier runs unless ``force``), ``jobs`` at a time; results in task order.

    On KeyboardInterrupt (Ctrl-C; ``dro-lab`` turns SIGTERM and SIGHUP into one): stops the running
    lessons (see :class:`_RunControl`), lets their threads record them as interrupted, and raises
    :class:`RunInterrupted` with one result per task.
    """
    from concurrent.futures import ThreadPoolExecutor, as_completed

    html_lock = threading.Lock()
    control = _RunControl()
    results: list[LessonResult | None] = [None] * len(tasks)
    reported: set[int] = set()
    futures: dict[Any, int] = {}
    pool: ThreadPoolExecutor | None = None

    def outcome(future: Any, task: Mapping[str, Any]) -> LessonResult:
        if future.cancelled():
            return _not_started(task)
        try:
            return future.result()
        except _Cancelled:
            return _not_started(task)
        except Exception as exc:  # e.g. the output folder vanished; report, go on
            return LessonResult(
                id=task["id"], title=task["title"], status="failed", parameters=task["parameters"],
                error=f"{type(exc).__name__}: {exc}", failure="raised",
            )

    def report(position: int, result: LessonResult) -> None:
        results[position] = result
        reported.add(position)
        if on_result is not None:
            on_result(result)

    try:
        pending: list[int] = []
        for position, task in enumerate(tasks):
            cached = None if force else _cached_result(task, html_lock)
            if cached is None:
                pending.append(position)
            else:
                report(position, cached)

        # Several torch kernels on few cores fight for them; share the cores unless the user chose.
        workers = min(jobs, max(1, len(pending)))
        if workers > 1:
            threads = str(max(1, (os.cpu_count() or 1) // workers))
            env = {k: os.environ.get(k, threads) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
            for position in pending:
                tasks[position]["env"] = env

        if pending:
            # Threads only wait on papermill subprocesses, so the GIL is no bottleneck. The main thread
            # waits in as_completed, where a Ctrl-C lands.
            pool = ThreadPoolExecutor(max_workers=workers)
            for position in pending:
                futures[pool.submit(_execute_lesson, tasks[position], html_lock, control)] = position
            for future in as_completed(futures):
                position = futures[future]
                report(position, outcome(future, tasks[position]))
            pool.shutdown(wait=True)
    except KeyboardInterrupt as exc:
        control.cancel.set()
        for future in futures:
            future.cancel()  # not started yet: never starts
        with _interrupts_deferred():  # a second Ctrl-C must not leave kernels behind
            control.stop_all()
            if pool is not None:
                pool.shutdown(wait=True)  # the running lessons' threads record them as interrupted
        for future, position in futures.items():
            if position not in reported:
                results[position] = outcome(future, tasks[position])
                if on_result is not None:
                    try:
                        on_result(results[position])
                    except Exception:
                        pass
        final = [r if r is not None else _not_started(task) for r, task in zip(results, tasks)]
        raise RunInterrupted(final, signum=getattr(exc, "signum", signal.SIGINT)) from None
    return [r for r in results if r is not None]


def _in_syllabus_order(syllabus: Syllabus, results: Iterable[LessonResult]) -> list[LessonResult]:
    by_id = {r.id: r for r in results}
    return [
        by_id.get(lesson.id) or LessonResult(id=lesson.id, title=lesson.title, status="skipped")
        for lesson in syllabus.lessons
    ]


def run_course(
    syllabus: Syllabus | str | os.PathLike[str] | None = None,
    *,
    preset: str = "smoke",
    out: str | os.PathLike[str] = "build/course",
    jobs: int = 1,
    only: Sequence[str] | None = None,
    parameters: Mapping[str, Any] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    html: bool = True,
    force: bool = False,
    kernel_name: str | None = None,
    on_result: Callable[[LessonResult], None] | None = None,
) -> list[LessonResult]:
    """Execute the course's lessons with papermill and write executed notebooks, HTML and a summary.

    Each lesson runs in its own papermill process and kernel (``jobs`` lessons at a time), from its
    notebook's folder, with the preset's parameters plus ``parameters`` injected. A failing lesson
    does not stop the others: it is reported with its failing cell, and its partial executed
    notebook and HTML are still written. Written under ``out`` only::

        <id>.ipynb  <id>.html  <id>.log  <id>.record.json  <id>.run.json   per lesson
        summary.md  summary.json  index.html                               for the run

    Resume: ``<id>.run.json`` holds the preset, the exact parameters, the source notebook's SHA-256,
    the dro_lab version, the status and the seconds of the lesson's last run. A lesson whose last
    run in ``out`` was ok with the same preset, parameters and notebook, and whose executed notebook
    is still there, is not executed again: its result has status ``"cached"`` (an ok status) and the
    stored seconds and records. Failed lessons always run again; ``force=True`` re-runs everything.

    The kernels see ``PLOTLY_RENDERER=notebook`` (figures embedded in the HTML),
    ``DRO_LAB_PRESET`` = the preset passed, ``DRO_LAB_RECORD`` = ``<out>/<id>.record.json`` and,
    with ``jobs > 1``, ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` sharing the cores (unless set).

    Args:
        syllabus: a :class:`Syllabus`, a path to one, or None for ``course/syllabus.yaml``.
        preset: one of the syllabus presets (``smoke``, ``full``, ``gpu``).
        out: output folder (created).
        jobs: lessons run at once (>= 1).
        only: lesson ids (or unique prefixes) to run; the others are reported ``"skipped"``.
        parameters: overrides on top of the preset's parameters. Each is passed only to lessons
            that declare it; one that no selected lesson declares is an error (a typo).
        timeout: per-cell execution timeout in seconds (None: no limit).
        html: export each executed notebook to HTML.
        force: execute every selected lesson even when an earlier run in ``out`` can be reused.
        kernel_name: Jupyter kernel; default: the one in each notebook's metadata.
        on_result: called with each :class:`LessonResult` as soon as it is known.

    Returns:
        one :class:`LessonResult` per syllabus lesson, in syllabus order.

    Faults: a lesson that raises, runs a cell past ``timeout`` or whose kernel dies is ``failed``
    with :attr:`LessonResult.failure` (``raised``, ``timed out``, ``kernel died``, ``killed``), its
    failing cell and a one-line error; the other lessons run on and keep their outputs. A Ctrl-C
    stops the running lessons (papermill and kernel), records them as failed with failure
    ``interrupted``, writes the summary (``"interrupted"`` in ``summary.json``) and raises
    :class:`RunInterrupted`; the same call again resumes. Every run and summary file is written
    atomically.

    Raises:
        ValueError: unknown preset or lesson, bad ``jobs``/``timeout``, undeclared parameter.
        RunInterrupted: the run was interrupted (a ``KeyboardInterrupt``); its ``results`` hold
            every lesson's result.
    """
    syllabus, selected = _check_run_arguments(syllabus, preset, jobs, timeout, only)
    overrides = dict(parameters or {})
    declared = {lesson.id: notebook_parameters(lesson.notebook) for lesson in selected} if overrides else {}
    _check_overrides(selected, overrides, declared)

    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    out_dir = out_dir.resolve()

    tasks = []
    for lesson in selected:
        params = lesson.parameters(preset)
        params.update({k: v for k, v in overrides.items() if k in declared.get(lesson.id, ())})
        tasks.append(_make_task(
            lesson, preset=preset, params=params, out_dir=out_dir, timeout=timeout, kernel_name=kernel_name,
            html=html, notebook_sha256=_sha256(lesson.notebook),
        ))
    try:
        results = _run_tasks(tasks, jobs=jobs, force=force, on_result=on_result)
    except RunInterrupted as stop:
        stop.results = _in_syllabus_order(syllabus, stop.results)
        write_summary(stop.results, out_dir, syllabus=syllabus, preset=preset, parameters=overrides,
                      interrupted=stop.signum)
        raise
    ordered = _in_syllabus_order(syllabus, results)
    write_summary(ordered, out_dir, syllabus=syllabus, preset=preset, parameters=overrides)
    return ordered


# --------------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------------

_STATUSES = ("ok", "cached", "failed", "skipped")


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def summary_table(results: Sequence[LessonResult]) -> str:
    """The results as a Markdown table: lesson / title / status / seconds / failing cell (for a failed
    lesson: the failure kind, the cell and the message, :attr:`LessonResult.problem`)."""
    lines = [
        "| lesson | title | status | seconds | failing cell |",
        "|---|---|---|---:|---|",
    ]
    for r in results:
        seconds = f"{r.seconds:.1f}" if r.status != "skipped" else ""
        failing = r.problem
        lines.append(
            f"| {_md_cell(r.id)} | {_md_cell(r.title)} | {r.status} | {seconds} | {_md_cell(failing)} |"
        )
    return "\n".join(lines)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _is_number(value: Any) -> bool:
    """A plottable number: int or float (not bool), finite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _tally(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{counts[s]} {s}" for s in _STATUSES)


def write_summary(
    results: Sequence[LessonResult],
    out: str | os.PathLike[str],
    *,
    syllabus: Syllabus | None = None,
    preset: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    interrupted: int | bool | None = None,
) -> dict[str, Path]:
    """Write ``summary.md``, ``summary.json`` and ``index.html`` into ``out``; return their paths.

    ``index.html`` links every executed lesson (HTML page, notebook, log) and shows its status
    (ok / cached / failed / skipped), its seconds beside the syllabus's expected minutes for the
    preset, for a failed lesson the failure kind, failing cell and message, and its scalar records
    (collapsed). ``interrupted`` (a signal number, or True) marks a run that was stopped before the
    end: the pages say so and ``summary.json`` has ``"ok": false``. Each file is written atomically.
    """
    out = Path(out)
    stopped_by = None
    if interrupted:
        try:
            stopped_by = signal.Signals(int(interrupted)).name if interrupted is not True else "SIGINT"
        except ValueError:
            stopped_by = f"signal {int(interrupted)}"
    stop_note = (f"**interrupted** by {stopped_by}: the lessons that had not finished are failed (interrupted) "
                 "or skipped (not started); run the same command again to resume") if stopped_by else ""
    counts = {s: sum(r.status == s for r in results) for s in _STATUSES}
    from . import __version__

    title = syllabus.title if syllabus else "dro_lab course"
    header = f"preset `{preset}`" + (f", parameters `{dict(parameters)}`" if parameters else "")
    lessons = {lesson.id: lesson for lesson in syllabus.lessons} if syllabus else {}

    def expected_minutes(r: LessonResult) -> float | None:
        lesson = lessons.get(r.id)
        return lesson.minutes.get(preset) if lesson is not None and preset is not None else None

    md = [
        f"# {title}: run summary",
        "",
        f"{header}; {_tally(counts)}.",
        "",
        *([stop_note, ""] if stop_note else []),
        summary_table(results),
        "",
    ]
    failed = [r for r in results if r.status == "failed"]
    if failed:
        md += ["## Failures", ""]
        md += [f"- **{r.id}** ({r.failure or 'raised'}): {_md_cell(r.problem)}"
               + (f" — log: `{Path(os.path.relpath(r.log, out)).as_posix()}`" if r.log else "") for r in failed]
        md.append("")
    paths = {"md": out / "summary.md", "json": out / "summary.json", "html": out / "index.html"}
    _write_text_atomic(paths["md"], "\n".join(md))

    lesson_dicts = []
    for r in results:
        entry = r.to_dict(relative_to=out)
        entry["expected_minutes"] = expected_minutes(r)
        lesson_dicts.append(entry)
    payload = {
        "title": title,
        "syllabus": str(syllabus.path) if syllabus else None,
        "preset": preset,
        "parameters": dict(parameters or {}),
        "dro_lab": __version__,
        "python": sys.version.split()[0],
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "counts": counts,
        "ok": counts["failed"] == 0 and not stopped_by,
        "interrupted": stopped_by,
        "lessons": lesson_dicts,
    }
    _write_text_atomic(paths["json"], json.dumps(payload, indent=2, default=str))

    def link(path: Path | None, label: str) -> str:
        if path is None:
            return ""
        return f'<a href="{html.escape(Path(os.path.relpath(path, out)).as_posix())}">{label}</a>'

    tally = f"{header.replace('`', '')}; {_tally(counts)}."
    rows = []
    for r in results:
        failing = r.problem
        seconds = f"{r.seconds:.1f}" if r.status != "skipped" else ""
        if r.status == "cached" and seconds:
            seconds += " (earlier run)"
        minutes = expected_minutes(r)
        expected = f"{60 * minutes:.0f}" if minutes is not None else ""
        over = minutes is not None and r.status in ("ok", "cached") and r.seconds > 60 * minutes
        slow = ' class="slow"' if over else ""
        title_cell = link(r.html, html.escape(r.title)) or html.escape(r.title)
        files = " ".join(filter(None, (link(r.html, "HTML"), link(r.notebook, "notebook"), link(r.log, "log"))))
        scalars = {k: v for k, v in r.records.items() if _is_scalar(v)}
        if scalars:
            items = "".join(
                f"<tr><td>{html.escape(k)}</td><td>{html.escape(_format_value(v))}</td></tr>"
                for k, v in scalars.items()
            )
            records_cell = (f"<details><summary>{len(scalars)} records</summary>"
                            f'<table class="records">{items}</table></details>')
        else:
            records_cell = ""
        rows.append(
            f'<tr class="{r.status}"><td>{html.escape(r.id)}</td><td>{title_cell}</td><td>{r.status}</td>'
            f"<td{slow}>{seconds}</td><td>{expected}</td><td>{files}</td>"
            f"<td><code>{html.escape(failing)}</code></td><td>{records_cell}</td></tr>"
        )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}}
tr.failed td{{background:#fdd}}tr.skipped td{{color:#888}}tr.cached td{{background:#f4f8ff}}
td.slow{{color:#b00}}p.interrupted{{color:#b00;font-weight:bold}}
table.records td{{border:none;padding:0 .6em 0 0;font-size:90%}}</style></head>
<body><h1>{html.escape(title)}</h1>
<p>{html.escape(tally)}</p>
{f'<p class="interrupted">{html.escape(stop_note.replace("**", ""))}</p>' if stop_note else ""}
<table><thead><tr><th>lesson</th><th>title</th><th>status</th><th>seconds</th>
<th>expected seconds ({html.escape(str(preset))})</th><th>files</th><th>failing cell</th><th>records</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table></body></html>
"""
    _write_text_atomic(paths["html"], page)
    return paths


# --------------------------------------------------------------------------------------------
# Parameter sweeps
# --------------------------------------------------------------------------------------------


def _split_top_level(text: str) -> list[str]:
    """Split ``text`` on the commas that are outside brackets and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    closing = {")": "(", "]": "[", "}": "{"}
    for position, char in enumerate(text):
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in closing:
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append(text[start:position])
            start = position + 1
    parts.append(text[start:])
    return [part.strip() for part in parts]


def parse_sweep(text: str) -> tuple[str, list[Any]]:
    """Parse ``PARAM=v1,v2,...`` into ``(param, [values])``.

    Values are split on top-level commas only (``betas=[0.1,1],[10,100]`` is two lists) and each
    is parsed with :func:`parse_parameter_value`.

    Raises:
        ValueError: no ``=``, a name that is not a Python identifier, an empty or repeated value.
    """
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep:
        raise ValueError(f"Invalid sweep {text!r}: expected PARAM=v1,v2,... (e.g. beta=0.1,1,10)")
    if not _IDENT_RE.match(name):
        raise ValueError(f"Invalid sweep {text!r}: {name!r} is not a parameter name")
    items = _split_top_level(rest)
    if any(not item for item in items):
        raise ValueError(f"Invalid sweep {text!r}: empty value (values are separated by single commas)")
    values = [parse_parameter_value(item) for item in items]
    seen: set[str] = set()
    for value in values:
        key = _canonical(value) + type(value).__name__
        if key in seen:
            raise ValueError(f"Invalid sweep {text!r}: value {value!r} is given twice")
        seen.add(key)
    return name, values


def _value_label(value: Any) -> str:
    """The text of a swept value: as typed for numbers and strings, ``repr`` otherwise."""
    return value if isinstance(value, str) else repr(value)


def _folder_name(param: str, label: str, taken: set[str]) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.+-]+", "_", label).strip("_.") or "value"
    name = f"{param}={safe}"
    candidate, k = name, 2
    while candidate.lower() in taken:  # case-insensitive file systems
        candidate, k = f"{name}-{k}", k + 1
    taken.add(candidate.lower())
    return candidate


@dataclass
class SweepResult:
    """The outcome of :func:`run_sweep`.

    Attributes:
        param: the swept parameter.
        values: the values, in the order given.
        runs: value label (the value as typed, e.g. ``"0.1"``) -> one :class:`LessonResult` per
            syllabus lesson, in syllabus order (unselected lessons ``"skipped"``).
        out: the sweep's folder ``<out>/sweep-<param>``.
        folders: value label -> the folder of that value's course run.
        lessons: ids of the lessons swept.
        preset: the preset.
        parameters: the other parameters given (not swept).
    """

    param: str
    values: list[Any]
    runs: dict[str, list[LessonResult]]
    out: Path | None = None
    folders: dict[str, Path] = field(default_factory=dict)
    lessons: list[str] = field(default_factory=list)
    preset: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        """Value labels, in the order of :attr:`values`."""
        return list(self.runs)

    @property
    def ok(self) -> bool:
        """True when no run of any value failed."""
        return all(r.ok for results in self.runs.values() for r in results)

    def results(self, label: str) -> list[LessonResult]:
        """The swept lessons' results for one value label (skipped lessons left out)."""
        return [r for r in self.runs[label] if r.id in self.lessons or (not self.lessons and r.status != "skipped")]


def run_sweep(
    syllabus: Syllabus | str | os.PathLike[str] | None,
    param: str,
    values: Sequence[Any],
    *,
    preset: str = "smoke",
    out: str | os.PathLike[str] = "build/course",
    jobs: int = 1,
    only: Sequence[str] | None = None,
    parameters: Mapping[str, Any] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    html: bool = True,
    force: bool = False,
    kernel_name: str | None = None,
    on_result: Callable[[LessonResult], None] | None = None,
) -> SweepResult:
    """Run the selected lessons once per value of ``param`` and summarise the records across values.

    Each value is a normal :func:`run_course` run (with resume) into
    ``<out>/sweep-<param>/<param>=<value>/``; ``jobs`` applies across all (value, lesson) pairs.
    Then :func:`write_sweep_summary` writes ``sweep.json``, ``sweep.md``, ``sweep.html`` (the figure)
    and ``index.html`` into ``<out>/sweep-<param>/``. ``on_result`` receives each lesson result as
    it comes; its ``parameters[param]`` says which value it belongs to.

    Raises:
        ValueError: an empty or repeated value list, a ``param`` that some selected lesson does not
            declare (the message lists them), ``param`` also in ``parameters``, and every error of
            :func:`run_course`.
    """
    syllabus, selected = _check_run_arguments(syllabus, preset, jobs, timeout, only)
    if not isinstance(param, str) or not _IDENT_RE.match(param):
        raise ValueError(f"Invalid sweep parameter: {param!r} (expected a Python identifier)")
    values = list(values)
    if not values:
        raise ValueError(f"Invalid sweep over {param!r}: no values")
    labels = [_value_label(v) for v in values]
    if len(set(labels)) != len(labels):
        raise ValueError(f"Invalid sweep over {param!r}: repeated values in {labels}")
    overrides = dict(parameters or {})
    if param in overrides:
        raise ValueError(
            f"Invalid sweep: {param!r} is both swept and given as a parameter ({param}={overrides[param]!r}); "
            "give it once"
        )
    if not selected:
        raise ValueError("Invalid sweep: no lesson selected")
    declared = {lesson.id: notebook_parameters(lesson.notebook) for lesson in selected}
    lacking = [lesson.id for lesson in selected if param not in declared[lesson.id]]
    if lacking:
        raise ValueError(
            f"Invalid sweep parameter {param!r}: not declared in the parameters cell of lesson(s) "
            f"{', '.join(lacking)}; choose lessons that declare it with --only"
        )
    _check_overrides(selected, overrides, declared)

    sweep_dir = Path(out) / f"sweep-{param}"
    sweep_dir.mkdir(parents=True, exist_ok=True)
    sweep_dir = sweep_dir.resolve()
    taken: set[str] = set()
    folders = {label: sweep_dir / _folder_name(param, label, taken) for label in labels}

    hashes = {lesson.id: _sha256(lesson.notebook) for lesson in selected}
    tasks, owner = [], []
    for value, label in zip(values, labels):
        folders[label].mkdir(parents=True, exist_ok=True)
        for lesson in selected:
            params = lesson.parameters(preset)
            params.update({k: v for k, v in overrides.items() if k in declared[lesson.id]})
            params[param] = value
            tasks.append(_make_task(
                lesson, preset=preset, params=params, out_dir=folders[label], timeout=timeout,
                kernel_name=kernel_name, html=html, notebook_sha256=hashes[lesson.id],
            ))
            owner.append(label)
    try:
        results = _run_tasks(tasks, jobs=jobs, force=force, on_result=on_result)
    except RunInterrupted as stop:
        for value, label in zip(values, labels):
            ordered = _in_syllabus_order(syllabus, [r for r, o in zip(stop.results, owner) if o == label])
            write_summary(ordered, folders[label], syllabus=syllabus, preset=preset,
                          parameters={**overrides, param: value}, interrupted=stop.signum)
        raise

    runs: dict[str, list[LessonResult]] = {}
    for value, label in zip(values, labels):
        ordered = _in_syllabus_order(syllabus, [r for r, o in zip(results, owner) if o == label])
        write_summary(ordered, folders[label], syllabus=syllabus, preset=preset,
                      parameters={**overrides, param: value})
        runs[label] = ordered
    sweep = SweepResult(
        param=param, values=values, runs=runs, out=sweep_dir, folders=folders,
        lessons=[lesson.id for lesson in selected], preset=preset, parameters=overrides,
    )
    write_sweep_summary(sweep, sweep_dir)
    return sweep


def _sweep_records(sweep: SweepResult) -> dict[str, list[str]]:
    """Lesson id -> names of its numeric scalar records (in any value), sorted."""
    names: dict[str, set[str]] = {lesson: set() for lesson in sweep.lessons}
    for label in sweep.labels:
        for r in sweep.results(label):
            names.setdefault(r.id, set()).update(k for k, v in r.records.items() if _is_number(v))
    return {lesson: sorted(found) for lesson, found in names.items()}


def _sweep_value(sweep: SweepResult, label: str, lesson: str, name: str) -> float | None:
    """A record's value for one value and lesson; None for a failed run or a missing record."""
    for r in sweep.runs[label]:
        if r.id == lesson:
            value = r.records.get(name) if r.ok and r.status != "skipped" else None
            return float(value) if _is_number(value) else None
    return None


def _sweep_grid(sweep: SweepResult) -> tuple[list[str], list[list[str]]]:
    """Header and rows (one per value) of the sweep table, as text."""
    records = _sweep_records(sweep)
    several = len(records) > 1
    header = [sweep.param]
    columns: list[tuple[str, str | None]] = []  # (lesson, record name or None for status/seconds)
    for lesson, names in records.items():
        prefix = f"{lesson}: " if several else ""
        header += [f"{prefix}{name}" for name in names] + [f"{prefix}status", f"{prefix}seconds"]
        columns += [(lesson, name) for name in names] + [(lesson, "\0status"), (lesson, "\0seconds")]
    rows = []
    for label in sweep.labels:
        by_id = {r.id: r for r in sweep.runs[label]}
        row = [label]
        for lesson, name in columns:
            r = by_id.get(lesson)
            if name == "\0status":
                row.append(r.status if r else "")
            elif name == "\0seconds":
                row.append(f"{r.seconds:.1f}" if r and r.status != "skipped" else "")
            else:
                value = _sweep_value(sweep, label, lesson, name)
                row.append("" if value is None else f"{value:.6g}")
        rows.append(row)
    return header, rows


def sweep_table(sweep: SweepResult) -> str:
    """The sweep as a Markdown table: one row per value; per lesson, one column per numeric scalar
    record, then its status and seconds. Failed runs and missing records are empty cells."""
    header, rows = _sweep_grid(sweep)
    lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |",
             "|" + "---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _sweep_axis(sweep: SweepResult) -> tuple[list[Any], str]:
    """x values and axis type: numbers on a linear or log axis, else the labels as categories."""
    if all(_is_number(v) for v in sweep.values):
        numbers = [float(v) for v in sweep.values]
        if min(numbers) > 0 and max(numbers) / min(numbers) >= 100:
            return numbers, "log"
        return numbers, "linear"
    return list(sweep.labels), "category"


def sweep_figure(sweep: SweepResult, *, columns: int = 3):
    """A plotly figure of the sweep: one subplot per numeric scalar record (those that change with the
    value first, then the constant ones, then the run time), x = the swept value, y = the record,
    one line per lesson; failed runs and missing records are gaps.

    The x axis is logarithmic when every value is a positive number and they span at least two
    decades; values that are not all numbers are categories, in the order given.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from . import viz

    records = _sweep_records(sweep)

    def varies(name: str) -> bool:  # the records that change with the value come first
        for lesson, found in records.items():
            if name in found:
                ys = {_sweep_value(sweep, label, lesson, name) for label in sweep.labels} - {None}
                if len(ys) > 1:
                    return True
        return False

    names = sorted({name for found in records.values() for name in found}, key=lambda n: (not varies(n), n))
    names.append("seconds")
    x, axis_type = _sweep_axis(sweep)
    order = sorted(range(len(x)), key=lambda i: x[i]) if axis_type != "category" else list(range(len(x)))
    cols = min(columns, len(names))
    rows = math.ceil(len(names) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=names, horizontal_spacing=0.08,
                        vertical_spacing=min(0.12, 0.6 / rows))
    palette = list(getattr(viz, "PALETTE", [])) or [None]
    for k, lesson in enumerate(records):
        color = palette[k % len(palette)]
        shown = False
        for position, name in enumerate(names):
            if name == "seconds":
                ys = []
                for label in sweep.labels:
                    r = next((r for r in sweep.runs[label] if r.id == lesson), None)
                    ys.append(r.seconds if r is not None and r.ok and r.status != "skipped" else None)
            elif name in records[lesson]:
                ys = [_sweep_value(sweep, label, lesson, name) for label in sweep.labels]
            else:
                continue
            fig.add_trace(
                go.Scatter(
                    x=[x[i] for i in order], y=[ys[i] for i in order], mode="lines+markers", name=lesson,
                    legendgroup=lesson, showlegend=not shown, line=dict(color=color), connectgaps=False,
                    hovertemplate=f"{sweep.param}=%{{x}}<br>{name}=%{{y:.4g}}<extra>{lesson}</extra>",
                ),
                row=position // cols + 1, col=position % cols + 1,
            )
            shown = True
    fig.update_xaxes(type=axis_type, title_text=sweep.param)
    fig.update_layout(
        title=f"Sweep over {sweep.param} ({sweep.preset or ''} preset): records across values",
        height=max(360, 260 * rows + 120), template="plotly_white",
    )
    return fig


def write_sweep_summary(sweep: SweepResult, out: str | os.PathLike[str]) -> dict[str, Path]:
    """Write the sweep's ``sweep.json``, ``sweep.md``, ``sweep.html`` (the figure, plotly.js inline)
    and ``index.html`` (figure, table, links to every value's pages) into ``out``; return the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    from . import __version__

    paths = {name: out / f"sweep.{name}" for name in ("json", "md", "html")}
    paths["index"] = out / "index.html"

    def rel(path: Path | None) -> str | None:
        return None if path is None else Path(os.path.relpath(path, out)).as_posix()

    payload = {
        "param": sweep.param,
        "values": _jsonable(sweep.values),
        "labels": sweep.labels,
        "preset": sweep.preset,
        "parameters": _jsonable(sweep.parameters),
        "lessons": sweep.lessons,
        "dro_lab": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "ok": sweep.ok,
        "runs": {
            label: {
                "value": _jsonable(value),
                "folder": rel(sweep.folders.get(label)),
                "lessons": {
                    r.id: {
                        "status": r.status,
                        "seconds": r.seconds,
                        "records": r.records,
                        "error": r.error,
                        "failure": r.failure,
                        "failing_cell": dataclasses.asdict(r.failing_cell) if r.failing_cell else None,
                        "notebook": rel(r.notebook),
                        "html": rel(r.html),
                        "log": rel(r.log),
                    }
                    for r in sweep.results(label)
                },
            }
            for value, label in zip(sweep.values, sweep.labels)
        },
    }
    _write_text_atomic(paths["json"], json.dumps(payload, indent=2, default=str))

    table = sweep_table(sweep)
    header_line = f"preset `{sweep.preset}`" + (f", parameters `{sweep.parameters}`" if sweep.parameters else "")
    failed = [f"{sweep.param}={label}: {r.id}" for label in sweep.labels for r in sweep.runs[label]
              if r.status == "failed"]
    md = [f"# Sweep over `{sweep.param}`", "", f"{header_line}; lessons {', '.join(sweep.lessons)}; "
          f"{len(sweep.values)} values; {'all ok' if not failed else 'failed: ' + '; '.join(failed)}.", "", table, ""]
    _write_text_atomic(paths["md"], "\n".join(md))

    fig = sweep_figure(sweep)
    _write_text_atomic(paths["html"], fig.to_html(include_plotlyjs=True, full_html=True))

    head, rows = _sweep_grid(sweep)
    table_html = (
        "<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"
        + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
        + "</tbody></table>"
    )

    def link(path: Path | None, label: str) -> str:
        return "" if path is None else f'<a href="{html.escape(rel(path) or "")}">{label}</a>'

    items = []
    for label in sweep.labels:
        folder = sweep.folders.get(label)
        entries = []
        for r in sweep.results(label):
            files = " ".join(filter(None, (link(r.html, "HTML"), link(r.notebook, "notebook"), link(r.log, "log"))))
            problem = ""
            if r.status == "failed":
                problem = " — <code>" + html.escape(r.problem) + "</code>"
            entries.append(f'<li class="{r.status}">{html.escape(r.id)}: {r.status}, {r.seconds:.1f} s '
                           f"{files}{problem}</li>")
        summary = link(folder / "index.html", "summary page") if folder is not None else ""
        items.append(f"<li><b>{html.escape(sweep.param)} = {html.escape(label)}</b> {summary}<ul>"
                     + "".join(entries) + "</ul></li>")
    figure_div = fig.to_html(full_html=False, include_plotlyjs=True)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Sweep over {html.escape(sweep.param)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;font-size:90%}}
td,th{{border:1px solid #ccc;padding:.2em .5em;text-align:right}}li.failed{{color:#b00}}</style></head>
<body><h1>Sweep over {html.escape(sweep.param)}</h1>
<p>{html.escape(header_line.replace('`', ''))}; lessons {html.escape(', '.join(sweep.lessons))};
{'all runs ok' if not failed else html.escape('failed: ' + '; '.join(failed))}.
Figure alone: <a href="sweep.html">sweep.html</a>; data: <a href="sweep.json">sweep.json</a>,
<a href="sweep.md">sweep.md</a>.</p>
{figure_div}
<h2>Records per value</h2>
{table_html}
<h2>Runs</h2>
<ul>{''.join(items)}</ul>
</body></html>
"""
    _write_text_atomic(paths["index"], page)
    return paths


# --------------------------------------------------------------------------------------------
# The syllabus as Markdown
# --------------------------------------------------------------------------------------------


def syllabus_markdown(syllabus: Syllabus) -> str:
    """The syllabus as a Markdown page: an overview table (order, lesson, minutes per preset), then
    one section per lesson with its notebook, prerequisites, papers, minutes and goals. Notebook
    links are relative to the syllabus's folder (the page is meant to sit beside it, e.g.
    ``course/syllabus.md``)."""
    presets = list(syllabus.presets)
    lines = [f"# {syllabus.title}", ""]
    if syllabus.description:
        lines += [syllabus.description.strip(), ""]
    lines += ["## Presets", "", "| preset | what it runs |", "|---|---|"]
    lines += [f"| `{name}` | {_md_cell(about)} |" for name, about in syllabus.presets.items()]
    lines += ["", "## Lessons", "",
              "| # | lesson | title | " + " | ".join(f"minutes ({p})" for p in presets) + " |",
              "|---:|---|---|" + "---:|" * len(presets)]
    for number, lesson in enumerate(syllabus.lessons, start=1):
        minutes = " | ".join(f"{lesson.minutes[p]:g}" if p in lesson.minutes else "" for p in presets)
        lines.append(f"| {number} | [`{lesson.id}`](#{lesson.id.lower()}) | {_md_cell(lesson.title)} | {minutes} |")
    totals = " | ".join(f"{sum(lesson.minutes.get(p, 0) for lesson in syllabus.lessons):g}" for p in presets)
    lines += [f"| | **total** | | {totals} |", ""]
    for number, lesson in enumerate(syllabus.lessons, start=1):
        lines += [f'<a id="{lesson.id.lower()}"></a>', "", f"### {number}. {lesson.title}", ""]
        target = Path(os.path.relpath(lesson.notebook, syllabus.path.parent)).as_posix()
        lines.append(f"- **id:** `{lesson.id}`; **notebook:** [`{lesson.notebook_relpath}`]({target})")
        if lesson.prerequisites:
            lines.append("- **after:** " + ", ".join(f"`{p}`" for p in lesson.prerequisites))
        if lesson.minutes:
            lines.append("- **minutes:** " + ", ".join(f"{p} {m:g}" for p, m in lesson.minutes.items()))
        for paper in lesson.paper:
            lines.append(f"- **paper:** {paper}")
        if lesson.goals:
            lines += ["", "Goals:", ""] + [f"{k}. {goal}" for k, goal in enumerate(lesson.goals, start=1)]
        lines.append("")
    return "\n".join(lines)
