"""The course runner's Dask executor: ``run_course(..., executor="dask")`` and ``dro-course run --executor dask``.

The oracle is the local executor: one fixture course (a lesson that passes, one that raises) runs on a
LocalCluster of two workers and with the local thread pool, and the two runs must report the same
statuses, failures, failing cells, records and executed outputs. The workers' temporary folders are
pointed at a folder of the test (``TMPDIR``, which the worker processes inherit) to check that the
lessons ran there and that nothing is left. Resume is checked across executors by counting what is
submitted; interrupts and a killed worker by the processes left (psutil) and the results reported: a
lesson whose worker is killed mid-lesson (``attempts.ipynb`` writes its kernel's pid for the test to find
the worker) runs again once and finishes, one killed on both attempts fails.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import nbformat
import pytest
from _course_util import REPO, make_course, stream_text

from dro_course import RECORD_ENV, RunInterrupted, run_course, run_sweep
from dro_course._files import library_sha256
from dro_course.cli import main
from dro_course.runner import run as course_runner

DASK_SYLLABUS = """\
title: Dask course
lessons:
  - {id: passing, title: A passing lesson, notebook: src/passing.ipynb}
  - {id: raises, title: A lesson that raises, notebook: src/failing.ipynb}
"""

STOP_SYLLABUS = """\
title: Interrupted course
lessons:
  - {id: sleepy_a, title: A slow lesson, notebook: src/sleepy.ipynb}
  - {id: sleepy_b, title: Another slow lesson, notebook: src/sleepy_b.ipynb}
  - {id: minimal, title: A quick lesson, notebook: src/minimal.ipynb}
"""

KILL_SYLLABUS = """\
title: Killed worker
lessons:
  - {id: sleepy, title: A slow lesson, notebook: src/sleepy.ipynb}
  - {id: minimal, title: A quick lesson, notebook: src/minimal.ipynb}
"""

RETRY_SYLLABUS = """\
title: Killed worker
lessons:
  - {id: survivor, title: A lesson whose worker dies, notebook: src/attempts.ipynb}
  - {id: kernel_dies, title: A lesson whose kernel dies, notebook: src/killed.ipynb}
  - {id: minimal, title: A quick lesson, notebook: src/minimal.ipynb}
"""


@pytest.fixture(scope="module")
def distributed():
    return pytest.importorskip("distributed")


@pytest.fixture(autouse=True)
def fresh_library_hash():
    """The client hashes dro_lab's source once a process and each worker checks it has the same source; hash it
    afresh per test, so that an edit of the library during the test session fails no test."""
    library_sha256.cache_clear()


def _course(root: Path, text: str) -> Path:
    syllabus = make_course(root, text)
    shutil.copy(root / "src" / "sleepy.ipynb", root / "src" / "sleepy_b.ipynb")
    (root / "worker-tmp").mkdir()
    return syllabus


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def _comparable(lesson: dict) -> dict:
    """A summary entry without what differs between two runs of the same lesson: time and working folder."""
    records = {k: v for k, v in lesson["records"].items() if k != "cwd"}
    return {**{k: v for k, v in lesson.items() if k != "seconds"}, "records": records}


def _run_record(path: Path) -> dict:
    return {k: v for k, v in json.loads(path.read_text(encoding="utf-8")).items() if k not in ("seconds", "finished")}


def _count_submissions(monkeypatch: pytest.MonkeyPatch, distributed) -> list[str]:
    """The ids of the lessons submitted to Dask from now on, one entry per submission."""
    submitted: list[str] = []
    real_submit = distributed.Client.submit

    def counting_submit(self, fn, job, *args, **kwargs):
        submitted.append(job["task"]["id"])
        return real_submit(self, fn, job, *args, **kwargs)

    monkeypatch.setattr(distributed.Client, "submit", counting_submit)
    return submitted


def _lesson_folders(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.glob("dro-lab-lesson-*"))


def _lesson_processes(tmp: Path) -> list[int]:
    """Live papermill processes and kernels of lessons run from ``tmp`` (both carry DRO_LAB_RECORD)."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            if process.status() != psutil.STATUS_ZOMBIE and str(tmp) in process.environ().get(RECORD_ENV, ""):
                found.append(process.info["pid"])
        except (psutil.Error, OSError):
            continue
    return found


