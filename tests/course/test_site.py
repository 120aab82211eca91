"""The course website without a browser: what a published notebook holds, and a site built from hand-made
executed lessons (a plotly figure, a panel with its static twin, a widget without one, maths).

Oracles: the figures written here by hand, read back out of the pages' scripts; the pages' own text (every
``src``/``href`` that is not local is a failure). The browser checks live in tests/course/test_site_browser.py.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from dro_course import load_syllabus
from dro_course.results import LessonResult
from dro_course.site import build_site, figure_html, publish_notebook, strip_widget_state
from dro_course.site.publish import PLOTLY_MIME, WIDGET_MIME

v4 = nbformat.v4
FIGURE = {"data": [{"type": "scatter", "y": [3, 1, 2], "name": "hand-made"}], "layout": {"title": {"text": "T"}}}
TWIN = {
    "data": [{"type": "bar", "y": [1, 2]}],
    "layout": {"sliders": [{"steps": [{"label": "β = 1", "method": "animate", "args": [["b1"]]}]}]},
    "frames": [{"name": "b1", "data": [{"type": "bar", "y": [2, 1]}]}],
}


def _widget_output(twin: dict | None):
    meta = (
        {"dro_lab": {"static_twin": twin, "title": "A panel", "note": "Precomputed at 1 value of β."}} if twin else {}
    )
    return v4.new_output(
        "display_data",
        data={WIDGET_MIME: {"model_id": "abc", "version_major": 2, "version_minor": 0}, "text/plain": "panel"},
        metadata=meta,
    )


def _executed_notebook():
    figure = v4.new_code_cell("fig")
    figure.outputs = [v4.new_output("execute_result", data={PLOTLY_MIME: FIGURE}, execution_count=1)]
    panel = v4.new_code_cell("panel")
    panel.outputs = [_widget_output(TWIN)]
    bare = v4.new_code_cell("slider")
    bare.outputs = [_widget_output(None)]
    bar = v4.new_code_cell("run()")
    bar.outputs = [
        v4.new_output(
            "display_data",
            data={
                WIDGET_MIME: {"model_id": "t", "version_major": 2, "version_minor": 0},
                "text/plain": "hws: training runs:   0%|   | 0/4 [00:00<?, ?run/s]",
            },
        )
    ]
    printed = v4.new_code_cell("print(1)")
    printed.outputs = [v4.new_output("stream", name="stdout", text="1\n")]
    nb = v4.new_notebook(
        cells=[v4.new_markdown_cell("# Lesson\n\nInline $\\beta^2$ and\n\n$$q_i \\propto e^{\\beta \\ell_i}$$"), figure]
        + [panel, bare, printed, bar]
    )
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"abc": {"x": "5 MB"}}}}
    return nb


def _scripts_figures(html: str) -> list[tuple[list, dict, list]]:
    """Every (data, layout, frames) that a page's scripts hand to Plotly.newPlot / addFrames."""
    found, decoder = [], json.JSONDecoder()
    for script in re.findall(r"<script[^>]*>(.*?)</script>", html, flags=re.S):
        if "Plotly.newPlot" not in script:
            continue
        layout, _ = decoder.raw_decode(script[script.index("var l=") + len("var l=") :])
        data, _ = decoder.raw_decode(script[script.index("Plotly.newPlot(el,") + len("Plotly.newPlot(el,") :])
        frames, _ = decoder.raw_decode(script[script.index("var f=") + len("var f=") :])
        found.append((data, layout, frames))
    return found


def test_a_figure_names_the_shared_template_and_keeps_float32_arrays():
    """The site's template is named, not carried; a float64 array is stored as float32, one beyond float32's
    range is left as it was."""
    template = {"layout": {"font": {"family": "serif"}}}
    values = np.linspace(0.1, 1.0, 7)
    figure = {
        "data": [
            {"type": "scatter", "y": {"dtype": "f8", "bdata": base64.b64encode(values.tobytes()).decode()}},
            {
                "type": "scatter",
                "y": {"dtype": "f8", "bdata": base64.b64encode(np.array([1e-40, 1.0]).tobytes()).decode()},
            },
        ],
        "layout": {"template": template, "title": {"text": "t"}},
    }
    html = figure_html(figure, "f", template)
    [(data, layout, _)] = _scripts_figures(html)
    assert layout == {"title": {"text": "t"}} and "l.template=window.droLabTemplate" in html
    assert data[0]["y"]["dtype"] == "f4" and data[1]["y"]["dtype"] == "f8"
    shown = np.frombuffer(base64.b64decode(data[0]["y"]["bdata"]), dtype="<f4")
    np.testing.assert_allclose(shown, values, rtol=2**-23)
    # another template is carried as it was
    [(_, layout, _)] = _scripts_figures(figure_html(figure, "f", {"layout": {}}))
    assert layout["template"] == template


