"""The one set-up call of a lesson: :func:`setup_lesson` checks the parameters papermill (or the student)
left in the notebook, fills the ones left None from the preset, and derives the device and the seeds.

What each lesson accepts lives in the syllabus (``checks`` and ``defaults`` of the lesson, see
:mod:`.syllabus`), so the cell after a lesson's ``parameters`` cell reads::

    from dro_course.lessons.dro_foundations.toolkit import *  # this lesson's names
    setup = setup_lesson("01_dro_foundations", globals())

and ``dro-course run -p epochs 0`` stops there with ``Invalid parameter epochs=0: expected an
integer ≥ 1``, before any heavy cell.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from dro_course.parameters import PRESET_ENV, check_parameter, notebook_parameters
from dro_course.syllabus import Lesson, Syllabus, load_syllabus


@dataclass(frozen=True)
class LessonSetup:
    """What :func:`setup_lesson` settled: ``setup["epochs"]`` reads one value.

    Attributes:
        lesson_id: the lesson's id.
        preset: the preset in force (``DRO_LAB_PRESET`` wins over the notebook's ``preset``).
        values: every checked parameter after filling, plus ``preset``, ``device`` (a
            ``torch.device``) and ``seeds`` when the lesson has ``n_seeds`` (read-only).
        from_preset: the parameters that were None and took the preset's value, in order.
        preset_from_env: True when ``DRO_LAB_PRESET`` chose the preset.
        reading_minutes, running_minutes: the syllabus's reading time and this preset's running time.
    """

    lesson_id: str
    preset: str
    values: Mapping[str, Any]
    from_preset: tuple[str, ...] = ()
    preset_from_env: bool = False
    reading_minutes: float | None = None
    running_minutes: float | None = None

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def __contains__(self, name: object) -> bool:
        return name in self.values

    def summary(self) -> str:
        """One line: lesson, preset, device, seeds and the sizes taken from the preset."""
        preset = f"preset {self.preset}" + (f" (from {PRESET_ENV})" if self.preset_from_env else "")
        parts = [f"{self.lesson_id}: {preset}"]
        if "device" in self.values:
            parts.append(f"device {self.values['device']}")
        if "seeds" in self.values:
            parts.append(f"seeds {self.values['seeds']}")
        line = ", ".join(parts)
        if self.from_preset:
            line += "; from the preset: " + ", ".join(f"{n}={self.values[n]!r}" for n in self.from_preset)
        times = []
        if self.reading_minutes:
            times.append(f"about {self.reading_minutes:g} min to read")
        if self.running_minutes:
            times.append(f"{self.running_minutes:g} min to run on this preset")
        return line + ("\n" + ", ".join(times).capitalize() + " (the syllabus)." if times else "")


def _lesson(lesson_id: str, syllabus: Syllabus | str | os.PathLike[str] | None) -> tuple[Syllabus, Lesson]:
    if not isinstance(syllabus, Syllabus):
        # the other lessons' notebooks need not exist; this one's parameters are checked below
        syllabus = load_syllabus(syllabus, check_notebooks=False)
    return syllabus, syllabus.lesson(lesson_id)


def _preset(namespace: Mapping[str, Any], syllabus: Syllabus) -> tuple[str, bool]:
    """The preset in force and whether ``DRO_LAB_PRESET`` chose it; checked against the syllabus."""
    from_env = os.environ.get(PRESET_ENV) or None
    preset = from_env or namespace.get("preset")
    check_parameter("preset", preset, choices=tuple(syllabus.presets))
    return preset, from_env is not None


def _require_checks(lesson: Lesson, namespace: Mapping[str, Any], choices: Mapping[str, Any]) -> None:
    """Every checked name is defined; every declared parameter has a check (the syllabus is the one
    place that says what a lesson accepts)."""
    undefined = [name for name in lesson.checks if name not in namespace]
    if undefined:
        raise NameError(f"{lesson.id}: parameter(s) {undefined} are not defined; run the parameters cell first")
    unknown = sorted(set(choices) - set(lesson.checks))
    if unknown:
        raise ValueError(f"{lesson.id}: choices given for {unknown}, which the syllabus does not check")
    if lesson.notebook.is_file():
        unchecked = sorted(notebook_parameters(lesson.notebook) - set(lesson.checks) - {"preset"})
        if unchecked:
            raise ValueError(
                f"{lesson.id}: parameter(s) {unchecked} of {lesson.notebook.name} have no entry under the "
                "lesson's checks in the syllabus (course/syllabus.yaml)"
            )


def _filled(lesson: Lesson, preset: str, namespace: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The checked parameters' values, those left None taken from the preset's defaults."""
    defaults = lesson.defaults.get(preset, {})
    values, from_preset = {}, []
    for name in lesson.checks:
        value = namespace[name]
        if value is None and name in defaults:
            value = copy.deepcopy(defaults[name])  # a lesson may change its lists; the syllabus stays
            from_preset.append(name)
        values[name] = value
    return values, from_preset


def _check_all(lesson: Lesson, values: Mapping[str, Any], choices: Mapping[str, Iterable[Any]]) -> None:
    for name, options in lesson.checks.items():
        options = dict(options)
        if name in choices:
            options["choices"] = list(choices[name])
        check_parameter(name, values[name], **options)


def check_lesson_parameters(
    lesson: Lesson, preset: str, values: Mapping[str, Any], *, device_here: bool = True
) -> None:
    """Check the values a run will inject into ``lesson`` (its preset's plus the user's) before any kernel starts.

    The same checks as :func:`setup_lesson` (the lesson's ``checks`` in the syllabus), on the values given: a None
    that the preset's ``defaults`` fill is left to the lesson; with ``device_here`` (the lessons run on this
    machine), a device other than ``"auto"`` / ``"cpu"`` must be one torch can use here (a Dask cluster's workers
    check their own in the lesson). Checks that need the lesson's own registries (``choices`` passed at run time)
    still happen in the lesson.

    Raises:
        ValueError: ``Invalid parameter NAME=VALUE: expected ... (lesson ID)``.
    """
    defaults = lesson.defaults.get(preset, {})
    for name, value in values.items():
        options = lesson.checks.get(name)
        if options is None or (value is None and name in defaults):
            continue
        try:
            check_parameter(name, value, **options)
            if device_here and name == "device" and isinstance(value, str) and value not in ("auto", "cpu"):
                _resolve_device(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{exc} (lesson {lesson.id})") from None


def _resolve_device(device: Any) -> Any:
    from dro_lab.utils import resolve_device  # imports torch: only when a lesson sets up or a run asks for a device

    try:
        return resolve_device(device)
    except ValueError as exc:
        raise ValueError(f"Invalid parameter device={device!r}: {exc}") from None


def _set_cpu_threads(values: Mapping[str, Any]) -> None:
    """A lesson's ``cpu_threads`` (when it has one and runs on a CPU) becomes torch's thread count: the lessons'
    models are tiny, and one thread is faster than two fighting over a small matrix."""
    threads, device = values.get("cpu_threads"), values.get("device")
    if threads is not None and getattr(device, "type", None) == "cpu":
        import torch  # only here: a lesson's set-up has already imported it through its device

        torch.set_num_threads(threads)


def setup_lesson(
    lesson_id: str,
    namespace: MutableMapping[str, Any],
    *,
    choices: Mapping[str, Iterable[Any]] | None = None,
    syllabus: Syllabus | str | os.PathLike[str] | None = None,
) -> LessonSetup:
    """Check a lesson's parameters, fill the ones left None from the preset, derive device and seeds.

    The steps, in order:

    1. the preset: ``DRO_LAB_PRESET`` wins over ``namespace["preset"]``; it must be a syllabus preset;
    2. every parameter that is None takes the preset's value from the lesson's ``defaults``;
    3. every parameter under the lesson's ``checks`` is checked with :func:`check_parameter`
       (a bad value raises ``ValueError: Invalid parameter NAME=VALUE: expected ...``);
    4. ``device`` becomes a ``torch.device`` (``"auto"``: CUDA when available);
    5. ``seeds = [seed + k for k in range(n_seeds)]`` when the lesson has ``n_seeds``;
    6. on a CPU, torch uses ``cpu_threads`` threads when the lesson has that parameter and it is not None.

    The values are written back into ``namespace`` (a lesson passes ``globals()``, so later cells use
    the plain names), returned, and one line says the preset, device, seeds and the sizes taken from
    the preset.

    Args:
        lesson_id: the lesson's id in the syllabus (or a unique prefix).
        namespace: the lesson's variables, at least its declared parameters; updated in place.
        choices: allowed values known only when the lesson runs (a registry such as
            ``dro_course.lessons.comparison.METHODS``), parameter -> values; they add ``choices`` to that
            parameter's check.
        syllabus: a :class:`Syllabus` or a path to one; default: :func:`find_syllabus`.

    Raises:
        ValueError: a bad parameter value (the message names it and what it accepts); a declared
            parameter without a check in the syllabus.
        NameError: a checked parameter is not defined in ``namespace``.
        SyllabusError: the syllabus is malformed.
    """
    syllabus, lesson = _lesson(lesson_id, syllabus)
    choices = dict(choices or {})
    preset, from_env = _preset(namespace, syllabus)
    _require_checks(lesson, namespace, choices)
    values, from_preset = _filled(lesson, preset, namespace)
    _check_all(lesson, values, choices)
    values["preset"] = preset
    if "device" in values:
        values["device"] = _resolve_device(values["device"])
    if isinstance(values.get("n_seeds"), int) and isinstance(values.get("seed"), int):
        values["seeds"] = [values["seed"] + k for k in range(values["n_seeds"])]
    _set_cpu_threads(values)
    namespace.update(values)
    setup = LessonSetup(
        lesson.id,
        preset,
        MappingProxyType(values),
        tuple(from_preset),
        from_env,
        reading_minutes=lesson.reading_minutes,
        running_minutes=lesson.minutes.get(preset),
    )
    print(setup.summary())
    return setup
