"""What a run reports per lesson: :class:`LessonResult`, and :class:`FailingCell` for a lesson that failed."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: How a failed lesson failed (``LessonResult.failure``): a cell raised; a cell ran past the timeout;
#: the kernel died (killed, out of memory, a crash in native code); papermill itself was killed by a
#: signal that the runner did not send; the run was interrupted (Ctrl-C, SIGTERM) while it ran; the lesson ran,
#: but a solution of its instructor copy raised or does not pass its check (:mod:`.instructor`).
FAILURE_KINDS = ("raised", "timed out", "kernel died", "killed", "interrupted", "solution")


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
        line_number: the 1-based line of the cell that raised, read from the traceback (the line of the cell
            itself: an ``assert``, or the call into the library that raised), or None when the traceback does not
            say (a timeout, a dead kernel).
        line: that line of the cell's source, stripped ('' when unknown).
    """

    index: int
    executed_index: int
    exec_count: int | None
    first_line: str
    ename: str
    evalue: str
    line_number: int | None = None
    line: str = ""

    def describe(self) -> str:
        """One line: ``cell 2 (In [3]), line 6 (`assert x > 0`) -> AssertionError: x``; without a known line, the
        cell's first line: ``cell 2 (In [3]) (`import math`) -> ...``."""
        count = f" (In [{self.exec_count}])" if self.exec_count is not None else ""
        value = f": {self.evalue}" if self.evalue else ""
        return f"cell {self.index}{count}{self.where()} -> {self.ename}{value}"

    def where(self) -> str:
        """``, line 6 (`assert x > 0`)`` when the failing line is known, else `` (`first line`)``."""
        if self.line_number is not None and self.line:
            return f", line {self.line_number} (`{self.line}`)"
        return f" (`{self.first_line}`)"


@dataclass
class LessonResult:
    """The outcome of one lesson of a :func:`~dro_course.run_course` run.

    Attributes:
        id, title: the lesson's.
        status: ``"ok"``, ``"cached"`` (an earlier ok run reused), ``"failed"`` or ``"skipped"``
            (not selected with ``only``, or not started because the run was interrupted).
        seconds: wall time of execution (and export).
        notebook: the executed notebook, if one was written (also for failures).
        html: its page on the course website (``<out>/site/notebooks/<stem>.html``), if the run built one.
        record_file: the JSON file :func:`~dro_course.record` wrote to, if the lesson recorded anything.
        log: papermill's log of the run (and the kernel's stderr).
        instructor: the lesson executed with its exercises' solutions (``<out>/instructor/<id>.ipynb``), for a
            lesson that has a solutions file.
        records: the recorded values.
        parameters: the parameters passed to papermill.
        error: one line describing the failure, else None (for a lesson not started because the
            run was interrupted: why it did not run).
        failing_cell: where it failed, when papermill could tell.
        failure: how a failed lesson failed, one of :data:`FAILURE_KINDS`, else None.
        attempts: how many times this run started the lesson: 2 when its Dask worker died mid-lesson and
            it was run again (``executor="dask"``; ``seconds`` then counts both attempts), else 1.
    """

    id: str
    title: str
    status: str
    seconds: float = 0.0
    notebook: Path | None = None
    html: Path | None = None
    record_file: Path | None = None
    log: Path | None = None
    instructor: Path | None = None
    records: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    failing_cell: FailingCell | None = None
    failure: str | None = None
    attempts: int = 1

    @property
    def retry_note(self) -> str:
        """One line for summaries when the lesson was run again after its worker died ('' otherwise)."""
        return "retried after its worker died" if self.attempts > 1 else ""

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
        for key in ("notebook", "html", "record_file", "log", "instructor"):
            value = getattr(self, key)
            if value is not None and relative_to is not None:
                value = os.path.relpath(value, relative_to)
            out[key] = None if value is None else Path(value).as_posix()
        return out


@dataclass
class SweepResult:
    """The outcome of :func:`run_sweep`.

    Attributes:
        param: the swept parameter.
        values: the values, in the order given.
        runs: value label (the value as typed, e.g. ``"0.1"``) -> one :class:`~.results.LessonResult`
            per syllabus lesson, in syllabus order (unselected lessons ``"skipped"``).
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
