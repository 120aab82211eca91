"""The instructor copy, executed in the lesson's own run: the solutions run after the student's stubs, in the same
kernel, and the one executed notebook is split into the student's and the instructor's.

A lesson runs once. Its exercises come at its end, so the solved cells can run after everything the student sees:
:func:`with_solution_checks` appends, for each code exercise, its solved cell (the stub replaced by the solution, as
:func:`~.exercises.fill_solutions` writes it) and a copy of its check cells, all tagged :data:`APPENDED_TAG`. After
the run, :func:`split_executed` takes those cells out again: what is left is the student's executed notebook, as if
it had run alone (the appended cells run last, so nothing before them changed); the instructor's executed notebook
is the same with each stub and its checks replaced by their executed solved twins, and the written exercises'
answers in. :func:`check_verdicts` reads what a notebook's check cells said ("right" / "not yet"), so a run can tell
an instructor that a solution no longer passes its check.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from dro_course._files import cell_tags
from dro_course.exercises import CHECK_TAG, EXERCISE_TAG, exercise_id, fill_solutions

__all__ = ["APPENDED_TAG", "check_verdicts", "split_executed", "with_solution_checks"]

#: The tag of the cells a run appends to check the solutions (removed from both executed notebooks).
APPENDED_TAG = "solution-check"
_META = "dro_lab"  # cell metadata key: {"exercise": N, "role": "solution" | "check", "n": k}
# What check_exercise prints: "Exercise 2 — right: ..." or "Exercise 2 — not yet: ...".
_VERDICT = re.compile(r"Exercise ([\w.]+(?: \([^)]*\))?) — (right|not yet)")


def _exercise_checks(cells: list) -> dict[str, tuple[int, list[int]]]:
    """Code exercise number -> (its cell's index, the indices of the check cells after it, before the next
    exercise)."""
    groups: dict[str, tuple[int, list[int]]] = {}
    current = None
    for index, cell in enumerate(cells):
        tags = cell_tags(cell)
        if EXERCISE_TAG in tags:
            key = exercise_id(cell.source) if cell.cell_type == "code" else None
            current = key
            if key is not None:
                groups[key] = (index, [])
        elif CHECK_TAG in tags and current is not None:
            groups[current][1].append(index)
    return groups


def _appended(cell: Any, key: str, role: str, n: int = 0) -> Any:
    cell = copy.deepcopy(cell)
    cell.metadata["tags"] = [*cell_tags(cell), APPENDED_TAG]
    cell.metadata[_META] = {"exercise": key, "role": role, "n": n}
    cell.outputs, cell.execution_count = [], None
    if "id" in cell:  # a cell id is unique in its notebook (nbformat 4.5)
        cell["id"] = re.sub(r"[^A-Za-z0-9_-]", "-", f"instructor-{key}-{role}-{n}")
    return cell


def with_solution_checks(notebook: Any, solutions: Mapping[str, str]) -> Any:
    """A copy of ``notebook`` (an nbformat node) with, at its end, each code exercise's solved cell and a copy of
    its check cells (tagged :data:`APPENDED_TAG`), in the lesson's order."""
    solved = fill_solutions(notebook, solutions)
    out = copy.deepcopy(notebook)
    for key, (index, checks) in _exercise_checks(solved.cells).items():
        out.cells.append(_appended(solved.cells[index], key, "solution"))
        out.cells += [_appended(solved.cells[i], key, "check", n) for n, i in enumerate(checks)]
    return out


def _plain(cell: Any) -> Any:
    """An appended cell as it stands in the instructor's notebook: without the run's tag and metadata."""
    cell = copy.deepcopy(cell)
    cell.metadata["tags"] = [t for t in cell_tags(cell) if t != APPENDED_TAG]
    cell.metadata.pop(_META, None)
    return cell


def split_executed(executed: Any, solutions: Mapping[str, str]) -> tuple[Any, Any]:
    """(the student's executed notebook, the instructor's) from a run of :func:`with_solution_checks`' notebook.

    The student's is ``executed`` without the appended cells. The instructor's is the student's with the solutions
    filled in (:func:`~.exercises.fill_solutions`), each solved cell and its checks being the appended cells as
    they ran (unexecuted when the run stopped before them)."""
    appended = {
        (c.metadata[_META]["exercise"], c.metadata[_META]["role"], c.metadata[_META]["n"]): _plain(c)
        for c in executed.cells
        if APPENDED_TAG in cell_tags(c)
    }
    student = copy.deepcopy(executed)
    student.cells = [c for c in student.cells if APPENDED_TAG not in cell_tags(c)]
    instructor = fill_solutions(student, solutions)
    for key, (index, checks) in _exercise_checks(instructor.cells).items():
        for role, n, i in [("solution", 0, index), *(("check", n, i) for n, i in enumerate(checks))]:
            instructor.cells[i] = appended.get((key, role, n)) or _unexecuted(instructor.cells[i])
    return student, instructor


def _unexecuted(cell: Any) -> Any:
    """A solved or check cell the run never reached: no outputs (not the stub's "not yet")."""
    cell = copy.deepcopy(cell)
    cell.outputs, cell.execution_count = [], None
    return cell


def check_verdicts(notebook: Any, *, appended: bool | None = None) -> list[tuple[str, str]]:
    """``[(exercise, "right" | "not yet"), ...]``: what the check cells of an executed notebook printed, in order.
    ``appended``: only the cells a run appended (True), only the others (False), or all (None)."""
    found = []
    for cell in notebook.cells:
        tags = cell_tags(cell)
        if CHECK_TAG not in tags or (appended is not None and (APPENDED_TAG in tags) != appended):
            continue
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        found += _VERDICT.findall(text)
    return found