def _sleeping(tmp: Path, count: int) -> bool:
    """True when ``count`` lessons run from ``tmp`` are in their ``time.sleep`` cell (papermill saves as it goes)."""
    running = 0
    for executed in tmp.glob("dro-lab-lesson-*/out/*.ipynb"):
        try:
            nb = json.loads(executed.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        running += any(
            c.get("metadata", {}).get("papermill", {}).get("status") == "running"
            and "time.sleep" in "".join(c.get("source", ""))
            for c in nb.get("cells", [])
        )
    return running >= count


def _wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _gone(pids: list[int]) -> bool:
    import psutil

    def alive(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    return not any(alive(pid) for pid in pids)


# --------------------------------------------------------------------------------------------
# One course on a LocalCluster of two workers, and the same course run locally
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(distributed, tmp_path_factory):
    root = tmp_path_factory.mktemp("dask")
    syllabus = _course(root, DASK_SYLLABUS)
    worker_tmp = root / "worker-tmp"
    seen: list[str] = []
    library_sha256.cache_clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(worker_tmp))  # the worker processes inherit it
        submitted = _count_submissions(mp, distributed)
        start = time.perf_counter()
        dask_results = run_course(
            syllabus, out=root / "dask", jobs=2, html=False, executor="dask", on_result=lambda r: seen.append(r.id)
        )
        dask_seconds = time.perf_counter() - start
    start = time.perf_counter()
    local_results = run_course(syllabus, out=root / "local", jobs=2, html=False)
    local_seconds = time.perf_counter() - start
    return types.SimpleNamespace(
        root=root,
        syllabus=syllabus,
        worker_tmp=worker_tmp,
        dask={r.id: r for r in dask_results},
        local={r.id: r for r in local_results},
        seen=seen,
        submitted=submitted,
        seconds=(dask_seconds, local_seconds),
    )


@pytest.mark.notebook
def test_dask_run_reports_like_the_local_run(runs):
    d, local = runs.dask, runs.local
    assert {k: (v.status, v.failure) for k, v in d.items()} == {"passing": ("ok", None), "raises": ("failed", "raised")}
    assert {k: (v.status, v.failure, v.error, v.failing_cell) for k, v in d.items()} == {
        k: (v.status, v.failure, v.error, v.failing_cell) for k, v in local.items()
    }
    raised = d["raises"]
    assert raised.failing_cell.index == 2 and raised.error == "ValueError: deliberate failure in the third cell"
    assert raised.problem.startswith("raised: cell 2 ")
    assert sorted(runs.seen) == ["passing", "raises"]  # on_result, once per lesson
    # a lesson that fails by itself is not run again: one submission each, one attempt
    assert sorted(runs.submitted) == ["passing", "raises"] and {r.attempts for r in d.values()} == {1}


@pytest.mark.notebook
def test_notebooks_records_and_logs_come_back_to_out(runs):
    out = runs.root / "dask"
    for lesson in ("passing", "raises"):
        result = runs.dask[lesson]
        assert result.notebook == out / f"{lesson}.ipynb" and result.log == out / f"{lesson}.log"
        assert result.notebook.stat().st_size > 0 and result.log.is_file()
    passing = runs.dask["passing"]
    assert passing.record_file == out / "passing.record.json"
    assert json.loads(passing.record_file.read_text(encoding="utf-8"))["greeting"] == "hello"
    executed = {k: nbformat.read(str(runs.root / k / "passing.ipynb"), as_version=4) for k in ("dask", "local")}
    assert stream_text(executed["dask"]) == stream_text(executed["local"]) == "greeting=hello preset=smoke\n"
    partial = nbformat.read(str(out / "raises.ipynb"), as_version=4)  # the failed lesson's partial notebook
    (failing,) = [c for c in partial.cells if c.source.startswith("raise ValueError")]
    assert [o.get("ename") for o in failing.outputs] == ["ValueError"]


@pytest.mark.notebook
def test_summary_and_run_records_equal_the_local_runs(runs):
    dask_summary, local_summary = _summary(runs.root / "dask"), _summary(runs.root / "local")
    for key in ("counts", "ok", "interrupted", "preset", "parameters"):
        assert dask_summary[key] == local_summary[key], key
    assert [_comparable(x) for x in dask_summary["lessons"]] == [_comparable(x) for x in local_summary["lessons"]]
    for lesson in ("passing", "raises"):
        assert _run_record(runs.root / "dask" / f"{lesson}.run.json") == _run_record(
            runs.root / "local" / f"{lesson}.run.json"
        )


@pytest.mark.notebook
def test_workers_ran_in_temporary_folders_that_are_gone(runs):
    worker_cwd = Path(runs.dask["passing"].records["cwd"])
    assert runs.worker_tmp in worker_cwd.parents  # the lesson ran on the worker, in its own folder
    assert worker_cwd.parent.name.startswith("dro-lab-lesson-") and worker_cwd.name == "src"
    assert not worker_cwd.parent.exists() and _lesson_folders(runs.worker_tmp) == []
    assert runs.local["passing"].records["cwd"] == str(runs.root / "src")


@pytest.mark.notebook
def test_resume_across_executors_submits_only_what_must_run(runs, distributed, tmp_path, monkeypatch):
    out = tmp_path / "out"
    shutil.copytree(runs.root / "dask", out)
    kept = (out / "passing.ipynb").stat().st_mtime_ns
    submitted = _count_submissions(monkeypatch, distributed)
    again = {r.id: r for r in run_course(runs.syllabus, out=out, jobs=2, html=False, executor="dask")}
    assert submitted == ["raises"]  # a failed lesson always runs again; the ok one is reused
    assert (again["passing"].status, again["raises"].status) == ("cached", "failed")
    assert (out / "passing.ipynb").stat().st_mtime_ns == kept

    executed: list[str] = []
    real_execute = course_runner._execute_lesson
    monkeypatch.setattr(
        course_runner,
        "_execute_lesson",
        lambda task, *a, **k: executed.append(task["id"]) or real_execute(task, *a, **k),
    )
    local = {r.id: r for r in run_course(runs.syllabus, out=out, jobs=1, html=False)}
    assert executed == ["raises"] and local["passing"].status == "cached"
    assert local["passing"].records["greeting"] == "hello"
    assert (out / "passing.ipynb").stat().st_mtime_ns == kept

    # and the other way: a dask run reuses the local run's lessons without starting a cluster
    started = []
    monkeypatch.setattr(distributed, "LocalCluster", lambda *a, **k: started.append(1))
    reused = run_course(runs.syllabus, out=runs.root / "local", only=["passing"], html=False, executor="dask")
    assert [(r.id, r.status) for r in reused] == [("passing", "cached"), ("raises", "skipped")] and not started


@pytest.mark.notebook
def test_sweep_on_a_running_scheduler_records_each_value(distributed, tmp_path):
    """A cluster the run does not own, reached by its address (as a real cluster would be)."""
    syllabus = _course(tmp_path, DASK_SYLLABUS.replace("src/failing.ipynb", "src/square.ipynb"))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        sweep = run_sweep(syllabus, "x", [1.5, 2.0, 3.0], only=["raises"], out=tmp_path / "out", html=False,
                          executor="dask", scheduler=cluster.scheduler_address)  # fmt: skip
        assert len(cluster.workers) == 2  # the run left the cluster as it found it
    assert sweep.ok and sweep.labels == ["1.5", "2.0", "3.0"]
    for label, x in zip(sweep.labels, (1.5, 2.0, 3.0)):
        (result,) = sweep.results(label)
        assert result.records["y"] == x * x and result.parameters["x"] == x  # y = x**2, the closed form
        assert json.loads((sweep.folders[label] / "raises.run.json").read_text(encoding="utf-8"))["status"] == "ok"
    assert (sweep.out / "sweep.json").is_file()


@pytest.mark.notebook
def test_a_worker_with_another_dro_lab_runs_nothing(distributed, tmp_path, monkeypatch):
    from dro_course.runner import dask_executor

    syllabus = _course(tmp_path, DASK_SYLLABUS)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "worker-tmp"))
    monkeypatch.setattr(dask_executor, "library_sha256", lambda: "0" * 64)  # what the client says it runs
    results = run_course(syllabus, out=tmp_path / "out", only=["passing"], html=False, executor="dask")
    assert (results[0].status, results[0].failure) == ("failed", "raised")
    assert "is not the client's" in results[0].error and "install the same dro_lab on the workers" in results[0].error
    assert not (tmp_path / "out" / "passing.ipynb").exists() and _lesson_folders(tmp_path / "worker-tmp") == []


