"""The shape of a lesson a student reads: code is narration, student language, real exercises.

Checked statically on the stored notebooks (outputs are not stored):

* at most 250 non-blank code lines outside the parameters cell (the install cell, the exercises and their checks
  count), and no code cell over 25 lines but the parameters and the exercise cells;
* no function or class defined outside exercise and solution cells (what a lesson needs lives in the library);
* none of the words that speak of texts a student does not have ("spec", "pitfall N", "the text we have" …);
* at least three exercises (one in lesson 00), at least one of them code: a cell tagged ``exercise`` opening with
  ``# Exercise N`` followed by a cell tagged ``check`` that calls ``check_exercise("N"…``; and a solution for every
  exercise in ``course/solutions/<lesson>.py`` (no solution left in the student's notebook);
* a check cell shows no answer: it compares with what the lesson's ``expected`` module computes;
* the idea first: before the first section after "Parameters" come only the install cell, the parameters cell (each
  parameter on one line with its comment) and one set-up cell of at most 10 lines; no code line is wider than the
  site's code column (``MAX_CODE_WIDTH`` characters);
* a lesson says what its paper shows in its own words: no heading points into the paper (§, eq., App., Theorem …),
  and the prose before the references keeps at most ``MAX_PAPER_POINTERS`` such pointers, for the curious.

Whether the solutions pass their checks and the stubs report "not yet" is run in
``tests/course/test_instructor_copy.py``.
Lessons not rewritten yet are listed in ``NOT_YET``: each of them must still fail (strict xfail), so the list
shrinks as lessons are rewritten and cannot go stale.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from dro_course import read_solutions, solutions_path
from dro_course.exercises import CHECK_TAG, EXERCISE_TAG, SOLUTION_TAG, exercise_id

REPO = Path(__file__).resolve().parents[3]
LESSONS = sorted((REPO / "notebooks").glob("0*.ipynb"))
MAX_CODE_LINES, MAX_CELL_LINES = 250, 25
#: The set-up cell's lines, and the characters of a code line that fit the site's code column without scrolling.
MAX_SETUP_LINES, MAX_CODE_WIDTH = 10, 88
MAX_PAPER_POINTERS = 6
#: A pointer into a paper: a section, equation, appendix, algorithm, table, figure or numbered result.
PAPER_POINTER = re.compile(
    r"§\s*[A-Z0-9]|\b[Ee]qs?\.\s*\(?\d|\bApp\.\s*[A-Z]|\bAppendix\b"
    r"|\b(?:Algorithms?|Tables?|Figs?\.|Figures?|Theorems?|Lemmas?|Propositions?|Corollary|Corollaries|Assumptions?"
    r"|Def\.|Definitions?|Examples?|Sections?)\s*[A-Z]?\d+\.\d|\b(?:Algorithms?|Tables?|Figs?\.|Figures?|Theorems?"
    r"|Lemmas?|Propositions?|Corollary|Assumptions?|Def\.)\s*[A-Z]?\d"
)
PARAMETER_LINE = re.compile(r"\w+ = \S.*?\s#\s*\S.*")
#: Lessons still to be rewritten in the new shape (issue 19); remove a lesson from here when it passes.
NOT_YET: set[str] = set()
FORBIDDEN = re.compile(
    r"\bspec\b|\bpitfall\b|the text we have|developer notes|\breviewer\s*\d|not written yet|headless twin",
    re.IGNORECASE,
)


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def _lines(source: str) -> list[str]:
    return [line for line in source.splitlines() if line.strip()]


def _problems(path: Path) -> list[str]:
    nb = nbformat.read(str(path), as_version=4)
    problems, total = [], 0
    for i, cell in enumerate(nb.cells):
        tags = _tags(cell)
        if (found := FORBIDDEN.search(cell.source)) is not None:
            problems.append(f"cell {i}: speaks of {found.group(0)!r}")
        if cell.cell_type != "code" or "parameters" in tags:
            continue
        lines = _lines(cell.source)
        total += len(lines)  # every code line a student reads: the install cell, the exercises and checks too
        if {EXERCISE_TAG, SOLUTION_TAG} & set(tags):
            continue
        if len(lines) > MAX_CELL_LINES:
            problems.append(f"cell {i}: {len(lines)} code lines (at most {MAX_CELL_LINES})")
        source = TransformerManager().transform_cell(cell.source)  # what IPython runs: magics become calls
        defined = [n.name for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        if defined:
            problems.append(f"cell {i}: defines {defined} (what a lesson needs belongs in the library)")
    if total > MAX_CODE_LINES:
        problems.append(f"{total} code lines outside the parameters cell (at most {MAX_CODE_LINES})")
    return problems + _head_problems(nb) + _width_problems(nb) + _pointer_problems(nb) + _exercise_problems(path, nb)


def _sections(nb) -> list[int]:
    """The indices of the markdown cells that open a numbered or named section (a level-2 heading)."""
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and re.search(r"^## ", c.source, re.M)]


def _head_problems(nb) -> list[str]:
    """Before the first section after "Parameters": the install cell, the parameters cell, one short set-up cell."""
    sections = _sections(nb)
    end = sections[1] if len(sections) > 1 else len(nb.cells)
    head = [(i, c) for i, c in enumerate(nb.cells[:end]) if c.cell_type == "code"]
    kinds = [
        "install" if "install" in _tags(c) else "parameters" if "parameters" in _tags(c) else "set-up" for _, c in head
    ]
    if kinds != ["install", "parameters", "set-up"]:
        return [f"before the first section: code cells {kinds} (install, parameters and one set-up cell)"]
    problems = []
    (_, parameters), (i, setup) = head[1], head[2]
    if len(_lines(setup.source)) > MAX_SETUP_LINES:
        problems.append(f"cell {i}: a set-up cell of {len(_lines(setup.source))} lines (at most {MAX_SETUP_LINES})")
    for line in _lines(parameters.source):
        if not PARAMETER_LINE.fullmatch(line):
            problems.append(f"parameters: {line.strip()!r} is not one parameter on one line with its comment")
    return problems


def _width_problems(nb) -> list[str]:
    wide = [
        (i, len(line))
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        for line in c.source.splitlines()
        if len(line) > MAX_CODE_WIDTH
    ]
    return [f"cell {i}: a code line of {n} characters (at most {MAX_CODE_WIDTH})" for i, n in wide]


def _pointer_problems(nb) -> list[str]:
    sections = _sections(nb)
    references = next((i for i in sections if re.search(r"^## .*References", nb.cells[i].source, re.M)), None)
    problems, count = [], 0
    for i, cell in enumerate(nb.cells[:references]):
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            if line.startswith("#") and (found := PAPER_POINTER.search(line)):
                problems.append(f"cell {i}: a heading points into the paper ({found.group(0)!r}): {line[:60]!r}")
        count += len(PAPER_POINTER.findall(cell.source))
    if count > MAX_PAPER_POINTERS:
        problems.append(f"{count} pointers into the paper in the prose (at most {MAX_PAPER_POINTERS})")
    return problems


def _answers_in_sight(source: str) -> list[str]:
    """A check cell computes no expected value in sight: each ``check_exercise`` compares with a call to the
    lesson's ``expected`` module, or a name taken from one (``q_expected``), and the cell calls no library."""
    problems = ["calls dro_lab: the expected value is in sight"] if "dro_lab." in source else []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check_exercise" and len(node.args) >= 3:
            shown = ast.unparse(node.args[2])
            if not (re.fullmatch(r"\w+_expected", shown) or shown.startswith("expected.")):
                problems.append(f"compares with {shown}, in sight (compute it in the lesson's expected module)")
    return problems


