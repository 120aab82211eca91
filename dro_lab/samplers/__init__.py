"""Samplers that learn from the losses.

* :mod:`~dro_lab.samplers.hardness` — :class:`HardnessWeightedSampler`, Fidon et al.'s SGD with
  hardness-weighted sampling (Algorithm 1);
* :mod:`~dro_lab.samplers.importance` — :class:`ImportanceSampler`, Lahire's importance-sampled SGD;
* :mod:`~dro_lab.samplers.table` — what both share: the per-example table, the generator, lazy epochs,
  the staleness guard and the DDP layout;
* :mod:`~dro_lab.samplers.sumtree` — the O(b log n) sum tree behind ``HardnessWeightedSampler(draw="tree")``.
"""

from __future__ import annotations

from .._moved import moved_attribute
from .hardness import HWS_DIVERGENCES, HWS_DRAWS, HardnessWeightedSampler
from .importance import IS_SCHEMES, ImportanceSampler, is_mixture, mixture_probabilities

__all__ = [
    "HWS_DIVERGENCES",
    "HWS_DRAWS",
    "HardnessWeightedSampler",
    "IS_SCHEMES",
    "ImportanceSampler",
    "is_mixture",
    "mixture_probabilities",
]


def __getattr__(name: str):  # a name that moved to the course package fails with its new home
    return moved_attribute(__name__, name)
