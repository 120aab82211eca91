"""The course website in a real browser (Debian's Chromium through Playwright), with every non-local request
blocked, as in a classroom with no network: each lesson page renders its maths (no raw TeX left), draws every
figure, and a static twin's slider moves its figure; the pages stay light; the site also works served by
``python -m http.server``.

The site is the one the session's smoke run of the whole course built (tests/conftest.py ``executed_course``;
``DRO_LAB_TEST_COURSE=<folder>`` reuses the lessons of an earlier run there while editing).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import importlib.util
import re
import threading
import urllib.parse
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.notebook, pytest.mark.timeout(1800)]

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
MAX_PAGE_BYTES = 3_000_000  # a lesson page's first visit, with everything it loads
MAX_HOME_BYTES = 1_000_000  # the home page's
MAX_SITE_BYTES = 30_000_000  # the whole site folder

playwright_api = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (apt-get install chromium)", allow_module_level=True)

from dro_course import load_syllabus  # noqa: E402

SYLLABUS = load_syllabus(REPO / "course" / "syllabus.yaml")
LESSONS = [lesson.notebook.stem for lesson in SYLLABUS.lessons]


@pytest.fixture(scope="module")
def site(executed_course) -> Path:
    return executed_course.out / "site"


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


class OfflinePage:
    """A page opened with every request that is not ``file://`` or the local server blocked (and counted)."""

    def __init__(self, browser, url: str, allowed=("file://",)):
        self.context = browser.new_context(viewport={"width": 1300, "height": 900})
        self.blocked, self.errors = [], []

        def route(r):
            if r.request.url.startswith(allowed):
                r.continue_()
            else:
                self.blocked.append(r.request.url)
                r.abort()

        self.context.route("**/*", route)
        self.page = self.context.new_page()
        self.loaded: list[str] = []  # every URL the page asked for, in order
        self.page.on("request", lambda r: self.loaded.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        # a console error is an error too (a theme's complaint, a file that did not load)
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.goto(url, wait_until="load")
        # KaTeX typesets before "load" (a deferred script); plotly draws synchronously in the page's scripts
        self.page.wait_for_timeout(300)

    def close(self):
        self.context.close()

    def bytes_loaded(self) -> int:
        """What a cold first visit loads: the sizes of the local files the page asked for, each counted once."""
        files = {_local_file(url) for url in self.loaded}
        return sum(f.stat().st_size for f in files if f is not None and f.is_file())


def _local_file(url: str) -> Path | None:
    if not url.startswith("file://"):
        return None
    return Path(urllib.parse.unquote(urllib.parse.urlsplit(url).path))


def _maths_in_source(html: str) -> int:
    return len(re.findall(r'class="math[ "]', html))


@pytest.mark.parametrize("stem", LESSONS)
def test_lesson_page_offline(stem, site, browser):
    path = site / "notebooks" / f"{stem}.html"
    html = path.read_text(encoding="utf-8")
    view = OfflinePage(browser, path.as_uri())
    try:
        page = view.page
        assert view.blocked == [], view.blocked[:5]
        assert view.errors == [], view.errors[:3]
        # the maths: every math element became KaTeX's output, none is an error, and no TeX is left in the text
        rendered = page.locator(".math .katex").count()
        assert rendered >= _maths_in_source(html) > 0
        assert page.locator(".katex-error").count() == 0
        text = page.locator("main").inner_text()
        leftovers = re.findall(r"\\\(|\\\[|\$\$|\\frac|\\beta|\\sum", text)
        assert leftovers == [], leftovers[:5]
        # the figures: every plotly div was drawn (an SVG plot inside)
        divs = page.locator("div.dro-lab-figure").count()
        drawn = page.evaluate(
            "() => [...document.querySelectorAll('div.dro-lab-figure')]"
            ".filter(d => d.classList.contains('js-plotly-plot') && d.querySelector('svg.main-svg')).length"
        )
        assert divs > 0 and drawn == divs
        # every widget panel shows its static twin: no output was left as a "runs in JupyterLab" note
        assert page.locator("p.dro-lab-live").count() == 0
        # no code cell scrolls sideways at this 1300 px window: its lines fit the code column
        scrolling = page.evaluate(
            "() => [...document.querySelectorAll('div.cell_input pre')]"
            ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.split('\\n')[0])"
        )
        assert scrolling == [], scrolling[:3]
    finally:
        view.close()


