"""The site's home page, one per audience (:data:`AUDIENCES`).

The student's home page is for reading: each lesson with its reading time and goals, and the course's own pages
(syllabus, glossary, references). The instructor's adds this run's log: each lesson's status and seconds, and a
link to the run summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dro_course.results import LessonResult
from dro_course.syllabus import Syllabus

#: Where the course's code and notebooks live (the launch buttons open its notebooks; the home page links it).
REPOSITORY = "https://github.com/dro-lab/dro_lab"

#: Who a build of the site is for: ``student`` (no solutions, no run log) or ``instructor`` (the solved lessons,
#: the written exercises' answers, the instructor guide and the run log).
AUDIENCES = ("student", "instructor")
#: The course's own pages (Markdown files of the repository's ``course/`` folder) each audience's site shows.
COURSE_PAGES = {
    "student": ("syllabus.md", "glossary.md", "references.md"),
    "instructor": ("syllabus.md", "glossary.md", "references.md", "instructor_guide.md"),
}


def check_audience(audience: object) -> str:
    if audience not in AUDIENCES:
        raise ValueError(f"Invalid audience: {audience!r}; the site is built for one of {', '.join(AUDIENCES)}")
    return audience  # type: ignore[return-value]


def _minutes(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _student_lessons(syllabus: Syllabus, pages: Mapping[str, str]) -> list[str]:
    lines = []
    for lesson in syllabus.lessons:
        reading = f" · about {_minutes(lesson.reading_minutes)} min" if lesson.reading_minutes else ""
        lines += [f"### [{lesson.title}]({pages[lesson.id]}.ipynb)", "", f"*Lesson {lesson.number}{reading}*", ""]
        lines += [f"- {goal}" for goal in lesson.goals]
        lines.append("")
    return lines


def _instructor_lessons(
    syllabus: Syllabus, results: Mapping[str, LessonResult], preset: str, pages: Mapping[str, str]
) -> list[str]:
    rows = []
    for lesson in syllabus.lessons:
        r = results.get(lesson.id)
        status = r.status if r is not None else "not run"
        seconds = f"{r.seconds:.0f}" if r is not None and r.status in ("ok", "cached", "failed") else ""
        link = f"[{lesson.title.replace('|', '/')}]({pages[lesson.id]}.ipynb)"
        rows.append(
            f"| {lesson.number} | {link} | {_minutes(lesson.reading_minutes)} | "
            f"{_minutes(lesson.minutes.get(preset))} | {status} | {seconds} |"
        )
    return [
        f"Every lesson below was executed with the `{preset}` preset, with its exercises' solutions; its page shows "
        "the outputs of that run. The student site of the same run has the same pages without the solutions.",
        "",
        "| # | lesson | reading (min) | run (min, expected) | this run | seconds |",
        "|---|---|---:|---:|---|---:|",
        *rows,
        "",
        "See the [run summary](summary.md) for how each lesson ran.",
        "",
    ]


def home_page(
    syllabus: Syllabus,
    results: Mapping[str, LessonResult],
    preset: str,
    pages: Mapping[str, str],
    manual: Sequence[str] = (),
    *,
    audience: str = "student",
) -> str:
    """The landing page of ``audience``'s site; ``manual``: the library's pages (the manual, then the API
    reference's index) for the navigation."""
    course_pages = [
        f"course/{name[:-3]}" for name in COURSE_PAGES[audience] if (syllabus.root / "course" / name).is_file()
    ]
    if audience == "student":
        body = [
            "Each lesson is a Jupyter notebook: read it here, or open it in JupyterLab, Binder or Colab with the "
            "buttons at the top of its page.",
            "",
            *_student_lessons(syllabus, pages),
        ]
        course_toc = course_pages
    else:
        body = _instructor_lessons(syllabus, results, preset, pages)
        course_toc = ["summary", *course_pages]
    return "\n".join(
        [
            f"# {syllabus.title}",
            "",
            (syllabus.description or "").strip(),
            "",
            *body,
            *_course_pages_line(course_pages),
            *_manual_links(manual),
            "",
            f"The code and the notebooks: [{REPOSITORY.split('//', 1)[1]}]({REPOSITORY}).",
            "",
            *_toctree("Lessons", [pages[lesson.id] for lesson in syllabus.lessons]),
            *_toctree("The course", course_toc),
            *_toctree("The library", manual),
        ]
    )


#: How the home page names each of the course's pages.
_PAGE_WORDS = {
    "course/syllabus": "the [syllabus](course/syllabus.md)",
    "course/glossary": "the [glossary](course/glossary.md) of every symbol and term",
    "course/references": "the [references](course/references.md) to the papers",
    "course/instructor_guide": "the [instructor guide](course/instructor_guide.md)",
}


def _course_pages_line(pages: Sequence[str]) -> list[str]:
    """One sentence naming the course's pages this site has (none: no sentence)."""
    words = [_PAGE_WORDS[page] for page in pages if page in _PAGE_WORDS]
    if not words:
        return []
    listed = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    return [f"Beside the lessons: {listed}.", ""]


def _manual_links(manual: Sequence[str]) -> list[str]:
    if not manual:
        return []
    return [
        "",
        f"The library the lessons use, `dro_lab`, has its [manual]({manual[0]}.md) and an "
        f"[API reference]({manual[-1]}.rst) generated from its docstrings.",
    ]


def _toctree(caption: str, entries: Sequence[str]) -> list[str]:
    if not entries:
        return []
    return ["```{toctree}", ":hidden:", f":caption: {caption}", "", *entries, "```", ""]
