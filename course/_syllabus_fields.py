"""What the syllabus's JSON Schema (``syllabus.schema.json``) cannot say about its lessons, checked in Python: ids
are unique, prerequisites name earlier lessons, notebooks exist (once each) and declare the checked parameters,
the presets a lesson names are the syllabus's, and every default names a checked parameter and passes its check.

Each rule looks only at fields the schema found well formed, so :func:`~.syllabus.load_syllabus` lists the schema's
problems and these together, one line each, every line naming its place as the schema's do
(``lessons[1] (failing): duplicate id 'passing'``)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from dro_course.parameters import DocPath, check_parameter, location, notebook_parameters


def texts(value: str | list[str] | None) -> tuple[str, ...]:
    """``goals``, ``prerequisites``, ``paper``: one string or a list of them (None: none)."""
    return () if value is None else (value,) if isinstance(value, str) else tuple(value)


def where_in(lessons: Any) -> Callable[[DocPath], str]:
    """:func:`~.parameters.location` with each lesson's id after its position: ``lessons[2] (02_...).checks``."""

    def label(steps: DocPath) -> str:
        if len(steps) == 2 and steps[0] == "lessons" and isinstance(lessons, list) and isinstance(steps[1], int):
            raw = lessons[steps[1]]
            if isinstance(raw, dict) and isinstance(raw.get("id"), str):
                return f" ({raw['id']})"
        return ""

    return lambda path: location(path, label)


def lesson_problems(
    lessons: list[Any],
    *,
    root: Path,
    presets: Collection[str] | None,
    check_notebooks: bool,
    malformed: Collection[DocPath] = (),
) -> list[tuple[DocPath, str]]:
    """The cross-field problems of ``lessons`` (a list the schema accepts, its lessons perhaps not), as (path, line)
    pairs. ``malformed``: the paths of the schema's problems; a rule that reads a field's values skips the field
    when one is anywhere in it, a rule that reads only its keys when one is on the field itself (its type or a
    key). ``presets``: the syllabus's preset names (None: they are malformed, so the lessons' are not checked)."""
    where = where_in(lessons)
    problems: list[tuple[DocPath, str]] = []
    ids = [raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else None for raw in lessons]
    notebooks: dict[Path, str] = {}
    for i, raw in enumerate(lessons):
        if not isinstance(raw, dict):
            continue
        bad = [at[2:] for at in malformed if at[:2] == ("lessons", i) and len(at) > 2]
        fine = {field for field, value in raw.items() if value is not None and not any(at[0] == field for at in bad)}
        keys_fine = {field for field, value in raw.items() if value is not None and (field,) not in bad}

        def say(at: tuple, text: str, *then: Any, i: int = i) -> None:
            """A problem shown at ``lessons[i]<at>``, sorted under ``lessons[i]<at><then>``."""
            problems.append((("lessons", i, *at, *then), f"{where(('lessons', i, *at))}: {text}"))

        lesson_id = ids[i] if "id" in fine else None
        if lesson_id is not None and lesson_id in ids[:i]:
            say((), f"duplicate id {lesson_id!r} (as lessons[{ids.index(lesson_id)}])", "id")
        notebook = (root / raw["notebook"]).resolve() if "notebook" in fine else None
        if notebook is not None:
            if check_notebooks and not notebook.is_file():
                say((), f"notebook {raw['notebook']!r} not found (looked for {notebook})", "notebook")
            if notebook in notebooks:
                say((), f"notebook {raw['notebook']!r} is also lesson {notebooks[notebook]!r}", "notebook")
            notebooks.setdefault(notebook, str(raw.get("id")))
        for prereq in texts(raw["prerequisites"]) if "prerequisites" in fine else ():
            if prereq == raw.get("id"):
                say((), "lists itself as a prerequisite", "prerequisites")
            elif prereq not in ids[:i]:
                later = "comes later in the lesson order" if prereq in ids else "is not a lesson id"
                say((), f"prerequisite {prereq!r} {later}", "prerequisites")
        for field in ("minutes", "presets", "defaults") if presets is not None else ():
            for name in raw[field] if field in keys_fine else ():
                if name not in presets:
                    say((field,), f"unknown preset {name!r}; presets: {list(presets)}", name)
        if "checks" in keys_fine and notebook is not None:
            _declared(notebook, raw["checks"], lambda text: say(("checks",), text))
        if "defaults" in fine and not any(at[0] == "checks" for at in bad):
            checks = raw.get("checks") or {}
            _defaults(raw["defaults"], checks, lambda preset, text, *then: say(("defaults", preset), text, *then))
    return problems


def _declared(notebook: Path, checks: Mapping[str, Any], say: Callable[[str], None]) -> None:
    """The checked parameters are declared in the notebook's ``parameters`` cell (when it exists)."""
    if not checks or not notebook.is_file():
        return
    try:
        declared = notebook_parameters(notebook)
    except (OSError, ValueError) as exc:
        say(f"cannot read the parameters of {notebook.name}: {exc}")
        return
    undeclared = sorted(set(checks) - declared)
    if undeclared:
        say(
            f"parameter(s) {undeclared} that {notebook.name} does not declare in its parameters cell "
            f"(declared: {sorted(declared)})"
        )


def _defaults(defaults: Mapping[str, Any], checks: Mapping[str, Any], say: Callable[..., None]) -> None:
    """Every preset default names a checked parameter and passes its check."""
    for preset, values in defaults.items():
        for name, value in (values or {}).items():
            if name not in checks:
                say(preset, f"{name!r} has no entry in checks", name)
                continue
            try:
                check_parameter(name, value, **(checks[name] or {}))
            except ValueError as exc:
                say(preset, str(exc), name)
