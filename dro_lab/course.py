"""The course runner: syllabus loading, batch execution of the lessons, HTML export, records.

The lessons are Jupyter notebooks listed in ``course/syllabus.yaml``. This module reads that file
into small frozen dataclasses (:func:`load_syllabus`), executes lessons with papermill, one
papermill process and kernel per lesson and optionally several lessons at once (:func:`run_course`),
exports every executed notebook to HTML with nbconvert, and writes a summary (``summary.md``,
``summary.json`` and an ``index.html`` that links every page).

Inside a lesson, :func:`record` stores a named value (a metric, a figure's key number) so that a
batch run, a test or a parameter sweep can read results without parsing cell outputs::

    from dro_lab.course import record
    record("kl_weights_max", float(q.max()))

Importing this module is cheap: papermill, nbformat and nbconvert are imported only when a course
is run, so a notebook may import :func:`record` freely.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import os
import re
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
    "FailingCell",
    "Lesson",
    "LessonResult",
    "Syllabus",
    "SyllabusError",
    "find_failing_cell",
    "find_syllabus",
    "load_syllabus",
    "parse_parameter_value",
    "read_records",
    "record",
    "run_course",
    "summary_table",
    "write_summary",
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
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)  # atomic: a reader never sees half a file
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
        error: one line describing the failure, else None.
        failing_cell: where it failed, when papermill could tell.
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
    return None


def _export_html(notebook: Path, target: Path, title: str) -> None:
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(notebook), as_version=4)
    body, _ = HTMLExporter().from_notebook_node(nb, resources={"metadata": {"name": title}})
    target.write_text(body, encoding="utf-8")


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


def _execute_lesson(task: Mapping[str, Any], html_lock: threading.Lock) -> LessonResult:
    """Run one lesson: papermill in a subprocess (its own kernel), then the HTML export. Never raises."""
    out = Path(task["out"])
    lesson_id = task["id"]
    executed = out / f"{lesson_id}.ipynb"
    html_path = out / f"{lesson_id}.html"
    record_path = out / f"{lesson_id}.record.json"
    log_path = out / f"{lesson_id}.log"
    for stale in (executed, html_path, record_path):
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
        completed = subprocess.run(
            _papermill_command(task, executed), env=env, stdin=subprocess.DEVNULL,
            stdout=log_file, stderr=subprocess.STDOUT, check=False,
        )
    log = log_path.read_text(encoding="utf-8", errors="replace")
    if completed.returncode != 0:
        result.status = "failed"
        cell = find_failing_cell(executed, log)
        result.failing_cell = cell
        if cell is not None:
            result.error = f"{cell.ename}: {cell.evalue}" if cell.evalue else cell.ename
        else:
            found = _last_exception_line(log)
            result.error = (
                f"{found[0]}: {found[1]}" if found else f"papermill exited with status {completed.returncode}"
            ) + f" (see {log_path.name})"

    if executed.is_file():
        result.notebook = executed
        if task["html"]:
            try:
                with html_lock:  # nbconvert's exporters are not documented as thread-safe
                    _export_html(executed, html_path, task["title"])
                result.html = html_path
            except Exception as exc:
                result.status = "failed"
                result.error = result.error or f"HTML export failed: {type(exc).__name__}: {exc}"
    if record_path.is_file():
        result.record_file = record_path
        result.records = read_records(record_path)
    result.log = log_path
    result.seconds = time.perf_counter() - start
    return result


def _declared_parameters(notebook: Path) -> set[str]:
    import papermill

    return set(papermill.inspect_notebook(str(notebook)))


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
    kernel_name: str | None = None,
    on_result: Callable[[LessonResult], None] | None = None,
) -> list[LessonResult]:
    """Execute the course's lessons with papermill and write executed notebooks, HTML and a summary.

    Each lesson runs in its own papermill process and kernel (``jobs`` lessons at a time), from its
    notebook's folder, with the preset's parameters plus ``parameters`` injected. A failing lesson
    does not stop the others: it is reported with its failing cell, and its partial executed
    notebook and HTML are still written. Written under ``out`` only::

        <id>.ipynb  <id>.html  <id>.log  <id>.record.json   per lesson (record: if it recorded)
        summary.md  summary.json  index.html                for the run

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
        kernel_name: Jupyter kernel; default: the one in each notebook's metadata.
        on_result: called with each :class:`LessonResult` as soon as it is known.

    Returns:
        one :class:`LessonResult` per syllabus lesson, in syllabus order.

    Raises:
        ValueError: unknown preset or lesson, bad ``jobs``/``timeout``, undeclared parameter.
    """
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

    overrides = dict(parameters or {})
    declared = {lesson.id: _declared_parameters(lesson.notebook) for lesson in selected} if overrides else {}
    undeclared = [name for name in overrides if not any(name in d for d in declared.values())]
    if undeclared:
        raise ValueError(
            f"Invalid parameter(s) {undeclared}: not declared in the parameters cell of any selected "
            f"lesson ({', '.join(lesson.id for lesson in selected)})"
        )

    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    out_dir = out_dir.resolve()

    # Several torch kernels on few cores fight for them; share the cores unless the user chose.
    env: dict[str, str] = {}
    workers = min(jobs, max(1, len(selected)))
    if workers > 1:
        threads = str(max(1, (os.cpu_count() or 1) // workers))
        env = {k: os.environ.get(k, threads) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}

    tasks = []
    for lesson in selected:
        params = lesson.parameters(preset)
        params.update({k: v for k, v in overrides.items() if k in declared.get(lesson.id, ())})
        tasks.append(
            {
                "id": lesson.id,
                "title": lesson.title,
                "notebook": str(lesson.notebook),
                "out": str(out_dir),
                "preset": preset,
                "parameters": params,
                "timeout": timeout,
                "kernel_name": kernel_name,
                "html": html,
                "env": env,
            }
        )

    results: dict[str, LessonResult] = {}
    if tasks:
        from concurrent.futures import ThreadPoolExecutor, as_completed

        html_lock = threading.Lock()
        # Threads only wait on papermill subprocesses, so the GIL is no bottleneck.
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(_execute_lesson, task, html_lock): task for task in tasks}
            for future in as_completed(futures):
                task = futures[future]
                try:
                    result = future.result()
                except Exception as exc:  # e.g. the output folder vanished; report, go on
                    result = LessonResult(
                        id=task["id"], title=task["title"], status="failed",
                        parameters=task["parameters"], error=f"{type(exc).__name__}: {exc}",
                    )
                results[result.id] = result
                if on_result is not None:
                    on_result(result)

    ordered = []
    for lesson in syllabus.lessons:
        if lesson.id not in results:
            results[lesson.id] = LessonResult(id=lesson.id, title=lesson.title, status="skipped")
        ordered.append(results[lesson.id])
    write_summary(ordered, out_dir, syllabus=syllabus, preset=preset, parameters=overrides)
    return ordered


# --------------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def summary_table(results: Sequence[LessonResult]) -> str:
    """The results as a Markdown table: lesson / title / status / seconds / failing cell."""
    lines = [
        "| lesson | title | status | seconds | failing cell |",
        "|---|---|---|---:|---|",
    ]
    for r in results:
        seconds = f"{r.seconds:.1f}" if r.status != "skipped" else ""
        failing = r.failing_cell.describe() if r.failing_cell else (r.error or "")
        lines.append(
            f"| {_md_cell(r.id)} | {_md_cell(r.title)} | {r.status} | {seconds} | {_md_cell(failing)} |"
        )
    return "\n".join(lines)


def write_summary(
    results: Sequence[LessonResult],
    out: str | os.PathLike[str],
    *,
    syllabus: Syllabus | None = None,
    preset: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write ``summary.md``, ``summary.json`` and ``index.html`` into ``out``; return their paths."""
    out = Path(out)
    counts = {s: sum(r.status == s for r in results) for s in ("ok", "failed", "skipped")}
    from . import __version__

    title = syllabus.title if syllabus else "dro_lab course"
    header = f"preset `{preset}`" + (f", parameters `{dict(parameters)}`" if parameters else "")
    md = [
        f"# {title}: run summary",
        "",
        f"{header}; {counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} skipped.",
        "",
        summary_table(results),
        "",
    ]
    paths = {"md": out / "summary.md", "json": out / "summary.json", "html": out / "index.html"}
    paths["md"].write_text("\n".join(md), encoding="utf-8")

    payload = {
        "title": title,
        "syllabus": str(syllabus.path) if syllabus else None,
        "preset": preset,
        "parameters": dict(parameters or {}),
        "dro_lab": __version__,
        "python": sys.version.split()[0],
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "counts": counts,
        "ok": counts["failed"] == 0,
        "lessons": [r.to_dict(relative_to=out) for r in results],
    }
    paths["json"].write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")

    def link(path: Path | None, label: str) -> str:
        if path is None:
            return ""
        return f'<a href="{html.escape(os.path.relpath(path, out))}">{label}</a>'

    tally = f"{header.replace('`', '')}; {counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} skipped."
    rows = []
    for r in results:
        failing = r.failing_cell.describe() if r.failing_cell else (r.error or "")
        seconds = f"{r.seconds:.1f}" if r.status != "skipped" else ""
        title_cell = link(r.html, html.escape(r.title)) or html.escape(r.title)
        files = " ".join(filter(None, (link(r.html, "HTML"), link(r.notebook, "notebook"), link(r.log, "log"))))
        rows.append(
            f'<tr class="{r.status}"><td>{html.escape(r.id)}</td><td>{title_cell}</td><td>{r.status}</td>'
            f"<td>{seconds}</td><td>{files}</td><td><code>{html.escape(failing)}</code></td></tr>"
        )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:left}}
tr.failed td{{background:#fdd}}tr.skipped td{{color:#888}}</style></head>
<body><h1>{html.escape(title)}</h1>
<p>{html.escape(tally)}</p>
<table><thead><tr><th>lesson</th><th>title</th><th>status</th><th>seconds</th><th>files</th>
<th>failing cell</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table></body></html>
"""
    paths["html"].write_text(page, encoding="utf-8")
    return paths
