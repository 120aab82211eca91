"""What lesson 03's exercise checks compare a student's answers with, computed here so that the check cells show
no answer."""

from __future__ import annotations

import numpy as np
import torch

import dro_lab
from dro_course import figures
from dro_course.lessons.importance_sampling import is_variance


def exercise_1() -> tuple[np.ndarray, float, float]:
    """For the gradients (0.5, −1, 2, 4): the optimal sampling, and the estimator's variance under it and under u."""
    grads = torch.tensor([0.5, -1.0, 2.0, 4.0], dtype=torch.float64)
    p, gram = is_variance.optimal_sampling(grads.abs()), torch.outer(grads, grads)
    return (
        p,
        figures.is_estimator_stats(gram, p)["variance"],
        figures.is_estimator_stats(gram, np.full(4, 0.25))["variance"],
    )


def exercise_2() -> tuple[float, float, float]:
    """For p = (0.001, 0.2, 0.2, 0.599) and gradient norms (1, 1, 1, 4): TV(p, p^GN), TV(u, p^GN), H(p) / H(u)."""
    quality = dro_lab.sampling_quality([0.001, 0.2, 0.2, 0.599], [1.0, 1.0, 1.0, 4.0])
    return quality.tv_p, quality.tv_u, quality.h_p / quality.h_u
