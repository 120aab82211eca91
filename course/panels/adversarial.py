"""Lesson 05, DONE: the instance weights ω = softmax(ℓ/r) per class as r moves, and PGD on a 2-D toy.

r is DONE's KL temperature (small r = hard examples, r → ∞ = plain adversarial training), α the attack step and
ε the attack radius.
"""

from __future__ import annotations

import ipywidgets as W
import torch

from dro_course import figures
from dro_course.panels.panels import live_panel
from dro_course.panels.sliders import attack_alpha_slider, attack_eps_slider, done_r_slider
from dro_lab._validation import check_int
from dro_lab.attacks import pgd_attack
from dro_lab.metrics import (
    model_on_grid,
    predict,  # not a top-level name
)
from dro_lab.reweighting import done_weights


def done_r_panel(losses, labels, *, r: float = 1.0, class_names=None) -> W.Box:
    r"""DONE's weights ω = softmax(ℓ/r) on one batch of losses, per class, as r moves (log slider ≈ 0.05 … 100).

    ω comes from :func:`dro_lab.adversarial_training.done_weights` (η = 1: exact batch softmax) and is
    drawn by :func:`dro_course.figures.done_weight_figure`; the read-out gives the effective sample size
    :math:`1/\sum\omega_i^2` against |B| and the largest :math:`\omega_i|\mathcal B|`. The static twin holds
    r at 0.1, 1, 10, 100 and its start: five softmaxes, instant.
    """
    ell = torch.as_tensor(losses, dtype=torch.float64).reshape(-1)

    def build(r):
        w = done_weights(ell, r=r)[0].numpy()
        s = figures.done_weight_stats(w)
        fig = figures.done_weight_figure(
            w, labels, class_names=class_names, title=f"DONE weights at r = {r:.3g} (|B| = {s['batch']})"
        )
        return fig, (f"ESS = 1/Σω² = {s['ess']:.1f} of |B| = {s['batch']}; max ω·|B| = {s['max_scaled']:.3g}")

    return live_panel(build, {"r": done_r_slider(r)}, title="DONE instance weights ω = softmax(ℓ/r)")


def attack_toy_panel(
    model, x, y, *, eps: float = 0.3, alpha: float = 0.05, steps: int = 10, grid: int = 60, norm: str = "linf"
) -> W.Box:
    """PGD on a 2-D two-class toy, live: sliders "ε (attack radius)" ∈ [0, 1], "α (attack step)" ∈ [0.005, 0.5].

    The model's P(class 1) (softmax column 1) on a ``grid × grid`` mesh over the points' box padded by the
    largest ε is computed once; each move reruns :func:`dro_lab.adversarial.pgd_attack` (``steps`` steps,
    no clamp, a generator seeded 0) on the ≤ 200 points and redraws :func:`dro_course.figures.attack_toy_figure`.
    The read-out gives the robust accuracy at ε and the clean accuracy. The static twin holds ε ∈ {0, 0.1, 0.2,
    0.3, 0.5, 1} and α ∈ {0.01, 0.05, 0.1, 0.2, 0.5} (with the starting values), one at a time: about ten
    PGD runs on the toy, a fraction of a second; the mesh, the same in every frame, is sent once when the twin
    would pass its size budget.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    check_int(grid, "grid (the mesh size)", low=2)
    x = torch.as_tensor(x, dtype=torch.float32)
    y = torch.as_tensor(y, dtype=torch.long)
    eps_w, alpha_w = attack_eps_slider(eps), attack_alpha_slider(alpha)
    pad = eps_w.max + 0.25
    gx, gy, prob = model_on_grid(model, x, resolution=grid, pad=pad)
    with torch.no_grad():
        clean = float((predict(model, x).argmax(1).cpu() == y).double().mean())

    def build(eps, alpha):
        x_adv = pgd_attack(
            model,
            x,
            y,
            eps=eps,
            alpha=alpha,
            steps=steps,
            norm=norm,
            clamp=None,
            generator=torch.Generator().manual_seed(0),
        )
        with torch.no_grad():
            robust = float((predict(model, x_adv).argmax(1).cpu() == y).double().mean())
        fig = figures.attack_toy_figure(
            gx,
            gy,
            prob,
            x,
            y,
            x_adv.detach().cpu(),
            eps=eps,
            norm=norm,
            title=f"PGD-{steps} ({norm}), ε = {eps:.2f}, α = {alpha:.3f}",
        )
        return fig, f"robust accuracy at ε = {eps:.2f}: {robust:.3f} (clean {clean:.3f})"

    twin = {"eps": [0.0, 0.1, 0.2, 0.3, 0.5, 1.0], "alpha": [0.01, 0.05, 0.1, 0.2, 0.5]}
    return live_panel(build, {"eps": eps_w, "alpha": alpha_w}, title="PGD attack on a 2-D toy", twin=twin)
