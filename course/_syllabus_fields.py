"""One lesson of the syllabus file, field by field: each reader appends what is wrong to ``problems``
(one short sentence each) and returns what it could read, so that :func:`~.syllabus.load_syllabus`
reports every problem of the file at once."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dro_course.parameters import IDENT_RE, check_options_problems, check_parameter, notebook_parameters

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_LESSON_KEYS = {
    "id",
    "title",
    "notebook",
    "goals",
    "prerequisites",
    "paper",
    "minutes",
    "reading_minutes",
    "presets",
    "checks",
    "defaults",
}
_LESSON_REQUIRED = ("id", "title", "notebook")


@dataclass
class LessonContext:
    """What reading one lesson needs to know about the others and the course."""

    root: Path
    presets: dict[str, str]
    check_notebooks: bool
    raw_lessons: list[Any]
    seen_ids: set[str] = field(default_factory=set)
    seen_notebooks: dict[Path, str] = field(default_factory=dict)


def _is_scalar_or_list(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, list):
        return all(_is_scalar_or_list(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_scalar_or_list(v) for k, v in value.items())
    return False


def _str_list(value: Any, where: str, problems: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        problems.append(f"{where}: expected a list of non-empty strings, got {value!r}")
        return ()
    return tuple(value)


def _mapping(value: Any, where: str, what: str, problems: list[str]) -> dict:
    """``value`` when it is a mapping (None reads as empty), else ``{}`` and a problem."""
    value = value or {}
    if not isinstance(value, dict):
        problems.append(f"{where} must map {what}, got {value!r}")
        return {}
    return value


def _identity(raw: dict, where: str, context: LessonContext, problems: list[str]) -> Path | None:
    """The notebook path of a lesson whose id, title and notebook are well formed; else None."""
    lesson_id, title, notebook = raw["id"], raw["title"], raw["notebook"]
    if not isinstance(lesson_id, str) or not ID_RE.match(lesson_id):
        problems.append(f"{where}: id must be a string of letters, digits, '_', '.', '-', got {lesson_id!r}")
        return None
    if lesson_id in context.seen_ids:
        problems.append(f"{where}: duplicate id {lesson_id!r}")
    if not isinstance(title, str) or not title.strip():
        problems.append(f"{where}: title must be a non-empty string")
    if not isinstance(notebook, str) or not notebook.endswith(".ipynb"):
        problems.append(f"{where}: notebook must be a path to a .ipynb file, got {notebook!r}")
        return None
    notebook_path = (context.root / notebook).resolve()
    if context.check_notebooks and not notebook_path.is_file():
        problems.append(f"{where}: notebook {notebook!r} not found (looked for {notebook_path})")
    if notebook_path in context.seen_notebooks:
        problems.append(f"{where}: notebook {notebook!r} is also lesson {context.seen_notebooks[notebook_path]!r}")
    context.seen_notebooks[notebook_path] = lesson_id
    return notebook_path


def _prerequisites(raw: dict, where: str, context: LessonContext, problems: list[str]) -> tuple[str, ...]:
    prerequisites = _str_list(raw.get("prerequisites"), f"{where}: prerequisites", problems)
    for prereq in prerequisites:
        if prereq == raw["id"]:
            problems.append(f"{where}: lists itself as a prerequisite")
        elif prereq not in context.seen_ids:
            later = any(isinstance(r, dict) and r.get("id") == prereq for r in context.raw_lessons)
            problems.append(
                f"{where}: prerequisite {prereq!r} "
                + ("comes later in the lesson order" if later else "is not a lesson id")
            )
    return prerequisites


def _minutes(raw: dict, where: str, presets: dict[str, str], problems: list[str]) -> dict[str, float]:
    minutes: dict[str, float] = {}
    for name, value in _mapping(raw.get("minutes"), f"{where}: minutes", "preset -> minutes", problems).items():
        if name not in presets:
            problems.append(f"{where}: minutes for unknown preset {name!r}; presets: {list(presets)}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            problems.append(f"{where}: minutes[{name!r}] must be a positive number, got {value!r}")
        else:
            minutes[name] = float(value)
    return minutes


def _reading_minutes(raw: dict, where: str, problems: list[str]) -> float | None:
    value = raw.get("reading_minutes")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        problems.append(f"{where}: reading_minutes must be a positive number, got {value!r}")
        return None
    return float(value)


def _literal_mapping(values: Any, where: str, problems: list[str]) -> dict[str, Any]:
    """A mapping of parameter name -> literal (papermill parameters, preset defaults)."""
    if not isinstance(values, dict):
        problems.append(f"{where} must be a mapping of parameters, got {values!r}")
        return {}
    for key, value in values.items():
        if not isinstance(key, str) or not IDENT_RE.match(key):
            problems.append(f"{where}: {key!r} is not a Python identifier")
        elif not _is_scalar_or_list(value):
            problems.append(f"{where}[{key!r}] must be a literal, got {value!r}")
    return dict(values)


def _per_preset(raw: dict, key: str, where: str, presets: dict[str, str], problems: list[str]) -> dict[str, dict]:
    """``presets`` or ``defaults``: preset name -> a mapping of parameters."""
    result: dict[str, dict[str, Any]] = {}
    for name, values in _mapping(raw.get(key), f"{where}: {key}", "preset -> parameters", problems).items():
        if name not in presets:
            problems.append(f"{where}: {key}: unknown preset {name!r}; presets: {list(presets)}")
            continue
        result[name] = _literal_mapping(values or {}, f"{where}: {key}[{name!r}]", problems)
    return result


def _checks(raw: dict, where: str, problems: list[str]) -> dict[str, dict[str, Any]]:
    """``checks``: parameter -> keyword arguments of ``check_parameter`` (``{}`` or null: any value)."""
    checks: dict[str, dict[str, Any]] = {}
    for name, options in _mapping(raw.get("checks"), f"{where}: checks", "parameter -> check", problems).items():
        if not isinstance(name, str) or not IDENT_RE.match(name):
            problems.append(f"{where}: checks: {name!r} is not a Python identifier")
        elif name == "preset":
            problems.append(f"{where}: checks: 'preset' is always checked against the syllabus's presets; drop it")
        else:
            found = check_options_problems(options or {})
            problems.extend(f"{where}: checks[{name!r}]: {problem}" for problem in found)
            if not found:
                checks[name] = dict(options or {})
    return checks


def _check_defaults(defaults: dict[str, dict], checks: dict[str, dict], where: str, problems: list[str]) -> None:
    """Every preset default names a checked parameter and passes its check."""
    for preset, values in defaults.items():
        for name, value in values.items():
            if name not in checks:
                problems.append(f"{where}: defaults[{preset!r}] sets {name!r}, which has no entry in checks")
                continue
            try:
                check_parameter(name, value, **checks[name])
            except ValueError as exc:
                problems.append(f"{where}: defaults[{preset!r}]: {exc}")


def _check_declared(notebook: Path, names: set[str], where: str, problems: list[str]) -> None:
    """The checked parameters are declared in the notebook's ``parameters`` cell (when it exists)."""
    if not names or not notebook.is_file():
        return
    try:
        declared = notebook_parameters(notebook)
    except (OSError, ValueError) as exc:
        problems.append(f"{where}: cannot read the parameters of {notebook.name}: {exc}")
        return
    undeclared = sorted(names - declared)
    if undeclared:
        problems.append(
            f"{where}: checks name parameter(s) {undeclared} that {notebook.name} does not declare "
            f"in its parameters cell (declared: {sorted(declared)})"
        )


