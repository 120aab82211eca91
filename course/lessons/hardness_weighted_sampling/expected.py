"""What lesson 02's exercise checks compare a student's answers with, computed here so that the check cells show
no answer."""

from __future__ import annotations

import torch

import dro_lab
from dro_course.lessons.hardness_weighted_sampling.draws import exercise2_tolerance


def exercise_1(history: torch.Tensor, beta: float) -> torch.Tensor:
    """The sampling probabilities softmax(β · history)."""
    return dro_lab.worst_case_weights(history, divergence="kl", beta=beta)


def exercise_2(
    history: torch.Tensor, is_minority: torch.Tensor, beta: float, batch_size: int, batches: int = 2000
) -> tuple[float, float]:
    """The mean number of rare-class draws per batch of ``batch_size`` at β, and the Monte-Carlo tolerance of an
    estimate from ``batches`` batches (a Bernstein interval that fails with probability 1e-6)."""
    mass = float(dro_lab.worst_case_weights(history, divergence="kl", beta=beta)[is_minority].sum())
    return batch_size * mass, exercise2_tolerance(mass, batch_size=batch_size, batches=batches)


def exercise_3(history: torch.Tensor, batch_size: int) -> tuple[int, float]:
    """At β = 100: how many probabilities fall below 1e-6, and the mean wait of the least likely example once the
    sampler keeps a floor ε = 0.1 (one over the draws a batch gives it)."""
    starved = int((dro_lab.worst_case_weights(history, divergence="kl", beta=100.0) < 1e-6).sum())
    floored = dro_lab.HardnessWeightedSampler(
        len(history),
        batch_size,
        beta=100.0,
        prob_floor=0.1,
        warm_start=False,
        history_init=history.float(),
        device="cpu",
    )
    return starved, 1.0 / (batch_size * float(floored.probabilities().min()))
