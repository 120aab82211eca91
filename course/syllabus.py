"""The syllabus ``course/syllabus.yaml``: :class:`Lesson` and :class:`Syllabus`, :func:`load_syllabus`
(which validates the file against its JSON Schema, ``syllabus.schema.json``, and the cross-field rules of
:mod:`._syllabus_fields`, and lists every problem it finds), :func:`find_syllabus` and the Markdown page
:func:`syllabus_markdown`.

Per lesson, besides its notebook, goals and papermill ``presets``, the syllabus states how each
notebook parameter is checked (``checks``: name -> the keyword arguments of
:func:`~.parameters.check_parameter`) and the values a preset gives the parameters the notebook leaves
None (``defaults``: preset -> {name: value}); :func:`~.lesson_setup.setup_lesson` applies both.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dro_course._files import md_cell, relative_posix
from dro_course._syllabus_fields import lesson_problems, texts, where_in
from dro_course.parameters import path_key, schema_problems

#: Presets every syllabus has unless it declares its own.
DEFAULT_PRESETS: dict[str, str] = {
    "smoke": "seconds per lesson on a CPU; every figure, tiny sizes (CI, nbval)",
    "full": "the paper-sized experiment on a laptop CPU",
    "gpu": "the largest runs, on a CUDA device",
}
#: Where the syllabus lives relative to the repository root.
SYLLABUS_RELPATH = Path("course") / "syllabus.yaml"


class SyllabusError(ValueError):
    """The syllabus file is malformed; the message lists every problem found, one per line."""


@dataclass(frozen=True)
class Lesson:
    """One lesson of the syllabus.

    Attributes:
        id: short unique name, also the stem of every output file (``<id>.ipynb``, ``<id>.html``).
        title: human title.
        notebook: absolute path of the lesson notebook.
        notebook_relpath: the path as written in the syllabus (relative to the course root).
        goals: learning goals, in order.
        prerequisites: ids of earlier lessons a student should have done first.
        paper: the paper(s) the lesson follows (may be empty).
        minutes: expected running time per preset, in minutes (may be partial).
        reading_minutes: how long a student takes to read and work through the lesson (None: not given).
        presets: preset name -> papermill parameters for that preset.
        checks: parameter name -> keyword arguments of :func:`~.parameters.check_parameter`, in the
            syllabus's order (``preset`` is always checked against the syllabus's presets).
        defaults: preset name -> {parameter: value} for the parameters the notebook leaves None.
    """

    id: str
    title: str
    notebook: Path
    notebook_relpath: str
    goals: tuple[str, ...] = ()
    prerequisites: tuple[str, ...] = ()
    paper: tuple[str, ...] = ()
    minutes: Mapping[str, float] = field(default_factory=dict)
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    checks: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    reading_minutes: float | None = None

    @property
    def number(self) -> str:
        """The lesson's number as the course writes it, from its id: ``02`` for ``02_hardness_weighted_sampling``
        (the id itself when it starts with no number)."""
        head = self.id.split("_", 1)[0]
        return head if head.isdigit() else self.id

    def parameters(self, preset: str) -> dict[str, Any]:
        """Papermill parameters for ``preset``: the lesson's own mapping, else ``{"preset": preset}``."""
        if preset in self.presets:
            return dict(self.presets[preset])
        return {"preset": preset}


@dataclass(frozen=True)
class Syllabus:
    """The validated syllabus: course title, preset names and the lessons in teaching order."""

    title: str
    path: Path
    root: Path
    presets: Mapping[str, str]
    lessons: tuple[Lesson, ...]
    description: str = ""

    def __iter__(self) -> Iterator[Lesson]:
        return iter(self.lessons)

    def __len__(self) -> int:
        return len(self.lessons)

    @property
    def ids(self) -> list[str]:
        """Lesson ids in teaching order."""
        return [lesson.id for lesson in self.lessons]

    def lesson(self, lesson_id: str) -> Lesson:
        """The lesson called ``lesson_id`` (exact id or a unique prefix such as ``"01"``)."""
        return self.select([lesson_id])[0]

    def select(self, only: Iterable[str] | None) -> list[Lesson]:
        """Lessons named in ``only`` (exact ids or unique prefixes), in teaching order; all if None."""
        if only is None:
            return list(self.lessons)
        if isinstance(only, str):
            only = [only]
        chosen: set[str] = set()
        for name in only:
            if name in self.ids:
                chosen.add(name)
                continue
            matches = [i for i in self.ids if i.startswith(name)]
            if len(matches) != 1:
                why = "matches several lessons" if matches else "is not a lesson"
                raise ValueError(f"Invalid lesson {name!r}: it {why}; lessons are {', '.join(self.ids)}")
            chosen.add(matches[0])
        return [lesson for lesson in self.lessons if lesson.id in chosen]


