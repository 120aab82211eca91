"""Where and how a lesson failed: :func:`find_failing_cell` in an executed notebook, and the failure
kind of a papermill run (one of :data:`~.results.FAILURE_KINDS`) from its exit status and log."""

from __future__ import annotations

import dataclasses
import math
import re
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dro_course._files import cell_tags
from dro_course.results import FailingCell

ERROR_MARKER_TAG = "papermill-error-cell-tag"  # papermill's "An Exception was encountered" cells
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?::\s*(.*))?$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: IPython's frame header for code run from a cell: ``Cell In[8], line 12`` (the cell's own frame comes first).
_CELL_FRAME = re.compile(r"^Cell In\[\d*\], line (\d+)")
#: Errors of papermill itself (not of a cell): the log names the real reason of the failure.
_RUNNER_ERRORS = ("CellTimeoutError", "DeadKernelError")


def _first_line(source: str) -> str:
    for line in source.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _last_exception_line(log: str) -> tuple[str, str] | None:
    """(name, message) of the last ``SomeError: message`` line of a traceback in ``log``."""
    for line in reversed(log.strip().splitlines()):
        match = _EXCEPTION_LINE.match(line.strip())
        if match and re.search(r"(Error|Exception|Exit|Interrupt|Timeout)$", match.group(1)):
            return match.group(1).rsplit(".", 1)[-1], (match.group(2) or "").strip()
    return None


def _failing_line(cell: Mapping[str, Any]) -> tuple[int | None, str]:
    """(1-based line, its text) of ``cell`` where its error was raised, from the first ``Cell In[..], line N`` frame
    of the error output's traceback: the line of the cell itself (an ``assert``, or the call that raised deeper
    down). (None, '') when no traceback names one."""
    for output in cell.get("outputs", []):
        if output.get("output_type") != "error":
            continue
        for frame in output.get("traceback", []):
            match = _CELL_FRAME.match(_ANSI.sub("", str(frame)).lstrip())
            if match:
                number = int(match.group(1))
                lines = str(cell.get("source", "")).splitlines()
                return (number, lines[number - 1].strip()) if 0 < number <= len(lines) else (None, "")
    return None, ""


def _cell_error(cell: Mapping[str, Any], reason: tuple[str, str] | None) -> tuple[str, str] | None:
    """(ename, evalue) when ``cell`` failed, else None (papermill's rule, see :func:`find_failing_cell`)."""
    if cell.get("cell_type") != "code":
        return None
    error = None
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            if output.get("ename") == "SystemExit" and output.get("evalue") in ("", "0"):
                continue
            error = output.get("ename", ""), output.get("evalue", "")
            break
    papermill_meta = cell.get("metadata", {}).get("papermill", {})
    if error is None and papermill_meta.get("exception") is True:
        error = "CellExecutionError", ""
    if error is None and papermill_meta.get("status") == "running":
        error = reason or ("Error", "the cell did not finish")
    if error is not None and reason is not None:  # the cell's own error (KeyboardInterrupt) is nbclient's interrupt
        error = reason
    return error


def _at(cells: list, index: int, error: tuple[str, str]) -> FailingCell:
    """The :class:`FailingCell` for ``cells[index]``, its index counted in the source notebook."""
    cell = cells[index]
    injected_before = sum("injected-parameters" in cell_tags(c) for c in cells[:index])
    line_number, line = _failing_line(cell)
    return FailingCell(
        index=index - injected_before,
        executed_index=index,
        exec_count=cell.get("execution_count"),
        first_line=_first_line(cell.get("source", "")),
        ename=str(error[0]),
        evalue=str(error[1]),
        line_number=line_number,
        line=line,
    )


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
    cells = [c for c in nb.cells if ERROR_MARKER_TAG not in cell_tags(c)]
    reason = _last_exception_line(log)
    if reason is not None and reason[0] not in _RUNNER_ERRORS:
        reason = None
    for index, cell in enumerate(cells):
        error = _cell_error(cell, reason)
        if error is not None:
            return _at(cells, index, error)
    if reason is not None:
        # A dead kernel leaves no error output and papermill marks the cell completed: the failing
        # cell is the last one that started.
        started = [
            i
            for i, c in enumerate(cells)
            if c.get("cell_type") == "code" and c.get("metadata", {}).get("papermill", {}).get("start_time")
        ]
        if started:
            return _at(cells, started[-1], reason)
    return None


def _where(cell: FailingCell | None) -> str:
    return f" in cell {cell.index}{cell.where()}" if cell is not None else ""


def classify_failure(
    task: Mapping[str, Any], returncode: int, executed: Path, log: str, log_name: str, interrupted: bool
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
