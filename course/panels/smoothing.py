"""Lesson 06, label-smoothing DRO (GI-LS): the shift field on a 2-D toy, live.

α is the label-smoothing factor (not the CVaR level or an attack step), γ the Wasserstein penalty of the GI-LS
ascent with β = 1/γ, T the number of ascent steps and r the transport radius ρ, realised as
ρ̂ = mean ½‖f(x_T) − f(x)‖².
"""

from __future__ import annotations

import math

import ipywidgets as W
import torch

from dro_course import figures
from dro_course.panels.panels import live_panel
from dro_course.panels.sliders import gils_gamma_slider, gils_steps_slider, ls_alpha_slider, target_radius_slider
from dro_lab._validation import check_int
from dro_lab.attacks import GAMMA_RANGE, gamma_for_radius, gils_shift
from dro_lab.metrics import model_on_grid


def gils_toy_panel(
    model,
    x,
    y,
    *,
    alpha: float = 0.3,
    gamma: float = 1.0,
    eta: float = 0.1,
    steps: int = 10,
    target_radius: float | None = None,
    grid: int = 80,
) -> W.Box:
    r"""The GI-LS shift on a 2-D toy, live (the α flip of Theorem 3.3's gradient θ_f(p − ȳ_α), in the plane):
    ``model`` a small classifier with ``penultimate`` and ``classifier`` (e.g. :class:`dro_lab.models.MLP` on 2
    inputs), ``x`` (n, 2) points in the plane (≤ a few hundred), ``y`` their labels.

    Sliders "α (label smoothing)" ∈ [0, 0.5], "T (ascent steps)" 0…30 and either "γ (transport penalty)"
    (log 10⁻³ … 10³; ``target_radius=None``) or "r (target transport radius)" (log 10⁻³ … 10; with
    ``target_radius`` = its initial value), which sets γ by a log-γ scan and bisection so that the realised
    :math:`\hat\rho` = mean ½‖f(x_T) − f(x)‖² ≈ r (:func:`gamma_for_radius`, ≤ 21 extra ascents, γ kept in the
    stable range; beyond the paper, which fixes γ). Each move reruns :func:`dro_lab.smoothing.gils_shift`
    (``eta``, no clamp) for the chosen α and for α = 0 (ADA/WRM, the reference) and redraws
    :func:`dro_course.figures.shift_field_figure` over the model's predicted class; the read-out gives γ, β = 1/γ and
    ρ̂ and says when the ascent diverged (η·γ too large). T = 0 gives no shift and ρ̂ = 0 (γ then reads "nan"
    in r-mode: any γ fits).

    The static twin holds α ∈ {0, 0.1, 0.3, 0.5}, T ∈ {0, 2, 5, 10, 20} and γ at the powers of ten 10⁻³ … 10³
    (or r ∈ {0.03, 0.1, 0.3, 1}), each with its starting value, one at a time: about a dozen frames, each
    running the shifts again (and, in r-mode, the γ search): about a second for lesson 06's toy.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    check_int(grid, "grid (the mesh size)", low=2)
    x = torch.as_tensor(x, dtype=torch.float32)
    y = torch.as_tensor(y, dtype=torch.long)
    gx, gy, cmap = model_on_grid(model, x, resolution=grid, pad=0.5, output="class")

    def shift(a: float, g: float, t: int):
        x_t, cost = gils_shift(model, x, y, alpha=a, gamma=g, eta=eta, steps=t, clamp=None)
        return x_t.detach().cpu(), float(cost.mean())

    def build(alpha, T, gamma=None, r=None):
        gamma, note = (gamma, "") if r is None else _gamma_for_target(lambda g: shift(alpha, g, T)[1], T, r)
        g = 1.0 if math.isnan(gamma) else gamma
        x_ref, _ = shift(0.0, g, T)
        x_t, rho = shift(alpha, g, T)
        free = shift(alpha, GAMMA_RANGE[0], T)[1] if T > 0 else 0.0  # the (almost) unpenalised ascent
        if not math.isfinite(rho) or not bool(torch.isfinite(x_t).all()) or rho > free * (1 + 1e-6):
            note += "<br><b>the ascent diverged: η·γ too large for this model (lower γ or η)</b>"
        fig = figures.shift_field_figure(
            x,
            {"α = 0 (ADA/WRM)": x_ref, f"α = {alpha:.2f}": x_t},
            y,
            grid=(gx, gy, cmap),
            title=f"GI-LS shift: T = {T}, η = {eta:.3g}, γ = {gamma:.3g}",
        )
        text = f"γ = {gamma:.3g} (β = 1/γ = {1.0 / gamma:.3g}), realised ρ̂ = mean ½‖f(x_T) − f(x)‖² = {rho:.4g}{note}"
        return fig, text

    controls: dict[str, W.Widget] = {"alpha": ls_alpha_slider(alpha), "T": gils_steps_slider(steps)}
    twin = {"alpha": [0.0, 0.1, 0.3, 0.5], "T": [0, 2, 5, 10, 20]}
    if target_radius is None:
        controls["gamma"] = gils_gamma_slider(gamma)
    else:
        controls["r"] = target_radius_slider(target_radius)
        twin["r"] = [0.03, 0.1, 0.3, 1.0]
    return live_panel(build, controls, title="GI-LS: label smoothing rotates the worst-case shift", twin=twin)


def _gamma_for_target(rho_of_gamma, T: int, r: float) -> tuple[float, str]:
    """The γ whose realised ρ̂ (``rho_of_gamma(γ)``) is closest to ``r`` and the read-out's note on how it was set;
    γ is nan for T = 0, where every γ gives ρ̂ = 0."""
    if T == 0:
        return float("nan"), "<br><small>T = 0: no shift, ρ̂ = 0 for every γ</small>"
    gamma, rho_hit = gamma_for_radius(rho_of_gamma, r)
    reach = "; r out of reach in the stable γ range" if abs(rho_hit - r) > 0.05 * r else ""
    return gamma, (
        f"<br><small>γ set by a log-γ scan + bisection so that ρ̂ ≈ r = {r:.3g} "
        f"(beyond the paper, which fixes γ){reach}</small>"
    )
