"""One lesson through papermill: the command, the kernel's environment, and the ``<id>.run.json`` record by which
a later run reuses an earlier one (resume). The lesson's web page is built with the others, after the run
(:mod:`.site`)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dro_course._files import canonical, cell_tags, jsonable, library_sha256, write_text_atomic
from dro_course.exercises import fill_solutions
from dro_course.parameters import PRESET_ENV
from dro_course.records import RECORD_ENV, read_records
from dro_course.results import LessonResult
from dro_course.runner.control import _Cancelled, _RunControl
from dro_course.runner.failures import ERROR_MARKER_TAG, classify_failure
from dro_course.runner.instructor import APPENDED_TAG, check_verdicts, split_executed, with_solution_checks
from dro_course.runner.rerender import rerender_prose
from dro_lab import __version__


def _papermill_command(task: Mapping[str, Any], source: Path, executed: Path) -> list[str]:
    import yaml

    command = [
        sys.executable,
        "-m",
        "papermill",
        str(source),
        str(executed),
        "-y",
        yaml.safe_dump(task["parameters"], default_flow_style=True),
        "--cwd",
        str(Path(task["notebook"]).parent),
        "--no-progress-bar",
        "--log-level",
        "WARNING",
    ]
    if task["timeout"] is not None:
        command += ["--execution-timeout", str(max(1, math.ceil(task["timeout"])))]
    if task["kernel_name"]:
        command += ["--kernel", task["kernel_name"]]
    return command


def _run_record_path(task: Mapping[str, Any]) -> Path:
    return Path(task["out"]) / f"{task['id']}.run.json"


def _instructor_path(task: Mapping[str, Any]) -> Path:
    """``<out>/instructor/<id>.ipynb``: the lesson executed with its solutions (:mod:`.instructor`)."""
    return Path(task["out"]) / "instructor" / f"{task['id']}.ipynb"


def _write_run_record(task: Mapping[str, Any], result: LessonResult) -> None:
    """``<out>/<id>.run.json``: what ran and how it ended (the key of resume)."""
    payload = {
        "id": task["id"],
        "preset": task["preset"],
        "parameters": jsonable(task["parameters"]),
        "notebook": task["notebook"],
        "notebook_sha256": task["notebook_sha256"],
        "code_sha256": task["code_sha256"],
        "solutions_sha256": task.get("solutions_sha256"),
        "syllabus_sha256": task.get("syllabus_sha256"),
        "dro_lab": __version__,
        "library_sha256": library_sha256(),
        "status": result.status,
        "failure": result.failure,
        "error": result.error,
        "seconds": result.seconds,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_text_atomic(_run_record_path(task), json.dumps(payload, indent=2, default=str))


def _read_run_record(out: Path, lesson_id: str) -> dict[str, Any] | None:
    """``<out>/<lesson_id>.run.json`` as a dict, or None when it is missing or unreadable."""
    try:
        record = json.loads((Path(out) / f"{lesson_id}.run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _reusable_run(task: Mapping[str, Any]) -> dict[str, Any] | None:
    """The earlier ``<id>.run.json`` when it says ``ok`` for the same preset, parameters, code (the notebook's
    code cells and kernel: :func:`~._files.code_sha256`), dro_lab version and library source hash, and the executed
    notebook is still there; else None. (The prose may differ: :func:`_cached_result` re-renders it.)"""
    try:
        previous = json.loads(_run_record_path(task).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    executed = Path(task["out"]) / f"{task['id']}.ipynb"
    if (
        isinstance(previous, dict)
        and previous.get("status") == "ok"
        and previous.get("preset") == task["preset"]
        and previous.get("code_sha256") == task["code_sha256"]
        and previous.get("solutions_sha256") == task.get("solutions_sha256")
        and previous.get("syllabus_sha256") == task.get("syllabus_sha256")
        and previous.get("dro_lab") == __version__
        and previous.get("library_sha256") == library_sha256()
        and canonical(previous.get("parameters")) == canonical(task["parameters"])
        and executed.is_file()
        and (not task.get("solutions") or _instructor_path(task).is_file())
    ):
        return previous
    return None


def _cached_result(task: Mapping[str, Any]) -> LessonResult | None:
    """The earlier run of ``task`` if it can stand for a new one (resume), else None.

    When only the lesson's prose changed since that run, its executed notebook takes the new markdown cells and
    keeps its outputs (:func:`~.rerender.rerender_prose`; so does the executed instructor copy), and
    ``<id>.run.json`` records the new notebook hash.
    """
    previous = _reusable_run(task)
    if previous is None:
        return None
    out, lesson_id = Path(task["out"]), task["id"]
    if previous.get("notebook_sha256") != task["notebook_sha256"]:
        if not _rerender_copies(task):
            return None  # the code cells do not line up after all: run it
        previous = {
            **previous,
            "notebook_sha256": task["notebook_sha256"],
            "rerendered": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        write_text_atomic(_run_record_path(task), json.dumps(previous, indent=2, default=str))
    seconds = previous.get("seconds")
    result = LessonResult(
        id=lesson_id,
        title=task["title"],
        status="cached",
        parameters=dict(task["parameters"]),
        seconds=float(seconds) if isinstance(seconds, (int, float)) else 0.0,
        notebook=out / f"{lesson_id}.ipynb",
    )
    record_path = out / f"{lesson_id}.record.json"
    if record_path.is_file():
        result.record_file = record_path
        result.records = read_records(record_path)
    log_path = out / f"{lesson_id}.log"
    result.log = log_path if log_path.is_file() else None
    result.instructor = _instructor_path(task) if task.get("solutions") else None
    return result


def _rerender_copies(task: Mapping[str, Any]) -> bool:
    """The new prose into the executed student notebook and, when the lesson has solutions, the executed instructor
    copy (its source: the notebook with the solutions filled in); False when the code cells do not line up."""
    import nbformat

    source = nbformat.read(task["notebook"], as_version=4)
    copies = [(source, Path(task["out"]) / f"{task['id']}.ipynb")]
    if task.get("solutions"):
        copies.append((fill_solutions(source, task["solutions"]), _instructor_path(task)))
    merged = [rerender_prose(src, nbformat.read(str(path), as_version=4)) for src, path in copies]
    if any(nb is None for nb in merged):
        return False
    for nb, (_, path) in zip(merged, copies):
        write_text_atomic(path, nbformat.writes(nb))
    return True


def _kernel_env(task: Mapping[str, Any], record_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        RECORD_ENV: str(record_path),
        # the mime type JupyterLab and VS Code draw even in an untrusted notebook; the site converts it
        "PLOTLY_RENDERER": "plotly_mimetype",
        # panels show their live widget (and leave their static twin for the site), whatever the parent process
        "DRO_LAB_FRONT_END": "jupyter",
        PRESET_ENV: str(task["parameters"].get("preset", task["preset"])),
        **task["env"],
    }


def _run_papermill(task: Mapping[str, Any], control: _RunControl, source: Path, running: Path) -> tuple[int, float]:
    """Run papermill on ``source`` into ``running``; (exit status, perf_counter at its launch)."""
    out = Path(task["out"])
    # A subprocess, not a worker of ours: papermill's own CLI, whose log (and the kernel's stderr)
    # goes to <id>.log instead of the terminal; and no multiprocessing re-import of the caller.
    with open(out / f"{task['id']}.log", "w", encoding="utf-8") as log_file:
        process = control.launch(
            _papermill_command(task, source, running),
            env=_kernel_env(task, out / f"{task['id']}.record.json"),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
        start = time.perf_counter()  # not counting the wait for a launch slot
        try:
            return process.wait(), start
        finally:
            control.forget(process)


def _working_files(task: Mapping[str, Any]) -> tuple[Path, Path]:
    """(the notebook papermill reads, the one it writes cell by cell): hidden files beside the outputs, replaced
    by ``<id>.ipynb`` (and the instructor copy) only once the run is over."""
    out, lesson_id = Path(task["out"]), task["id"]
    return out / f".{lesson_id}.input.ipynb", out / f".{lesson_id}.running.ipynb"


def _prepare_source(task: Mapping[str, Any]) -> Path:
    """The lesson as papermill runs it: with its solutions' checks appended when it has solutions."""
    if not task.get("solutions"):
        return Path(task["notebook"])
    import nbformat

    source = _working_files(task)[0]
    full = with_solution_checks(nbformat.read(task["notebook"], as_version=4), task["solutions"])
    write_text_atomic(source, nbformat.writes(full))
    return source


