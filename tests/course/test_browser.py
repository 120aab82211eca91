"""Lesson 01's live panel in a real browser: JupyterLab (headless, loopback, random token) + Debian Chromium
driven by Playwright. Opens tests/fixtures/weights_panel.ipynb (the worst-case-weights panel of lesson 01, the same
call on the same losses, without the rest of the lesson: the lessons themselves run once per test session, in
tests/course/test_lessons.py), runs every cell from the Run menu, moves the β slider and checks that the plotly figure
beside it was redrawn with different data, and that no cell raised.

A screenshot is saved to ``build/test-artifacts/browser/weights_panel_beta_slider.png`` (and, with
``DRO_LAB_UPDATE_DOCS=1``, to ``docs/img/lesson01_browser.png``: a live panel in JupyterLab, for the docs).
Skipped only when there is no Chromium (``.ci/run`` installs the Debian package) or no playwright
package (it is in the ``test`` extra). Playwright never downloads a browser here.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest
from _browser import CHROMIUM_ARGS, REPO, LabServer, find_chromium

os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")

LESSON = "weights_panel.ipynb"
ARTEFACT = REPO / "build" / "test-artifacts" / "browser" / "weights_panel_beta_slider.png"
DOCS_PICTURE = REPO / "docs" / "img" / "lesson01_browser.png"

CHROMIUM = find_chromium()

pytestmark = [
    pytest.mark.browser,
    pytest.mark.notebook,  # JupyterLab runs the fixture notebook in a kernel
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium at /usr/bin/chromium or on PATH (Debian: apt-get install -y chromium; .ci/run does this)",
    ),
]

# The notebook panel's state, read from JupyterLab's own model (``--LabApp.expose_app_in_browser``).
_STATE_JS = """() => {
  const app = window.jupyterapp;
  if (!app) return {app: false};
  const w = app.shell.currentWidget;
  if (!w || !w.content || !w.content.model || !w.sessionContext) return {app: true, notebook: false};
  const sc = w.sessionContext;
  const kernel = sc.session && sc.session.kernel;
  const model = w.content.model;
  const code = [];
  for (let i = 0; i < model.cells.length; i++) {
    const c = model.cells.get(i);
    if (c.type === 'code') code.push(c);
  }
  const errors = [];
  code.forEach((c, i) => {
    for (const o of c.outputs.toJSON()) {
      if (o.output_type === 'error') errors.push(`code cell ${i + 1}: ${o.ename}: ${o.evalue}`);
    }
  });
  const prompts = [...w.content.node.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent.trim());
  return {app: true, notebook: true, ready: sc.isReady, kernel: kernel ? kernel.status : null,
          path: sc.path, code: code.length, done: code.filter(c => c.executionCount !== null).length,
          running: prompts.filter(t => t.includes('*')).length, errors};
}"""

# Tag the first slider whose description has "β" and that sits in the same output as a plotly figure.
_TAG_PANEL_JS = """() => {
  for (const s of document.querySelectorAll('.widget-slider')) {
    const label = s.querySelector('.widget-label');
    if (!label || !label.textContent.includes('β')) continue;
    for (let el = s.parentElement; el && !el.classList.contains('jp-OutputArea-output'); el = el.parentElement) {
      if (el.querySelector('.js-plotly-plot')) {
        s.setAttribute('data-dro-test', 'beta-slider');
        el.setAttribute('data-dro-test', 'beta-panel');
        return label.textContent;
      }
    }
  }
  return null;
}"""

# The plotted data of the panel's figure (typed arrays made plain), or null while it is being redrawn.
_PLOT_DATA_JS = """() => {
  const plots = document.querySelectorAll('[data-dro-test=beta-panel] .js-plotly-plot');
  if (plots.length !== 1 || !plots[0].data || !plots[0].data.length) return null;
  const plain = v => (v && ArrayBuffer.isView(v)) ? Array.from(v) : v;
  return JSON.stringify(plots[0].data.map(t => ({type: t.type, name: t.name, x: plain(t.x), y: plain(t.y)})));
}"""


def _wait(page, what: str, predicate, timeout: float, diagnostics, poll: float = 0.5):
    """Poll ``predicate()`` until truthy; fail with ``what`` and the diagnostics after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        page.wait_for_timeout(poll * 1000)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}; last value {last!r}\n{diagnostics()}")


