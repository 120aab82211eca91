"""Every name Lesson 04's cells call, for the one import of its set-up cell
(``from dro_course.lessons.group_dro_also.toolkit import *``).

The names every lesson shares come from :mod:`dro_course.lessons.common`; this lesson adds the data sets it
trains on, the library's closed form of π* and its text helpers for the experiment, the ALSO experiment itself,
the same problems solved by other means (:mod:`.saddle`), the optimizers run against them (:mod:`.checks`), the
paper's three other experiments in small (:mod:`.tasks`) and the lesson's figure of the reference run.
"""

from __future__ import annotations

import functools
import math

from dro_course.beside import is_illustration
from dro_course.figures.group_dro import reference_parts_figure
from dro_course.lessons.common import *  # noqa: F403 - the names every lesson shares
from dro_course.lessons.common import __all__ as _common
from dro_course.lessons.group_dro_also.checks import (
    mirror_prox_distances,
    pi_trajectory_run,
    trained_parameters,
)
from dro_course.lessons.group_dro_also.saddle import (
    kl_penalised_value,
    logistic_dro_saddle,
    numerical_kl_prox,
    numerical_pi_star,
    optimism_spectral_radius,
)
from dro_course.lessons.group_dro_also.tasks import (
    run_also_tabular,
    run_also_transforms,
    run_also_workers,
)
from dro_lab.data import load_digits, load_tabular
from dro_lab.experiments import mean_sd_text
from dro_lab.experiments.papers.also import ALSO_EXPERIMENT
from dro_lab.experiments.reference import tuning_markdown
from dro_lab.optim import pi_star

__all__ = [
    *_common,
    # the standard library
    "functools",
    "math",
    # the research library: bundled data, the closed-form π*, the ALSO experiment and its text helpers
    "load_digits",
    "load_tabular",
    "pi_star",
    "ALSO_EXPERIMENT",
    "mean_sd_text",
    "tuning_markdown",
    # the course: whether a run is too small to judge, and this lesson's figure of the reference run
    "is_illustration",
    "reference_parts_figure",
    # this lesson's package: the same problems solved by other means (saddle)
    "kl_penalised_value",
    "logistic_dro_saddle",
    "numerical_kl_prox",
    "numerical_pi_star",
    "optimism_spectral_radius",
    # ... the optimizers run against them (checks)
    "mirror_prox_distances",
    "pi_trajectory_run",
    "trained_parameters",
    # ... and the paper's three other experiments, small and untuned (tasks)
    "run_also_tabular",
    "run_also_transforms",
    "run_also_workers",
]
