"""What lesson 06's exercise checks compare a student's answers with, computed here so that the check cells show
no answer."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dro_course.lessons.label_smoothing_dro.ls_dro import robust_surrogate
from dro_lab.losses import smoothed_targets, torch_label_smoothing

#: Exercise 1's logits and labels, as its cell gives them: the check recomputes from its own copy, so that an
#: answer computed on edited inputs does not pass.
EXERCISE_1_LOGITS = ((2.0, 0.5, -1.0, 0.0, 1.0), (0.1, 0.2, 0.3, 3.0, -2.0), (1.0, 1.0, 1.0, 1.0, 1.5))
EXERCISE_1_LABELS = (0, 3, 4)


def exercise_1(
    logits: torch.Tensor | None = None, labels: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The smoothed targets (α = 0.2, 5 classes) of ``labels`` and the label-smoothed cross-entropy of ``logits``;
    by default exercise 1's own inputs."""
    logits = torch.tensor(EXERCISE_1_LOGITS) if logits is None else logits
    labels = torch.tensor(EXERCISE_1_LABELS) if labels is None else labels
    return (
        smoothed_targets(labels, 5, 0.2),
        F.cross_entropy(logits, labels, label_smoothing=torch_label_smoothing(0.2, 5)),
    )


def exercise_2(z: torch.Tensor, y: torch.Tensor, w: torch.Tensor, alpha: float, threshold: float) -> torch.Tensor:
    """The exact robust surrogate φ_γ of the first anchor at γ = 1000 × the concavity threshold."""
    return robust_surrogate(z[:1], y[:1], w, alpha=alpha, gamma=1000 * threshold)[0][0]
