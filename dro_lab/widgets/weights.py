"""Lesson 01: the foundations panel (β, r and α moving the worst-case weights)."""

from __future__ import annotations

import ipywidgets as W

from .. import viz
from .panels import panel
from .sliders import beta_slider, cvar_alpha_slider, radius_slider


def weights_panel(losses, *, prior=None, beta: float = 2.0, radius: float = 0.1, alpha: float = 0.2) -> W.Box:
    """The foundations panel: β, r and α sliders moving the KL / χ² / KL-ball / CVaR weights on ``losses``."""

    def fig(beta, radius, alpha):
        weights = viz.weights_for_knobs(losses, beta=beta, radius=radius, alpha=alpha, prior=prior)
        return viz.weights_figure(losses, weights, prior=prior)

    controls = {"beta": beta_slider(beta), "radius": radius_slider(radius), "alpha": cvar_alpha_slider(alpha)}
    return panel(fig, controls, title="Worst-case weights")
