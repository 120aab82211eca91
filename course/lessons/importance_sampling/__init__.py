"""Lesson 03, importance sampling for SGD (Lahire): ``is_variance`` (the variance of the importance-sampled gradient,
exactly and by simulation) and ``studies`` (the side studies: cost ratios and the forgotten weights)."""

from __future__ import annotations

from dro_course.lessons.importance_sampling.figures import (
    forgotten_weights_figure,
    is_cost_figure,
    is_cost_ratio_figure,
    is_variance_figure,
    log_curves_figure,
    loss_against_time_figure,
)
from dro_course.lessons.importance_sampling.panels import is_variance_panel

__all__ = [
    "forgotten_weights_figure",
    "is_cost_figure",
    "is_cost_ratio_figure",
    "is_variance_figure",
    "log_curves_figure",
    "loss_against_time_figure",
    "is_variance_panel",
]