# --------------------------------------------------------------------------------------------
# Interrupts and a worker that dies
# --------------------------------------------------------------------------------------------


@pytest.mark.notebook
def test_interrupt_stops_running_lessons_on_the_workers_and_skips_queued_ones(distributed, tmp_path, monkeypatch):
    pytest.importorskip("psutil")
    syllabus = _course(tmp_path, STOP_SYLLABUS)
    worker_tmp, out = tmp_path / "worker-tmp", tmp_path / "out"
    monkeypatch.setenv("TMPDIR", str(worker_tmp))
    lesson_pids: list[int] = []

    def interrupt_when_both_sleep():
        _wait_for(lambda: _sleeping(worker_tmp, 2), 90, "both slow lessons to sleep")
        lesson_pids.extend(_lesson_processes(worker_tmp))
        os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C: KeyboardInterrupt in the main thread, in run_course

    trigger = threading.Thread(target=interrupt_when_both_sleep, daemon=True)
    trigger.start()
    with pytest.raises(RunInterrupted) as info:
        run_course(syllabus, out=out, jobs=2, html=False, executor="dask", parameters={"seconds": 120}, timeout=300)
    trigger.join(5)
    assert len(lesson_pids) == 4  # two papermill processes and their kernels, found on the workers
    _wait_for(lambda: _gone(lesson_pids), 15, "the stopped lessons' processes to end")

    results = {r.id: r for r in info.value.results}
    for lesson in ("sleepy_a", "sleepy_b"):
        assert (results[lesson].status, results[lesson].failure) == ("failed", "interrupted")
        assert results[lesson].failing_cell.index == 1 and results[lesson].failing_cell.first_line == "import time"
        stored = json.loads((out / f"{lesson}.run.json").read_text(encoding="utf-8"))
        assert (stored["status"], stored["failure"]) == ("failed", "interrupted")
        assert (out / f"{lesson}.ipynb").is_file()  # the partial notebook came back
    assert (results["minimal"].status, results["minimal"].error) == ("skipped", "not started: the run was interrupted")
    assert not (out / "minimal.run.json").exists()
    summary = _summary(out)
    assert summary["interrupted"] == "SIGINT" and summary["ok"] is False
    assert _lesson_folders(worker_tmp) == []


