"""What lesson 01's exercise checks compare a student's answers with, computed here so that the check cells show
no answer."""

from __future__ import annotations

import torch

import dro_lab


def exercise_1() -> tuple[torch.Tensor, torch.Tensor]:
    """CVaR at α = 0.3 of the five losses (1, 3, 2, 5, 4): its weights and its value."""
    losses = torch.tensor([1.0, 3.0, 2.0, 5.0, 4.0], dtype=torch.float64)
    return (
        dro_lab.worst_case_weights(losses, divergence="cvar", alpha=0.3),
        dro_lab.robust_loss(losses, divergence="cvar", alpha=0.3),
    )


def exercise_2(losses: torch.Tensor, radius: float) -> float:
    """The β whose KL worst case has radius ``radius``."""
    return dro_lab.radius_to_beta(losses, radius, divergence="kl")


def exercise_3(losses: torch.Tensor) -> tuple[float, torch.Tensor]:
    """The χ² worst case at β = 5: its multiplier λ (read off an unclipped weight) and its weights."""
    weights = dro_lab.worst_case_weights(losses, divergence="chi2", beta=5.0)
    top = int(weights.argmax())  # an unclipped entry: q_i = (1 + 2.5 (ℓ_i − λ)) / n there
    return float(losses[top] - (len(losses) * weights[top] - 1) / 2.5), weights
