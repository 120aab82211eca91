"""Running the course: :func:`run_course` checks its arguments, makes one task per lesson, runs the tasks
``jobs`` at a time (reusing earlier runs) and writes the summary; a Ctrl-C stops every running lesson
and raises :class:`~.control.RunInterrupted`."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dro_course._files import canonical, code_sha256, sha256
from dro_course.exercises import read_solutions, solutions_path
from dro_course.lesson_setup import check_lesson_parameters
from dro_course.parameters import notebook_parameters
from dro_course.results import LessonResult
from dro_course.runner.control import RunInterrupted, _Cancelled, _interrupts_deferred, _RunControl
from dro_course.runner.dask_executor import check_executor, run_tasks_on_dask  # Dask itself loads only for "dask"
from dro_course.runner.execute import _execute_lesson
from dro_course.runner.report import summary_markdown, write_summary
from dro_course.runner.tasks import _not_started, _report_cached, _share_cores
from dro_course.syllabus import Lesson, Syllabus, load_syllabus

#: Default per-cell execution timeout of :func:`run_course`, in seconds.
DEFAULT_TIMEOUT = 600.0


def _check_run_arguments(
    syllabus: Syllabus | str | os.PathLike[str] | None,
    preset: str,
    jobs: int,
    timeout: float | None,
    only: Sequence[str] | None,
) -> tuple[Syllabus, list[Lesson]]:
    if not isinstance(syllabus, Syllabus):
        syllabus = load_syllabus(syllabus)
    if preset not in syllabus.presets:
        raise ValueError(f"Invalid preset: {preset!r}; the syllabus has {', '.join(syllabus.presets)}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"Invalid number of jobs: {jobs!r} (expected an integer >= 1)")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"Invalid timeout: {timeout!r} (expected seconds > 0 or None)")
    selected = syllabus.select(only)
    for lesson in selected:
        if not lesson.notebook.is_file():
            raise FileNotFoundError(f"Lesson {lesson.id!r}: notebook not found: {lesson.notebook}")
    return syllabus, selected


def _check_overrides(
    selected: Sequence[Lesson], overrides: Mapping[str, Any], declared: Mapping[str, set[str]]
) -> None:
    undeclared = [name for name in overrides if not any(name in d for d in declared.values())]
    if undeclared:
        raise ValueError(
            f"Invalid parameter(s) {undeclared}: not declared in the parameters cell of any selected "
            f"lesson ({', '.join(lesson.id for lesson in selected)})"
        )


def _make_task(
    lesson: Lesson,
    *,
    preset: str,
    params: dict[str, Any],
    out_dir: Path,
    timeout: float | None,
    kernel_name: str | None,
    notebook_sha256: str,
) -> dict[str, Any]:
    solutions = solutions_path(lesson.notebook)
    has_solutions = solutions.is_file()
    return {
        "id": lesson.id,
        "title": lesson.title,
        "notebook": str(lesson.notebook),
        "notebook_sha256": notebook_sha256,
        "code_sha256": code_sha256(lesson.notebook),
        # what the lesson's set-up cell reads from the syllabus (its checks, and the sizes it fills in)
        "syllabus_sha256": hashlib.sha256(canonical([lesson.checks, lesson.defaults]).encode()).hexdigest(),
        # the instructor copy runs in the lesson's own run (.instructor): its solutions travel with the task
        "solutions": read_solutions(solutions) if has_solutions else None,
        "solutions_sha256": sha256(solutions) if has_solutions else None,
        "out": str(out_dir),
        "preset": preset,
        "parameters": params,
        "timeout": timeout,
        "kernel_name": kernel_name,
        "env": {},
    }


def _outcome(future: Any, task: Mapping[str, Any]) -> LessonResult:
    """The result of a finished (or cancelled) lesson future; never raises."""
    if future.cancelled():
        return _not_started(task)
    try:
        return future.result()
    except _Cancelled:
        return _not_started(task)
    except Exception as exc:  # e.g. the output folder vanished; report, go on
        return LessonResult(
            id=task["id"],
            title=task["title"],
            status="failed",
            parameters=task["parameters"],
            error=f"{type(exc).__name__}: {exc}",
            failure="raised",
        )


def _report_late(
    tasks: Sequence[Mapping[str, Any]],
    futures: Mapping[Any, int],
    results: list[LessonResult | None],
    on_result: Callable[[LessonResult], None] | None,
) -> None:
    """After an interrupt: the lessons not reported yet, as their threads recorded them."""
    for future, position in futures.items():
        if results[position] is None:
            results[position] = _outcome(future, tasks[position])
            if on_result is not None:
                try:
                    on_result(results[position])
                except Exception:
                    pass


def _run_tasks(
    tasks: Sequence[dict[str, Any]],
    *,
    jobs: int,
    force: bool,
    on_result: Callable[[LessonResult], None] | None,
    executor: str = "local",
    scheduler: str | None = None,
) -> list[LessonResult]:
    """Run ``tasks`` (reusing earlier runs unless ``force``), ``jobs`` at a time; results in task order.
    ``executor="dask"``: on a Dask cluster instead (:mod:`.dask_executor`, loaded only then).

    On KeyboardInterrupt (Ctrl-C; ``dro-lab`` turns SIGTERM and SIGHUP into one): stops the running
    lessons (see :class:`~.control._RunControl`), lets their threads record them as interrupted, and
    raises :class:`RunInterrupted` with one result per task.
    """
    if executor == "dask":
        return run_tasks_on_dask(tasks, jobs=jobs, force=force, on_result=on_result, scheduler=scheduler)
    from concurrent.futures import ThreadPoolExecutor, as_completed

    control = _RunControl()
    results: list[LessonResult | None] = [None] * len(tasks)
    futures: dict[Any, int] = {}
    pool: ThreadPoolExecutor | None = None

    def report(position: int, result: LessonResult) -> None:
        results[position] = result
        if on_result is not None:
            on_result(result)

    try:
        pending = _report_cached(tasks, force, report)
        workers = min(jobs, max(1, len(pending)))
        _share_cores(tasks, pending, workers)
        if pending:
            # Threads only wait on papermill subprocesses, so the GIL is no bottleneck. The main thread
            # waits in as_completed, where a Ctrl-C lands.
            pool = ThreadPoolExecutor(max_workers=workers)
            futures.update({pool.submit(_execute_lesson, tasks[p], control): p for p in pending})
            for future in as_completed(futures):
                report(futures[future], _outcome(future, tasks[futures[future]]))
            pool.shutdown(wait=True)
    except KeyboardInterrupt as exc:
        control.cancel.set()
        for future in futures:
            future.cancel()  # not started yet: never starts
        with _interrupts_deferred():  # a second Ctrl-C must not leave kernels behind
            control.stop_all()
            if pool is not None:
                pool.shutdown(wait=True)  # the running lessons' threads record them as interrupted
        _report_late(tasks, futures, results, on_result)
        final = [r if r is not None else _not_started(task) for r, task in zip(results, tasks)]
        raise RunInterrupted(final, signum=getattr(exc, "signum", signal.SIGINT)) from None
    return [r for r in results if r is not None]


def _in_syllabus_order(syllabus: Syllabus, results: Iterable[LessonResult]) -> list[LessonResult]:
    by_id = {r.id: r for r in results}
    return [
        by_id.get(lesson.id) or LessonResult(id=lesson.id, title=lesson.title, status="skipped")
        for lesson in syllabus.lessons
    ]


def _lesson_parameters(
    lesson: Lesson, preset: str, overrides: Mapping[str, Any], declared: Mapping[str, set[str]]
) -> dict[str, Any]:
    """The preset's papermill parameters plus the overrides the lesson declares."""
    params = lesson.parameters(preset)
    params.update({k: v for k, v in overrides.items() if k in declared.get(lesson.id, ())})
    return params


