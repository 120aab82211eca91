"""The README as a front page, and the library's manual on the course website: the manual's pages, an API page per
public module of dro_lab with its documented names, and the generated benchmark and reference pages.

Oracles: the README's and the manual's own text (line count, commands, link targets; its Python example run);
the modules' ``__all__``; the numbers in ``docs/bench-*.json`` and in the shipped reference runs, read back out of
the built pages' tables and text (never the site's generator run a second time). The site is the one the
session's smoke run built (tests/conftest.py ``executed_course``).
"""

from __future__ import annotations

import importlib
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from dro_course.site.api import API_MODULES, TOP, api_pages, page_name
from dro_course.site.manual import bench_documents, manual_pages

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MANUAL = REPO / "course" / "manual"
#: The public subpackages and modules that must each have an API page (the issue's list).
REQUIRED_API = (
    "dro_lab",
    "dro_lab.robust",
    "dro_lab.losses",
    "dro_lab.reweighting",
    "dro_lab.oracles",
    "dro_lab.metrics",
    "dro_lab.data",
    "dro_lab.models",
    "dro_lab.samplers",
    "dro_lab.optim",
    "dro_lab.pergrad",
    "dro_lab.attacks",
    "dro_lab.engine",
    "dro_lab.strategies",
    "dro_lab.experiments",
    "dro_lab.bench",
)
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)[^)]*\)")
_HTML_LINK = re.compile(r"""(?:href|src)=["']([^"']+)["']""")
_REF_DEF = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)


def _targets(markdown: str) -> list[str]:
    return _LINK.findall(markdown) + _HTML_LINK.findall(markdown) + _REF_DEF.findall(markdown)


# --------------------------------------------------------------------------- the README (no site needed)


def test_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200, f"README.md has {len(text.splitlines())} lines: the manual is on the site"
    assert "make course" in text and "make test" in text


def test_readme_links_work_on_pypi():
    """PyPI shows the README without the repository around it: every link is absolute (or an anchor)."""
    targets = _targets(README.read_text(encoding="utf-8"))
    assert targets
    relative = [t for t in targets if not t.startswith(("https://", "#"))]
    assert relative == [], f"README.md has relative links (use https://github.com/dro-lab/dro_lab/...): {relative}"


def test_readme_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert blocks, "README.md should show the library in a few lines of Python"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


# --------------------------------------------------------------------------- the manual's sources (no site needed)


def test_every_manual_page_is_linked_from_the_index_in_reading_order():
    on_disk = {p.stem for p in MANUAL.glob("*.md")}
    index = (MANUAL / "index.md").read_text(encoding="utf-8")
    linked = {t.split("#")[0][:-3] for t in _targets(index) if t.split("#")[0].endswith(".md") and "/" not in t}
    assert on_disk - {"index"} <= linked, f"course/manual/index.md does not link {sorted(on_disk - linked - {'index'})}"
    assert set(manual_pages(MANUAL)) == on_disk and manual_pages(MANUAL)[0] == "index"


@pytest.mark.parametrize("page", sorted(p.name for p in MANUAL.glob("*.md")))
def test_manual_links_point_at_files_that_exist(page):
    text = (MANUAL / page).read_text(encoding="utf-8")
    assert text.startswith("# "), f"{page} should open with its one title"
    for target in _targets(text):
        if target.startswith(("https://", "http://", "#")):
            continue
        path = (MANUAL / target.split("#")[0]).resolve()
        assert path.is_file(), f"{page} links {target}, which is not a file of the repository"


def test_api_sources_cover_every_public_module():
    pages = dict(api_pages())
    assert set(REQUIRED_API) <= {TOP, *API_MODULES}
    for module in (TOP, *API_MODULES):
        text = pages[f"{page_name(module)}.rst"]
        assert f".. automodule:: {module}" in text
        names = importlib.import_module(module).__all__
        assert names and all(name in text for name in names if not name.startswith("_")), module


# --------------------------------------------------------------------------- the built site


@pytest.fixture(scope="module")
def site(executed_course) -> Path:
    return executed_course.out / "site"


