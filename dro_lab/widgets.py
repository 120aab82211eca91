"""Widget panels that only wire sliders to the pure figure builders of :mod:`dro_lab.viz`.

The logic lives in plain functions (testable without a front-end); a panel is
``HBox([VBox(controls), Output])`` driven by ``ipywidgets.interactive_output``. Anything that
trains sits behind a Run button. ipywidgets is imported here, lazily from the rest of dro_lab.

Widgets always say which symbol they are: "β (KL inverse temperature)", "α (CVaR level)".
"""

from __future__ import annotations

from typing import Callable, Mapping

import ipywidgets as W
from IPython.display import display

__all__ = ["beta_slider", "radius_slider", "cvar_alpha_slider", "divergence_toggle", "panel", "run_panel",
           "weights_panel", "hws_panel", "is_alpha_slider", "weight_exponent_slider", "is_variance_panel"]

_STYLE = {"description_width": "initial"}
_WIDE = W.Layout(width="360px")


def beta_slider(value: float = 1.0, *, min_exp: float = -2, max_exp: float = 3,
                description: str = "β (KL/χ² inverse temperature)", continuous_update: bool = True) -> W.FloatLogSlider:
    """A log-scale β slider, 10^min_exp … 10^max_exp."""
    return W.FloatLogSlider(value=value, base=10, min=min_exp, max=max_exp, step=0.05, description=description,
                            style=_STYLE, layout=_WIDE, continuous_update=continuous_update, readout_format=".3g")


def radius_slider(value: float = 0.1, *, min_exp: float = -3, max_exp: float = 1,
                  description: str = "r (divergence-ball radius)", continuous_update: bool = True) -> W.FloatLogSlider:
    """A log-scale radius slider."""
    return W.FloatLogSlider(value=value, base=10, min=min_exp, max=max_exp, step=0.05, description=description,
                            style=_STYLE, layout=_WIDE, continuous_update=continuous_update, readout_format=".3g")


def cvar_alpha_slider(value: float = 0.2, *, description: str = "α (CVaR level)",
                      continuous_update: bool = True) -> W.FloatSlider:
    """The CVaR level α ∈ (0, 1]: the worst α-fraction of the data is averaged."""
    return W.FloatSlider(value=value, min=0.01, max=1.0, step=0.01, description=description, style=_STYLE,
                         layout=_WIDE, continuous_update=continuous_update, readout_format=".2f")


def divergence_toggle(value: str = "kl", *, description: str = "divergence") -> W.ToggleButtons:
    """KL / χ² switch; its ``value`` is the library's name (``"kl"`` or ``"chi2"``)."""
    return W.ToggleButtons(options=[("KL", "kl"), ("χ²", "chi2")], value=value, description=description,
                           style=_STYLE, tooltips=["Kullback-Leibler: q = softmax(β·ℓ)",
                                                   "Pearson χ²: q = projection of 1/n + β·ℓ/(2n) onto the simplex"])


def panel(figure_fn: Callable[..., object], controls: Mapping[str, W.Widget], *, title: str | None = None) -> W.Box:
    """Controls on the left, the figure returned by ``figure_fn(**values)`` on the right, live.

    ``figure_fn`` is a plain function returning a plotly figure; it is re-run when a control moves.
    """
    def show(**kwargs):
        display(figure_fn(**kwargs))

    out = W.interactive_output(show, dict(controls))
    left = [W.HTML(f"<b>{title}</b>")] if title else []
    box = W.HBox([W.VBox(left + list(controls.values())), out])
    return box


def run_panel(run_fn: Callable[..., object], controls: Mapping[str, W.Widget], *, button: str = "Run",
              title: str | None = None) -> W.Box:
    """Heavy work behind a button: ``run_fn(**values)`` runs on click; its output (figures, logs) shows below."""
    btn = W.Button(description=button, button_style="primary", icon="play")
    out = W.Output()

    def on_click(_):
        with out:
            out.clear_output(wait=True)
            result = run_fn(**{k: w.value for k, w in controls.items()})
            if result is not None:
                display(result)

    btn.on_click(on_click)
    head = [W.HTML(f"<b>{title}</b>")] if title else []
    return W.VBox(head + [W.HBox(list(controls.values()) + [btn]), out])


