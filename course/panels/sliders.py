"""Every slider and toggle of the course, each labelled with its symbol and meaning ("β (KL inverse
temperature)", "α (CVaR level)"); course/glossary.md lists the labels verbatim."""

from __future__ import annotations

import ipywidgets as W

from dro_lab._validation import check_int, check_number, check_order

STYLE = {"description_width": "initial"}
WIDE = W.Layout(width="360px")


def beta_slider(
    value: float = 1.0,
    *,
    min_exp: float = -2,
    max_exp: float = 3,
    description: str = "β (KL/χ² inverse temperature)",
    continuous_update: bool = True,
) -> W.FloatLogSlider:
    """A log-scale β slider, 10^min_exp … 10^max_exp."""
    check_number(value, f"{'value'} ({description})", low=0.0)
    check_order(min_exp, max_exp, "min_exp", "max_exp")
    return W.FloatLogSlider(
        value=value,
        base=10,
        min=min_exp,
        max=max_exp,
        step=0.05,
        description=description,
        style=STYLE,
        layout=WIDE,
        continuous_update=continuous_update,
        readout_format=".3g",
    )


def radius_slider(
    value: float = 0.1,
    *,
    min_exp: float = -3,
    max_exp: float = 1,
    description: str = "r (divergence-ball radius)",
    continuous_update: bool = True,
) -> W.FloatLogSlider:
    """A log-scale radius slider."""
    check_number(value, f"{'value'} ({description})", low=0.0)
    check_order(min_exp, max_exp, "min_exp", "max_exp")
    return W.FloatLogSlider(
        value=value,
        base=10,
        min=min_exp,
        max=max_exp,
        step=0.05,
        description=description,
        style=STYLE,
        layout=WIDE,
        continuous_update=continuous_update,
        readout_format=".3g",
    )


def cvar_alpha_slider(
    value: float = 0.2, *, description: str = "α (CVaR level)", continuous_update: bool = True
) -> W.FloatSlider:
    """The CVaR level α ∈ (0, 1]: the worst α-fraction of the data is averaged."""
    check_number(value, f"{'value'} ({description})", low=0.0, low_open=True, high=1.0)
    return W.FloatSlider(
        value=value,
        min=0.01,
        max=1.0,
        step=0.01,
        description=description,
        style=STYLE,
        layout=WIDE,
        continuous_update=continuous_update,
        readout_format=".2f",
    )


def divergence_toggle(value: str = "kl", *, description: str = "divergence") -> W.ToggleButtons:
    """KL / χ² switch; its ``value`` is the library's name (``"kl"`` or ``"chi2"``)."""
    if value not in ("kl", "chi2"):
        raise ValueError(f"value (the divergence) must be 'kl' or 'chi2', got {value!r}")
    return W.ToggleButtons(
        options=[("KL", "kl"), ("χ²", "chi2")],
        value=value,
        description=description,
        style=STYLE,
        tooltips=[
            "Kullback-Leibler: q = softmax(β·ℓ)",
            "Pearson χ²: q = projection of 1/n + β·ℓ/(2n) onto the simplex",
        ],
    )


def _linear_slider(
    value: float, lo: float, hi: float, step: float, description: str, continuous_update: bool
) -> W.FloatSlider:
    return W.FloatSlider(
        value=value,
        min=lo,
        max=hi,
        step=step,
        description=description,
        style=STYLE,
        layout=WIDE,
        continuous_update=continuous_update,
        readout_format=".2f",
    )


def is_alpha_slider(
    value: float = 0.5, *, description: str = "α (uniform mixing)", continuous_update: bool = True
) -> W.FloatSlider:
    """The importance-sampling mixing α ∈ [0, 1]: p = (1 − α)·u + α·p^GN (0 uniform, ½ the paper's p^½, 1 p^GN)."""
    check_number(value, f"{'value'} ({description})", low=0.0, high=1.0)
    return _linear_slider(value, 0.0, 1.0, 0.01, description, continuous_update)


def weight_exponent_slider(
    value: float = 1.0, *, description: str = "weight exponent e (w = (1/(N·p))^e)", continuous_update: bool = True
) -> W.FloatSlider:
    """The importance-weight exponent e ∈ [0, 1] (1 unbiased, 0 "forgotten weights"); not DRO's β."""
    check_number(value, f"{'value'} ({description})", low=0.0, high=1.0)
    return _linear_slider(value, 0.0, 1.0, 0.01, description, continuous_update)


