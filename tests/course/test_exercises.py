"""Exercises: check_exercise says right / not yet and never raises on a student's mistake; solutions files fill
the stubs of a notebook and refuse a stub without a solution or a solution without a stub."""

from __future__ import annotations

import math

import nbformat
import numpy as np
import pytest
import torch

from dro_course import check_exercise, fill_solutions, read_solutions, solutions_path
from dro_course.exercises import exercise_id


def test_a_stub_left_as_it_is_is_not_yet_and_does_not_raise(capsys):
    result = check_exercise("1", ..., expected=2.0)
    assert not result and "Exercise 1 — not yet: the stub is not filled in yet" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, expected, ok",
    [
        (math.log(2), 0.6931471, True),
        (0.7, math.log(2), False),
        (torch.tensor([0.2, 0.8]), np.array([0.2, 0.8]), True),
        ([0.25, 0.75], torch.tensor([0.2, 0.8]), False),
        (np.ones(3), np.ones(4), False),
        (float("nan"), 1.0, False),
        ("kl", "kl", True),
        ("chi2", "kl", False),
        (True, True, True),
    ],
)
def test_values_are_compared_to_their_tolerance(answer, expected, ok):
    assert bool(check_exercise("x", answer, expected, quiet=True)) is ok


def test_messages_say_what_is_wrong():
    assert "got 0.7, expected about 0.6931" in check_exercise("2", 0.7, math.log(2), quiet=True).message
    assert "shape (3,), expected (4,)" in check_exercise("2", np.ones(3), np.ones(4), quiet=True).message
    hinted = check_exercise("2", 1.0, 2.0, hint="Use eq. 5.", quiet=True).message
    assert hinted.endswith("Hint: Use eq. 5.")
    assert "Hint" not in check_exercise("2", ..., 2.0, hint="Use eq. 5.", quiet=True).message  # no attempt yet


def test_the_students_code_may_raise_inside_a_lambda(capsys):
    result = check_exercise("3", lambda: 1 / 0, expected=1.0)
    assert not result and "raised ZeroDivisionError" in capsys.readouterr().out
    assert check_exercise("3", lambda: 2.0, expected=2.0, quiet=True)


def test_a_predicate_accepts_every_right_form():
    on_simplex = lambda q: (bool(np.all(np.asarray(q) >= 0) and abs(sum(q) - 1) < 1e-6), "weights must sum to 1")  # noqa: E731
    assert check_exercise("4", [0.5, 0.5], on_simplex, quiet=True)
    wrong = check_exercise("4", [0.5, 0.6], on_simplex, quiet=True)
    assert not wrong and "weights must sum to 1" in wrong.message


def test_the_exercise_number_must_be_given():
    with pytest.raises(ValueError, match="exercise's number"):
        check_exercise(2, 1.0, 1.0)


def _notebook():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("text"),
        nbformat.v4.new_code_cell("# Exercise 1 — the mean\nanswer = ...", metadata={"tags": ["exercise"]}),
        nbformat.v4.new_code_cell('check_exercise("1", answer, 2.0)', metadata={"tags": ["check"]}),
        nbformat.v4.new_code_cell("\n# Exercise 2b: a loop\ntotal = ...", metadata={"tags": ["exercise"]}),
    ]
    return nb


def test_solutions_fill_the_stubs_and_keep_the_header(tmp_path):
    path = tmp_path / "01_x.py"
    path.write_text("# solutions\n# %% exercise 1\nanswer = (1 + 3) / 2\n\n# %% exercise 2b\ntotal = sum(range(4))\n")
    solutions = read_solutions(path)
    assert solutions == {"1": "answer = (1 + 3) / 2\n", "2b": "total = sum(range(4))\n"}
    nb = _notebook()
    filled = fill_solutions(nb, solutions)
    assert filled.cells[1].source == "# Exercise 1 — the mean\nanswer = (1 + 3) / 2"
    assert filled.cells[3].source == "# Exercise 2b: a loop\ntotal = sum(range(4))"
    assert nb.cells[1].source.endswith("answer = ...")  # the student's copy is untouched
    namespace = {"check_exercise": check_exercise}
    exec(filled.cells[1].source, namespace)
    assert check_exercise("1", namespace["answer"], 2.0, quiet=True)


def test_a_written_exercise_gets_its_answer_in_a_solution_cell_after_it(tmp_path):
    path = tmp_path / "00_x.py"
    path.write_text(
        "# %% exercise 1\nanswer = 2.0\n\n"
        "# %% exercise 2 [markdown]\n# A shift changes nothing:\n#\n# $e^{c}$ cancels.\n"
    )
    solutions = read_solutions(path)
    assert solutions["2"] == "A shift changes nothing:\n\n$e^{c}$ cancels.\n"
    nb = _notebook()
    nb.cells = nb.cells[:3] + [
        nbformat.v4.new_markdown_cell("**Exercise 2.** Shift the losses.", metadata={"tags": ["exercise"]})
    ]
    filled = fill_solutions(nb, solutions)
    assert [c.cell_type for c in filled.cells] == ["markdown", "code", "code", "markdown", "markdown"]
    assert filled.cells[4].source == "**Solution 2.** A shift changes nothing:\n\n$e^{c}$ cancels."
    assert filled.cells[4].metadata["tags"] == ["solution"] and len(nb.cells) == 4
    nbformat.validate(filled)


def test_missing_and_unused_solutions_are_refused():
    with pytest.raises(ValueError, match="exercise 2b has no solution"):
        fill_solutions(_notebook(), {"1": "answer = 2\n"})
    with pytest.raises(ValueError, match=r"no exercise cell: \['3'\]"):
        fill_solutions(_notebook(), {"1": "a\n", "2b": "b\n", "3": "c\n"})
    nb = _notebook()
    nb.cells[1].source = "answer = ..."
    with pytest.raises(ValueError, match="does not open with 'Exercise N'"):
        fill_solutions(nb, {"1": "a\n", "2b": "b\n"})


def test_a_solutions_file_is_read_strictly(tmp_path):
    path = tmp_path / "x.py"
    path.write_text("answer = 1\n")
    with pytest.raises(ValueError, match="no '# %% exercise N' section"):
        read_solutions(path)
    path.write_text("# %% exercise 1\na = 1\n# %% exercise 1\na = 2\n")
    with pytest.raises(ValueError, match="two solutions"):
        read_solutions(path)


def test_ids_and_paths():
    assert exercise_id("\n#  exercise 3.2 — x\n...") == "3.2" and exercise_id("x = 1\n# Exercise 1") is None
    assert exercise_id("**Exercise 4.** Why?") == "4" and exercise_id("### Exercise 5 (pen and paper)") == "5"
    path = solutions_path("/repo/notebooks/02_hws.ipynb")
    assert path.as_posix() == "/repo/course/solutions/02_hws.py"
