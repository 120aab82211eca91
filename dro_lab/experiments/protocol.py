"""What a paper's experiment is made of: its arms (methods with tuning grids), its claims, its data and model.

An :class:`Experiment` is a plain description; :func:`dro_lab.experiments.run_experiment` runs it with one
fair protocol for every paper:

1. **Tune** every arm with the same effort on a validation split of the training distribution (never the test
   set), on one seed: the same number of trials for every arm (an arm whose grid is smaller tries its whole
   grid), at least a quarter of every grid (:data:`MIN_COVERAGE`), grids within 4× of each other in size
   (:data:`MAX_GRID_RATIO`), and every value of every knob tried (:meth:`Arm.settings`: a seeded Latin design
   on the grid whose first point is the arm's default), so every arm tries every learning rate of the shared
   grid. :func:`tuning_effort` measures this and :func:`effort_problems` names what falls short. Each trial
   scores the mean of the selection metric over the last ``average_last`` epochs.
2. **Run** every arm with its chosen setting on every seed. Seed ``s`` fixes the data draw, the model's
   initialisation and the batch order, the same for every arm: the runs are paired. The final metrics are
   the mean over the last ``average_last`` epochs (default 1), under the paper's learning-rate schedule
   (``lr_schedule``) where it used one.
3. **Judge** each :class:`Claim` from the paired per-seed differences with
   :func:`dro_lab.experiments.judge` — against 0, against the paper's effect and Holm-adjusted over the
   paper's claims.

Why a grid and not a sequential sampler (optuna's TPE): at a quarter of a grid of 12–60 points every value of
every knob is tried, the trials are independent (two run at once on two cores) and the coverage is exact;
TPE pays off at budgets of hundreds of trials, which these CPU runs cannot afford.
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

__all__ = [
    "Arm",
    "Claim",
    "Experiment",
    "Splits",
    "FIT_KNOBS",
    "MIN_COVERAGE",
    "MAX_GRID_RATIO",
    "tuning_effort",
    "effort_problems",
]

#: Knobs of an :class:`Arm` that go to :func:`dro_lab.fit`; every other knob goes to the strategy.
FIT_KNOBS = frozenset({"lr", "momentum", "weight_decay", "optimizer", "batch_size", "epochs"})
#: The least share of its grid an arm's trials cover (the whole grid when it has fewer points than the trials).
MIN_COVERAGE = 0.25
#: The largest ratio between two tuned arms' grid sizes: equal trials on grids 100× apart is not equal tuning.
MAX_GRID_RATIO = 4.0


@dataclass(frozen=True)
class Arm:
    """One method of an experiment.

    Attributes:
        name: the name in tables and claims (``"HWS"``, ``"ERM"``).
        strategy: a class name of :data:`dro_lab.strategies.STRATEGIES`, or ``None`` for ERM.
        options: fixed keyword arguments: the strategy's, and :data:`FIT_KNOBS` for :func:`dro_lab.fit`. A value
            that is a function of the run's configuration (a module-level function, so that runs in other
            processes can receive it: ``half_of_the_epochs(config)``) is called with it at training time.
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
        """``min(trials, grid_size)`` distinct settings of the grid: its first point, then a seeded Latin design.

        Trial ``k`` takes, for every knob, the ``k``-th value of a seeded order of its values (the first value
        first, reshuffled each time the order is used up), so that every value of a knob with at most ``trials``
        values is tried; a setting drawn twice is replaced by a seeded draw among the unused points.
        """
        check_int(trials, "trials", low=1)
        keys, rng = list(self.grid), np.random.default_rng(seed)
        count = min(trials, self.grid_size)
        orders = {}
        for k in keys:
            values = list(self.grid[k])
            cycles = [[0, *(1 + rng.permutation(len(values) - 1))]]
            while sum(map(len, cycles)) < count:
                cycles.append(list(rng.permutation(len(values))))
            orders[k] = [values[i] for cycle in cycles for i in cycle]
        points = [dict(zip(keys, combo)) for combo in itertools.product(*(self.grid[k] for k in keys))]
        chosen: list[dict] = []
        for step in range(count):
            setting = {k: orders[k][step] for k in keys}
            if setting in chosen:
                unused = [p for p in points if p not in chosen]
                setting = unused[int(rng.integers(len(unused)))]
            chosen.append(setting)
        return chosen

    def split(self, setting: Mapping, config: Mapping | None = None) -> tuple[dict, dict]:
        """``(strategy options, fit options)`` of one setting, the arm's fixed options included (those that are
        functions of the configuration called with ``config``)."""
        merged = {**{k: v(config) if callable(v) else v for k, v in self.options.items()}, **setting}
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
        paper_effect: the paper's own difference, oriented and in the metric's units (``0.0576`` for "+5.76
            points"), where it gives one: the interval is also read against it
            (:func:`dro_lab.experiments.effect_verdict`).
        band: ``(low, high)`` for a claim the paper states as a range ("2.0–2.4× the time": ``(log 2.0, log 2.4)``
            on a log-ratio): judged with :func:`dro_lab.experiments.judge_band` instead of ``threshold``.
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
    paper_effect: float | None = None
    band: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.band is not None:
            low, high = (float(v) for v in self.band)
            if not low < high:
                raise ValueError(f"claim {self.text!r}: band must be (low, high) with low < high, got {self.band!r}")
            object.__setattr__(self, "band", (low, high))  # a JSON list reads back as the same tuple

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
        plain: the arm that trains plainly (ERM, cross-entropy, AT): a claim against a baseline that falls below
            it says so beside its verdict (beating a broken baseline is no finding).
        tail_metrics: the metrics measured at each of the last ``average_last`` epochs and averaged with the last
            one's, and what a tuning trial scores: a cheaper ``metrics`` (without an expensive attack measured
            once at the end); ``None``: ``metrics``.
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
    tail_metrics: Callable[[torch.nn.Module, Any, Mapping], dict] | None = None
    plain: str | None = None

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


def tuning_effort(experiment: Experiment, trials: int) -> dict[str, dict]:
    """Per arm: its grid (knob → values), ``grid_size``, ``trials`` (``min(trials, grid_size)``) and ``coverage``
    (the share of the grid tried) — what a result records and ``dro-lab reference`` prints."""
    check_int(trials, "trials", low=1)
    return {
        arm.name: {
            "grid": {k: list(v) for k, v in arm.grid.items()},
            "grid_size": arm.grid_size,
            "trials": min(trials, arm.grid_size),
            "coverage": min(trials, arm.grid_size) / arm.grid_size,
        }
        for arm in experiment.arms
    }


def effort_problems(experiment: Experiment, trials: int) -> list[str]:
    """What keeps ``trials`` per arm from being equal tuning effort (empty when none): a grid covered below
    :data:`MIN_COVERAGE`, a knob with values never tried, tuned grids more than :data:`MAX_GRID_RATIO` apart."""
    effort, problems = tuning_effort(experiment, trials), []
    for name, e in effort.items():
        if e["coverage"] < MIN_COVERAGE:
            problems.append(f"{name}: {e['trials']} of {e['grid_size']} settings ({e['coverage']:.0%})")
        short = [k for k, v in e["grid"].items() if len(v) > e["trials"]]
        if short:
            problems.append(f"{name}: {e['trials']} trials cannot try every value of {short}")
    sizes = [e["grid_size"] for e in effort.values() if e["grid_size"] > 1]
    if sizes and max(sizes) > MAX_GRID_RATIO * min(sizes):
        problems.append(f"grid sizes {min(sizes)}–{max(sizes)} are more than {MAX_GRID_RATIO:g}× apart")
    return problems
