"""Solutions to the exercises of lesson 04 (the instructor copy is the lesson with these
filled in).

Each ``# %% exercise N`` section replaces the stub of the code cell "# Exercise N"; a
``[markdown]`` section is the written answer placed after the exercise's text. The code
runs in the lesson's namespace (``torch``, ``a4``, ``seeds``, ``group_tau`` …).
"""

import torch

a4 = seeds = group_tau = None  # defined by the lesson before these cells run

# %% exercise 1
pi_now = torch.tensor([0.25, 0.25, 0.25, 0.25], dtype=torch.float64)
prior_now = torch.tensor([0.4, 0.3, 0.2, 0.1], dtype=torch.float64)
g_now = torch.tensor([0.2, 0.9, 0.4, 1.3], dtype=torch.float64)
eta, tau_ = 0.5, 0.3
logits = torch.log(pi_now) + eta * tau_ * torch.log(prior_now) + eta * g_now
logits = logits / (1 + eta * tau_)
pi_next = torch.softmax(logits, 0)  # ≈ (0.215, 0.281, 0.214, 0.290)
# Groups 3 (loss 1.3) and 1 (0.9) gain weight, group 3 the most. Group 0 has the
# smallest loss, so the loss alone would drop it to ≈ 0.190 (the step without the
# prior's pull); its large prior weight 0.4 and the pull η τ log π̂ / (1 + η τ) towards
# the prior keep it at ≈ 0.215, just above group 2 (loss 0.4, prior 0.2).

# %% exercise 2
sizes = torch.tensor(a4.data[str(seeds[0])]["worker_sizes"], dtype=torch.float64)
group_losses = len(sizes) * sizes / sizes.sum() * 0.5  # L_j = c n_j / n × mean loss 0.5
pi_workers = torch.softmax(group_losses / group_tau, 0)  # π* ∝ exp(L_j / τ)

# %% exercise 3 [markdown]
# The **largest** worker: with equal mean losses $L_j\propto n_j$, so
# $\pi^\star_j\propto e^{c\,n_j\bar f/(n\tau)}$ grows with the worker's size, not with
# how badly it is served. A prior $\hat\pi_j\propto e^{-c\,n_j\bar f/(n\tau)}$ cancels
# that — but only at this one loss level $\bar f$: as training lowers the losses the
# correction is wrong again. Dividing each group's loss by $c\,n_j/n$ makes $L_j$ the
# group's **mean** loss (Sagawa et al.'s group DRO), which removes the size at every
# loss level; it is beyond the paper, whose weights are on group *totals* by
# construction of its min–max problem.

# %% exercise 4 [markdown]
# Only the products $\eta_\pi s$ and $\eta_\pi\tau$ enter π's step, so the code's
# $(\eta_\pi,\tau)$ at $s=1$ is our $(\eta_\pi M/c,\ \tau\,c/M)$. With $c=n=6\,600$ and
# $M=64$, $c/M\approx103$: the code's defaults $(10^{-3},10^{-2})$ are our
# $(\approx9.7\cdot10^{-6},\ \approx1.03)$: τ is the grid's τ = 1, but η_π lies ten
# times below the grid's smallest, $10^{-4}$ — at the code's default π would hardly
# leave its prior in a run this short, and ALSO would behave as Static Weights (the
# experiment's grid is η_π ∈ {10⁻⁴, 10⁻³}). θ's update is almost unchanged because Adam
# is invariant to a constant rescaling of the loss, up to its ε (the paper's code sets ε
# = 1e-20 for this reason); the coupled weight decay is not: at $s=1$ the loss is $c/M$
# times smaller, so the L2 term weighs about 100 times more against it.

# %% exercise 5 [markdown]
# On the strongly monotone logistic-DRO problem the limit is the step size against the
# smoothness, not rotation: at γ = 0.5 **α = 1 goes unstable first** (its distance grows
# from ≈ 2 to ≈ 13 in 150 steps; its effective step on a smooth gradient is up to
# $(1+2\alpha)\gamma$) while α = 0 and 0.5 still converge (to ≈ 0.09); at γ = 1 all
# three diverge. No contradiction with section 3.2: there the problem is a pure
# rotation, where α = 0 diverges for *every* γ. In the bilinear panel at γ = 0.5, α = 0
# and α = 0.5 spiral out, α = 1 contracts fast (spectral radius ≈ 0.71,
# `optimism_spectral_radius(lr=0.5, alpha=1.0)`), and α = 1.5 or 2 over-correct and
# spiral out again (≈ 1.09, 1.38); from γ ≈ 0.6 even α = 1 diverges. Optimism cures
# rotation within a window of step sizes; it is not a free speed-up.

# %% exercise 6 [markdown]
# With η_π = 0 the weights never leave the class-balanced prior (KL = 0 on every seed),
# and α = 0 removes the optimism: ALSO **is Static Weights** (per-example weights ∝
# 1/N_y, plain Adam), at another learning rate. Its "held" verdicts against the ERMs and
# the loss-tilting methods would then say that class-balanced re-weighting beats ERM on
# the rarest class — nothing about the moving weights or the optimism. That is why the
# experiment now fixes α = 1 (the paper's) and tunes η_π > 0 only, with Static Weights
# as its own arm: "ALSO beats Static Weights on worst-class accuracy" is the claim that
# isolates the min–max. Read its bullet at uc = 10, at uc = 100 and in the second seed
# set — the Holm-adjusted word — beside the KL(π‖π̂) printed under the bullets: a π that
# moved with a "not resolved" verdict means these seeds cannot tell the moving weights
# from the prior; only a "held" in both seed sets is the evidence the paper's claim
# would need, and a "did not hold" says the moving weights cost worst-class accuracy. To
# settle a "not resolved": more paired seeds (the interval narrows like 1/√n), several
# ratios, the same tuning effort for both arms, and that one claim named in advance, so
# that Holm's family stays small.
