"""The real lessons, as the one smoke run of the session left them (tests/conftest.py ``executed_course``): each
ran to its end, recorded what it records, drew its figures with the plotly mime type, and its exercises' checks say
"not yet" to the student's stubs and "right" to the instructor's solutions, which ran in the same kernel after the
student's cells (dro_course.runner.instructor). Nothing here executes a lesson again."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from dro_course import load_syllabus, solutions_path
from dro_course.runner.instructor import check_verdicts

REPO = Path(__file__).resolve().parents[2]
SYLLABUS = load_syllabus(REPO / "course" / "syllabus.yaml", check_notebooks=False)
LESSONS = [lesson.id for lesson in SYLLABUS.lessons]
WITH_SOLUTIONS = [lesson.id for lesson in SYLLABUS.lessons if solutions_path(lesson.notebook).is_file()]

pytestmark = pytest.mark.timeout(1800)  # the first test to ask may wait for the whole course


def _executed(course, lesson_id: str, *, instructor: bool = False):
    folder = course.out / "instructor" if instructor else course.out
    return nbformat.read(str(folder / f"{lesson_id}.ipynb"), as_version=4)


@pytest.mark.parametrize("lesson_id", LESSONS)
def test_lesson_runs_to_its_end_on_the_smoke_preset(executed_course, lesson_id):
    entry = executed_course.lessons[lesson_id]
    assert entry["status"] in ("ok", "cached"), executed_course.problem(lesson_id)  # cached: DRO_LAB_TEST_COURSE
    nb = _executed(executed_course, lesson_id)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
    html = executed_course.out / entry["html"]
    assert html.is_file() and html.stat().st_size > 0


@pytest.mark.parametrize("lesson_id", LESSONS)
def test_executed_notebooks_carry_the_plotly_mime_type(executed_course, lesson_id):
    nb = _executed(executed_course, lesson_id)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if "data" in o]
    plotly = [o for o in outputs if "application/vnd.plotly.v1+json" in o["data"]]
    inline_js = [o for o in outputs if "Plotly.newPlot" in str(o["data"].get("text/html", ""))]
    assert plotly and inline_js == []


@pytest.mark.parametrize("lesson_id", WITH_SOLUTIONS)
def test_the_students_stubs_say_not_yet_and_the_solutions_say_right(executed_course, lesson_id):
    student = check_verdicts(_executed(executed_course, lesson_id))
    instructor = check_verdicts(_executed(executed_course, lesson_id, instructor=True))
    assert student and all(v == "not yet" for _, v in student), student
    assert [k for k, _ in instructor] == [k for k, _ in student]
    assert all(v == "right" for _, v in instructor), instructor


@pytest.mark.parametrize("lesson_id", WITH_SOLUTIONS)
def test_the_students_notebook_holds_no_solution(executed_course, lesson_id):
    """The solved cells ran in the student's kernel, after the student's cells: none of them (and no trace of
    them) is left in the student's executed notebook, which has exactly the source notebook's cells."""
    source = nbformat.read(str(SYLLABUS.lesson(lesson_id).notebook), as_version=4)
    executed = _executed(executed_course, lesson_id)
    ran = [c for c in executed.cells if "injected-parameters" not in c.metadata.get("tags", [])]
    assert [c.source for c in ran] == [c.source for c in source.cells]
    assert "solution-check" not in nbformat.writes(executed)
    assert executed.metadata.papermill["input_path"] == str(SYLLABUS.lesson(lesson_id).notebook)


def test_lesson01_records_the_kl_weights_at_its_beta(executed_course):
    """``record`` reaches the run's records: lesson 01's largest KL weight at β = 2 over its 8 losses lies
    between the uniform 1/8 and 1."""
    records = executed_course.lessons["01_dro_foundations"]["records"]
    assert 1 / 8 < records["kl_weights_max"] <= 1
