"""The summary of a run: :func:`summary_table` (Markdown) and :func:`write_summary` (``summary.md``,
``summary.json`` and an ``index.html`` that links every lesson's pages).

The HTML pages are Jinja2 templates in ``course/templates/`` (``run_report.html.j2`` here, the sweep's page in
:mod:`.sweep_report`), rendered with autoescape on: this module hands them plain text and relative links.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from dro_course._files import md_cell, relative_posix, write_text_atomic
from dro_course.results import LessonResult
from dro_course.syllabus import Syllabus
from dro_lab import __version__

_STATUSES = ("ok", "cached", "failed", "skipped")


@cache
def _templates() -> jinja2.Environment:
    """The report pages' templates (``course/templates/*.j2``, shipped as ``dro_course/templates``).

    Autoescape is on, so every value is escaped unless a template says otherwise; an undefined name is an error,
    not an empty string; a block tag alone on its line leaves no blank line behind."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("dro_course", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_page(template: str, **context: Any) -> str:
    """One of ``course/templates/`` rendered with ``context`` (plain values: the template escapes them)."""
    return _templates().get_template(template).render(**context)


def lesson_links(r: LessonResult, out: Path) -> list[tuple[str, str]]:
    """(label, href relative to ``out``) of a lesson's files that exist: its HTML page, executed notebook, log."""
    files = (("HTML", r.html), ("notebook", r.notebook), ("log", r.log))
    return [(label, relative_posix(path, out)) for label, path in files if path is not None]


def _status(r: LessonResult) -> str:
    """The status, with :attr:`LessonResult.retry_note` for a lesson run again after its worker died."""
    return f"{r.status} ({r.retry_note})" if r.retry_note else r.status