def find_syllabus(start: str | os.PathLike[str] | None = None) -> Path:
    """Locate ``course/syllabus.yaml``: in ``start`` (default: the current dir) or a parent of it (an instructor's own
    course), else the course's own syllabus, installed with this package."""
    here = Path(start) if start is not None else Path.cwd()
    for folder in [here.resolve(), *here.resolve().parents]:
        candidate = folder / SYLLABUS_RELPATH
        if candidate.is_file():
            return candidate
    candidate = Path(__file__).resolve().with_name(SYLLABUS_RELPATH.name)  # the package's own
    if candidate.is_file():
        return candidate
    raise FileNotFoundError(
        f"No {SYLLABUS_RELPATH.as_posix()} found in {here} or its parents, and this installation of dro_course has "
        "no syllabus.yaml; reinstall it (pip install 'dro-lab[course]') or pass --syllabus FILE"
    )


def _read_yaml(path: str | os.PathLike[str] | None) -> tuple[Path, Any]:
    import yaml  # a core dependency, but only needed here

    path = Path(path) if path is not None else find_syllabus()
    if not path.is_file():
        raise FileNotFoundError(f"Syllabus file not found: {path}")
    path = path.resolve()
    try:
        return path, yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SyllabusError(f"{path}: not valid YAML: {exc}") from exc


def _course_root(value: str | None, path: Path) -> Path:
    """Notebook paths are relative to the course root; default: the folder holding course/."""
    if value is None:
        return path.parent.parent if path.parent.name == "course" else path.parent
    return (path.parent / value).resolve()


def _preset_names(value: list[str] | dict[str, str | None] | None) -> dict[str, str]:
    """Preset name -> what it runs, from a list of names or a mapping (default: :data:`DEFAULT_PRESETS`)."""
    if value is None:
        return dict(DEFAULT_PRESETS)
    if isinstance(value, list):
        return {name: DEFAULT_PRESETS.get(name, "") for name in value}
    return {name: about or "" for name, about in value.items()}


def _lesson(raw: dict[str, Any], root: Path) -> Lesson:
    """A lesson the schema and the cross-field rules accept (absent or null fields: empty)."""

    def per_preset(key: str) -> dict[str, dict[str, Any]]:
        return {name: dict(values or {}) for name, values in (raw.get(key) or {}).items()}

    reading = raw.get("reading_minutes")
    return Lesson(
        id=raw["id"],
        title=raw["title"],
        notebook=(root / raw["notebook"]).resolve(),
        notebook_relpath=raw["notebook"],
        goals=texts(raw.get("goals")),
        prerequisites=texts(raw.get("prerequisites")),
        paper=texts(raw.get("paper")),
        minutes={name: float(m) for name, m in (raw.get("minutes") or {}).items()},
        reading_minutes=float(reading) if reading is not None else None,
        presets=per_preset("presets"),
        checks={name: dict(check or {}) for name, check in (raw.get("checks") or {}).items()},
        defaults=per_preset("defaults"),
    )


def load_syllabus(path: str | os.PathLike[str] | None = None, *, check_notebooks: bool = True) -> Syllabus:
    """Read and validate a syllabus file.

    The file's structure (keys, types, names, positive minutes, the options of each check) is validated against
    the JSON Schema ``syllabus.schema.json`` (shipped beside this module); what a schema cannot say is checked
    here: unique ids and notebooks, prerequisites that name earlier lessons, notebooks that exist and declare the
    checked parameters, preset names the syllabus has, defaults that name checked parameters and pass their check.

    Args:
        path: the YAML file; default: :func:`find_syllabus` (``course/syllabus.yaml`` of the repo).
        check_notebooks: also require every lesson's notebook to exist (turn off to list a course
            whose notebooks are still being written).

    Returns:
        the :class:`Syllabus`, lessons in the file's order.

    Raises:
        FileNotFoundError: no syllabus file.
        SyllabusError: the file breaks the schema or a cross-field rule. Every problem found is listed in the
            message, one per line, each naming its place (``lessons[2] (02_...).checks.beta.low must be a number,
            got 'one'``).
    """
    path, data = _read_yaml(path)
    where = where_in(data.get("lessons") if isinstance(data, dict) else None)
    problems = schema_problems(data, where=where)
    if isinstance(data, dict):
        malformed = [at for at, _ in problems]  # (), ("presets", 1), ("lessons", 2, "checks", "beta", "low"), ...
        lessons = data.get("lessons") if ("lessons",) not in malformed else None
        root = _course_root(data.get("root") if ("root",) not in malformed else None, path)
        presets = None if any(at[:1] == ("presets",) for at in malformed) else _preset_names(data.get("presets"))
        problems += lesson_problems(
            lessons or [], root=root, presets=presets, check_notebooks=check_notebooks, malformed=malformed
        )
    if problems:
        lines = [line for _, line in sorted(problems, key=lambda problem: path_key(problem[0], data))]
        raise SyllabusError(f"{path}: invalid syllabus:\n  - " + "\n  - ".join(lines))
    return Syllabus(
        title=data.get("title", "dro_lab course"),
        path=path,
        root=root,
        presets=presets,
        lessons=tuple(_lesson(raw, root) for raw in lessons),
        description=data.get("description") or "",
    )