def _exercise_problems(path: Path, nb) -> list[str]:
    problems, ids, code_ids = [], [], []
    for i, cell in enumerate(nb.cells):
        if SOLUTION_TAG in _tags(cell):
            problems.append(f"cell {i}: a solution in the student's notebook")
        if "<details>" in cell.source and "olution" in cell.source:
            problems.append(f"cell {i}: a solution in <details> in the student's notebook")
        if EXERCISE_TAG not in _tags(cell):
            continue
        key = exercise_id(cell.source)
        if key is None:
            problems.append(f"cell {i}: an exercise cell without its 'Exercise N' header")
            continue
        ids.append(key)
        if cell.cell_type == "code":
            code_ids.append(key)
            following = nb.cells[i + 1] if i + 1 < len(nb.cells) else None
            if following is None or CHECK_TAG not in _tags(following):
                problems.append(f"exercise {key}: not followed by a cell tagged '{CHECK_TAG}'")
            elif f'check_exercise("{key}"' not in following.source:
                problems.append(f'exercise {key}: its check cell does not call check_exercise("{key}", …)')
            else:
                problems += [f"exercise {key}: {p}" for p in _answers_in_sight(following.source)]
    first = next((i for i, c in enumerate(nb.cells) if EXERCISE_TAG in _tags(c)), len(nb.cells))
    after = [
        i
        for i, c in enumerate(nb.cells[first:], first)
        if c.cell_type == "code" and not {EXERCISE_TAG, CHECK_TAG} & set(_tags(c))
    ]
    if after:  # the solutions run after the whole lesson (dro_course.runner.instructor): nothing may follow them
        problems.append(f"cells {after}: code after the first exercise that is neither an exercise nor its check")
    wanted = 1 if path.stem.startswith("00") else 3
    if len(ids) < wanted:
        problems.append(f"{len(ids)} exercises (at least {wanted})")
    if not code_ids:
        problems.append("no code exercise with a check")
    solutions_file = solutions_path(path, REPO)
    if not solutions_file.is_file():
        return problems + [f"no solutions file {solutions_file.relative_to(REPO)}"]
    solutions = read_solutions(solutions_file)
    missing, extra = sorted(set(ids) - set(solutions)), sorted(set(solutions) - set(ids))
    if missing or extra:
        problems.append(f"solutions missing for {missing}, or without an exercise: {extra}")
    return problems


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, marks=pytest.mark.xfail(strict=True, reason="not rewritten yet")) if p.stem in NOT_YET else p
        for p in LESSONS
    ],
    ids=[p.stem for p in LESSONS],
)
def test_the_lesson_has_the_shape_of_a_lesson(path):
    problems = _problems(path)
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


