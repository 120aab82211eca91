"""Every lesson with exercises, run twice in its smoke preset: the student's copy (the stubs as stored) reports
"not yet" in every check and still runs to the end; the instructor copy (the stubs replaced by the solutions in
course/solutions/) reports "right" in every check. The course build writes the instructor copy."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import papermill
import pytest
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from dro_lab.course import run_course, solutions_path, write_instructor_copy
from dro_lab.course.exercises import CHECK_TAG

REPO = Path(__file__).resolve().parents[2]
WITH_EXERCISES = [p for p in sorted((REPO / "notebooks").glob("0*.ipynb")) if solutions_path(p).is_file()]
VERDICT = re.compile(r"Exercise ([\w.]+(?: \([^)]*\))?) — (right|not yet)")


def _check_verdicts(executed: Path) -> list[tuple[str, str]]:
    nb = nbformat.read(str(executed), as_version=4)
    found = []
    for cell in nb.cells:
        if CHECK_TAG in cell.metadata.get("tags", []):
            text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
            found += VERDICT.findall(text)
            assert not [o for o in cell.outputs if o.output_type == "error"], "a check cell raised"
    return found


def _run(notebook: Path, out: Path) -> Path:
    """papermill, with one retry when the kernel stops answering: once in a full suite run a kernel sat idle
    while the client waited for a reply that never came (a lost message after a cell with 5 MB of widget output),
    and without a timeout the suite hung. A cell that raises or a check that says "not yet" is not retried."""
    for attempt in (1, 2):
        try:
            papermill.execute_notebook(str(notebook), str(out), cwd=str(REPO / "notebooks"), progress_bar=False,
                                       log_output=False, execution_timeout=240)  # fmt: skip
            return out
        except (CellTimeoutError, DeadKernelError):
            if attempt == 2:
                raise
    return out


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=[p.stem for p in WITH_EXERCISES])
def test_the_students_stubs_say_not_yet_and_the_solutions_say_right(path, tmp_path):
    student = _check_verdicts(_run(path, tmp_path / "student.ipynb"))
    assert student and all(v == "not yet" for _, v in student), student
    teacher = write_instructor_copy(path, tmp_path / "instructor_in.ipynb")
    instructor = _check_verdicts(_run(teacher, tmp_path / "instructor.ipynb"))
    assert [k for k, _ in instructor] == [k for k, _ in student]
    assert all(v == "right" for _, v in instructor), instructor


def test_the_course_build_writes_the_instructor_copy(tmp_path):
    results = run_course(preset="smoke", out=tmp_path, only=["00"], html=False)
    assert [r.status for r in results if r.id.startswith("00")] == ["ok"]
    copy = nbformat.read(str(tmp_path / "instructor" / "00_welcome.ipynb"), as_version=4)
    assert any("solution" in c.metadata.get("tags", []) for c in copy.cells)
