"""What a sweep shows: :func:`sweep_table` (Markdown), :func:`sweep_figure` (plotly, one subplot per
recorded number against the swept value) and :func:`write_sweep_summary` (the sweep's pages; its ``index.html``
is the Jinja2 template ``course/templates/sweep_report.html.j2``)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dro_course._files import jsonable, md_cell, relative_posix, write_text_atomic
from dro_course.runner.report import lesson_links, render_page
from dro_lab import __version__

if TYPE_CHECKING:
    from dro_course.results import LessonResult, SweepResult


def _is_number(value: Any) -> bool:
    """A plottable number: int or float (not bool), finite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _sweep_records(sweep: SweepResult) -> dict[str, list[str]]:
    """Lesson id -> names of its numeric scalar records (in any value), sorted."""
    names: dict[str, set[str]] = {lesson: set() for lesson in sweep.lessons}
    for label in sweep.labels:
        for r in sweep.results(label):
            names.setdefault(r.id, set()).update(k for k, v in r.records.items() if _is_number(v))
    return {lesson: sorted(found) for lesson, found in names.items()}


def _sweep_value(sweep: SweepResult, label: str, lesson: str, name: str) -> float | None:
    """A record's value for one value and lesson; None for a failed run or a missing record."""
    for r in sweep.runs[label]:
        if r.id == lesson:
            value = r.records.get(name) if r.ok and r.status != "skipped" else None
            return float(value) if _is_number(value) else None
    return None


def _run_of(sweep: SweepResult, label: str, lesson: str) -> LessonResult | None:
    return next((r for r in sweep.runs[label] if r.id == lesson), None)


def _grid_cell(sweep: SweepResult, label: str, lesson: str, name: str) -> str:
    r = _run_of(sweep, label, lesson)
    if name == "\0status":
        return r.status if r else ""
    if name == "\0seconds":
        return f"{r.seconds:.1f}" if r and r.status != "skipped" else ""
    value = _sweep_value(sweep, label, lesson, name)
    return "" if value is None else f"{value:.6g}"


def _sweep_grid(sweep: SweepResult) -> tuple[list[str], list[list[str]]]:
    """Header and rows (one per value) of the sweep table, as text."""
    records = _sweep_records(sweep)
    several = len(records) > 1
    header = [sweep.param]
    columns: list[tuple[str, str]] = []  # (lesson, record name, or "\0status" / "\0seconds")
    for lesson, names in records.items():
        prefix = f"{lesson}: " if several else ""
        header += [f"{prefix}{name}" for name in names] + [f"{prefix}status", f"{prefix}seconds"]
        columns += [(lesson, name) for name in names] + [(lesson, "\0status"), (lesson, "\0seconds")]
    rows = [[label] + [_grid_cell(sweep, label, lesson, name) for lesson, name in columns] for label in sweep.labels]
    return header, rows


def sweep_table(sweep: SweepResult) -> str:
    """The sweep as a Markdown table: one row per value; per lesson, one column per numeric scalar
    record, then its status and seconds. Failed runs and missing records are empty cells."""
    header, rows = _sweep_grid(sweep)
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |", "|" + "---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _sweep_axis(sweep: SweepResult) -> tuple[list[Any], str]:
    """x values and axis type: numbers on a linear or log axis, else the labels as categories."""
    if all(_is_number(v) for v in sweep.values):
        numbers = [float(v) for v in sweep.values]
        if min(numbers) > 0 and max(numbers) / min(numbers) >= 100:
            return numbers, "log"
        return numbers, "linear"
    return list(sweep.labels), "category"


def _panel_names(sweep: SweepResult, records: dict[str, list[str]]) -> list[str]:
    """Subplot names: the records that change with the value, then the constant ones, then seconds."""

    def varies(name: str) -> bool:
        for lesson, found in records.items():
            if name in found:
                ys = {_sweep_value(sweep, label, lesson, name) for label in sweep.labels} - {None}
                if len(ys) > 1:
                    return True
        return False

    names = sorted({name for found in records.values() for name in found}, key=lambda n: (not varies(n), n))
    return [*names, "seconds"]


def _panel_ys(sweep: SweepResult, records: dict[str, list[str]], lesson: str, name: str) -> list | None:
    """One lesson's y values of one subplot, per value label; None when the lesson lacks the record."""
    if name == "seconds":
        runs = [_run_of(sweep, label, lesson) for label in sweep.labels]
        return [r.seconds if r is not None and r.ok and r.status != "skipped" else None for r in runs]
    if name in records[lesson]:
        return [_sweep_value(sweep, label, lesson, name) for label in sweep.labels]
    return None


