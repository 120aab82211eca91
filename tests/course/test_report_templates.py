"""The run report (``OUT/index.html``) and a sweep's page (``OUT/sweep-PARAM/index.html``) are Jinja2 templates
(``course/templates/``, autoescape on): what a syllabus or a run puts in them is text, never markup; every link
of the run report leads to a file of the run; neither page reaches for the network.

The unit tests render the templates from made-up results; one real run of two fixture lessons (one passing, one
failing), under a syllabus whose titles are hostile, checks the links and the escaping on a real page.
"""

from __future__ import annotations

import re
import tomllib
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import pytest
from _course_util import REPO, make_course  # tests/course/

from dro_course import FailingCell, LessonResult, run_course, write_summary, write_sweep_summary
from dro_course.results import SweepResult
from dro_course.runner.report import render_page
from dro_course.syllabus import load_syllabus

TEMPLATES = REPO / "course" / "templates"

#: what a title could hold that HTML must not take as markup: a script, an ampersand, both kinds of quote
TRICKY = """<script>alert("x")</script> & 'quoted' "title" </td></tr>"""

TRICKY_SYLLABUS = """\
title: '{title}'
presets: [smoke]
lessons:
  - id: passing
    title: '{title}'
    notebook: src/passing.ipynb
    minutes: {{smoke: 0.1}}
  - {{id: failing, title: A failing lesson, notebook: src/failing.ipynb}}
""".format(title=TRICKY.replace("'", "''"))  # YAML's single-quoted scalar: '' is one quote


#: a lesson's files that the run report links, relative to the run's folder: (prefix, suffix) of its id
FILES = (("site/notebooks/", ".html"), ("", ".ipynb"), ("", ".log"))


