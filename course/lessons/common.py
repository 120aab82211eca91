"""The names every lesson's cells call, for the one import of its set-up cell.

A lesson's set-up cell imports its own ``toolkit`` module with a star
(``from dro_course.lessons.adversarial_done.toolkit import *``), so that the first thing a student reads after the
parameters is the lesson's idea, not twenty lines of imports. Each ``toolkit`` starts from these names and adds the
lesson's own; both list every name in ``__all__``, grouped by where it comes from, so a reader who meets
``beside_reference`` in a cell finds its home in one look.
"""

from __future__ import annotations

import numpy as np
import torch
from IPython.display import Markdown, display

import dro_lab
from dro_course import figures, panels
from dro_course.beside import beside_reference, claims_in_words, is_illustration, live_label, smoke_artefacts
from dro_course.exercises import check_exercise
from dro_course.lesson_setup import setup_lesson
from dro_course.records import record
from dro_lab.experiments import load_reference, run_experiment

__all__ = [
    # numerical libraries and the notebook's display
    "np",
    "torch",
    "Markdown",
    "display",
    # the research library, and its experiments and shipped reference runs
    "dro_lab",
    "load_reference",
    "run_experiment",
    # the course: figures, interactive panels, the reference beside a live run, exercises, set-up and records
    "figures",
    "panels",
    "beside_reference",
    "claims_in_words",
    "is_illustration",
    "live_label",
    "smoke_artefacts",
    "check_exercise",
    "setup_lesson",
    "record",
]
