"""The Sphinx source folder of the course website: ``conf.py``, the home page, the run summary, one published
notebook per lesson with its download links (student, executed and instructor copies), the course's own pages and
the library's manual with its API reference (:mod:`.manual`)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dro_course._files import write_text_atomic
from dro_course.results import LessonResult
from dro_course.site.assets import MATHJAX_ENTRY, PLOTLY_JS
from dro_course.site.manual import write_manual
from dro_course.site.publish import publish_notebook, strip_widget_state
from dro_course.syllabus import Lesson, Syllabus

REPOSITORY = "https://github.com/dro-lab/dro_lab"
#: The course's own pages beside the lessons (in the repository's course/ folder).
COURSE_PAGES = ("glossary.md", "syllabus.md", "instructor_guide.md")

_CONF = """# Written by dro_course.site for each build: edit course/site/sources.py, not this file.
project = {title!r}
author = "dro_lab developers"
# autodoc, autosummary and napoleon: the API reference, generated from dro_lab's Google-style docstrings
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon"]
autosummary_generate = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # a class's "Attributes:" as a field list: :members: documents the attributes themselves
python_maximum_signature_line_length = 100
add_module_names = False
html_theme = "sphinx_book_theme"
html_title = {title!r}
html_static_path = ["_static"]
html_css_files = ["dro_lab.css"]
# one plotly.js for the whole site, loaded before the figures' scripts run
html_js_files = [{plotly_js!r}]
# MathJax from the site's own folder: the maths renders with no network
mathjax_path = {mathjax!r}
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
nb_execution_mode = "off"
# no require.js / widget manager from a CDN: the published notebooks carry no widget state
nb_ipywidgets_js = {{}}
nb_merge_streams = True
html_last_updated_fmt = ""
html_theme_options = {{
    "repository_url": {repository!r},
    "repository_branch": "main",
    "path_to_docs": "",
    "use_repository_button": True,
    "use_download_button": True,
    "launch_buttons": {{
        "binderhub_url": "https://mybinder.org",
        "colab_url": "https://colab.research.google.com",
        "notebook_interface": "jupyterlab",
    }},
    "show_toc_level": 2,
}}
exclude_patterns = ["_build", "downloads/**"]
suppress_warnings = ["mystnb.unknown_mime_type", "myst.header", "misc.highlighting_failure"]
"""

_CSS = """.dro-lab-twin-note, .dro-lab-live { color: #555; font-size: 90%; }
.dro-lab-downloads { font-size: 90%; }
"""


def write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless the file already holds it (Sphinx rebuilds only the pages whose sources changed)."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)


def conf_py(title: str) -> str:
    return _CONF.format(title=title, plotly_js=PLOTLY_JS, mathjax=MATHJAX_ENTRY, repository=REPOSITORY)


def _minutes(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def home_page(
    syllabus: Syllabus,
    results: Mapping[str, LessonResult],
    preset: str,
    pages: Mapping[str, str],
    manual: Sequence[str] = (),
) -> str:
    """The landing page: the course's description and a table of the lessons (link, reading and run time, status);
    ``manual``: the library's pages (the manual, then the API reference's index) for the navigation."""
    rows = []
    for number, lesson in enumerate(syllabus.lessons):
        r = results.get(lesson.id)
        status = r.status if r is not None else "not run"
        seconds = f"{r.seconds:.0f}" if r is not None and r.status in ("ok", "cached", "failed") else ""
        link = f"[{lesson.title.replace('|', '/')}]({pages[lesson.id]}.ipynb)"
        rows.append(
            f"| {number:02d} | {link} | {_minutes(lesson.reading_minutes)} | "
            f"{_minutes(lesson.minutes.get(preset))} | {status} | {seconds} |"
        )
    lessons = "\n".join(f"{pages[lesson.id]}" for lesson in syllabus.lessons)
    extra = [f"course/{name[:-3]}" for name in COURSE_PAGES if (syllabus.root / "course" / name).is_file()]
    description = (syllabus.description or "").strip()
    return "\n".join(
        [
            f"# {syllabus.title}",
            "",
            description,
            "",
            f"Every lesson below was executed with the `{preset}` preset; its page shows the outputs of that run.",
            "Each page has launch buttons (Binder, Colab) at the top and links to download its notebook.",
            "",
            "| # | lesson | reading (min) | run (min, expected) | this run | seconds |",
            "|---|---|---:|---:|---|---:|",
            *rows,
            "",
            "See also the [run summary](summary.md).",
            *_manual_links(manual),
            "",
            "```{toctree}",
            ":hidden:",
            ":caption: Lessons",
            "",
            lessons,
            "```",
            "",
            "```{toctree}",
            ":hidden:",
            ":caption: The course",
            "",
            "summary",
            *extra,
            "```",
            "",
            *_toctree("The library", manual),
        ]
    )


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


def _downloads_cell(stem: str, result: LessonResult | None, preset: str) -> Any:
    import nbformat

    links = [f"{{download}}`student notebook </downloads/student/{stem}.ipynb>`"]
    if result is not None and result.notebook is not None:
        links.append(f"{{download}}`executed notebook </downloads/executed/{stem}.ipynb>`")
    links.append(f"{{download}}`instructor copy (with solutions) </downloads/instructor/{stem}.ipynb>`")
    lines = ["<div class='dro-lab-downloads'>\n", "\n", "Download: " + " · ".join(links) + "\n"]
    if result is None or result.status == "skipped":
        lines.append("\n*Not executed in this run: the page shows the lesson without outputs.*\n")
    elif result.status == "failed":
        lines.append(f"\n*This lesson failed in this run ({preset} preset): {html.escape(result.problem)}*\n")
    else:
        lines.append(f"\n*Executed with the `{preset}` preset in {result.seconds:.0f} s.*\n")
    lines.append("\n</div>\n")
    return nbformat.v4.new_markdown_cell("".join(lines))


def lesson_page(lesson: Lesson, result: LessonResult | None, preset: str) -> Any:
    """The lesson's page: its executed notebook (or the source when it did not run), published, with the
    download links under the title."""
    import nbformat

    source = result.notebook if result is not None and result.notebook is not None else lesson.notebook
    nb = publish_notebook(nbformat.read(str(source), as_version=4), name=lesson.id)
    stem = lesson.notebook.stem
    first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells.insert(first_code, _downloads_cell(stem, result, preset))
    return nb


def write_sources(
    src: Path,
    *,
    syllabus: Syllabus,
    results: Sequence[LessonResult],
    preset: str,
    summary_md: str,
    instructor_dir: Path,
) -> dict[str, str]:
    """Write the Sphinx sources into ``src``; return lesson id -> page name (the notebook's stem)."""
    import nbformat

    by_id = {r.id: r for r in results}
    # the repository's layout (notebooks/, course/): the lessons' links to course/glossary.md work as they are,
    # and the theme's Binder / Colab buttons point at notebooks/<stem>.ipynb in the repository
    pages = {lesson.id: f"notebooks/{lesson.notebook.stem}" for lesson in syllabus.lessons}
    write_if_changed(src / "conf.py", conf_py(syllabus.title))
    write_if_changed(src / "_static" / "dro_lab.css", _CSS)
    manual = write_manual(src, syllabus, write_if_changed)
    write_if_changed(src / "index.md", home_page(syllabus, by_id, preset, pages, manual))
    lines = summary_md.splitlines()
    if lines and lines[0].startswith("# "):  # the navigation shows the page title: keep it short
        lines[0] = f"# Run summary ({preset} preset)"
    write_if_changed(src / "summary.md", "\n".join(lines) + "\n")
    for name in COURSE_PAGES:
        page = syllabus.root / "course" / name
        if page.is_file():
            write_if_changed(src / "course" / name, page.read_text(encoding="utf-8"))
    for lesson in syllabus.lessons:
        stem, result = lesson.notebook.stem, by_id.get(lesson.id)
        write_if_changed(src / f"{pages[lesson.id]}.ipynb", nbformat.writes(lesson_page(lesson, result, preset)))
        write_if_changed(src / "downloads" / "student" / f"{stem}.ipynb", lesson.notebook.read_text(encoding="utf-8"))
        instructor = instructor_dir / f"{lesson.id}.ipynb"
        if instructor.is_file():  # executed in the lesson's run: as light as the executed student notebook
            solved = strip_widget_state(nbformat.read(str(instructor), as_version=4))
            write_if_changed(src / "downloads" / "instructor" / f"{stem}.ipynb", nbformat.writes(solved))
        if result is not None and result.notebook is not None and result.notebook.is_file():
            executed = strip_widget_state(nbformat.read(str(result.notebook), as_version=4))
            write_if_changed(src / "downloads" / "executed" / f"{stem}.ipynb", nbformat.writes(executed))
    return pages
