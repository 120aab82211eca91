"""The foundations panel: β, r and α moving the worst-case weights."""

from __future__ import annotations

import ipywidgets as W

from dro_course import figures
from dro_course.panels.panels import panel
from dro_course.panels.sliders import beta_slider, cvar_alpha_slider, radius_slider


def weights_panel(losses, *, prior=None, beta: float = 2.0, radius: float = 0.1, alpha: float = 0.2) -> W.Box:
    """The foundations panel: β, r and α sliders moving the KL / χ² / KL-ball / CVaR weights on ``losses``.

    The static twin holds β at every power of ten from 10⁻² to 10³, r from 10⁻³ to 10 and α ∈ {0.05, 0.1, 0.2,
    0.5, 1} (with the starting values), one knob at a time: about 15 figures, under a second.
    """

    def fig(beta, radius, alpha):
        weights = figures.weights_for_knobs(losses, beta=beta, radius=radius, alpha=alpha, prior=prior)
        return figures.weights_figure(losses, weights, prior=prior)

    controls = {"beta": beta_slider(beta), "radius": radius_slider(radius), "alpha": cvar_alpha_slider(alpha)}
    return panel(fig, controls, title="Worst-case weights", twin={"alpha": [0.05, 0.1, 0.2, 0.5, 1.0]})
