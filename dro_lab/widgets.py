"""Widget panels that only wire sliders to the pure figure builders of :mod:`dro_lab.viz`.

The logic lives in plain functions (testable without a front-end); a panel is
``HBox([VBox(controls), Output])`` driven by ``ipywidgets.interactive_output``. Anything that
trains sits behind a Run button. ipywidgets is imported here, lazily from the rest of dro_lab.

Widgets always say which symbol they are: "β (KL inverse temperature)", "α (CVaR level)".
"""

from __future__ import annotations

import math
import numbers
from typing import Callable, Mapping

import ipywidgets as W
from IPython.display import display

__all__ = ["beta_slider", "radius_slider", "cvar_alpha_slider", "divergence_toggle", "panel", "run_panel",
           "weights_panel", "hws_panel", "is_alpha_slider", "weight_exponent_slider", "is_variance_panel"]

_STYLE = {"description_width": "initial"}
_WIDE = W.Layout(width="360px")


def _check_value(value, name: str, description: str, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, integer: bool = False) -> None:
    """A slider's initial value (or a panel's knob) in the quantity's own valid range, not the slider's: values
    beyond the slider's ends are clamped by ipywidgets, as before (a β = 0 on a log slider shows its left end)."""
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name} must be {'an integer' if integer else 'a number'} for {description!r}, "
                        f"got {type(value).__name__}")
    bad = (not math.isfinite(value) or (low is not None and (value <= low if low_open else value < low))
           or (high is not None and value > high))
    if bad:
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf)" if high is None else f"{high:g}]"
        raise ValueError(f"{name} must be in {'(' if low_open or low is None else '['}{lo}, {hi} for {description!r}, "
                         f"got {value!r}")


def _check_ends(lo: float, hi: float, lo_name: str, hi_name: str) -> None:
    if not (isinstance(lo, numbers.Real) and isinstance(hi, numbers.Real) and lo < hi):
        raise ValueError(f"{lo_name} must be < {hi_name}, got {lo_name}={lo!r} and {hi_name}={hi!r}")


def _check_callable(fn, name: str) -> None:
    if not callable(fn):
        raise TypeError(f"{name} must be callable, got {type(fn).__name__}")


def _check_controls(controls) -> None:
    if not isinstance(controls, Mapping):
        raise TypeError(f"controls must be a mapping name -> widget, got {type(controls).__name__}")


def beta_slider(value: float = 1.0, *, min_exp: float = -2, max_exp: float = 3,
                description: str = "β (KL/χ² inverse temperature)", continuous_update: bool = True) -> W.FloatLogSlider:
    """A log-scale β slider, 10^min_exp … 10^max_exp."""
    _check_value(value, "value", description, low=0.0)
    _check_ends(min_exp, max_exp, "min_exp", "max_exp")
    return W.FloatLogSlider(value=value, base=10, min=min_exp, max=max_exp, step=0.05, description=description,
                            style=_STYLE, layout=_WIDE, continuous_update=continuous_update, readout_format=".3g")


def radius_slider(value: float = 0.1, *, min_exp: float = -3, max_exp: float = 1,
                  description: str = "r (divergence-ball radius)", continuous_update: bool = True) -> W.FloatLogSlider:
    """A log-scale radius slider."""
    _check_value(value, "value", description, low=0.0)
    _check_ends(min_exp, max_exp, "min_exp", "max_exp")
    return W.FloatLogSlider(value=value, base=10, min=min_exp, max=max_exp, step=0.05, description=description,
                            style=_STYLE, layout=_WIDE, continuous_update=continuous_update, readout_format=".3g")


def cvar_alpha_slider(value: float = 0.2, *, description: str = "α (CVaR level)",
                      continuous_update: bool = True) -> W.FloatSlider:
    """The CVaR level α ∈ (0, 1]: the worst α-fraction of the data is averaged."""
    _check_value(value, "value", description, low=0.0, low_open=True, high=1.0)
    return W.FloatSlider(value=value, min=0.01, max=1.0, step=0.01, description=description, style=_STYLE,
                         layout=_WIDE, continuous_update=continuous_update, readout_format=".2f")


def divergence_toggle(value: str = "kl", *, description: str = "divergence") -> W.ToggleButtons:
    """KL / χ² switch; its ``value`` is the library's name (``"kl"`` or ``"chi2"``)."""
    if value not in ("kl", "chi2"):
        raise ValueError(f"value (the divergence) must be 'kl' or 'chi2', got {value!r}")
    return W.ToggleButtons(options=[("KL", "kl"), ("χ²", "chi2")], value=value, description=description,
                           style=_STYLE, tooltips=["Kullback-Leibler: q = softmax(β·ℓ)",
                                                   "Pearson χ²: q = projection of 1/n + β·ℓ/(2n) onto the simplex"])


