"""Tests of the course runner (dro_course) and the ``dro-lab`` command (dro_lab.cli).

The runner is exercised on tiny fixture notebooks (tests/fixtures/): ``passing.ipynb`` prints
and records its parameters and shows a plotly figure; ``failing.ipynb`` raises in its third cell;
``square.ipynb`` records ``y = x**2`` and ``half = x / 2`` and fails for ``x < 0`` (resume and
sweeps; its ``x`` line has a comment with an ``=`` that ``papermill.inspect_notebook`` cannot read);
``minimal.ipynb`` prints its parameters; ``slow.ipynb`` sleeps past a timeout.
The real lessons run once per test session (tests/conftest.py ``executed_course``; their tests are in
test_lessons.py). The syllabus and the sweeps have their own files (test_syllabus.py, test_sweep.py).
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import nbformat
import pytest
from _course_util import (  # tests/course/
    FIXTURE_SYLLABUS,
    FIXTURES,
    file_state,
    make_course,
    snapshot,
    stream_text,
)

import dro_course as course
from dro_course import (
    FailingCell,
    LessonResult,
    parse_parameter_value,
    read_records,
    record,
    run_course,
)
from dro_course.cli import main

# --------------------------------------------------------------------------------------------
# One real run of the fixture course, shared by the tests below
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fixture_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    syllabus_path = make_course(root)
    out = root / "out"
    before = snapshot(root, exclude=out)
    seen: list[str] = []
    results = run_course(
        syllabus_path,
        preset="smoke",
        out=out,
        jobs=2,
        parameters={"greeting": "injected"},
        timeout=120,
        on_result=lambda r: seen.append(r.id),
    )
    after = snapshot(root, exclude=out)
    return types.SimpleNamespace(
        root=root,
        out=out,
        results={r.id: r for r in results},
        order=[r.id for r in results],
        before=before,
        after=after,
        seen=seen,
    )


@pytest.mark.notebook
def test_run_reports_ok_and_failed_in_syllabus_order(fixture_run):
    assert fixture_run.order == ["passing", "failing"]
    assert fixture_run.results["passing"].status == "ok"
    assert fixture_run.results["failing"].status == "failed"
    assert sorted(fixture_run.seen) == ["failing", "passing"]  # on_result saw both
    assert all(r.seconds > 0 for r in fixture_run.results.values())


@pytest.mark.notebook
def test_failing_cell_is_located_in_the_source_notebook(fixture_run):
    failed = fixture_run.results["failing"]
    cell = failed.failing_cell
    assert isinstance(cell, FailingCell)
    assert cell.index == 2  # third cell of tests/fixtures/failing.ipynb
    assert cell.executed_index == 3  # papermill's injected-parameters cell comes before it
    assert cell.first_line == 'raise ValueError("deliberate failure in the third cell")'
    assert (cell.ename, cell.evalue) == ("ValueError", "deliberate failure in the third cell")
    assert failed.error == "ValueError: deliberate failure in the third cell"
    source = nbformat.read(str(FIXTURES / "failing.ipynb"), as_version=4)
    assert source.cells[cell.index].source.startswith("raise ValueError")


def _page(out: Path, lesson: str) -> Path:
    """A lesson's page in the run's course website."""
    return out / "site" / "notebooks" / f"{lesson}.html"


@pytest.mark.notebook
def test_outputs_exist_also_for_the_failed_lesson(fixture_run):
    out = fixture_run.out
    for lesson in ("passing", "failing"):
        assert (out / f"{lesson}.ipynb").is_file()
        assert _page(out, lesson).is_file()
        result = fixture_run.results[lesson]
        assert result.notebook == out / f"{lesson}.ipynb" and result.html == _page(out, lesson)
    # The partial notebook stops at the failure: the last cell never ran.
    partial = nbformat.read(str(out / "failing.ipynb"), as_version=4)
    assert "never reached" not in stream_text(partial)
    page = _page(out, "failing").read_text(encoding="utf-8")
    assert "deliberate failure" in page and "This lesson failed in this run" in page


@pytest.mark.notebook
def test_injected_parameters_reach_the_executed_notebook(fixture_run):
    nb = nbformat.read(str(fixture_run.out / "passing.ipynb"), as_version=4)
    tags = [cell.metadata.get("tags", []) for cell in nb.cells]
    assert ["injected-parameters"] in tags
    # The user override beats the preset's value; the preset's own parameter is there too.
    assert "greeting=injected preset=smoke" in stream_text(nb)
    assert fixture_run.results["passing"].parameters == {"preset": "smoke", "greeting": "injected"}
    # failing.ipynb does not declare `greeting`, so it was not passed there.
    assert fixture_run.results["failing"].parameters == {"preset": "smoke"}


@pytest.mark.notebook
def test_records_and_environment_of_the_kernel(fixture_run):
    result = fixture_run.results["passing"]
    assert result.record_file == fixture_run.out / "passing.record.json"
    assert result.records == read_records(result.record_file)
    assert result.records["greeting"] == "injected"
    assert result.records["seed"] == 0
    assert result.records["env_preset"] == "smoke"  # DRO_LAB_PRESET agrees with the injected preset
    assert Path(result.records["cwd"]) == (fixture_run.root / "src").resolve()  # runs in its folder
    assert fixture_run.results["failing"].record_file is None


@pytest.mark.notebook
def test_plotly_figure_has_its_mime_type_and_is_drawn_by_the_sites_plotly_js(fixture_run):
    nb = nbformat.read(str(fixture_run.out / "passing.ipynb"), as_version=4)
    figure_cell = nb.cells[-1]
    assert "plotly" in figure_cell.source
    outputs = [out for out in figure_cell.outputs if "data" in out]
    # what JupyterLab and VS Code draw even in an untrusted notebook; no HTML, no inline plotly.js
    assert [sorted(out["data"]) for out in outputs] == [["application/vnd.plotly.v1+json"]]
    assert outputs[0]["data"]["application/vnd.plotly.v1+json"]["data"][0]["name"] == "fixture-trace"
    page = _page(fixture_run.out, "passing").read_text(encoding="utf-8")
    assert "plotly-graph-div" in page and "fixture-trace" in page
    # plotly.js comes once, from the site's _static folder, not inside the page
    assert page.count("plotly-course.min.js") == 1 and "../_static/plotly-course.min.js" in page
    assert len(page) < 200_000


@pytest.mark.notebook
def test_summary_files(fixture_run):
    out = fixture_run.out
    md = (out / "summary.md").read_text(encoding="utf-8")
    assert "| lesson | title | status | seconds | failing cell |" in md
    assert "| passing | A passing lesson | ok |" in md
    failing_row = next(line for line in md.splitlines() if line.startswith("| failing "))
    assert "failed" in failing_row and "cell 2" in failing_row and "ValueError" in failing_row

    data = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert data["ok"] is False and data["counts"] == {"ok": 1, "cached": 0, "failed": 1, "skipped": 0}
    assert data["preset"] == "smoke" and data["parameters"] == {"greeting": "injected"}
    by_id = {lesson["id"]: lesson for lesson in data["lessons"]}
    assert by_id["passing"]["notebook"] == "passing.ipynb"
    assert by_id["passing"]["html"] == "site/notebooks/passing.html"
    assert by_id["failing"]["failing_cell"]["index"] == 2

    index = (out / "index.html").read_text(encoding="utf-8")
    for lesson in ("passing", "failing"):
        for suffix in ("ipynb", "log"):
            assert f'href="{lesson}.{suffix}"' in index and (out / f"{lesson}.{suffix}").is_file()
        assert f'href="site/notebooks/{lesson}.html"' in index and _page(out, lesson).is_file()
    assert by_id["passing"]["expected_minutes"] == 0.1 and by_id["failing"]["expected_minutes"] is None


@pytest.mark.notebook
def test_summary_page_shows_records_expected_time_and_header(fixture_run):
    index = (fixture_run.out / "index.html").read_text(encoding="utf-8")
    passing_row = next(line for line in index.splitlines() if line.startswith('<tr class="ok">'))
    # The passing lesson's scalar records, collapsed; its expected time (0.1 min) from the syllabus.
    assert "<details><summary>4 records</summary>" in passing_row
    assert "<td>greeting</td><td>injected</td>" in passing_row and "<td>seed</td><td>0</td>" in passing_row
    assert "<td>6</td>" in passing_row
    failing_row = next(line for line in index.splitlines() if line.startswith('<tr class="failed">'))
    assert "cell 2" in failing_row and "deliberate failure" in failing_row
    assert "preset smoke, parameters {&#39;greeting&#39;: &#39;injected&#39;}" in index
    assert "1 ok, 0 cached, 1 failed, 0 skipped" in index


@pytest.mark.notebook
def test_nothing_is_written_outside_out(fixture_run):
    assert fixture_run.after == fixture_run.before
    for name in ("passing.ipynb", "failing.ipynb"):
        assert (fixture_run.root / "src" / name).read_bytes() == (FIXTURES / name).read_bytes()
    expected = {
        "passing.ipynb",
        "passing.record.json",
        "passing.log",
        "passing.run.json",
        "failing.ipynb",
        "failing.log",
        "failing.run.json",
        "summary.md",
        "summary.json",
        "index.html",
        "site",  # the course website (the student's); Sphinx's work folder is gone once the site is in place
    }
    # Sphinx's warnings, when it has any (the fixture's lessons have no title), are kept beside the site
    assert {p.name for p in fixture_run.out.iterdir()} - {"site-warnings.log"} == expected


# --------------------------------------------------------------------------------------------
# The command line, in-process
# --------------------------------------------------------------------------------------------


CLI_SYLLABUS = """\
title: CLI course
lessons:
  - {id: minimal, title: A minimal lesson, notebook: src/minimal.ipynb}
  - {id: failing, title: A failing lesson, notebook: src/failing.ipynb}
  - {id: slow, title: A slow lesson, notebook: src/slow.ipynb}
