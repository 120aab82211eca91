"""Watching a network train: a Run button, and the curves drawn epoch by epoch as they come (the idea of d2l's
Animator), through :func:`dro_lab.fit`'s ``callback``.

A lesson passes a function that trains with the panel's callback::

    def train(callback, lr):            # in the lesson's exercise, or a library helper
        return fit(model, train_set, test=test_set, epochs=20, lr=lr, callback=callback)

    widgets.training_panel(train, {"lr": W.FloatLogSlider(value=0.05, base=10, min=-3, max=0)})

:func:`experiment_training_panel` is the same panel over a paper's experiment: a method menu and the knobs the
lesson chooses, each run trained as :func:`dro_lab.experiments.run_experiment` trains it (:func:`~dro_lab.
experiments.train_arm`). Headless (papermill, the course pages) the panel is inert; the lesson draws the finished
run's curves beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import ipywidgets as W
import plotly.graph_objects as go

from .._validation import check_callable
from ..experiments import EXPERIMENTS, Experiment, Splits, train_arm
from ..experiments.protocol import FIT_KNOBS
from ..viz._style import LAYOUT, method_colors

__all__ = ["training_panel", "experiment_training_panel"]


def _figure(metrics: Sequence[str], title: str) -> go.FigureWidget:
    colours = method_colors(list(metrics), None)
    fig = go.FigureWidget(
        data=[go.Scatter(x=[], y=[], mode="lines+markers", name=m.replace("_", " "), line=dict(color=colours[m]))
              for m in metrics],
        layout=dict(LAYOUT, title=title, xaxis_title="epoch", legend=dict(orientation="h", y=-0.25)),
    )  # fmt: skip
    return fig


def training_panel(
    train: Callable[..., object],
    controls: Mapping[str, W.Widget] | None = None,
    *,
    metrics: Sequence[str] = ("train_loss", "test_accuracy"),
    title: str = "Training, epoch by epoch",
    button: str = "Train",
) -> W.Box:
    """A **Train** button and a live figure: on a click, ``train(callback=on_epoch, **values)`` runs with the
    controls' values, and each ``on_epoch(epoch, record)`` call (what :func:`dro_lab.fit` makes after every epoch)
    appends ``record[m]`` for each metric ``m`` of ``metrics`` to its line. The button is disabled while training;
    an error stops the run and is shown under the figure, never raised into the notebook.

    The box's ``figure`` (a FigureWidget), ``button``, ``status`` and ``controls`` are attributes.
    """
    check_callable(train, "train")
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
    box = W.VBox([W.HBox([*controls.values(), run]), figure, status])
    box.figure, box.button, box.status, box.controls = figure, run, status, controls
    return box


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
    e.g. ``minority_accuracy``) epoch by epoch."""
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
        arm = experiment.arm(method)
        own = {k: v for k, v in values.items() if k in arm.grid or k in arm.options or k in FIT_KNOBS}
        train_arm(experiment, method, splits, config, seed=seed, device=device, callback=callback, **own)

    return training_panel(train, {"method": menu, **knobs}, metrics=metrics,
                          title=title or f"{experiment.title}: one run, epoch by epoch")  # fmt: skip
