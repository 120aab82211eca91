"""Widget panels that only wire sliders to the pure figure builders of :mod:`dro_course.figures`.

The logic lives in plain functions (testable without a front-end); a panel is ``HBox([VBox(controls), figure])``
redrawn when a control moves. Anything that trains sits behind a Run button. ipywidgets is imported here, never
never by dro_lab. Widgets always say which symbol they are: "β (KL inverse temperature)", "α (CVaR level)".

- :mod:`.sliders`: every slider and toggle of the course;
- :mod:`.panels`: the generic panels (live, behind a Run button) and the in-place FigureWidget redraw;
- :mod:`.weights`: the foundations panel (lesson 01; the 2-D toy's Run panel is the lesson's own, as are those of
  lessons 02, 03 and 07, the capstone's: :mod:`dro_course.lessons`);
- :mod:`.group_dro`: the bilinear game, τ and π-trajectory panels, ALSO's experiment as it trains (lesson 04);
- :mod:`.adversarial`: DONE's weights and the PGD toy (lesson 05);
- :mod:`.smoothing`: the GI-LS toy panel (lesson 06; ``gamma_for_radius``, re-exported here, is
  :mod:`dro_lab.attacks`'s);
- :mod:`.training`: :func:`training_panel`, a network's curves drawn epoch by epoch as it trains;
  :func:`experiment_training_panel`, the same over one paper's experiment (a method menu and its knobs);
- :mod:`.twin`: every panel's static twin — ``box.static_twin``, a plotly figure with its own sliders over
  precomputed knob values, carried in the displayed output's metadata for the course site — and
  :func:`front_end`, which says where the outputs are drawn (Colab and VS Code get the twin instead of the
  live panel, with a note saying why).
"""

from __future__ import annotations

from dro_course.panels.adversarial import attack_toy_panel, done_r_panel
from dro_course.panels.group_dro import also_training_panel, bilinear_panel, pi_run_panel, tau_panel
from dro_course.panels.panels import panel, run_panel
from dro_course.panels.sliders import (
    attack_alpha_slider,
    attack_eps_slider,
    beta_slider,
    cvar_alpha_slider,
    divergence_toggle,
    done_r_slider,
    gils_gamma_slider,
    gils_steps_slider,
    group_beta_slider,
    is_alpha_slider,
    ls_alpha_slider,
    optimism_slider,
    radius_slider,
    target_radius_slider,
    weight_exponent_slider,
)
from dro_course.panels.smoothing import gils_toy_panel
from dro_course.panels.training import experiment_training_panel, training_panel
from dro_course.panels.twin import front_end
from dro_course.panels.weights import weights_panel
from dro_lab.attacks import gamma_for_radius

__all__ = [
    "beta_slider",
    "radius_slider",
    "cvar_alpha_slider",
    "divergence_toggle",
    "panel",
    "run_panel",
    "training_panel",
    "experiment_training_panel",
    "weights_panel",
    "is_alpha_slider",
    "weight_exponent_slider",
    # lesson 04: group DRO
    "optimism_slider",
    "group_beta_slider",
    "bilinear_panel",
    "tau_panel",
    "pi_run_panel",
    "also_training_panel",
    # lesson 05: DONE
    "done_r_slider",
    "attack_eps_slider",
    "attack_alpha_slider",
    "done_r_panel",
    "attack_toy_panel",
    # lesson 06: GI-LS
    "ls_alpha_slider",
    "gils_steps_slider",
    "gils_gamma_slider",
    "target_radius_slider",
    "gamma_for_radius",
    "gils_toy_panel",
    # static twins and the front-end
    "front_end",
]
