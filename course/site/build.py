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
from dro_course.site.sources import write_sources
from dro_course.syllabus import Syllabus


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
) -> Path:
    """Build the course website from a run's executed lessons into ``<out>/site``; return its ``index.html``.

    The site has the home page (every lesson with its reading and run time and this run's status), one page per
    lesson with its executed outputs, the run summary as a page, navigation and search. Each lesson page has
    download links for the student notebook, the executed notebook and the instructor copy, and Binder / Colab
    launch buttons. Maths is rendered by the site's own MathJax copy and figures by its one ``plotly.min.js``:
    a page works opened from disk or served (``python -m http.server``) with no network. Widget panels show their
    static twins (see :mod:`.publish`).

    The Sphinx sources, caches and build live in ``<out>/.site-build`` so that a second build re-renders only the
    pages whose lesson changed; the finished site is then copied to ``<out>/site``. Raises
    :class:`SiteBuildError` (with the tail of ``<out>/site-build.log``) when Sphinx fails.
    """
    _check_site_arguments(syllabus, results, preset, summary_md)
    out = Path(out)
    work = out / ".site-build"
    # Sphinx builds inside the work folder (myst-nb writes its jupyter_execute/ beside the build), then the site
    # is copied whole to <out>/site
    src, doctrees, built, site = work / "src", work / "doctrees", work / "site", out / "site"
    copy_assets(src / "_static")
    write_sources(
        src,
        syllabus=syllabus,
        results=results,
        preset=preset,
        summary_md=summary_md,
        instructor_dir=out / "instructor",
    )
    _sphinx(src, built, doctrees, out / "site-build.log")
    write_text_atomic(built / ".nojekyll", "")  # GitHub Pages would hide _static/ otherwise
    _replace_folder(built, site)
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


def _replace_folder(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target``, swapping the finished copy in by renames (a reader never sees half a site)."""
    fresh, old = target.with_name(f".{target.name}.new"), target.with_name(f".{target.name}.old")
    for stale in (fresh, old):
        shutil.rmtree(stale, ignore_errors=True)
    shutil.copytree(source, fresh)
    if target.exists():
        os.replace(target, old)
    os.replace(fresh, target)
    shutil.rmtree(old, ignore_errors=True)


def lesson_page_path(site_index: Path, syllabus: Syllabus, lesson_id: str) -> Path:
    """Where the page of lesson ``lesson_id`` lives in a built site."""
    lesson = next(lesson for lesson in syllabus.lessons if lesson.id == lesson_id)
    return site_index.parent / "notebooks" / f"{lesson.notebook.stem}.html"