def _execute_lesson(task: Mapping[str, Any], control: _RunControl | None = None) -> LessonResult:
    """Run one lesson: papermill in a subprocess (its own kernel). Never raises
    for a failing lesson; writes ``<id>.run.json`` at the end. Raises :class:`_Cancelled` when the
    run was interrupted before the lesson started."""
    control = control if control is not None else _RunControl()
    if control.cancel.is_set():
        raise _Cancelled()
    out, lesson_id = Path(task["out"]), task["id"]
    record_path, log_path = out / f"{lesson_id}.record.json", out / f"{lesson_id}.log"
    stale = (_run_record_path(task), out / f"{lesson_id}.ipynb", _instructor_path(task), record_path)
    for path in (*stale, *_working_files(task)):
        path.unlink(missing_ok=True)  # results must come from this run only

    result = LessonResult(id=lesson_id, title=task["title"], status="ok", parameters=dict(task["parameters"]))
    running = _working_files(task)[1]
    try:
        returncode, start = _run_papermill(task, control, _prepare_source(task), running)
    except BaseException:  # cancelled before papermill started, or it could not start: no working file stays
        for path in _working_files(task):
            path.unlink(missing_ok=True)
        raise
    if returncode != 0:
        log = log_path.read_text(encoding="utf-8", errors="replace")
        result.status = "failed"
        result.failure, result.failing_cell, result.error = classify_failure(
            task, returncode, running, log, log_path.name, interrupted=control.cancel.is_set()
        )
    _publish_notebooks(task, running, result)
    if record_path.is_file():
        try:
            result.records = read_records(record_path)
            result.record_file = record_path
        except ValueError:  # half-written by a killed kernel (record() writes atomically; belt and braces)
            pass
    result.log = log_path
    result.seconds = time.perf_counter() - start
    _write_run_record(task, result)
    return result


