"""The files every page of the site shares, all installed from PyPI: plotly.js (from the ``plotly`` package) and
MathJax 3 (from ``sphinx-mathjax-offline``). The site serves them from its ``_static`` folder, so no page fetches
anything from the network."""

from __future__ import annotations

import importlib.metadata
import shutil
from pathlib import Path

#: MathJax's combined component that turns TeX into SVG: no web fonts to load (fonts from ``file://`` pages are
#: blocked by some browsers), so the maths renders the same opened from disk or served.
MATHJAX_ENTRY = "mathjax/tex-svg.js"
PLOTLY_JS = "plotly.min.js"


class SiteAssetsMissing(RuntimeError):
    """A package the website's assets come from is not installed."""


def plotly_js_path() -> Path:
    """The ``plotly.min.js`` shipped inside the installed plotly package."""
    try:
        import plotly
    except ImportError as exc:
        raise SiteAssetsMissing('the course website needs plotly: pip install "dro-lab[viz]"') from exc
    path = Path(plotly.__file__).parent / "package_data" / PLOTLY_JS
    if not path.is_file():
        raise SiteAssetsMissing(f"plotly {plotly.__version__} has no {path}")
    return path


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
        raise SiteAssetsMissing("sphinx-mathjax-offline is installed without MathJax's tex-svg.js")
    return Path(dist.locate_file(entry)).parent


def copy_assets(static: Path) -> None:
    """Put plotly.js and MathJax into ``static`` (the Sphinx ``html_static_path``), unless already there."""
    static.mkdir(parents=True, exist_ok=True)
    plotly_js = plotly_js_path()
    target = static / PLOTLY_JS
    if not target.is_file() or target.stat().st_size != plotly_js.stat().st_size:
        shutil.copyfile(plotly_js, target)
    mathjax = static / "mathjax"
    if not (mathjax / "tex-svg.js").is_file():
        # the speech-rule maps (sre/mathmaps, 14 MB) serve MathJax's speech explorer, which the site does not enable
        shutil.copytree(mathjax_folder(), mathjax, ignore=shutil.ignore_patterns("mathmaps"), dirs_exist_ok=True)
