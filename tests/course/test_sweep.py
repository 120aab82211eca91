"""Parameter sweeps (dro_course.run_sweep, ``dro-course run --sweep``): one real sweep of the
fixture lesson ``square.ipynb`` (``y = x**2``, failing for ``x < 0``), its resume, pages, table and figure,
and the figure, summary and parsing without running."""

from __future__ import annotations

import json
import types

import pytest
from _course_util import file_state, make_course  # tests/course/

import dro_course as course
from dro_course import (
    LessonResult,
    SweepResult,
    parse_sweep,
    run_sweep,
    sweep_figure,
    sweep_table,
    write_sweep_summary,
)
from dro_course.cli import main

# --------------------------------------------------------------------------------------------
# Sweeps
# --------------------------------------------------------------------------------------------

SWEEP_SYLLABUS = """\
title: Sweep course
lessons:
  - {id: square, title: Squares a number, notebook: src/square.ipynb}
  - {id: minimal, title: A minimal lesson, notebook: src/minimal.ipynb}
  - {id: failing, title: A failing lesson, notebook: src/failing.ipynb}
"""


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory):
    """``dro-course run --only square --sweep x=0.5,2,3,-1``: x = -1 fails in the lesson."""
    root = tmp_path_factory.mktemp("sweep")
    syllabus = make_course(root, SWEEP_SYLLABUS)
    out = root / "out"
    argv = [
        "run",
        "--syllabus",
        str(syllabus),
        "--out",
        str(out),
        "--only",
        "square",
        "--sweep",
        "x=0.5,2,3,-1",
        "-p",
        "label",
        "run",
        "--jobs",
        "2",
        "--timeout",
        "120",
    ]
    status = main(argv)
    sweep_dir = out / "sweep-x"
    executed = {p: file_state(p) for p in sweep_dir.glob("*/square.ipynb")}  # the executed notebooks
    # The same sweep through the API: the ok values are reused, the failed one runs again, and so
    # does the one whose executed notebook is gone.
    (sweep_dir / "x=3" / "square.ipynb").unlink()
    seen = []
    again = run_sweep(
        syllabus,
        "x",
        [0.5, 2, 3, -1],
        only=["square"],
        parameters={"label": "run"},
        out=out,
        jobs=2,
        timeout=120,
        on_result=seen.append,
    )
    return types.SimpleNamespace(
        root=root, out=out, dir=sweep_dir, status=status, sweep=again, seen=seen, executed=executed
    )


@pytest.mark.notebook
def test_sweep_exit_status_and_layout(sweep_run, capsys):
    assert sweep_run.status == 1  # x = -1 failed
    folders = sorted(p.name for p in sweep_run.dir.iterdir() if p.is_dir())
    assert folders == ["x=-1", "x=0.5", "x=2", "x=3"]
    for name in ("sweep.json", "sweep.md", "sweep.html", "index.html"):
        assert (sweep_run.dir / name).is_file()
    for folder in folders:  # each value is a normal course run
        assert (sweep_run.dir / folder / "summary.json").is_file()
        assert (sweep_run.dir / folder / "square.run.json").is_file()
        assert not (sweep_run.dir / folder / "minimal.ipynb").exists()


@pytest.mark.notebook
def test_sweep_is_resumed_except_failed_values(sweep_run):
    statuses = {r.parameters["x"]: r.status for r in sweep_run.seen}
    assert statuses == {0.5: "cached", 2: "cached", 3: "ok", -1: "failed"}
    for path, state in sweep_run.executed.items():
        if "x=-1" not in str(path) and "x=3" not in str(path):
            assert file_state(path) == state


@pytest.mark.notebook
def test_sweep_json_and_table_hold_the_closed_form(sweep_run):
    data = json.loads((sweep_run.dir / "sweep.json").read_text(encoding="utf-8"))
    assert data["param"] == "x" and data["values"] == [0.5, 2, 3, -1] and data["ok"] is False
    assert data["lessons"] == ["square"] and data["parameters"] == {"label": "run"}
    for label, x in (("0.5", 0.5), ("2", 2), ("3", 3)):
        run = data["runs"][label]["lessons"]["square"]
        assert run["status"] in ("ok", "cached") and run["records"]["y"] == x**2 and run["records"]["half"] == x / 2
        assert run["records"]["label"] == "run"  # -p reaches every value
    failed = data["runs"]["-1"]["lessons"]["square"]
    assert failed["status"] == "failed" and "x must be a number >= 0" in failed["error"]
    assert failed["failing_cell"]["index"] == 1

    md = (sweep_run.dir / "sweep.md").read_text(encoding="utf-8")
    assert "failed: x=-1: square" in md
    lines = [line for line in md.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == ["x", "half", "y", "status", "seconds"]  # numeric scalar records only ("label" is text)
    rows = {cells[0]: cells for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines[2:])}
    assert list(rows) == ["0.5", "2", "3", "-1"]
    for label, x in (("0.5", 0.5), ("2", 2), ("3", 3)):
        assert float(rows[label][1]) == x / 2 and float(rows[label][2]) == x**2
    assert [rows[label][3] for label in ("0.5", "2", "3")] == ["cached", "cached", "ok"]
    assert rows["-1"][1:4] == ["", "", "failed"]
    assert sweep_table(sweep_run.sweep) in md


