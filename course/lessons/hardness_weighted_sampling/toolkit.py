"""Every name Lesson 02's cells call, for the one import of its set-up cell
(``from dro_course.lessons.hardness_weighted_sampling.toolkit import *``).

The names every lesson shares come from :mod:`dro_course.lessons.common`; this lesson adds its data (the paper's
imbalanced training set, :mod:`.data`), one check per fact of its theory section (:mod:`.weights`: the worst-case
weights; :mod:`.gradients`: the gradients; :mod:`.draws`: the sampler's draws), its figures and panel, what its
exercise checks compare with (:mod:`.expected`), and the library's tables of a run's tuning and sampler.
"""

from __future__ import annotations

from dro_course.lessons.common import *  # noqa: F403 - the names every lesson shares
from dro_course.lessons.common import __all__ as _common
from dro_course.lessons.hardness_weighted_sampling import (
    age_figure,
    check_eq21,
    check_jacobian,
    check_lemma_3_2,
    check_lipschitz,
    check_mc_gradient,
    check_robust_loss,
    check_sampler_chi2,
    check_sampler_probabilities,
    check_staleness,
    chi2_clipping_beta,
    expected,
    hws_panel,
    hws_sampling_figure,
    mc_error_figure,
    minority_mass_figure,
    pick_losses,
    sampling_summary,
)
from dro_course.lessons.hardness_weighted_sampling._shared import distinct_betas
from dro_course.lessons.hardness_weighted_sampling.data import history_summary, lesson_data
from dro_course.lessons.hardness_weighted_sampling.weights import check_worst_cases
from dro_lab.experiments.reference import sampler_markdown, tuning_markdown

__all__ = [
    *_common,
    # this lesson's package: the data of the set-up cell and section 2 (data)
    "lesson_data",
    "history_summary",
    # ... the checks of section 3, in its order (weights, gradients, draws), and the β of their tables
    "check_robust_loss",
    "pick_losses",
    "check_worst_cases",
    "check_sampler_probabilities",
    "check_lemma_3_2",
    "check_mc_gradient",
    "chi2_clipping_beta",
    "check_jacobian",
    "check_eq21",
    "check_sampler_chi2",
    "check_lipschitz",
    "check_staleness",
    "distinct_betas",
    # ... the figures and the panel of sections 3 and 4 (figures, diagnostics, panels)
    "mc_error_figure",
    "age_figure",
    "hws_sampling_figure",
    "minority_mass_figure",
    "sampling_summary",
    "hws_panel",
    # ... and the reference beside the reader's run (section 5.4)
    # ... what the exercise checks compare with, out of sight (expected)
    "expected",
    # the research library: a run's tuning and its sampler, as tables (section 5)
    "tuning_markdown",
    "sampler_markdown",
]
