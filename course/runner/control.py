"""The papermill processes of a run and how an interrupt stops them: :class:`RunInterrupted` and the
private run control that launches, tracks and stops each lesson's papermill and kernel."""

from __future__ import annotations

import contextlib
import math
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dro_course.results import LessonResult

#: Seconds between two papermill launches of this process. jupyter_client chooses a kernel's ports by
#: binding and releasing them, so kernels started at the same moment can pick the same ports and
#: lose messages (a hang until the cell timeout; papermill issue #511). Spacing the launches lets
#: each kernel bind its ports before the next one chooses.
_LAUNCH_GAP = 2.0
_launch_lock = threading.Lock()
_last_launch = [-math.inf]
#: Seconds a stopped papermill process and its kernel get to exit after SIGTERM before SIGKILL.
_STOP_GRACE = 3.0


class _Cancelled(Exception):
    """The run was interrupted before this lesson started."""


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C (SIGINT) or, from ``dro-lab``, SIGTERM/SIGHUP.

    Raised by :func:`~dro_course.run_course` and :func:`~dro_course.run_sweep` after they have
    stopped the running lessons' papermill processes and kernels, marked those lessons ``failed``
    (failure ``interrupted``; their ``<id>.run.json`` says so, so resume runs them again), reported the
    lessons that had not started as ``skipped`` and written the summary. Finished lessons keep their
    outputs; run again to resume.

    Attributes:
        results: one :class:`~.results.LessonResult` per lesson (per syllabus lesson for ``run_course``).
        signum: the signal that stopped the run (``signal.SIGINT`` for Ctrl-C).
    """

    def __init__(self, results: Sequence[LessonResult] = (), signum: int = signal.SIGINT):
        super().__init__(f"run interrupted by {signal.Signals(signum).name}")
        self.results = list(results)
        self.signum = int(signum)


def _kernels_of(processes: list[subprocess.Popen]) -> list[Any]:
    """The descendants (kernels) of ``processes``, as psutil processes; [] without psutil."""
    try:
        import psutil
    except ImportError:  # ipykernel depends on psutil; without it, stop papermill only (its
        return []  # kernel notices that its parent is gone and exits)
    descendants: list[Any] = []
    for process in processes:
        try:
            descendants += psutil.Process(process.pid).children(recursive=True)
        except psutil.Error:
            pass
    return descendants


class _RunControl:
    """The papermill processes of one run, so that an interrupt can stop them (and their kernels)."""

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self._lock = threading.Lock()
        self._processes: set[subprocess.Popen] = set()

    def launch(self, command: list[str], **kwargs: Any) -> subprocess.Popen:
        with _launch_lock:
            wait = _last_launch[0] + _LAUNCH_GAP - time.monotonic()
            if wait > 0:
                self.cancel.wait(wait)
            with self._lock:
                if self.cancel.is_set():
                    raise _Cancelled()
                # Its own session: a Ctrl-C in the terminal reaches the runner only, which then stops
                # each lesson in order (papermill, then its kernel) and records what happened.
                process = subprocess.Popen(command, start_new_session=True, **kwargs)
                self._processes.add(process)
            _last_launch[0] = time.monotonic()
        return process

    def forget(self, process: subprocess.Popen) -> None:
        with self._lock:
            self._processes.discard(process)

    def stop_all(self) -> None:
        """Set the cancel flag; SIGTERM every running papermill and its kernel, SIGKILL after a grace."""
        self.cancel.set()
        with self._lock:
            processes = [p for p in self._processes if p.poll() is None]
        victims = [*processes, *_kernels_of(processes)]
        for victim in victims:
            try:
                victim.terminate()
            except Exception:
                pass
        deadline = time.monotonic() + _STOP_GRACE
        # Popen.wait for our own children (only it may reap them: their exit status tells the worker
        # thread what happened), psutil's wait for the kernels (not our children).
        for victim in victims:
            try:
                victim.wait(max(0.01, deadline - time.monotonic()))
            except Exception:
                try:
                    victim.kill()
                except Exception:
                    pass


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """While the runner stops its lessons (a few seconds at most), further SIGINT/SIGTERM/SIGHUP are
    ignored, so that pressing Ctrl-C twice cannot orphan a kernel. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            try:
                previous[number] = signal.signal(number, signal.SIG_IGN)
            except (ValueError, OSError):
                pass
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)
