"""dro_course — the dro_lab course: its lessons' notebooks, what they call, and the runner that publishes them.

The lessons are Jupyter notebooks listed in the syllabus (``syllabus.yaml`` of this package; the notebooks ship with
it). Inside a lesson, the cell after the ``parameters`` cell makes one call, :func:`setup_lesson`, which checks every
parameter against the syllabus (``-p epochs 0`` stops there, naming the parameter and its valid values), fills the
ones left None from the preset and derives the device and seeds; :func:`record` stores a named number so that a
batch run, a test or a sweep can read results without parsing cell outputs::

    from dro_course import record, setup_lesson
    setup = setup_lesson("01_dro_foundations", globals())
    record("kl_weights_max", float(q.max()))

Outside the lessons, :func:`run_course` executes lessons with papermill (one process and kernel per lesson, ``jobs``
at a time, resuming earlier runs) and builds the course website; :func:`run_sweep` runs lessons once per value of one
parameter. The ``dro-course`` command (:mod:`dro_course.cli`) lists, runs and fetches the lessons.

Importing this package is cheap (the standard library and PyYAML on first use): papermill, nbformat, nbconvert,
plotly and torch are imported only by the functions that need them.

The package, from the bottom up (imports go one way; ``lint-imports`` checks it):

- the lesson kit: ``_files``; ``parameters``; ``syllabus`` (with ``_syllabus_fields``); ``environment`` (lesson 00's
  set-up check); ``lesson_setup`` (:func:`setup_lesson`); ``records`` (:func:`record`); ``exercises``
  (:func:`check_exercise`, the solutions); ``beside`` (a live run under the shipped reference run);
- ``figures``: plotly figures, one module per topic; ``panels``: the interactive panels (ipywidgets) and their
  static twins on the website;
- ``lessons``: what one lesson needs to show, check or explain (its theory checks, studies and toy problems), one
  subpackage per lesson, independent of each other;
- ``runner``: :func:`run_course`, :func:`run_sweep`, the executed notebooks and the Dask executor; ``site``: the
  course website; ``fetch``: the student notebooks copied to a working folder; ``cli``: ``dro-course``.
"""

from __future__ import annotations

from dro_course.environment import environment_report
from dro_course.exercises import (
    ExerciseCheck,
    check_exercise,
    fill_solutions,
    read_solutions,
    solutions_path,
    write_instructor_copy,
)
from dro_course.lesson_setup import LessonSetup, check_lesson_parameters, setup_lesson
from dro_course.parameters import PRESET_ENV, check_parameter, notebook_parameters, parse_parameter_value
from dro_course.records import RECORD_ENV, read_records, record
from dro_course.results import FAILURE_KINDS, FailingCell, LessonResult, SweepResult
from dro_course.runner.control import RunInterrupted
from dro_course.runner.failures import find_failing_cell
from dro_course.runner.report import summary_table, write_summary
from dro_course.runner.run import DEFAULT_TIMEOUT, run_course
from dro_course.runner.sweep import parse_sweep, run_sweep
from dro_course.runner.sweep_report import sweep_figure, sweep_table, write_sweep_summary
from dro_course.syllabus import (
    DEFAULT_PRESETS,
    Lesson,
    Syllabus,
    SyllabusError,
    find_syllabus,
    lessons_table,
    load_syllabus,
    syllabus_markdown,
)

__all__ = [
    "DEFAULT_PRESETS",
    "ExerciseCheck",
    "check_exercise",
    "fill_solutions",
    "read_solutions",
    "solutions_path",
    "write_instructor_copy",
    "DEFAULT_TIMEOUT",
    "RECORD_ENV",
    "PRESET_ENV",
    "FAILURE_KINDS",
    "FailingCell",
    "Lesson",
    "LessonResult",
    "LessonSetup",
    "RunInterrupted",
    "Syllabus",
    "SweepResult",
    "SyllabusError",
    "check_lesson_parameters",
    "check_parameter",
    "environment_report",
    "lessons_table",
    "find_failing_cell",
    "find_syllabus",
    "load_syllabus",
    "notebook_parameters",
    "parse_parameter_value",
    "parse_sweep",
    "read_records",
    "record",
    "run_course",
    "run_sweep",
    "setup_lesson",
    "summary_table",
    "sweep_figure",
    "sweep_table",
    "syllabus_markdown",
    "write_summary",
    "write_sweep_summary",
]