class _Page(HTMLParser):
    """A page's text, its headings (h1–h4) and tables, in document order: ``events`` holds ("h", level, text) and
    ("table", rows) with each row a list of cell texts."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.events: list[tuple] = []
        self.text: list[str] = []
        self._heading: tuple[int, list[str]] | None = None
        self._table: list[list[str]] | None = None
        self._cell: list[str] | None = None
        self._skip = 0
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in ("h1", "h2", "h3", "h4"):
            self._heading = (int(tag[1]), [])
        elif tag == "table":
            self._table = []
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1
        elif tag in ("h1", "h2", "h3", "h4") and self._heading is not None:
            level, parts = self._heading
            self.events.append(("h", level, " ".join("".join(parts).split()).rstrip("#").strip()))
            self._heading = None
        elif tag in ("td", "th") and self._cell is not None and self._table:
            self._table[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table" and self._table is not None:
            self.events.append(("table", [row for row in self._table if row]))
            self._table = None

    def handle_data(self, data):
        if self._skip:
            return
        self.text.append(data)
        for part in (self._heading[1] if self._heading else None, self._cell):
            if part is not None:
                part.append(data)


def _page(path: Path) -> _Page:
    assert path.is_file(), path
    return _Page(path.read_text(encoding="utf-8"))


def test_home_page_links_the_manual_and_the_api_reference(site):
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="course/manual/index.html"' in home and 'href="api/index.html"' in home


def test_every_manual_page_is_in_the_site(site):
    for name in manual_pages(MANUAL):
        title = (MANUAL / f"{name}.md").read_text(encoding="utf-8").splitlines()[0].removeprefix("# ")
        page = _page(site / "course" / "manual" / f"{name}.html")
        titles = [e[2].replace("’", "'") for e in page.events if e[:2] == ("h", 1)]  # Sphinx's smart quotes
        assert title in titles, (name, title, titles)


@pytest.mark.parametrize("module", REQUIRED_API)
def test_api_page_documents_the_modules_names(site, module):
    html = (site / "api" / f"{page_name(module)}.html").read_text(encoding="utf-8")
    documented = re.findall(r'<dt class="sig sig-object py" id="([\w.]+)"', html)
    if module == TOP:  # the top level links each name to the page of the module that documents it
        linked = set(re.findall(r'href="(\w+)\.html#(dro_lab[\w.]+)"', html))
        names = set(importlib.import_module(TOP).__all__) - {"__version__"}
        assert {target.rsplit(".", 1)[1] for _, target in linked} >= names
        return
    assert documented, f"the API page of {module} documents nothing"
    assert any(name.startswith(module + ".") for name in documented)
    assert re.search(r"<dd><p>\S", html), f"the API page of {module} shows no docstring"


# --- the benchmarks page: its tables against docs/bench-*.json


def _seconds(cell: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+(?:e[+-]?\d+)?) (µs|ms|s)", cell).groups()
    return float(number) * {"µs": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def _close(shown: float, exact: float) -> bool:
    """``shown`` is ``exact`` to the three significant digits the tables print."""
    return math.isclose(shown, exact, rel_tol=6e-3)


def _bench_tables(site: Path) -> dict[tuple[str, str], list[list[str]]]:
    """(document file name, section) -> that section's table rows on the benchmarks page."""
    tables, document, section = {}, None, None
    for event in _page(site / "course" / "manual" / "benchmarks.html").events:
        if event[0] == "h" and event[1] == 3:
            document = event[2]
        elif event[0] == "h" and event[1] == 4:
            section = event[2].split()[0]
        elif event[0] == "table" and document and section:
            tables[(document, section)] = event[1]
    return tables


#: section -> (JSON key, rows of the JSON value, [(column, field, kind)]) for the checked columns.
CHECKED = {
    "weights": ("results", lambda v: v, [(2, "n", "n"), (3, "dro_lab_s", "s")]),
    "also-step": ("also_step", lambda v: v, [(1, "adam_s", "s"), (2, "also_s", "s")]),
    "done-step": ("done_step", lambda v: list(v["configs"].values()), [(0, "label", "text"), (1, "step_s", "s")]),
    "gils-T": ("gils_T", lambda v: v["rows"], [(1, "epoch_s", "s"), (2, "ratio_to_T0", "x"), (3, "ratio_to_ls", "x")]),
}


def _matches(cell: str, exact, kind: str) -> bool:
    if kind == "text":
        return cell == exact
    if kind == "n":
        return _close(float(cell), exact)
    if kind == "x":
        return _close(float(cell.rstrip("×")), exact)
    return _close(_seconds(cell), exact)


def test_benchmark_tables_hold_the_json_documents_numbers(site):
    tables = _bench_tables(site)
    checked = 0
    for path in bench_documents(REPO):
        document = json.loads(path.read_text(encoding="utf-8"))
        for section in document["sections"]:
            if section not in CHECKED:
                continue
            key, rows_of, columns = CHECKED[section]
            table = tables[(path.name, section)]
            rows = rows_of(document[key])
            assert len(table) == len(rows) + 1, (path.name, section)  # the header, then one row per measurement
            for shown, row in zip(table[1:], rows):
                for column, field, kind in columns:
                    assert _matches(shown[column], row[field], kind), (path.name, section, shown, field, row[field])
                    checked += 1
    assert checked >= 50


# --- the reference runs page: its verdicts against the shipped reference runs

_VERDICT = re.compile(
    r"(held|did not hold|not resolved|not judged): ([+-]?[\d.]+)[^(]*\(95 % interval ([+-]?[\d.]+)[^,]*? to "
    r"([+-]?[\d.]+)[^,]*, (\d+) seeds\)"
)


def test_reference_page_holds_the_shipped_verdicts(site):
    from dro_lab.experiments import available_references, load_reference

    text = " ".join("".join(_page(site / "course" / "manual" / "reference_runs.html").text).split())
    shown = _VERDICT.findall(text)
    expected = [v for name in available_references() for v in load_reference(name).verdicts()]
    assert len(shown) == len(expected)
    for (verdict, mean, low, high, n), v in zip(shown, expected):
        assert verdict == v["verdict"] and int(n) == v["n"]
        for value, exact in ((mean, v["mean"]), (low, v["interval"][0]), (high, v["interval"][1])):
            digits = len(value.split(".")[1]) if "." in value else 0
            assert abs(float(value) - exact * v["scale"]) <= 0.5 * 10**-digits + 1e-9, (v["text"], value, exact)
