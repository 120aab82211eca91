"""Exercises in a lesson, and their solutions.

A code exercise is two cells. The first, tagged ``exercise``, opens with ``# Exercise N — what to do`` and holds a
stub the student completes (``answer = ...``). The next, tagged ``check``, calls :func:`check_exercise`, which
compares the answer with what the library or an oracle computes and prints either ``Exercise N — right`` or
``Exercise N — not yet`` with the reason. It never raises, so Run All goes on past a stub nobody has filled in::

    # Exercise 2 — the KL worst-case weights of `losses` at β = 3, by the closed form (eq. 5)
    answer = ...

    check_exercise("2", answer, expected=worst_case_weights(losses, divergence="kl", beta=3.0))

The solutions are not in the student's notebook (what Binder, Colab and JupyterLab open): they live beside the
lessons in ``course/solutions/<lesson>.py``, one ``# %% exercise N`` section per exercise cell — plain Python that
ruff lints and a diff shows. :func:`fill_solutions` replaces each stub with its solution, which is how the course
build writes the instructor copy and how the tests check that every solution passes its check.
"""

from __future__ import annotations

import copy
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dro_lab._files import atomic_write_text

__all__ = [
    "CHECK_TAG",
    "EXERCISE_TAG",
    "SOLUTION_TAG",
    "ExerciseCheck",
    "check_exercise",
    "exercise_id",
    "fill_solutions",
    "read_solutions",
    "solutions_path",
    "write_instructor_copy",
]

EXERCISE_TAG = "exercise"
CHECK_TAG = "check"
SOLUTION_TAG = "solution"
RIGHT, NOT_YET = "right", "not yet"
# "# Exercise 2 — …" opens a code exercise; "**Exercise 2.** …" or "### Exercise 2" a written one.
_HEADER = re.compile(r"^(?:#+\s*|\*\*)Exercise\s+([\w]+(?:\.\w+)*)", re.IGNORECASE)
_SECTION = re.compile(r"^# %% exercise\s+([\w.]+)(\s+\[markdown\])?\s*$", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class ExerciseCheck:
    """What :func:`check_exercise` found: the exercise, whether the answer is right, and the message it printed."""

    exercise: str
    ok: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return self.message

    def _ipython_display_(self) -> None:
        """Nothing: the message is printed already (a check cell's last line would echo the object)."""


def check_exercise(
    exercise: str,
    answer: Any,
    expected: Any,
    *,
    rtol: float = 1e-4,
    atol: float = 1e-6,
    hint: str = "",
    quiet: bool = False,
) -> ExerciseCheck:
    """Compare a student's ``answer`` with ``expected`` and print ``Exercise N — right`` or ``— not yet: why``.

    Args:
        exercise: the exercise's number, as in its cell's ``# Exercise N`` line.
        answer: the student's value; a zero-argument callable (``lambda: my_weights(losses)``) is called here, so
            an error in the student's code becomes a "not yet" message instead of stopping the notebook.
        expected: the right value (a number, array or tensor: compared to ``rtol``/``atol``; anything else: by
            equality), or a predicate ``expected(answer) -> bool | (bool, reason)`` for answers with many right forms.
        hint: a sentence added to a "not yet" message.
        quiet: return the result without printing it.
    """
    if not isinstance(exercise, str) or not exercise:
        raise ValueError(f"exercise must be the exercise's number as a string, got {exercise!r}")
    ok, why = _judge(answer, expected, rtol, atol)
    message = f"Exercise {exercise} — {RIGHT}" + (f": {why}" if why else "")
    if not ok:
        attempted = answer is not Ellipsis and answer is not None  # a hint answers an attempt, not an empty stub
        message = f"Exercise {exercise} — {NOT_YET}: {why}" + (f" Hint: {hint}" if hint and attempted else "")
    if not quiet:
        print(message)
    return ExerciseCheck(exercise, ok, message)


def _judge(answer: Any, expected: Any, rtol: float, atol: float) -> tuple[bool, str]:
    if callable(answer) and not _is_array(answer):
        try:
            answer = answer()
        except Exception as exc:  # the student's code: any error is reported, never raised
            return False, f"your code raised {type(exc).__name__}: {exc}."
    if answer is Ellipsis or answer is None:
        return False, "the stub is not filled in yet (replace the `...` in the exercise cell)."
    if callable(expected) and not _is_array(expected):
        verdict = expected(answer)
        ok, why = verdict if isinstance(verdict, tuple) else (bool(verdict), "")
        return bool(ok), why or ("" if ok else "the answer does not have the property asked for.")
    if _is_number_like(expected):
        return _close(answer, expected, rtol, atol)
    if answer == expected:
        return True, ""
    return False, f"got {answer!r}, expected something else."


def _is_array(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _is_number_like(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)) or _is_array(value):
        return True
    return isinstance(value, (list, tuple)) and bool(value) and all(_is_number_like(v) for v in value)


def _as_numpy(value: Any):
    import numpy as np  # numpy only when a number is checked: importing the course package stays cheap

    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value, dtype=float)