"""


@pytest.mark.notebook
def test_cli_run_failures_exit_nonzero_and_only_selects(tmp_path, capsys):
    syllabus = make_course(tmp_path, CLI_SYLLABUS)
    out = tmp_path / "out"
    argv = [
        "run",
        "--syllabus",
        str(syllabus),
        "--out",
        str(out),
        "--only",
        "fail",
        "slow",
        "--jobs",
        "2",
        "--timeout",
        "3",
        "--no-html",
    ]
    assert main(argv) == 1
    printed = capsys.readouterr()
    assert "| failing | A failing lesson | failed |" in printed.out
    assert "| slow | A slow lesson | failed |" in printed.out
    assert "| minimal | A minimal lesson | skipped |" in printed.out
    assert "[failed] failing" in printed.err and "[failed] slow" in printed.err
    # the end of the output names each failed lesson, the line that failed and where to look (what `make course`
    # leaves on the screen above make's own "Error 1")
    assert 'FAILED failing: raised: cell 2 (In [4]), line 1 (`raise ValueError("deliberate' in printed.err
    assert f"see {out / 'failing.log'}, {out / 'failing.ipynb'}" in printed.err
    assert "FAILED slow: timed out after 3 s in cell 1, line 3 (`time.sleep" in printed.err
    assert not (out / "minimal.ipynb").exists()  # --only: the other lesson did not run
    assert not (out / "failing.html").exists()  # --no-html
    data = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert data["counts"] == {"ok": 0, "cached": 0, "failed": 2, "skipped": 1}
    slow = next(lesson for lesson in data["lessons"] if lesson["id"] == "slow")
    # A cell timeout is no PapermillExecutionError; the running cell is still found.
    assert slow["failing_cell"]["index"] == 1
    assert slow["failing_cell"]["ename"] == "CellTimeoutError"
    assert slow["failing_cell"]["first_line"] == "import time"


@pytest.mark.notebook
def test_cli_run_with_parameters_exits_zero(tmp_path, capsys):
    syllabus = make_course(tmp_path, CLI_SYLLABUS)
    out = tmp_path / "out"
    argv = [
        "run",
        "--syllabus",
        str(syllabus),
        "--out",
        str(out),
        "--only",
        "minimal",
        "-p",
        "beta",
        "20",
        "-p",
        "seed",
        "7",
        "--no-html",
        "--timeout",
        "120",
    ]
    assert main(argv) == 0
    # "20" and "7" arrive as ints; the preset is the default one.
    assert "beta=20 seed=7 preset=smoke" in stream_text(nbformat.read(str(out / "minimal.ipynb"), as_version=4))
    assert "| minimal | A minimal lesson | ok |" in capsys.readouterr().out


def test_cli_rejects_an_undeclared_parameter_before_running(tmp_path, capsys):
    syllabus = make_course(tmp_path)
    out = tmp_path / "out"
    status = main(["run", "--syllabus", str(syllabus), "--out", str(out), "-p", "betaa", "1"])
    assert status == 2
    assert "betaa" in capsys.readouterr().err
    assert not out.exists()


def test_cli_reports_syllabus_errors(tmp_path, capsys):
    syllabus = make_course(tmp_path, FIXTURE_SYLLABUS.replace("src/failing.ipynb", "src/nope.ipynb"))
    assert main(["run", "--syllabus", str(syllabus), "--out", str(tmp_path / "o")]) == 2
    assert "nope.ipynb" in capsys.readouterr().err
    assert main(["run", "--syllabus", str(syllabus), "--preset", "huge"]) == 2


def test_cli_list_version_help(tmp_path, capsys):
    syllabus = make_course(tmp_path)
    assert main(["list", "--syllabus", str(syllabus), "--preset", "smoke"]) == 0
    printed = capsys.readouterr().out
    assert " 1. passing - A passing lesson" in printed and " 2. failing - A failing lesson" in printed
    assert "{'preset': 'smoke', 'greeting': 'from-preset'}" in printed
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    from dro_lab import __version__

    assert capsys.readouterr().out.strip() == f"dro-course {__version__}"
    assert main([]) == 2


@pytest.mark.parametrize("argv", [["course"], ["course", "run", "--preset", "smoke"], ["course", "--help"]])
def test_dro_lab_course_names_the_course_command_in_one_line(argv, capsys):
    from dro_lab.cli import main as lab_main

    assert lab_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "dro-course" in err, err


def test_cli_bench_forwards_arguments(monkeypatch):
    received = []

    def fake_main(argv=None):
        received.append(argv)
        return 3

    monkeypatch.setitem(sys.modules, "dro_lab.bench", types.SimpleNamespace(main=fake_main))
    import dro_lab

    monkeypatch.setattr(dro_lab, "bench", sys.modules["dro_lab.bench"], raising=False)
    from dro_lab.cli import main as lab_main

    assert lab_main(["bench", "--quick", "--help"]) == 3
    assert received == [["--quick", "--help"]]


def test_run_course_validates_arguments(tmp_path):
    path = make_course(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="Invalid preset: 'huge'"):
        run_course(path, preset="huge", out=out)
    with pytest.raises(ValueError, match="Invalid number of jobs: 0"):
        run_course(path, jobs=0, out=out)
    with pytest.raises(ValueError, match="Invalid timeout"):
        run_course(path, timeout=0, out=out)
    with pytest.raises(ValueError, match="Invalid lesson 'nope'"):
        run_course(path, only=["nope"], out=out)
    with pytest.raises(ValueError, match=r"Invalid parameter\(s\) \['greting'\]"):
        run_course(path, parameters={"greting": "x"}, out=out)
    assert not out.exists()


# --------------------------------------------------------------------------------------------
# record() and parameter parsing
# --------------------------------------------------------------------------------------------


def test_record_is_a_noop_without_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(course.RECORD_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert record("x", 1) is None
    assert list(tmp_path.iterdir()) == []


def test_record_accumulates_and_converts(tmp_path, monkeypatch):
    np = pytest.importorskip("numpy")
    target = tmp_path / "sub" / "r.json"
    monkeypatch.setenv(course.RECORD_ENV, str(target))
    record("a", 1)
    record("b", np.float64(0.25))
    record("c", np.arange(3))
    record("a", {"k": (1, 2)})  # the last value wins
    assert read_records(target) == {"a": {"k": [1, 2]}, "b": 0.25, "c": [0, 1, 2]}
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        record("d", object())
    with pytest.raises(ValueError, match="Invalid record name"):
        record("", 1)


@pytest.mark.parametrize(
    "text, value",
    [
        ("0.5", 0.5),
        ("20", 20),
        ("1e3", 1000.0),
        ("true", True),
        ("None", None),
        ("[1, 2]", [1, 2]),
        ("cuda", "cuda"),
        ("'quoted'", "quoted"),
        ("cuda:0", "cuda:0"),
    ],
)
def test_parse_parameter_value(text, value):
    assert parse_parameter_value(text) == value


def test_lesson_result_to_dict_paths_are_relative(tmp_path):
    result = LessonResult(id="a", title="A", status="ok", notebook=tmp_path / "a.ipynb")
    assert result.to_dict(relative_to=tmp_path)["notebook"] == "a.ipynb"
    assert result.ok and not LessonResult(id="b", title="B", status="failed").ok


# --------------------------------------------------------------------------------------------
# Resume: lessons already executed with the same parameters are reused
# --------------------------------------------------------------------------------------------

RESUME_SYLLABUS = """\
title: Resume course
lessons:
  - {id: square, title: Squares a number, notebook: src/square.ipynb, minutes: {smoke: 0.1}}
  - {id: failing, title: A failing lesson, notebook: src/failing.ipynb}