def _pids(path: Path) -> list[int]:
    """The kernel pids that the attempts of a lesson of ``attempts.ipynb`` wrote to ``path``."""
    return [int(line) for line in path.read_text(encoding="utf-8").split()] if path.is_file() else []


def _kill_the_workers(pids_file: Path, attempts: int, after: float, killed: list[int]) -> None:
    """SIGKILL the Dask worker running the lesson that writes to ``pids_file``, ``after`` seconds into
    each of its first ``attempts`` attempts (no clean-up of its own, as under the OOM killer)."""
    import psutil

    for attempt in range(1, attempts + 1):
        _wait_for(lambda: len(_pids(pids_file)) >= attempt, 90, f"attempt {attempt} to start")
        time.sleep(after)
        papermill = psutil.Process(_pids(pids_file)[attempt - 1]).parent()  # kernel -> papermill -> worker
        assert "papermill" in " ".join(papermill.cmdline())
        killed += [papermill.pid, _pids(pids_file)[attempt - 1]]
        papermill.parent().kill()


@pytest.mark.notebook
@pytest.mark.timeout(120)
def test_a_lesson_whose_worker_dies_runs_again_once_and_finishes(distributed, tmp_path, monkeypatch, capsys):
    pytest.importorskip("psutil")
    syllabus = _course(tmp_path, RETRY_SYLLABUS)
    worker_tmp, out, pids_file = tmp_path / "worker-tmp", tmp_path / "out", tmp_path / "pids"
    monkeypatch.setenv("TMPDIR", str(worker_tmp))
    submitted = _count_submissions(monkeypatch, distributed)
    killed: list[int] = []
    killer = threading.Thread(target=_kill_the_workers, args=(pids_file, 1, 2.0, killed), daemon=True)
    killer.start()
    command = ["run", "--syllabus", str(syllabus), "--out", str(out), "--jobs", "2", "--no-html"]
    command += ["--executor", "dask", "-p", "seconds", "120", "-p", "attempts_file", str(pids_file)]
    assert main(command + ["--timeout", "300"]) == 1  # the lesson whose kernel dies fails by itself
    killer.join(5)
    assert len(killed) == 2 and len(_pids(pids_file)) == 2  # the lesson ran twice: killed, then to its end
    assert sorted(submitted) == ["kernel_dies", "minimal", "survivor", "survivor"]

    lessons = {x["id"]: x for x in _summary(out)["lessons"]}
    survivor = lessons["survivor"]
    assert (survivor["status"], survivor["attempts"], survivor["error"]) == ("ok", 2, None)
    assert stream_text(nbformat.read(str(out / "survivor.ipynb"), as_version=4)) == "attempt 2 finished\n"
    # its seconds: the lost attempt (killed 2 s after its kernel started) and the one that finished
    finished = nbformat.read(str(out / "survivor.ipynb"), as_version=4).metadata.papermill.duration
    assert survivor["seconds"] > 1.5 + finished
    assert json.loads((out / "survivor.run.json").read_text(encoding="utf-8"))["seconds"] == survivor["seconds"]
    # a lesson that fails by itself (its kernel dies: the worker lives) is not run again
    assert (lessons["kernel_dies"]["status"], lessons["kernel_dies"]["failure"]) == ("failed", "kernel died")
    assert lessons["kernel_dies"]["attempts"] == 1 and lessons["minimal"]["attempts"] == 1
    err = capsys.readouterr().err
    assert f"[ok] survivor in {survivor['seconds']:.1f} s (retried after its worker died)" in err
    assert "| survivor | A lesson whose worker dies | ok (retried after its worker died) |" in (
        out / "summary.md"
    ).read_text(encoding="utf-8")
    assert "<td>ok (retried after its worker died)</td>" in (out / "index.html").read_text(encoding="utf-8")
    _wait_for(lambda: _gone(killed), 15, "the dead worker's papermill and kernel to end")
    assert _lesson_folders(worker_tmp) == []  # the dead worker's folder, removed by a later lesson


