"""The summary of a run: :func:`summary_table` (Markdown) and :func:`write_summary` (``summary.md``,
``summary.json`` and an ``index.html`` that links every lesson's pages)."""

from __future__ import annotations

import html
import json
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dro_course._files import md_cell, relative_posix, write_text_atomic
from dro_course.results import LessonResult
from dro_course.syllabus import Syllabus
from dro_lab import __version__

_STATUSES = ("ok", "cached", "failed", "skipped")

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}}
tr.failed td{{background:#fdd}}tr.skipped td{{color:#888}}tr.cached td{{background:#f4f8ff}}
td.slow{{color:#b00}}p.interrupted{{color:#b00;font-weight:bold}}
table.records td{{border:none;padding:0 .6em 0 0;font-size:90%}}</style></head>
<body><h1>{title}</h1>
<p>{tally}</p>
{stop}
<table><thead><tr><th>lesson</th><th>title</th><th>status</th><th>seconds</th>
<th>expected seconds ({preset})</th><th>files</th><th>failing cell</th><th>records</th></tr></thead>
<tbody>
{rows}
</tbody></table></body></html>
"""


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

    def link(self, path: Path | None, label: str) -> str:
        if path is None:
            return ""
        return f'<a href="{html.escape(relative_posix(path, self.out))}">{label}</a>'


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


def _records_cell(records: Mapping[str, Any]) -> str:
    """A lesson's scalar records, collapsed under a ``<details>``; '' when it has none."""
    scalars = {k: v for k, v in records.items() if _is_scalar(v)}
    if not scalars:
        return ""
    items = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape(_format_value(v))}</td></tr>" for k, v in scalars.items()
    )
    return f'<details><summary>{len(scalars)} records</summary><table class="records">{items}</table></details>'


def _html_row(run: _Run, r: LessonResult) -> str:
    seconds = f"{r.seconds:.1f}" if r.status != "skipped" else ""
    if r.status == "cached" and seconds:
        seconds += " (earlier run)"
    minutes = run.expected_minutes(r)
    expected = f"{60 * minutes:.0f}" if minutes is not None else ""
    over = minutes is not None and r.status in ("ok", "cached") and r.seconds > 60 * minutes
    slow = ' class="slow"' if over else ""
    title_cell = run.link(r.html, html.escape(r.title)) or html.escape(r.title)
    files = " ".join(filter(None, (run.link(r.html, "HTML"), run.link(r.notebook, "notebook"), run.link(r.log, "log"))))
    return (
        f'<tr class="{r.status}"><td>{html.escape(r.id)}</td><td>{title_cell}</td><td>{html.escape(_status(r))}</td>'
        f"<td{slow}>{seconds}</td><td>{expected}</td><td>{files}</td>"
        f"<td><code>{html.escape(r.problem)}</code></td><td>{_records_cell(r.records)}</td></tr>"
    )


def _index_html(run: _Run) -> str:
    stop = f'<p class="interrupted">{html.escape(run.stop_note.replace("**", ""))}</p>' if run.stop_note else ""
    return _PAGE.format(
        title=html.escape(run.title),
        tally=html.escape(f"{run.header.replace('`', '')}; {_tally(run.counts)}."),
        stop=stop,
        preset=html.escape(str(run.preset)),
        rows="\n".join(_html_row(run, r) for r in run.results),
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
