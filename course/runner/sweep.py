"""Parameter sweeps: :func:`parse_sweep` reads ``PARAM=v1,v2,...``, :func:`run_sweep` runs the lessons
once per value (each value a normal course run) and :class:`SweepResult` holds every run."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dro_course._files import canonical, sha256
from dro_course.lesson_setup import check_lesson_parameters
from dro_course.parameters import IDENT_RE, notebook_parameters, parse_parameter_value
from dro_course.results import LessonResult, SweepResult
from dro_course.runner.control import RunInterrupted
from dro_course.runner.dask_executor import check_executor
from dro_course.runner.report import write_summary
from dro_course.runner.run import (
    DEFAULT_TIMEOUT,
    _check_overrides,
    _check_run_arguments,
    _in_syllabus_order,
    _lesson_parameters,
    _make_task,
    _run_tasks,
    publish_site,
)
from dro_course.runner.sweep_report import write_sweep_summary
from dro_course.syllabus import Lesson, Syllabus


def _split_top_level(text: str) -> list[str]:
    """Split ``text`` on the commas that are outside brackets and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    closing = {")": "(", "]": "[", "}": "{"}
    for position, char in enumerate(text):
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in closing:
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append(text[start:position])
            start = position + 1
    parts.append(text[start:])
    return [part.strip() for part in parts]


def parse_sweep(text: str) -> tuple[str, list[Any]]:
    """Parse ``PARAM=v1,v2,...`` into ``(param, [values])``.

    Values are split on top-level commas only (``kl_betas=[0.5,10],[50,100]`` is two lists) and each
    is parsed with :func:`~.parameters.parse_parameter_value`.

    Raises:
        ValueError: no ``=``, a name that is not a Python identifier, an empty or repeated value.
    """
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep:
        raise ValueError(f"Invalid sweep {text!r}: expected PARAM=v1,v2,... (e.g. beta=0.1,1,10)")
    if not IDENT_RE.match(name):
        raise ValueError(f"Invalid sweep {text!r}: {name!r} is not a parameter name")
    items = _split_top_level(rest)
    if any(not item for item in items):
        raise ValueError(f"Invalid sweep {text!r}: empty value (values are separated by single commas)")
    values = [parse_parameter_value(item) for item in items]
    seen: set[str] = set()
    for value in values:
        key = canonical(value) + type(value).__name__
        if key in seen:
            raise ValueError(f"Invalid sweep {text!r}: value {value!r} is given twice")
        seen.add(key)
    return name, values


def _value_label(value: Any) -> str:
    """The text of a swept value: as typed for numbers and strings, ``repr`` otherwise."""
    return value if isinstance(value, str) else repr(value)


def _folder_name(param: str, label: str, taken: set[str]) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.+-]+", "_", label).strip("_.") or "value"
    name = f"{param}={safe}"
    candidate, k = name, 2
    while candidate.lower() in taken:  # case-insensitive file systems
        candidate, k = f"{name}-{k}", k + 1
    taken.add(candidate.lower())
    return candidate


def _check_sweep(
    param: str, values: list[Any], overrides: Mapping[str, Any], selected: Sequence[Lesson]
) -> tuple[list[str], dict[str, set[str]]]:
    """The value labels and each selected lesson's declared parameters, once the sweep is checked."""
    if not isinstance(param, str) or not IDENT_RE.match(param):
        raise ValueError(f"Invalid sweep parameter: {param!r} (expected a Python identifier)")
    if not values:
        raise ValueError(f"Invalid sweep over {param!r}: no values")
    labels = [_value_label(v) for v in values]
    if len(set(labels)) != len(labels):
        raise ValueError(f"Invalid sweep over {param!r}: repeated values in {labels}")
    if param in overrides:
        raise ValueError(
            f"Invalid sweep: {param!r} is both swept and given as a parameter ({param}={overrides[param]!r}); "
            "give it once"
        )
    if not selected:
        raise ValueError("Invalid sweep: no lesson selected")
    declared = {lesson.id: notebook_parameters(lesson.notebook) for lesson in selected}
    lacking = [lesson.id for lesson in selected if param not in declared[lesson.id]]
    if lacking:
        raise ValueError(
            f"Invalid sweep parameter {param!r}: not declared in the parameters cell of lesson(s) "
            f"{', '.join(lacking)}; choose lessons that declare it with --only"
        )
    _check_overrides(selected, overrides, declared)
    return labels, declared