@pytest.mark.notebook
@pytest.mark.timeout(120)
def test_a_lesson_whose_worker_dies_twice_fails_and_is_not_run_a_third_time(distributed, tmp_path, monkeypatch):
    """On a scheduler that runs no task again after its worker's death (``allowed-failures`` 0: the client
    gets Dask's ``KilledWorker``), the client still runs the lesson again, once."""
    import dask

    pytest.importorskip("psutil")
    syllabus = _course(tmp_path, RETRY_SYLLABUS)
    worker_tmp, out, pids_file = tmp_path / "worker-tmp", tmp_path / "out", tmp_path / "pids"
    monkeypatch.setenv("TMPDIR", str(worker_tmp))
    killed: list[int] = []
    killer = threading.Thread(target=_kill_the_workers, args=(pids_file, 2, 1.0, killed), daemon=True)
    killer.start()
    parameters = {"seconds": 120, "attempts_file": str(pids_file), "long_attempts": 3}
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):  # the LocalCluster's scheduler, here
        (result,) = [r for r in run_course(syllabus, out=out, jobs=1, only=["survivor"], html=False, executor="dask",
                                           parameters=parameters, timeout=300) if r.status != "skipped"]  # fmt: skip
    killer.join(5)
    assert (result.status, result.failure, result.attempts) == ("failed", "killed", 2)
    assert "Dask worker died while it ran, and again when it was run a second time (KilledWorker" in result.error
    assert result.retry_note == "retried after its worker died" and result.seconds > 1.0  # both lost attempts
    assert len(_pids(pids_file)) == 2  # no third attempt
    stored = json.loads((out / "survivor.run.json").read_text(encoding="utf-8"))
    assert (stored["failure"], stored["seconds"]) == ("killed", result.seconds)
    _wait_for(lambda: _gone(killed), 15, "the dead workers' papermill and kernel to end")


