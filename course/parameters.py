"""A lesson's parameters: which names its ``parameters`` cell declares, how one value is checked, how a
command-line value is read; and the syllabus's JSON Schema, which specifies those checks.

:func:`check_parameter` is the one check of a lesson parameter; the syllabus states, per lesson, the
keyword arguments it is called with (see :mod:`.syllabus`), and :func:`~.lesson_setup.setup_lesson`
calls it for every declared parameter. Which keyword arguments it takes, and their types, are stated once, by
``$defs/check`` of ``syllabus.schema.json`` (shipped beside this module), against which both the syllabus and
every call are validated; :func:`schema_problems` words each violation as one line.
"""

from __future__ import annotations

import ast
import functools
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

#: Environment variable a lesson may read to override its stored ``preset`` (``make test`` sets it);
#: the runner sets it to the preset it passes, so both ways of choosing a preset agree.
PRESET_ENV = "DRO_LAB_PRESET"
#: A parameter name: a Python identifier.
IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: The syllabus's JSON Schema (Draft 2020-12); its ``$defs/check`` specifies :func:`check_parameter`'s options.
SCHEMA_PATH = Path(__file__).resolve().with_name("syllabus.schema.json")

DocPath = tuple[Any, ...]  # where in a document: keys and list positions


@functools.cache
def syllabus_schema() -> dict[str, Any]:
    """The syllabus's JSON Schema, as a dict (read once)."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@functools.cache
def _validator(definition: str | None) -> Any:
    from jsonschema import Draft202012Validator  # the course extra; only when something is validated

    schema = syllabus_schema()
    if definition is not None:  # one of its $defs, its references resolved in the whole schema
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    return Draft202012Validator(schema)


def location(path: Iterable[Any], label: Callable[[DocPath], str] | None = None, top: str = "top level") -> str:
    """``lessons[2].checks.beta`` for a path of keys and positions (``top`` for the empty path); ``label`` adds a
    note after a step, e.g. `` (02_hardness_weighted_sampling)`` after ``lessons[2]``."""
    text, steps = "", []
    for step in path:
        steps.append(step)
        if isinstance(step, str) and IDENT_RE.match(step):
            text += f".{step}" if text else step
        else:
            text += f"[{step!r}]"
        text += label(tuple(steps)) if label is not None else ""
    return text or top


def path_key(path: Iterable[Any], document: Any = None) -> tuple:
    """A sort key for a path whose steps mix positions and keys of any type: in the order of ``document`` (its
    mappings' keys as they were read, e.g. a YAML file's) when given, else positions, then keys by name."""
    key: list[tuple] = []
    for step in path:
        if isinstance(document, dict):
            order = {name: k for k, name in enumerate(document)}
            key.append((0, order.get(step, len(order)), str(step)))
            document = document.get(step)
        elif isinstance(step, int) and not isinstance(step, bool):
            key.append((0, step, ""))
            document = document[step] if isinstance(document, list) and 0 <= step < len(document) else None
        else:
            key.append((1, 0, str(step)))
            document = None
    return tuple(key)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:76] + " ..."


_TYPE_WORDS = {"string": "a string", "boolean": "true or false", "null": "null", "integer": "an integer"}
_BOUND_WORDS = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}


def _type_words(kind: str, schema: dict[str, Any]) -> str:
    if kind in ("number", "integer"):
        bounds = [f"{sign} {schema[key]}" for key, sign in _BOUND_WORDS.items() if key in schema]
        return " ".join([_TYPE_WORDS.get(kind, "a number"), " and ".join(bounds)]).strip()
    if kind == "array":
        return "a non-empty list" if schema.get("minItems", 0) >= 1 else "a list"
    if kind == "object":
        return "a non-empty mapping" if schema.get("minProperties", 0) >= 1 else "a mapping"
    return _TYPE_WORDS[kind]


def _expected(schema: dict[str, Any]) -> str:
    """What a (sub)schema accepts, in words: its ``description`` (the schema's noun phrase), else from its
    ``enum`` or its ``type`` and bounds; null (an absent value) is not named."""
    if "description" in schema:
        return schema["description"]
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"] if v is not None)
    types = schema.get("type")
    if types is None:
        return ""
    types = [types] if isinstance(types, str) else [t for t in types if t != "null"] or ["null"]
    return " or ".join(_type_words(kind, schema) for kind in types)


def _error_line(error: Any, where: str) -> str:
    """One line for one :class:`jsonschema.ValidationError`, starting with its place."""
    if error.validator == "additionalProperties":  # `false`: a value schema reports under the key's own path
        allowed = list(error.schema.get("properties", {}))
        unknown = sorted(str(key) for key in error.instance if key not in allowed)
        return f"{where}: unknown key(s) {unknown}; allowed: {', '.join(allowed)}"
    if error.validator == "required":
        missing = [key for key in error.validator_value if key not in error.instance]
        return f"{where}: missing required key(s) {missing}"
    if error.validator == "uniqueItems":
        return f"{where} must not repeat an item, got {_short(error.instance)}"
    if error.validator == "not":
        return f"{where}: {error.validator_value.get('description') or error.message}"
    expected = _expected(error.schema)
    if not expected:  # a keyword this wording does not know: jsonschema's own sentence
        return f"{where}: {error.message}"
    if "propertyNames" in error.schema_path:  # a key: the path is its mapping's
        return f"{where}: key {_short(error.instance)} must be {expected}"
    return f"{where} must be {expected}, got {_short(error.instance)}"


def schema_problems(
    instance: Any, definition: str | None = None, where: Callable[[DocPath], str] = location
) -> list[tuple[DocPath, str]]:
    """Every way ``instance`` breaks the syllabus's schema (or its ``$defs/<definition>``), as (path, line) pairs
    sorted by path, each line naming its place with ``where(path)``; ``[]`` when it is valid."""
    found: dict[str, DocPath] = {}
    for error in _validator(definition).iter_errors(instance):
        path = tuple(error.path)
        found.setdefault(_error_line(error, where(path)), path)  # several missing keys: one line
    return sorted(((path, line) for line, path in found.items()), key=lambda item: path_key(item[0], instance))


_KINDS: dict[str, tuple[Callable[[Any], bool], str, str]] = {
    # the kinds of $defs/check (the schema's enum; a test checks they agree): test, one, several
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer", "integers"),
    "number": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
        "a number",
        "numbers",
    ),
    "str": (lambda v: isinstance(v, str), "a string", "strings"),
    "bool": (lambda v: isinstance(v, bool), "True or False", "booleans"),
}


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


def _accepts(kind: str | None, choices: Sequence | None, bounds: str, none_ok: bool, each: bool) -> str:
    """What a parameter accepts, in words: ``an integer ≥ 1 or None``, ``one of 'kl', 'chi2'``, ..."""
    _, singular, plural = _KINDS[kind] if kind is not None else (None, "a value", "values")
    if choices is not None:
        listed = ", ".join(repr(c) for c in choices)
        what = f"a non-empty list of values drawn from {listed}" if each else f"one of {listed}"
    elif each:
        what = f"a non-empty list of {plural}" + (f" {bounds}" if bounds else "")
    else:
        what = singular + (f" {bounds}" if bounds else "")
    return what + (" or None" if none_ok else "")


def check_parameter(name: str, value: Any, kind: str | None = None, **check: Any) -> Any:
    """Check one parameter of a lesson (as papermill injected it); return it unchanged.

    :func:`~dro_course.setup_lesson` calls this for every parameter a lesson declares, with the
    keyword arguments the syllabus gives it, so that a bad value stops the lesson in the cell after
    its ``parameters`` cell, with a message that names the parameter and what it accepts::

        check_parameter("preset", preset, choices=("smoke", "full", "gpu"))
        check_parameter("seed", seed, "int", low=0)
        check_parameter("cvar_alpha", cvar_alpha, "number", low=0, high=1, low_open=True)  # (0, 1]
        check_parameter("betas", betas, "number", low=0, low_open=True, each=True)          # a list

    ``kind`` and the keyword arguments are a check of the syllabus (``$defs/check`` of ``syllabus.schema.json``
    states them and their types, and every call is validated against it):

    - ``kind``: ``"int"`` (not bool), ``"number"`` (int or float, finite, not bool), ``"str"``, ``"bool"``, or None
      (any type);
    - ``choices``: the allowed values (any iterable);
    - ``low``, ``high``: bounds (inclusive unless ``low_open`` / ``high_open`` is true);
    - ``none_ok``: None is allowed too (``None`` = "take it from the preset");
    - ``each``: ``value`` must be a non-empty list (or tuple) whose every item passes the checks.

    Raises:
        ValueError: ``Invalid parameter NAME=VALUE: expected ...``; ``check_parameter: invalid check of NAME: ...``
            for options the schema refuses (an unknown keyword, a kind that is not one of the schema's, ...).
    """
    options = {"kind": kind, **check}
    if options.get("choices") is not None and not isinstance(options["choices"], list):
        options["choices"] = list(options["choices"])
    problems = schema_problems(options, "check", lambda path: location(path, top="options"))
    if problems:
        raise ValueError(f"check_parameter: invalid check of {name}: " + "; ".join(line for _, line in problems))
    choices, low, high = options.get("choices"), options.get("low"), options.get("high")
    low_open, high_open = options.get("low_open", False), options.get("high_open", False)
    none_ok, each = options.get("none_ok", False), options.get("each", False)
    what = _accepts(kind, choices, _range_text(low, high, low_open, high_open), none_ok, each)

    def ok(item: Any) -> bool:
        if kind is not None and not _KINDS[kind][0](item):
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