def _twin_sliders(page) -> int:
    return page.evaluate(
        "() => [...document.querySelectorAll('div.dro-lab-figure')]"
        ".filter(d => d._transitionData && d._transitionData._frames.length && d.querySelector('.slider-container'))"
        ".length"
    )


def _plot_svg(page, index: int) -> str:
    return page.evaluate(
        "(i) => [...document.querySelectorAll('div.dro-lab-figure')]"
        ".filter(d => d._transitionData && d._transitionData._frames.length && d.querySelector('.slider-container'))"
        "[i].querySelector('.main-svg').innerHTML",
        index,
    )


@pytest.mark.parametrize("stem", LESSONS)
def test_every_static_twin_moves_with_its_slider(stem, site, browser):
    view = OfflinePage(browser, (site / "notebooks" / f"{stem}.html").as_uri())
    try:
        page = view.page
        twins = _twin_sliders(page)
        # a panel: one of dro_course.panels, or one a lesson keeps in its own package (hws.hws_panel, toy_panel …)
        if not re.search(r"_panel\(", (REPO / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8")):
            pytest.skip(f"{stem} has no widget panel")
        assert twins > 0, "a lesson with a panel shows its static twin with a slider"
        for i in range(twins):
            figure = page.locator("div.dro-lab-figure").filter(has=page.locator(".slider-container")).nth(i)
            figure.scroll_into_view_if_needed()
            before = _plot_svg(page, i)
            rail = figure.locator(".slider-rail-touch-rect").first
            box = rail.bounding_box()
            moved = False
            for fraction in (0.98, 0.02, 0.5):  # the far end, the near end, the middle: one differs from the start
                page.mouse.click(box["x"] + fraction * box["width"], box["y"] + box["height"] / 2)
                page.wait_for_timeout(250)
                if _plot_svg(page, i) != before:
                    moved = True
                    break
            assert moved, f"twin {i} of {stem}: the figure did not change when its slider moved"
        assert view.errors == []
    finally:
        view.close()


def _pages(site: Path) -> list[Path]:
    """The site's pages a reader opens (the API reference's and Sphinx's index pages aside)."""
    return sorted(
        p for p in site.rglob("*.html") if not {"_static", "api", "_modules"} & set(p.relative_to(site).parts)
    )


def _raw_tables(page) -> int:
    """Paragraphs that hold a Markdown table's pipes and dashes: a table the site printed as text."""
    return page.evaluate(
        "() => [...document.querySelectorAll('main p')].filter(p => /\\|\\s*:?-{3,}/.test(p.textContent)).length"
    )


def test_every_page_has_its_tables_and_no_console_error(site, browser):
    """Every page: its tables drawn as tables, every formula typeset by KaTeX (none shown as an error), no console
    error and no request off the site."""
    problems = []
    for path in _pages(site):
        view = OfflinePage(browser, path.as_uri())
        try:
            name = str(path.relative_to(site))
            if _raw_tables(view.page):
                problems.append(f"{name}: {_raw_tables(view.page)} table(s) printed as text")
            if errors := view.page.locator(".katex-error").all_inner_texts():
                problems.append(f"{name}: formulas KaTeX could not read: {errors[:2]}")
            if view.errors or view.blocked:
                problems.append(f"{name}: {(view.errors + view.blocked)[:2]}")
        finally:
            view.close()
    assert problems == []


def _too_heavy(site: Path, browser) -> list[str]:
    heavy = []
    for path in _pages(site):
        view = OfflinePage(browser, path.as_uri())
        try:
            name, loaded = str(path.relative_to(site)), view.bytes_loaded()
            limit = MAX_HOME_BYTES if name == "index.html" else MAX_PAGE_BYTES
            if loaded > limit:
                heavy.append(f"{name}: a first visit loads {loaded / 1e6:.2f} MB (limit {limit / 1e6:g})")
        finally:
            view.close()
    return heavy


def test_the_home_page_and_the_course_pages_are_light(site, browser):
    assert [h for h in _too_heavy(site, browser) if not h.startswith("notebooks/")] == []


def test_every_lesson_page_loads_at_most_3_mb(site, browser):
    assert [h for h in _too_heavy(site, browser) if h.startswith("notebooks/")] == []


def test_every_internal_link_resolves(site):
    broken = []
    for path in _pages(site):
        for href in re.findall(r'href="([^"#?]+)(?:[#?][^"]*)?"', path.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", href):  # http(s):, mailto: — outside the site
                continue
            if not (path.parent / urllib.parse.unquote(href)).exists():
                broken.append(f"{path.relative_to(site)} -> {href}")
    assert broken == []


def test_the_site_folder_is_light(site):
    total = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    assert total <= MAX_SITE_BYTES, f"the site folder holds {total / 1e6:.1f} MB"
    assert [p.name for p in site.parent.iterdir() if p.name.startswith(".site")] == []


def test_pages_are_light_and_plotly_js_comes_once(site):
    heavy = {}
    for page in site.rglob("*.html"):
        size = page.stat().st_size
        if size > MAX_PAGE_BYTES:
            heavy[str(page.relative_to(site))] = size
        text = page.read_text(encoding="utf-8")
        assert text.count("plotly-course.min.js") <= 1, page
        assert "cdn.plot.ly" not in text and "unpkg.com" not in text and "cdn.jsdelivr" not in text, page
    assert heavy == {}
    downloads = list((site / "_downloads").rglob("*.ipynb"))
    assert downloads and all(p.stat().st_size < MAX_PAGE_BYTES for p in downloads)


@contextlib.contextmanager
def _served(folder: Path):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_site_served_by_http_server_search_and_navigation(site, browser):
    with _served(site) as base:
        view = OfflinePage(browser, f"{base}/index.html", allowed=("file://", base))
        try:
            page = view.page
            assert view.blocked == [] and view.errors == []
            links = page.locator("nav a.reference.internal")
            assert links.count() >= len(LESSONS)
            page.goto(f"{base}/search.html?q=worst-case")
            page.wait_for_selector("#search-results li", timeout=15_000)
            hits = page.locator("#search-results li a").all_inner_texts()
            assert any("DRO foundations" in hit for hit in hits), hits[:5]
            page.goto(f"{base}/notebooks/{LESSONS[1]}.html")
            page.wait_for_selector(".math .katex")
            assert view.blocked == []
            shots = REPO / "build" / "screens" / "site"
            shots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shots / "lesson01.png"))
        finally:
            view.close()


def test_readme_screenshot_is_of_the_site():
    shot = REPO / "docs" / "site.png"
    assert shot.is_file() and shot.stat().st_size > 20_000
    assert "docs/site.png" in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_icon_font_holds_every_icon_the_site_draws(site):
    """The site serves Font Awesome's solid font cut down to a list of icons (course/site/vendor/fontawesome): every
    icon its pages and its themes name is in that list, so no icon draws as an empty box."""
    folder = REPO / "course" / "site" / "vendor" / "fontawesome"
    spec = importlib.util.spec_from_file_location("fontawesome_subset", folder / "subset.py")
    subset = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(subset)
    kept = {line.split()[0] for line in (folder / "icons.txt").read_text(encoding="utf-8").splitlines()}
    wanted = set(subset.kept_icons([str(site)]))
    assert wanted <= kept, f"icons the site draws but the font lacks: {sorted(wanted - kept)}; run {folder}/subset.py"
    served = site / "_static" / "vendor" / "fontawesome" / "webfonts" / "fa-solid-900.woff2"
    assert served.read_bytes() == (folder / "fa-solid-900.woff2").read_bytes()