def panel(figure_fn: Callable[..., object], controls: Mapping[str, W.Widget], *, title: str | None = None) -> W.Box:
    """Controls on the left, the figure returned by ``figure_fn(**values)`` on the right, live.

    ``figure_fn`` is a plain function returning a plotly figure; it is re-run when a control moves.
    """
    _check_callable(figure_fn, "figure_fn")
    _check_controls(controls)
    def show(**kwargs):
        display(figure_fn(**kwargs))

    out = W.interactive_output(show, dict(controls))
    left = [W.HTML(f"<b>{title}</b>")] if title else []
    box = W.HBox([W.VBox(left + list(controls.values())), out])
    return box


def run_panel(run_fn: Callable[..., object], controls: Mapping[str, W.Widget], *, button: str = "Run",
              title: str | None = None) -> W.Box:
    """Heavy work behind a button: ``run_fn(**values)`` runs on click; its output (figures, logs) shows below."""
    _check_callable(run_fn, "run_fn")
    _check_controls(controls)
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


def _linear_slider(value: float, lo: float, hi: float, step: float, description: str,
                   continuous_update: bool) -> W.FloatSlider:
    return W.FloatSlider(value=value, min=lo, max=hi, step=step, description=description, style=_STYLE,
                         layout=_WIDE, continuous_update=continuous_update, readout_format=".2f")


def is_alpha_slider(value: float = 0.5, *, description: str = "α (uniform mixing)",
                    continuous_update: bool = True) -> W.FloatSlider:
    """The importance-sampling mixing α ∈ [0, 1]: p = (1 − α)·u + α·p^GN (0 uniform, ½ the paper's p^½, 1 p^GN)."""
    _check_value(value, "value", description, low=0.0, high=1.0)
    return _linear_slider(value, 0.0, 1.0, 0.01, description, continuous_update)


def weight_exponent_slider(value: float = 1.0, *, description: str = "weight exponent e (w = (1/(N·p))^e)",
                           continuous_update: bool = True) -> W.FloatSlider:
    """The importance-weight exponent e ∈ [0, 1] (1 unbiased, 0 "forgotten weights"); not DRO's β."""
    _check_value(value, "value", description, low=0.0, high=1.0)
    return _linear_slider(value, 0.0, 1.0, 0.01, description, continuous_update)


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


# --------------------------------------------------------------------------- lesson 04: group DRO (Mirror-Prox, ALSO)
# Panels draw into a plotly FigureWidget whose traces are updated in place (no flicker); the figure,
# sliders and read-out are also attributes of the returned box (``box.figure``, ``box.sliders``,
# ``box.readout``). Here β is 1/τ of the group-DRO KL penalty and α the optimism of ALSO / Mirror-Prox.

__all__ += ["optimism_slider", "group_beta_slider", "bilinear_panel", "tau_panel", "pi_run_panel"]


def optimism_slider(value: float = 1.0, *, description: str = "α (optimism)",
                    continuous_update: bool = True) -> W.FloatSlider:
    """ALSO / Mirror-Prox optimism α ∈ [0, 2]: ĝ_t = g_t + α(g_t − g_{t−1}); 0 is plain descent–ascent, 1 Popov."""
    _check_value(value, "value", description, low=0.0)
    return _linear_slider(value, 0.0, 2.0, 0.05, description, continuous_update)


def group_beta_slider(value: float = 10.0, *, description: str = "β = 1/τ (robustness)",
                      continuous_update: bool = True) -> W.FloatLogSlider:
    """β = 1/τ of the group-DRO KL penalty, log scale 10⁻² … 10³ (not Adam's β₁/β₂)."""
    return beta_slider(value, min_exp=-2, max_exp=3, description=description, continuous_update=continuous_update)


def _redraw(widget, fig) -> None:
    """Copy ``fig`` into the FigureWidget ``widget``: traces updated in place when they have the same
    shape (number, types and set properties: a live redraw, nothing stale left behind), replaced
    otherwise; the layout follows."""
    def shape(traces):
        return [(t.type, sorted(k for k in t.to_plotly_json() if k != "uid")) for t in traces]

    new = list(fig.data)
    with widget.batch_update():
        if shape(widget.data) == shape(new):
            for old, trace in zip(widget.data, new):
                props = trace.to_plotly_json()
                props.pop("type", None)
                props.pop("uid", None)
                old.update(props, overwrite=True)
        else:
            widget.data = []
            widget.add_traces(new)
        widget.update_layout(fig.layout.to_plotly_json(), overwrite=True)


