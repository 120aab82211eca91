"""Lesson 03's panels: the variance of the importance-sampled gradient (uniform mixing α and the weight
exponent), and one arm of the paper's experiment trained live (α and the learning rate)."""

from __future__ import annotations

import math

import ipywidgets as W

from dro_course.lessons.importance_sampling.figures import is_variance_figure
from dro_course.panels.panels import panel
from dro_course.panels.sliders import is_alpha_slider, weight_exponent_slider
from dro_course.panels.training import experiment_training_panel
from dro_lab._validation import check_number
from dro_lab.experiments.papers.importance import IMPORTANCE_EXPERIMENT

__all__ = ["experiment_panel", "is_variance_panel"]

#: The arms the experiment panel offers: u and p^GN under SGD, SGD with momentum and Adam.
PANEL_ARMS = ("SGD u", "SGD p^GN", "SGD M u", "SGD M p^GN", "Adam u", "Adam p^GN")


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


def experiment_panel(dataset: str, preset: str, *, lr: float = 0.01, seed: int = 0, device="auto") -> W.Box:
    """The panel of the lesson's experiment section: one arm of the paper's experiment (:data:`PANEL_ARMS`) trained
    exactly as the experiment trains it, on ``dataset``'s data at ``preset``'s sizes, drawing its full training loss
    and the sampler's variance ratio H(p)/H(u) epoch by epoch.

    Two sliders: **α (uniform mixing)** of the p^GN arms, p = (1 − α)·u + α·p^GN (0.999 is all but p^GN, 0 is
    uniform; the u arms ignore it), and the **learning rate**, starting at ``lr``, from 0.001 to 0.1 (or to ``lr``
    beyond them).

    Raises:
        ValueError: ``lr`` is not positive; ``dataset`` or ``preset`` is not one the experiment runs.
    """
    check_number(lr, "lr", low=0.0, low_open=True)
    config = IMPORTANCE_EXPERIMENT.config(dataset, preset)
    splits = IMPORTANCE_EXPERIMENT.data(dataset, seed, config)
    alpha = W.FloatSlider(value=0.999, min=0.0, max=0.999, step=0.001, description="α (uniform mixing)",
                          readout_format=".3f", style={"description_width": "initial"})  # fmt: skip
    low, high = min(-3.0, math.log10(lr)), max(-1.0, math.log10(lr))
    rate = W.FloatLogSlider(value=lr, base=10, min=low, max=high, description="learning rate", readout_format=".3g")
    return experiment_training_panel(IMPORTANCE_EXPERIMENT, splits, config, methods=list(PANEL_ARMS),
                                     controls={"alpha": alpha, "lr": rate}, metrics=("train_loss", "variance_ratio"),
                                     seed=seed, device=device)  # fmt: skip
