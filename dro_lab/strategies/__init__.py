"""Every training method of the course, as a :class:`~dro_lab.Strategy` for :func:`dro_lab.fit`.

This file is the one list of methods: :data:`FAMILIES` groups them as the course teaches them and
:data:`STRATEGIES` maps each class name to its class. A new method goes into the module of its family
and into :data:`FAMILIES`; the determinism and checkpoint tests, and the course's every-method comparison,
pick from here.

* :mod:`~dro_lab.strategies.basic` — ERM, mini-batch DRO through a robust loss, OHEM;
* :mod:`~dro_lab.strategies.sampling` — hardness-weighted sampling (Fidon et al.), importance sampling (Lahire);
* :mod:`~dro_lab.strategies.group_dro` — ALSO / Optimistic Mirror-Prox / DRAGO over groups, transformations
  or workers as groups;
* :mod:`~dro_lab.strategies.baselines` — the ALSO paper's baselines;
* :mod:`~dro_lab.strategies.adversarial` — adversarial training: Madry's AT, DONE (Sow et al.), GAIRAT, MAIL;
* :mod:`~dro_lab.strategies.smoothing` — label-smoothing DRO (GI-LS, Wang et al.) and its baselines.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..engine.strategy import Strategy
from .adversarial import DONE_INNER, AdversarialTrainingStrategy, DONEStrategy, GAIRATStrategy, MAILStrategy
from .baselines import (
    FastDROStrategy,
    OnlineGroupDROStrategy,
    RecoverStrategy,
    SpectralRiskStrategy,
    StaticWeightsStrategy,
    UpsamplingStrategy,
)
from .basic import ERM, OHEMStrategy, RobustLossStrategy
from .group_dro import (
    GROUP_DRO_METHODS,
    GROUPINGS,
    PRIORS,
    CompressedWorkersStrategy,
    GroupDROStrategy,
    TransformGroupsStrategy,
)
from .sampling import HardnessWeightedStrategy, ImportanceSamplingStrategy
from .smoothing import (
    AttackAugmentStrategy,
    CutMixStrategy,
    CutoutStrategy,
    GILSStrategy,
    LabelSmoothingStrategy,
    MixupStrategy,
)

#: The training methods by family, in the course's order.
FAMILIES: Mapping[str, tuple[type[Strategy], ...]] = MappingProxyType(
    {
        "empirical and robust losses": (ERM, RobustLossStrategy, OHEMStrategy),
        "sampling": (HardnessWeightedStrategy, ImportanceSamplingStrategy),
        "group DRO": (GroupDROStrategy, TransformGroupsStrategy, CompressedWorkersStrategy),
        "group-DRO baselines": (
            UpsamplingStrategy,
            StaticWeightsStrategy,
            SpectralRiskStrategy,
            FastDROStrategy,
            RecoverStrategy,
            OnlineGroupDROStrategy,
        ),
        "adversarial training": (AdversarialTrainingStrategy, DONEStrategy, GAIRATStrategy, MAILStrategy),
        "label smoothing and data mixing": (
            GILSStrategy,
            LabelSmoothingStrategy,
            MixupStrategy,
            CutMixStrategy,
            CutoutStrategy,
            AttackAugmentStrategy,
        ),
    }
)

#: Every training method: class name -> class.
STRATEGIES: Mapping[str, type[Strategy]] = MappingProxyType(
    {cls.__name__: cls for family in FAMILIES.values() for cls in family}
)

__all__ = [
    "FAMILIES",
    "STRATEGIES",
    *STRATEGIES,
    "DONE_INNER",
    "GROUP_DRO_METHODS",
    "GROUPINGS",
    "PRIORS",
]
