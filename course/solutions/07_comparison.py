"""Solutions to the exercises of lesson 07 (the instructor copy is the lesson with
these filled in).

Each ``# %% exercise N`` section replaces the stub of the code cell "# Exercise N";
a ``[markdown]`` section is the written answer placed after the exercise's text.
The names the code uses (``np``, ``stats``, ``dro_lab``, ``MethodSpec``,
``run_comparison``, ``RUN``, ``seed``, ``panel_epochs``, ``cvar_alpha``, ``preset``)
come from the lesson's set-up cell; the imports below are for reading this file on
its own.
"""

import numpy as np
from IPython.display import Markdown, display
from scipy import stats

from dro_course.lessons.comparison import ComparisonReport, MethodSpec, run_comparison

# Stand-ins for the lesson's set-up values, so that this file reads (and lints) on its
# own; the instructor copy runs each section in the lesson, with the lesson's own
# values.
RUN: dict = {}
seed, panel_epochs, cvar_alpha, preset = 0, 10, 0.2, "smoke"

# %% exercise 1
points = {"A": (0.91, 0.62), "B": (0.88, 0.74), "C": (0.85, 0.74),
          "D": (0.93, 0.55), "E": (0.88, 0.70), "F": (0.80, 0.78)}  # fmt: skip
front_by_hand = []
for m, (a, w) in points.items():
    others = [(a2, w2) for m2, (a2, w2) in points.items() if m2 != m]
    if not any(a2 >= a and w2 >= w and (a2 > a or w2 > w) for a2, w2 in others):
        front_by_hand.append(m)
# D, A, B, F: C is dominated by B (same worst group, better average), E by B (same
# average, better worst group).
print(front_by_hand)

# %% exercise 2
erm_wg = np.array([0.600, 0.651, 0.628, 0.577, 0.640, 0.612])
also_wg = np.array([0.621, 0.648, 0.660, 0.590, 0.668, 0.615])
d = also_wg - erm_wg
n = d.size
half = stats.t.ppf(0.975, n - 1) * np.std(d, ddof=1) / np.sqrt(n)
interval = (d.mean() - half, d.mean() + half)
low, high = interval
verdict = "held" if low > 0 else "did not hold" if high < 0 else "not resolved"
print(f"mean {d.mean():+.4f}, 95 % interval {low:+.4f} to {high:+.4f}: {verdict}")
# With the first two seeds only: t_{0.975, 1} = 12.7, so the interval is the mean ± 12.7
# standard errors. Unless the two differences are almost equal it contains 0; and the
# course's rule asks for at least 3 seeds anyway, so the claim is "not judged" whatever
# the two numbers: two seeds cannot tell a gain from seed noise.
print("first two seeds:", stats.t.ppf(0.975, 1), "standard errors on each side")

# %% exercise 3
ohem = MethodSpec(
    "OHEM",
    "keep",
    "online hard example mining: only the hardest `keep` share of a batch counts",
    "OHEMStrategy",
    lambda knobs: {"keep": cvar_alpha},
    family="hard examples",
)
ohem_rows = run_comparison(
    ["ERM", "CVaR", ohem],
    seeds=[seed],
    epochs=panel_epochs,
    progress=False,
    **RUN,
)
display(Markdown(ComparisonReport(ohem_rows, preset=preset).table()))
# OHEM lands on or next to CVaR: CVaR at level α is the mean of the worst α-fraction of
# each batch's losses, and OHEM with keep = α back-propagates exactly the top ⌈α·b⌉
# losses of the batch: the same objective whenever α·b is a whole number (they differ
# only in how a fractional last example is weighted). Both are the β → ∞ end of
# batch-level hardness weighting with a hard cut (Fidon et al., §3.4: hard example
# mining as DRO), and both chase the hardest examples, which are not necessarily the
# minority group's.

# %% exercise 4 [markdown]
# ERM now sees three times as many minority images, so its worst-group accuracy rises
# and the room for improvement shrinks: the gains of the methods told the groups fall
# with the imbalance (with `keep_fraction = 1` the classes are almost balanced, the
# static weights almost uniform, and Static weights and Upsampling are almost ERM). The
# methods that find the hard examples through the loss change less, because their
# weights never depended on the group sizes in the first place. In the table, the
# "worst-group change" column shrinks and more verdicts become "not resolved".

# %% exercise 5 [markdown]
# KL-DRO and HWS tilt toward the hardest *examples* ($q\propto e^{\beta\ell}$): at large
# β the weight sits on a handful of ambiguous or badly written digits, which are not
# necessarily minority ones, so the worst-group accuracy stops improving and the average
# falls. ALSO tilts toward the hardest *group* (τ = 1/β): a larger β lets π move further
# from its class-balanced prior toward the minority group, which is what the worst-group
# metric rewards — until π collapses onto one group and the majority suffers. The knob
# has the same name and the same formula, but acts on a different set. With one seed per
# click, read the direction of each move, not its size.

# %% exercise 6 [markdown]
# With `is_refresh_every = 1` (the paper's set-up) the sampler recomputes **all N
# per-sample gradient norms** before every draw: O(N) work per step instead of O(b).
# With `None` each batch only updates its own scores after the step (a stale table): the
# cost per epoch falls toward ERM's plus one per-sample-norm pass per batch, and the
# scores lag behind the model — compare the two rows' accuracies to see whether the
# staleness cost anything here (lesson 03). AT and DONE pay `attack_steps` extra
# forward–backward passes per step (the PGD steps K), and GI-LS pays T ascent steps plus
# a second SGD step per batch: these are the other large ratios in the cost column.

# %% exercise 7 [markdown]
# With one group per class the worst group is the worst *class*: the minimum of ten
# accuracies measured on 43 test images each, so one image moves it by 2.3 points, and
# the minimum of ten noisy numbers is biased low and noisier than a two-group accuracy
# on 215 images — wider error bars. Online group DRO and ALSO now weight ten groups (the
# five minority classes get most of the weight); Static weights and Upsampling do not
# change at all, since they always used the classes; the methods that are not told the
# groups train exactly as before (only the metric changed).
