"""Lesson 00's library helpers: the lessons tables keep one row per lesson even when a goal or a title holds a '|'
(and lesson 00's own table links each lesson's notebook), and the set-up check names a missing required package and
the command that installs it."""

from __future__ import annotations

import pytest

from dro_course import environment, environment_report, lessons_table, load_syllabus
from dro_course.lessons.welcome.overview import lessons_overview


def _cells(row: str) -> list[str]:
    """The cells of a Markdown table row, split as a renderer does: on '|' not preceded by a backslash."""
    out, cell, escaped = [], "", False
    for ch in row.strip().strip("|"):
        if ch == "|" and not escaped:
            out.append(cell)
            cell = ""
        else:
            cell += ch
        escaped = ch == "\\"
    return out + [cell]


def test_every_lesson_is_one_row_of_five_cells_even_with_pipes_in_its_goals():
    syllabus = load_syllabus(check_notebooks=False)
    assert any("|" in goal for lesson in syllabus.lessons for goal in lesson.goals)  # the case that broke the page
    rows = [line for line in lessons_table(syllabus).splitlines() if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == [lesson.id for lesson in syllabus.lessons]
    assert all(len(_cells(r)) == 5 for r in rows)


def test_lesson_00s_table_is_one_short_row_per_lesson_linking_its_notebook():
    syllabus = load_syllabus(check_notebooks=False)
    rows = lessons_overview(syllabus).splitlines()
    lessons = rows[2:-1]
    assert [r.split(" | ")[0].strip("| ") for r in lessons] == [lesson.number for lesson in syllabus.lessons]
    assert all(len(_cells(r)) == 4 for r in rows)
    welcome = syllabus.lessons[0].notebook
    for row, lesson in zip(lessons, syllabus.lessons, strict=True):
        target = row.split("](", 1)[1].split(")", 1)[0]
        assert (welcome.parent / target).resolve() == lesson.notebook.resolve(), row
        assert str(lesson.reading_minutes and f"{lesson.reading_minutes:g}") in _cells(row)[2]
    total = sum(lesson.reading_minutes or 0 for lesson in syllabus.lessons)
    assert "**in all**" in rows[-1] and _cells(rows[-1])[2].strip() == f"{total:g}"


def test_a_missing_required_package_stops_the_set_up_check(monkeypatch):
    real = environment._version
    monkeypatch.setattr(environment, "_version", lambda name: None if name in ("plotly", "scipy") else real(name))
    with pytest.raises(ImportError, match=r"missing required package\(s\): plotly\..*make course"):
        environment_report("cpu")


def test_a_missing_optional_package_is_listed_and_the_machine_described(monkeypatch):
    real = environment._version
    monkeypatch.setattr(environment, "_version", lambda name: None if name == "scipy" else real(name))
    report = environment_report("cpu")
    assert "| scipy | **missing** (optional) |" in report and "device for the lessons: **cpu**" in report
    assert report.rstrip().endswith("**Set-up OK.**")