class _Page(HTMLParser):
    """What a browser would see of a page: its elements, the text of <title> and <h1>, every link, all text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.links: list[str] = []  # href and src attributes
        self.text: dict[str, str] = {}
        self._open: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._open.append(tag)
        self.links += [value for name, value in attrs if name in ("href", "src") and value is not None]

    def handle_endtag(self, tag):
        if tag in self._open:
            del self._open[len(self._open) - 1 - self._open[::-1].index(tag) :]

    def handle_data(self, data):
        for tag in set(self._open):  # a record's cell is text of the row's cell too, once
            self.text[tag] = self.text.get(tag, "") + data


def _results(out: Path, title: str) -> list[LessonResult]:
    cell = FailingCell(
        index=2, executed_index=3, exec_count=3, first_line='raise ValueError("<x>")', ename="ValueError", evalue="<x>"
    )
    return [
        LessonResult(
            id="passing",
            title=title,
            status="ok",
            seconds=1.5,
            notebook=out / "passing.ipynb",
            html=out / "site" / "notebooks" / "passing.html",
            log=out / "passing.log",
            records={"note": title, "loss": 0.125, "items": [1, 2]},
        ),
        LessonResult(
            id="failing",
            title="A failing lesson",
            status="failed",
            seconds=2.0,
            notebook=out / "failing.ipynb",
            log=out / "failing.log",
            error="ValueError: <x>",
            failure="raised",
            failing_cell=cell,
        ),
        LessonResult(id="skipped", title="Skipped & <i>not run</i>", status="skipped"),
    ]


def _no_network(page: str) -> None:
    assert not re.search(r"https?://", page), re.search(r".{60}https?://.{60}", page)
    assert "//" not in " ".join(_Page(page).links)  # nor a protocol-relative link


def test_every_template_ships_with_the_package():
    templates = sorted(p.name for p in TEMPLATES.glob("*.j2"))
    assert {"run_report.html.j2", "sweep_report.html.j2"} <= set(templates)
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "templates/*.j2" in pyproject["tool"]["setuptools"]["package-data"]["dro_course"]
    assert any(r.lower().startswith("jinja2") for r in pyproject["project"]["optional-dependencies"]["course"])


def test_templates_escape_what_they_are_given():
    page = render_page(
        "run_report.html.j2", title=TRICKY, header=TRICKY, tally=TRICKY, stop_note=TRICKY, preset=TRICKY, rows=[]
    )
    assert "<script" not in page and _Page(page).text["title"] == TRICKY
    with pytest.raises(jinja2.UndefinedError):  # a name the template needs and was not given
        render_page("run_report.html.j2", title="t")


def test_run_report_escapes_a_tricky_title(tmp_path):
    make_course(tmp_path, TRICKY_SYLLABUS)
    syllabus = load_syllabus(tmp_path / "course" / "syllabus.yaml", check_notebooks=False)
    assert syllabus.title == TRICKY and syllabus.lessons[0].title == TRICKY
    out = tmp_path / "out"
    out.mkdir()
    paths = write_summary(
        _results(out, TRICKY), out, syllabus=syllabus, preset="smoke", parameters={"q": TRICKY}, interrupted=2
    )
    page = paths["html"].read_text(encoding="utf-8")
    seen = _Page(page)
    assert "script" not in seen.tags and "<script" not in page
    assert seen.text["title"] == TRICKY and seen.text["h1"] == TRICKY
    assert seen.text["a"].count(TRICKY) == 1  # the lesson's title, as the link to its page
    assert seen.text["td"].count(TRICKY) == 2  # ... and its record, as text
    assert "Skipped & <i>not run</i>" in seen.text["td"] and "i" not in seen.tags
    assert "interrupted by SIGINT" in seen.text["p"]
    # one row per lesson, one line each (what the runner's tests read), and the same columns in every row
    rows = [line for line in page.splitlines() if line.startswith("<tr class=")]
    assert [row.split('"')[1] for row in rows] == ["ok", "failed", "skipped"]
    assert [re.sub(r"<details>.*?</details>", "", row).count("<td") for row in rows] == [8, 8, 8]
    assert '<details><summary>2 records</summary><table class="records">' in rows[0]  # scalars only
    assert seen.links == [
        "site/notebooks/passing.html",
        "site/notebooks/passing.html",
        "passing.ipynb",
        "passing.log",
        "failing.ipynb",
        "failing.log",
    ]
    _no_network(page)


def test_sweep_page_escapes_and_links(tmp_path):
    def runs(k: int, status: str) -> list[LessonResult]:
        folder = tmp_path / f"v{k}"
        return [
            LessonResult(
                id=TRICKY,
                title=TRICKY,
                status=status,
                seconds=1.0 + k,
                records={"y": float(k)},
                notebook=folder / "a.ipynb",
                log=folder / "a.log",
                error="E: <no>" if status == "failed" else None,
            )
        ]

    sweep = SweepResult(
        param="p",
        values=[TRICKY, 1],
        runs={TRICKY: runs(0, "ok"), "1": runs(1, "failed")},
        lessons=[TRICKY],
        preset="smoke",
        folders={TRICKY: tmp_path / "v0", "1": tmp_path / "v1"},
    )
    page = write_sweep_summary(sweep, tmp_path)["index"].read_text(encoding="utf-8")
    body = re.sub(r"<script.*?</script>", "", page, flags=re.S)  # plotly's own, inline (no network)
    seen = _Page(body)
    assert "script" not in seen.tags and "<script>alert" not in page
    assert seen.text["li"].count(f"{TRICKY}: failed, 2.0 s") == 1 and "E: <no>" in seen.text["code"]
    assert f"p = {TRICKY}" in seen.text["b"] and TRICKY in seen.text["td"]  # the value, as text
    assert seen.links[:3] == ["sweep.html", "sweep.json", "sweep.md"]
    assert seen.links[3:] == [
        "v0/index.html",
        "v0/a.ipynb",
        "v0/a.log",
        "v1/index.html",
        "v1/a.ipynb",
        "v1/a.log",
    ]
    assert '<script src="' not in page and "plotly-graph-div" in page  # plotly.js inside the page
    _no_network(body)


# --------------------------------------------------------------------------------------------
# A real run of two fixture lessons, under the hostile titles
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tricky_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    syllabus = make_course(root, TRICKY_SYLLABUS)
    out = root / "out"
    results = run_course(syllabus, preset="smoke", out=out, jobs=2, timeout=120)
    return out, {r.id: r for r in results}


@pytest.mark.notebook
def test_every_link_of_a_real_run_report_exists(tricky_run):
    out, results = tricky_run
    assert {k: r.status for k, r in results.items()} == {"passing": "ok", "failing": "failed"}
    page = (out / "index.html").read_text(encoding="utf-8")
    links = _Page(page).links
    # each lesson's page on the site (twice: its title links there too), its executed notebook and its log
    expected = {f"{prefix}{lesson}{suffix}" for lesson in ("passing", "failing") for prefix, suffix in FILES}
    assert set(links) == expected and len(links) == 8, links
    for link in links:
        assert not link.startswith("/") and ":" not in link, link  # relative: the folder can move
        assert (out / link).is_file(), link


@pytest.mark.notebook
def test_a_real_run_report_escapes_and_stays_offline(tricky_run):
    out, _ = tricky_run
    page = (out / "index.html").read_text(encoding="utf-8")
    seen = _Page(page)
    assert "script" not in seen.tags and "<script" not in page
    assert seen.text["title"] == TRICKY and seen.text["h1"] == TRICKY and TRICKY in seen.text["a"]
    assert "deliberate failure in the third cell" in seen.text["code"]
    _no_network(page)
