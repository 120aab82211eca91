"""Every name Lesson 05's cells call, for the one import of its set-up cell
(``from dro_course.lessons.adversarial_done.toolkit import *``).

The names every lesson shares come from :mod:`dro_course.lessons.common`; the groups below add this lesson's own,
each with where it comes from, so that a reader who meets ``train_arm`` or ``done_weights`` in a cell finds its
home here in one look.
"""

from __future__ import annotations

import math
import time
from functools import partial

import torch.nn.functional as F
from scipy.optimize import minimize

from dro_course.lessons.adversarial_done import theory
from dro_course.lessons.adversarial_done.data import lesson_data
from dro_course.lessons.common import *  # noqa: F403 - the names every lesson shares, listed in its __all__
from dro_course.lessons.common import __all__ as _common
from dro_lab.data import ArrayDataset
from dro_lab.experiments import train_arm
from dro_lab.experiments.papers.done import DONE_EXPERIMENT
from dro_lab.experiments.reference import tuning_markdown
from dro_lab.metrics import model_on_grid
from dro_lab.reweighting import done_weight_stats, done_weights

__all__ = [
    *_common,
    # Python's standard library: logarithms, a stopwatch, a function with some arguments fixed
    "math",
    "time",
    "partial",
    # torch's functional losses (exercise 2) and SciPy's optimiser (the closed form against a numerical maximum)
    "F",
    "minimize",
    # this lesson's package: its data (set-up cell) and the derivation measured on a model (sections 2–3)
    "lesson_data",
    "theory",
    # the research library: data, one run of an experiment's arm, the DONE experiment and its tuning table,
    # a model's output over a grid (the 2-D toy) and DONE's instance weights
    "ArrayDataset",
    "train_arm",
    "DONE_EXPERIMENT",
    "tuning_markdown",
    "model_on_grid",
    "done_weights",
    "done_weight_stats",
]