@pytest.mark.notebook
def test_sweep_figure_data(sweep_run):
    fig = sweep_figure(sweep_run.sweep)
    traces = {(t.name, t.xaxis): t for t in fig.data}
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["half", "y", "seconds"]
    y_trace = next(t for t in fig.data if t.xaxis == "x2")
    assert y_trace.name == "square" and len(traces) == 3
    # Sorted by x; the failed value is a gap.
    assert list(y_trace.x) == [-1, 0.5, 2, 3]
    assert list(y_trace.y) == [None, 0.25, 4, 9]
    assert fig.layout.xaxis.type == "linear"  # a negative value: no log axis


@pytest.mark.notebook
def test_sweep_index_links_exist(sweep_run):
    import re

    index = (sweep_run.dir / "index.html").read_text(encoding="utf-8")
    assert "plotly-graph-div" in index
    index = re.sub(r"<script.*?</script>", "", index, flags=re.S)  # plotly.js holds links of its own
    links = re.findall(r'<a href="([^"]+)"', index)
    assert len(links) >= 4 * 3 + 3
    for link in links:
        assert (sweep_run.dir / link).is_file(), link
    for folder in ("x=0.5", "x=2", "x=3", "x=-1"):
        assert f"{folder}/site/notebooks/square.html" in links and f"{folder}/index.html" in links
    assert "x=-1/square.log" in links
    page = (sweep_run.dir / "sweep.html").read_text(encoding="utf-8")
    assert "plotly-graph-div" in page and '<script src="http' not in page and len(page) > 1_000_000  # plotly.js inline


def fake_sweep(values, ys, statuses=None, lessons=("a",)) -> SweepResult:
    runs = {}
    for k, (value, y) in enumerate(zip(values, ys)):
        label = value if isinstance(value, str) else repr(value)
        status = statuses[k] if statuses else "ok"
        runs[label] = [
            LessonResult(
                id=lesson, title=lesson, status=status, seconds=1.0 + k, records={"y": y, "flag": True, "name": "n"}
            )
            for lesson in lessons
        ]
        runs[label].append(LessonResult(id="other", title="other", status="skipped"))
    return SweepResult(param="beta", values=list(values), runs=runs, lessons=list(lessons), preset="smoke")


def test_sweep_figure_axes_and_gaps_without_running():
    fig = sweep_figure(fake_sweep([100, 0.1, 10, 1], [4.0, 1.0, 3.0, 2.0], ["ok", "ok", "failed", "cached"]))
    assert fig.layout.xaxis.type == "log"  # positive and spanning 3 decades
    y = next(t for t in fig.data if t.xaxis == "x")
    assert list(y.x) == [0.1, 1, 10, 100] and list(y.y) == [1.0, 2.0, None, 4.0]
    assert [a.text for a in fig.layout.annotations] == ["y", "seconds"]  # bools and strings are no numbers
    mixed = fake_sweep([1, 2, 3], [5.0, 5.0, 5.0])
    for k, label in enumerate(mixed.labels):
        mixed.runs[label][0].records["changes"] = float(k)
    assert [a.text for a in sweep_figure(mixed).layout.annotations] == ["changes", "y", "seconds"]
    assert sweep_figure(fake_sweep([1, 2, 5], [1, 2, 3])).layout.xaxis.type == "linear"  # < 2 decades
    categories = sweep_figure(fake_sweep(["kl", "chi2"], [1, 2]))
    assert categories.layout.xaxis.type == "category" and list(categories.data[0].x) == ["kl", "chi2"]
    two = sweep_figure(fake_sweep([1, 2], [1, 2], lessons=("a", "b")))
    assert {t.name for t in two.data} == {"a", "b"} and sum(t.showlegend for t in two.data) == 2
    table = sweep_table(fake_sweep([1, 2], [1, 2], lessons=("a", "b")))
    assert table.splitlines()[0] == "| beta | a: y | a: status | a: seconds | b: y | b: status | b: seconds |"


