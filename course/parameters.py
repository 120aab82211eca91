"""A lesson's parameters: which names its ``parameters`` cell declares, how one value is checked, how a
command-line value is read.

:func:`check_parameter` is the one check of a lesson parameter; the syllabus states, per lesson, the
keyword arguments it is called with (see :mod:`.syllabus`), and :func:`~.lesson_setup.setup_lesson`
calls it for every declared parameter.
"""

from __future__ import annotations

import ast
import inspect
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: Environment variable a lesson may read to override its stored ``preset`` (``make test`` sets it);
#: the runner sets it to the preset it passes, so both ways of choosing a preset agree.
PRESET_ENV = "DRO_LAB_PRESET"
#: A parameter name: a Python identifier.
IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_KIND_WORDS = {
    "int": ("an integer", "integers"),
    "number": ("a number", "numbers"),
    "str": ("a string", "strings"),
    "bool": ("True or False", "booleans"),
}


def _kind_ok(kind: str | None, value: Any) -> bool:
    if kind is None:
        return True
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    raise ValueError(f"check_parameter: invalid kind {kind!r}; kinds: {', '.join(_KIND_WORDS)}")


def _number_text(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _range_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    """``in (0, 1]``, ``≥ 0``, ``< 10`` or '' for no bounds."""
    if low is not None and high is not None:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        return f"in {left}{_number_text(low)}, {_number_text(high)}{right}"
    if low is not None:
        return f"{'>' if low_open else '≥'} {_number_text(low)}"
    if high is not None:
        return f"{'<' if high_open else '≤'} {_number_text(high)}"
    return ""


def _expected(kind: str | None, choices: tuple | None, bounds: str, none_ok: bool, each: bool) -> str:
    """What a parameter accepts, in words: ``an integer ≥ 1 or None``, ``one of 'kl', 'chi2'``, ..."""
    singular, plural = _KIND_WORDS.get(kind, ("a value", "values")) if kind is not None else ("a value", "values")
    if choices is not None:
        listed = ", ".join(repr(c) for c in choices)
        what = f"a non-empty list of values drawn from {listed}" if each else f"one of {listed}"
    elif each:
        what = f"a non-empty list of {plural}" + (f" {bounds}" if bounds else "")
    else:
        what = singular + (f" {bounds}" if bounds else "")
    return what + (" or None" if none_ok else "")


def check_parameter(
    name: str,
    value: Any,
    kind: str | None = None,
    *,
    choices: Iterable[Any] | None = None,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    none_ok: bool = False,
    each: bool = False,
) -> Any:
    """Check one parameter of a lesson (as papermill injected it); return it unchanged.

    :func:`~dro_course.setup_lesson` calls this for every parameter a lesson declares, with the
    keyword arguments the syllabus gives it, so that a bad value stops the lesson in the cell after
    its ``parameters`` cell, with a message that names the parameter and what it accepts::

        check_parameter("preset", preset, choices=("smoke", "full", "gpu"))
        check_parameter("seed", seed, "int", low=0)
        check_parameter("cvar_alpha", cvar_alpha, "number", low=0, high=1, low_open=True)  # (0, 1]
        check_parameter("betas", betas, "number", low=0, low_open=True, each=True)          # a list

    Args:
        name: the parameter's name, as in the ``parameters`` cell.
        value: its value.
        kind: ``"int"`` (not bool), ``"number"`` (int or float, finite, not bool), ``"str"``,
            ``"bool"``, or None (any type).
        choices: the allowed values.
        low, high: bounds (inclusive unless ``low_open`` / ``high_open``).
        none_ok: None is allowed too (``None`` = "take it from the preset").
        each: ``value`` must be a non-empty list (or tuple) whose every item passes the checks.

    Raises:
        ValueError: ``Invalid parameter NAME=VALUE: expected ...``.
    """
    choices = tuple(choices) if choices is not None else None
    _kind_ok(kind, None)  # rejects an unknown kind even when value is fine
    what = _expected(kind, choices, _range_text(low, high, low_open, high_open), none_ok, each)

    def ok(item: Any) -> bool:
        if not _kind_ok(kind, item):
            return False
        # True == 1 in Python; a choice of 1 must not accept True (nor the reverse)
        if choices is not None and not any(
            item == c and isinstance(item, bool) == isinstance(c, bool) for c in choices
        ):
            return False
        if low is not None and not (item > low if low_open else item >= low):
            return False
        return high is None or (item < high if high_open else item <= high)

    if value is None and none_ok:
        return value
    if each:
        if not isinstance(value, (list, tuple)) or not value:
            raise ValueError(f"Invalid parameter {name}={value!r}: expected {what}")
        for position, item in enumerate(value):
            if not ok(item):
                raise ValueError(f"Invalid parameter {name}={value!r}: expected {what} (item {position} is {item!r})")
        return value
    if not ok(value):
        raise ValueError(f"Invalid parameter {name}={value!r}: expected {what}")
    return value


#: The keyword arguments of :func:`check_parameter` that a syllabus check may give.
CHECK_OPTIONS = tuple(name for name in inspect.signature(check_parameter).parameters if name not in ("name", "value"))
_FLAG_OPTIONS = ("low_open", "high_open", "none_ok", "each")


def check_options_problems(options: Any) -> list[str]:
    """What is wrong with one syllabus check (the keyword arguments of :func:`check_parameter`), as
    short sentences; ``[]`` when it is a valid check."""
    if not isinstance(options, Mapping):
        return [f"expected a mapping of check_parameter arguments ({', '.join(CHECK_OPTIONS)}), got {options!r}"]
    problems = []
    unknown = sorted(set(map(str, options)) - set(CHECK_OPTIONS))
    if unknown:
        problems.append(f"unknown check option(s) {unknown}; check_parameter takes {', '.join(CHECK_OPTIONS)}")
    if options.get("kind") is not None and options["kind"] not in _KIND_WORDS:
        problems.append(f"kind must be one of {', '.join(_KIND_WORDS)}, got {options['kind']!r}")
    for key in ("low", "high"):
        value = options.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            problems.append(f"{key} must be a number, got {value!r}")
    for key in _FLAG_OPTIONS:
        if key in options and not isinstance(options[key], bool):
            problems.append(f"{key} must be true or false, got {options[key]!r}")
    choices = options.get("choices")
    if choices is not None and (not isinstance(choices, list) or not choices):
        problems.append(f"choices must be a non-empty list, got {choices!r}")
    return problems


def parse_parameter_value(text: str) -> Any:
    """Turn a command-line parameter value into a Python value.

    Python literals are parsed (``0.5``, ``1e3``, ``[1, 2]``, ``'x'``, ``None``), as are the words
    ``true``/``false``/``null``/``none`` in any case; anything else stays a string (``cuda``).
    """
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    words = {"true": True, "false": False, "null": None, "none": None}
    return words.get(text.strip().lower(), text)


def _parameters_cell_source(notebook: str | os.PathLike[str]) -> str | None:
    """The source of the notebook's first cell tagged ``parameters``; None when it has none.

    Read as JSON (a v4 notebook is plain JSON), so that the syllabus can be checked without
    nbformat; older formats go through nbformat's converter.
    """
    data = json.loads(Path(notebook).read_text(encoding="utf-8"))
    if data.get("nbformat") != 4:
        import nbformat  # the course extra; only for notebooks older than format 4

        data = nbformat.read(str(notebook), as_version=4)
    for cell in data.get("cells", []):
        if cell.get("cell_type") == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            source = cell.get("source", "")
            return "".join(source) if isinstance(source, list) else source
    return None


def _assigned_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        for target in targets:
            names.update(name.id for name in ast.walk(target) if isinstance(name, ast.Name))
    return names


def notebook_parameters(notebook: str | os.PathLike[str]) -> set[str]:
    """Names assigned in the notebook's (first) ``parameters`` cell (empty if it has none).

    Read with :mod:`ast`: ``papermill.inspect_notebook`` skips lines whose comment it cannot parse
    (``beta = 10.0  # β = 1/τ ...``), which would hide declared parameters.
    """
    source = _parameters_cell_source(notebook)
    if source is None:
        return set()
    try:
        tree = ast.parse(source)
    except SyntaxError:  # e.g. IPython magics: fall back on papermill's own reader
        import papermill

        return set(papermill.inspect_notebook(str(notebook)))
    return _assigned_names(tree)
