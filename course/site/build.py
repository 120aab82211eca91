"""Building the course website with Sphinx (sphinx-book-theme and myst-nb, both from PyPI, both working with the
network off): :func:`build_site`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dro_course._files import write_text_atomic
from dro_course.results import LessonResult
from dro_course.site.assets import copy_assets
from dro_course.site.home import check_audience
from dro_course.site.sources import write_sources
from dro_course.syllabus import Syllabus

#: Where each audience's site goes in a run's folder.
SITE_FOLDERS = {"student": "site", "instructor": "instructor-site"}


class SiteBuildError(RuntimeError):
    """Sphinx could not build the course website; the message ends with the tail of its log."""


def _sphinx(src: Path, site: Path, doctrees: Path, log: Path) -> None:
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-d", str(doctrees), str(src), str(site)]
    # SOURCE_DATE_EPOCH keeps the pages' dates stable; the build reads nothing from the network
    env = {**os.environ, "SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH", str(int(time.time())))}
    with open(log, "w", encoding="utf-8") as handle:
        status = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env, check=False).returncode
    if status != 0 or not (site / "index.html").is_file():
        tail = "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-20:])
        raise SiteBuildError(f"sphinx-build exited with {status} (log: {log}):\n{tail}")


def build_site(
    out: str | os.PathLike[str],
    *,
    syllabus: Syllabus,
    results: Sequence[LessonResult],
    preset: str,
    summary_md: str,
    audience: str = "student",
) -> Path:
    """Build the course website from a run's executed lessons into ``<out>/site`` (``audience="student"``) or
    ``<out>/instructor-site`` (``"instructor"``); return its ``index.html``.

    The student's site has the home page (every lesson with its reading time and goals), one page per lesson with
    its executed outputs, the syllabus, the glossary and the references, navigation and search; it holds no
    solution. Each lesson page has download links for the lesson's notebook and the executed one, and Binder /
    Colab launch buttons. The instructor's site shows the lessons executed with their solutions and the written
    exercises' answers, the instructor copies to download, the instructor guide and the run's log (each lesson's
    status and seconds, the run summary). Maths is typeset by the site's own KaTeX and figures by its one
    plotly.js: a page works opened from disk or served (``python -m http.server``) with no network. Widget panels
    show their static twins (see :mod:`.publish`).

    Sphinx builds in ``<out>/.site-build/<audience>`` and the finished site is then moved to its folder; the
    work folder goes once the site is in place, so nothing but the site is left beside it (and, when Sphinx
    warned, its warnings in ``<out>/site-warnings.log`` or ``instructor-site-warnings.log``). When Sphinx fails, the
    work folder stays and :class:`SiteBuildError` names its log, ``<out>/.site-build/<audience>/sphinx.log``, and
    ends with its tail; a site built earlier is left as it was.
    """
    _check_site_arguments(syllabus, results, preset, summary_md)
    check_audience(audience)
    out = Path(out)
    work = out / ".site-build" / audience
    # Sphinx builds inside the work folder (myst-nb writes its jupyter_execute/ beside the build), then the site
    # moves whole to its folder
    src, doctrees, built = work / "src", work / "doctrees", work / "site"
    site = out / SITE_FOLDERS[audience]
    copy_assets(src / "_static")
    write_sources(
        src,
        syllabus=syllabus,
        results=results,
        preset=preset,
        summary_md=summary_md,
        instructor_dir=out / "instructor",
        audience=audience,
    )
    log = work / "sphinx.log"
    _sphinx(src, built, doctrees, log)
    write_text_atomic(built / ".nojekyll", "")  # GitHub Pages would hide _static/ otherwise
    _prune(built)
    _replace_folder(built, site)
    _keep_warnings(log, out / f"{SITE_FOLDERS[audience]}-warnings.log")
    shutil.rmtree(work)
    if not any((out / ".site-build").iterdir()):
        (out / ".site-build").rmdir()
    return site / "index.html"


def _check_site_arguments(syllabus: Any, results: Any, preset: Any, summary_md: Any) -> None:
    if not isinstance(syllabus, Syllabus):
        raise TypeError(f"syllabus must be a dro_course.Syllabus, got {type(syllabus).__name__}")
    if isinstance(results, (str, bytes)) or not all(isinstance(r, LessonResult) for r in results):
        raise TypeError("results must be a sequence of dro_course.LessonResult")
    if not isinstance(preset, str) or preset not in syllabus.presets:
        raise ValueError(f"Invalid preset: {preset!r}; the syllabus has {', '.join(syllabus.presets)}")
    if not isinstance(summary_md, str):
        raise TypeError(f"summary_md must be Markdown text, got {type(summary_md).__name__}")


#: What the theme copies into every site and no page loads: fontawesome.js (the site's template leaves it out) and
#: the source maps of the theme's minified files (for debugging the theme).
_UNUSED = ("_static/scripts/fontawesome.js*", "_static/**/*.map")


def _prune(site: Path) -> None:
    for pattern in _UNUSED:
        for path in site.glob(pattern):
            path.unlink()


def _keep_warnings(log: Path, kept: Path) -> None:
    """Keep Sphinx's warnings (a page that lost a link, a figure or a table) as ``kept``; none: no file."""
    warnings = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if "WARNING" in line]
    if warnings:
        write_text_atomic(kept, "\n".join(warnings) + "\n")
    else:
        kept.unlink(missing_ok=True)


def _replace_folder(source: Path, target: Path) -> None:
    """Move the finished ``source`` to ``target`` by renames (a reader never sees half a site)."""
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        os.replace(target, old)
    os.replace(source, target)
    shutil.rmtree(old, ignore_errors=True)


def lesson_page_path(site_index: Path, syllabus: Syllabus, lesson_id: str) -> Path:
    """Where the page of lesson ``lesson_id`` lives in a built site."""
    lesson = next(lesson for lesson in syllabus.lessons if lesson.id == lesson_id)
    return site_index.parent / "notebooks" / f"{lesson.notebook.stem}.html"
