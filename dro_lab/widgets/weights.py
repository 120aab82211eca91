"""Lesson 01: the foundations panel (β, r and α moving the worst-case weights) and the 2-D toy's Run panel."""

from __future__ import annotations

import ipywidgets as W

from .. import viz
from .._validation import check_int, check_number
from ..experiments.toys import run_minority_toy
from .panels import panel, run_panel
from .sliders import beta_slider, cvar_alpha_slider, radius_slider
from .twin import knob, static_twin_of, twin_note

#: The smaller toy of :func:`toy_panel`'s static twin.
TWIN_TOY = {"n_train": 200, "epochs": 60, "resolution": 40}


def weights_panel(losses, *, prior=None, beta: float = 2.0, radius: float = 0.1, alpha: float = 0.2) -> W.Box:
    """The foundations panel: β, r and α sliders moving the KL / χ² / KL-ball / CVaR weights on ``losses``.

    The static twin holds β at every power of ten from 10⁻² to 10³, r from 10⁻³ to 10 and α ∈ {0.05, 0.1, 0.2,
    0.5, 1} (with the starting values), one knob at a time: about 15 figures, under a second.
    """

    def fig(beta, radius, alpha):
        weights = viz.weights_for_knobs(losses, beta=beta, radius=radius, alpha=alpha, prior=prior)
        return viz.weights_figure(losses, weights, prior=prior)

    controls = {"beta": beta_slider(beta), "radius": radius_slider(radius), "alpha": cvar_alpha_slider(alpha)}
    return panel(fig, controls, title="Worst-case weights", twin={"alpha": [0.05, 0.1, 0.2, 0.5, 1.0]})


def toy_panel(*, beta: float = 2.0, radius: float = 0.1, alpha: float = 0.2, seed: int = 0, **toy) -> W.Box:
    """The 2-D minority toy behind a Run button: β, r and α sliders, then every method trained on one seed and
    drawn by :func:`dro_lab.viz.toy_boundaries_figure`.

    ``toy`` goes to :func:`dro_lab.experiments.toys.run_minority_toy` (``n_train``, ``epochs``, ``lr``, ``momentum``,
    ``minority_fraction``, ``noise``, ``device``); no sweep runs here, so a click takes a second or two.

    The static twin (on first display) trains a smaller toy — at most 200 points, 60 epochs, a 40 × 40 mesh —
    at β ∈ {0.5, β, 10} (r and α at their values): three runs of every method, about a second on a CPU.
    """
    allowed = {"n_train", "epochs", "lr", "momentum", "minority_fraction", "noise", "methods", "resolution", "device"}
    unknown = sorted(set(toy) - allowed)
    if unknown:
        raise TypeError(f"toy_panel got unexpected arguments {unknown}; it passes on only {sorted(allowed)}")
    beta = check_number(beta, "beta", low=0, low_open=True)
    radius = check_number(radius, "radius", low=0)
    alpha = check_number(alpha, "alpha", low=0, high=1, low_open=True)
    seed = check_int(seed, "seed", low=0)

    def train(beta, radius, alpha):
        result = run_minority_toy(beta=beta, radius=radius, alpha=alpha, seeds=[seed], **toy)
        return viz.toy_boundaries_figure(result)

    controls = {
        "beta": beta_slider(beta, continuous_update=False),  # β of KL, χ² and group KL
        "radius": radius_slider(max(radius, 1e-3), continuous_update=False),  # r of the KL ball
        "alpha": cvar_alpha_slider(alpha, continuous_update=False),
    }
    title = "Train every method on the 2-D toy (one seed)"
    box = run_panel(train, controls, title=title, twin=False)
    small = {
        **toy,
        "n_train": min(toy.get("n_train") or 400, TWIN_TOY["n_train"]),
        "epochs": min(toy.get("epochs") or 150, TWIN_TOY["epochs"]),
        "resolution": TWIN_TOY["resolution"],
    }

    def small_run(beta):
        result = run_minority_toy(beta=beta, radius=radius, alpha=alpha, seeds=[seed], **small)
        return viz.toy_boundaries_figure(
            result,
            title=f"A smaller toy ({small['n_train']} points, "
            f"{small['epochs']} epochs): β = {beta:.3g}, r = {radius:.3g}, α = {alpha:.3g}",
        )

    knobs = {"beta": knob(controls["beta"], sorted({0.5, beta, 10.0}))}
    note = twin_note(knobs, how="Precomputed on a smaller toy", live="trains the full toy at any β, r and α")
    return box.set_twin(static_twin_of(small_run, knobs), title=title, note=note)
