"""What a paper's experiment is made of: its arms (methods with tuning grids), its claims, its data and model.

An :class:`Experiment` is a plain description; :func:`dro_lab.experiments.run_experiment` runs it with one
fair protocol for every paper:

1. **Tune** every arm with the same number of trials on a validation split cut from the training set (never
   the test set), on one seed. The trials come from the arm's grid, whose first point is the arm's special
   case or default (η_π = 0 for ALSO, T = 0 for GI-LS …); the rest is a seeded sample of the grid.
2. **Run** every arm with its chosen setting on every seed. Seed ``s`` fixes the data draw, the model's
   initialisation and the batch order, the same for every arm: the runs are paired.
3. **Judge** each :class:`Claim` from the paired per-seed differences with
   :func:`dro_lab.experiments.judge`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .._validation import check_int

__all__ = ["Arm", "Claim", "Experiment", "Splits", "FIT_KNOBS"]

#: Knobs of an :class:`Arm` that go to :func:`dro_lab.fit`; every other knob goes to the strategy.
FIT_KNOBS = frozenset({"lr", "momentum", "weight_decay", "optimizer", "batch_size", "epochs"})


@dataclass(frozen=True)
class Arm:
    """One method of an experiment.

    Attributes:
        name: the name in tables and claims (``"HWS"``, ``"ERM"``).
        strategy: a class name of :data:`dro_lab.strategies.STRATEGIES`, or ``None`` for ERM.
        options: fixed keyword arguments: the strategy's, and :data:`FIT_KNOBS` for :func:`dro_lab.fit`.
        grid: the tuning grid, knob → values (log-spaced where the knob is a scale). Its first point (the first
            value of every knob) is always tried: put the arm's default or special case first.
    """

    name: str
    strategy: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    grid: Mapping[str, tuple] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"an arm needs a non-empty name, got {self.name!r}")
        for knob, values in self.grid.items():
            if not isinstance(values, (tuple, list)) or not values:
                raise ValueError(f"arm {self.name!r}: grid[{knob!r}] must be a non-empty tuple, got {values!r}")

    @property
    def grid_size(self) -> int:
        """How many settings the grid holds (1 for an arm without a grid)."""
        return math.prod(len(v) for v in self.grid.values())

    def settings(self, trials: int, seed: int) -> list[dict]:
        """``trials`` settings of the grid: its first point, then a seeded sample of the others."""
        check_int(trials, "trials", low=1)
        if trials > self.grid_size:
            raise ValueError(
                f"arm {self.name!r} has {self.grid_size} settings in its grid, fewer than trials={trials}: "
                "every arm gets the same number of trials, so lower trials"
            )
        keys = list(self.grid)
        points = [dict(zip(keys, combo)) for combo in itertools.product(*(self.grid[k] for k in keys))]
        rest = np.random.default_rng(seed).permutation(len(points) - 1)[: trials - 1] + 1
        return [points[0]] + [points[i] for i in rest]

    def split(self, setting: Mapping) -> tuple[dict, dict]:
        """``(strategy options, fit options)`` of one setting, the arm's fixed options included."""
        merged = {**self.options, **setting}
        fit_options = {k: v for k, v in merged.items() if k in FIT_KNOBS}
        return {k: v for k, v in merged.items() if k not in FIT_KNOBS}, fit_options


@dataclass(frozen=True)
class Claim:
    """A claim of the paper, as a sign on a final metric: ``method`` beats ``baseline`` on ``metric``.

    Attributes:
        text: the claim in a sentence, for tables (``"HWS raises the minority class's accuracy over ERM"``).
        metric: a key of the experiment's final metrics.
        method, baseline: two arm names.
        higher_is_better: ``False`` for a cost or an error (then the difference is baseline − method).
        threshold: the claim is "the oriented difference is above this" (in the metric's units).
        paper: where the paper states it, and its number (section, figure or table).
        scale, unit: how the difference is shown: ``100`` and ``" points"`` for a fraction (an accuracy), ``1``
            and ``""`` for a loss or a log-ratio.
    """

    text: str
    metric: str
    method: str
    baseline: str
    higher_is_better: bool = True
    threshold: float = 0.0
    paper: str = ""
    scale: float = 100.0
    unit: str = " points"

    def orient(self, method_values, baseline_values) -> np.ndarray:
        """The paired differences, positive where they support the claim."""
        a, b = np.asarray(method_values, dtype=float), np.asarray(baseline_values, dtype=float)
        return a - b if self.higher_is_better else b - a


