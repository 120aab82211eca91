"""Every name Lesson 03's cells call, for the one import of its set-up cell
(``from dro_course.lessons.importance_sampling.toolkit import *``).

The names every lesson shares come from :mod:`dro_course.lessons.common`; the ones below are lesson 03's own, grouped
by where they live, so that a reader who meets ``isv.variance_term`` or ``train_arm`` in a cell finds its home here.
"""

from __future__ import annotations

from dro_course.lessons import importance_sampling as lesson
from dro_course.lessons.common import *  # noqa: F403 (the shared names, listed in its __all__)
from dro_course.lessons.common import __all__ as _common
from dro_course.lessons.importance_sampling import is_variance as isv
from dro_course.lessons.importance_sampling.studies import forgotten_weights_study
from dro_lab.experiments import train_arm
from dro_lab.experiments.papers.importance import IMPORTANCE_EXPERIMENT
from dro_lab.experiments.reference import tuning_markdown

__all__ = [
    *_common,
    # the paper's experiment in the library: its definition, one arm trained as it trains them, the tuning table
    "IMPORTANCE_EXPERIMENT",
    "train_arm",
    "tuning_markdown",
    # this lesson's package: its figures, panels and live-run notes (``lesson.…``), the exact variance of the
    # importance-sampled gradient (``isv.…``) and the forgotten-weights study
    "lesson",
    "isv",
    "forgotten_weights_study",
]
