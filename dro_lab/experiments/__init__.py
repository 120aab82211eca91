"""Each paper's experiment as one call, the course's comparison, and hyper-parameter tuning.

* :mod:`~dro_lab.experiments.comparison` — the capstone benchmark: :data:`METHODS`, :func:`run_comparison`,
  :func:`summarise`, :func:`pareto_front`;
* :mod:`~dro_lab.experiments.verdict` — :func:`judge`, the one rule that says whether a claim held;
* :mod:`~dro_lab.experiments.tuning` — :func:`tune`, Bayesian optimisation with optuna.
"""

from __future__ import annotations

from .comparison import (
    METHODS,
    MethodSpec,
    available_methods,
    make_benchmark,
    paired_differences,
    pareto_front,
    run_comparison,
    summarise,
)
from .summary import summarize_runs
from .tuning import GILS_SEARCH_SPACE, best_at_bounds, tune
from .verdict import VERDICTS, Verdict, combine, judge, mean_sd_text

__all__ = [
    "METHODS",
    "MethodSpec",
    "available_methods",
    "make_benchmark",
    "paired_differences",
    "pareto_front",
    "run_comparison",
    "summarise",
    "summarize_runs",
    "GILS_SEARCH_SPACE",
    "best_at_bounds",
    "tune",
    "VERDICTS",
    "Verdict",
    "combine",
    "judge",
    "mean_sd_text",
]