def _figure_box(title: str, controls: Mapping[str, W.Widget], readout: W.HTML, widget, extra=()) -> W.Box:
    box = W.HBox([W.VBox([W.HTML(f"<b>{title}</b>")] + list(controls.values()) + [readout] + list(extra)), widget])
    box.figure, box.sliders, box.readout = widget, dict(controls), readout
    return box


def _live_panel(build: Callable[..., tuple[object, str]], controls: Mapping[str, W.Widget], *,
                title: str) -> W.Box:
    """``build(**values) -> (figure, read-out html)``, redrawn in a FigureWidget whenever a control moves."""
    import plotly.graph_objects as go

    fig, text = build(**{k: w.value for k, w in controls.items()})
    widget = go.FigureWidget(fig)
    readout = W.HTML(text)

    def update(_=None):
        fig, text = build(**{k: w.value for k, w in controls.items()})
        _redraw(widget, fig)
        readout.value = text

    for w in controls.values():
        w.observe(update, names="value")
    return _figure_box(title, controls, readout, widget)


def bilinear_panel(*, lr: float = 0.1, alpha: float = 1.0, steps: int = 300) -> W.Box:
    r"""Optimism on the bilinear game :math:`\min_x\max_y xy`: plain descent–ascent (α = 0) against the chosen α.

    Sliders "α (optimism)" ∈ [0, 2] and "γ (step size)" ∈ [0.01, 0.5] recompute both paths of
    :func:`dro_lab.optim.bilinear_game_path` (cheap, so live) and redraw the traces of
    :func:`dro_lab.viz.bilinear_figure`; the read-out gives the final distances to the saddle.
    """
    from . import viz
    from .optim import bilinear_game_path

    _check_value(lr, "lr", "γ (step size)", low=0.0, low_open=True)
    bilinear_game_path(lr=lr, alpha=alpha, steps=steps)  # validates alpha and steps with their names

    def build(alpha, lr):
        plain = bilinear_game_path(lr=lr, alpha=0.0, steps=steps)
        chosen = bilinear_game_path(lr=lr, alpha=alpha, steps=steps)
        fig = viz.bilinear_figure({"α = 0 (descent–ascent)": plain, f"α = {alpha:.2f}": chosen},
                                  title=f"{steps} steps of size γ = {lr:.3g} on min_x max_y xy")
        n_plain, n_chosen = float(plain[-1].norm()), float(chosen[-1].norm())
        return fig, f"‖z_T‖ = {n_chosen:.3g} (α = 0: {n_plain:.3g})<br><small>‖z₀‖ = {float(plain[0].norm()):.3g}</small>"

    controls = {
        "alpha": optimism_slider(alpha),
        "lr": W.FloatSlider(value=lr, min=0.01, max=0.5, step=0.01, description="γ (step size)", style=_STYLE,
                            layout=_WIDE, readout_format=".2f"),
    }
    return _live_panel(build, controls, title="Optimistic descent–ascent on a bilinear game")


def tau_panel(group_losses, prior=None, *, beta: float = 10.0, labels=None) -> W.Box:
    r"""π* ∝ π̂ exp(β L) per group against the prior, as β = 1/τ moves (log slider 10⁻² … 10³).

    Redraws :func:`dro_lab.viz.pi_star_bar_figure`; the read-out gives the radius reached,
    :math:`r=\mathrm{KL}(\pi^\star\|\hat\pi)`, and τ = 1/β.
    """
    from . import viz

    def build(beta):
        _, r = viz.pi_star(group_losses, prior, beta=beta)
        fig = viz.pi_star_bar_figure(group_losses, prior, beta=beta, labels=labels)
        return fig, f"r = KL(π*‖π̂) = {r:.4f}, τ = {1.0 / beta:.3g}"

    return _live_panel(build, {"beta": group_beta_slider(beta)}, title="Worst-case group weights π*")