@dataclass
class Splits:
    """What an experiment's data function returns for one seed.

    ``train`` is what the final runs train on, ``val`` a split of the training distribution that tuning scores
    (never the test set), ``test`` what the final metrics are measured on; ``info`` says what was drawn
    (sizes per class, the minority class …) and goes into the result.
    """

    train: Any
    val: Any
    test: Any
    info: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Experiment:
    """A paper's headline experiment.

    Attributes:
        name: the registry key and CLI name (``"hws"``).
        title: one line for tables and pages.
        paper: the paper, its section and the figure or table this experiment re-runs.
        arms: the methods, the baseline(s) included.
        claims: what :func:`judge` decides.
        data: ``data(dataset, seed, config) -> Splits``; ``dataset`` is ``"digits"`` or ``"fashion-mnist"``.
        model: ``model(train, config) -> nn.Module`` (built after the global seed is set: paired inits).
        metrics: ``metrics(model, dataset, config) -> {name: float}``, the final metrics (also scored on ``val``
            during tuning).
        select: the final metric that tuning maximises on the validation split.
        curves: ``curves(record, config) -> {name: float}`` from :func:`dro_lab.fit`'s per-epoch record (the
            test metrics the figures draw along training).
        presets: dataset → preset → config (sizes, epochs, batch size, trials …): the defaults a run starts from.
        summaries: ``summaries(curves, config) -> {name: float}``, final metrics read off a run's curves (an
            area under the learning curve, the largest early dip …); ``None`` for none.
    """

    name: str
    title: str
    paper: str
    arms: tuple[Arm, ...]
    claims: tuple[Claim, ...]
    data: Callable[[str, int, Mapping], Splits]
    model: Callable[[Any, Mapping], torch.nn.Module]
    metrics: Callable[[torch.nn.Module, Any, Mapping], dict]
    select: str
    curves: Callable[[dict, Mapping], dict]
    presets: Mapping[str, Mapping[str, Mapping]]
    summaries: Callable[[Mapping, Mapping], dict] | None = None

    def __post_init__(self) -> None:
        names = [a.name for a in self.arms]
        if len(set(names)) != len(names):
            raise ValueError(f"experiment {self.name!r}: arm names repeat: {names}")
        for claim in self.claims:
            missing = {claim.method, claim.baseline} - set(names)
            if missing:
                raise ValueError(f"experiment {self.name!r}: claim {claim.text!r} names unknown arms {missing}")

    def arm(self, name: str) -> Arm:
        """The arm called ``name``."""
        for a in self.arms:
            if a.name == name:
                return a
        raise ValueError(f"experiment {self.name!r} has no arm {name!r}; arms: {[a.name for a in self.arms]}")

    def config(self, dataset: str, preset: str, overrides: Mapping | None = None) -> dict:
        """The run's configuration: the preset's values for ``dataset``, then ``overrides``."""
        if dataset not in self.presets:
            raise ValueError(f"experiment {self.name!r} runs on {sorted(self.presets)}, not {dataset!r}")
        presets = self.presets[dataset]
        if preset not in presets:
            raise ValueError(f"preset must be one of {sorted(presets)}, got {preset!r}")
        config = dict(presets[preset])
        unknown = set(overrides or {}) - set(config)
        if unknown:
            raise ValueError(f"unknown settings {sorted(unknown)} for {self.name!r}; known: {sorted(config)}")
        config.update(overrides or {})
        return config
