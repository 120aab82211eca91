"""Lesson 00's two library helpers: the lessons table keeps one row per lesson even when a goal holds a '|', and
the set-up check names a missing required package and the command that installs it."""

from __future__ import annotations

import pytest

from dro_course import environment, environment_report, lessons_table, load_syllabus


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
