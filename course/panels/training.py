"""Watching a network train: a Run button, and the curves drawn epoch by epoch as they come (the idea of d2l's
Animator), through :func:`dro_lab.fit`'s ``callback``.

A lesson passes a function that trains with the panel's callback::

    def train(callback, lr):            # in the lesson's exercise, or a library helper
        return fit(model, train_set, test=test_set, epochs=20, lr=lr, callback=callback)

    panels.training_panel(train, {"lr": W.FloatLogSlider(value=0.05, base=10, min=-3, max=0)})

:func:`experiment_training_panel` is the same panel over a paper's experiment: a method menu and the knobs the
lesson chooses, each run trained as :func:`dro_lab.experiments.run_experiment` trains it (:func:`~dro_lab.
experiments.train_arm`). Headless (papermill, the course pages) the panel is inert; the lesson draws the finished
run's curves beside it, and the panel's static twin (``box.static_twin``, built on first display) holds short
runs at a few knob values, so the course site shows curves that move with a slider.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import ipywidgets as W
import numpy as np
import plotly.graph_objects as go
import torch

from dro_course import figures
from dro_course.figures._style import LAYOUT, method_colors
from dro_course.panels.panels import _check_twin, _ends
from dro_course.panels.twin import TwinVBox, knobs_from_controls, static_twin_of, twin_note
from dro_lab._validation import check_callable
from dro_lab.experiments import EXPERIMENTS, Experiment, Splits, train_arm
from dro_lab.experiments.protocol import FIT_KNOBS

__all__ = ["training_panel", "experiment_training_panel"]

#: The static twin of an experiment panel trains within this budget: at most ``epochs`` epochs (None: the
#: configuration's), ``train`` / ``test`` examples (a class-stratified draw; None: all) and ``runs`` runs in all
#: (knobs beyond it keep their starting value).
TWIN_BUDGET = {"epochs": 2, "train": 256, "test": 256, "runs": 12}
#: The generic :func:`training_panel`'s twin draws the first epochs of the reader's runs only.
TWIN_GENERIC_EPOCHS = 3


def _curves(metrics: Sequence[str], title: str) -> dict:
    """The training figure's empty lines (one per metric) and layout."""
    colours = method_colors(list(metrics), None)
    return dict(
        data=[go.Scatter(x=[], y=[], mode="lines+markers", name=m.replace("_", " "), line=dict(color=colours[m]))
              for m in metrics],
        layout=dict(LAYOUT, title=title, xaxis_title="epoch", legend=dict(orientation="h", y=-0.25)),
    )  # fmt: skip


def _figure(metrics: Sequence[str], title: str) -> go.FigureWidget:
    return go.FigureWidget(**_curves(metrics, title))


def training_panel(
    train: Callable[..., object],
    controls: Mapping[str, W.Widget] | None = None,
    *,
    metrics: Sequence[str] = ("train_loss", "test_accuracy"),
    title: str = "Training, epoch by epoch",
    button: str = "Train",
    twin: Mapping[str, list] | bool | None = None,
) -> W.Box:
    """A **Train** button and a live figure: on a click, ``train(callback=on_epoch, **values)`` runs with the
    controls' values, and each ``on_epoch(epoch, record)`` call (what :func:`dro_lab.fit` makes after every epoch)
    appends ``record[m]`` for each metric ``m`` of ``metrics`` to its line. The button is disabled while training;
    an error stops the run and is shown under the figure, never raised into the notebook.

    The box's ``figure`` (a FigureWidget), ``button``, ``status`` and ``controls`` are attributes. Its static twin
    (on first display) draws the first :data:`TWIN_GENERIC_EPOCHS` epochs of runs at each control's value and at
    the two ends of its range, one control at a time (1 + 2 runs per control; a run is stopped by its callback
    once it has reported those epochs), or at ``twin``'s values (a dict control name -> values; ``False``: no
    twin).
    """
    check_callable(train, "train")
    _check_twin(twin)
    controls = dict(controls or {})
    if not all(isinstance(w, W.ValueWidget) for w in controls.values()):
        raise TypeError("controls must map names to ipywidgets with a value (sliders, toggles …)")
    if isinstance(metrics, str) or not isinstance(metrics, Sequence):
        raise TypeError(f"metrics must be a list of record keys, got {metrics!r}")
    if not metrics:
        raise ValueError("metrics is empty: name at least one record key (train_loss, test_accuracy …)")
    figure = _figure(list(metrics), title)
    run = W.Button(description=button, button_style="primary", icon="play")
    status = W.HTML("Press <b>" + button + "</b> to train; the curves grow as each epoch ends.")

    def on_epoch(epoch: int, record: Mapping) -> None:
        with figure.batch_update():
            for trace, metric in zip(figure.data, metrics):
                if metric in record:
                    trace.x = (*trace.x, epoch)
                    trace.y = (*trace.y, float(record[metric]))
        shown = ", ".join(f"{m.replace('_', ' ')} {float(record[m]):.4g}" for m in metrics if m in record)
        status.value = f"epoch {epoch}: {shown}"

    def on_click(_=None) -> None:
        run.disabled = True
        with figure.batch_update():
            for trace in figure.data:
                trace.x, trace.y = (), ()
        try:
            train(callback=on_epoch, **{name: w.value for name, w in controls.items()})
        except Exception as exc:  # the reader's settings or code: shown, so the notebook goes on
            status.value = f"<b>stopped</b>: {type(exc).__name__}: {exc}"
        finally:
            run.disabled = False

    run.on_click(on_click)
    box = TwinVBox([W.HBox([*controls.values(), run]), figure, status])
    box.figure, box.button, box.status, box.controls = figure, run, status, controls
    if twin is None or twin is True:
        twin = {name: ends for name, ends in ((n, _ends(w)) for n, w in controls.items()) if ends is not None}
    knobs = {} if twin is False else knobs_from_controls(controls, twin)
    if not knobs:
        return box.set_twin(None, title=title, note="")
    fixed = {name: w.value for name, w in controls.items() if name not in knobs}

    def build(**values):
        return run_curves_figure(_records(train, {**fixed, **values}), metrics, title=title)

    how = f"Precomputed runs (their first {TWIN_GENERIC_EPOCHS} epochs)"
    note = twin_note(knobs, how=how, live=f"trains at any value ({button} button)")
    return box.set_twin(static_twin_of(build, knobs), title=title, note=note)


