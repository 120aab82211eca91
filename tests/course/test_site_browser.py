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
import re
import threading
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.notebook, pytest.mark.timeout(1800)]

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
MAX_PAGE_BYTES = 3_000_000

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
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url, wait_until="load")
        # MathJax typesets after load; plotly draws synchronously in the page's scripts
        self.page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
        self.page.wait_for_timeout(300)

    def close(self):
        self.context.close()


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
        # the maths: every math element became MathJax output, and no TeX is left in the text
        rendered = page.locator("mjx-container").count()
        assert rendered >= _maths_in_source(html) > 0
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


def test_pages_are_light_and_plotly_js_comes_once(site):
    heavy = {}
    for page in site.rglob("*.html"):
        size = page.stat().st_size
        if size > MAX_PAGE_BYTES:
            heavy[str(page.relative_to(site))] = size
        text = page.read_text(encoding="utf-8")
        assert text.count("plotly.min.js") <= 1, page
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
            page.evaluate("() => MathJax.startup.promise")
            assert page.locator("mjx-container").count() > 0 and view.blocked == []
            shots = REPO / "build" / "screens" / "site"
            shots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shots / "lesson01.png"))
        finally:
            view.close()


def test_readme_screenshot_is_of_the_site():
    shot = REPO / "docs" / "site.png"
    assert shot.is_file() and shot.stat().st_size > 20_000
    assert "docs/site.png" in (REPO / "README.md").read_text(encoding="utf-8")