def pi_run_panel(simulate: Callable[..., Mapping], *, beta: float = 10.0, alpha: float = 1.0) -> W.Box:
    """Train behind a Run button and redraw the π trajectory.

    On click, ``simulate(beta=β, alpha=α)`` runs with the slider values (β = 1/τ, α the optimism) and
    returns a dict with ``"pi"`` (T, c), optional ``"kl"`` (T,), ``"labels"`` and ``"prior"``;
    :func:`dro_lab.viz.pi_trajectory_figure` is redrawn in place and the read-out gives the final
    :math:`r = \\mathrm{KL}(\\pi_T\\|\\hat\\pi)` (from ``"kl"``, else computed against the prior,
    uniform by default). Printed output and errors of ``simulate`` show under the button.
    """
    import plotly.graph_objects as go

    from . import viz

    _check_callable(simulate, "simulate")
    controls = {"beta": group_beta_slider(beta, description="β = 1/τ"), "alpha": optimism_slider(alpha)}
    widget = go.FigureWidget(layout=dict(template="plotly_white", height=380,
                                         title="Press Run to train and draw π over the steps"))
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
            r = float(kl[-1]) if kl is not None else viz.kl_to_prior(result["pi"][-1], result.get("prior"))
            fig = viz.pi_trajectory_figure(result["pi"], labels=result.get("labels"), prior=result.get("prior"),
                                           kl=kl, title=f"π over training, β = {values['beta']:.3g} "
                                                        f"(τ = {1 / values['beta']:.3g}), α = {values['alpha']:.2f}")
            _redraw(widget, fig)
            readout.value = f"final r = KL(π_T‖π̂) = {r:.4f}"
        finally:
            button.disabled = False

    button.on_click(on_click)
    return _figure_box("π over training (ALSO / Mirror-Prox)", controls, readout, widget, extra=(button, log))


# --------------------------------------------------------------------------- lesson 05: doubly robust AT (DONE)
# r is DONE's KL temperature (ω = softmax(ℓ/r) over the batch; small r = hard examples, r → ∞ = AT),
# α the attack step and ε the attack radius. Same conventions as lesson 04: a FigureWidget redrawn in
# place, with ``box.figure``, ``box.sliders`` and ``box.readout``.

__all__ += ["done_r_slider", "attack_eps_slider", "attack_alpha_slider", "done_r_panel", "attack_toy_panel"]


def done_r_slider(value: float = 1.0, *, description: str = "r (DONE temperature, loss units)",
                  continuous_update: bool = True) -> W.FloatLogSlider:
    """DONE's KL temperature r, log scale 10^−1.3 ≈ 0.05 … 100 (not a radius, not Adam's β)."""
    _check_value(value, "value", description, low=0.0, low_open=True)
    return beta_slider(value, min_exp=-1.3, max_exp=2, description=description, continuous_update=continuous_update)


def attack_eps_slider(value: float = 0.3, *, hi: float = 1.0, step: float = 0.01,
                      description: str = "ε (attack radius)", continuous_update: bool = True) -> W.FloatSlider:
    """The attack radius ε ∈ [0, hi] (0 = no attack)."""
    _check_value(value, "value", description, low=0.0)
    _check_ends(0.0, hi, "0", "hi")
    return _linear_slider(value, 0.0, hi, step, description, continuous_update)


def attack_alpha_slider(value: float = 0.05, *, lo: float = 0.005, hi: float = 0.5, step: float = 0.005,
                        description: str = "α (attack step)", continuous_update: bool = True) -> W.FloatSlider:
    """The attack's inner step size α ∈ [lo, hi] (not the CVaR level, not the learning rate)."""
    _check_value(value, "value", description, low=0.0, low_open=True)
    _check_ends(lo, hi, "lo", "hi")
    slider = _linear_slider(value, lo, hi, step, description, continuous_update)
    slider.readout_format = ".3f"
    return slider


def done_r_panel(losses, labels, *, r: float = 1.0, class_names=None) -> W.Box:
    r"""DONE's weights ω = softmax(ℓ/r) on one batch of losses, per class, as r moves (log slider ≈ 0.05 … 100).

    ω comes from :func:`dro_lab.adversarial_training.done_weights` (η = 1: exact batch softmax) and is
    drawn by :func:`dro_lab.viz.done_weight_figure`; the read-out gives the effective sample size
    :math:`1/\sum\omega_i^2` against |B| and the largest :math:`\omega_i|\mathcal B|`.
    """
    import torch

    from . import viz
    from .adversarial_training import done_weights

    ell = torch.as_tensor(losses, dtype=torch.float64).reshape(-1)

    def build(r):
        w = done_weights(ell, r=r)[0].numpy()
        s = viz.done_weight_stats(w)
        fig = viz.done_weight_figure(w, labels, class_names=class_names,
                                     title=f"DONE weights at r = {r:.3g} (|B| = {s['batch']})")
        return fig, (f"ESS = 1/Σω² = {s['ess']:.1f} of |B| = {s['batch']}; "
                     f"max ω·|B| = {s['max_scaled']:.3g}")

    return _live_panel(build, {"r": done_r_slider(r)}, title="DONE instance weights ω = softmax(ℓ/r)")


