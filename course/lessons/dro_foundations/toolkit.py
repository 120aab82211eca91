"""Every name Lesson 01's cells call, for the one import of its set-up cell
(``from dro_course.lessons.dro_foundations.toolkit import *``).

The names every lesson shares come from :mod:`dro_course.lessons.common`; this lesson adds the independent
referees of section 2 (a general-purpose solver, CVaR's pouring rule, Fidon et al.'s χ² formula as printed), the
per-example losses of section 2.6, and the 2-D minority toy of section 4.
"""

from __future__ import annotations

import math

import torch.nn.functional as F

from dro_course.lessons.common import *  # noqa: F403 - the names every lesson shares
from dro_course.lessons.common import __all__ as _common
from dro_course.lessons.dro_foundations.figures import toy_boundaries_figure, toy_sweep_figure
from dro_course.lessons.dro_foundations.panels import toy_panel
from dro_course.lessons.dro_foundations.toys import run_minority_toy
from dro_lab.data import group_counts
from dro_lab.oracles import cvar_sorted_weights, fidon_eq21_threshold, fidon_eq21_weights, simplex_worst_case

__all__ = [
    *_common,
    # the standard library and torch's functional losses (section 2.6's classifier)
    "math",
    "F",
    # the library's independent referees (dro_lab.oracles): a general-purpose solver, CVaR's pouring rule and
    # Fidon et al.'s χ² formula exactly as printed, with the β below which it clips nothing
    "simplex_worst_case",
    "cvar_sorted_weights",
    "fidon_eq21_threshold",
    "fidon_eq21_weights",
    # the 2-D minority toy of section 4 (this lesson's package) and the library's group counts
    "run_minority_toy",
    "toy_boundaries_figure",
    "toy_panel",
    "toy_sweep_figure",
    "group_counts",
]
