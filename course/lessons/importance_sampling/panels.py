"""Lesson 03: the importance-sampling panel (uniform mixing α and the weight exponent)."""

from __future__ import annotations

import ipywidgets as W

from dro_course.lessons.importance_sampling.figures import is_variance_figure
from dro_course.panels.panels import panel
from dro_course.panels.sliders import is_alpha_slider, weight_exponent_slider

__all__ = ["is_variance_panel"]


def is_variance_panel(gram, *, alpha: float = 0.5, weight_exponent: float = 1.0, batch_size: int = 1) -> W.Box:
    """The lesson-03 panel: α (uniform mixing) and the weight exponent move
    :func:`dro_course.figures.is_variance_figure`.

    ``gram`` is the Gram matrix of the per-sample gradients (N × N); everything is exact and cheap,
    so the figure redraws live. The static twin holds α and the weight exponent at 0, ¼, ½, ¾, 1 (and their
    starting values), one at a time: nine figures, under a second.
    """

    def fig(alpha, weight_exponent):
        return is_variance_figure(gram, alpha=alpha, weight_exponent=weight_exponent, batch_size=batch_size)

    controls = {"alpha": is_alpha_slider(alpha), "weight_exponent": weight_exponent_slider(weight_exponent)}
    box = panel(fig, controls, title="Importance-sampled gradient: error and ρ")
    note = W.HTML(
        "<small>α = 0 is uniform sampling, α = 1 is p<sup>GN</sup>.<br>"
        "Weight exponent 1 is unbiased; 0 forgets the weights (biased).<br>"
        "Neither is DRO's β or Adam's β.</small>"
    )
    box.children[0].children = box.children[0].children + (note,)
    return box