def summary_table(results: Sequence[LessonResult]) -> str:
    """The results as a Markdown table: lesson / title / status / seconds / failing cell (for a failed
    lesson: the failure kind, the cell and the message, :attr:`LessonResult.problem`). A lesson run again
    after its worker died says so beside its status, and its seconds are those of both attempts."""
    lines = [
        "| lesson | title | status | seconds | failing cell |",
        "|---|---|---|---:|---|",
    ]
    for r in results:
        seconds = f"{r.seconds:.1f}" if r.status != "skipped" else ""
        lines.append(f"| {md_cell(r.id)} | {md_cell(r.title)} | {_status(r)} | {seconds} | {md_cell(r.problem)} |")
    return "\n".join(lines)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _tally(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{counts[s]} {s}" for s in _STATUSES)


def _stop_note(interrupted: int | bool | None) -> tuple[str | None, str]:
    """(the signal's name, a Markdown sentence) for a run stopped early; (None, '') otherwise."""
    if not interrupted:
        return None, ""
    try:
        stopped_by = signal.Signals(int(interrupted)).name if interrupted is not True else "SIGINT"
    except ValueError:
        stopped_by = f"signal {int(interrupted)}"
    note = (
        f"**interrupted** by {stopped_by}: the lessons that had not finished are failed (interrupted) "
        "or skipped (not started); run the same command again to resume"
    )
    return stopped_by, note


class _Run:
    """What the three summary files share: the results, the syllabus, the preset and the header."""

    def __init__(
        self,
        results: Sequence[LessonResult],
        out: str | os.PathLike[str],
        syllabus: Syllabus | None,
        preset: str | None,
        parameters: Mapping[str, Any] | None,
        interrupted: int | bool | None,
    ) -> None:
        self.results, self.out, self.syllabus, self.preset = list(results), Path(out), syllabus, preset
        self.parameters = dict(parameters or {})
        self.stopped_by, self.stop_note = _stop_note(interrupted)
        self.counts = {s: sum(r.status == s for r in self.results) for s in _STATUSES}
        self.title = syllabus.title if syllabus else "dro_lab course"
        self.header = f"preset `{preset}`" + (f", parameters `{dict(parameters)}`" if parameters else "")
        self.lessons = {lesson.id: lesson for lesson in syllabus.lessons} if syllabus else {}

    def expected_minutes(self, r: LessonResult) -> float | None:
        lesson = self.lessons.get(r.id)
        return lesson.minutes.get(self.preset) if lesson is not None and self.preset is not None else None

    def href(self, path: Path | None) -> str | None:
        return None if path is None else relative_posix(path, self.out)


def _markdown(run: _Run) -> str:
    md = [f"# {run.title}: run summary", "", f"{run.header}; {_tally(run.counts)}.", ""]
    md += [run.stop_note, ""] if run.stop_note else []
    md += [summary_table(run.results), ""]
    failed = [r for r in run.results if r.status == "failed"]
    if failed:
        md += ["## Failures", ""]
        md += [
            f"- **{r.id}** ({r.failure or 'raised'}): {md_cell(r.problem)}"
            + (f" — log: `{relative_posix(r.log, run.out)}`" if r.log else "")
            for r in failed
        ]
        md.append("")
    return "\n".join(md)


def _json(run: _Run) -> str:
    lessons = []
    for r in run.results:
        entry = r.to_dict(relative_to=run.out)
        entry["expected_minutes"] = run.expected_minutes(r)
        lessons.append(entry)
    payload = {
        "title": run.title,
        "syllabus": str(run.syllabus.path) if run.syllabus else None,
        "preset": run.preset,
        "parameters": run.parameters,
        "dro_lab": __version__,
        "python": sys.version.split()[0],
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "counts": run.counts,
        "ok": run.counts["failed"] == 0 and not run.stopped_by,
        "interrupted": run.stopped_by,
        "lessons": lessons,
    }
    return json.dumps(payload, indent=2, default=str)


def _html_row(run: _Run, r: LessonResult) -> dict[str, Any]:
    """One lesson's row of ``index.html``, as the template's plain values."""
    minutes = run.expected_minutes(r)
    seconds = f"{r.seconds:.1f}" if r.status != "skipped" else ""
    return {
        "id": r.id,
        "title": r.title,
        "status": r.status,
        "status_text": _status(r),
        "seconds": seconds,
        "earlier": r.status == "cached" and bool(seconds),
        "expected": f"{60 * minutes:.0f}" if minutes is not None else "",
        "slow": minutes is not None and r.status in ("ok", "cached") and r.seconds > 60 * minutes,
        "page": run.href(r.html),
        "files": lesson_links(r, run.out),
        "problem": r.problem,
        "records": [(k, _format_value(v)) for k, v in r.records.items() if _is_scalar(v)],  # the scalar ones
    }


def _index_html(run: _Run) -> str:
    return render_page(
        "run_report.html.j2",
        title=run.title,
        header=run.header.replace("`", ""),
        tally=_tally(run.counts),
        stop_note=run.stop_note.replace("**", ""),
        preset=str(run.preset),
        rows=[_html_row(run, r) for r in run.results],
    )


def summary_markdown(
    results: Sequence[LessonResult],
    out: str | os.PathLike[str],
    *,
    syllabus: Syllabus | None = None,
    preset: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> str:
    """The run summary as Markdown (what ``summary.md`` holds; the course website shows it as a page)."""
    return _markdown(_Run(results, out, syllabus, preset, parameters, None))


def write_summary(
    results: Sequence[LessonResult],
    out: str | os.PathLike[str],
    *,
    syllabus: Syllabus | None = None,
    preset: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    interrupted: int | bool | None = None,
) -> dict[str, Path]:
    """Write ``summary.md``, ``summary.json`` and ``index.html`` into ``out``; return their paths.

    ``index.html`` links every executed lesson (HTML page, notebook, log) and shows its status
    (ok / cached / failed / skipped), its seconds beside the syllabus's expected minutes for the
    preset, for a failed lesson the failure kind, failing cell and message, and its scalar records
    (collapsed). ``interrupted`` (a signal number, or True) marks a run that was stopped before the
    end: the pages say so and ``summary.json`` has ``"ok": false``. Each file is written atomically.
    """
    run = _Run(results, out, syllabus, preset, parameters, interrupted)
    paths = {"md": run.out / "summary.md", "json": run.out / "summary.json", "html": run.out / "index.html"}
    write_text_atomic(paths["md"], _markdown(run))
    write_text_atomic(paths["json"], _json(run))
    write_text_atomic(paths["html"], _index_html(run))
    return paths
