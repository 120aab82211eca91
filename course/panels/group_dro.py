"""Lesson 04, group DRO: optimism on the bilinear game, π* as β = 1/τ moves, π over a training run, and the
paper's imbalanced-data experiment watched as it trains.

Here β is 1/τ of the group-DRO KL penalty and α the optimism of ALSO / Mirror-Prox.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import ipywidgets as W
import plotly.graph_objects as go

from dro_course import figures
from dro_course.panels.panels import figure_box, live_panel, redraw
from dro_course.panels.sliders import STYLE, WIDE, group_beta_slider, optimism_slider
from dro_course.panels.training import _experiment_panel
from dro_course.panels.twin import knobs_from_controls, static_twin_of, twin_note
from dro_lab._validation import check_callable, check_number
from dro_lab.experiments import Splits
from dro_lab.experiments.papers.also import ALSO_EXPERIMENT
from dro_lab.optim.prox import bilinear_game_path

#: The ALSO panel's twin trains whole runs (every epoch, every example): they are cheap.
ALSO_TWIN_BUDGET = {"epochs": None, "train": None, "test": None, "runs": 12}


def bilinear_panel(*, lr: float = 0.1, alpha: float = 1.0, steps: int = 300) -> W.Box:
    r"""Optimism on the bilinear game :math:`\min_x\max_y xy`: plain descent–ascent (α = 0) against the chosen α.

    Sliders "α (optimism)" ∈ [0, 2] and "γ (step size)" ∈ [0.01, 0.5] recompute both paths of
    :func:`dro_lab.optim.bilinear_game_path` (cheap, so live) and redraw the traces of
    :func:`dro_course.figures.bilinear_figure`; the read-out gives the final distances to the saddle. The static twin
    holds α ∈ {0, 0.5, 1, 1.5, 2} and γ ∈ {0.05, 0.1, 0.2, 0.3, 0.5} (with the starting values), one at a time:
    about 10 pairs of paths, a fraction of a second.
    """
    check_number(lr, "lr (γ (step size))", low=0.0, low_open=True)
    bilinear_game_path(lr=lr, alpha=alpha, steps=steps)  # validates alpha and steps with their names

    def build(alpha, lr):
        plain = bilinear_game_path(lr=lr, alpha=0.0, steps=steps)
        chosen = bilinear_game_path(lr=lr, alpha=alpha, steps=steps)
        fig = figures.bilinear_figure(
            {"α = 0 (descent–ascent)": plain, f"α = {alpha:.2f}": chosen},
            title=f"{steps} steps of size γ = {lr:.3g} on min_x max_y xy",
        )
        n_plain, n_chosen = float(plain[-1].norm()), float(chosen[-1].norm())
        return (
            fig,
            f"‖z_T‖ = {n_chosen:.3g} (α = 0: {n_plain:.3g})<br><small>‖z₀‖ = {float(plain[0].norm()):.3g}</small>",
        )

    controls = {
        "alpha": optimism_slider(alpha),
        "lr": W.FloatSlider(
            value=lr,
            min=0.01,
            max=0.5,
            step=0.01,
            description="γ (step size)",
            style=STYLE,
            layout=WIDE,
            readout_format=".2f",
        ),
    }
    twin = {"alpha": [0.0, 0.5, 1.0, 1.5, 2.0], "lr": [0.05, 0.1, 0.2, 0.3, 0.5]}
    return live_panel(build, controls, title="Optimistic descent–ascent on a bilinear game", twin=twin)


def tau_panel(group_losses, prior=None, *, beta: float = 10.0, labels=None) -> W.Box:
    r"""π* ∝ π̂ exp(β L) per group against the prior, as β = 1/τ moves (log slider 10⁻² … 10³).

    Redraws :func:`dro_course.figures.pi_star_bar_figure`; the read-out gives the radius reached,
    :math:`r=\mathrm{KL}(\pi^\star\|\hat\pi)`, and τ = 1/β. The static twin holds β at every power of ten
    of the slider's range (and its start): six closed forms, instant.
    """

    def build(beta):
        _, r = figures.pi_star(group_losses, prior, beta=beta)
        fig = figures.pi_star_bar_figure(group_losses, prior, beta=beta, labels=labels)
        return fig, f"r = KL(π*‖π̂) = {r:.4f}, τ = {1.0 / beta:.3g}"

    return live_panel(build, {"beta": group_beta_slider(beta)}, title="Worst-case group weights π*")


def pi_run_panel(simulate: Callable[..., Mapping], *, beta: float = 10.0, alpha: float = 1.0) -> W.Box:
    """Train behind a Run button and redraw the π trajectory.

    On click, ``simulate(beta=β, alpha=α)`` runs with the slider values (β = 1/τ, α the optimism) and
    returns a dict with ``"pi"`` (T, c), optional ``"kl"`` (T,), ``"labels"``, ``"prior"`` and ``"x_title"``;
    :func:`dro_course.figures.pi_trajectory_figure` is redrawn in place and the read-out gives the final
    :math:`r = \\mathrm{KL}(\\pi_T\\|\\hat\\pi)` (from ``"kl"``, else computed against the prior,
    uniform by default). Printed output and errors of ``simulate`` show under the button.

    The static twin calls ``simulate`` five times on first display: at the starting β and α, at β = 1 and 100
    (α at its start) and at α = 0 and 2 (β at its start) — lesson 04's iris run takes about 0.1 s each.
    """
    check_callable(simulate, "simulate")
    controls = {"beta": group_beta_slider(beta, description="β = 1/τ"), "alpha": optimism_slider(alpha)}
    widget = go.FigureWidget(
        layout=dict(template="plotly_white", height=380, title="Press Run to train and draw π over the steps")
    )
    readout = W.HTML("final r = KL(π_T‖π̂): not run yet")
    button = W.Button(description="Run", button_style="primary", icon="play")
    log = W.Output()

    def on_click(_):
        values = {k: w.value for k, w in controls.items()}
        button.disabled = True
        try:
            with log:
                log.clear_output(wait=True)
                result = simulate(**values)
            kl = result.get("kl")
            r = float(kl[-1]) if kl is not None else figures.kl_to_prior(result["pi"][-1], result.get("prior"))
            redraw(widget, _pi_figure(result, **values))
            readout.value = f"final r = KL(π_T‖π̂) = {r:.4f}"
        finally:
            button.disabled = False

    button.on_click(on_click)
    title = "π over training (ALSO / Mirror-Prox)"
    box = figure_box(title, controls, readout, widget, extra=(button, log))
    knobs = knobs_from_controls(controls, {"beta": [1.0, 100.0], "alpha": [0.0, 2.0]})
    factory = static_twin_of(lambda beta, alpha: _pi_figure(simulate(beta=beta, alpha=alpha), beta, alpha), knobs)
    return box.set_twin(factory, title=title, note=twin_note(knobs, how="Precomputed runs", live="runs any value"))


def _pi_figure(result: Mapping, beta: float, alpha: float) -> go.Figure:
    """:func:`dro_course.figures.pi_trajectory_figure` of one ``simulate`` result."""
    return figures.pi_trajectory_figure(
        result["pi"],
        labels=result.get("labels"),
        prior=result.get("prior"),
        kl=result.get("kl"),
        x_title=result.get("x_title", "step t"),
        title=f"π over training, β = {beta:.3g} (τ = {1 / beta:.3g}), α = {alpha:.2f}",
    )


def also_training_panel(
    splits: Splits,
    config: Mapping,
    *,
    methods: Sequence[str] = ("ERM (Adam)", "Static Weights", "ALSO"),
    pi_lr: float = 1e-3,
    tau: float = 1.0,
    alpha: float = 1.0,
    seed: int = 0,
    device: str = "auto",
) -> W.Box:
    r"""Watch one run of the ALSO paper's imbalanced-data experiment train (§6.1,
    :data:`dro_lab.experiments.papers.also.ALSO_EXPERIMENT`), epoch by epoch.

    :func:`dro_course.panels.experiment_training_panel` with a method menu (``methods``, arms of the experiment)
    and ALSO's three knobs as log / linear sliders: "η_π (π's step)" 10⁻⁵ … 10⁻¹, "τ (KL pull to the prior,
    β = 1/τ)" 10⁻² … 10² and "α (optimism)" 0 … 2 (the methods without such a knob ignore it). Each **Train**
    click trains the chosen method on ``splits`` with ``config`` as the experiment's runner does and draws the
    training loss and the worst-class test accuracy. Headless the panel is inert; its static twin (on first
    display) draws every method's curves from whole runs of ``config`` (:data:`ALSO_TWIN_BUDGET`: this
    experiment's models are small, one smoke run takes about 0.05 s), the three knobs at their value and at
    their slider's ends, one at a time: nine runs, about half a second on lesson 04's smoke data.
    """
    check_number(pi_lr, "pi_lr", low=1e-5, high=1e-1)
    check_number(tau, "tau", low=1e-2, high=1e2)
    controls = {
        "pi_lr": W.FloatLogSlider(value=pi_lr, base=10, min=-5, max=-1, step=0.25, description="η_π (π's step)",
                                  style=STYLE, layout=WIDE, readout_format=".1e"),
        "tau": W.FloatLogSlider(value=tau, base=10, min=-2, max=2, step=0.25, description="τ (β = 1/τ)",
                                style=STYLE, layout=WIDE, readout_format=".2g"),
        "alpha": optimism_slider(alpha),
    }  # fmt: skip
    return _experiment_panel(
        ALSO_EXPERIMENT,
        splits,
        config,
        methods=list(methods),
        controls=controls,
        metrics=("train_loss", "worst_class_accuracy"),
        seed=seed,
        device=device,
        title="ALSO's imbalanced-data experiment: one run, epoch by epoch",
        budget=ALSO_TWIN_BUDGET,
    )
