"""Solutions to the exercises of lesson 00 (the instructor copy is the lesson with
these filled in).

Each ``# %% exercise N`` section replaces the stub of the code cell "# Exercise N";
a ``[markdown]`` section is the written answer placed after the exercise's text.
"""

import math

import torch

# %% exercise 1
two = torch.tensor([0.0, 1.0], dtype=torch.float64)
b = math.log(3)
q = torch.exp(b * two) / torch.exp(b * two).sum()  # (1, 3) / 4
# log 2 / log 3 ≈ 0.631: between the mean 0.5 and the max 1
R = torch.log(torch.exp(b * two).mean()) / b

# %% exercise 2 [markdown]
# A shift changes nothing: $e^{\beta(\ell_i+c)}=e^{\beta c}e^{\beta\ell_i}$ and the
# common factor cancels in the normalisation, while $R_\beta$ shifts by $c$. A scaling
# is a change of β: $e^{\beta c\ell_i}$ are the weights at $\beta c$. So **β is not
# scale-invariant**: a loss summed over pixels instead of averaged, or label smoothing,
# changes the effective β (lesson 02 tunes β per data set for this reason).

# %% exercise 3 [markdown]
# The rows for β/10, β and 10β (now 1, 10 and 100): at β = 10 the hardest example
# already weighs ≈ 1 and $R_\beta\approx 2.29$, close to the max 2.5. The β = 0 row (the
# mean) and the β = ∞ row (the max) do not depend on the parameter.

# %% exercise 4 [markdown]
# The CVaR level (lesson 01), the label-smoothing factor (GI-LS, lesson 06), the mixing
# weight with the uniform distribution (importance sampling, lesson 03) or ALSO's
# optimism coefficient (lesson 04). Widgets always name theirs, e.g. "α (CVaR level)",
# and section 5's table is the map.