@pytest.mark.timeout(420)
def test_lesson01_panel_beta_slider_redraws_the_figure(tmp_path):
    sync_playwright = pytest.importorskip(
        "playwright.sync_api", reason="the playwright package is missing (pip install -e '.[test]')"
    ).sync_playwright

    root = tmp_path / "notebooks"
    root.mkdir()
    shutil.copy(REPO / "tests" / "fixtures" / LESSON, root / LESSON)  # the server autosaves: never the repository's
    server = LabServer(
        root,
        tmp_path / "jupyter",
        env={
            "DRO_LAB_PRESET": os.environ.get("DRO_LAB_PRESET", "smoke"),
            # what a learner gets: plotly's default renderer (the JupyterLab mime renderer), not CI's HTML one
            "PLOTLY_RENDERER": None,
        },
    )
    console: list[str] = []

    def diagnostics() -> str:
        msgs = "\n".join(console[-30:]) or "(none)"
        return (
            f"--- browser console (errors) ---\n{msgs}\n--- JupyterLab log ({server.log_path}) ---\n{server.log_tail()}"
        )

    server.start(timeout=90)
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                str(tmp_path / "chromium-profile"),
                executable_path=CHROMIUM,
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": 1400, "height": 1000},
                timeout=60_000,
            )
            try:
                page = context.pages[0] if context.pages else context.new_page()
                page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None)
                page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
                page.goto(server.url(f"lab/tree/{LESSON}"), timeout=60_000)

                state = lambda: page.evaluate(_STATE_JS)  # noqa: E731
                _wait(
                    page,
                    f"JupyterLab to open {LESSON} with an idle kernel",
                    lambda: (s := state()).get("notebook") and s["ready"] and s["kernel"] == "idle" and s,
                    120,
                    diagnostics,
                )

                # Run → Run All Cells, through the menu bar as a learner would
                page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
                page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()

                def finished():
                    s = state()
                    if s.get("errors"):
                        pytest.fail(f"cell error output(s) in {LESSON}: {s['errors']}\n{diagnostics()}")
                    return s["code"] and s["done"] == s["code"] and not s["running"] and s["kernel"] == "idle" and s

                t0 = time.monotonic()
                _wait(page, f"every code cell of {LESSON} to run (Run All Cells)", finished, 240, diagnostics)
                run_all_s = time.monotonic() - t0

                label = _wait(
                    page, "a β slider beside a plotly figure", lambda: page.evaluate(_TAG_PANEL_JS), 60, diagnostics
                )
                assert "β" in label
                panel = page.locator("[data-dro-test=beta-panel]")
                panel.evaluate("el => el.scrollIntoView({block: 'center'})")
                before = _wait(
                    page,
                    "the figure beside the β slider to be drawn",
                    lambda: page.evaluate(_PLOT_DATA_JS),
                    60,
                    diagnostics,
                )
                slider = page.locator("[data-dro-test=beta-slider]")
                readout_before = slider.locator(".widget-readout").inner_text()

                # move β: focus the slider handle and step it right with the keyboard
                handle = slider.locator(".noUi-handle").first
                handle.focus()
                for _ in range(10):
                    page.keyboard.press("ArrowRight")
                readout_after = slider.locator(".widget-readout").inner_text()
                assert readout_after != readout_before, (
                    f"the β slider did not move (readout {readout_before!r})\n{diagnostics()}"
                )

                after = _wait(
                    page,
                    f"the figure to be redrawn after β {readout_before} → {readout_after}",
                    lambda: (d := page.evaluate(_PLOT_DATA_JS)) and d != before and d,
                    60,
                    diagnostics,
                )
                assert json.loads(after) != json.loads(before)
                # the picture: file browser folded away, the panel in the middle of the notebook
                page.evaluate(
                    "() => { const s = window.jupyterapp.shell; "
                    "if (!s.leftCollapsed) window.jupyterapp.commands.execute('application:toggle-left-area'); }"
                )
                page.mouse.move(0, 0)
                page.wait_for_timeout(500)  # the relayout and plotly's transition
                panel.evaluate("el => el.scrollIntoView({block: 'center'})")
                page.wait_for_timeout(300)

                ARTEFACT.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTEFACT))
                if os.environ.get("DRO_LAB_UPDATE_DOCS") == "1":
                    DOCS_PICTURE.parent.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(DOCS_PICTURE))

                s = state()
                assert not s["errors"], f"cell error output(s): {s['errors']}\n{diagnostics()}"
                print(
                    f"Run All Cells took {run_all_s:.1f} s; β {readout_before} → {readout_after}; screenshot {ARTEFACT}"
                )
            finally:
                context.close()
    finally:
        server.stop()
