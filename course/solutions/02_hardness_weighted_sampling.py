"""Solutions to the exercises of lesson 02 (the instructor copy is the lesson with these filled in).

Each ``# %% exercise N`` section replaces the stub of the code cell "# Exercise N" and runs in the lesson's
namespace (``history``, ``beta``, ``batch_size``, ``n`` … come from the lesson's cells); a ``[markdown]`` section is
the written answer placed after the exercise's text.
"""

# ruff: noqa: F821 - the solutions run inside the lesson, whose cells define history, beta, batch_size, n, …

import torch

import dro_lab

# %% exercise 1
shifted = torch.exp(beta * (history - history.max()))  # the largest term is exp(0) = 1: nothing overflows
q_mine = shifted / shifted.sum()
# The factor exp(−β·max ℓ̃) multiplies numerator and denominator alike and cancels. Without it, exp(β ℓ̃) overflows
# float64 (beyond about exp(709)) for every loss above 7.09 at β = 100, and inf / inf = NaN:
print(f"without the shift, {int(torch.isinf(torch.exp(100.0 * history)).sum())} entries of exp(100 ℓ̃) are inf")

# %% exercise 2
gen = torch.Generator().manual_seed(seed)
q_panel = dro_lab.worst_case_weights(history, divergence="kl", beta=panel_beta)
idx = torch.multinomial(q_panel, batch_size * 2000, replacement=True, generator=gen)
draws_per_batch = float((labels[idx] == minority_class).sum()) / 2000
print(f"{draws_per_batch:.3f} rare-class images per batch of {batch_size}; uniform: {batch_size * share_min:.3f}")

# %% exercise 3
q100 = dro_lab.worst_case_weights(history, divergence="kl", beta=100.0)
starved = int((q100 < 1e-6).sum())
refresh = n / (batch_size * 0.1)
print(f"(a) {starved} of {n} examples have q_i < 1e-6 at β = 100: expected ages above {1 / (batch_size * 1e-6):.0f}")
print(f"(b) with ε = 0.1 an entry waits at most {refresh:.1f} iterations on average (n = {n}, b = {batch_size})")
# With the floor, α = min_i q_i ≥ ε/n, so (1 − α)^{kb} ≤ exp(−k b ε / n): the bound is no longer vacuous. The cost:
# the sampler now draws from a mixture of the DRO distribution and the uniform one, so its plain-mean gradient
# estimates the gradient of a mixture of the robust loss and the ERM loss, no longer exactly Lemma 3.2's.

# %% exercise 4 [markdown]
# $\mathrm{softmax}(\beta\cdot c\,\ell)=\mathrm{softmax}((\beta c)\,\ell)$: scaling the loss by $c$ is the same as using
# $\beta c$. So β = 1 on the new loss equals β = 10 on the old one. β is an inverse temperature *in loss units*: a loss
# summed over pixels (segmentation) or label smoothing changes the effective β, and a β tuned on one data set (MNIST's
# losses) need not suit another (Fashion-MNIST's larger losses). Always report the loss with β.

# %% exercise 5 [markdown]
# $\mathbb E\big[\frac1b\sum_j\frac{1}{n\bar p_{i_j}}\nabla\ell_{i_j}\big]=\sum_k\bar p_k\frac1{n\bar p_k}\nabla\ell_k
# =\frac1n\sum_k\nabla\ell_k$, the ERM gradient. Check: draw `idx = torch.multinomial(q_sub, b * M, replacement=True)`,
# form `counts = torch.bincount(idx, minlength=96).double()` and compare `(counts / (b * M * 96 * q_sub)) @ G` with
# `G.mean(0)`: the error falls like $1/\sqrt M$, towards the ERM gradient. That is importance sampling for ERM
# (lesson 03), not DRO.

# %% exercise 6 [markdown]
# Two candidate reasons, both visible in the reference's table and in §4:
#
# 1. **β = 10 is too hot for these losses.** β acts in loss units; at β = 10 the draws concentrate on a few of the
#    very hardest images (the effective sample size collapses in §4), which may be ambiguous or mislabelled images of
#    other classes rather than the rare class. The rare class then gets *fewer* gradient steps than under a moderate β,
#    and the network fits a few outliers: overall accuracy drops too (about 69 % against ERM's 85 % in the table), and
#    β = 100 is worse still, while β = 1 is level with ERM.
# 2. **Instability and too few epochs.** The early dip held: the β = 10 runs are unstable early, and with 15 epochs
#    (the paper trains far longer) they may not have recovered; the admissible learning rate shrinks with β
#    (Lemma 3.1), and one shared learning-rate grid may be too coarse for β = 10.
#
# To tell them apart: train β = 10 longer (e.g. `-p epochs 60`) with a finer, smaller learning-rate grid; if it catches
# up with ERM, reason 2 dominates; if it stays low while the rare class's share of the draws (§4 on the trained
# history) stays small, reason 1 does. A β sweep (`--sweep betas=[1.0],[3.0],[10.0]`) shows where the harm starts.

# %% exercise 7 [markdown]
# The chosen settings are in `result.chosen` and every trial's validation score in `result.trials`. In the reference
# run (`load_reference("hws").result().chosen`) tuning picked the learning rate 0.1 for ERM and OHEM, 0.02 for β = 10
# and 0.05 for the other HWS arms: the admissible step shrinks with β (Lemma 3.1, Theorem B.2), and β = 10 wanted a
# smaller one than ERM. Untuned, at 0.05, ERM and OHEM train more slowly than at their best rate and β = 10 less
# stably, so the verdict can move either way: that is the point. A comparison in which the learning rate was chosen
# for one method and reused for the other measures the mismatch of the rate, not the method. A fair comparison gives
# every method the same tuning budget on a validation split (what `run_experiment` does) and never tunes on the test
# set.
