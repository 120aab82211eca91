"""Plotly figure builders: arrays in, ``go.Figure`` out. Pure, so tests inspect ``fig.data`` headless.

Importing this package imports plotly; dro_lab never does. Lessons call ``figures.<name>``; every name is
re-exported here from its module (a figure that draws what only one lesson computes lives in that lesson's package,
:mod:`dro_course.lessons`):

- :mod:`.weights`: worst-case weights, the robust loss against β, the β ↔ r duality (lesson 01);
- :mod:`.training`: decision boundaries, metrics against a knob or over epochs (mean ± std over seeds),
  method sweeps and average against worst-group;
- :mod:`.group_dro`: descent–ascent on the bilinear game, π* against β, π over training (lesson 04);
- :mod:`.done`: DONE's instance weights per class and the r(t) schedule (lesson 05);
- :mod:`.adversarial`: an attack on a 2-D toy, per-class robust accuracy, PGD against AutoAttack, an experiment's
  final metrics with their intervals, and the reference run beside the reader's (lesson 05);
- :mod:`.smoothing`: the GI-LS shift field, transport cost against γ, the regulariser, generated images,
  cost against T, Bayesian-optimisation progress (lesson 06);
- :mod:`.comparison`: the capstone's every-method figure (lesson 07);
- :mod:`.experiments`: a paper's experiment: learning curves over seeds, the final metric seed by seed, the
  shipped reference run beside the reader's own;
- :mod:`.tuning`: expected validation performance, how much tuning each arm of an experiment got (lessons 02–06);
- :mod:`.slider`: :func:`slider_figure`, a figure with its own plotly sliders over precomputed knob values
  (a panel's static twin, drawn with no kernel);
- :mod:`._style`: ``PALETTE``, the common layout and shared drawing helpers.

The numbers the figures draw are computed by the library, never here; a few of those functions are also
re-exported below because lessons call them as ``figures.<name>`` (``is_mixture`` from
:mod:`dro_lab.samplers.importance`, ``pi_star`` and ``kl_to_prior`` from :mod:`dro_lab.optim.prox`, ...).
"""

from __future__ import annotations

from dro_course.figures._style import PALETTE, TEMPLATE
from dro_course.figures.adversarial import (
    attack_gap_figure,
    attack_toy_figure,
    experiment_per_class_figure,
    final_metric_beside_figure,
    final_metrics_figure,
    per_class_robust_figure,
)
from dro_course.figures.comparison import comparison_figure
from dro_course.figures.done import done_weight_figure, r_schedule_figure
from dro_course.figures.experiments import (
    experiment_curves_figure,
    experiment_seeds_figure,
    reference_beside_live_figure,
)
from dro_course.figures.group_dro import (
    bilinear_figure,
    bilinear_traces,
    pi_star_bar_figure,
    pi_star_figure,
    pi_trajectory_figure,
    saddle_distance_figure,
)
from dro_course.figures.slider import slider_figure
from dro_course.figures.smoothing import (
    bo_progress_figure,
    cost_vs_T_figure,
    generated_images_figure,
    regularizer_figure,
    shift_field_figure,
    transport_vs_gamma_figure,
)
from dro_course.figures.training import (
    curves_figure,
    curves_grid_figure,
    decision_boundary_figure,
    history_curves,
    history_figure,
    method_sweep_figure,
    method_tradeoff_figure,
    tradeoff_figure,
)
from dro_course.figures.tuning import expected_validation_figure
from dro_course.figures.weights import (
    duality_curves_figure,
    duality_figure,
    robust_value_figure,
    weights_figure,
    weights_for_knobs,
)
from dro_lab.experiments.summary import summarize_runs
from dro_lab.losses import ls_regularizer_values
from dro_lab.optim.prox import kl_to_prior, pi_star
from dro_lab.pergrad.quality import is_estimator_stats
from dro_lab.reweighting import done_weight_stats
from dro_lab.samplers.importance import is_mixture

__all__ = [
    "PALETTE",
    "TEMPLATE",
    # lesson 01 and training results
    "weights_figure",
    "robust_value_figure",
    "duality_figure",
    "decision_boundary_figure",
    "tradeoff_figure",
    "history_figure",
    "summarize_runs",
    "weights_for_knobs",
    "duality_curves_figure",
    # lesson 02: curves over seeds, hardness-weighted sampling
    "history_curves",
    "curves_figure",
    "curves_grid_figure",
    # lesson 03: importance sampling
    "is_mixture",
    "is_estimator_stats",
    # lesson 04: group DRO
    "bilinear_traces",
    "bilinear_figure",
    "kl_to_prior",
    "pi_star",
    "pi_star_figure",
    "pi_star_bar_figure",
    "pi_trajectory_figure",
    "saddle_distance_figure",
    "method_sweep_figure",
    "method_tradeoff_figure",
    # lesson 05: DONE
    "done_weight_stats",
    "done_weight_figure",
    "attack_toy_figure",
    "per_class_robust_figure",
    "attack_gap_figure",
    "experiment_per_class_figure",
    "final_metric_beside_figure",
    "final_metrics_figure",
    "r_schedule_figure",
    # lesson 06: GI-LS
    "shift_field_figure",
    "transport_vs_gamma_figure",
    "ls_regularizer_values",
    "regularizer_figure",
    "generated_images_figure",
    "cost_vs_T_figure",
    "bo_progress_figure",
    # lesson 07
    "comparison_figure",
    "experiment_curves_figure",
    "reference_beside_live_figure",
    "experiment_seeds_figure",
    # lessons 02–06: how much tuning each arm got
    "expected_validation_figure",
    # static twins (the course site)
    "slider_figure",
]
