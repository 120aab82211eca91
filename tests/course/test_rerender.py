"""A change to a lesson's prose re-renders its executed notebook without running it; a change to its code runs it.

Oracles: notebooks built by hand here (the expected cell list written out), and the run's own files (papermill's
log and the record file keep their size and mtime when nothing ran).
"""

from __future__ import annotations

import hashlib
import json

import nbformat
import pytest
from _course_util import file_state, make_course

from dro_course import run_course
from dro_course._files import code_sha256
from dro_course.runner.rerender import rerender_prose

v4 = nbformat.v4


def _source():
    return v4.new_notebook(
        cells=[
            v4.new_markdown_cell("# Title"),
            v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
            v4.new_markdown_cell("Old prose."),
            v4.new_code_cell("print(x)"),
        ]
    )


def _executed():
    injected = v4.new_code_cell("x = 2", metadata={"tags": ["injected-parameters"]})
    printed = v4.new_code_cell("print(x)", execution_count=3)
    printed.outputs = [v4.new_output("stream", name="stdout", text="2\n")]
    return v4.new_notebook(
        cells=[
            v4.new_markdown_cell("# Title"),
            v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}, execution_count=1),
            injected,
            v4.new_markdown_cell("Old prose."),
            printed,
        ]
    )


def test_new_prose_keeps_the_outputs_and_the_injected_parameters():
    source = _source()
    source.cells[2].source = "New prose, with a typo fixed."
    source.cells.insert(3, v4.new_markdown_cell("A paragraph more."))
    merged = rerender_prose(source, _executed())
    assert [(c.cell_type, c.source) for c in merged.cells] == [
        ("markdown", "# Title"),
        ("code", "x = 1"),
        ("code", "x = 2"),  # papermill's cell stays right after the parameters cell
        ("markdown", "New prose, with a typo fixed."),
        ("markdown", "A paragraph more."),
        ("code", "print(x)"),
    ]
    assert merged.cells[-1].outputs[0]["text"] == "2\n" and merged.cells[-1].execution_count == 3
    assert merged.cells[2].metadata["tags"] == ["injected-parameters"]


@pytest.mark.parametrize(
    "edit",
    [
        lambda nb: setattr(nb.cells[3], "source", "print(x + 1)"),  # code edited
        lambda nb: nb.cells.append(v4.new_code_cell("y = 1")),  # code added
        lambda nb: nb.cells.pop(3),  # code removed
        lambda nb: nb.cells[3].metadata.update(tags=["raises-exception"]),  # a tag changes how it runs
    ],
)
def test_a_code_change_is_never_re_rendered(edit):
    source = _source()
    edit(source)
    assert rerender_prose(source, _executed()) is None


def test_code_hash_ignores_prose_and_follows_code_and_tags(tmp_path):
    path = tmp_path / "nb.ipynb"

    def digest(nb):
        nbformat.write(nb, str(path))
        return code_sha256(path)

    base = digest(_source())
    prose = _source()
    prose.cells[0].source = "# Another title"
    prose.cells.append(v4.new_markdown_cell("More."))
    assert digest(prose) == base
    code = _source()
    code.cells[3].source = "print(x)  # a comment is code too"
    tags = _source()
    tags.cells[3].metadata["tags"] = ["hide-input"]
    assert len({base, digest(code), digest(tags)}) == 3


SYLLABUS = """\
title: Re-render course
lessons:
  - {id: square, title: Squares a number, notebook: src/square.ipynb}
"""


@pytest.mark.notebook
def test_the_runner_re_renders_prose_and_runs_code(tmp_path):
    syllabus = make_course(tmp_path, SYLLABUS)
    out, source = tmp_path / "out", tmp_path / "src" / "square.ipynb"
    kwargs = dict(preset="smoke", out=out, jobs=1, timeout=120, html=False, parameters={"x": 3})
    [first] = run_course(syllabus, **kwargs)
    assert first.status == "ok" and first.records["y"] == 9
    ran = {name: file_state(out / name) for name in ("square.log", "square.record.json")}
    outputs_before = [c.get("outputs") for c in nbformat.read(str(out / "square.ipynb"), as_version=4).cells]

    nb = nbformat.read(str(source), as_version=4)
    nb.cells.insert(1, v4.new_markdown_cell("Prose added after the run: $y = x^2$."))
    nbformat.write(nb, str(source))
    [again] = run_course(syllabus, **kwargs)
    assert again.status == "cached" and again.records["y"] == 9
    assert {name: file_state(out / name) for name in ran} == ran  # papermill did not run
    executed = nbformat.read(str(out / "square.ipynb"), as_version=4)
    assert "Prose added after the run: $y = x^2$." in [c.source for c in executed.cells if c.cell_type == "markdown"]
    assert [c.get("outputs") for c in executed.cells if c.cell_type == "code"] == [
        o for o in outputs_before if o is not None
    ]
    stored = json.loads((out / "square.run.json").read_text(encoding="utf-8"))
    assert stored["notebook_sha256"] == hashlib.sha256(source.read_bytes()).hexdigest() and "rerendered" in stored
    assert [r.status for r in run_course(syllabus, **kwargs)] == ["cached"]  # and the next run reuses it as is

    nb.cells[-1].source += "\nrecord('cube', x**3)"
    nbformat.write(nb, str(source))
    [edited] = run_course(syllabus, **kwargs)
    assert edited.status == "ok" and edited.records["cube"] == 27


TWO_LESSONS = """\
title: Two lessons
lessons:
  - {id: square, title: Squares a number, notebook: src/square.ipynb}
  - {id: passing, title: A passing lesson, notebook: src/passing.ipynb}
"""


@pytest.mark.notebook
def test_running_one_lesson_keeps_the_other_lessons_pages(tmp_path):
    syllabus = make_course(tmp_path, TWO_LESSONS)
    out = tmp_path / "out"
    kwargs = dict(preset="smoke", out=out, jobs=1, timeout=120)
    assert [r.status for r in run_course(syllabus, html=False, **kwargs)] == ["ok", "ok"]
    results = run_course(syllabus, only=["passing"], force=True, **kwargs)
    assert [r.status for r in results] == ["skipped", "ok"]
    square = (out / "site" / "notebooks" / "square.html").read_text(encoding="utf-8")
    # the page is the lesson as its earlier run left it (the student's site says no more of the run than that)
    assert "Not executed in this run" not in square and "failed in this run" not in square
    # its executed copy is offered for download, as the lesson that ran now
    assert square.count('class="reference download internal"') == passing_downloads(out) >= 2


def passing_downloads(out):
    page = (out / "site" / "notebooks" / "passing.html").read_text(encoding="utf-8")
    return page.count('class="reference download internal"')