class _EnoughEpochs(Exception):
    """Raised by a twin's callback to end a run once it has reported the epochs the twin draws."""


def _records(train: Callable[..., object], values: Mapping) -> list[tuple[int, Mapping]]:
    """The first :data:`TWIN_GENERIC_EPOCHS` ``(epoch, record)`` that ``train(callback=..., **values)`` reports
    (the run is stopped there, so a long training costs the twin only those epochs)."""
    records: list[tuple[int, Mapping]] = []

    def keep(epoch, record):
        if len(records) < TWIN_GENERIC_EPOCHS:
            records.append((epoch, dict(record)))
        if len(records) >= TWIN_GENERIC_EPOCHS:
            raise _EnoughEpochs

    try:
        train(callback=keep, **values)
    except _EnoughEpochs:
        pass
    return records


def run_curves_figure(records, metrics: Sequence[str], *, title: str) -> go.Figure:
    """One run's ``metrics`` over the epochs (what :func:`training_panel` draws live): ``records`` is the list of
    ``(epoch, record)`` its callback received."""
    fig = go.Figure(**_curves(list(metrics), title))
    for trace, metric in zip(fig.data, metrics):
        points = [(e, float(r[metric])) for e, r in records if metric in r]
        trace.x, trace.y = [e for e, _ in points], [v for _, v in points]
    return fig


def experiment_training_panel(
    experiment: Experiment | str,
    splits: Splits,
    config: Mapping,
    *,
    methods: Sequence[str] | None = None,
    controls: Mapping[str, W.Widget] | None = None,
    metrics: Sequence[str] = ("train_loss", "test_accuracy"),
    seed: int = 0,
    device: str = "auto",
    title: str | None = None,
) -> W.Box:
    """:func:`training_panel` over one paper's experiment: a **method** menu (``methods``, default every arm), the
    ``controls`` (knobs of the arms, e.g. ``{"beta": FloatLogSlider(...)}`` — a knob the chosen method lacks is
    left out of its run) and a **Train** button; each click trains the chosen method on ``splits`` with
    ``config``, as the experiment's runner does, and draws ``metrics`` (fit's record and the experiment's curves,
    e.g. ``minority_accuracy``) epoch by epoch.

    The static twin (on first display) draws every offered method's curves from short runs — :data:`TWIN_BUDGET`:
    2 epochs on a class-stratified draw of at most 256 training and 256 test examples — at the controls' values
    and, one knob at a time, at the ends of each knob's range, re-training only the methods that take that knob,
    within 12 runs (knobs past the budget stay at their value, and the note says so). On the smoke presets of
    lessons 02, 03, 05 and 06 that is 4 to 9 runs, 0.3 to 1.5 s on one CPU thread."""
    return _experiment_panel(experiment, splits, config, methods=methods, controls=controls, metrics=metrics,
                             seed=seed, device=device, title=title, budget=TWIN_BUDGET)  # fmt: skip


def _experiment_panel(experiment, splits, config, *, methods, controls, metrics, seed, device, title, budget):
    """:func:`experiment_training_panel` with the twin's ``budget`` (see :data:`TWIN_BUDGET`)."""
    if isinstance(experiment, str):
        if experiment not in EXPERIMENTS:
            raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {experiment!r}")
        experiment = EXPERIMENTS[experiment]
    if not isinstance(experiment, Experiment):
        raise TypeError(f"experiment must be an Experiment or its name, got {type(experiment).__name__}")
    if not isinstance(splits, Splits):
        raise TypeError(f"splits must be the experiment's Splits, got {type(splits).__name__}")
    names = [a.name for a in experiment.arms] if methods is None else list(methods)
    for name in names:
        experiment.arm(name)  # raises on a method the experiment lacks
    menu = W.Dropdown(options=names, value=names[0], description="method")
    knobs = dict(controls or {})

    def train(callback, method, **values):
        own = _own_knobs(experiment, method, values)
        train_arm(experiment, method, splits, config, seed=seed, device=device, callback=callback, **own)

    title = title or f"{experiment.title}: one run, epoch by epoch"
    box = training_panel(train, {"method": menu, **knobs}, metrics=metrics, title=title, twin=False)
    run = dict(experiment=experiment, splits=splits, config=config, seed=seed, device=device, budget=budget)
    factory, note = _experiment_twin(run, names, knobs, metrics)
    return box.set_twin(factory, title=title, note=note)


