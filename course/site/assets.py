"""The files the site's pages share, none fetched from the network: a plotly.js bundle of the five trace types the
course draws (built from npm's ``plotly.js`` by ``vendor/plotly_course/build.sh``, at the plotly.js version of the
installed plotly package), the figures' shared template, and KaTeX (npm's ``katex``, in ``vendor/katex``), each
copied into the site's ``_static``.

Only what a page uses is loaded: plotly.js and the template on the pages that have a figure (:data:`PLOTLY_JS`,
added page by page by the site's ``conf.py``), KaTeX and its stylesheet on the pages with maths, and of KaTeX's
fonts only those the page's formulas use (the browser fetches a web font when a glyph needs it).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from dro_course._files import copy_file_atomic, write_text_atomic

#: KaTeX 0.16 with the site's typesetting script (``vendor/katex/typeset.js``) in one file: it turns the TeX Sphinx
#: writes (``\(...\)``, ``\[...\]``) into HTML. With its stylesheet and the fonts a lesson uses, about 0.35 MB,
#: against 0.85 MB for MathJax 3's smallest TeX-to-HTML build; it reads every formula of the course.
KATEX_JS = "katex/katex-typeset.js"
KATEX_CSS = "katex/katex.min.css"
VENDOR_KATEX = Path(__file__).parent / "vendor" / "katex"
#: Font Awesome's solid icons cut down to the 47 the theme can draw (3 kB against 115 kB; ``vendor/fontawesome``):
#: it takes the place of the theme's own file in ``_static``.
ICON_FONT = "vendor/fontawesome/webfonts/fa-solid-900.woff2"
VENDOR_ICONS = Path(__file__).parent / "vendor" / "fontawesome"
#: plotly.js's core (scatter) with bar, box, contour and heatmap: 1.24 MB, against 1.5 MB for npm's cartesian bundle
#: and 4.8 MB for plotly.py's full one (``vendor/plotly_course/README.md`` says how it is built).
PLOTLY_JS = "plotly-course.min.js"
#: The layout template every course figure uses, written once into ``_static`` (as ``window.droLabTemplate``) and
#: referred to by the figures instead of repeated in each (about 7 kB a figure; :mod:`.publish`).
PLOTLY_TEMPLATE_JS = "plotly-template.js"
VENDOR_PLOTLY = Path(__file__).parent / "vendor" / "plotly_course" / PLOTLY_JS
_VERSION = re.compile(r"plotly\.js \([^)]*- minified\) v(\S+)")
_TRACE = re.compile(r'moduleType:"trace",name:"(\w+)"')


class SiteAssetsMissing(RuntimeError):
    """A file or package the website's assets come from is missing, or does not match the installed plotly."""


def plotly_bundle_version(path: Path = VENDOR_PLOTLY) -> str:
    """The plotly.js version written in the bundle's header."""
    with open(path, encoding="utf-8") as handle:  # the header, not the megabytes that follow it
        match = _VERSION.search(handle.read(400))
    if match is None:
        raise SiteAssetsMissing(f"{path} is not a minified plotly.js bundle (no version in its header)")
    return match.group(1)


def plotly_bundle_traces(path: Path = VENDOR_PLOTLY) -> frozenset[str]:
    """The trace types the bundle can draw (each registers itself by name)."""
    return frozenset(_TRACE.findall(path.read_text(encoding="utf-8")))


def plotly_js_path() -> Path:
    """The course's plotly.js bundle, after checking that it is the plotly.js version the installed plotly package
    writes figures for."""
    try:
        import plotly.offline
    except ImportError as exc:
        raise SiteAssetsMissing('the course website needs plotly: pip install "dro-lab[viz]"') from exc
    if not VENDOR_PLOTLY.is_file():
        raise SiteAssetsMissing(f"the course is installed without its plotly.js bundle ({VENDOR_PLOTLY})")
    wanted, found = plotly.offline.get_plotlyjs_version(), plotly_bundle_version()
    if wanted != found:
        raise SiteAssetsMissing(
            f"plotly {plotly.__version__} writes figures for plotly.js {wanted}, but the site's bundle is {found}: "
            f"see {VENDOR_PLOTLY.parent / 'README.md'}"
        )
    return VENDOR_PLOTLY


def shared_template() -> dict:
    """The course's figure template (``dro_course.figures``' layout), as it appears in a figure's JSON."""
    import plotly.io as pio
    from plotly.utils import PlotlyJSONEncoder

    from dro_course.figures import TEMPLATE  # here: the figures load plotly, only when a site is built

    return json.loads(json.dumps(pio.templates[TEMPLATE].to_plotly_json(), cls=PlotlyJSONEncoder))


def copy_assets(static: Path) -> None:
    """Put plotly.js, the figures' template, KaTeX and the icon font into ``static`` (Sphinx's ``html_static_path``)."""
    static.mkdir(parents=True, exist_ok=True)
    copy_file_atomic(plotly_js_path(), static / PLOTLY_JS)
    write_text_atomic(static / PLOTLY_TEMPLATE_JS, f"window.droLabTemplate = {json.dumps(shared_template())};\n")
    katex = static / "katex"
    katex.mkdir(exist_ok=True)
    parts = [(VENDOR_KATEX / name).read_text(encoding="utf-8") for name in ("katex.min.js", "typeset.js")]
    write_text_atomic(static / KATEX_JS, "\n".join(parts))
    copy_file_atomic(VENDOR_KATEX / "katex.min.css", static / KATEX_CSS)
    shutil.rmtree(katex / "fonts", ignore_errors=True)  # no font of another KaTeX left behind
    shutil.copytree(VENDOR_KATEX / "fonts", katex / "fonts")
    copy_file_atomic(VENDOR_ICONS / "fa-solid-900.woff2", static / ICON_FONT)  # html_static_path wins over the theme's
