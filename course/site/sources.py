"""The Sphinx source folder of the course website: ``conf.py``, the home page, the run summary, one published
notebook per lesson with its download links (student, executed and instructor copies), the course's own pages and
the library's manual with its API reference (:mod:`.manual`)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dro_course._files import write_text_atomic
from dro_course.results import LessonResult
from dro_course.site.assets import (
    KATEX_CSS,
    KATEX_JS,
    PLOTLY_JS,
    PLOTLY_TEMPLATE_JS,
    shared_template,
)
from dro_course.site.bibliography import BIBFILE, references_page
from dro_course.site.home import COURSE_PAGES, REPOSITORY, home_page
from dro_course.site.manual import write_manual
from dro_course.site.publish import publish_notebook, strip_widget_state
from dro_course.syllabus import Lesson, Syllabus

_CONF = """# Written by dro_course.site for each build: edit course/site/sources.py, not this file.
project = {title!r}
author = "dro_lab developers"
# autodoc, autosummary and napoleon: the API reference, generated from dro_lab's Google-style docstrings
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon", "sphinxcontrib.bibtex"]
autosummary_generate = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # a class's "Attributes:" as a field list: :members: documents the attributes themselves
python_maximum_signature_line_length = 100
add_module_names = False
html_theme = "sphinx_book_theme"
# the short name: each page's title ends with it, and the sidebar shows it
html_title = {short_title!r}
html_static_path = ["_static"]
html_css_files = ["dro_lab.css"]
# the theme's head scripts without fontawesome.js (1.5 MB): its stylesheet already draws the icons with web fonts
templates_path = ["_templates"]
# the maths: Sphinx's MathJax hook loads the site's own KaTeX instead (dro_course.site.assets), so it comes only on
# the pages with maths and from no network
mathjax_path = {katex_js!r}
mathjax3_config = None
myst_update_mathjax = False  # no MathJax settings written into the pages: KaTeX reads none
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
nb_execution_mode = "off"
# no require.js / widget manager from a CDN: the published notebooks carry no widget state
nb_ipywidgets_js = {{}}
nb_merge_streams = True
# a lesson's tables (display(Markdown(...))) render as tables, as in JupyterLab, not as CommonMark paragraphs
nb_render_markdown_format = "myst"
# the references page (course/references.md): every entry of the course's BibTeX file under a target named by its
# key, so that a lesson's plain Markdown link references.md#<key> lands on it
bibtex_bibfiles = [{bibfile!r}]
bibtex_default_style = "unsrt"
html_last_updated_fmt = ""
html_theme_options = {{
    "repository_url": {repository!r},
    "repository_branch": "main",
    "path_to_docs": "",
    # no repository button: its GitHub icon is the one glyph of the theme's 110 kB brand font (the home page links
    # the repository in words)
    "use_repository_button": False,
    "use_download_button": True,
    "launch_buttons": {{
        "binderhub_url": "https://mybinder.org",
        "colab_url": "https://colab.research.google.com",
        "notebook_interface": "jupyterlab",
    }},
    "show_toc_level": 2,
    # one search box, the sidebar's: no second one in a header bar above it
    "navbar_persistent": [],
}}
# the figures are drawn on white; and a first visit logs no "invalid theme mode"
html_context = {{"default_mode": "light"}}


def _plotly_where_drawn(app, pagename, templatename, context, doctree):
    # plotly.js and the figures' shared template only on the pages that draw a figure; in the page's head, so
    # before the figures' scripts run; KaTeX's stylesheet on the pages with maths, where Sphinx adds KaTeX
    body = context.get("body", "")
    if "Plotly.newPlot" in body:
        app.add_js_file({plotly_js!r})
        app.add_js_file({plotly_template_js!r})
    if app.env.get_domain("math").has_equations(pagename):  # the test Sphinx uses for KaTeX's script
        app.add_css_file({katex_css!r})


def setup(app):
    app.connect("html-page-context", _plotly_where_drawn)
