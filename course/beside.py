"""A student's live run shown beside the shipped reference run of the same experiment.

A lesson runs its paper's experiment at the notebook's preset; on the smoke preset that is seconds of training on a
small set, an illustration of the protocol and nothing to judge a paper by. :func:`beside_reference` therefore
puts the reference run (Fashion-MNIST, paired seeds, its command and date) first, with its verdicts, and the live
run under it, labelled with its preset and seeds; verdicts are drawn from the live run only when it is large
enough to carry one (:func:`is_illustration`). :data:`REFERENCE_FOR_LESSON` names the reference of each lesson
that runs a paper's experiment (the library knows the references by name only).
"""

from __future__ import annotations

import warnings

import numpy as np

from dro_lab.experiments.reference import Reference, _shown, load_reference
from dro_lab.experiments.result import ExperimentResult, verdict_table

__all__ = [
    "REFERENCE_FOR_LESSON",
    "beside_reference",
    "claims_in_words",
    "is_illustration",
    "live_label",
    "smoke_artefacts",
]

#: What each verdict means, in a sentence a student reads beside the numbers.
_MEANING = {
    "held": "held — the whole interval is on the claim's side",
    "did not hold": "did not hold — the whole interval is on the other side: the opposite of the claim",
    "not resolved": "not resolved — the interval reaches both sides, so these seeds cannot tell",
    "identical": "nothing to judge — the two methods made exactly the same runs",
    "not judged": "not judged — too few paired seeds",
}

#: Lesson id -> the name of its shipped reference (:data:`dro_lab.experiments.REFERENCES`), one per paper lesson.
REFERENCE_FOR_LESSON: dict[str, str] = {
    "02_hardness_weighted_sampling": "hws",
    "03_importance_sampling": "importance",
    "04_group_dro_also": "also",
    "05_adversarial_done": "done",
    "06_label_smoothing_dro": "gils",
}


#: The same words for a claim stated as the paper's range (a cost ratio): inside or outside the band.
_IN_BAND = {
    "held": "held — the whole interval lies inside the paper's range",
    "did not hold": "did not hold — the whole interval lies outside the paper's range",
    "not resolved": "not resolved — the interval reaches both inside and outside the paper's range",
}


def is_illustration(result: ExperimentResult, *, min_seeds: int = 3) -> bool:
    """True when no verdict should be drawn from ``result``: the smoke preset, or fewer than ``min_seeds`` seeds."""
    if not isinstance(result, ExperimentResult):
        raise TypeError(f"result must be an ExperimentResult, got {type(result).__name__}")
    return result.preset == "smoke" or len(result.seeds) < min_seeds


def _live_heading(result: ExperimentResult, illustration: bool) -> str:
    seeds = len(result.seeds)
    what = f"{result.dataset}, {seeds} seed{'s' if seeds != 1 else ''}, {result.preset} preset"
    if illustration:
        return (
            f"### Your run ({what}): an illustration\n\n"
            f"The {result.preset} preset with {seeds} seed{'s' if seeds != 1 else ''} shows the protocol at work, "
            "not the paper's effect: no verdict is drawn from it. The verdicts are the reference run's, above. "
            "Run the lesson with `-p preset full` (or the reference's command) for a run that can carry one."
        )
    return f"### Your run ({what})\n\nIts verdicts come from its own paired seeds, by the same rule as the reference's."


def _methods_list(methods: list[str]) -> str:
    return methods[0] if len(methods) == 1 else ", ".join(methods[:-1]) + " and " + methods[-1]


def live_label(live: ExperimentResult, *, min_seeds: int = 3) -> str:
    """ "Your run (an illustration)" for a run too small to judge (:func:`is_illustration`), else "Your run": the
    words a figure of the student's run starts its title with."""
    return "Your run (an illustration)" if is_illustration(live, min_seeds=min_seeds) else "Your run"


def _curve_names(live: ExperimentResult) -> set[str]:
    return {name for run in live.runs for name in run.get("curves", {})}


