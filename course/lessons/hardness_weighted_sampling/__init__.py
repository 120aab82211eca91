r"""Lesson 02's checks: Fidon, Ourselin & Vercauteren (2019), *SGD with Hardness Weighted Sampling for Distributionally
Robust Deep Learning* (later arXiv:2001.02658).

One function per fact the lesson asserts, in the lesson's order (``weights``: the worst-case weights; ``gradients``:
the gradients; ``draws``: the sampler's draws); each returns a frozen result whose ``lines()`` the
lesson prints and raises :class:`~dro_course.lessons.LessonCheckError` when its fact fails:

* §3.1, eqs. 9–12: :func:`check_robust_loss` — the library's log-mean-exp against SciPy's, the limits (11) and (12)
  as exact inequalities, and the monotonicity in β;
* §3.2, eq. 20, and §3.6: :func:`check_worst_case` — the closed form and the library's weights against the exact
  one-dimensional dual (:func:`dro_lab.oracles.dual_worst_case`), KL and χ²; :func:`check_sampler_probabilities` —
  the sampler's float32 softmax against float64;
* §3.3, Lemma 3.2: :func:`check_lemma_3_2` — autograd of the robust loss against the p̄-weighted per-example gradients;
* §3.4, App. D.7.4, eq. 82: :func:`check_mc_gradient` — McDiarmid's bound on the Monte-Carlo error of i.i.d. batches;
* §3.5, Theorem 3.2: :func:`check_jacobian` — finite differences against the closed-form Jacobians;
* §3.6, eq. 21: :func:`check_eq21` and :func:`check_sampler_chi2` — the printed formula's excess mass once it clips,
  the exact χ² weights, the sampler's χ² probabilities;
* §3.7, Lemma 3.1: :func:`check_lipschitz` — the softmax is (β/2)-Lipschitz;
* §3.8, App. D.8, eq. 104: :func:`check_staleness` — the history's ages against :math:`(1-\alpha)^{kb}`, by Chernoff;
* exercise 2: :func:`exercise2_tolerance` — a Bernstein interval for a Monte-Carlo count.

The tolerances come from the rounding model of :mod:`dro_course.lessons` (float64 unless stated), from truncation
bounds, from certificates and from concentration inequalities with failure probability at most 10⁻⁶.
"""

from __future__ import annotations

from dro_course.lessons.hardness_weighted_sampling.diagnostics import age_survival, sampling_summary
from dro_course.lessons.hardness_weighted_sampling.draws import check_staleness, exercise2_tolerance
from dro_course.lessons.hardness_weighted_sampling.figures import (
    age_figure,
    hws_sampling_figure,
    mc_error_figure,
    minority_mass_figure,
    sampling_figure,
)
from dro_course.lessons.hardness_weighted_sampling.gradients import (
    check_jacobian,
    check_lemma_3_2,
    check_lipschitz,
    check_mc_gradient,
    chi2_clipping_beta,
)
from dro_course.lessons.hardness_weighted_sampling.panels import hws_panel
from dro_course.lessons.hardness_weighted_sampling.weights import (
    check_eq21,
    check_robust_loss,
    check_sampler_chi2,
    check_sampler_probabilities,
    check_worst_case,
    pick_losses,
)

#: Every fact the lesson asserts, in its order (tests/course/lessons/test_lesson02_checks.py calls each of them).
CHECKS = (
    check_robust_loss,
    check_worst_case,
    check_sampler_probabilities,
    check_lemma_3_2,
    check_mc_gradient,
    check_jacobian,
    check_eq21,
    check_sampler_chi2,
    check_lipschitz,
    check_staleness,
)

__all__ = [
    "age_survival",
    "sampling_summary",
    "age_figure",
    "hws_sampling_figure",
    "mc_error_figure",
    "minority_mass_figure",
    "sampling_figure",
    "hws_panel",
    "CHECKS",
    "check_robust_loss",
    "check_worst_case",
    "check_sampler_probabilities",
    "check_lemma_3_2",
    "check_mc_gradient",
    "check_jacobian",
    "check_eq21",
    "check_sampler_chi2",
    "check_lipschitz",
    "check_staleness",
    "exercise2_tolerance",
    "chi2_clipping_beta",
    "pick_losses",
]