def _earlier_run(skipped: LessonResult, out_dir: Path) -> LessonResult:
    """A lesson this run skipped (``only``) as its last ok run in ``out_dir`` shows it, so that running one lesson
    into a course folder keeps the other lessons' pages; the skipped result itself when there is none."""
    from dro_course.runner.execute import _read_run_record  # here: only the site needs an earlier run's record

    earlier = _read_run_record(out_dir, skipped.id)
    executed = out_dir / f"{skipped.id}.ipynb"
    if earlier is None or earlier.get("status") != "ok" or not executed.is_file():
        return skipped
    seconds = earlier.get("seconds")
    return dataclasses.replace(
        skipped,
        status="cached",
        notebook=executed,
        seconds=float(seconds) if isinstance(seconds, (int, float)) else 0.0,
    )


def publish_site(
    results: Sequence[LessonResult],
    out_dir: Path,
    *,
    syllabus: Syllabus,
    preset: str,
    parameters: Mapping[str, Any] | None = None,
    instructor: bool = False,
) -> Path:
    """Build the course website of a finished run into ``<out_dir>/site`` (the student's, with no solution) and,
    with ``instructor``, the instructor's into ``<out_dir>/instructor-site``; point each executed lesson's
    :attr:`LessonResult.html` at its student page; return the student site's ``index.html``."""
    from dro_course.site import build_site, lesson_page_path  # here: nbformat and plotly load only when a site is built

    summary = summary_markdown(results, out_dir, syllabus=syllabus, preset=preset, parameters=parameters)
    shown = [_earlier_run(r, out_dir) if r.status == "skipped" else r for r in results]
    if instructor:
        build_site(out_dir, syllabus=syllabus, results=shown, preset=preset, summary_md=summary, audience="instructor")
    index = build_site(out_dir, syllabus=syllabus, results=shown, preset=preset, summary_md=summary)
    for result in results:
        if result.notebook is not None:
            result.html = lesson_page_path(index, syllabus, result.id)
    return index


