"""Lesson 02, the draws: §3.8 (the staleness of the loss history, App. D.8, eq. 104) and exercise 2's tolerance."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from dro_course.lessons import CheckResult, chernoff_level, require
from dro_course.lessons.hardness_weighted_sampling._shared import DELTA, check_beta
from dro_course.lessons.hardness_weighted_sampling.diagnostics import HistoryAges, simulate_history_ages
from dro_lab._rounding import U32, U64, gamma
from dro_lab._validation import as_float_vector, check_int, check_number

__all__ = ["check_staleness", "exercise2_tolerance"]


# --------------------------------------------------------------------------- §3.8: staleness, App. D.8


@dataclass(frozen=True)
class StalenessCheck(CheckResult):
    """:func:`check_staleness`' numbers; ``run`` holds the ages and q the figure draws."""

    run: HistoryAges
    beta: float
    alpha: float  #: min q
    snapshots: int
    ages: int  #: the ages k = 1 … ages checked
    closest: tuple | None  #: (k, largest tail of a snapshot, its level a(k), (1 − α)^{kb}); None: vacuous
    delta: float

    def lines(self) -> list[str]:
        ages = self.run.ages.double()
        head = (
            f"β = {self.beta:g}: α = min q = {self.alpha:.2e}; mean age {float(ages.mean()):.1f}, max age "
            f"{int(ages.max())} iterations"
        )
        checked = f"checked in each of {self.snapshots} snapshots for k = 1 … {self.ages}"
        if self.closest is None:
            return [head, f"    P(age ≥ k) ≤ (1 − α)^(kb) {checked}: with α this small the bound is 1 (vacuous)"]
        k, tail, level, bound = self.closest
        return [
            head,
            f"    P(age ≥ k) ≤ (1 − α)^(kb) {checked}: every share of entries that old stays under Chernoff's level "
            f"a(k)",
            f"    (closest at k = {k}: {tail:.4f} ≤ a(k) = {level:.4f}, for (1 − α)^(kb) = {bound:.4f}); this fails "
            f"with probability at most {self.delta:.0e}",
        ]


def check_staleness(
    history, batch_size: int, *, beta: float, epochs: int, seed: int = 0, every: int = 5, delta: float = DELTA
) -> StalenessCheck:
    r"""App. D.8, eq. 104: the ages of the history, :math:`P(t-t_i(t)\ge k)=(1-q_i)^{kb}\le(1-\alpha)^{kb}`.

    ``dro_lab.samplers.simulate_history_ages`` drives the sampler on a fixed loss vector and reads the ages of all n
    entries every ``every`` iterations after a burn-in epoch. Every hardness-weighted batch holds b i.i.d. draws, an
    entry drawn in the current iteration has age 0, and every snapshot follows at least ⌊n/b⌋ + 2 hardness-weighted
    batches, so for k ≤ ⌊n/b⌋ + 2 the event age ≥ k is exactly "not drawn in the last kb draws". In one snapshot the
    indicators of that event are non-increasing functions of disjoint counts of one multinomial draw, hence negatively
    associated (Dubhashi & Ranjan, 1998), so Chernoff's bound holds as for independent ones: the share of entries with
    age ≥ k exceeds a > p_k = (1 − α)^{kb} with probability at most :math:`e^{-n\,\mathrm{kl}(a\|p_k)}`. A union bound
    over the snapshots and ages sets a(k). α is that of the draw itself: torch.multinomial keeps a float32 running sum
    (3·2⁻²⁴ per cell, and the sum's γ(n − 1)), so α is lowered by that much first.
    """
    h = as_float_vector(history, "history")
    beta = check_beta(beta)
    batch_size = check_int(batch_size, "batch_size")
    delta = check_number(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    run = simulate_history_ages(torch.from_numpy(h), batch_size, beta=beta, epochs=epochs, seed=seed, every=every)
    n = h.size
    ages = run.ages.reshape(-1, n).numpy()
    snapshots, checked = ages.shape[0], n // batch_size + 2
    q = run.q.numpy()
    alpha = float(q.min())
    total = math.fsum(q.tolist()) * (1 + U64) * (1 + gamma(n - 1, U32))
    drawn = max(alpha / total - 3.01 * U32 - 2.0**-53, 0.0)
    budget = math.log(snapshots * checked / delta)
    closest, worst = None, -math.inf
    for k in range(1, checked + 1):
        bound = math.exp(k * batch_size * math.log1p(-drawn)) if drawn < 1 else 0.0
        level = chernoff_level(bound, n, budget)
        tails = (ages >= k).mean(axis=1)
        require(
            float(tails.max()) <= level,
            f"eq. (104)'s tail bound (1 − α)^(kb) at β = {beta:g}, age k = {k}",
            f"a snapshot has {tails.max():.4f} of its entries that old, above Chernoff's level {level:.4f} for "
            f"(1 − α)^(kb) = {bound:.4g} (failure probability {delta:g})",
        )
        if level < 1 and float(tails.max()) - level > worst:
            worst, closest = float(tails.max()) - level, (k, float(tails.max()), level, bound)
    return StalenessCheck(run, beta, alpha, snapshots, checked, closest, delta)


# --------------------------------------------------------------------------- exercise 2


def exercise2_tolerance(mass: float, *, batch_size: int, batches: int = 2000, delta: float = DELTA) -> float:
    r"""Exercise 2: the tolerance of the estimate X/M of the expected rare-class draws b·m per batch.

    X, the rare-class draws among N = bM i.i.d. ones, is Binomial(N, m). Bernstein's inequality,
    :math:`P(|X-Nm|\ge t)\le2\exp(-t^2/(2(Nm(1-m)+t/3)))`, equals δ at
    :math:`t=L/3+\sqrt{L^2/9+2Nm(1-m)L}`, :math:`L=\ln(2/\delta)`; the tolerance is t/M.
    """
    mass = check_number(mass, "mass", low=0.0, high=1.0)
    batch_size, batches = check_int(batch_size, "batch_size"), check_int(batches, "batches")
    delta = check_number(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    draws, level = batch_size * batches, math.log(2.0 / delta)
    t = level / 3 + math.sqrt(level**2 / 9 + 2 * draws * mass * (1 - mass) * level)
    return t / batches
