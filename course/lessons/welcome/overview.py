"""Lesson 00's map of the course: one short row per lesson, narrow enough for the page."""

from __future__ import annotations

from dro_course._files import md_cell
from dro_course.syllabus import Syllabus


def _total(minutes: list) -> str:
    """The sum, or "–" when a lesson has no such time (a sum without it would be too low)."""
    return "–" if any(m is None for m in minutes) else f"{sum(minutes):g}"


def lessons_overview(syllabus: Syllabus) -> str:
    """The lessons as one compact Markdown table: number, title (a link to the lesson's notebook, a sibling of
    lesson 00's), reading minutes and running minutes per preset, then a total row.

    The goals are left to each lesson's first cell (and to the syllabus page): with them, eight rows fill several
    screens. Titles are escaped, so that a ``|`` in one cannot split its row.
    """
    presets = list(syllabus.presets)
    lines = [
        f"| # | lesson | reading (min) | running (min: {' / '.join(presets)}) |",
        "|---|---|---:|---:|",
    ]
    for lesson in syllabus.lessons:
        reading = f"{lesson.reading_minutes:g}" if lesson.reading_minutes else "–"
        minutes = " / ".join(f"{lesson.minutes[p]:g}" if p in lesson.minutes else "–" for p in presets)
        link = f"[{md_cell(lesson.title)}]({lesson.notebook.name})"
        lines.append(f"| {lesson.number} | {link} | {reading} | {minutes} |")
    reading_total = _total([lesson.reading_minutes for lesson in syllabus.lessons])
    running_totals = " / ".join(_total([lesson.minutes.get(p) for lesson in syllabus.lessons]) for p in presets)
    lines.append(f"| | **in all** | {reading_total} | {running_totals} |")
    return "\n".join(lines)