def attack_toy_panel(model, x, y, *, eps: float = 0.3, alpha: float = 0.05, steps: int = 10, grid: int = 60,
                     norm: str = "linf") -> W.Box:
    """PGD on a 2-D two-class toy, live: sliders "ε (attack radius)" ∈ [0, 1], "α (attack step)" ∈ [0.005, 0.5].

    The model's P(class 1) (softmax column 1) on a ``grid × grid`` mesh over the points' box padded by the
    largest ε is computed once; each move reruns :func:`dro_lab.adversarial.pgd_attack` (``steps`` steps,
    no clamp, a generator seeded 0) on the ≤ 200 points and redraws :func:`dro_lab.viz.attack_toy_figure`.
    The read-out gives the robust accuracy at ε and the clean accuracy.
    """
    import numpy as np
    import torch

    from . import viz
    from .adversarial import pgd_attack
    from .metrics import predict

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    _check_value(grid, "grid", "the mesh size", low=2, integer=True)
    x = torch.as_tensor(x, dtype=torch.float32)
    y = torch.as_tensor(y, dtype=torch.long)
    eps_w, alpha_w = attack_eps_slider(eps), attack_alpha_slider(alpha)
    pad = eps_w.max + 0.25
    lo, hi = x.min(0).values.numpy() - pad, x.max(0).values.numpy() + pad
    gx, gy = np.linspace(lo[0], hi[0], grid), np.linspace(lo[1], hi[1], grid)
    mesh = torch.tensor(np.stack(np.meshgrid(gx, gy), -1).reshape(-1, 2), dtype=torch.float32)
    with torch.no_grad():
        prob = torch.softmax(predict(model, mesh), 1)[:, 1].cpu().numpy().reshape(grid, grid)
        clean = float((predict(model, x).argmax(1).cpu() == y).double().mean())

    def build(eps, alpha):
        x_adv = pgd_attack(model, x, y, eps=eps, alpha=alpha, steps=steps, norm=norm, clamp=None,
                           generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            robust = float((predict(model, x_adv).argmax(1).cpu() == y).double().mean())
        fig = viz.attack_toy_figure(gx, gy, prob, x, y, x_adv.detach().cpu(), eps=eps, norm=norm,
                                    title=f"PGD-{steps} ({norm}), ε = {eps:.2f}, α = {alpha:.3f}")
        return fig, f"robust accuracy at ε = {eps:.2f}: {robust:.3f} (clean {clean:.3f})"

    return _live_panel(build, {"eps": eps_w, "alpha": alpha_w}, title="PGD attack on a 2-D toy")


# --------------------------------------------------------------------------- lesson 06: label-smoothing DRO (GI-LS)
# α is the label-smoothing factor (ls_alpha; not the CVaR level or an attack step), γ the Wasserstein penalty of
# the GI-LS ascent with β = 1/γ, T the number of ascent steps and r the transport radius ρ, realised as
# ρ̂ = mean ½‖f(x_T) − f(x)‖². Same conventions as lessons 04–05: a FigureWidget redrawn in place, with
# ``box.figure``, ``box.sliders`` and ``box.readout``.

__all__ += ["ls_alpha_slider", "gils_steps_slider", "gils_gamma_slider", "target_radius_slider", "gamma_for_radius",
            "gils_toy_panel"]

_GAMMA_RANGE = (1e-3, 1e3)


def ls_alpha_slider(value: float = 0.3, *, hi: float = 0.5, description: str = "α (label smoothing)",
                    continuous_update: bool = True) -> W.FloatSlider:
    """The label-smoothing factor α ∈ [0, hi] (the paper's range is [0, 0.5]; (k−1)/k is uniform targets)."""
    _check_value(value, "value", description, low=0.0, high=1.0)
    _check_ends(0.0, hi, "0", "hi")
    return _linear_slider(value, 0.0, hi, 0.01, description, continuous_update)


def gils_steps_slider(value: int = 10, *, hi: int = 30, description: str = "T (ascent steps)",
                      continuous_update: bool = True) -> W.IntSlider:
    """The number T ∈ [0, hi] of GI-LS ascent steps (T = 0: no shift, plain LS)."""
    _check_value(value, "value", description, low=0, integer=True)
    _check_value(hi, "hi", description, low=1, integer=True)
    return W.IntSlider(value=value, min=0, max=hi, step=1, description=description, style=_STYLE, layout=_WIDE,
                       continuous_update=continuous_update)


def gils_gamma_slider(value: float = 1.0, *, description: str = "γ (transport penalty, β = 1/γ)",
                      continuous_update: bool = True) -> W.FloatLogSlider:
    """The GI-LS transport penalty γ, log scale 10⁻³ … 10³ (larger γ, smaller shift)."""
    _check_value(value, "value", description, low=0.0)
    return beta_slider(value, min_exp=-3, max_exp=3, description=description, continuous_update=continuous_update)


def target_radius_slider(value: float = 0.1, *, min_exp: float = -3, max_exp: float = 1,
                         description: str = "r (target transport radius)",
                         continuous_update: bool = True) -> W.FloatLogSlider:
    """The target radius r for the realised transport cost ρ̂ = mean ½‖f(x_T) − f(x)‖², log scale."""
    return radius_slider(value, min_exp=min_exp, max_exp=max_exp, description=description,
                         continuous_update=continuous_update)


def gamma_for_radius(shift: Callable[[float], float], radius: float, *, lo: float = _GAMMA_RANGE[0],
                     hi: float = _GAMMA_RANGE[1], grid_points: int = 13, iters: int = 8) -> tuple[float, float]:
    r"""The γ whose realised transport cost ``shift(γ)`` (= ρ̂) is closest to ``radius``. Returns ``(γ, ρ̂(γ))``.

    ρ̂ falls as γ grows over the stable range only: once η·γ·‖J_f‖² ≳ 2 the explicit ascent oscillates and ρ̂
    grows again (and blows up). So ρ̂ is scanned on ``grid_points`` log-spaced γ in [lo, hi] up to its first
    rise or non-finite value (the stable, decreasing range), then bisected on log γ (``iters`` steps) in the
    bracket holding r. Out of reach, the nearest end of the stable range is returned (r ≥ ρ̂(lo): γ = lo;
    r below every stable ρ̂: the γ with the smallest one). Beyond the paper, which fixes γ.
    """
    _check_callable(shift, "shift")
    _check_value(radius, "radius", "the target transport radius r", low=0.0)
    _check_value(lo, "lo", "the smallest γ", low=0.0, low_open=True)
    _check_ends(lo, hi, "lo", "hi")
    _check_value(grid_points, "grid_points", "the number of scanned γ", low=2, integer=True)
    _check_value(iters, "iters", "the bisection steps", low=0, integer=True)
    step = (math.log(hi) - math.log(lo)) / max(int(grid_points) - 1, 1)
    scan: list[tuple[float, float]] = []
    for i in range(max(int(grid_points), 2)):
        g = math.exp(math.log(lo) + i * step)
        rho = shift(g)
        if not math.isfinite(rho) or (scan and rho > scan[-1][1] * (1 + 1e-3) + 1e-12):
            break   # unstable from here on
        scan.append((g, rho))
        if rho < radius:
            break
    if not scan:
        return lo, float("nan")
    if scan[0][1] <= radius or scan[-1][1] >= radius:   # r out of reach (or hit at the first point)
        return scan[0] if scan[0][1] <= radius else scan[-1]
    (g_a, r_a), (g_b, r_b) = scan[-2], scan[-1]   # ρ̂(g_a) ≥ r > ρ̂(g_b)
    best = min(scan[-2:], key=lambda p: abs(p[1] - radius))
    a, b = math.log(g_a), math.log(g_b)
    for _ in range(int(iters)):
        mid = 0.5 * (a + b)
        rho = shift(math.exp(mid))
        if abs(rho - radius) < abs(best[1] - radius):
            best = (math.exp(mid), rho)
        if rho > radius:
            a = mid
        else:
            b = mid
    return best


def gils_toy_panel(model, x, y, *, alpha: float = 0.3, gamma: float = 1.0, eta: float = 0.1, steps: int = 10,
                   target_radius: float | None = None, grid: int = 80) -> W.Box:
    r"""The GI-LS shift on a 2-D toy, live (spec §1.6 and §5 figure 5): ``model`` a small classifier with
    ``penultimate`` and ``classifier`` (e.g. :class:`dro_lab.models.MLP` on 2 inputs), ``x`` (n, 2) points
    in the plane (≤ a few hundred), ``y`` their labels.

    Sliders "α (label smoothing)" ∈ [0, 0.5], "T (ascent steps)" 0…30 and either "γ (transport penalty)"
    (log 10⁻³ … 10³; ``target_radius=None``) or "r (target transport radius)" (log 10⁻³ … 10; with
    ``target_radius`` = its initial value), which sets γ by a log-γ scan and bisection so that the realised
    :math:`\hat\rho` = mean ½‖f(x_T) − f(x)‖² ≈ r (:func:`gamma_for_radius`, ≤ 21 extra ascents, γ kept in the
    stable range; beyond the paper, which fixes γ). Each move reruns :func:`dro_lab.smoothing.gils_shift`
    (``eta``, no clamp) for the chosen α and for α = 0 (ADA/WRM, the reference) and redraws
    :func:`dro_lab.viz.shift_field_figure` over the model's predicted class; the read-out gives γ, β = 1/γ and
    ρ̂ and says when the ascent diverged (η·γ too large). T = 0 gives no shift and ρ̂ = 0 (γ then reads "nan"
    in r-mode: any γ fits).
    """
    import math

    import numpy as np
    import torch

    from . import viz
    from .smoothing import gils_shift

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    _check_value(grid, "grid", "the mesh size", low=2, integer=True)
    x = torch.as_tensor(x, dtype=torch.float32)
    y = torch.as_tensor(y, dtype=torch.long)
    lo, hi = x.min(0).values.numpy() - 0.5, x.max(0).values.numpy() + 0.5
    gx, gy = np.linspace(lo[0], hi[0], grid), np.linspace(lo[1], hi[1], grid)
    mesh = torch.tensor(np.stack(np.meshgrid(gx, gy), -1).reshape(-1, 2), dtype=torch.float32)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            cmap = model(mesh).argmax(1).cpu().numpy().reshape(grid, grid)
    finally:
        model.train(was_training)

    def shift(a: float, g: float, t: int):
        x_t, cost = gils_shift(model, x, y, alpha=a, gamma=g, eta=eta, steps=t, clamp=None)
        return x_t.detach().cpu(), float(cost.mean())

    def build(alpha, T, gamma=None, r=None):
        note = ""
        if r is not None:
            if T == 0:
                gamma, note = float("nan"), "<br><small>T = 0: no shift, ρ̂ = 0 for every γ</small>"
            else:
                gamma, rho_hit = gamma_for_radius(lambda g: shift(alpha, g, T)[1], r)
                reach = "; r out of reach in the stable γ range" if abs(rho_hit - r) > 0.05 * r else ""
                note = (f"<br><small>γ set by a log-γ scan + bisection so that ρ̂ ≈ r = {r:.3g} "
                        f"(beyond the paper, which fixes γ){reach}</small>")
        g = 1.0 if math.isnan(gamma) else gamma
        x_ref, _ = shift(0.0, g, T)
        x_t, rho = shift(alpha, g, T)
        free = shift(alpha, _GAMMA_RANGE[0], T)[1] if T > 0 else 0.0   # the (almost) unpenalised ascent
        if not math.isfinite(rho) or not bool(torch.isfinite(x_t).all()) or rho > free * (1 + 1e-6):
            note += "<br><b>the ascent diverged: η·γ too large for this model (lower γ or η)</b>"
        fig = viz.shift_field_figure(x, {"α = 0 (ADA/WRM)": x_ref, f"α = {alpha:.2f}": x_t}, y,
                                     grid=(gx, gy, cmap),
                                     title=f"GI-LS shift: T = {T}, η = {eta:.3g}, γ = {gamma:.3g}")
        text = (f"γ = {gamma:.3g} (β = 1/γ = {1.0 / gamma:.3g}), realised ρ̂ = mean ½‖f(x_T) − f(x)‖² = "
                f"{rho:.4g}{note}")
        return fig, text

    controls: dict[str, W.Widget] = {"alpha": ls_alpha_slider(alpha), "T": gils_steps_slider(steps)}
    if target_radius is None:
        controls["gamma"] = gils_gamma_slider(gamma)
    else:
        controls["r"] = target_radius_slider(target_radius)
    return _live_panel(build, controls, title="GI-LS: label smoothing rotates the worst-case shift")


# --------------------------------------------------------------------------- lesson 07: the capstone comparison
# Training is not live: the methods and knobs are chosen, then the Run button re-runs them on a small budget
# and redraws :func:`dro_lab.viz.comparison_figure` in place. Every α says which one it is (CVaR level,
# importance-sampling mixing, ALSO's optimism, label smoothing); β is KL-DRO's and HWS's (ALSO's τ = 1/β)
# and r is DONE's temperature. Same conventions as lessons 04–06: ``box.figure``, ``box.sliders``,
# ``box.readout``, plus ``box.methods`` (the selector) and ``box.button``.

__all__ += ["comparison_panel"]


def comparison_panel(run_fn: Callable[..., object], methods, *, summary=None, selected=None, beta: float = 10.0,
                     done_r: float = 1.0, cvar_alpha: float = 0.2, is_alpha: float = 0.5, also_alpha: float = 1.0,
                     ls_alpha: float = 0.1, reference: str = "ERM") -> W.Box:
    """Choose methods and β / r / α's, press Run, see average vs worst-group accuracy and cost redrawn.

    ``run_fn(methods=[...], beta=, done_r=, cvar_alpha=, is_alpha=, also_alpha=, ls_alpha=)`` trains (e.g.
    :func:`dro_lab.comparison.run_comparison` on a small budget) and returns the per-method summary
    (:func:`dro_lab.comparison.summarise`), or its rows (then they are summarised here). The figure is
    :func:`dro_lab.viz.comparison_figure` with the Pareto front of :func:`dro_lab.comparison.pareto_front`;
    ``summary`` (e.g. the notebook's headless result) is drawn before the first click. The read-out names
    the best worst-group method and the front. Printed output and errors of ``run_fn`` show under the button.
    """
    import plotly.graph_objects as go

    from . import viz
    from .comparison import pareto_front, summarise

    _check_callable(run_fn, "run_fn")
    options = list(methods)
    if not options:
        raise ValueError("methods must list at least one method name")
    chosen = list(selected) if selected is not None else options
    bad = [m for m in chosen if m not in options]
    if bad:
        raise ValueError(f"selected names methods not in methods: {bad}")
    selector = W.SelectMultiple(options=options, value=tuple(chosen), rows=min(len(options), 13),
                                description="methods", style=_STYLE, layout=W.Layout(width="360px"))
    is_slider = is_alpha_slider(is_alpha, description="α (IS uniform mixing)")
    is_slider.max = 0.99
    controls = {
        "beta": beta_slider(beta, min_exp=-1, max_exp=2, description="β (KL-DRO, HWS; ALSO τ = 1/β)"),
        "done_r": done_r_slider(done_r, description="r (DONE temperature)"),
        "cvar_alpha": cvar_alpha_slider(cvar_alpha, description="α (CVaR level)"),
        "is_alpha": is_slider,
        "also_alpha": optimism_slider(also_alpha, description="α (ALSO optimism)"),
        "ls_alpha": ls_alpha_slider(ls_alpha, description="α (label smoothing, LS / GI-LS)"),
    }
    for w in controls.values():
        w.continuous_update = False

    def draw(entries) -> tuple[object, str]:
        front = pareto_front(entries)
        fig = viz.comparison_figure(entries, front=front, reference=reference)
        best = max(entries, key=lambda e: e["worst_group_acc"])
        text = (f"best worst-group accuracy: <b>{best['method']}</b> ({best['worst_group_acc']:.3f}); "
                f"Pareto front: {', '.join(front)}")
        return fig, text

    if summary:
        fig0, text0 = draw(list(summary))
    else:
        fig0 = go.Figure(layout=dict(template="plotly_white", height=560,
                                     title="Choose methods and knobs, then press Run"))
        text0 = "not run yet"
    widget = go.FigureWidget(fig0)
    readout = W.HTML(text0)
    button = W.Button(description="Run", button_style="primary", icon="play",
                      tooltip="re-train the selected methods on a small budget (seconds per method)")
    log = W.Output()

    def on_click(_=None):
        values = {k: w.value for k, w in controls.items()}
        names = list(selector.value)
        if not names:
            readout.value = "<b>select at least one method</b>"
            return
        button.disabled = True
        readout.value = f"running {len(names)} method(s) …"
        try:
            with log:
                log.clear_output(wait=True)
                result = list(run_fn(methods=names, **values))
            if result and "n_seeds" not in result[0]:
                result = summarise(result, reference=reference)
            fig, text = draw(result)
            _redraw(widget, fig)
            readout.value = text
        finally:
            button.disabled = False

    button.on_click(on_click)
    box = _figure_box("Every method on one benchmark", {"methods": selector, **controls}, readout, widget,
                      extra=(button, log))
    box.methods, box.button = selector, button
    box.sliders = controls
    return box
