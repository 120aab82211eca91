"""Lesson 01, the foundations of DRO: ``toys`` (the 2-D minority toy: every method trained on a majority and a
minority group), its ``figures`` (decision boundaries, a metric against each knob) and its Run ``panels``."""

from __future__ import annotations

from dro_course.lessons.dro_foundations.figures import TOY_COLORS, toy_boundaries_figure, toy_sweep_figure
from dro_course.lessons.dro_foundations.panels import toy_panel
from dro_course.lessons.dro_foundations.toys import TOY_METHODS, MinorityToy, run_minority_toy, toy_strategy

__all__ = [
    "TOY_COLORS",
    "TOY_METHODS",
    "MinorityToy",
    "run_minority_toy",
    "toy_boundaries_figure",
    "toy_panel",
    "toy_strategy",
    "toy_sweep_figure",
]