def sweep_figure(sweep: SweepResult, *, columns: int = 3):
    """A plotly figure of the sweep: one subplot per numeric scalar record (those that change with the
    value first, then the constant ones, then the run time), x = the swept value, y = the record,
    one line per lesson; failed runs and missing records are gaps.

    The x axis is logarithmic when every value is a positive number and they span at least two
    decades; values that are not all numbers are categories, in the order given.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from dro_course import figures  # the course's palette

    records = _sweep_records(sweep)
    names = _panel_names(sweep, records)
    x, axis_type = _sweep_axis(sweep)
    order = sorted(range(len(x)), key=lambda i: x[i]) if axis_type != "category" else list(range(len(x)))
    cols = min(columns, len(names))
    rows = math.ceil(len(names) / cols)
    fig = make_subplots(
        rows=rows, cols=cols, subplot_titles=names, horizontal_spacing=0.08, vertical_spacing=min(0.12, 0.6 / rows)
    )
    palette = list(getattr(figures, "PALETTE", [])) or [None]
    for k, lesson in enumerate(records):
        shown = False
        for position, name in enumerate(names):
            ys = _panel_ys(sweep, records, lesson, name)
            if ys is None:
                continue
            trace = go.Scatter(
                x=[x[i] for i in order],
                y=[ys[i] for i in order],
                mode="lines+markers",
                name=lesson,
                legendgroup=lesson,
                showlegend=not shown,
                line=dict(color=palette[k % len(palette)]),
                connectgaps=False,
                hovertemplate=f"{sweep.param}=%{{x}}<br>{name}=%{{y:.4g}}<extra>{lesson}</extra>",
            )
            fig.add_trace(trace, row=position // cols + 1, col=position % cols + 1)
            shown = True
    fig.update_xaxes(type=axis_type, title_text=sweep.param)
    fig.update_layout(
        title=f"Sweep over {sweep.param} ({sweep.preset or ''} preset): records across values",
        height=max(360, 260 * rows + 120),
        template="plotly_white",
    )
    return fig


def _rel(path: Path | None, out: Path) -> str | None:
    return None if path is None else relative_posix(path, out)


def _sweep_json(sweep: SweepResult, out: Path) -> str:
    def lesson_entry(r: LessonResult) -> dict[str, Any]:
        return {
            "status": r.status,
            "seconds": r.seconds,
            "records": r.records,
            "error": r.error,
            "failure": r.failure,
            "failing_cell": dataclasses.asdict(r.failing_cell) if r.failing_cell else None,
            "notebook": _rel(r.notebook, out),
            "html": _rel(r.html, out),
            "log": _rel(r.log, out),
        }

    runs = {
        label: {
            "value": jsonable(value),
            "folder": _rel(sweep.folders.get(label), out),
            "lessons": {r.id: lesson_entry(r) for r in sweep.results(label)},
        }
        for value, label in zip(sweep.values, sweep.labels)
    }
    payload = {
        "param": sweep.param,
        "values": jsonable(sweep.values),
        "labels": sweep.labels,
        "preset": sweep.preset,
        "parameters": jsonable(sweep.parameters),
        "lessons": sweep.lessons,
        "dro_lab": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "ok": sweep.ok,
        "runs": runs,
    }
    return json.dumps(payload, indent=2, default=str)


def _header_line(sweep: SweepResult) -> str:
    return f"preset `{sweep.preset}`" + (f", parameters `{sweep.parameters}`" if sweep.parameters else "")


def _failed_runs(sweep: SweepResult) -> list[str]:
    return [
        f"{sweep.param}={label}: {r.id}" for label in sweep.labels for r in sweep.runs[label] if r.status == "failed"
    ]


def _sweep_markdown(sweep: SweepResult) -> str:
    failed = _failed_runs(sweep)
    outcome = "all ok" if not failed else "failed: " + "; ".join(failed)
    summary = f"{_header_line(sweep)}; lessons {', '.join(sweep.lessons)}; {len(sweep.values)} values; {outcome}."
    return "\n".join([f"# Sweep over `{sweep.param}`", "", summary, "", sweep_table(sweep), ""])


def _value_entry(sweep: SweepResult, label: str, out: Path) -> dict[str, Any]:
    """One value's entry of the sweep page: its run report and each lesson's status and files."""
    folder = sweep.folders.get(label)
    runs = [
        {
            "id": r.id,
            "status": r.status,
            "seconds": f"{r.seconds:.1f}",
            "files": lesson_links(r, out),
            "problem": r.problem,
        }
        for r in sweep.results(label)
    ]
    summary = [] if folder is None else [("summary page", relative_posix(folder / "index.html", out))]
    return {"label": label, "summary": summary, "runs": runs}


def _sweep_index(sweep: SweepResult, out: Path, fig: Any) -> str:
    head, rows = _sweep_grid(sweep)
    return render_page(
        "sweep_report.html.j2",
        param=sweep.param,
        header=_header_line(sweep).replace("`", ""),
        lessons=sweep.lessons,
        failed=_failed_runs(sweep),
        figure=fig.to_html(full_html=False, include_plotlyjs=True),
        head=head,
        rows=rows,
        values=[_value_entry(sweep, label, out) for label in sweep.labels],
    )


def write_sweep_summary(sweep: SweepResult, out: str | os.PathLike[str]) -> dict[str, Path]:
    """Write the sweep's ``sweep.json``, ``sweep.md``, ``sweep.html`` (the figure, plotly.js inline)
    and ``index.html`` (figure, table, links to every value's pages) into ``out``; return the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / f"sweep.{name}" for name in ("json", "md", "html")}
    paths["index"] = out / "index.html"
    write_text_atomic(paths["json"], _sweep_json(sweep, out))
    write_text_atomic(paths["md"], _sweep_markdown(sweep))
    fig = sweep_figure(sweep)
    write_text_atomic(paths["html"], fig.to_html(include_plotlyjs=True, full_html=True))
    write_text_atomic(paths["index"], _sweep_index(sweep, out, fig))
    return paths