def weights_panel(losses, *, prior=None, beta: float = 2.0, radius: float = 0.1, alpha: float = 0.2) -> W.Box:
    """The foundations panel: β, r and α sliders moving the KL / χ² / KL-ball / CVaR weights on ``losses``."""
    from .viz import weights_figure, weights_for_knobs

    def fig(beta, radius, alpha):
        return weights_figure(losses, weights_for_knobs(losses, beta=beta, radius=radius, alpha=alpha, prior=prior),
                              prior=prior)

    controls = {"beta": beta_slider(beta), "radius": radius_slider(radius), "alpha": cvar_alpha_slider(alpha)}
    return panel(fig, controls, title="Worst-case weights")


def hws_panel(losses, labels, *, minority: int | None = None, batch_size: int | None = None, beta: float = 10.0,
              divergence: str = "kl", min_exp: float = -2, max_exp: float = 3) -> W.Box:
    """The hardness-weighted-sampling panel (lesson 02): β (log slider) and KL/χ² move ``q`` over a loss history.

    Redraws :func:`dro_lab.viz.hws_sampling_figure` (q against the loss by class, the q-mass of
    each class against its uniform share, the ``minority`` class's expected draws per batch of
    ``batch_size``). β runs over ``10^min_exp … 10^max_exp`` (the spec's 1e-2 … 1e3); the left end
    is practically ERM. The note under the controls says that the two divergences' β scales differ.
    """
    from . import viz

    def fig(beta, divergence):
        return viz.hws_sampling_figure(losses, labels, beta=beta, divergence=divergence, minority=minority,
                                       batch_size=batch_size)

    controls = {
        "beta": beta_slider(beta, min_exp=min_exp, max_exp=max_exp, description="β (inverse temperature)"),
        "divergence": divergence_toggle(divergence),
    }
    box = panel(fig, controls, title="Hardness-weighted sampling over the loss history")
    note = W.HTML("<small>β scales differ: χ² at 2β ≈ KL at β (to first order).<br>"
                  "β → 0 is uniform sampling (ERM).</small>")
    box.children[0].children = box.children[0].children + (note,)
    return box


def is_alpha_slider(value: float = 0.5, *, description: str = "α (uniform mixing)",
                    continuous_update: bool = True) -> W.FloatSlider:
    """The importance-sampling mixing α ∈ [0, 1]: p = (1 − α)·u + α·p^GN (0 uniform, ½ the paper's p^½, 1 p^GN)."""
    return W.FloatSlider(value=value, min=0.0, max=1.0, step=0.01, description=description, style=_STYLE,
                         layout=_WIDE, continuous_update=continuous_update, readout_format=".2f")


def weight_exponent_slider(value: float = 1.0, *, description: str = "weight exponent e (w = (1/(N·p))^e)",
                           continuous_update: bool = True) -> W.FloatSlider:
    """The importance-weight exponent e ∈ [0, 1] (1 unbiased, 0 "forgotten weights"); not DRO's β."""
    return W.FloatSlider(value=value, min=0.0, max=1.0, step=0.01, description=description, style=_STYLE,
                         layout=_WIDE, continuous_update=continuous_update, readout_format=".2f")


def is_variance_panel(gram, *, alpha: float = 0.5, weight_exponent: float = 1.0, batch_size: int = 1) -> W.Box:
    """The lesson-03 panel: α (uniform mixing) and the weight exponent move :func:`dro_lab.viz.is_variance_figure`.

    ``gram`` is the Gram matrix of the per-sample gradients (N × N); everything is exact and cheap,
    so the figure redraws live.
    """
    from . import viz

    def fig(alpha, weight_exponent):
        return viz.is_variance_figure(gram, alpha=alpha, weight_exponent=weight_exponent, batch_size=batch_size)

    controls = {"alpha": is_alpha_slider(alpha), "weight_exponent": weight_exponent_slider(weight_exponent)}
    box = panel(fig, controls, title="Importance-sampled gradient: error and ρ")
    note = W.HTML("<small>α = 0 is uniform sampling, α = 1 is p<sup>GN</sup>.<br>"
                  "Weight exponent 1 is unbiased; 0 forgets the weights (biased).<br>"
                  "Neither is DRO's β or Adam's β.</small>")
    box.children[0].children = box.children[0].children + (note,)
    return box