def _own_knobs(experiment: Experiment, method: str, values: Mapping) -> dict:
    """The knobs among ``values`` that ``method``'s arm takes (its grid, its options, fit's knobs)."""
    arm = experiment.arm(method)
    return {k: v for k, v in values.items() if k in arm.grid or k in arm.options or k in FIT_KNOBS}


def _twin_knobs(experiment, names, controls, max_runs: int) -> tuple[dict, list[str]]:
    """The knobs the twin moves (each at its value and its range's ends, in order, while the runs fit in
    ``max_runs``; the first knob cut to its value and one end when even that does not fit) and those it leaves."""
    knobs = knobs_from_controls(controls, {n: _ends(w) for n, w in controls.items() if _ends(w) is not None})
    users = {k: [m for m in names if k in _own_knobs(experiment, m, {k: 0})] for k in knobs}
    kept, runs = {}, len(names)
    for k, spec in knobs.items():
        extra = (len(spec["values"]) - 1) * len(users[k])
        if extra and runs + extra <= max_runs:
            kept[k], runs = spec, runs + extra
    if not kept:
        for k, spec in knobs.items():  # one more value of one knob, if that fits
            if users[k] and runs + len(users[k]) <= max_runs and len(spec["values"]) > 1:
                other = next(v for v in reversed(spec["values"]) if v != spec["default"])
                kept[k] = {**spec, "values": sorted([spec["default"], other])}
                break
    return kept, [controls[k].description or k for k in knobs if k not in kept]


def _experiment_twin(run: Mapping, names, controls, metrics):
    """The twin of an experiment panel: every offered method's curves from runs within ``run["budget"]``, one
    run per method at the controls' values and one more per other knob value for each method that takes it."""
    experiment, config, budget = run["experiment"], run["config"], run["budget"]
    kept, left = _twin_knobs(experiment, names, controls, budget["runs"])
    if not kept:
        return None, ""
    start = {k: w.value for k, w in controls.items()}
    epochs = int(config.get("epochs", 1)) if budget["epochs"] is None else budget["epochs"]
    epochs = max(1, min(int(config.get("epochs", epochs)), epochs))
    data: dict = {}
    cache: dict = {}

    def curves(method: str, values: Mapping) -> dict:
        own = _own_knobs(experiment, method, values)
        key = (method, tuple(sorted(own.items())))
        if key not in cache:
            if not data:
                data["splits"] = _small_splits(run["splits"], run["seed"], budget)
            records = []
            train_arm(experiment, method, data["splits"], config, seed=run["seed"], device=run["device"],
                      epochs=epochs, callback=lambda e, r: records.append(dict(r)), **own)  # fmt: skip
            cache[key] = {m: [float(r[m]) for r in records if m in r] for m in metrics}
        return cache[key]

    def build(**values):
        values = {**start, **values}
        panels = {m.replace("_", " "): {name: [curves(name, values)[m]] for name in names} for m in metrics}
        return figures.curves_grid_figure(panels, cols=len(metrics), x=list(range(1, epochs + 1)),
                                      title=f"Every method: {_budget_text(budget, epochs)}")  # fmt: skip

    aside = f" ({', '.join(left)} at {'its' if len(left) == 1 else 'their'} starting value)" if left else ""
    how = f"Runs of every method ({_budget_text(budget, epochs)})"
    note = twin_note(kept, how=how, live="trains the full run at any value", aside=aside)
    return static_twin_of(build, kept), note


def _budget_text(budget: Mapping, epochs: int) -> str:
    cut = f" on at most {budget['train']} training images" if budget["train"] is not None else ""
    return f"{epochs} epoch{'s' if epochs > 1 else ''}{cut}"


def _small_splits(splits: Splits, seed: int, budget: Mapping) -> Splits:
    """``splits`` with a class-stratified draw of at most ``budget["train"]`` training and ``budget["test"]`` test
    examples (each class keeps its share, at least one example); sets that cannot be cut stay whole."""
    train, test = (_stratified(d, budget[k], seed) for d, k in ((splits.train, "train"), (splits.test, "test")))
    return Splits(train, splits.val, test, dict(splits.info))


def _stratified(data, limit: int | None, seed: int):
    if limit is None or not hasattr(data, "subset") or not hasattr(data, "y") or len(data) <= limit:
        return data
    y = data.y.detach().cpu().numpy()
    rng = np.random.default_rng(seed)
    share = limit / len(y)
    keep = []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        keep.extend(idx[: max(1, int(round(share * len(idx))))].tolist())
    return data.subset(torch.as_tensor(sorted(keep)))
