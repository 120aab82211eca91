"""What lesson 05's exercise checks compare a student's answers with, computed here so that the check cells show
no answer."""

from __future__ import annotations

import torch

import dro_lab
from dro_lab.reweighting import done_weights


def exercise_1(losses: torch.Tensor) -> torch.Tensor:
    """DONE's weights softmax(ℓ / r) of the first eight losses at r = 0.5."""
    return done_weights(losses[:8], r=0.5)[0]


def exercise_2(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float) -> torch.Tensor:
    """One PGD step of size ε/4 from the first eight images, without a random start."""
    return dro_lab.pgd_attack(model, x[:8], y[:8], eps=eps, alpha=eps / 4, steps=1, random_start=False)


def exercise_3(losses: torch.Tensor, log_u: torch.Tensor) -> torch.Tensor:
    """CID's weights of the first 64 losses at r = 0.5 with the running estimate u = exp(log_u) and η = 0.5."""
    return done_weights(losses[:64], r=0.5, log_u=log_u, eta=0.5)[0]
