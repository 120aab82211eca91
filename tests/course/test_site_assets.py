"""The site's shared files: the plotly.js bundle it serves matches the plotly package that writes the figures, and
draws every trace type the course's code makes."""

from __future__ import annotations

import re
from pathlib import Path

import plotly.offline
import pytest

from dro_course.site.assets import (
    VENDOR_PLOTLY,
    SiteAssetsMissing,
    plotly_bundle_traces,
    plotly_bundle_version,
    plotly_js_path,
)

REPO = Path(__file__).resolve().parents[2]


def test_the_bundle_is_the_plotly_js_version_plotly_writes_figures_for():
    assert plotly_bundle_version() == plotly.offline.get_plotlyjs_version()
    assert plotly_js_path() == VENDOR_PLOTLY


def test_the_bundle_draws_every_trace_type_the_course_makes():
    made = set()
    for path in [*(REPO / "course").rglob("*.py"), *(REPO / "notebooks").glob("*.ipynb")]:
        made |= {name.lower() for name in re.findall(r"\bgo\.([A-Z]\w+)\(", path.read_text(encoding="utf-8"))}
    made -= {"figure", "figurewidget", "frame", "layout"}
    assert made, "the course makes no trace?"
    assert made <= plotly_bundle_traces(), made - plotly_bundle_traces()


def test_a_bundle_of_another_version_is_refused(tmp_path, monkeypatch):
    other = tmp_path / "plotly-course.min.js"
    other.write_text("/**\n* plotly.js (course: scatter - minified) v0.0.1\n*/\n", encoding="utf-8")
    monkeypatch.setattr("dro_course.site.assets.VENDOR_PLOTLY", other)
    monkeypatch.setattr("dro_course.site.assets.plotly_bundle_version", lambda: plotly_bundle_version(other))
    with pytest.raises(SiteAssetsMissing, match="v?0.0.1"):
        plotly_js_path()