def optimism_slider(
    value: float = 1.0, *, description: str = "α (optimism)", continuous_update: bool = True
) -> W.FloatSlider:
    """ALSO / Mirror-Prox optimism α ∈ [0, 2]: ĝ_t = g_t + α(g_t − g_{t−1}); 0 is plain descent–ascent, 1 Popov."""
    check_number(value, f"{'value'} ({description})", low=0.0)
    return _linear_slider(value, 0.0, 2.0, 0.05, description, continuous_update)


def group_beta_slider(
    value: float = 10.0, *, description: str = "β = 1/τ (robustness)", continuous_update: bool = True
) -> W.FloatLogSlider:
    """β = 1/τ of the group-DRO KL penalty, log scale 10⁻² … 10³ (not Adam's β₁/β₂)."""
    return beta_slider(value, min_exp=-2, max_exp=3, description=description, continuous_update=continuous_update)


def done_r_slider(
    value: float = 1.0, *, description: str = "r (DONE temperature, loss units)", continuous_update: bool = True
) -> W.FloatLogSlider:
    """DONE's KL temperature r, log scale 10^−1.3 ≈ 0.05 … 100 (not a radius, not Adam's β)."""
    check_number(value, f"{'value'} ({description})", low=0.0, low_open=True)
    return beta_slider(value, min_exp=-1.3, max_exp=2, description=description, continuous_update=continuous_update)


def attack_eps_slider(
    value: float = 0.3,
    *,
    hi: float = 1.0,
    step: float = 0.01,
    description: str = "ε (attack radius)",
    continuous_update: bool = True,
) -> W.FloatSlider:
    """The attack radius ε ∈ [0, hi] (0 = no attack)."""
    check_number(value, f"{'value'} ({description})", low=0.0)
    check_order(0.0, hi, "0", "hi")
    return _linear_slider(value, 0.0, hi, step, description, continuous_update)


def attack_alpha_slider(
    value: float = 0.05,
    *,
    lo: float = 0.005,
    hi: float = 0.5,
    step: float = 0.005,
    description: str = "α (attack step)",
    continuous_update: bool = True,
) -> W.FloatSlider:
    """The attack's inner step size α ∈ [lo, hi] (not the CVaR level, not the learning rate)."""
    check_number(value, f"{'value'} ({description})", low=0.0, low_open=True)
    check_order(lo, hi, "lo", "hi")
    slider = _linear_slider(value, lo, hi, step, description, continuous_update)
    slider.readout_format = ".3f"
    return slider


def ls_alpha_slider(
    value: float = 0.3, *, hi: float = 0.5, description: str = "α (label smoothing)", continuous_update: bool = True
) -> W.FloatSlider:
    """The label-smoothing factor α ∈ [0, hi] (the paper's range is [0, 0.5]; (k−1)/k is uniform targets)."""
    check_number(value, f"{'value'} ({description})", low=0.0, high=1.0)
    check_order(0.0, hi, "0", "hi")
    return _linear_slider(value, 0.0, hi, 0.01, description, continuous_update)


def gils_steps_slider(
    value: int = 10, *, hi: int = 30, description: str = "T (ascent steps)", continuous_update: bool = True
) -> W.IntSlider:
    """The number T ∈ [0, hi] of GI-LS ascent steps (T = 0: no shift, plain LS)."""
    check_int(value, f"{'value'} ({description})", low=0)
    check_int(hi, f"{'hi'} ({description})", low=1)
    return W.IntSlider(
        value=value,
        min=0,
        max=hi,
        step=1,
        description=description,
        style=STYLE,
        layout=WIDE,
        continuous_update=continuous_update,
    )


def gils_gamma_slider(
    value: float = 1.0, *, description: str = "γ (transport penalty, β = 1/γ)", continuous_update: bool = True
) -> W.FloatLogSlider:
    """The GI-LS transport penalty γ, log scale 10⁻³ … 10³ (larger γ, smaller shift)."""
    check_number(value, f"{'value'} ({description})", low=0.0)
    return beta_slider(value, min_exp=-3, max_exp=3, description=description, continuous_update=continuous_update)


def target_radius_slider(
    value: float = 0.1,
    *,
    min_exp: float = -3,
    max_exp: float = 1,
    description: str = "r (target transport radius)",
    continuous_update: bool = True,
) -> W.FloatLogSlider:
    """The target radius r for the realised transport cost ρ̂ = mean ½‖f(x_T) − f(x)‖², log scale."""
    return radius_slider(
        value, min_exp=min_exp, max_exp=max_exp, description=description, continuous_update=continuous_update
    )
