"""Lesson 03, importance sampling for SGD (Lahire): ``is_variance`` (the variance of the importance-sampled gradient,
exactly and by simulation), ``studies`` (the side studies: cost ratios and the forgotten weights), ``live`` (what
the reader's small run can show), its figures and panels, and ``toolkit`` (every name the lesson's cells call)."""

from __future__ import annotations

from dro_course.lessons.importance_sampling.figures import (
    accuracy_beside_figure,
    forgotten_weights_figure,
    is_cost_figure,
    is_cost_ratio_figure,
    is_variance_figure,
    log_curves_figure,
    loss_against_time_figure,
)
from dro_course.lessons.importance_sampling.live import accuracy_artefacts, run_label
from dro_course.lessons.importance_sampling.panels import experiment_panel, is_variance_panel

__all__ = [
    "accuracy_beside_figure",
    "forgotten_weights_figure",
    "is_cost_figure",
    "is_cost_ratio_figure",
    "is_variance_figure",
    "log_curves_figure",
    "loss_against_time_figure",
    "is_variance_panel",
    "experiment_panel",
    "accuracy_artefacts",
    "run_label",
]
