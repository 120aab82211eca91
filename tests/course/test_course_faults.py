"""Fault injection into the course runner (dro_course.run_course and ``dro-course run``).

One small fixture course holds a lesson that passes, one that raises (``failing.ipynb``), one whose
cell sleeps past the timeout (``slow.ipynb``) and one whose kernel is killed (``killed.ipynb``); it
runs once with two jobs and the tests read that run. The runner itself is interrupted in a
subprocess (SIGINT, SIGTERM) while ``sleepy.ipynb`` sleeps, and the next run resumes. Two real lessons
get an invalid parameter through papermill (marked ``notebook``). In every case nothing may be written
outside the output folder: the course's own folder, the working directory and the repository's
``notebooks/`` are compared before and after.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import nbformat
import pytest

import dro_course as course
from dro_course import FAILURE_KINDS, LessonResult, RunInterrupted, check_parameter, load_syllabus, run_course
from dro_course.cli import main
from dro_course.runner import run as course_runner
from dro_course.runner.control import _Cancelled

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NOTEBOOKS = REPO / "notebooks"

FAULT_SYLLABUS = """\
title: Fault course
lessons:
  - {id: passing, title: A passing lesson, notebook: src/passing.ipynb}
  - {id: raises, title: A lesson that raises, notebook: src/failing.ipynb}
  - {id: times_out, title: A lesson that times out, notebook: src/slow.ipynb}
  - {id: killed, title: A lesson whose kernel dies, notebook: src/killed.ipynb}
"""

RESUME_SYLLABUS = """\
title: Interrupted course
lessons:
  - {id: minimal, title: A quick lesson, notebook: src/minimal.ipynb}
  - {id: sleepy, title: A slow lesson, notebook: src/sleepy.ipynb}