"""


@pytest.mark.notebook
def test_a_change_to_the_library_source_reruns_the_lessons(tmp_path, monkeypatch):
    """The resume key holds a hash of dro_lab's and dro_course's source (recomputed here from the files,
    independently): the same code reuses the run, another source hash (an edited dro_lab/ or course/) runs the lesson
    again."""
    import hashlib

    import dro_course
    import dro_lab
    from dro_course.runner import execute

    digest = hashlib.sha256()
    for package in (dro_lab, dro_course):
        root = Path(package.__file__).resolve().parent
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(root)
            if package is dro_course and relative.parts[0] in ("site", "solutions"):  # never run in a lesson
                continue
            digest.update(f"{package.__name__}/{relative.as_posix()}".encode() + b"\0" + path.read_bytes() + b"\0")
    syllabus = make_course(tmp_path, RESUME_SYLLABUS)
    kwargs = dict(preset="smoke", out=tmp_path / "out", jobs=1, timeout=120, html=False, only=["square"])
    first = {r.id: r for r in run_course(syllabus, parameters={"x": 3}, **kwargs)}
    stored = json.loads((tmp_path / "out" / "square.run.json").read_text(encoding="utf-8"))
    assert first["square"].status == "ok" and stored["library_sha256"] == digest.hexdigest()
    again = {r.id: r for r in run_course(syllabus, parameters={"x": 3}, **kwargs)}
    assert again["square"].status == "cached"
    monkeypatch.setattr(execute, "library_sha256", lambda: "0" * 64)  # as if dro_lab/ had been edited
    edited = {r.id: r for r in run_course(syllabus, parameters={"x": 3}, **kwargs)}
    assert edited["square"].status == "ok"


@pytest.mark.notebook
def test_resume_reuses_ok_lessons_and_reruns_on_any_change(tmp_path):
    syllabus = make_course(tmp_path, RESUME_SYLLABUS)
    out = tmp_path / "out"
    kwargs = dict(preset="smoke", out=out, jobs=2, timeout=120, html=False)
    first = {r.id: r for r in run_course(syllabus, parameters={"x": 3}, **kwargs)}
    assert first["square"].status == "ok" and first["square"].records["y"] == 9
    assert first["failing"].status == "failed"
    stored = json.loads((out / "square.run.json").read_text(encoding="utf-8"))
    assert stored["status"] == "ok" and stored["preset"] == "smoke"
    assert stored["parameters"] == {"preset": "smoke", "x": 3}  # exactly what papermill got
    import hashlib

    assert stored["notebook_sha256"] == hashlib.sha256((tmp_path / "src" / "square.ipynb").read_bytes()).hexdigest()
    assert json.loads((out / "failing.run.json").read_text(encoding="utf-8"))["status"] == "failed"
    executed = {name: file_state(out / name) for name in ("square.ipynb", "square.log", "square.record.json")}
    failing_log = file_state(out / "failing.log")

    # Same preset, parameters and notebook: not executed again; the failed lesson runs again.
    seen = []
    second = {r.id: r for r in run_course(syllabus, parameters={"x": 3}, on_result=seen.append, **kwargs)}
    cached = second["square"]
    assert cached.status == "cached" and cached.ok
    assert {name: file_state(out / name) for name in executed} == executed  # nothing re-executed
    assert cached.seconds == stored["seconds"] and cached.records == first["square"].records
    assert (cached.notebook, cached.log, cached.record_file) == (
        out / "square.ipynb",
        out / "square.log",
        out / "square.record.json",
    )
    assert second["failing"].status == "failed" and file_state(out / "failing.log") != failing_log
    assert [r.status for r in seen].count("cached") == 1
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["counts"] == {"ok": 0, "cached": 1, "failed": 1, "skipped": 0}
    assert "0 ok, 1 cached, 1 failed, 0 skipped" in (out / "summary.md").read_text(encoding="utf-8")

    # Asking for the website now builds it from the cached notebook without executing it again.
    [with_html] = [
        r
        for r in run_course(syllabus, only=["square"], parameters={"x": 3}, **{**kwargs, "html": True})
        if r.id == "square"
    ]
    assert with_html.status == "cached" and with_html.html.is_file()
    assert file_state(out / "square.ipynb") == executed["square.ipynb"]

    def rerun(**changes):
        [result] = [r for r in run_course(syllabus, only=["square"], **{**kwargs, **changes}) if r.id == "square"]
        return result

    changed = rerun(parameters={"x": 4})  # another parameter value: executed
    assert changed.status == "ok" and changed.records["y"] == 16
    assert rerun(parameters={"x": 4}).status == "cached"
    syllabus.write_text(RESUME_SYLLABUS.replace("minutes: {smoke: 0.1}", "checks: {x: {kind: number}}"))
    assert rerun(parameters={"x": 4}).status == "ok"  # the syllabus's checks (or defaults) of the lesson changed
    assert rerun(parameters={"x": 4}, preset="full").status == "ok"  # another preset
    source = tmp_path / "src" / "square.ipynb"
    nb = nbformat.read(str(source), as_version=4)
    nb.cells[2].source = nb.cells[2].source.replace('record("half", x / 2)', 'record("half", x / 2.0)')
    nbformat.write(nb, str(source))
    assert rerun(parameters={"x": 4}, preset="full").status == "ok"  # the lesson was edited
    before = file_state(out / "square.ipynb")
    forced = rerun(parameters={"x": 4}, preset="full", force=True)
    assert forced.status == "ok" and file_state(out / "square.ipynb") != before


@pytest.mark.notebook
def test_cli_resume_and_force(tmp_path, capsys):
    syllabus = make_course(tmp_path, RESUME_SYLLABUS)
    argv = [
        "run",
        "--syllabus",
        str(syllabus),
        "--out",
        str(tmp_path / "out"),
        "--only",
        "square",
        "--no-html",
        "--timeout",
        "120",
        "-p",
        "x",
        "2",
    ]
    assert main(argv) == 0
    assert main(argv + ["--resume"]) == 0
    printed = capsys.readouterr()
    assert "[cached] square: reused the run of" in printed.err
    assert "| square | Squares a number | cached |" in printed.out
    assert main(argv + ["--force"]) == 0
    assert "[ok] square in" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(argv + ["--force", "--resume"])
    assert info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
