"""The data of lesson 05's theory checks and training panel, built in one call of its set-up cell.

Sections 2–3 and the training panel of the lesson use the DONE experiment's imbalanced digits at its smoke sizes
(with the lesson's epochs and batches), whatever the preset: small enough to train in seconds, and built by the same
code as the experiment's data, which on the full preset are Fashion-MNIST instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dro_lab.experiments.papers.done import DONE_EXPERIMENT
from dro_lab.experiments.protocol import Splits

__all__ = ["LessonData", "lesson_data"]


@dataclass(frozen=True)
class LessonData:
    """What :func:`lesson_data` built.

    Attributes:
        config: the configuration of one run of the experiment on the digits (``DONE_EXPERIMENT.config``): what
            ``train_arm`` and the training panel are given.
        splits: the imbalanced digits of seed ``seed``: ``train`` (the minority classes thinned), ``val`` and
            ``test`` (every class whole); ``splits.info["train_per_class"]`` counts the training images per class.
    """

    config: dict
    splits: Splits

    def summary(self) -> str:
        """One line: the training images per class and the size of the test set."""
        per_class = self.splits.info.get("train_per_class")
        return (
            f"imbalanced digits: {len(self.splits.train)} training images (per class {per_class}), "
            f"{len(self.splits.test)} test images; minority classes {list(self.config['minority_classes'])}"
        )


def lesson_data(
    seed: int,
    *,
    epochs: int,
    batch_size: int,
    minority_classes: Sequence[int],
    imbalance_keep: float,
    eval_steps: int,
) -> LessonData:
    """The experiment's imbalanced digits for the lesson's theory checks and its training panel.

    Args:
        seed: draws the split (the same draw as the smoke experiment's run on the digits with this seed).
        epochs, batch_size: the training panel's epochs and batches (the lesson's parameters).
        minority_classes: the classes thinned in training (the test set keeps every class whole).
        imbalance_keep: the share of each minority class's training images kept (the paper's imbalance ratio).
        eval_steps: the PGD steps of the evaluation attack.

    Returns:
        :class:`LessonData` with the run's ``config`` and the ``splits``.
    """
    config = DONE_EXPERIMENT.config(
        "digits",
        "smoke",
        dict(
            epochs=epochs,
            batch_size=batch_size,
            minority_classes=tuple(minority_classes),
            imbalance_ratio=imbalance_keep,
            eval_steps=eval_steps,
        ),
    )
    return LessonData(config, DONE_EXPERIMENT.data("digits", seed, config))
