"""The instructor copy, executed in the lesson's own run (dro_course.runner.instructor): the solved cells and their
checks appended after the student's cells, the one executed notebook split into the student's and the
instructor's, and a solution that raises or says "not yet" reported as the lesson's failure.

The fixture lesson (tests/fixtures/exercise.ipynb) has a code exercise (square ``x``) with its check and a written
exercise. The real lessons' verdicts are read from the session's one executed course in test_lessons.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from _course_util import FIXTURES  # tests/course/

from dro_course import read_solutions, run_course
from dro_course.runner.instructor import APPENDED_TAG, check_verdicts, split_executed, with_solution_checks

SOLUTIONS = {
    "right": "# %% exercise 1\nanswer = x * x\n\n# %% exercise 2 [markdown]\n# Because x * x = |x|².\n",
    "wrong": "# %% exercise 1\nanswer = x + 1\n\n# %% exercise 2 [markdown]\n# Because.\n",
    "raises": "# %% exercise 1\nanswer = 1 / 0\n\n# %% exercise 2 [markdown]\n# Because.\n",
}


def _solutions(kind: str, tmp_path: Path) -> dict[str, str]:
    path = tmp_path / f"{kind}.py"
    path.write_text(SOLUTIONS[kind], encoding="utf-8")
    return read_solutions(path)


def _fixture():
    return nbformat.read(str(FIXTURES / "exercise.ipynb"), as_version=4)


def test_the_solved_cells_and_their_checks_come_after_the_lesson(tmp_path):
    nb = _fixture()
    full = with_solution_checks(nb, _solutions("right", tmp_path))
    assert [c.source for c in full.cells[: len(nb.cells)]] == [c.source for c in nb.cells]
    extra = full.cells[len(nb.cells) :]
    assert [APPENDED_TAG in c.metadata["tags"] for c in extra] == [True, True]
    assert extra[0].source == "# Exercise 1 — the square of x\nanswer = x * x"
    assert extra[1].source == nb.cells[5].source  # the check, as the student's


def _as_executed(full, verdicts: dict[int, str]):
    """``full`` as if it had run: the check cells at the given positions print the given verdicts."""
    ran = nbformat.reads(nbformat.writes(full), as_version=4)
    for i, text in verdicts.items():
        ran.cells[i].outputs = [nbformat.v4.new_output("stream", name="stdout", text=text + "\n")]
    return ran


def test_split_gives_the_students_notebook_back_and_the_instructors_solved(tmp_path):
    nb, solutions = _fixture(), _solutions("right", tmp_path)
    full = with_solution_checks(nb, solutions)
    ran = _as_executed(full, {5: "Exercise 1 — not yet: the stub", len(nb.cells) + 1: "Exercise 1 — right"})
    student, instructor = split_executed(ran, solutions)
    assert [c.source for c in student.cells] == [c.source for c in nb.cells]
    assert check_verdicts(student) == [("1", "not yet")]
    assert check_verdicts(instructor) == [("1", "right")]
    assert "answer = x * x" in instructor.cells[4].source and APPENDED_TAG not in nbformat.writes(instructor)
    assert any("Because x * x" in c.source for c in instructor.cells if c.cell_type == "markdown")


def test_a_run_that_stopped_before_the_solutions_leaves_them_unexecuted(tmp_path):
    nb, solutions = _fixture(), _solutions("right", tmp_path)
    ran = _as_executed(with_solution_checks(nb, solutions), {5: "Exercise 1 — not yet: the stub"})
    _, instructor = split_executed(ran, solutions)
    assert check_verdicts(instructor) == [] and instructor.cells[5].outputs == []


@pytest.fixture(scope="module")
def instructor_run(tmp_path_factory):
    """One course run of three copies of the fixture lesson: a right, a wrong and a raising solution."""
    root = tmp_path_factory.mktemp("instructor")
    (root / "src").mkdir()
    (root / "course" / "solutions").mkdir(parents=True)
    lessons = []
    for kind, text in SOLUTIONS.items():
        shutil.copy(FIXTURES / "exercise.ipynb", root / "src" / f"{kind}.ipynb")
        (root / "course" / "solutions" / f"{kind}.py").write_text(text, encoding="utf-8")
        lessons.append(f"  - {{id: {kind}, title: Solution {kind}, notebook: src/{kind}.ipynb}}")
    syllabus = root / "course" / "syllabus.yaml"
    syllabus.write_text("title: Instructor copies\nlessons:\n" + "\n".join(lessons) + "\n", encoding="utf-8")
    out = root / "out"
    results = {r.id: r for r in run_course(syllabus, out=out, jobs=2, html=False, timeout=120)}
    return out, results


@pytest.mark.notebook
def test_the_run_writes_both_executed_copies(instructor_run):
    out, results = instructor_run
    ok = results["right"]
    assert ok.status == "ok" and ok.instructor == out / "instructor" / "right.ipynb"
    assert check_verdicts(nbformat.read(str(out / "right.ipynb"), as_version=4)) == [("1", "not yet")]
    assert check_verdicts(nbformat.read(str(ok.instructor), as_version=4)) == [("1", "right")]
    assert not list(out.glob(".*.ipynb"))  # the working files are gone


@pytest.mark.notebook
def test_a_wrong_solution_fails_the_lesson_and_says_which(instructor_run):
    out, results = instructor_run
    wrong = results["wrong"]
    assert (wrong.status, wrong.failure) == ("failed", "solution")
    assert "exercise 1" in wrong.error and "not yet" in wrong.error and "instructor/wrong.ipynb" in wrong.error
    student = nbformat.read(str(out / "wrong.ipynb"), as_version=4)
    assert check_verdicts(student) == [("1", "not yet")]  # the student's copy is as it would be alone


@pytest.mark.notebook
def test_a_raising_solution_fails_the_lesson_but_not_the_students_page(instructor_run):
    out, results = instructor_run
    raised = results["raises"]
    assert (raised.status, raised.failure) == ("failed", "solution")
    assert "ZeroDivisionError" in raised.error and "answer = 1 / 0" in raised.error
    student = nbformat.read(str(out / "raises.ipynb"), as_version=4)
    tags = [t for c in student.cells for t in c.metadata.get("tags", [])]
    assert "papermill-error-cell-tag" not in tags
    assert not [o for c in student.cells for o in c.get("outputs", []) if o.output_type == "error"]
