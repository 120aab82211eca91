"""Each paper's experiment as one call, its reference run, the verdict rule and hyper-parameter tuning.

* :func:`run_experiment` — each paper's headline experiment (:data:`EXPERIMENTS`) run with one fair protocol
  (:mod:`~dro_lab.experiments.protocol`: equal tuning effort for every arm on a validation split —
  :func:`tuning_effort`, :func:`effort_problems` — paired seeds, :func:`judge`), returning an
  :class:`ExperimentResult` (saved as JSON);
* :func:`load_reference` — the reference runs shipped with the package (:data:`REFERENCES`, 10 paired seeds
  each, and a second seed set for one claim), to show beside a live run; :func:`regenerate_reference`;
* :mod:`~dro_lab.experiments.verdict` — :func:`judge`, the one rule that says whether a claim held
  (:func:`judge_seeds` when a seed is missing or diverged: it is set aside and named, never dropped silently;
  :func:`judge_band` for a claim stated as a range), :func:`effect_verdict` (the interval against the paper's
  effect) and :func:`holm` (the family-wise correction over a paper's claims);
* :mod:`~dro_lab.experiments.tuning` — :func:`tune`, Bayesian optimisation with optuna, and
  :func:`expected_validation_performance` (Dodge et al., 2019).
"""

from __future__ import annotations

from .._moved import moved_attribute
from .papers import EXPERIMENTS
from .protocol import MAX_GRID_RATIO, MIN_COVERAGE, Arm, Claim, Experiment, Splits, effort_problems, tuning_effort
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
from .tuning import GILS_SEARCH_SPACE, best_at_bounds, expected_validation_performance, tune
from .verdict import (
    EFFECT_VERDICTS,
    VERDICTS,
    Verdict,
    combine,
    effect_verdict,
    holm,
    judge,
    judge_band,
    judge_seeds,
    mean_sd_text,
    pair_seeds,
)

__all__ = [
    "EXPERIMENTS",
    "Arm",
    "Claim",
    "Experiment",
    "ExperimentResult",
    "Splits",
    "MIN_COVERAGE",
    "MAX_GRID_RATIO",
    "tuning_effort",
    "effort_problems",
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
    "summarize_runs",
    "GILS_SEARCH_SPACE",
    "best_at_bounds",
    "expected_validation_performance",
    "tune",
    "VERDICTS",
    "EFFECT_VERDICTS",
    "effect_verdict",
    "holm",
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