def _value_folders(out: str | os.PathLike[str], param: str, labels: list[str]) -> tuple[Path, dict[str, Path]]:
    """``<out>/sweep-<param>`` and, per value label, its own folder in it (all created)."""
    sweep_dir = Path(out) / f"sweep-{param}"
    sweep_dir.mkdir(parents=True, exist_ok=True)
    sweep_dir = sweep_dir.resolve()
    taken: set[str] = set()
    folders = {label: sweep_dir / _folder_name(param, label, taken) for label in labels}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    return sweep_dir, folders


def run_sweep(
    syllabus: Syllabus | str | os.PathLike[str] | None,
    param: str,
    values: Sequence[Any],
    *,
    preset: str = "smoke",
    out: str | os.PathLike[str] = "build/course",
    jobs: int = 1,
    only: Sequence[str] | None = None,
    parameters: Mapping[str, Any] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    html: bool = True,
    force: bool = False,
    kernel_name: str | None = None,
    on_result: Callable[[LessonResult], None] | None = None,
    executor: str = "local",
    scheduler: str | None = None,
) -> SweepResult:
    """Run the selected lessons once per value of ``param`` and summarise the records across values.

    Each value is a normal :func:`~dro_course.run_course` run (with resume) into
    ``<out>/sweep-<param>/<param>=<value>/``; ``jobs`` applies across all (value, lesson) pairs.
    Then :func:`~.sweep_report.write_sweep_summary` writes ``sweep.json``, ``sweep.md``, ``sweep.html``
    (the figure) and ``index.html`` into ``<out>/sweep-<param>/``. ``on_result`` receives each lesson
    result as it comes; its ``parameters[param]`` says which value it belongs to. ``executor="dask"``
    (and ``scheduler``) runs every (value, lesson) job as one task on a Dask cluster, as in ``run_course``.

    Raises:
        ValueError: an empty or repeated value list, a ``param`` that some selected lesson does not
            declare (the message lists them), ``param`` also in ``parameters``, and every error of
            ``run_course``.
    """
    check_executor(executor, scheduler)
    syllabus, selected = _check_run_arguments(syllabus, preset, jobs, timeout, only)
    values, overrides = list(values), dict(parameters or {})
    labels, declared = _check_sweep(param, values, overrides, selected)
    runs_wanted = [
        (label, lesson, {**_lesson_parameters(lesson, preset, overrides, declared), param: value})
        for value, label in zip(values, labels)
        for lesson in selected
    ]
    for _, lesson, params in runs_wanted:  # every value checked before any folder or kernel
        check_lesson_parameters(lesson, preset, params, device_here=executor == "local")
    sweep_dir, folders = _value_folders(out, param, labels)
    hashes = {lesson.id: sha256(lesson.notebook) for lesson in selected}
    common = dict(preset=preset, timeout=timeout, kernel_name=kernel_name)
    tasks, owner = [], []
    for label, lesson, params in runs_wanted:
        tasks.append(
            _make_task(lesson, params=params, out_dir=folders[label], notebook_sha256=hashes[lesson.id], **common)
        )
        owner.append(label)

    def summarise(results: Sequence[LessonResult], **interrupted: Any) -> dict[str, list[LessonResult]]:
        runs = {}
        for value, label in zip(values, labels):
            runs[label] = _in_syllabus_order(syllabus, [r for r, o in zip(results, owner) if o == label])
            run = dict(syllabus=syllabus, preset=preset, parameters={**overrides, param: value})
            if html and not interrupted:
                publish_site(runs[label], folders[label], **run)
            write_summary(runs[label], folders[label], **run, **interrupted)
        return runs

    try:
        results = _run_tasks(tasks, jobs=jobs, force=force, on_result=on_result, executor=executor, scheduler=scheduler)
    except RunInterrupted as stop:
        summarise(stop.results, interrupted=stop.signum)
        raise
    sweep = SweepResult(
        param=param,
        values=values,
        runs=summarise(results),
        out=sweep_dir,
        folders=folders,
        lessons=[lesson.id for lesson in selected],
        preset=preset,
        parameters=overrides,
    )
    write_sweep_summary(sweep, sweep_dir)
    return sweep