def _defaults_line(lesson: Lesson) -> str | None:
    """``- **sizes per preset:** smoke: epochs 5, n_seeds 2; full: ...`` (None without defaults)."""
    if not lesson.defaults:
        return None
    parts = [
        f"{preset}: " + ", ".join(f"{name} {value!r}" for name, value in values.items())
        for preset, values in lesson.defaults.items()
        if values
    ]
    return "- **sizes per preset:** " + "; ".join(parts) if parts else None


def _lesson_section(lesson: Lesson, syllabus: Syllabus) -> list[str]:
    target = relative_posix(lesson.notebook, syllabus.path.parent)
    lines = [f"### {lesson.number} · [{lesson.title}]({target})", ""]
    lines.append(f"- **id:** `{lesson.id}`; **notebook:** `{lesson.notebook_relpath}`")
    if lesson.prerequisites:
        lines.append("- **after:** " + ", ".join(f"`{p}`" for p in lesson.prerequisites))
    if lesson.reading_minutes:
        lines.append(f"- **reading:** about {lesson.reading_minutes:g} minutes")
    if lesson.minutes:
        lines.append("- **minutes:** " + ", ".join(f"{p} {m:g}" for p, m in lesson.minutes.items()))
    lines += [f"- **paper:** {paper}" for paper in lesson.paper]
    sizes = _defaults_line(lesson)
    if sizes:
        lines.append(sizes)
    if lesson.goals:
        lines += ["", "Goals:", ""] + [f"{k}. {goal}" for k, goal in enumerate(lesson.goals, start=1)]
    return [*lines, ""]


def syllabus_markdown(syllabus: Syllabus) -> str:
    """The syllabus as a Markdown page: an overview table (order, lesson, minutes per preset), then
    one section per lesson with its notebook, prerequisites, papers, minutes, sizes per preset and
    goals. Notebook links are relative to the syllabus's folder (the page is meant to sit beside it,
    e.g. ``course/syllabus.md``)."""
    presets = list(syllabus.presets)
    lines = ["# Syllabus", "", f"**{syllabus.title}**", ""]
    if syllabus.description:
        lines += [syllabus.description.strip(), ""]
    lines += ["## Presets", "", "| preset | what it runs |", "|---|---|"]
    lines += [f"| `{name}` | {md_cell(about)} |" for name, about in syllabus.presets.items()]
    lines += [
        "",
        "## Lessons",
        "",
        "Each title opens its lesson; its goals are below the table. Running times are in minutes.",
        "",
        "| # | lesson | reading (min) | " + " | ".join(presets) + " |",
        "|---|---|---:|" + "---:|" * len(presets),
    ]
    for lesson in syllabus.lessons:
        minutes = " | ".join(f"{lesson.minutes[p]:g}" if p in lesson.minutes else "" for p in presets)
        reading = f"{lesson.reading_minutes:g}" if lesson.reading_minutes else ""
        target = relative_posix(lesson.notebook, syllabus.path.parent)
        lines.append(f"| {lesson.number} | [{md_cell(lesson.title)}]({target}) | {reading} | {minutes} |")
    totals = " | ".join(f"{sum(lesson.minutes.get(p, 0) for lesson in syllabus.lessons):g}" for p in presets)
    reading_total = sum(lesson.reading_minutes or 0 for lesson in syllabus.lessons)
    lines += [f"| | **total** | {reading_total:g} | {totals} |", ""]
    for lesson in syllabus.lessons:
        lines += _lesson_section(lesson, syllabus)
    return "\n".join(lines)


def lessons_table(syllabus: Syllabus) -> str:
    """One Markdown table of the lessons: id, title, goals (one per line), reading time and running minutes per
    preset, every cell
    escaped (a goal such as ``|ℓ|`` would otherwise split its row)."""
    presets = list(syllabus.presets)
    head = "| id | lesson | goals | reading (min) | running, minutes (" + " / ".join(presets) + ") |"
    rows = [head, "|---|---|---|---|---|"]
    for lesson in syllabus.lessons:
        goals = "<br>".join(f"• {md_cell(goal)}" for goal in lesson.goals)
        minutes = " / ".join(f"{lesson.minutes[p]:g}" if p in lesson.minutes else "–" for p in presets)
        reading = f"{lesson.reading_minutes:g}" if lesson.reading_minutes else "–"
        rows.append(f"| `{lesson.id}` | {md_cell(lesson.title)} | {goals} | {reading} | {minutes} |")
    return f"**{md_cell(syllabus.title)}** — {len(syllabus.lessons)} lessons\n\n" + "\n".join(rows)
