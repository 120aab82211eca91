"""What the reader's own run of lesson 03's experiment shows only because it is small.

The experiment records the test accuracy at the end of a run as ``accuracy`` and epoch by epoch as
``test_accuracy``; :func:`accuracy_artefacts` hands :func:`dro_course.beside.smoke_artefacts` the arms a figure
draws, and says so when a small run shows no artefact but still ranks nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from dro_course.beside import is_illustration, live_label, smoke_artefacts
from dro_lab._validation import check_nonempty
from dro_lab.experiments.result import ExperimentResult

__all__ = ["CHANCE", "accuracy_artefacts", "run_label"]

#: The test accuracy of a guess on the experiment's two balanced classes.
CHANCE = 0.5


def accuracy_artefacts(live: ExperimentResult, methods: Sequence[str] | None = None) -> str:
    """Markdown for under a figure of ``live``'s test accuracy: of ``methods`` (default: every arm, else the arms the
    figure draws), those at chance (50 %) and those whose accuracy falls over the run, when ``live`` is a small run
    (:func:`dro_course.beside.smoke_artefacts`), or a sentence saying that a run this small ranks nothing when none
    does; ``""`` for a run large enough to carry verdicts.

    Raises:
        TypeError: ``live`` is not an ExperimentResult.
        ValueError: a method ``live`` does not have.
    """
    if not isinstance(live, ExperimentResult):
        raise TypeError(f"live must be an ExperimentResult, got {type(live).__name__}")
    drawn = set(live.methods if methods is None else methods)
    check_nonempty(drawn, "methods")
    if drawn - set(live.methods):
        raise ValueError(f"methods must be among the run's {live.methods}, got {sorted(drawn)}")
    runs = [r for r in live.runs if r["method"] in drawn]
    shown = dataclasses.replace(live, methods=[m for m in live.methods if m in drawn], runs=runs)
    notes = smoke_artefacts(shown, "accuracy", curve="test_accuracy", chance=CHANCE)
    if notes or not is_illustration(live):
        return notes
    seeds, epochs = len(live.seeds), live.config.get("epochs", "?")
    return (f"*An illustration of the protocol ({live.preset} preset, {epochs} epochs, {seeds} seed"
            f"{'s' if seeds != 1 else ''}): no arm drawn here sits at chance or falls, but a run this short ranks "
            "nothing. The reference run shows the trained result.*\n")  # fmt: skip


#: The label of the reader's run in a figure: "Your run (an illustration)" for a run too small to carry a verdict.
run_label = live_label