def test_published_notebook_keeps_no_widget_state_and_draws_from_shared_plotly():
    published = publish_notebook(_executed_notebook(), name="lesson")
    assert "widgets" not in published.metadata
    fig_html = published.cells[1].outputs[0]["data"]["text/html"]
    assert "<script src" not in fig_html and "plotly.js" not in fig_html.lower().replace("plotly.newplot", "")
    [(data, layout, frames)] = _scripts_figures(fig_html)
    assert (data, layout, frames) == (FIGURE["data"], FIGURE["layout"], [])
    twin_html = published.cells[2].outputs[0]["data"]["text/html"]
    [(data, layout, frames)] = _scripts_figures(twin_html)
    assert (data, layout, frames) == (TWIN["data"], TWIN["layout"], TWIN["frames"])
    assert "A panel" in twin_html and "Precomputed at 1 value of β." in twin_html
    bare = published.cells[3].outputs[0]["data"]
    assert list(bare) == ["text/html"] and "JupyterLab" in bare["text/html"]
    assert published.cells[4].outputs[0]["text"] == "1\n"
    assert published.cells[5].outputs == []  # a tqdm bar is dropped
    ids = re.findall(r'<div id="([^"]+)"', fig_html + twin_html)
    assert ids == ["lesson-fig-1", "lesson-fig-2"]


def test_script_safe_json():
    figure = {"data": [{"type": "scatter", "name": "</script><b>x"}], "layout": {}}
    nb = v4.new_notebook(cells=[v4.new_code_cell("f")])
    nb.cells[0].outputs = [v4.new_output("display_data", data={PLOTLY_MIME: figure})]
    html = publish_notebook(nb, name="x").cells[0].outputs[0]["data"]["text/html"]
    assert html.count("</script>") == 1  # only the real end of the script


def test_download_copy_shows_twins_as_plotly_figures():
    stripped = strip_widget_state(_executed_notebook())
    assert "widgets" not in stripped.metadata
    assert stripped.cells[2].outputs[0]["data"][PLOTLY_MIME] == TWIN
    assert WIDGET_MIME in stripped.cells[3].outputs[0]["data"]  # no twin: left as it was (its text shows)
    assert stripped.cells[1].outputs[0]["data"][PLOTLY_MIME] == FIGURE


def test_publish_rejects_a_missing_name():
    with pytest.raises(ValueError, match="lesson id"):
        publish_notebook(_executed_notebook(), name="")