def run_course(
    syllabus: Syllabus | str | os.PathLike[str] | None = None,
    *,
    preset: str = "smoke",
    out: str | os.PathLike[str] = "build/course",
    jobs: int = 1,
    only: Sequence[str] | None = None,
    parameters: Mapping[str, Any] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    html: bool = True,
    instructor: bool = False,
    force: bool = False,
    kernel_name: str | None = None,
    on_result: Callable[[LessonResult], None] | None = None,
    executor: str = "local",
    scheduler: str | None = None,
) -> list[LessonResult]:
    """Execute the course's lessons with papermill; write executed notebooks, the course website and a summary.

    Each lesson runs in its own papermill process and kernel (``jobs`` lessons at a time), from its
    notebook's folder, with the preset's parameters plus ``parameters`` injected. A failing lesson
    does not stop the others: it is reported with its failing cell, and its partial executed
    notebook is still written (and shown on the site). Written under ``out`` only::

        <id>.ipynb  <id>.log  <id>.record.json  <id>.run.json   per lesson
        instructor/<id>.ipynb      the lesson executed with its exercises' solutions (in the same run: the solved
                                   cells and their checks run after the student's cells, then the executed
                                   notebook is split in two; a solution that fails its check fails the lesson)
        site/                      the course website (html=True): site/index.html, one page per lesson; the
                                   student's: no solution, no run log
        instructor-site/           (instructor=True) the same lessons with their solutions and the written
                                   exercises' answers, the instructor copies, the instructor guide, the run log
        summary.md  summary.json  index.html                     for the run

    The website (:func:`publish_site`, built with Sphinx) works with no network, opened from disk or
    served: navigation, search, each lesson's executed outputs, maths rendered by its own KaTeX,
    figures drawn by one shared plotly.js, widget panels as their static twins, the syllabus, glossary and
    references, and per lesson the notebook and the executed notebook to download and Binder / Colab buttons.

    Resume: ``<id>.run.json`` holds the preset, the exact parameters, the source notebook's SHA-256, the
    SHA-256 of its code cells and kernel, of its solutions file and of its syllabus entry's checks and defaults, the
    dro_lab version and a SHA-256 of the library's source, the status and the seconds of the lesson's last run. A
    lesson whose last run in ``out`` was ok with the same preset, parameters, code, solutions, syllabus entry and
    library, and whose executed notebook (and instructor copy) is still there, is not
    executed again: its result has status ``"cached"`` (an ok status) and the stored seconds and
    records. When only its prose (markdown cells) changed, the executed notebook takes the new prose
    and keeps its outputs (re-rendered, no kernel). Failed lessons always run again; ``force=True``
    re-runs everything.

    The kernels see ``PLOTLY_RENDERER=plotly_mimetype`` (figures stored as
    ``application/vnd.plotly.v1+json``, which JupyterLab and VS Code draw even in an untrusted
    notebook), ``DRO_LAB_PRESET`` = the preset passed, ``DRO_LAB_RECORD`` = ``<out>/<id>.record.json``
    and, with ``jobs > 1``, ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` sharing the cores (unless set).

    Args:
        syllabus: a :class:`Syllabus`, a path to one, or None for ``course/syllabus.yaml``.
        preset: one of the syllabus presets (``smoke``, ``full``, ``gpu``).
        out: output folder (created).
        jobs: lessons run at once (>= 1).
        only: lesson ids (or unique prefixes) to run; the others are reported ``"skipped"``.
        parameters: overrides on top of the preset's parameters. Each is passed only to lessons
            that declare it; one that no selected lesson declares is an error (a typo).
        timeout: per-cell execution timeout in seconds (None: no limit).
        html: build the course website into ``<out>/site`` after the run.
        instructor: with ``html``, also build the instructor's site into ``<out>/instructor-site``.
        force: execute every selected lesson even when an earlier run in ``out`` can be reused.
        kernel_name: Jupyter kernel; default: the one in each notebook's metadata.
        on_result: called with each :class:`LessonResult` as soon as it is known.
        executor: ``"local"`` (a thread pool on this machine) or ``"dask"``: each lesson is a task on a
            Dask cluster (``pip install "dro-lab[dask]"``), with the same outputs, resume, failure
            reports and interrupts; the executed notebooks, records and logs come back to ``out``
            (the workers need no shared disk). See :mod:`dro_course.runner.dask_executor`.
        scheduler: with ``executor="dask"``, the address of a running scheduler (``tcp://host:8786``);
            None starts a ``LocalCluster`` of ``jobs`` one-thread worker processes for the run.

    Returns:
        one :class:`LessonResult` per syllabus lesson, in syllabus order.

    Faults: a lesson that raises, runs a cell past ``timeout`` or whose kernel dies is ``failed``
    with :attr:`LessonResult.failure` (``raised``, ``timed out``, ``kernel died``, ``killed``), its
    failing cell and a one-line error; the other lessons run on and keep their outputs. A Ctrl-C
    stops the running lessons (papermill and kernel), records them as failed with failure
    ``interrupted``, writes the summary (``"interrupted"`` in ``summary.json``) and raises
    :class:`RunInterrupted`; the same call again resumes. Every run and summary file is written
    atomically.

    Raises:
        ValueError: unknown preset or lesson, bad ``jobs``/``timeout``, undeclared parameter, a parameter value that
            fails the lesson's check in the syllabus or a device torch cannot use (before any kernel starts), unknown
            ``executor``, a ``scheduler`` without ``executor="dask"``.
        ModuleNotFoundError: ``executor="dask"`` without Dask installed (``pip install "dro-lab[dask]"``).
        ConnectionError: no Dask scheduler answers at ``scheduler``.
        RunInterrupted: the run was interrupted (a ``KeyboardInterrupt``); its ``results`` hold
            every lesson's result.
    """

    check_executor(executor, scheduler)
    syllabus, selected = _check_run_arguments(syllabus, preset, jobs, timeout, only)
    overrides = dict(parameters or {})
    declared = {lesson.id: notebook_parameters(lesson.notebook) for lesson in selected} if overrides else {}
    _check_overrides(selected, overrides, declared)
    out_dir = Path(out).resolve()
    common = dict(preset=preset, timeout=timeout, kernel_name=kernel_name)
    tasks = [
        _make_task(
            lesson,
            params=_lesson_parameters(lesson, preset, overrides, declared),
            out_dir=out_dir,
            notebook_sha256=sha256(lesson.notebook),
            **common,
        )
        for lesson in selected
    ]
    for lesson, task in zip(selected, tasks):  # a bad value stops the run here, before any kernel starts
        check_lesson_parameters(lesson, preset, task["parameters"], device_here=executor == "local")
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = dict(syllabus=syllabus, preset=preset, parameters=overrides)
    try:
        results = _run_tasks(tasks, jobs=jobs, force=force, on_result=on_result, executor=executor, scheduler=scheduler)
    except RunInterrupted as stop:
        stop.results = _in_syllabus_order(syllabus, stop.results)
        write_summary(stop.results, out_dir, **summary, interrupted=stop.signum)
        raise
    ordered = _in_syllabus_order(syllabus, results)
    if html:
        publish_site(ordered, out_dir, syllabus=syllabus, preset=preset, parameters=overrides, instructor=instructor)
    write_summary(ordered, out_dir, **summary)
    return ordered
