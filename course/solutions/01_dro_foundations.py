"""Solutions to the exercises of lesson 01 (the instructor copy is the lesson with
these filled in).

Each ``# %% exercise N`` section replaces the stub of the code cell "# Exercise N";
a ``[markdown]`` section is the written answer placed after the exercise's text.
The code sections run in the lesson's namespace (``torch``, ``math``, ``dro_lab``,
``losses``, ``p``, ``n`` and ``radius`` are defined there).
"""

import math

import torch

import dro_lab

# names the lesson defines (here only so that the file lints)
losses = torch.rand(8, dtype=torch.float64)
p = torch.full((8,), 1 / 8, dtype=torch.float64)
n, radius = 8, 0.1

# %% exercise 1
five = torch.tensor([1.0, 3.0, 2.0, 5.0, 4.0], dtype=torch.float64)
# n·α = 1.5: the cap 1/(nα) = 2/3 goes on the largest loss (5), the remaining 1/3 on the
# next one (4)
q_hand = torch.tensor([0.0, 0.0, 0.0, 2 / 3, 1 / 3], dtype=torch.float64)
cvar_hand = (q_hand * five).sum()  # 2/3·5 + 1/3·4 = 14/3 ≈ 4.667

# %% exercise 2
lo, hi = math.log(1e-6), math.log(1e6)  # KL(q_β ‖ p) grows with β: bisect on log β
for _ in range(100):
    mid = (lo + hi) / 2
    q_mid = dro_lab.worst_case_weights(losses, divergence="kl", beta=math.exp(mid))
    if float(dro_lab.divergence_value(q_mid, p, "kl")) < radius:
        lo = mid  # the ball is not yet reached: β too small
    else:
        hi = mid
beta_of_r = math.exp((lo + hi) / 2)

# %% exercise 3
b5 = 5.0
# the sum is ≥ 1 at the mean, ≤ 1 at the max
lo, hi = float(losses.mean()), float(losses.max())
for _ in range(200):
    lam = (lo + hi) / 2
    if float(torch.clamp(1 + b5 / 2 * (losses - lam), min=0).sum() / n) > 1:
        lo = lam  # weights sum to more than 1: λ too small
    else:
        hi = lam
lam = (lo + hi) / 2
q_fixed = torch.clamp(1 + b5 / 2 * (losses - lam), min=0) / n

# %% exercise 4 [markdown]
# $q^\star_i\propto e^{\beta\ell_i}=e^{3\beta}\,e^{\beta(\ell_i-3)}$: the entries with
# $\ell_i<3$ vanish like $e^{-2\beta}$ and $e^{-3\beta}$, the two tied maxima keep equal
# weight. So $q^\star\to(0,\tfrac12,\tfrac12,0)$ — the prior restricted to the arg-max
# set, renormalised — and $R_\beta=\frac1\beta\log\frac14(e^\beta+2e^{3\beta}+1)$, which
# is $3+\frac1\beta\log\frac{2+e^{-2\beta}+e^{-3\beta}}4\to3$, the max loss, **from
# below**, like $3-\frac{\log 2}{\beta}$. The library returns exactly $(0, 0.5, 0.5, 0)$
# at β = ∞, and at β = 50 the same up to about $10^{-44}$.

# %% exercise 5 [markdown]
# Less changes than one might expect. ERM is now good on both groups (its worst-group
# accuracy is already around 0.9), and the hardest examples are still a mix: roughly
# half of them minority points. The sample-level objectives stay within a degree or two
# of ERM's angle and within about a point of its worst-group accuracy (not resolved even
# with 5 seeds); group KL still turns the boundary to about 0° and gains a few points. A
# cleaner toy does not turn sample-level DRO into a group method: it protects the loss
# of the *worst examples*, and here the minority is a group marked by a spurious
# feature, not by the size of its losses. Its favourable case is a rare *class* that a
# flexible model underfits, so that the rare examples dominate the top losses — Fidon et
# al.'s MNIST set-up, which lesson 02 judges.

# %% exercise 6 [markdown]
# The robust loss is $\beta/(n\rho)$-gradient-Lipschitz (eq. 17): its curvature grows
# with β, so the largest stable step shrinks like 1/β; CVaR is not smooth at all (the
# set of the worst α-fraction jumps from step to step). With the default lr = 0.05 and
# momentum 0.9, ERM and small β converge, while KL at β = 50 and CVaR at α = 0.1
# (sometimes α = 0.2) keep oscillating. With lr = 0.005 and 1500 epochs, KL at β = 50
# settles: its worst-group accuracy climbs back to about its level at β = 2, above ERM,
# with $\|w\|$ close to 0 — the drop at β = 50 was the optimiser's, not the objective's.
# CVaR at α = 0.1 still wobbles (a smaller step does not make a non-smooth objective
# smooth) and stays a lottery over seeds. So an extreme point of a sweep is evidence
# about the objective only when its run has settled: compare objectives at a step size
# each of them can take (lesson 02's protocol tunes the learning rate of every method on
# a validation split for this reason).

# %% exercise 7 [markdown]
# A flipped point sits deep on the wrong side of any good boundary, so it has the
# largest losses of all. KL over examples with large β (or CVaR with small α) puts
# almost all the weight on exactly those points: the model is trained to fit noise, and
# it does so by shrinking $\|w\|$ (or by turning towards the noisy points), which costs
# accuracy in both groups. This is the failure mode Hu et al. (2018) describe, and why
# hardness-weighted methods want clean labels or a cap on the weights. The group-level
# objective averages the losses *within* each group first: 5 % of flips raise the
# majority's average loss a little, but the minority's average loss (the whole group is
# on the wrong side of ERM's boundary) still dominates, so group KL keeps turning the
# boundary towards $x_1=0$.
