"""Lesson 02's data: the imbalanced training set of the paper's experiment, built once by the set-up cell.

:func:`lesson_data` makes the same computation :func:`~dro_lab.experiments.run_experiment` makes for its first
seed (the experiment ``"hws"``, its configuration at the notebook's preset and settings, the seed's splits), and
adds what the lesson's cells read: the training and test sets on the device, the labels, the rare class's mask and
the share that uniform sampling would draw of it. ``print(data)`` is the set-up cell's summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import torch

from dro_lab._validation import as_float_vector, check_int
from dro_lab.data import class_counts
from dro_lab.experiments import EXPERIMENTS
from dro_lab.experiments.protocol import Experiment, Splits

__all__ = ["LessonData", "history_summary", "lesson_data"]


@dataclass(frozen=True)
class LessonData:
    """What lesson 02's cells read about its data (:func:`lesson_data`).

    Attributes:
        dataset: ``"digits"`` or ``"fashion-mnist"``.
        experiment: the paper's experiment, ``EXPERIMENTS["hws"]`` (run in section 5).
        config: its configuration at the notebook's preset, with ``chosen`` applied.
        chosen: the notebook's settings it gives a value, not None (``minority_class``, ``minority_count``,
            ``epochs``; read-only), passed on to ``run_experiment`` so that its runs and these splits agree.
        splits: the first seed's training, validation and test splits.
        train, test: the training and test sets on the lesson's device.
        labels: the training labels, on the CPU.
        minority_class: the under-represented class.
        is_minority: the training examples of that class (a boolean tensor, on the CPU).
        batch_size: the experiment's batch size ``b``.
    """

    dataset: str
    experiment: Experiment
    config: dict
    chosen: Mapping[str, Any]
    splits: Splits
    train: Any
    test: Any
    labels: torch.Tensor
    minority_class: int
    is_minority: torch.Tensor
    batch_size: int

    @property
    def n(self) -> int:
        """The training set's size."""
        return len(self.labels)

    @property
    def n_min(self) -> int:
        """The rare class's training images."""
        return int(self.is_minority.sum())

    @property
    def share_min(self) -> float:
        """The rare class's share of the training set: what uniform sampling draws of it."""
        return float(self.is_minority.double().mean())

    def lines(self) -> list[str]:
        c, test_c = self.minority_class, int((self.test.y == self.minority_class).sum())
        return [
            f"{self.dataset}: n = {self.n} training images, {self.n_min} of "
            f"class {c}; {len(self.test)} test images, {test_c} of class {c}; batch size b = {self.batch_size}",
            f"per-class training counts: {class_counts(self.splits.train).tolist()}",
        ]

    def __str__(self) -> str:
        return "\n".join(self.lines())


def lesson_data(
    dataset: str,
    preset: str,
    seed: int,
    device: torch.device | str,
    *,
    minority_class: int | None = None,
    minority_count: int | None = None,
    epochs: int | None = None,
) -> LessonData:
    """The experiment's data at the notebook's parameters (``None``: the preset's value); downloads nothing.

    Raises:
        ValueError: the experiment rejects ``dataset``, ``preset`` or a setting.
    """
    seed = check_int(seed, "seed", low=0)
    experiment = EXPERIMENTS["hws"]
    settings = dict(minority_class=minority_class, minority_count=minority_count, epochs=epochs)
    chosen = {k: v for k, v in settings.items() if v is not None}
    config = experiment.config(dataset, preset, chosen)
    splits = experiment.data(dataset, seed, config)
    labels = splits.train.y.cpu()
    minority = int(config["minority_class"])
    return LessonData(
        dataset=dataset,
        experiment=experiment,
        config=config,
        chosen=MappingProxyType(chosen),
        splits=splits,
        train=splits.train.to(device),
        test=splits.test.to(device),
        labels=labels,
        minority_class=minority,
        is_minority=labels == minority,
        batch_size=int(config["batch_size"]),
    )


def history_summary(history, data: LessonData, warm: Any) -> str:
    """Three lines on section 2's warm-up: its test accuracy overall and on the rare class (``warm`` is the record
    :func:`dro_lab.fit` returns), each class's mean training loss in ``history``, and how many of the
    ``data.n_min`` largest losses are the rare class's."""
    h = torch.from_numpy(as_float_vector(history, "history"))
    if h.numel() != data.n:
        raise ValueError(f"history must hold one loss per training example ({data.n}), got {h.numel()}")
    c, classes = data.minority_class, int(data.labels.max()) + 1
    counts = torch.bincount(data.labels, minlength=classes).clamp(min=1)
    per_class = torch.zeros(classes, dtype=torch.float64).index_add_(0, data.labels, h) / counts
    hardest = h.argsort(descending=True)[: data.n_min]
    last = warm.last
    return "\n".join(
        [
            f"after the warm-up: test accuracy {last['test_accuracy']:.3f}, "
            f"on class {c} {last['test_per_class_accuracy'][c]:.3f}",
            f"mean training loss per class: {np.round(per_class.numpy(), 2).tolist()}",
            f"loss history: mean {h.mean():.3f}, max {h.max():.3f}; the class-{c} images are "
            f"{int(data.is_minority[hardest].sum())} of the {data.n_min} largest losses",
        ]
    )
