"""Suite-wide settings, the markers' meaning, and the one executed course the lesson tests share.

One torch thread: the suite's models are tiny, and on a shared 2-core CI machine two threads per
process oversubscribe the cores (measured 10–50× slower steps for tiny CNNs).

Markers (pyproject.toml lists them; ``make test-fast`` leaves out all but the library's unit tests):

* ``notebook`` — executes notebooks in a Jupyter kernel (a lesson, or a fixture notebook of the course runner's
  tests). Every test that reads the executed lessons gets it from :func:`executed_course` (added here).
* ``browser`` — drives Debian's Chromium; ``freshenv`` — builds a fresh environment (``make test-env``);
  ``ddp`` — starts torchrun processes; ``cuda`` — needs a GPU; ``slow`` — over ~10 s on 2 cores.

The lessons run **once per test session**: :func:`executed_course` runs the whole course (smoke preset, with its
website and its executed instructor copies) the first time a test asks for it and hands every later test the same
folder. Under pytest-xdist the workers share it through a file lock in pytest's shared temporary folder: the first
worker runs the course, the others wait for it and read its ``summary.json``. ``DRO_LAB_TEST_COURSE=<folder>``
names a folder that a course run has filled (``dro-course run --preset smoke --out <folder>``): the tests read
it as that run left it and run nothing (a lesson that failed there fails its test; it is not run again); an empty
or new folder is filled first. ``make test`` runs the course into ``build/test-course`` first, on every core, and
points the suite at it, so that no xdist worker waits with a core idle while another runs the lessons
(pytest-xdist's ``loadgroup``, which would keep those tests on one worker, does not work with pytest 9.2's node
ids).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
COURSE_ENV = "DRO_LAB_TEST_COURSE"


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_as_in_a_terminal():
    """A shell without job control starts background commands (``.ci/run &``, nohup) with SIGINT ignored, and the
    lessons' subprocesses would inherit that: the tests that press Ctrl-C (the course runner's interrupt tests)
    could not. Python's own handler makes Ctrl-C a KeyboardInterrupt here and SIGINT default again in children."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@dataclass(frozen=True)
class ExecutedCourse:
    """The course as one smoke run left it: ``out`` (executed notebooks, instructor copies, site, logs) and
    ``summary.json``'s entry per lesson id."""

    out: Path
    lessons: dict[str, dict]

    def problem(self, lesson_id: str) -> str:
        """Why a lesson is not ok, with the tail of its log (for an assertion message)."""
        entry = self.lessons[lesson_id]
        log = self.out / (entry.get("log") or f"{lesson_id}.log")
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:] if log.is_file() else "(no log)"
        return f"{lesson_id}: {entry['status']}: {entry.get('error')} — log {log}:\n{tail}"


def _shared_folder(tmp_path_factory) -> Path:
    """pytest's temporary folder of this session, the same for every xdist worker."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _run_course_once(out: Path) -> None:
    from dro_course import run_course

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    jobs = max(1, (os.cpu_count() or 1) // workers)  # the other workers go on with their tests meanwhile
    run_course(REPO / "course" / "syllabus.yaml", preset="smoke", out=out, jobs=jobs, timeout=300, instructor=True)


@pytest.fixture(scope="session")
def executed_course(tmp_path_factory) -> ExecutedCourse:
    """The whole course, executed once per session (see the module's notes)."""
    from filelock import FileLock

    shared = _shared_folder(tmp_path_factory)
    chosen = os.environ.get(COURSE_ENV)
    out = Path(chosen).resolve() if chosen else shared / "executed-course"
    done = shared / "executed-course.done"
    with FileLock(str(shared / "executed-course.lock")):
        # a folder a run has already filled is read as that run left it: a lesson that failed there is reported,
        # never run a second time (a flaky lesson must not pass on its second try)
        if not done.is_file() and not (chosen and (out / "summary.json").is_file()):
            _run_course_once(out)
        done.write_text(str(out), encoding="utf-8")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return ExecutedCourse(out, {entry["id"]: entry for entry in summary["lessons"]})


def pytest_collection_modifyitems(config, items):
    """Tests of the executed course are ``notebook`` tests."""
    for item in items:
        if "executed_course" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.notebook)