def _check_artefact_options(live, metric, chance, margin, curve) -> None:
    if not isinstance(live, ExperimentResult):
        raise TypeError(f"live must be an ExperimentResult, got {type(live).__name__}")
    if metric not in live.metric_names():
        raise ValueError(f"no final metric {metric!r}; metrics: {live.metric_names()}")
    if curve is not None and curve not in _curve_names(live):
        raise ValueError(f"no per-epoch curve {curve!r}; curves: {sorted(_curve_names(live))}")
    if chance is not None and not 0.0 <= chance <= 1.0:
        raise ValueError(f"chance must be in [0, 1], got {chance!r}")
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"margin must be in [0, 1), got {margin!r}")


def _mean(values) -> float:
    with warnings.catch_warnings():  # a method whose every seed is missing: NaN, without a warning in the page
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(np.nanmean(values))


def _falling(live: ExperimentResult, curve: str, margin: float) -> list[str]:
    """The methods whose mean curve ends more than ``margin`` below where it started."""
    if curve not in _curve_names(live):
        return []  # a metric measured only at the end has no curve
    falling = []
    for m in live.methods:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            per_epoch = np.nanmean(live.curve(curve, m), axis=0)
        if len(per_epoch) > 1 and per_epoch[-1] < per_epoch[0] - margin:
            falling.append(m)
    return falling


def smoke_artefacts(
    live: ExperimentResult,
    metric: str,
    *,
    chance: float | None = None,
    margin: float = 0.02,
    min_seeds: int = 3,
    curve: str | None = None,
    reference: bool = True,
) -> str:
    """Markdown: what ``live``'s ``metric`` shows only because the run is small, in a sentence a student reads
    under its figure; ``""`` when ``live`` is large enough to judge (:func:`is_illustration`) or shows none.

    Three artefacts are named: every method at 0 (an empty panel), methods within ``margin`` of ``chance`` (the
    accuracy of a guess; a ``chance`` of 0 reads "at 0"), and methods whose per-epoch mean ends more than ``margin``
    below where it started. ``curve`` names that per-epoch metric where it differs from the final one (lesson 05's
    ``test_accuracy`` curve ends in its final ``clean_accuracy``); by default it is ``metric``. With ``reference``
    the note points the reader to the reference run shown above the figure.

    Raises:
        TypeError: ``live`` is not an ExperimentResult.
        ValueError: ``metric`` is not a final metric of ``live``, ``curve`` not one of its curves, ``chance`` not
            in [0, 1] or ``margin`` not in [0, 1).
    """
    _check_artefact_options(live, metric, chance, margin, curve)
    if not is_illustration(live, min_seeds=min_seeds) or not live.methods:
        return ""
    finals = {m: _mean(v) for m, v in live.final(metric).items()}
    size = f"{live.config.get('epochs', '?')} epochs, {len(live.seeds)} seed{'s' if len(live.seeds) != 1 else ''}"
    notes = []
    if all(v == 0.0 for v in finals.values()):
        notes.append(f"every method scores 0 on `{metric}`: the panel is empty, not a result")
    elif chance is not None and (guessing := [m for m, v in finals.items() if abs(v - chance) <= margin]):
        where = "at 0" if chance == 0.0 else f"at chance ({chance:.3g})"
        notes.append(f"{_methods_list(guessing)} sit{'s' if len(guessing) == 1 else ''} {where} on `{metric}`: "
                     f"{'it has' if len(guessing) == 1 else 'they have'} not learned yet")  # fmt: skip
    if falling := _falling(live, curve or metric, margin):
        notes.append(f"`{curve or metric}` falls over training for {_methods_list(falling)}: too few steps to settle")
    if not notes:
        return ""
    trained = " The reference run above shows the trained result." if reference else ""
    return f"*An illustration of the protocol ({live.preset} preset, {size}): " + "; ".join(notes) + f".{trained}*\n"