"""

# seconds per cell: slow.ipynb sleeps 60; the others' slowest cell (passing.ipynb's `import plotly`) takes about a
# second, and several under load on 2 cores (at 3 s the passing lesson timed out on a busy machine)
TIMEOUT = 12


def make_course(root: Path, text: str) -> Path:
    (root / "src").mkdir(parents=True, exist_ok=True)
    for notebook in FIXTURES.glob("*.ipynb"):
        shutil.copy(notebook, root / "src" / notebook.name)
    (root / "course").mkdir(exist_ok=True)
    (root / "course" / "syllabus.yaml").write_text(text, encoding="utf-8")
    (root / "cwd").mkdir()  # the working directory of the run: must stay empty
    return root / "course" / "syllabus.yaml"


def snapshot(root: Path, exclude: Path | None = None) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``root`` except under ``exclude``: path -> (size, mtime_ns)."""
    return {
        str(p.relative_to(root)): (p.stat().st_size if p.is_file() else -1, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if exclude is None or (p != exclude and exclude not in p.parents)
    }


def no_tmp_files(out: Path) -> list[str]:
    return [p.name for p in out.rglob("*") if p.name.endswith(".tmp")]


# --------------------------------------------------------------------------------------------
# One run with three faults, shared by the tests below
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fault_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults")
    syllabus = make_course(root, FAULT_SYLLABUS)
    out = root / "out"
    before, notebooks_before = snapshot(root, exclude=out), snapshot(NOTEBOOKS)
    replaced: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(src, dst, *args, **kwargs):
        replaced.append((str(src), str(dst)))
        return real_replace(src, dst, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root / "cwd")
        mp.setattr(os, "replace", spy)  # every atomic write goes through os.replace
        start = time.perf_counter()
        results = run_course(syllabus, out=out, jobs=2, timeout=TIMEOUT, html=True)
        seconds = time.perf_counter() - start
    return types.SimpleNamespace(
        root=root,
        out=out,
        results={r.id: r for r in results},
        before=before,
        after=snapshot(root, exclude=out),
        notebooks_before=notebooks_before,
        notebooks_after=snapshot(NOTEBOOKS),
        replaced=replaced,
        seconds=seconds,
    )


def summaries(out: Path) -> tuple[str, dict, str]:
    return (
        (out / "summary.md").read_text(encoding="utf-8"),
        json.loads((out / "summary.json").read_text(encoding="utf-8")),
        (out / "index.html").read_text(encoding="utf-8"),
    )


@pytest.mark.notebook
def test_each_fault_is_its_own_failure(fault_run):
    r = fault_run.results
    assert {k: v.status for k, v in r.items()} == {
        "passing": "ok",
        "raises": "failed",
        "times_out": "failed",
        "killed": "failed",
    }
    assert {k: v.failure for k, v in r.items()} == {
        "passing": None,
        "raises": "raised",
        "times_out": "timed out",
        "killed": "kernel died",
    }
    assert set(FAILURE_KINDS) >= {"raised", "timed out", "kernel died", "interrupted"}
    # the runner must not wait for the 60 s sleep: the timeout stops it
    assert fault_run.seconds < 55, fault_run.seconds


@pytest.mark.notebook
def test_a_raising_cell_is_named(fault_run):
    raised = fault_run.results["raises"]
    assert raised.failing_cell.index == 2
    assert raised.failing_cell.first_line == 'raise ValueError("deliberate failure in the third cell")'
    assert raised.error == "ValueError: deliberate failure in the third cell"
    assert raised.problem.startswith("raised: cell 2 ")


@pytest.mark.notebook
def test_a_timeout_names_the_limit_and_the_cell(fault_run):
    timed = fault_run.results["times_out"]
    assert timed.failing_cell.index == 1 and timed.failing_cell.first_line == "import time"
    assert timed.failing_cell.ename == "CellTimeoutError"
    assert timed.error.startswith(f"timed out after {TIMEOUT} s in cell 1, line 3 (`time.sleep(60)")
    assert timed.seconds < 55  # the 60 s sleep was cut short


@pytest.mark.notebook
def test_a_dead_kernel_names_the_cell(fault_run):
    killed = fault_run.results["killed"]
    assert killed.failing_cell is not None and killed.failing_cell.index == 2
    assert killed.failing_cell.first_line == "import os, signal"
    assert killed.failing_cell.ename == "DeadKernelError"
    assert killed.error.startswith("kernel died in cell 2 (`import os, signal`)")
    # the cells before the kill ran, the one after did not
    nb = nbformat.read(str(fault_run.out / "killed.ipynb"), as_version=4)
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "before the kill" in printed and "never reached" not in printed


@pytest.mark.notebook
def test_the_other_lessons_keep_their_outputs(fault_run):
    out = fault_run.out
    passing = fault_run.results["passing"]
    page = out / "site" / "notebooks" / "passing.html"  # its page in the run's course website
    assert passing.records["greeting"] == "hello" and passing.html == page and page.stat().st_size > 0
    for name in ("passing.ipynb", "passing.record.json", "passing.log", "passing.run.json"):
        assert (out / name).stat().st_size > 0, name
    assert json.loads((out / "passing.run.json").read_text(encoding="utf-8"))["status"] == "ok"
    for lesson, failure in (("raises", "raised"), ("times_out", "timed out"), ("killed", "kernel died")):
        stored = json.loads((out / f"{lesson}.run.json").read_text(encoding="utf-8"))
        assert (stored["status"], stored["failure"]) == ("failed", failure)
        assert (out / f"{lesson}.ipynb").is_file()  # partial, kept, and shown on the site
        page = fault_run.results[lesson].html
        assert page.parent == out / "site" / "notebooks" and page.is_file()


@pytest.mark.notebook
def test_summaries_name_kind_cell_and_message(fault_run):
    md, data, page = summaries(fault_run.out)
    assert data["ok"] is False and data["interrupted"] is None
    assert data["counts"] == {"ok": 1, "cached": 0, "failed": 3, "skipped": 0}
    by_id = {lesson["id"]: lesson for lesson in data["lessons"]}
    assert by_id["raises"]["failure"] == "raised" and by_id["raises"]["failing_cell"]["index"] == 2
    assert by_id["times_out"]["failure"] == "timed out" and by_id["times_out"]["failing_cell"]["index"] == 1
    assert by_id["killed"]["failure"] == "kernel died" and by_id["killed"]["failing_cell"]["index"] == 2
    assert by_id["passing"]["failure"] is None
    for needle in (
        "raised: cell 2",
        "deliberate failure in the third cell",
        f"timed out after {TIMEOUT} s in cell 1, line 3 (`time.sleep(60)",
        "kernel died in cell 2 (`import os, signal`)",
    ):
        assert needle in md, needle
        assert needle.replace("`", "") in page.replace("`", "") or needle in page, needle
    assert "## Failures" in md and "- **killed** (kernel died):" in md


@pytest.mark.notebook
def test_records_and_summaries_are_written_atomically(fault_run):
    out = fault_run.out
    targets = {Path(dst).name: Path(src) for src, dst in fault_run.replaced if Path(dst).parent == out}
    for name in (
        "summary.md",
        "summary.json",
        "index.html",
        "passing.run.json",
        "raises.run.json",
        "times_out.run.json",
        "killed.run.json",
    ):
        assert name in targets, f"{name} was not written through os.replace"
        assert targets[name].parent == out and targets[name].name.endswith(".tmp")
    assert no_tmp_files(out) == []


@pytest.mark.notebook
def test_nothing_is_written_outside_out(fault_run):
    assert fault_run.after == fault_run.before  # sources, syllabus and the working directory
    assert fault_run.notebooks_after == fault_run.notebooks_before
    assert not any((fault_run.root / "cwd").iterdir())
    for name in ("passing.ipynb", "failing.ipynb", "slow.ipynb", "killed.ipynb"):
        assert (fault_run.root / "src" / name).read_bytes() == (FIXTURES / name).read_bytes()


@pytest.mark.notebook
def test_cli_exit_status_1_on_failure_and_2_on_usage_errors(tmp_path, capsys, monkeypatch):
    syllabus = make_course(tmp_path, FAULT_SYLLABUS)
    monkeypatch.chdir(tmp_path / "cwd")
    out = tmp_path / "out"
    base = ["run", "--syllabus", str(syllabus), "--out", str(out), "--no-html"]
    assert main(base + ["--only", "raises", "--timeout", "60"]) == 1
    err = capsys.readouterr().err
    assert "[failed] raises in" in err and "raised: cell 2" in err
    for bad in (["--jobs", "0"], ["--only", "nope"], ["--timeout", "-1"], ["--preset", "huge"], ["-p", "nope", "1"]):
        assert main(base + bad) == 2, bad
        assert "error:" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(base + ["--jobs", "two"])
    assert info.value.code == 2
    assert not any((tmp_path / "cwd").iterdir())


# --------------------------------------------------------------------------------------------
# The runner itself interrupted
# --------------------------------------------------------------------------------------------


def _lesson_processes(out: Path) -> list[int]:
    """Live papermill processes and kernels of a run into ``out`` (the kernels by DRO_LAB_RECORD)."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        try:
            if process.info["pid"] == os.getpid() or process.status() == psutil.STATUS_ZOMBIE:
                continue
            if str(out) in " ".join(process.info["cmdline"] or []) or str(out) in process.environ().get(
                course.RECORD_ENV, ""
            ):
                found.append(process.info["pid"])
        except (psutil.Error, OSError):
            continue
    return found


def _wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _sleep_cell_running(executed: Path) -> bool:
    try:
        nb = json.loads(executed.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(
        c.get("metadata", {}).get("papermill", {}).get("status") == "running"
        and "time.sleep" in "".join(c.get("source", ""))
        for c in nb.get("cells", [])
    )


@pytest.mark.notebook
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_run_keeps_finished_lessons_and_resumes(tmp_path, signum):
    pytest.importorskip("psutil")
    syllabus = make_course(tmp_path, RESUME_SYLLABUS)
    out = tmp_path / "out"
    before, notebooks_before = snapshot(tmp_path, exclude=out), snapshot(NOTEBOOKS)
    command = [
        sys.executable,
        "-m",
        "dro_course.cli",
        "run",
        "--syllabus",
        str(syllabus),
        "--out",
        str(out),
        "--jobs",
        "2",
        "--timeout",
        "120",
        "--no-html",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    runner = subprocess.Popen(
        command + ["-p", "seconds", "120"],
        cwd=tmp_path / "cwd",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(
            lambda: (out / "minimal.run.json").is_file() and _sleep_cell_running(out / ".sleepy.running.ipynb"),
            60,
            "the quick lesson to finish and the slow one to sleep",
        )
        runner.send_signal(signum)
        stdout, stderr = runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    assert runner.returncode == 128 + signum, (runner.returncode, stderr)
    assert f"interrupted by {signal.Signals(signum).name}" in stderr and "run the same command again" in stderr
    assert "[failed] sleepy" in stderr and "interrupted" in stderr

    # The run stopped its papermill process and kernel.
    _wait_for(lambda: not _lesson_processes(out), 10, "the lesson processes to end")

    # The finished lesson and the records are valid; the half-run lesson is not ok.
    assert json.loads((out / "minimal.run.json").read_text(encoding="utf-8"))["status"] == "ok"
    nbformat.read(str(out / "minimal.ipynb"), as_version=4)
    stored = json.loads((out / "sleepy.run.json").read_text(encoding="utf-8"))
    assert (stored["status"], stored["failure"]) == ("failed", "interrupted")
    md, data, page = summaries(out)
    assert data["interrupted"] == signal.Signals(signum).name and data["ok"] is False
    by_id = {lesson["id"]: lesson for lesson in data["lessons"]}
    assert by_id["minimal"]["status"] == "ok"
    assert (by_id["sleepy"]["status"], by_id["sleepy"]["failure"]) == ("failed", "interrupted")
    assert by_id["sleepy"]["failing_cell"]["index"] == 1
    assert "interrupted" in md and "interrupted" in page and "sleepy" in md
    assert no_tmp_files(out) == []
    assert snapshot(tmp_path, exclude=out) == before and snapshot(NOTEBOOKS) == notebooks_before

    if signum != signal.SIGINT:
        return  # resume is the same after either signal; run it once
    # Resume: the finished lesson is reused, the interrupted one runs (now quickly) and the run succeeds.
    minimal_state = (out / "minimal.ipynb").stat().st_mtime_ns
    again = subprocess.run(
        command + ["-p", "seconds", "0", "--resume"],
        cwd=tmp_path / "cwd",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert "[cached] minimal" in again.stderr and "[ok] sleepy" in again.stderr
    assert (out / "minimal.ipynb").stat().st_mtime_ns == minimal_state
    _, data, _ = summaries(out)
    assert data["ok"] is True and data["interrupted"] is None
    assert {lesson["id"]: lesson["status"] for lesson in data["lessons"]} == {"minimal": "cached", "sleepy": "ok"}
    assert snapshot(tmp_path, exclude=out) == before


@pytest.mark.notebook
def test_run_interrupted_in_process_marks_unstarted_lessons(tmp_path, monkeypatch):
    """The API path: a KeyboardInterrupt in the calling thread (here raised by on_result, as a Ctrl-C
    would arrive) writes the summary and raises RunInterrupted; a lesson not started is skipped."""
    syllabus = make_course(tmp_path, RESUME_SYLLABUS)
    out = tmp_path / "out"

    def fake_execute(task, control):
        if task["id"] == "minimal":
            return LessonResult(id="minimal", title=task["title"], status="ok")
        control.cancel.wait(30)  # "sleepy" would start only after the interrupt: it never does
        raise _Cancelled()

    def on_result(result):
        if result.id == "minimal":
            raise KeyboardInterrupt

    monkeypatch.setattr(course_runner, "_execute_lesson", fake_execute)
    with pytest.raises(RunInterrupted) as info:
        run_course(syllabus, out=out, jobs=1, html=False, on_result=on_result)
    assert info.value.signum == signal.SIGINT and isinstance(info.value, KeyboardInterrupt)
    statuses = {r.id: (r.status, r.error) for r in info.value.results}
    assert statuses == {"minimal": ("ok", None), "sleepy": ("skipped", "not started: the run was interrupted")}
    data = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert data["interrupted"] == "SIGINT" and data["ok"] is False
    assert "not started: the run was interrupted" in (out / "summary.md").read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------
# Parameter checks
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        (
            ("preset", "huge"),
            {"choices": ("smoke", "full", "gpu")},
            "preset='huge': expected one of 'smoke', 'full', 'gpu'",
        ),
        (("seed", "x", "int"), {"low": 0}, "seed='x': expected an integer ≥ 0"),
        (("seed", True, "int"), {"low": 0}, "seed=True: expected an integer"),
        (("device", 3, "str"), {}, "device=3: expected a string"),
        (("beta", -1.0, "number"), {"low": 0, "low_open": True}, "beta=-1.0: expected a number > 0"),
        (("cvar_alpha", 0, "number"), {"low": 0, "high": 1, "low_open": True}, "expected a number in (0, 1]"),
        (("beta", float("inf"), "number"), {"low": 0}, "beta=inf: expected a number ≥ 0"),
        (("epochs", 0, "int"), {"low": 1, "none_ok": True}, "epochs=0: expected an integer ≥ 1 or None"),
        (("dataset", "cifar"), {"choices": ("digits", "mnist")}, "dataset='cifar': expected one of 'digits', 'mnist'"),
        (("betas", [1, -1], "number"), {"low": 0, "low_open": True, "each": True}, "(item 1 is -1)"),
        (("betas", [], "number"), {"each": True}, "expected a non-empty list of numbers"),
        (("flag", 1), {"choices": (True, False)}, "flag=1: expected one of True, False"),
    ],
)
def test_check_parameter_rejects(args, kwargs, message):
    with pytest.raises(ValueError, match="Invalid parameter") as info:
        check_parameter(*args, **kwargs)
    assert message in str(info.value)


def test_check_parameter_accepts_and_returns():
    assert check_parameter("preset", "smoke", choices=("smoke", "full", "gpu")) == "smoke"
    assert check_parameter("epochs", None, "int", low=1, none_ok=True) is None
    assert check_parameter("alpha", 1, "number", low=0, high=1, low_open=True) == 1
    assert check_parameter("betas", (0.1, 10), "number", low=0, low_open=True, each=True) == (0.1, 10)
    with pytest.raises(ValueError, match=r"invalid check of x: kind must be one of 'int', 'number', 'str', 'bool'"):
        check_parameter("x", 1, "integer")


LESSONS = sorted(NOTEBOOKS.glob("0*.ipynb"))


def _imports_only(source):
    """A cell of imports alone may sit between the parameters and the set-up call."""
    lines = [line for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return bool(lines) and all(line.startswith(("import ", "from ")) or line.startswith((" ", ")")) for line in lines)


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_lesson_checks_its_parameters_right_after_them(path):
    """Static: one parameters cell; the next code cell (after an optional cell of imports) makes the one set-up
    call with the lesson's id (no checks of its own), and the syllabus checks every parameter the notebook declares."""
    nb = nbformat.read(str(path), as_version=4)
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    check = next(c for c in nb.cells[tagged[0] + 1 :] if c.cell_type == "code" and not _imports_only(c.source))
    assert f'setup_lesson("{path.stem}", globals()' in check.source
    for copied in ("check_parameter(", "PRESETS", "DRO_LAB_PRESET", "resolve_device(", "def _positive", "def _int"):
        assert copied not in check.source, f"{path.name}: `{copied}` belongs to setup_lesson and the syllabus"
    lesson = load_syllabus(REPO / "course" / "syllabus.yaml", check_notebooks=False).lesson(path.stem)
    missing = sorted(course.notebook_parameters(path) - set(lesson.checks) - {"preset"})
    assert not missing, f"{path.name}: parameters without a check in course/syllabus.yaml: {missing}"
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), f"{path.name} has outputs"


