"""What lesson 07's exercise checks compare a student's answers with, computed here so that the check cells show
no answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

import dro_lab
from dro_course.lessons.comparison.study import METHODS, pareto_front
from dro_lab.experiments import judge


def exercise_1(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """The Pareto front (average, worst-group accuracy) of ``points``, sorted."""
    return sorted(pareto_front([{"method": m, "avg_acc": a, "worst_group_acc": w} for m, (a, w) in points.items()]))


def exercise_2(also: np.ndarray, erm: np.ndarray) -> tuple[np.ndarray, list[float], str]:
    """The paired differences of ALSO's and ERM's worst-group accuracies, their 95 % t-interval and its verdict."""
    differences = also - erm
    truth = judge(differences)
    return differences, list(truth.interval), truth.verdict


def exercise_3(run: Mapping[str, Any], keep: float) -> list[tuple[str, str]]:
    """The (method, strategy) rows of a comparison of ERM, CVaR and OHEM keeping the share ``keep``, sorted."""
    rows = [("ERM", "erm"), ("CVaR", METHODS["CVaR"].build(run).name), ("OHEM", dro_lab.OHEMStrategy(keep).name)]
    return sorted(rows)