exclude_patterns = ["_build", "downloads/**"]
suppress_warnings = ["mystnb.unknown_mime_type", "myst.header", "misc.highlighting_failure"]
"""

#: pydata-sphinx-theme's asset macros (static/webpack-macros.html), less the script that turns icons into SVGs.
_THEME_MACROS = """{% macro head_pre_assets() %}
<link href="{{ pathto('_static/styles/theme.css', 1) }}" rel="stylesheet" />
<link href="{{ pathto('_static/styles/pydata-sphinx-theme.css', 1) }}" rel="stylesheet" />
{% endmacro %}
{% macro head_js_preload() %}
<link rel="preload" as="script" href="{{ pathto('_static/scripts/bootstrap.js', 1) }}" />
<link rel="preload" as="script" href="{{ pathto('_static/scripts/pydata-sphinx-theme.js', 1) }}" />
{% endmacro %}
{% macro body_post() %}
<script defer src="{{ pathto('_static/scripts/bootstrap.js', 1) }}"></script>
<script defer src="{{ pathto('_static/scripts/pydata-sphinx-theme.js', 1) }}"></script>
{% endmacro %}
"""

#: The theme's layout, less the search index and the two search scripts it loads on every page for a
#: search-as-you-type box the site does not turn on (the search page loads all three itself).
_LAYOUT = """{% extends "!layout.html" %}
{%- block extrahead %}
{%- set ns = namespace(head=super()) %}
{%- for script in ['_static/searchtools.js', '_static/language_data.js', 'searchindex.js'] %}
{%- set ns.head = ns.head | replace('<script src="' ~ pathto(script, 1) | e ~ '"></script>', '') %}
{%- endfor %}
{{ ns.head }}
{%- endblock %}
"""

#: The site's own styles. A lesson's code lines hold at most 88 characters (tests/course/notebooks); at 12.5 px a
#: monospace character is about 7.5 px wide, so 88 of them fit the theme's code column (668 px inside its padding at
#: a 1300 px window, 754 px at its widest) without a sideways scroll. A displayed formula too wide for the column
#: scrolls inside itself, and one with an equation number leaves the number room. A printed line longer than the
#: column wraps, so that a reader sees all of it.
_CSS = """.dro-lab-twin-note, .dro-lab-live { color: #555; font-size: 90%; }
.dro-lab-downloads { font-size: 90%; }
div.cell_input pre, div.cell_output pre { font-size: 12.5px; }
div.cell_output pre { white-space: pre-wrap; }
.katex-display { overflow-x: auto; overflow-y: hidden; padding: 0.2em 0; }
.katex-display .katex-html:has(> .tag) { padding-right: 2.5em; }
"""


def write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless the file already holds it (Sphinx rebuilds only the pages whose sources changed)."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)


def conf_py(title: str) -> str:
    return _CONF.format(
        title=title,
        short_title=title.split(":", 1)[0].strip(),
        plotly_js=PLOTLY_JS,
        plotly_template_js=PLOTLY_TEMPLATE_JS,
        katex_js=KATEX_JS,
        katex_css=KATEX_CSS,
        repository=REPOSITORY,
        bibfile=BIBFILE,
    )


def _run_with(injected: list[str]) -> str:
    """The line that says which parameters the run gave the lesson (papermill's injected cell, not shown)."""
    if not injected:
        return ""
    values = "; ".join(f"`{line}`" for line in injected)
    return f"\n*This page ran with {values}: the parameters cell below shows the notebook's own values.*\n"


def _take_injected(nb: Any) -> list[str]:
    """Remove papermill's injected-parameters cell from ``nb`` (the page shows the notebook's parameters cell and
    then its set-up, nothing between); return its assignments."""
    for i, cell in enumerate(nb.cells):
        if "injected-parameters" in cell.get("metadata", {}).get("tags", []):
            del nb.cells[i]
            return [line for line in cell.source.splitlines() if line.strip() and not line.startswith("#")]
    return []


def _downloads_cell(
    stem: str, result: LessonResult | None, preset: str, audience: str, solved: bool, injected: list[str] = ()
) -> Any:
    import nbformat

    links = [f"{{download}}`notebook </downloads/student/{stem}.ipynb>`"]
    if result is not None and result.notebook is not None:
        links.append(f"{{download}}`notebook with its outputs </downloads/executed/{stem}.ipynb>`")
    if audience == "instructor" and solved:
        links.append(f"{{download}}`instructor copy (with solutions) </downloads/instructor/{stem}.ipynb>`")
    lines = ["<div class='dro-lab-downloads'>\n", "\n", "Download: " + " · ".join(links) + "\n"]
    if result is None or result.status == "skipped":
        lines.append("\n*Not executed in this run: the page shows the lesson without outputs.*\n")
    elif result.status == "failed":
        lines.append(f"\n*This lesson failed in this run ({preset} preset): {html.escape(result.problem)}*\n")
    elif audience == "instructor":
        lines.append(f"\n*Executed with the `{preset}` preset in {result.seconds:.0f} s, with the solutions.*\n")
    lines.append(_run_with(list(injected)))
    lines.append("\n</div>\n")
    return nbformat.v4.new_markdown_cell("".join(lines))


def lesson_page(
    lesson: Lesson, result: LessonResult | None, preset: str, audience: str = "student", solved: Path | None = None
) -> Any:
    """The lesson's page: its executed notebook (or the source when it did not run), published, with the
    download links under the title. The instructor's page is the executed instructor copy ``solved`` (the lesson
    with its solutions and the written exercises' answers) when the run made one."""
    import nbformat

    source = result.notebook if result is not None and result.notebook is not None else lesson.notebook
    if audience == "instructor" and solved is not None:
        source = solved
    template = shared_template()  # the one _static/plotly-template.js holds (assets.copy_assets)
    nb = publish_notebook(nbformat.read(str(source), as_version=4), name=lesson.id, template=template)
    injected = _take_injected(nb)
    stem = lesson.notebook.stem
    first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells.insert(first_code, _downloads_cell(stem, result, preset, audience, solved is not None, injected))
    return nb


def write_sources(
    src: Path,
    *,
    syllabus: Syllabus,
    results: Sequence[LessonResult],
    preset: str,
    summary_md: str,
    instructor_dir: Path,
    audience: str = "student",
) -> dict[str, str]:
    """Write the Sphinx sources of ``audience``'s site into ``src``; return lesson id -> page name (the notebook's
    stem). The student's site holds no solution: no instructor copy, no instructor guide, no run summary."""
    import nbformat

    by_id = {r.id: r for r in results}
    # the repository's layout (notebooks/, course/): the lessons' links to course/glossary.md work as they are,
    # and the theme's Binder / Colab buttons point at notebooks/<stem>.ipynb in the repository
    pages = {lesson.id: f"notebooks/{lesson.notebook.stem}" for lesson in syllabus.lessons}
    write_if_changed(src / "conf.py", conf_py(syllabus.title))
    write_if_changed(src / "_static" / "dro_lab.css", _CSS)
    write_if_changed(src / "_templates" / "static" / "webpack-macros.html", _THEME_MACROS)
    write_if_changed(src / "_templates" / "layout.html", _LAYOUT)
    absent = sorted(set(COURSE_PAGES["instructor"]) - set(COURSE_PAGES[audience]))
    manual = write_manual(src, syllabus, write_if_changed, absent)
    write_if_changed(src / "index.md", home_page(syllabus, by_id, preset, pages, manual, audience=audience))
    if audience == "instructor":
        lines = summary_md.splitlines()
        if lines and lines[0].startswith("# "):  # the navigation shows the page title: keep it short
            lines[0] = f"# Run summary ({preset} preset)"
        write_if_changed(src / "summary.md", "\n".join(lines) + "\n")
    _write_course_pages(src, syllabus, audience)
    for lesson in syllabus.lessons:
        stem, result = lesson.notebook.stem, by_id.get(lesson.id)
        instructor = instructor_dir / f"{lesson.id}.ipynb"
        solved = instructor if instructor.is_file() else None
        page = lesson_page(lesson, result, preset, audience, solved)
        write_if_changed(src / f"{pages[lesson.id]}.ipynb", nbformat.writes(page))
        write_if_changed(src / "downloads" / "student" / f"{stem}.ipynb", lesson.notebook.read_text(encoding="utf-8"))
        if audience == "instructor" and solved is not None:  # as light as the executed student notebook
            copy = strip_widget_state(nbformat.read(str(solved), as_version=4))
            write_if_changed(src / "downloads" / "instructor" / f"{stem}.ipynb", nbformat.writes(copy))
        if result is not None and result.notebook is not None and result.notebook.is_file():
            executed = strip_widget_state(nbformat.read(str(result.notebook), as_version=4))
            write_if_changed(src / "downloads" / "executed" / f"{stem}.ipynb", nbformat.writes(executed))
    return pages


def _write_course_pages(src: Path, syllabus: Syllabus, audience: str) -> None:
    """The course's own pages of ``audience``'s site, and the BibTeX file the references page reads."""
    folder, bib = syllabus.root / "course", syllabus.root / BIBFILE
    for name in COURSE_PAGES[audience]:
        page = folder / name
        if not page.is_file():
            continue
        text = references_page(page, bib) if name == "references.md" and bib.is_file() else page.read_text("utf-8")
        write_if_changed(src / "course" / name, text)
    write_if_changed(src / BIBFILE, bib.read_text(encoding="utf-8") if bib.is_file() else "")
