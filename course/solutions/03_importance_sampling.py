"""Solutions to the exercises of lesson 03 (the instructor copy is the lesson with these
filled in).

Each ``# %% exercise N`` section replaces the stub of the code cell "# Exercise N"; a
``[markdown]`` section is the written answer placed after the exercise's text.
"""

import torch

# %% exercise 1
grads_1d = torch.tensor([0.5, -1.0, 2.0, 4.0], dtype=torch.float64)  # four ∇ℓ_i
n = len(grads_1d)
p_opt = grads_1d.abs() / grads_1d.abs().sum()  # (0.5, 1, 2, 4) / 7.5
G_opt = grads_1d / (n * p_opt)  # every |G_i| = ḡ = 1.875, with the sign of its gradient
var_opt = (p_opt * G_opt**2).sum() - (p_opt * G_opt).sum() ** 2  # 1.875² − 1.375²
var_u = (grads_1d**2).mean() - grads_1d.mean() ** 2  # 5.3125 − 1.375² = 3.421875
# Not zero: p^GN equalises the norms |G_i| = ḡ, not the gradients; the -1 draws
# G = −1.875 while the mean is 1.375, so Var = ḡ² − (∇L)² > 0. It is zero only when
# every gradient points the same way.

# %% exercise 2
g2 = torch.tensor([1.0, 1.0, 1.0, 4.0], dtype=torch.float64)
p2 = torch.tensor([0.001, 0.2, 0.2, 0.599], dtype=torch.float64)
p_gn2, u2 = g2 / g2.sum(), torch.full((4,), 0.25, dtype=torch.float64)
tv_p = 0.5 * (p2 - p_gn2).abs().sum()  # 0.142
tv_u = 0.5 * (u2 - p_gn2).abs().sum()  # 0.321
h_ratio = (g2**2 / p2).sum() / (g2**2 / u2).sum()  # 1036.7 / 76 = 13.6

# %% exercise 3 [markdown]
# In total variation (and in KL too: 0.158 against 0.213) $p$ is *closer* to $p^{GN}$
# than $u$ is, yet its variance term is 13.6 times uniform's: $p$ is much *slower* than
# $u$ (ρ ≈ −35.6 from `dro_lab.sampling_quality`). The tiny $p_1=0.001$ on an example
# with a sizeable gradient blows up $g_1^2/p_1$, a term TV weighs by $|p_1-p^{GN}_1|$
# only. What measures the speed is the χ² divergence in the right order:
# $H(p)=(\sum_ig_i)^2\sum_i(p^{GN}_i)^2/p_i$, so
# $H(p)-H(p^{GN})=(\sum_ig_i)^2\,\chi^2(p^{GN}\|p)$, and ρ
# $=1-\chi^2(p^{GN}\|p)/\chi^2(p^{GN}\|u)$ is exactly the fraction of the best possible
# gain that $p$ achieves.

# %% exercise 4 [markdown]
# $H(p^{(\alpha)})=\sum_ig_i^2/((1-\alpha)u_i+\alpha p^{GN}_i)$ is convex in α (a sum of
# $1/(\text{affine})$ on the set where $p>0$) with its minimum at α = 1 (the optimum
# $p^{GN}$), so beyond 1 it rises again and eventually exceeds $H(u)$: "sharpening"
# $p^{GN}$ breaks the guarantee. For $g=(1,1,1,4)$, $p_i=(1-\alpha)/4+\alpha g_i/7$
# stays positive while $\alpha<7/3$; at α = 2, $p=(1/28,1/28,1/28,25/28)$ and
# $H(p)/H(u)=(84+17.9)/76\approx1.34$: a third *worse* than uniform.

# %% exercise 5 [markdown]
# The chosen rates are in the reference's tuning table (`tuning_markdown(reference)`)
# and every trial's validation loss in `reference.trials`; yours in `result.chosen`.
# What theory predicts: the descent term of $S$ grows like η and the variance term like
# η², so a larger rate makes the variance matter more, and $p^{GN}$ (smaller variance)
# can keep a larger rate before the loss spikes. So look at the largest rates, 0.03 and
# 0.1: if uniform SGD's validation loss rises there while $p^{GN}$'s does not,
# importance sampling buys stability at large steps; if both choose the same rate at
# nearly the same validation loss, the variance gain is small on 100 easy images (the
# variance ratio of section 5.2 starts near 1 and falls as examples are fitted). Either
# way the comparison is fair only because both arms tried every rate: had $p^{GN}$ tried
# 0.1 and $u$ not, a gap at the chosen rates could be the tuning's. The protocol part,
# at the paper's fixed 0.01 for both, is the comparison with no tuning in it at all.

# %% exercise 6 [markdown]
# With the *same* weight at every step, yes, exactly (up to ε): Adam's $\hat m$ and
# $\sqrt{\hat v}$ are both scaled by $w$, so its steps are invariant to a constant
# rescaling of all gradients. Under importance sampling each step draws examples with
# their own weights $w_i=1/(Np_i)$: $\sqrt{\hat v}$ mixes the squared magnitudes of
# past, differently weighted gradients, so the weights neither cancel nor act as in SGD
# — they do matter, but not in the way SGD's theory (and its optimal $p^{GN}$) assumes.
# This is why the paper finds no guarantee for Adam and RMSProp.
