"""Lesson 07's set-up in one call: the methods to compare, the benchmark and every method's knobs, from the
lesson's checked parameters.

The set-up cell reads::

    setup = setup_lesson("07_comparison", globals(), choices={"methods": list(METHODS)})
    settings = comparison_settings(setup)
    method_names, BENCHMARK, RUN = settings.methods, settings.benchmark, settings.run

``RUN`` is what :func:`run_comparison`, the Run panel and the exercises train with (``run_comparison(method_names,
seeds=seeds, epochs=epochs, **RUN)``): one dictionary, so that every method gets the same budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dro_course.lesson_setup import LessonSetup
from dro_course.lessons.comparison.report import comparison_methods

#: The benchmark's parameters (:func:`make_benchmark`'s arguments besides the seed).
BENCHMARK_PARAMETERS = ("minority_classes", "keep_fraction", "groups")
#: The methods' knobs, passed to :func:`run_comparison` by the parameter's own name.
KNOB_PARAMETERS = (
    "batch_size", "lr", "beta", "done_r", "cvar_alpha", "is_alpha", "also_alpha", "ls_alpha", "group_step",
    "pi_lr", "eps", "attack_steps", "gils_gamma", "gils_eta", "gils_steps", "is_refresh_every",
)  # fmt: skip


@dataclass(frozen=True)
class ComparisonSettings:
    """What lesson 07 compares and how.

    Attributes:
        methods: the names of the methods to run, in the course's order, ERM (the reference) among them.
        benchmark: :func:`make_benchmark`'s arguments besides the seed.
        run: :func:`run_comparison`'s keyword arguments besides the methods, seeds and epochs: the benchmark
            (``data``), the model's width, the device, torch's threads and every method's knob. A plain dict: a
            student may try ``{**RUN, "beta": 30.0}``.
        seeds, epochs, panel_epochs: the paired seeds and the epochs of the experiment and of the Run panel.
    """

    methods: list[str]
    benchmark: Mapping[str, Any]
    run: Mapping[str, Any]
    seeds: tuple[int, ...]
    epochs: int
    panel_epochs: int

    def summary(self) -> str:
        """One line: how many methods, seeds and epochs, the threads, and the panel's budget."""
        threads = self.run["threads"]
        return (
            f"{len(self.methods)} methods × {len(self.seeds)} paired seed(s) {list(self.seeds)}, {self.epochs} "
            f"epochs each; {'torch default' if threads is None else threads} CPU thread(s); "
            f"the panel: 1 seed, {self.panel_epochs} epochs"
        )


def comparison_settings(setup: Mapping[str, Any]) -> ComparisonSettings:
    """The settings of lesson 07's comparison from its checked parameters.

    Args:
        setup: what :func:`dro_course.setup_lesson` returned (or any mapping with the lesson's parameters after
            filling: ``methods``, ``seeds``, ``epochs``, ``panel_epochs``, ``hidden``, ``device`` as a
            ``torch.device``, ``cpu_threads``, the benchmark's parameters and every knob).

    Returns:
        The :class:`ComparisonSettings`; ``run["threads"]`` is ``cpu_threads`` on a CPU and None on a GPU
        (torch's own), and ``run["data"]`` is the benchmark.

    Raises:
        TypeError: ``setup`` is neither a :class:`dro_course.LessonSetup` nor a mapping.
        KeyError: a parameter the comparison needs is missing from ``setup``.
        ValueError: ``methods`` names no known method or leaves out ERM (:func:`comparison_methods`).
    """
    if not isinstance(setup, (Mapping, LessonSetup)):
        raise TypeError(f"setup must be what setup_lesson returned (or a mapping), got {type(setup).__name__}")
    benchmark = {name: setup[name] for name in BENCHMARK_PARAMETERS}
    device = setup["device"]
    run = {
        "data": dict(benchmark),
        "hidden": (setup["hidden"],),
        "device": device,
        "threads": setup["cpu_threads"] if getattr(device, "type", device) == "cpu" else None,
        **{name: setup[name] for name in KNOB_PARAMETERS},
    }
    return ComparisonSettings(
        methods=comparison_methods(setup["methods"]),
        benchmark=benchmark,
        run=run,
        seeds=tuple(setup["seeds"]),
        epochs=setup["epochs"],
        panel_epochs=setup["panel_epochs"],
    )
