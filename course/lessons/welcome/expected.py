"""What lesson 00's exercise checks compare a student's answers with, computed here so that the check cell shows
no answer."""

from __future__ import annotations

import math

import torch

import dro_lab


def exercise_1() -> tuple[torch.Tensor, torch.Tensor]:
    """The KL worst-case weights and robust loss of the two losses (0, 1) at β = log 3."""
    pair, beta = torch.tensor([0.0, 1.0], dtype=torch.float64), math.log(3)
    return (
        dro_lab.worst_case_weights(pair, divergence="kl", beta=beta),
        dro_lab.robust_loss(pair, divergence="kl", beta=beta),
    )
