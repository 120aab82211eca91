"""Every name Lesson 06's cells call, for the one import of its set-up cell
(``from dro_course.lessons.label_smoothing_dro.toolkit import *``).

It starts from the names every lesson shares (:mod:`dro_course.lessons.common`) and adds this lesson's own,
grouped below by where each comes from, so that a reader who meets ``robust_surrogate`` in a cell finds its home in
one look.
"""

from __future__ import annotations

import torch.nn.functional as F

from dro_course.lessons.common import *  # noqa: F403 - the shared names, listed in its __all__
from dro_course.lessons.common import __all__ as _common
from dro_course.lessons.label_smoothing_dro.data import experiment_data, tiny_models_on_cpu
from dro_course.lessons.label_smoothing_dro.ls_dro import (
    concavity_threshold,
    feature_ascent,
    feature_gradient,
    penalised_objective,
    robust_surrogate,
    shift_bound,
)
from dro_course.lessons.label_smoothing_dro.studies import *  # noqa: F403 - the studies, in its __all__
from dro_course.lessons.label_smoothing_dro.studies import __all__ as _studies
from dro_course.lessons.label_smoothing_dro.tables import *  # noqa: F403 - the checks' tables, in its __all__
from dro_course.lessons.label_smoothing_dro.tables import __all__ as _tables
from dro_lab.attacks import gils_shift, gils_shift_report
from dro_lab.experiments import train_arm
from dro_lab.experiments.reference import tuning_markdown
from dro_lab.losses import ls_cross_entropy, smoothed_targets, torch_label_smoothing
from dro_lab.metrics import model_on_grid

__all__ = [
    *_common,
    # torch's functional losses
    "F",
    # the research library: the label-smoothed loss, the GI-LS shift, one arm's training, a model's map
    "ls_cross_entropy",
    "smoothed_targets",
    "torch_label_smoothing",
    "gils_shift",
    "gils_shift_report",
    "train_arm",
    "tuning_markdown",
    "model_on_grid",
    # this lesson's set-up and the experiment's data (dro_course.lessons.label_smoothing_dro.data)
    "experiment_data",
    "tiny_models_on_cpu",
    # the inner problem on a linear head in feature space (dro_course.lessons.label_smoothing_dro.ls_dro)
    "concavity_threshold",
    "feature_ascent",
    "feature_gradient",
    "penalised_objective",
    "robust_surrogate",
    "shift_bound",
    # the studies around the experiment (dro_course.lessons.label_smoothing_dro.studies)
    *_studies,
    # the tables of the lesson's checks (dro_course.lessons.label_smoothing_dro.tables)
    *_tables,
]
