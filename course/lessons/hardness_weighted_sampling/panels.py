"""Lesson 02: the hardness-weighted-sampling panel."""

from __future__ import annotations

import ipywidgets as W

from dro_course.lessons.hardness_weighted_sampling.figures import hws_sampling_figure
from dro_course.panels.panels import panel
from dro_course.panels.sliders import beta_slider, divergence_toggle

__all__ = ["hws_panel"]


def hws_panel(
    losses,
    labels,
    *,
    minority: int | None = None,
    batch_size: int | None = None,
    beta: float = 10.0,
    divergence: str = "kl",
    min_exp: float = -2,
    max_exp: float = 3,
) -> W.Box:
    """The hardness-weighted-sampling panel (lesson 02): β (log slider) and KL/χ² move ``q`` over a loss history.

    Redraws :func:`dro_course.figures.hws_sampling_figure` (q against the loss by class, the q-mass of
    each class against its uniform share, the ``minority`` class's expected draws per batch of
    ``batch_size``). β runs over ``10^min_exp … 10^max_exp`` (10⁻² … 10³ by default); the left end
    is practically ERM. The note under the controls says that the two divergences' β scales differ. The static
    twin holds β at the slider's powers of ten (and its start) and both divergences, one at a time: eight
    figures, a fraction of a second.
    """

    def fig(beta, divergence):
        return hws_sampling_figure(
            losses, labels, beta=beta, divergence=divergence, minority=minority, batch_size=batch_size
        )

    controls = {
        "beta": beta_slider(beta, min_exp=min_exp, max_exp=max_exp, description="β (inverse temperature)"),
        "divergence": divergence_toggle(divergence),
    }
    box = panel(fig, controls, title="Hardness-weighted sampling over the loss history")
    note = W.HTML(
        "<small>β scales differ: χ² at 2β ≈ KL at β (to first order).<br>β → 0 is uniform sampling (ERM).</small>"
    )
    box.children[0].children = box.children[0].children + (note,)
    return box
