"""Write fa-solid-900.woff2: Font Awesome's solid icons (as pydata-sphinx-theme ships them) cut down to the icons
the site's theme can draw, and icons.txt, their names and code points.

The icons kept are those the theme's stylesheet names in its own variables (``--pst-icon-*``) and every ``fa-*``
class that the theme's templates, scripts and Python code (pydata-sphinx-theme and sphinx-book-theme) write, plus
the site's pages given on the command line. Run it with fontTools and brotli (``pip install fonttools brotli``) from
the repository root, in the course's environment (the themes must be installed):

    python course/site/vendor/fontawesome/subset.py build/course/site

``tests/course/test_site_browser.py`` checks that every icon the site's pages and the themes name is in icons.txt.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pydata_sphinx_theme
import sphinx_book_theme

from dro_course._files import write_text_atomic
from dro_lab._files import atomic_write

HERE = Path(__file__).resolve().parent
PYDATA = Path(pydata_sphinx_theme.__file__).parent
BOOK = Path(sphinx_book_theme.__file__).parent
STATIC = PYDATA / "theme" / "pydata_sphinx_theme" / "static"
STYLESHEET = STATIC / "styles" / "pydata-sphinx-theme.css"
FONT = STATIC / "vendor" / "fontawesome" / "webfonts" / "fa-solid-900.woff2"


def icon_points(css: str) -> dict[str, int]:
    """Font Awesome's class names (without ``fa-``) and the theme's icon variables -> code points."""
    points = {}
    for selectors, point in re.findall(r"([^{}]+)\{--fa:\"\\([0-9a-f]+)\"", css):
        for name in re.findall(r"\.fa-([\w-]+)", selectors):
            points[name] = int(point, 16)
    for name, char in re.findall(r"--pst-icon-([\w-]+):\s*\"(.)\"", css):
        points["pst-" + name] = ord(char)
    return points


def names_used(paths: list[Path]) -> set[str]:
    used = set()
    for path in paths:
        if path.suffix in {".html", ".js", ".py"} and not path.name.endswith(".map"):
            used |= set(re.findall(r"\bfa-([a-z0-9][\w-]*)", path.read_text(encoding="utf-8", errors="ignore")))
    return used


def kept_icons(pages: list[str]) -> dict[str, int]:
    """The icons to keep: the theme's own and every one a theme file or one of the site's ``pages`` names."""
    points = icon_points(STYLESHEET.read_text(encoding="utf-8"))
    sources = [*PYDATA.rglob("*"), *BOOK.rglob("*"), *(p for d in pages for p in Path(d).rglob("*.html"))]
    used = names_used(sources)
    return {n: p for n, p in points.items() if n.startswith("pst-") or n in used}


def main(pages: list[str]) -> None:
    from fontTools import subset  # only to write the font: the tests read this module without it

    kept = kept_icons(pages)
    options = subset.Options()
    options.flavor, options.layout_features = "woff2", ["*"]
    font = subset.load_font(str(FONT), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(set(kept.values())))
    subsetter.subset(font)
    atomic_write(HERE / "fa-solid-900.woff2", lambda out: subset.save_font(font, out, options))
    lines = [f"{name} {point:x}" for name, point in sorted(kept.items())]
    write_text_atomic(HERE / "icons.txt", "\n".join(lines) + "\n")
    print(f"kept {len(kept)} icons: {(HERE / 'fa-solid-900.woff2').stat().st_size} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])
