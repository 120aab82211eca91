"""The experiment's data for lesson 06, and the CPU settings of its tiny models.

:func:`experiment_data` builds what section 4 of the lesson reads: the experiment (:data:`GILS_EXPERIMENT`), its
configuration at the notebook's preset with the notebook's ``defects`` and ``epochs``, and the first seed's
training, validation and test splits — the same computation :func:`~dro_lab.experiments.run_experiment` makes for
its first seed. :func:`tiny_models_on_cpu` is the set-up cell's one line on the CPU settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import torch

from dro_lab._validation import check_choice, check_int
from dro_lab.experiments.papers.gils import DEFECT_SETS, GILS_EXPERIMENT
from dro_lab.experiments.protocol import Experiment, Splits

__all__ = ["ExperimentData", "experiment_data", "tiny_models_on_cpu"]


@dataclass(frozen=True)
class ExperimentData:
    """What section 4 of lesson 06 reads, built once by :func:`experiment_data`.

    Attributes:
        experiment: the paper's experiment, :data:`~dro_lab.experiments.papers.gils.GILS_EXPERIMENT`.
        config: its configuration at the preset, with ``overrides`` applied.
        overrides: the notebook's settings it gives a value, not None (``defects``, ``epochs``), passed on to
            :func:`~dro_lab.experiments.run_experiment` so that the run and the splits agree (read-only).
        splits: the first seed's training, validation and test splits.
    """

    experiment: Experiment
    config: dict
    splits: Splits
    overrides: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))


def experiment_data(
    dataset: str,
    preset: str,
    seed: int,
    *,
    defects: str | None = None,
    epochs: int | None = None,
    experiment: Experiment = GILS_EXPERIMENT,
) -> ExperimentData:
    """The experiment, its configuration and the first seed's splits at the notebook's parameters.

    ``defects`` (one of :data:`~dro_lab.experiments.papers.gils.DEFECT_SETS`) is used with ``dataset="digits"``
    only; ``epochs=None`` keeps the preset's. Loading the data downloads nothing.

    Raises:
        ValueError: ``defects`` is not a known set, or the experiment rejects ``dataset`` or ``preset``.
    """
    if not isinstance(experiment, Experiment):
        raise TypeError(f"experiment must be an Experiment, got {type(experiment).__name__}")
    seed = check_int(seed, "seed", low=0)
    chosen = {"defects": defects if dataset == "digits" else None, "epochs": epochs}
    if chosen["defects"] is not None:
        check_choice(chosen["defects"], "defects", DEFECT_SETS)
    if epochs is not None:
        check_int(epochs, "epochs", low=1)
    overrides = {k: v for k, v in chosen.items() if v is not None}
    config = experiment.config(dataset, preset, overrides)
    splits = experiment.data(dataset, seed, config)
    return ExperimentData(experiment, config, splits, MappingProxyType(overrides))


def tiny_models_on_cpu(device: torch.device | str) -> None:
    """On a CPU, the settings that suit the lesson's tiny models: torch uses one thread (splitting a small matrix
    across threads costs more than it saves) and flushes denormal numbers to zero (they slow the GI-LS ascent
    down). On any other device, nothing."""
    if torch.device(device).type == "cpu":
        torch.set_num_threads(1)
        torch.set_flush_denormal(True)