def parse_lesson(raw: Any, position: int, context: LessonContext, problems: list[str]) -> dict[str, Any] | None:
    """The fields of one lesson (the keyword arguments of :class:`~.syllabus.Lesson`), or None when its
    id, title or notebook cannot be read. Appends every problem found to ``problems``."""
    where = f"lesson #{position}"
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping, got {raw!r}")
        return None
    if isinstance(raw.get("id"), str):
        where = f"lesson {raw['id']!r}"
    unknown = sorted(set(map(str, raw)) - _LESSON_KEYS)
    if unknown:
        problems.append(f"{where}: unknown key(s) {unknown}; allowed: {sorted(_LESSON_KEYS)}")
    missing = [k for k in _LESSON_REQUIRED if k not in raw]
    if missing:
        problems.append(f"{where}: missing required key(s) {missing}")
        return None
    notebook = _identity(raw, where, context, problems)
    if notebook is None:
        return None
    checks = _checks(raw, where, problems)
    defaults = _per_preset(raw, "defaults", where, context.presets, problems)
    _check_defaults(defaults, checks, where, problems)
    _check_declared(notebook, set(checks), where, problems)
    fields = dict(
        id=raw["id"],
        title=str(raw["title"]),
        notebook=notebook,
        notebook_relpath=raw["notebook"],
        goals=_str_list(raw.get("goals"), f"{where}: goals", problems),
        prerequisites=_prerequisites(raw, where, context, problems),
        paper=_str_list(raw.get("paper"), f"{where}: paper", problems),
        minutes=_minutes(raw, where, context.presets, problems),
        reading_minutes=_reading_minutes(raw, where, problems),
        presets=_per_preset(raw, "presets", where, context.presets, problems),
        checks=checks,
        defaults=defaults,
    )
    context.seen_ids.add(raw["id"])
    return fields
