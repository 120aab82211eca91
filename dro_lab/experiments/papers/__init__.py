"""Each paper's headline experiment as an :class:`~dro_lab.experiments.protocol.Experiment`.

:data:`EXPERIMENTS` is the one list: ``dro-lab experiment NAME`` and
:func:`dro_lab.experiments.run_experiment` look names up here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..protocol import Experiment
from .also import ALSO_EXPERIMENT
from .done import DONE_EXPERIMENT
from .gils import GILS_EXPERIMENT
from .hws import HWS_EXPERIMENT
from .importance import IMPORTANCE_EXPERIMENT

__all__ = ["EXPERIMENTS"]

#: name → experiment, in the course's order.
EXPERIMENTS: Mapping[str, Experiment] = MappingProxyType(
    {e.name: e for e in (HWS_EXPERIMENT, IMPORTANCE_EXPERIMENT, ALSO_EXPERIMENT, DONE_EXPERIMENT, GILS_EXPERIMENT)}
)