def _publish_notebooks(task: Mapping[str, Any], running: Path, result: LessonResult) -> None:
    """Move the run's notebook into place as ``<id>.ipynb`` and, for a lesson with solutions, split it into that
    and the executed instructor copy (:func:`~.instructor.split_executed`); a failing or "not yet" solution makes
    the lesson ``failed`` (failure ``solution``). Removes the working files."""
    import nbformat

    if running.is_file():
        nb = nbformat.read(str(running), as_version=4)
        nb.metadata.get("papermill", {}).update(input_path=task["notebook"], output_path=f"{task['id']}.ipynb")
        if task.get("solutions"):
            nb = _split_instructor_copy(task, nb, result)
        executed = Path(task["out"]) / f"{task['id']}.ipynb"
        write_text_atomic(executed, nbformat.writes(nb))
        result.notebook = executed
    for path in _working_files(task):
        path.unlink(missing_ok=True)


def _split_instructor_copy(task: Mapping[str, Any], nb: Any, result: LessonResult) -> Any:
    """Write the executed instructor copy of ``nb`` (the whole run) and return the student's executed notebook."""
    import nbformat

    cell = result.failing_cell
    failed_in_solution = cell is not None and APPENDED_TAG in _tags_at(nb, cell.executed_index)
    if failed_in_solution:  # the student's part ran to its end: no papermill error banner in the student's copy
        nb.cells = [c for c in nb.cells if ERROR_MARKER_TAG not in cell_tags(c)]
    wrong = sorted({key for key, verdict in check_verdicts(nb, appended=True) if verdict != "right"})
    student, instructor = split_executed(nb, task["solutions"])
    path = _instructor_path(task)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, nbformat.writes(instructor))
    result.instructor = path
    copy_name = f"instructor/{path.name}"
    if failed_in_solution and result.failure == "raised":
        result.failure, result.failing_cell = "solution", None
        result.error = f"a solution in {copy_name} raised{cell.where()} -> {cell.ename}: {cell.evalue}"
    elif failed_in_solution:  # interrupted, timed out, kernel died: the kind stays; say where it happened
        result.failing_cell = None
        result.error = f"{result.error} (in a solution cell of {copy_name})"
    elif wrong and result.status == "ok":
        result.status, result.failure = "failed", "solution"
        result.error = f"the solution of exercise {', '.join(wrong)} does not pass its check ({copy_name}: 'not yet')"
    return student


def _tags_at(nb: Any, executed_index: int) -> list[str]:
    """The tags of the cell at ``executed_index`` (counted as :func:`~.failures.find_failing_cell` counts: without
    papermill's error-banner cells)."""
    cells = [c for c in nb.cells if ERROR_MARKER_TAG not in cell_tags(c)]
    return cell_tags(cells[executed_index]) if 0 <= executed_index < len(cells) else []
