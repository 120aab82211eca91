"""Every name Lesson 07's cells call, for the one import of its set-up cell
(``from dro_course.lessons.comparison.toolkit import *``).

The names every lesson shares come from :mod:`dro_course.lessons.common`; this lesson adds SciPy's statistics (the
t-intervals of section 2), the library's verdict rule, and its own study: the method registry, the benchmark, the
runs, their report and the Run panel.
"""

from __future__ import annotations

from scipy import stats

from dro_course.lessons.common import *  # noqa: F403 - the names every lesson shares
from dro_course.lessons.common import __all__ as _common
from dro_course.lessons.comparison.panels import comparison_panel
from dro_course.lessons.comparison.report import ComparisonReport, comparison_methods, methods_markdown
from dro_course.lessons.comparison.settings import comparison_settings
from dro_course.lessons.comparison.study import METHODS, MethodSpec, make_benchmark, pareto_front, run_comparison
from dro_lab.experiments import judge

__all__ = [
    *_common,
    # SciPy's statistics (Student's t and Welch's test, section 2) and the library's one verdict rule
    "stats",
    "judge",
    # this lesson's study (dro_course.lessons.comparison): the registry of methods, the benchmark, the runs
    "METHODS",
    "MethodSpec",
    "make_benchmark",
    "pareto_front",
    "run_comparison",
    # ... its set-up, its report (the methods' table, the results' table and what held) and the Run panel
    "comparison_settings",
    "comparison_methods",
    "methods_markdown",
    "ComparisonReport",
    "comparison_panel",
]
