"""The files the site's pages share, none fetched from the network: plotly.js's cartesian bundle (npm's
``plotly.js-cartesian-dist-min``, kept in ``vendor/`` at the plotly.js version of the installed plotly package) and
MathJax 3's CHTML build (from the ``sphinx-mathjax-offline`` package), each copied into the site's ``_static``.

Only what a page uses is loaded: plotly.js on the pages that have a figure (:data:`PLOTLY_JS`, added page by page by
the site's ``conf.py``), MathJax (on the pages with maths, as Sphinx does) as the few components that typeset TeX
into HTML, with their fonts and the TeX extensions loaded on demand.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
from pathlib import Path

#: MathJax's start-up component: it loads the components :data:`MATHJAX_CONFIG` names (TeX in, HTML with CSS and web
#: fonts out) and nothing else: no menu, no accessibility tools, 0.75 MB against 1.2 MB for the combined tex-chtml.js
#: and 2.1 MB for the SVG build.
MATHJAX_ENTRY = "mathjax/startup.js"
MATHJAX_CONFIG = {"loader": {"load": ["input/tex", "output/chtml"]}}
#: The files those components are, with the fonts of the HTML output and the TeX extensions that TeX's autoload
#: pulls in when a formula uses one of their macros.
MATHJAX_PARTS = (
    "startup.js",
    "core.js",
    "input/tex.js",
    "output/chtml.js",
    "output/chtml/fonts/tex.js",
    "output/chtml/fonts/woff-v2",
    "input/tex/extensions",
)
PLOTLY_JS = "plotly-cartesian.min.js"
VENDOR_PLOTLY = Path(__file__).parent / "vendor" / "plotly_cartesian" / PLOTLY_JS
_VERSION = re.compile(r"plotly\.js \(cartesian - minified\) v(\S+)")
_TRACE = re.compile(r'moduleType:"trace",name:"(\w+)"')


class SiteAssetsMissing(RuntimeError):
    """A file or package the website's assets come from is missing, or does not match the installed plotly."""


def plotly_bundle_version(path: Path = VENDOR_PLOTLY) -> str:
    """The plotly.js version written in the bundle's header."""
    with open(path, encoding="utf-8") as handle:  # the header, not the 1.5 MB that follow it
        match = _VERSION.search(handle.read(400))
    if match is None:
        raise SiteAssetsMissing(f"{path} is not plotly.js's cartesian bundle (no version in its header)")
    return match.group(1)


def plotly_bundle_traces(path: Path = VENDOR_PLOTLY) -> frozenset[str]:
    """The trace types the bundle can draw (each registers itself by name)."""
    return frozenset(_TRACE.findall(path.read_text(encoding="utf-8")))


def plotly_js_path() -> Path:
    """The cartesian bundle, after checking that it is the plotly.js version the installed plotly package writes
    figures for."""
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


def mathjax_folder() -> Path:
    """The MathJax 3 distribution installed by the ``sphinx-mathjax-offline`` package."""
    try:
        dist = importlib.metadata.distribution("sphinx-mathjax-offline")
    except importlib.metadata.PackageNotFoundError as exc:
        raise SiteAssetsMissing(
            'the course website needs a local MathJax: pip install "dro-lab[course]" (sphinx-mathjax-offline)'
        ) from exc
    entry = next((f for f in dist.files or () if f.as_posix().endswith("static/" + MATHJAX_ENTRY)), None)
    if entry is None:
        raise SiteAssetsMissing(f"sphinx-mathjax-offline is installed without MathJax's {MATHJAX_ENTRY}")
    return Path(dist.locate_file(entry)).parent


def copy_assets(static: Path) -> None:
    """Put plotly.js and MathJax into ``static`` (the Sphinx ``html_static_path``), unless already there."""
    static.mkdir(parents=True, exist_ok=True)
    plotly_js = plotly_js_path()
    target = static / PLOTLY_JS
    if not target.is_file() or target.stat().st_size != plotly_js.stat().st_size:
        shutil.copyfile(plotly_js, target)
    source, mathjax = mathjax_folder(), static / "mathjax"
    for part in MATHJAX_PARTS:
        if (mathjax / part).exists():
            continue
        if (source / part).is_dir():
            shutil.copytree(source / part, mathjax / part)
        else:
            (mathjax / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / part, mathjax / part)