SYLLABUS = """\
title: Site course
description: A two-lesson course for the site's tests.
lessons:
  - {id: one, title: The first lesson, notebook: src/one.ipynb, minutes: {smoke: 0.1}, reading_minutes: 5}
  - {id: two, title: Not run, notebook: src/two.ipynb}
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("site")
    (root / "src").mkdir()
    (root / "course").mkdir()
    (root / "course" / "syllabus.yaml").write_text(SYLLABUS, encoding="utf-8")
    source = v4.new_notebook(cells=[v4.new_markdown_cell("# Lesson one"), v4.new_code_cell("fig")])
    nbformat.write(source, str(root / "src" / "one.ipynb"))
    nbformat.write(v4.new_notebook(cells=[v4.new_markdown_cell("# Lesson two")]), str(root / "src" / "two.ipynb"))
    out = root / "out"
    out.mkdir()
    nbformat.write(_executed_notebook(), str(out / "one.ipynb"))
    (root / "course" / "instructor_guide.md").write_text("# Instructor guide\n\nHand out the copies.\n")
    (out / "instructor").mkdir()
    solved = _executed_notebook()
    solved.cells.append(v4.new_code_cell(f"answer = 42  # {SOLUTION}"))
    nbformat.write(solved, str(out / "instructor" / "one.ipynb"))
    syllabus = load_syllabus(root / "course" / "syllabus.yaml")
    results = [LessonResult(id="one", title="The first lesson", status="ok", seconds=2.0, notebook=out / "one.ipynb")]
    common = dict(syllabus=syllabus, results=results, preset="smoke", summary_md="# Summary\n\nall ok\n")
    index = build_site(out, **common)
    assert index == out / "site" / "index.html"
    assert build_site(out, **common, audience="instructor") == out / "instructor-site" / "index.html"
    return out / "site"


#: A line only the instructor copy holds.
SOLUTION = "the solution of exercise one"


@pytest.mark.slow
def test_site_has_home_lessons_summary_search_and_downloads(site):
    for page in ("index.html", "search.html", "notebooks/one.html", "notebooks/two.html"):
        assert (site / page).is_file(), page
    assert (site / "searchindex.js").is_file() and (site / "_static" / "plotly-course.min.js").is_file()
    assert (site / "_static" / "katex" / "katex-typeset.js").is_file()
    assert (site / "_static" / "katex" / "fonts" / "KaTeX_Main-Regular.woff2").is_file()
    # what no page loads is not in the site, and nothing of the build is left beside it
    assert not list(site.rglob("*.map")) and not (site / "_static" / "scripts" / "fontawesome.js").exists()
    assert not (site.parent / ".site-build").exists()
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "The first lesson" in home and "notebooks/one.html" in home and "A two-lesson course" in home
    page = (site / "notebooks" / "one.html").read_text(encoding="utf-8")
    downloads = re.findall(r'href="(\.\./_downloads/[^"]+)"', page)
    assert len(downloads) == 2  # the student and the executed notebook: no instructor copy
    student, executed = (nbformat.read(str((site / "notebooks" / d).resolve()), as_version=4) for d in downloads)
    assert [c.get("outputs", []) for c in student.cells] == [[], []]
    assert "widgets" not in executed.metadata and executed.cells[2].outputs[0]["data"][PLOTLY_MIME] == TWIN


@pytest.mark.slow
def test_the_student_site_holds_no_solution_no_guide_and_no_run_log(site):
    for path in site.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".ipynb", ".txt", ".js", ".md"):
            text = path.read_text(encoding="utf-8", errors="replace")
            assert SOLUTION not in text and "Hand out the copies" not in text, path
    assert not (site / "summary.html").exists() and not (site / "course" / "instructor_guide.html").exists()
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "this run" not in home and "seconds" not in home


@pytest.mark.slow
def test_the_instructor_site_shows_the_solutions_the_guide_and_the_run_log(site):
    instructor = site.parent / "instructor-site"
    page = (instructor / "notebooks" / "one.html").read_text(encoding="utf-8")
    assert SOLUTION in page
    downloads = re.findall(r'href="(\.\./_downloads/[^"]+)"', page)
    assert len(downloads) == 3 and '>instructor</span> <span class="pre">copy<' in page
    solved = nbformat.read(str((instructor / "notebooks" / downloads[2]).resolve()), as_version=4)
    assert SOLUTION in solved.cells[-1].source
    home = (instructor / "index.html").read_text(encoding="utf-8")
    assert "summary.html" in home and "course/instructor_guide.html" in home and "this run" in home
    assert (instructor / "course" / "instructor_guide.html").is_file()


def test_an_unknown_audience_is_refused(tmp_path, site):
    syllabus = load_syllabus(site.parents[1] / "course" / "syllabus.yaml")
    with pytest.raises(ValueError, match="Invalid audience: 'teacher'"):
        build_site(tmp_path, syllabus=syllabus, results=[], preset="smoke", summary_md="# s", audience="teacher")


@pytest.mark.slow
def test_site_pages_fetch_nothing_from_the_network(site):
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        remote = re.findall(r'<(?:script|link|img|iframe)[^>]+(?:src|href)="(https?:)?//[^"]*"', text)
        assert remote == [], (page, remote[:3])


@pytest.mark.slow
def test_lesson_page_draws_the_figure_and_the_twin_with_the_sites_plotly(site):
    page = (site / "notebooks" / "one.html").read_text(encoding="utf-8")
    figures = _scripts_figures(page)
    assert [f[0] for f in figures] == [FIGURE["data"], TWIN["data"]]
    assert figures[1][2] == TWIN["frames"]
    assert page.count('src="../_static/plotly-course.min.js') == 1
    assert "katex/katex-typeset.js" in page and "katex/katex.min.css" in page and "fontawesome" not in page
    # the figures' shared template comes with plotly.js (a figure in it names it: test_a_figure_names_the_shared…)
    assert 'src="../_static/plotly-template.js' in page
    assert len(page.encode()) < 3_000_000
    # a page without a figure does not load plotly.js
    assert "plotly" not in (site / "notebooks" / "two.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_build_site_checks_its_arguments(tmp_path, site):
    syllabus = load_syllabus(site.parents[1] / "course" / "syllabus.yaml")
    good = dict(syllabus=syllabus, results=[], preset="smoke", summary_md="# s")
    with pytest.raises(TypeError, match="Syllabus"):
        build_site(tmp_path, **{**good, "syllabus": "course/syllabus.yaml"})
    with pytest.raises(TypeError, match="LessonResult"):
        build_site(tmp_path, **{**good, "results": ["one"]})
    with pytest.raises(ValueError, match="Invalid preset"):
        build_site(tmp_path, **{**good, "preset": "huge"})
    assert not (tmp_path / "site").exists()


def test_the_page_shows_no_injected_cell_but_says_what_the_run_was_given():
    """papermill's injected-parameters cell sits between the parameters and the set-up: the page drops it and says
    in the download line which values the run was given."""
    from dro_course.site.sources import _downloads_cell, _take_injected

    nb = v4.new_notebook(cells=[v4.new_code_cell("epochs = None  # epochs", metadata={"tags": ["parameters"]})])
    nb.cells.append(
        v4.new_code_cell('# Parameters\npreset = "smoke"\nepochs = 3\n', metadata={"tags": ["injected-parameters"]})
    )
    nb.cells.append(v4.new_code_cell("setup = setup_lesson(...)"))
    injected = _take_injected(nb)
    assert injected == ['preset = "smoke"', "epochs = 3"] and len(nb.cells) == 2
    result = LessonResult(id="x", title="x", status="ok", notebook=Path("x.ipynb"))
    line = _downloads_cell("x", result, "smoke", "student", False, injected).source
    assert '`preset = "smoke"`; `epochs = 3`' in line and "the parameters cell below" in line
    assert "ran with" not in _downloads_cell("x", result, "smoke", "student", False, []).source


def test_an_empty_markdown_output_shows_nothing():
    """``display(Markdown(""))`` (a note with nothing to say) draws nothing in JupyterLab, nor on the page: not the
    object's text/plain repr."""
    nb = v4.new_notebook(cells=[v4.new_code_cell("display(Markdown(note))")])
    empty = {"text/markdown": "", "text/plain": "<IPython.core.display.Markdown object>"}
    said = {"text/markdown": "*a note*", "text/plain": "<IPython.core.display.Markdown object>"}
    nb.cells[0].outputs = [v4.new_output("display_data", data=empty), v4.new_output("display_data", data=said)]
    outputs = publish_notebook(nb, name="x").cells[0].outputs
    assert [o["data"]["text/markdown"] for o in outputs] == ["*a note*"]


def test_a_course_figure_carries_the_template_the_site_writes_once():
    """A figure made by dro_course.figures has, in its notebook JSON, exactly the template the site writes into
    _static/plotly-template.js: the page names it instead of carrying it."""
    import plotly.graph_objects as go
    import plotly.io as pio

    from dro_course.figures._style import LAYOUT
    from dro_course.site.assets import shared_template

    figure = json.loads(pio.to_json(go.Figure(go.Scatter(y=[1.0, 2.0]), layout=LAYOUT)))
    assert figure["layout"]["template"] == shared_template()
    html = figure_html(figure, "f", shared_template())
    assert '"template"' not in html and "l.template=window.droLabTemplate" in html