def test_invalid_parameters_stop_the_run_before_any_kernel_starts(tmp_path, capsys):
    """A value the syllabus's check refuses stops ``run_course`` (and ``dro-course run``, exit 2) with the
    lesson's own message, before an output folder or a kernel exists; every value of a sweep is checked first."""
    syllabus = load_syllabus(REPO / "course" / "syllabus.yaml", check_notebooks=False)
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"Invalid parameter radius=-1\.0.*lesson 00_welcome"):
        run_course(syllabus, out=out, only=["00"], html=False, parameters={"radius": -1.0})
    argv = ["run", "--only", "02", "--no-html", "--out", str(out)]
    assert main([*argv, "-p", "beta", "abc"]) == 2
    assert "Invalid parameter beta='abc'" in capsys.readouterr().err
    assert main([*argv, "--sweep", "beta=1,0"]) == 2  # β = 0 is refused before β = 1 runs
    assert "Invalid parameter beta=0" in capsys.readouterr().err
    assert not out.exists()
    # a device this machine lacks: refused for a run here, left to the workers of a Dask cluster
    lesson = syllabus.lesson("02")
    with pytest.raises(ValueError, match=r"Invalid parameter device='cuda:99'.*lesson 02_"):
        course.check_lesson_parameters(lesson, "smoke", {"device": "cuda:99"})
    course.check_lesson_parameters(lesson, "smoke", {"device": "cuda:99"}, device_here=False)


def test_choices_known_only_at_run_time_are_checked_in_the_lesson():
    """Lesson 07 narrows `methods` to its study's registry when it runs (``setup_lesson(..., choices=...)``): a
    name outside it stops the set-up cell with the lesson's message. The namespace is the lesson's parameters cell."""
    from dro_course.lessons.comparison import METHODS

    lesson = load_syllabus(REPO / "course" / "syllabus.yaml", check_notebooks=False).lesson("07")
    nb = nbformat.read(str(lesson.notebook), as_version=4)
    namespace: dict = {}
    exec(next(c.source for c in nb.cells if "parameters" in c.metadata.get("tags", [])), namespace)
    namespace["methods"] = ["ERM", "NOPE"]
    with pytest.raises(ValueError, match="Invalid parameter methods=.*'NOPE'"):
        course.setup_lesson(lesson.id, namespace, choices={"methods": list(METHODS)})
