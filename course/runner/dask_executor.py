"""The course's lessons on a Dask cluster: ``run_course(..., executor="dask", scheduler=ADDRESS)``.

Each (lesson, parameter value) papermill job is one Dask task. The client decides resume first (a
lesson that an earlier run in ``out`` can stand for never goes to the cluster), then submits the rest
to a ``dask.distributed`` cluster: the one at ``scheduler`` (``tcp://host:8786``), or, when it is None,
a ``LocalCluster`` that the run starts and closes (``jobs`` worker processes of one thread each).

Workers need no shared disk. A task carries the notebook's bytes and the syllabus the lesson's kernel
would find (``setup_lesson`` reads it from the notebook's folder upwards); the worker writes both into
a temporary folder of its own, in the same layout, runs papermill there (``--cwd`` = that folder;
the lessons read nothing else relative to it: data come from absolute paths and the package) and
sends back the executed notebook, ``<id>.record.json`` and ``<id>.log`` as bytes with the
:class:`~.results.LessonResult`. The client writes them under ``out``, points the result at them and
writes ``<id>.run.json`` exactly as a local run does, so either executor resumes the other's runs.
Anything else a lesson writes in its folder is dropped with the worker's temporary folder.

The workers must have the client's dro_lab (same version and source: a task checks, and fails with a
clear message otherwise), the lessons' dependencies and data, and a Jupyter kernel. Start them with
one thread each (``dask worker ADDRESS --nthreads 1``) so that each runs one lesson at a time.

Interrupts (Ctrl-C, or SIGTERM/SIGHUP through ``dro-lab``): the client sets a stop event named for the
run on the scheduler. Lessons not started yet are cancelled: a task taken up after the event returns
at once without launching papermill (reported ``skipped``, "not started"). A running lesson's worker
sees the event within :data:`_POLL` seconds and stops its papermill process and kernel as a local run
does (SIGTERM, SIGKILL after a grace); the lesson comes back ``failed`` (``interrupted``) with its
partial notebook. The client waits up to :data:`_REPORT_WAIT` seconds for those reports; a lesson
that does not report back in time is ``failed`` (``interrupted``) without files.

A worker that dies mid-lesson takes its papermill process with it (a parent-death signal on Linux; the
kernel exits with its papermill). The client runs that lesson again, once (:data:`_ATTEMPTS`; see
:meth:`_Lessons.settle` for why the client and not Dask's ``allowed-failures``): its result has
``attempts=2`` and the seconds of both attempts, the summary says it was retried after its worker died.
A lesson whose worker dies on the second attempt too is ``failed`` (``killed``). A lesson that fails by
itself (a cell raised or timed out, its kernel died) is never run again; the other lessons run on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from dro_course._files import library_sha256
from dro_course.results import LessonResult
from dro_course.runner.control import _LAUNCH_GAP, RunInterrupted, _Cancelled, _interrupts_deferred, _RunControl
from dro_course.runner.execute import _execute_lesson, _write_run_record
from dro_course.runner.tasks import _not_started, _report_cached, _share_cores
from dro_course.syllabus import SYLLABUS_RELPATH, find_syllabus
from dro_lab import __version__
from dro_lab._files import atomic_write_bytes

#: The executors of :func:`~.runner.run_course`: the local thread pool (the default) or a Dask cluster.
EXECUTORS = ("local", "dask")
#: Seconds between a worker's looks at its run's stop event while a lesson runs.
_POLL = 0.5
#: Seconds the client waits, after an interrupt, for the running lessons to report back.
_REPORT_WAIT = 30.0
#: How many times a lesson is started at most: a second time only when its worker died mid-lesson.
_ATTEMPTS = 2
_INSTALL = 'pip install "dro-lab[dask]"'
_FOLDER_PREFIX = "dro-lab-lesson-"  # a worker's temporary folder for one lesson: <prefix><worker pid>-<random>
_RUNS = "dro-lab-runs"  # the scheduler's metadata of the runs: run -> task key -> {"worker": address, "seconds": ...}
_ADDRESS = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://)?[^\s/][^\s]*$")
#: Run by the papermill process of a worker's lesson before papermill itself (``os.execv``, same pid):
#: Linux then kills it when the worker dies (it would run on, orphaned), and its Jupyter kernel follows
#: (ipykernel exits when its parent does).
_DIE_WITH_WORKER = (
    "import ctypes, os, signal, sys\n"
    "try:\n"
    "    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG\n"
    "except Exception:\n"
    "    pass  # the lesson runs all the same; only a dying worker would leave it orphaned\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(1)  # the worker died before the line above\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


# --------------------------------------------------------------------------------------------
# Arguments
# --------------------------------------------------------------------------------------------


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise ModuleNotFoundError(
            f"executor='dask' needs dask.distributed, which is not installed here: {_INSTALL}", name="distributed"
        ) from exc
    return distributed


def check_executor(executor: str, scheduler: str | None) -> None:
    """Check ``executor`` (one of :data:`EXECUTORS`) and ``scheduler`` (None, or a Dask scheduler address
    such as ``tcp://host:8786``, only with ``executor="dask"``); for ``"dask"``, that Dask is installed.

    Raises:
        TypeError: ``executor`` not a string, ``scheduler`` neither None nor a string.
        ValueError: an unknown executor, a scheduler with the local executor, an address with blanks.
        ModuleNotFoundError: ``executor="dask"`` without ``dask[distributed]`` (the message says what to install).
    """
    if not isinstance(executor, str):
        raise TypeError(f"executor must be a string, one of {EXECUTORS}, got {type(executor).__name__}")
    if executor not in EXECUTORS:
        raise ValueError(f"Invalid executor: {executor!r} (expected one of {', '.join(map(repr, EXECUTORS))})")
    if scheduler is not None:
        if not isinstance(scheduler, str):
            raise TypeError(f"scheduler must be None or an address string, got {type(scheduler).__name__}")
        if executor != "dask":
            raise ValueError(f"A scheduler address ({scheduler!r}) needs executor='dask' (--executor dask)")
        if not _ADDRESS.match(scheduler) or scheduler.endswith("://"):
            raise ValueError(f"Invalid scheduler address: {scheduler!r} (expected e.g. 'tcp://host:8786')")
    if executor == "dask":
        _import_distributed()


# --------------------------------------------------------------------------------------------
# On the worker
# --------------------------------------------------------------------------------------------


def dask_setup(worker: Any) -> None:
    """Dask's preload hook, run by each worker process of the ``LocalCluster`` that a run starts.

    Those processes share the terminal's process group, so a Ctrl-C reaches them too; they ignore it
    and the client stops the run (it sets the stop event, and each worker stops its own lesson).
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


class _WorkerControl(_RunControl):
    """A worker's run control: its papermill processes die with the worker, and papermill launches on
    one host are spaced as in one local run (:data:`~.control._LAUNCH_GAP`; the workers of a host are
    separate processes, so the spacing goes through a Dask lock and the scheduler's metadata)."""

    def __init__(self, client: Any) -> None:
        super().__init__()
        self._client = client
        self._launched: float | None = None  # perf_counter at the papermill launch

    def keep_seconds(self, started: list[str]) -> None:
        """Keep the lesson's seconds so far (since papermill's launch, as its result counts them) in the
        scheduler's metadata at ``started``: what the client counts of an attempt lost with its worker."""
        seconds = 0.0 if self._launched is None else time.perf_counter() - self._launched
        self._client.set_metadata([*started, "seconds"], seconds)

    def launch(self, command: list[str], **kwargs: Any) -> Any:
        import distributed

        host = socket.gethostname()
        last_launch = ["dro-lab", "last-launch", host]
        with distributed.Lock(f"dro-lab-launch-{host}"):  # a task thread: the worker's client
            last = self._client.get_metadata(last_launch, default=None)
            wait = _LAUNCH_GAP - (time.time() - last) if isinstance(last, (int, float)) else 0.0
            if wait > 0:
                self.cancel.wait(min(wait, _LAUNCH_GAP))
            process = super().launch(_dying_with_worker(command), **kwargs)
            self._launched = time.perf_counter()
            self._client.set_metadata(last_launch, time.time())
        return process


def _dying_with_worker(command: list[str]) -> list[str]:
    if not sys.platform.startswith("linux"):
        return command
    return [sys.executable, "-c", _DIE_WITH_WORKER, str(os.getpid()), *command]


def _watch(stop: Any, control: _WorkerControl, started: list[str]) -> threading.Event:
    """A thread that stops ``control``'s lesson when the run's ``stop`` event is set, and meanwhile keeps
    the lesson's seconds in the scheduler's metadata at ``started``; set the returned event when the
    lesson is over."""
    over = threading.Event()

    def watch() -> None:
        while not over.wait(_POLL):
            with contextlib.suppress(Exception):  # a lost heartbeat only shortens a lost attempt's seconds
                control.keep_seconds(started)
            try:
                stopping = stop.is_set()
            except Exception:  # the scheduler is out of reach for now: the lesson goes on
                continue
            if stopping:
                control.stop_all()
                return

    threading.Thread(target=watch, name="dro-lab-stop-watch", daemon=True).start()
    return over


def _check_same_library(client_library: Sequence[str]) -> None:
    here = (__version__, library_sha256())
    if tuple(client_library) != here:
        raise RuntimeError(
            f"dro_lab on worker host {socket.gethostname()} is not the client's (version {here[0]}, source "
            f"SHA-256 {here[1][:12]}; the client has {client_library[0]}, {client_library[1][:12]}): "
            "install the same dro_lab on the workers"
        )


def _unpack(job: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """The job's notebook and syllabus written into ``folder`` (their layout kept); its task, run there."""
    notebook = folder / job["notebook_path"]
    notebook.parent.mkdir(parents=True, exist_ok=True)
    notebook.write_bytes(job["notebook"])
    if job["syllabus"] is not None:
        (folder / SYLLABUS_RELPATH).parent.mkdir(parents=True, exist_ok=True)
        (folder / SYLLABUS_RELPATH).write_bytes(job["syllabus"])
    out = folder / "out"
    out.mkdir()
    return {**job["task"], "notebook": str(notebook), "out": str(out)}


def _read_outputs(task: Mapping[str, Any]) -> dict[str, bytes | None]:
    """What a lesson's run wrote on the worker, as bytes (None: not written): the files :func:`_store` puts back."""
    return {kind: path.read_bytes() if path.is_file() else None for kind, path in _outputs(task).items()}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def _remove_orphans(parent: Path) -> None:
    """The temporary folders of lessons whose worker died (its pid is in the name): a worker killed
    mid-lesson never removes its own."""
    for folder in parent.glob(f"{_FOLDER_PREFIX}*-*"):
        pid = folder.name[len(_FOLDER_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _run_on_worker(job: Mapping[str, Any], run: str) -> dict[str, Any]:
    """The Dask task of one lesson: unless the run was stopped, run it in a temporary folder and return
    ``{"started": True, "result": LessonResult, "files": {kind: bytes | None}, "folder": str}``
    (the folder is gone by then); ``{"started": False}`` for a lesson not started, and
    ``{"started": True, "died": {"worker": address, "seconds": ...}}`` when Dask runs the task again
    after the worker that ran it died: the task does not run the lesson again itself, the client
    decides (:meth:`_Lessons.settle`)."""
    import distributed

    client, worker = distributed.get_client(), distributed.get_worker()
    started = [_RUNS, run, str(worker.get_current_task())]
    died = client.get_metadata(started, default=None)
    if died is not None:
        return {"started": True, "died": died}
    stop = distributed.Event(_stop_event_name(run), client=client)
    if stop.is_set():
        return {"started": False}
    _remove_orphans(Path(tempfile.gettempdir()))
    _check_same_library(job["library"])
    client.set_metadata(started, {"worker": worker.address, "seconds": 0.0})
    with tempfile.TemporaryDirectory(prefix=f"{_FOLDER_PREFIX}{os.getpid()}-") as folder:
        task = _unpack(job, Path(folder))
        control = _WorkerControl(client)
        over = _watch(stop, control, started)
        try:
            result = _execute_lesson(task, control=control)
        except _Cancelled:
            return {"started": False}
        finally:
            over.set()
        return {"started": True, "result": result, "files": _read_outputs(task), "folder": folder}


# --------------------------------------------------------------------------------------------
# On the client
# --------------------------------------------------------------------------------------------


def _stop_event_name(run: str) -> str:
    return f"dro-lab-stop-{run}"


def _syllabus_of(notebook: Path) -> Path | None:
    """The syllabus a lesson's kernel finds (``setup_lesson``: from the notebook's folder upwards)."""
    try:
        return find_syllabus(notebook.parent)
    except FileNotFoundError:
        return None


def _job(task: Mapping[str, Any], library: tuple[str, str], syllabi: dict[Path, Path | None]) -> dict[str, Any]:
    """What travels to the worker: the task, the notebook's and the syllabus's bytes, the client's library."""
    notebook = Path(task["notebook"])
    if notebook.parent not in syllabi:
        syllabi[notebook.parent] = _syllabus_of(notebook)
    syllabus = syllabi[notebook.parent]
    relative = Path(notebook.name)
    if syllabus is not None:
        root = syllabus.parents[len(SYLLABUS_RELPATH.parts) - 1]
        with contextlib.suppress(ValueError):
            relative = notebook.resolve().relative_to(root.resolve())
    return {
        "task": dict(task),
        "notebook_path": relative.as_posix(),
        "notebook": notebook.read_bytes(),
        "syllabus": syllabus.read_bytes() if syllabus is not None else None,
        "library": library,
    }


def _outputs(task: Mapping[str, Any]) -> dict[str, Path]:
    """The files a lesson's run leaves in its ``out`` folder, by kind (the worker's or the client's)."""
    out, lesson_id = Path(task["out"]), task["id"]
    return {
        "ipynb": out / f"{lesson_id}.ipynb",
        "record": out / f"{lesson_id}.record.json",
        "log": out / f"{lesson_id}.log",
        "instructor": out / "instructor" / f"{lesson_id}.ipynb",
    }


@dataclasses.dataclass
class _Lesson:
    """A lesson sent to the cluster: its position in the run, the job that travels to the worker, how many
    times it was submitted and the seconds of its attempts lost with their workers."""

    position: int
    job: dict[str, Any]
    submitted: int = 0
    lost_seconds: list[float] = dataclasses.field(default_factory=list)

    def counted(self, result: LessonResult) -> LessonResult:
        """``result`` of the lesson's last attempt with the attempts counted and the seconds of the lost ones
        added: a lesson run again after its worker died reports the time of both attempts."""
        return dataclasses.replace(
            result, seconds=result.seconds + sum(self.lost_seconds), attempts=max(1, self.submitted)
        )


def _store(
    task: Mapping[str, Any], result: LessonResult, files: Mapping[str, bytes | None], lesson: _Lesson
) -> LessonResult:
    """Write a lesson's returned files under ``out`` (replacing an earlier run's), point ``result`` at them
    and write ``<id>.run.json``; the result with the client's paths and ``lesson``'s attempts counted."""
    paths = _outputs(task)
    for stale in (*paths.values(), Path(task["out"]) / f"{task['id']}.run.json"):
        stale.unlink(missing_ok=True)  # results must come from this run only
    for kind, data in files.items():
        if data is not None:
            paths[kind].parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(paths[kind], data)
    kept = {kind: paths[kind] if files.get(kind) is not None else None for kind in paths}
    result = dataclasses.replace(
        lesson.counted(result),
        notebook=kept["ipynb"],
        html=None,
        record_file=kept["record"],
        log=kept["log"],
        instructor=kept["instructor"],
    )
    _write_run_record(task, result)
    return result


def _failed(task: Mapping[str, Any], failure: str, error: str, lesson: _Lesson) -> LessonResult:
    """A lesson that failed on the cluster without a result of its own; its ``<id>.run.json`` says so."""
    result = LessonResult(
        id=task["id"],
        title=task["title"],
        status="failed",
        parameters=dict(task["parameters"]),
        error=error,
        failure=failure,
    )
    result = lesson.counted(result)
    for stale in _outputs(task).values():
        stale.unlink(missing_ok=True)  # results must come from this run only
    _write_run_record(task, result)
    return result


def _unreported(task: Mapping[str, Any], lesson: _Lesson) -> LessonResult:
    """A lesson that had not reported back when the client stopped waiting after an interrupt."""
    return _failed(
        task,
        "interrupted",
        f"interrupted: the run was stopped and its Dask worker did not report back within {_REPORT_WAIT:.0f} s",
        lesson,
    )


def _state_of(future: Any) -> tuple[str, Any]:
    """A done future of a lesson as (state, value): ``("cancelled", None)``, ``("error", the exception
    its task raised)`` (``KilledWorker`` when Dask gave up on it after worker deaths) or
    ``("finished", its payload)`` (see :func:`_run_on_worker`)."""
    if future.status == "cancelled":
        return "cancelled", None
    if future.status != "finished":
        return "error", future.exception()
    return "finished", future.result()


def _worker_died(state: str, value: Any) -> bool:
    """Whether a lesson's attempt was lost with its worker: Dask ran its task again after the worker died
    (the payload says ``died``) or gave up on it (``KilledWorker``). Never for a lesson that failed by
    itself (a cell raised or timed out, its kernel died): that one comes back with its result."""
    if state == "finished":
        return "died" in value
    return state == "error" and type(value).__name__ == "KilledWorker"


def _result(task: Mapping[str, Any], lesson: _Lesson, state: str, value: Any) -> LessonResult:
    """The result of ``lesson``'s last attempt, settled in ``state`` with ``value`` (:func:`_state_of`)."""
    if _worker_died(state, value):
        again = ", and again when it was run a second time" if len(lesson.lost_seconds) > 1 else ""
        cause = f" ({type(value).__name__}: {value})" if state == "error" else ""
        error = f"its Dask worker died while it ran{again}{cause}; its papermill and kernel went too"
        return _failed(task, "killed", error, lesson)
    if state == "error":  # a library mismatch, a worker's disk full
        return _failed(task, "raised", f"{type(value).__name__} on the Dask worker: {value}", lesson)
    if state == "finished" and value["started"]:
        return _store(task, value["result"], value["files"], lesson)
    if lesson.lost_seconds:  # the run was stopped before the lesson's second attempt started
        error = "interrupted: its Dask worker died while it ran and the run was stopped before it ran again"
        return _failed(task, "interrupted", error, lesson)
    return _not_started(task)


class _Report:
    """The results of a run in task order, each passed to ``on_result`` as it comes."""

    def __init__(self, tasks: Sequence[Mapping[str, Any]], on_result: Callable[[LessonResult], None] | None):
        self.tasks, self.on_result = tasks, on_result
        self.results: list[LessonResult | None] = [None] * len(tasks)

    def __call__(self, position: int, result: LessonResult, *, late: bool = False) -> None:
        self.results[position] = result
        if self.on_result is None:
            return
        if not late:
            self.on_result(result)
            return
        with contextlib.suppress(Exception):  # after an interrupt: report what we can, raise nothing new
            self.on_result(result)

    def final(self) -> list[LessonResult]:
        return [r if r is not None else _not_started(t) for r, t in zip(self.results, self.tasks)]


@contextlib.contextmanager
def _client(distributed: Any, scheduler: str | None, workers: int) -> Iterator[Any]:
    """A client of the cluster at ``scheduler``, or of a ``LocalCluster`` of ``workers`` one-thread worker
    processes (started here, closed on exit)."""
    import dask

    cluster = None
    if scheduler is None:
        # The nanny's default environment (OMP_NUM_THREADS=1 ...) is left out: the kernels see a local run's.
        with dask.config.set({"distributed.nanny.pre-spawn-environ": {}}):
            cluster = distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                memory_limit=0,  # the lessons run in subprocesses: the nanny's memory limit would not see them
                dashboard_address=None,
                silence_logs=logging.ERROR,
                preload=[__name__],  # dask_setup: the workers leave a terminal's Ctrl-C to the client
            )
            client = distributed.Client(cluster, set_as_default=False)
    else:
        try:
            client = distributed.Client(scheduler, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ConnectionError(f"Could not connect to the Dask scheduler at {scheduler!r}: {exc}") from exc
    try:
        yield client
    finally:
        with _interrupts_deferred():
            client.close()
            if cluster is not None:
                cluster.close()


class _Lessons:
    """The lessons of one run on the cluster (run id :attr:`run`, stop event :attr:`stop`): the current
    future of each, and its attempts."""

    def __init__(self, distributed: Any, client: Any, tasks: Sequence[Mapping[str, Any]], report: _Report) -> None:
        self.client, self.tasks, self.report = client, tasks, report
        self.run = uuid.uuid4().hex
        self.stop = distributed.Event(_stop_event_name(self.run), client=client)
        self.futures: dict[Any, _Lesson] = {}

    def submit(self, lesson: _Lesson) -> Any:
        """Submit ``lesson``'s next attempt (a second one goes before the lessons still queued); its future."""
        attempt = lesson.submitted + 1
        key = f"dro-lab-{self.tasks[lesson.position]['id']}-{lesson.position}-{self.run}-{attempt}"
        future = self.client.submit(_run_on_worker, lesson.job, self.run, key=key, pure=False, priority=attempt - 1)
        lesson.submitted, self.futures[future] = attempt, lesson
        return future

    def settle(self, future: Any, again: Callable[[Any], None] | None = None) -> LessonResult | None:
        """The result of a done ``future``, its files written under ``out``; never raises. With ``again``:
        a lesson lost with its worker on its first attempt is submitted again instead (``again`` gets the
        new future) and None is returned.

        Why the client runs it again, not the scheduler (``distributed.scheduler.allowed-failures``): that
        setting belongs to the cluster (a run on a running scheduler cannot set it for itself, and it may
        be 0, or 3 and run a lesson four times); the scheduler also counts a death against a task that was
        only queued on the dying worker, and it would run the lesson again without telling the client that
        it did, or how long the lost attempt ran. So Dask's own re-run of a task that had started returns
        at once (``died``), and the client decides: once, and only for a worker's death; the lost
        attempt's seconds are the last its worker kept in the scheduler's metadata.
        """
        lesson = self.futures[future]
        task = self.tasks[lesson.position]
        try:
            state, value = _state_of(future)
            if _worker_died(state, value):
                lesson.lost_seconds.append(self._lost_seconds(future))
                if again is not None and lesson.submitted < _ATTEMPTS:
                    again(self.submit(lesson))
                    del self.futures[future]
                    return None
            return _result(task, lesson, state, value)
        except Exception as exc:  # e.g. the output folder vanished; report, go on
            result = LessonResult(
                id=task["id"],
                title=task["title"],
                status="failed",
                parameters=dict(task["parameters"]),
                error=f"{type(exc).__name__}: {exc}",
                failure="raised",
            )
            return lesson.counted(result)

    def _lost_seconds(self, future: Any) -> float:
        """How long ``future``'s attempt ran before its worker died (within :data:`_POLL`; 0.0 if it never
        started): the seconds its worker last kept in the scheduler's metadata."""
        kept = self.client.get_metadata([_RUNS, self.run, str(future.key)], default=None)
        seconds = kept.get("seconds") if isinstance(kept, dict) else None
        return float(seconds) if isinstance(seconds, (int, float)) else 0.0


def _stop_and_collect(lessons: _Lessons) -> None:
    """After an interrupt: stop the run's lessons on the cluster and report every submitted lesson."""
    with contextlib.suppress(Exception):  # a scheduler out of reach: its lessons are reported lost below
        lessons.stop.set()
    deadline = time.monotonic() + _REPORT_WAIT
    while not all(future.done() for future in lessons.futures) and time.monotonic() < deadline:
        time.sleep(0.1)
    for future, lesson in list(lessons.futures.items()):
        if lessons.report.results[lesson.position] is not None:
            continue
        task = lessons.tasks[lesson.position]
        result = lessons.settle(future) if future.done() else _unreported(task, lesson)
        lessons.report(lesson.position, result, late=True)


def _submit_and_wait(
    distributed: Any, client: Any, tasks: Sequence[dict[str, Any]], pending: Sequence[int], report: _Report
) -> None:
    lessons = _Lessons(distributed, client, tasks, report)
    library, syllabi = (__version__, library_sha256()), {}
    try:
        for position in pending:
            lessons.submit(_Lesson(position, _job(tasks[position], library, syllabi)))
        done = distributed.as_completed(list(lessons.futures), loop=client.loop)
        for future in done:
            position = lessons.futures[future].position
            result = lessons.settle(future, again=done.add)
            if result is not None:
                report(position, result)
    except KeyboardInterrupt:
        with _interrupts_deferred():  # a second Ctrl-C must not leave lessons running on the cluster
            _stop_and_collect(lessons)
        raise
    except BaseException:  # e.g. on_result raised: no lesson of this run may go on running on the cluster
        with contextlib.suppress(Exception):
            lessons.stop.set()
        raise
    finally:
        with contextlib.suppress(Exception):
            client.set_metadata([_RUNS, lessons.run], None)  # forget which tasks started


def run_tasks_on_dask(
    tasks: Sequence[dict[str, Any]],
    *,
    jobs: int,
    force: bool,
    on_result: Callable[[LessonResult], None] | None,
    scheduler: str | None,
) -> list[LessonResult]:
    """Run ``tasks`` on a Dask cluster (reusing earlier runs unless ``force``); results in task order.

    ``jobs`` is the number of workers of the ``LocalCluster`` started when ``scheduler`` is None; a
    cluster at ``scheduler`` runs as many lessons at once as its workers have threads. On
    KeyboardInterrupt: stops the run's lessons on the cluster (see the module's docstring) and raises
    :class:`~.control.RunInterrupted` with one result per task.
    """
    distributed = _import_distributed()
    report = _Report(tasks, on_result)
    try:
        pending = _report_cached(tasks, force, report)
        if pending:
            workers = min(jobs, len(pending))
            if scheduler is None:
                _share_cores(tasks, pending, workers)
            with _client(distributed, scheduler, workers) as client:
                _submit_and_wait(distributed, client, tasks, pending, report)
    except KeyboardInterrupt as exc:
        raise RunInterrupted(report.final(), signum=getattr(exc, "signum", signal.SIGINT)) from None
    return [r for r in report.results if r is not None]
