"""What lesson 06's exercise checks compare a student's answers with, computed here so that the check cells show
no answer."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dro_course.lessons.label_smoothing_dro.ls_dro import robust_surrogate
from dro_lab.losses import smoothed_targets, torch_label_smoothing


def exercise_1(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The smoothed targets (α = 0.2, 5 classes) of ``labels`` and the label-smoothed cross-entropy of ``logits``."""
    return (
        smoothed_targets(labels, 5, 0.2),
        F.cross_entropy(logits, labels, label_smoothing=torch_label_smoothing(0.2, 5)),
    )


def exercise_2(z: torch.Tensor, y: torch.Tensor, w: torch.Tensor, alpha: float, threshold: float) -> torch.Tensor:
    """The exact robust surrogate φ_γ of the first anchor at γ = 1000 × the concavity threshold."""
    return robust_surrogate(z[:1], y[:1], w, alpha=alpha, gamma=1000 * threshold)[0][0]