@pytest.mark.notebook
@pytest.mark.timeout(180)
def test_cli_ctrl_c_to_the_process_group_stops_the_dask_run(distributed, tmp_path):
    """A Ctrl-C in a terminal reaches every process of the foreground group, the local cluster's workers
    included: they leave it to the client, which stops the lessons and exits 130."""
    pytest.importorskip("psutil")
    syllabus = _course(tmp_path, KILL_SYLLABUS)
    worker_tmp, out = tmp_path / "worker-tmp", tmp_path / "out"
    env = {**os.environ, "TMPDIR": str(worker_tmp)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "dro_course.cli", "run", "--syllabus", str(syllabus), "--out", str(out)]
    command += ["--jobs", "2", "--no-html", "--executor", "dask", "-p", "seconds", "120", "--timeout", "300"]
    runner = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _wait_for(lambda: (out / "minimal.run.json").is_file() and _sleeping(worker_tmp, 1), 90, "the lessons")
        lesson_pids = _lesson_processes(worker_tmp)
        os.killpg(runner.pid, signal.SIGINT)
        _, stderr = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.communicate()
    assert runner.returncode == 130, stderr
    assert "[ok] minimal" in stderr and "Traceback" not in stderr
    # the worker lived and stopped the lesson itself: the cell that ran, and the partial notebook back in OUT
    assert "[failed] sleepy" in stderr and "interrupted: the run was stopped in cell 1" in stderr
    stored = json.loads((out / "sleepy.run.json").read_text(encoding="utf-8"))
    assert (stored["status"], stored["failure"]) == ("failed", "interrupted") and (out / "sleepy.ipynb").is_file()
    _wait_for(lambda: _gone(lesson_pids), 15, "the lesson processes to end")


# --------------------------------------------------------------------------------------------
# Arguments and a missing extra
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "executor, scheduler, error, message",
    [
        ("spark", None, ValueError, "Invalid executor: 'spark'"),
        (1, None, TypeError, "executor must be a string"),
        ("local", "tcp://localhost:8786", ValueError, "needs executor='dask'"),
        ("dask", 8786, TypeError, "scheduler must be None or an address string"),
        ("dask", "tcp://host name:8786", ValueError, "Invalid scheduler address"),
        ("dask", "tcp://", ValueError, "Invalid scheduler address"),
        ("dask", "", ValueError, "Invalid scheduler address"),
    ],
)
def test_bad_executor_arguments_are_refused_before_anything_runs(tmp_path, executor, scheduler, error, message):
    syllabus = make_course(tmp_path)
    with pytest.raises(error, match=message):
        run_course(syllabus, out=tmp_path / "out", executor=executor, scheduler=scheduler)
    with pytest.raises(error, match=message):
        run_sweep(
            syllabus, "seed", [0, 1], only=["passing"], out=tmp_path / "out", executor=executor, scheduler=scheduler
        )
    assert not (tmp_path / "out").exists()


def test_without_dask_the_error_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    syllabus = make_course(tmp_path)
    with pytest.raises(ModuleNotFoundError, match=r'pip install "dro-lab\[dask\]"'):
        run_course(syllabus, out=tmp_path / "out", executor="dask")
    assert not (tmp_path / "out").exists()
    status = main(["run", "--syllabus", str(syllabus), "--out", str(tmp_path / "out"), "--executor", "dask"])
    assert status == 2 and 'pip install "dro-lab[dask]"' in capsys.readouterr().err


@pytest.mark.slow
def test_an_unreachable_scheduler_is_a_connection_error(distributed, tmp_path, capsys):
    import dask

    syllabus = make_course(tmp_path)
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(ConnectionError, match="Could not connect to the Dask scheduler at 'tcp://127.0.0.1:9'"):
            run_course(syllabus, out=tmp_path / "out", html=False, executor="dask", scheduler="tcp://127.0.0.1:9")
        base = ["run", "--syllabus", str(syllabus), "--out", str(tmp_path / "out"), "--no-html"]
        assert main(base + ["--executor", "dask", "--scheduler", "tcp://127.0.0.1:9"]) == 2
    assert "Could not connect to the Dask scheduler" in capsys.readouterr().err
    assert main(base + ["--scheduler", "tcp://127.0.0.1:9"]) == 2  # a scheduler without --executor dask
    assert "needs executor='dask'" in capsys.readouterr().err