def test_write_sweep_summary_without_running(tmp_path):
    paths = write_sweep_summary(fake_sweep([0.1, 1], [1.0, 2.0]), tmp_path)
    assert set(paths) == {"json", "md", "html", "index"} and all(p.is_file() for p in paths.values())
    assert json.loads(paths["json"].read_text(encoding="utf-8"))["runs"]["0.1"]["lessons"]["a"]["records"]["y"] == 1.0


@pytest.mark.parametrize(
    "text, param, values",
    [
        ("beta=0.1,1,10,100", "beta", [0.1, 1, 10, 100]),
        ("betas=[0.1,1],[10,100]", "betas", [[0.1, 1], [10, 100]]),
        ("divergence=kl, chi2", "divergence", ["kl", "chi2"]),
        ("w={'a': 1, 'b': 2},(1, 2)", "w", [{"a": 1, "b": 2}, (1, 2)]),
        ("label='a,b','c'", "label", ["a,b", "c"]),
        ("x=5", "x", [5]),
    ],
)
def test_parse_sweep(text, param, values):
    assert parse_sweep(text) == (param, values)


@pytest.mark.parametrize(
    "text, message",
    [
        ("beta", "expected PARAM=v1,v2"),
        ("2x=1", "not a parameter name"),
        ("beta=1,,2", "empty value"),
        ("beta=", "empty value"),
        ("beta=1,1", "given twice"),
    ],
)
def test_parse_sweep_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse_sweep(text)


def test_cli_sweep_usage_errors(tmp_path, capsys):
    syllabus = make_course(tmp_path, SWEEP_SYLLABUS)
    out = tmp_path / "out"
    base = ["run", "--syllabus", str(syllabus), "--out", str(out)]
    for extra, message in [
        (["--sweep", "x=1,2", "--sweep", "x=3"], "argument --sweep: given twice"),
        (["--sweep", "x"], "argument --sweep: Invalid sweep 'x': expected PARAM=v1,v2"),
        (["--only", "square", "--force", "--resume"], "argument --resume: not allowed with argument --force"),
    ]:
        with pytest.raises(SystemExit) as info:
            main(base + extra)
        assert info.value.code == 2
        assert message in capsys.readouterr().err
    # Errors found from the lessons: exit status 2, nothing run.
    assert main(base + ["--only", "square", "minimal", "--sweep", "x=1,2"]) == 2
    err = capsys.readouterr().err
    assert "Invalid sweep parameter 'x': not declared" in err and "lesson(s) minimal" in err
    assert main(base + ["--sweep", "beta=1,2"]) == 2  # square and failing lack beta
    assert "lesson(s) square, failing" in capsys.readouterr().err
    assert main(base + ["--only", "square", "--sweep", "x=1,2", "-p", "x", "3"]) == 2
    assert "'x' is both swept and given as a parameter" in capsys.readouterr().err
    assert main(base + ["--only", "square", "--sweep", "x=1,2", "-p", "nope", "3"]) == 2
    assert "Invalid parameter(s) ['nope']" in capsys.readouterr().err
    assert not (out / "sweep-x").exists() and not (out / "sweep-beta").exists()


def test_cli_sweep_splits_bracketed_values(tmp_path, monkeypatch, capsys):
    syllabus = make_course(tmp_path, SWEEP_SYLLABUS)
    calls = {}

    def fake_run_sweep(syllabus, param, values, **kwargs):
        calls.update(param=param, values=values, **kwargs)
        result = fake_sweep([1], [1.0])
        result.out = tmp_path / "o" / "sweep-betas"
        return result

    monkeypatch.setattr(course, "run_sweep", fake_run_sweep)
    status = main(
        [
            "run",
            "--syllabus",
            str(syllabus),
            "--out",
            str(tmp_path / "o"),
            "--only",
            "minimal",
            "--sweep",
            "betas=[0.1,1],[10,100]",
            "--force",
            "-j",
            "3",
        ]
    )
    assert status == 0
    assert calls["param"] == "betas" and calls["values"] == [[0.1, 1], [10, 100]]
    assert calls["force"] is True and calls["jobs"] == 3 and calls["only"] == ["minimal"]
    assert "| beta | y | status | seconds |" in capsys.readouterr().out
