"""The minority toy's Run panel: train the toy's methods at the knobs' values and draw their boundaries."""

from __future__ import annotations

import ipywidgets as W

from dro_course.lessons.dro_foundations.figures import toy_boundaries_figure
from dro_course.lessons.dro_foundations.toys import run_minority_toy
from dro_course.panels.panels import run_panel
from dro_course.panels.sliders import beta_slider, cvar_alpha_slider, radius_slider
from dro_course.panels.twin import knob, static_twin_of, twin_note
from dro_lab._validation import check_int, check_number

__all__ = ["TWIN_TOY", "toy_panel"]


#: The smaller toy of :func:`toy_panel`'s static twin.
TWIN_TOY = {"n_train": 200, "epochs": 60, "resolution": 40}


def toy_panel(*, beta: float = 2.0, radius: float = 0.1, alpha: float = 0.2, seed: int = 0, **toy) -> W.Box:
    """The 2-D minority toy behind a Run button: β, r and α sliders, then every method trained on one seed and
    drawn by :func:`~dro_course.lessons.dro_foundations.figures.toy_boundaries_figure`.

    ``toy`` goes to :func:`~dro_course.lessons.dro_foundations.toys.run_minority_toy` (``n_train``, ``epochs``, ``lr``,
    ``momentum``, ``minority_fraction``, ``noise``, ``device``); no sweep runs here, so a click takes a second or two.

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
        return toy_boundaries_figure(result)

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
        return toy_boundaries_figure(
            result,
            title=f"A smaller toy ({small['n_train']} points, "
            f"{small['epochs']} epochs): β = {beta:.3g}, r = {radius:.3g}, α = {alpha:.3g}",
        )

    knobs = {"beta": knob(controls["beta"], sorted({0.5, beta, 10.0}))}
    note = twin_note(knobs, how="Precomputed on a smaller toy", live="trains the full toy at any β, r and α")
    return box.set_twin(static_twin_of(small_run, knobs), title=title, note=note)