def _close(answer: Any, expected: Any, rtol: float, atol: float) -> tuple[bool, str]:
    import numpy as np  # see _as_numpy

    try:
        got = _as_numpy(answer)
    except (TypeError, ValueError):
        return False, f"expected a number or an array, got {type(answer).__name__}."
    want = _as_numpy(expected)
    if got.shape != want.shape:
        return False, f"the answer has shape {tuple(got.shape)}, expected {tuple(want.shape)}."
    if not np.all(np.isfinite(got)):
        return False, "the answer holds NaN or infinite values."
    if np.allclose(got, want, rtol=rtol, atol=atol):
        return True, "matches the library's value." if got.size > 1 else f"{_fmt(float(got))} is right."
    if got.size == 1:
        return False, f"got {_fmt(float(got))}, expected about {_fmt(float(want))}."
    worst = float(np.max(np.abs(got - want)))
    return False, f"largest difference from the library's value: {_fmt(worst)} (tolerance {rtol:g} relative)."


def _fmt(x: float) -> str:
    return f"{x:.4g}" if math.isfinite(x) else str(x)


# ---------------------------------------------------------------------------------------------- solutions
def exercise_id(source: str) -> str | None:
    """The ``N`` of an exercise cell's first ``# Exercise N`` line (None when it has none)."""
    for line in source.splitlines():
        if line.strip():
            match = _HEADER.match(line.strip())
            return match.group(1) if match else None
    return None


def solutions_path(notebook: str | os.PathLike, root: str | os.PathLike | None = None) -> Path:
    """Where the solutions of ``notebook`` live: ``solutions/<stem>.py`` beside the syllabus, that is
    ``<root>/course/solutions/`` in the repository (root: the folder above ``notebooks/``) or
    ``dro_course/solutions/`` in an installed package, whose notebooks are ``dro_course/notebooks/``. The
    repository's path when neither file exists."""
    notebook = Path(notebook)
    base = Path(root) if root is not None else notebook.resolve().parent.parent
    for folder in (base / "course", base):  # the repository's layout, then the installed package's
        candidate = folder / "solutions" / f"{notebook.stem}.py"
        if candidate.is_file():
            return candidate
    return base / "course" / "solutions" / f"{notebook.stem}.py"


def read_solutions(path: str | os.PathLike) -> dict[str, str]:
    """Exercise number → solution, from a solutions file's sections: ``# %% exercise N`` holds the code that
    replaces a code exercise's stub; ``# %% exercise N [markdown]`` a written answer as comment lines (jupytext's
    percent format), returned as Markdown (the leading ``# `` removed)."""
    text = Path(path).read_text(encoding="utf-8")
    marks = list(_SECTION.finditer(text))
    if not marks:
        raise ValueError(f"{path}: no '# %% exercise N' section")
    out: dict[str, str] = {}
    for mark, following in zip(marks, [*marks[1:], None]):
        key = mark.group(1)
        if key in out:
            raise ValueError(f"{path}: exercise {key} has two solutions")
        body = text[mark.end() : following.start() if following else len(text)].strip("\n")
        if mark.group(2):
            body = "\n".join(re.sub(r"^# ?", "", line) for line in body.splitlines())
        out[key] = body + "\n"
    return out


def fill_solutions(notebook: Any, solutions: Mapping[str, str]) -> Any:
    """A copy of ``notebook`` (an nbformat node) with the solutions in: a code exercise's stub is replaced (its
    ``# Exercise N`` line kept); a written exercise (a Markdown cell tagged ``exercise``) gets its answer in a
    Markdown cell tagged ``solution`` right after it. Raises ``ValueError`` when an exercise has no solution or a
    solution no exercise."""
    filled = copy.deepcopy(notebook)
    seen, cells = set(), []
    for cell in filled.cells:
        cells.append(cell)
        if EXERCISE_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        key = exercise_id(cell.source)
        if key is None:
            raise ValueError(f"an exercise cell does not open with 'Exercise N': {cell.source[:60]!r}")
        if key not in solutions:
            raise ValueError(f"exercise {key} has no solution")
        if cell.cell_type == "markdown":
            from nbformat.v4 import new_markdown_cell  # nbformat only when a notebook is filled: importing stays cheap

            text = f"**Solution {key}.** {solutions[key]}".rstrip("\n")
            cells.append(new_markdown_cell(text, metadata={"tags": [SOLUTION_TAG]}))
        else:
            header = next(line for line in cell.source.splitlines() if line.strip())
            cell.source = f"{header}\n{solutions[key]}".rstrip("\n")
        seen.add(key)
    filled.cells = cells
    unused = sorted(set(solutions) - seen)
    if unused:
        raise ValueError(f"solutions with no exercise cell: {unused}")
    return filled


def write_instructor_copy(notebook: str | os.PathLike, out: str | os.PathLike) -> Path | None:
    """Write ``notebook`` with its solutions filled in (unexecuted) to ``out``; ``None`` when the lesson has no
    solutions file."""
    import nbformat  # see fill_solutions

    solutions = solutions_path(notebook)
    if not solutions.is_file():
        return None
    filled = fill_solutions(nbformat.read(str(notebook), as_version=4), read_solutions(solutions))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = nbformat.writes(filled)
    atomic_write_text(out, text if text.endswith("\n") else text + "\n")  # what nbformat.write writes, atomically
    return out
