"""What lesson 04's exercise checks compare a student's answers with, computed here so that the check cells show
no answer."""

from __future__ import annotations

from collections.abc import Sequence

import torch

import dro_lab


def exercise_1() -> torch.Tensor:
    """One KL-prox step of π from uniform on four groups (η = 0.5, τ = 0.3, prior (0.4, 0.3, 0.2, 0.1))."""
    f64 = torch.float64
    return dro_lab.kl_prox_step(
        torch.log(torch.full((4,), 0.25, dtype=f64)),
        torch.tensor([0.2, 0.9, 0.4, 1.3], dtype=f64),
        lr=0.5,
        tau=0.3,
        log_prior=torch.log(torch.tensor([0.4, 0.3, 0.2, 0.1], dtype=f64)),
    ).exp()


def exercise_2(worker_sizes: Sequence[float], tau: float) -> torch.Tensor:
    """π* of ALSO's min-max for workers of these sizes when each has mean loss 0.5 (uniform prior)."""
    sizes = torch.tensor(worker_sizes, dtype=torch.float64)
    losses = len(sizes) * sizes / sizes.sum() * 0.5  # the c/n scaling: a group's loss counts with its size
    return dro_lab.worst_case_weights(losses, divergence="kl", beta=1 / tau)
