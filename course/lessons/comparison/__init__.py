"""Lesson 07, every method compared: ``study`` (the methods, the benchmark, the runs, their summary and Pareto
front), ``settings`` (the set-up: the methods, the benchmark and every knob, from the lesson's parameters),
``report`` (the comparison's table and what held), its Run ``panels`` and ``toolkit`` (every name its cells call)."""

from __future__ import annotations

from dro_course.lessons.comparison.panels import comparison_panel
from dro_course.lessons.comparison.report import (
    ComparisonReport,
    comparison_methods,
    is_illustration_run,
    methods_markdown,
)
from dro_course.lessons.comparison.settings import ComparisonSettings, comparison_settings
from dro_course.lessons.comparison.study import (
    FAMILIES,
    METHODS,
    MethodSpec,
    available_methods,
    make_benchmark,
    paired_differences,
    pareto_front,
    run_comparison,
    summarise,
)

__all__ = [
    "FAMILIES",
    "METHODS",
    "MethodSpec",
    "available_methods",
    "make_benchmark",
    "paired_differences",
    "pareto_front",
    "run_comparison",
    "summarise",
    "ComparisonReport",
    "comparison_methods",
    "is_illustration_run",
    "methods_markdown",
    "comparison_panel",
    "ComparisonSettings",
    "comparison_settings",
]
