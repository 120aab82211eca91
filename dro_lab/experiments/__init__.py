"""Each paper's experiment as one call, the course's comparison, and hyper-parameter tuning.

* :func:`run_experiment` — each paper's headline experiment (:data:`EXPERIMENTS`) run with one fair protocol
  (:mod:`~dro_lab.experiments.protocol`: the same tuning budget for every arm on a validation split, paired
  seeds, :func:`judge`), returning an :class:`ExperimentResult` (saved as JSON);
* :func:`load_reference` — the reference runs shipped with the package (:data:`REFERENCES`, 5 paired seeds
  each), to show beside a live run (:func:`beside_reference`); :func:`regenerate_reference`;
* :mod:`~dro_lab.experiments.comparison` — the capstone benchmark: :data:`METHODS`, :func:`run_comparison`,
  :func:`summarise`, :func:`pareto_front`;
* :mod:`~dro_lab.experiments.verdict` — :func:`judge`, the one rule that says whether a claim held
  (:func:`judge_seeds` when a seed is missing or diverged: it is set aside and named, never dropped silently);
* :mod:`~dro_lab.experiments.tuning` — :func:`tune`, Bayesian optimisation with optuna.
"""

from __future__ import annotations

from .._moved import moved_attribute
from .comparison import (
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
from .papers import EXPERIMENTS
from .protocol import Arm, Claim, Experiment, Splits
from .reference import (
    REFERENCES,
    Reference,
    ReferencePart,
    ReferencePlan,
    available_references,
    bundle_reference,
    load_reference,
    regenerate_reference,
)
from .result import ExperimentResult
from .runner import available_experiments, parse_seeds, run_experiment, train_arm
from .summary import summarize_runs
from .tuning import GILS_SEARCH_SPACE, best_at_bounds, tune
from .verdict import VERDICTS, Verdict, combine, judge, judge_band, judge_seeds, mean_sd_text, pair_seeds

__all__ = [
    "EXPERIMENTS",
    "Arm",
    "Claim",
    "Experiment",
    "ExperimentResult",
    "Splits",
    "available_experiments",
    "REFERENCES",
    "Reference",
    "ReferencePart",
    "ReferencePlan",
    "available_references",
    "bundle_reference",
    "load_reference",
    "regenerate_reference",
    "parse_seeds",
    "run_experiment",
    "train_arm",
    "FAMILIES",
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
    "judge_band",
    "judge_seeds",
    "mean_sd_text",
    "pair_seeds",
]


def __getattr__(name: str):  # a name that moved to the course package fails with its new home
    return moved_attribute(__name__, name)
