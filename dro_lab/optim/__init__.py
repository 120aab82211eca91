r"""Group-DRO optimizers as ``torch.optim.Optimizer``\ s, and the maths of their π step.

* :mod:`~dro_lab.optim.also` — :class:`ALSO` (Feoktistov et al., 2025);
* :mod:`~dro_lab.optim.mirror_prox` — :class:`OptimisticMirrorProx` (the paper's Algorithm 4) and :class:`DRAGO`;
* :mod:`~dro_lab.optim.group_weights` — the base they share: π as float64 log-weights, the sampling
  estimators, ``weighted_loss``, ``state_dict``;
* :mod:`~dro_lab.optim.prox` — pure maths: :func:`simplex_projection`, :func:`kl_prox_step`,
  :func:`bilinear_game_path`;
* :mod:`~dro_lab.optim.schedules` — learning-rate schedules as ``torch.optim.lr_scheduler`` factories.
"""

from __future__ import annotations

from .._moved import moved_attribute
from .also import ALSO, ALSO_MODES
from .group_weights import DISTRIBUTED, SAMPLING_SCHEMES, GroupWeightOptimizer
from .mirror_prox import DRAGO, OptimisticMirrorProx
from .prox import PI_OPTIONS, bilinear_game_path, group_prior, kl_prox_step, kl_to_prior, pi_star, simplex_projection
from .schedules import one_cycle, one_cycle_factor

__all__ = [
    "ALSO",
    "ALSO_MODES",
    "DISTRIBUTED",
    "SAMPLING_SCHEMES",
    "GroupWeightOptimizer",
    "DRAGO",
    "OptimisticMirrorProx",
    "PI_OPTIONS",
    "bilinear_game_path",
    "group_prior",
    "kl_prox_step",
    "kl_to_prior",
    "pi_star",
    "simplex_projection",
    "one_cycle",
    "one_cycle_factor",
]


def __getattr__(name: str):  # a name that moved to the course package fails with its new home
    return moved_attribute(__name__, name)