def beside_reference(
    live: ExperimentResult,
    reference: Reference | str | None = None,
    *,
    part: str | None = None,
    metrics: list[str] | None = None,
    min_seeds: int = 3,
) -> str:
    """Markdown: the reference run of ``live``'s experiment (provenance, command, table, verdicts), then ``live``.

    Args:
        live: the run the lesson just made (:func:`~dro_lab.experiments.run_experiment`).
        reference: a :class:`Reference`, a reference's name or its lesson's id (:data:`REFERENCE_FOR_LESSON`), or
            ``None`` for the one named like ``live``'s experiment (:func:`load_reference`).
        part: which part of a reference with several (ALSO's ``"ratio 100"``); ``None`` shows every part.
        metrics: the columns of both tables; ``None``: the claims' metrics and the usual averages.
        min_seeds: fewer paired seeds than this (or the smoke preset) make the live run an illustration, shown
            without verdicts.

    Raises:
        TypeError: ``live`` is not an ExperimentResult, or ``reference`` not a Reference, a name or None.
        ValueError: ``reference`` is of another experiment than ``live``, or ``part`` is not one of its parts.
    """
    if not isinstance(live, ExperimentResult):
        raise TypeError(f"live must be an ExperimentResult, got {type(live).__name__}")
    if reference is None or isinstance(reference, str):
        reference = load_reference(REFERENCE_FOR_LESSON.get(reference, reference) if reference else live.experiment)
    if not isinstance(reference, Reference):
        raise TypeError(f"reference must be a Reference, a reference name or None, got {type(reference).__name__}")
    experiments = {result.experiment for _, _, result in reference.parts}
    if live.experiment not in experiments:
        raise ValueError(f"the reference {reference.name!r} is of {sorted(experiments)}, the live run of "
                         f"{live.experiment!r}")  # fmt: skip
    if part is not None:
        reference.result(part)  # raises on a part the reference does not have
    labels = reference.labels if part is None else [part]
    columns = metrics or [m for m in _shown(reference.result(labels[0] or None)) if m in live.metric_names()]
    lines = [f"### The reference run: {live.title}", ""]
    for label in labels:
        result = reference.result(label or None)
        command = dict((name, cmd) for name, cmd, _ in reference.parts)[label]
        lines += [f"#### {label}", ""] if label else []
        lines += [f"*{reference.provenance(label or None)}*", "", f"`{command}`", ""]
        lines += [result.markdown(columns, verdicts=False), ""]
    rows = [v for v in reference.verdicts() if v["part"] in labels]  # Holm over all of the paper's claims
    lines += [verdict_table(rows), ""] if rows else []
    illustration = is_illustration(live, min_seeds=min_seeds)
    lines += [_live_heading(live, illustration), "", live.markdown(columns, verdicts=not illustration)]
    return "\n".join(lines).rstrip() + "\n"


def claims_in_words(reference: Reference | str, *, part: str | None = None) -> str:
    """Markdown: one bullet per claim of a reference — what the paper said, what the reference run found and what
    that means, with the Holm-adjusted verdict (the one to quote) and the reading against the paper's own number.

    Generated from the shipped file, so it never disagrees with the tables beside it."""
    if isinstance(reference, str):
        reference = load_reference(REFERENCE_FOR_LESSON.get(reference, reference))
    if not isinstance(reference, Reference):
        raise TypeError(f"reference must be a Reference or its name, got {type(reference).__name__}")
    rows = [v for v in reference.verdicts() if part is None or v["part"] == part]
    family = max((v["family"] for v in rows), default=0)
    out = []
    for v in rows:
        where = f" ({v['part']})" if v["part"] and part is None else ""
        found = v["raw_text"].split(": ", 1)[-1]
        word = "not resolved" if v["note"] == "no spread" else v["verdict_adjusted"]
        meaning = _MEANING[word] if v["note"] != "no spread" else "not resolved — every seed gave the same difference"
        if v.get("band") and word in _IN_BAND:
            meaning = _IN_BAND[word]
        line = f"- **{v['text']}**{where}. The paper: {v['paper']}. Here: {found}."
        if v["verdict"] != word and v["verdict"] in ("held", "did not hold"):
            line += (f" Alone this would read “{v['verdict']}”, but judged together with the paper's other "
                     f"{family - 1} claims (Holm's correction) it is **not resolved**: among that many claims one "
                     "interval this far from 0 can happen by chance.")  # fmt: skip
        else:
            line += f" Judged together with the paper's other {family - 1} claims (Holm's correction): **{meaning}**."
        if v["same_as"]:
            line += f" The same comparison as “{v['same_as']}”: the baseline made the same runs."
        if v.get("effect_verdict"):
            scale = v["scale"]
            effect = f"{v['paper_effect'] * scale:+.{1 if scale >= 100 else 3}f}{v['unit']}"
            line += f" Against the paper's own {effect}: {v['effect_verdict']} it."
        if v.get("baseline_below"):
            line += f" Careful: {v['baseline_below']}."
        out.append(line)
    return "\n".join(out) + "\n"
