"""The course runner and what lessons call: the syllabus, the set-up of a lesson's parameters, records,
batch runs with papermill, HTML export, summaries and parameter sweeps.

The lessons are Jupyter notebooks listed in ``course/syllabus.yaml``. Inside a lesson, the cell after
the ``parameters`` cell makes one call, :func:`setup_lesson`, which checks every parameter against the
syllabus (``-p epochs 0`` stops there, naming the parameter and its valid values), fills the ones left
None from the preset and derives the device and seeds; :func:`record` stores a named number so that a
batch run, a test or a sweep can read results without parsing cell outputs::

    from dro_lab.course import record, setup_lesson
    setup = setup_lesson("01_dro_foundations", globals())
    record("kl_weights_max", float(q.max()))

Outside the lessons, :func:`run_course` executes lessons with papermill (one process and kernel per
lesson, ``jobs`` at a time, resuming earlier runs), exports each to HTML and writes a summary;
:func:`run_sweep` runs lessons once per value of one parameter and draws every recorded number against
it. A lesson that raises, times out or whose kernel dies is reported with its failure kind
(:data:`FAILURE_KINDS`), failing cell and message while the others run on; Ctrl-C or SIGTERM stops the
running lessons, writes the summary and raises :class:`RunInterrupted`. Every file is written atomically.

Importing this package is cheap (the standard library and PyYAML on first use): papermill, nbformat,
nbconvert, plotly and torch are imported only by the functions that need them.

Modules, from the bottom up:

- ``_files``: atomic text writes, hashes, JSON-ready values, Markdown table cells;
- ``parameters``: :func:`check_parameter`, :func:`notebook_parameters`, :func:`parse_parameter_value`;
- ``syllabus`` (with ``_syllabus_fields``, the per-lesson readers): :class:`Lesson`, :class:`Syllabus`,
  :func:`load_syllabus`, :func:`find_syllabus`, :func:`syllabus_markdown`, :func:`lessons_table`;
- ``environment``: :func:`environment_report`, lesson 00's set-up check;
- ``lesson_setup``: :func:`setup_lesson`, :class:`LessonSetup`, :func:`check_lesson_parameters` (before a run);
- ``records``: :func:`record`, :func:`read_records`;
- ``exercises``: :func:`check_exercise` (what a lesson's check cell calls), :func:`read_solutions`,
  :func:`fill_solutions` (the instructor copy), :func:`solutions_path`; ``instructor``: the instructor copy executed
  in the lesson's own run (solutions appended after the student's cells, the executed notebook split in two);
- ``lessons``: what one lesson checks, a module per lesson (``lessons.hardness_weighted_sampling``: lesson 02's
  facts as functions that raise :class:`~.lessons.LessonCheckError`, with certified tolerances);
- ``results``: :class:`LessonResult`, :class:`FailingCell`; ``failures``: :func:`find_failing_cell` and
  the failure kind of a papermill run;
- ``control``: :class:`RunInterrupted` and the run's papermill processes; ``execute``: one lesson through
  papermill, its executed notebooks and its ``<id>.run.json`` (resume);
- ``report``: :func:`summary_table`, :func:`write_summary`; ``runner``: :func:`run_course`;
- ``dask_executor``: ``run_course(..., executor="dask")``, the lessons as tasks on a Dask cluster (loaded then);
- ``sweep``: :func:`parse_sweep`, :func:`run_sweep` (its :class:`SweepResult` lives in ``results``); ``sweep_report``:
  :func:`sweep_table`, :func:`sweep_figure`, :func:`write_sweep_summary`.
"""

from __future__ import annotations

from .control import RunInterrupted
from .environment import environment_report
from .exercises import (
    ExerciseCheck,
    check_exercise,
    fill_solutions,
    read_solutions,
    solutions_path,
    write_instructor_copy,
)
from .failures import find_failing_cell
from .lesson_setup import LessonSetup, check_lesson_parameters, setup_lesson
from .parameters import PRESET_ENV, check_parameter, notebook_parameters, parse_parameter_value
from .records import RECORD_ENV, read_records, record
from .report import summary_table, write_summary
from .results import FAILURE_KINDS, FailingCell, LessonResult, SweepResult
from .runner import DEFAULT_TIMEOUT, run_course
from .sweep import parse_sweep, run_sweep
from .sweep_report import sweep_figure, sweep_table, write_sweep_summary
from .syllabus import (
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