def test_the_checker_finds_what_it_is_meant_to_find(tmp_path):
    """The checker itself, on a notebook built to break every rule once."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("As the spec says (pitfall 3)."),
        nbformat.v4.new_code_cell("\n".join(f"x{i} = {i}" for i in range(26))),
        nbformat.v4.new_code_cell("def helper():\n    return 1"),
        nbformat.v4.new_code_cell("# Exercise 1 — x\nanswer = ...", metadata={"tags": ["exercise"]}),
        nbformat.v4.new_code_cell("print(answer)"),
        nbformat.v4.new_markdown_cell("<details><summary>Solution</summary>42</details>"),
    ]
    path = tmp_path / "notebooks" / "09_broken.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, str(path))
    found = "\n".join(_problems(path))
    for expected in (
        "speaks of 'spec'",
        "26 code lines (at most 25)",
        "defines ['helper']",
        "exercise 1: not followed by a cell tagged 'check'",
        "cells [4]: code after the first exercise",
        "a solution in <details>",
        "1 exercises (at least 3)",
        "no solutions file",
    ):
        assert expected in found, found


def test_a_lesson_has_one_title_everywhere():
    """The notebook's heading, the syllabus, the home page and the navigation say the same: "Lesson NN — title"."""
    from dro_course import load_syllabus

    for lesson in load_syllabus(REPO / "course" / "syllabus.yaml", check_notebooks=False).lessons:
        heading = nbformat.read(str(lesson.notebook), as_version=4).cells[0].source.splitlines()[0]
        assert heading == f"# Lesson {lesson.number} — {lesson.title}", lesson.id


def _head(setup: str, parameters: str = "epochs = None  # epochs of a run") -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Lesson 09 — x"),
        nbformat.v4.new_code_cell("import x", metadata={"tags": ["install"]}),
        nbformat.v4.new_markdown_cell("## 1. Parameters"),
        nbformat.v4.new_code_cell(parameters, metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(setup),
        nbformat.v4.new_markdown_cell("## 2. The idea"),
    ]
    return nb


def test_the_checker_holds_a_lesson_to_the_idea_first():
    """The head of a lesson: one set-up cell of at most 10 lines, one documented parameter per line, no code line
    wider than the column, no pointer into the paper in a heading, few in the prose."""
    assert _head_problems(_head("setup = setup_lesson('09', globals())")) == []
    assert "a set-up cell of 11 lines" in "\n".join(_head_problems(_head("\n".join(["x = 1"] * 11))))
    two = _head("x = 1")
    two.cells.insert(5, nbformat.v4.new_code_cell("y = 2"))
    assert "code cells ['install', 'parameters', 'set-up', 'set-up']" in _head_problems(two)[0]
    bare = _head("x = 1", "epochs = None  # epochs\nmomentum = 0.9\nlr = [\n  0.1]  # no")
    flagged = [p.split(": ", 1)[1].split(" is not")[0] for p in _head_problems(bare)]
    assert flagged == ["'momentum = 0.9'", "'lr = ['", "'0.1]  # no'"]
    wide = _head("x = 1  # " + "w" * (MAX_CODE_WIDTH - 8))
    assert _width_problems(wide) == [
        f"cell 4: a code line of {MAX_CODE_WIDTH + 1} characters (at most {MAX_CODE_WIDTH})"
    ]
    pointed = _head("x = 1")
    pointed.cells[5].source = "## 2. The robust loss (Lemma 3.2)\n\n" + "See eq. (4). " * (MAX_PAPER_POINTERS + 1)
    found = _pointer_problems(pointed)
    assert found[0].startswith("cell 5: a heading points into the paper ('Lemma 3")
    assert found[1] == f"{MAX_PAPER_POINTERS + 2} pointers into the paper in the prose (at most {MAX_PAPER_POINTERS})"
    references = _head("x = 1")
    references.cells.append(nbformat.v4.new_markdown_cell("## 8. References\n\n" + "§3.1, eq. (4). " * 20))
    assert _pointer_problems(references) == []  # the references map the lesson onto the paper
