"""The student's site and the instructor's, as the session's smoke run built them (tests/conftest.py
``executed_course``): no file of the student's site holds a line of a solution, and the instructor's shows them."""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
import pytest

from dro_course import load_syllabus, read_solutions, solutions_path

pytestmark = [pytest.mark.slow, pytest.mark.notebook]

REPO = Path(__file__).resolve().parents[2]
SYLLABUS = load_syllabus(REPO / "course" / "syllabus.yaml")


def _solution_lines() -> dict[str, str]:
    """Lines of the solutions (the longer ones, which no student notebook holds) -> the lesson they solve."""
    found = {}
    for lesson in SYLLABUS.lessons:
        student = "\n".join(cell.source for cell in nbformat.read(str(lesson.notebook), as_version=4).cells)
        for text in read_solutions(solutions_path(lesson.notebook, REPO)).values():
            for line in text.splitlines():
                line = line.strip().lstrip("#").strip()
                if len(line) >= 30 and line not in student:
                    found[line] = lesson.id
    return found


def _text(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".html":  # the text a reader sees: highlighted code is split into spans
        text = html.unescape(re.sub(r"<[^>]+>", "", text))
    return text


def test_the_student_site_holds_no_line_of_a_solution(executed_course):
    site = executed_course.out / "site"
    lines = _solution_lines()
    assert len(lines) > 50  # every lesson's solutions, in a few hundred lines
    leaks = []
    for path in site.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".ipynb", ".txt", ".md", ".js"):
            text = _text(path)
            leaks += [f"{path.relative_to(site)}: {lines[line]}: {line[:60]}" for line in lines if line in text]
    assert leaks == [], leaks[:5]
    assert not (site / "course" / "instructor_guide.html").exists() and not (site / "summary.html").exists()


def test_the_instructor_site_shows_every_lesson_solved(executed_course):
    site = executed_course.out / "instructor-site"
    lines = _solution_lines()
    for lesson in SYLLABUS.lessons:
        page = _text(site / "notebooks" / f"{lesson.notebook.stem}.html")
        shown = [line for line, owner in lines.items() if owner == lesson.id and line in page]
        assert shown, f"{lesson.id}: the instructor's page shows none of its solutions"
    assert (site / "course" / "instructor_guide.html").is_file() and (site / "summary.html").is_file()
