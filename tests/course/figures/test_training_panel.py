"""widgets.training_panel: pressing Train runs the reader's training with the panel's callback and grows one line
per metric, epoch by epoch, with the values fit recorded; an error is shown, not raised; the button comes back."""

from __future__ import annotations

import ipywidgets as W
import pytest

from dro_course.panels import training_panel
from dro_lab import fit
from dro_lab.data.embedded import make_minority_blobs
from dro_lab.models import make_model


def test_each_epoch_of_fit_adds_one_point_per_metric_with_the_recorded_value():
    train_set, test_set = make_minority_blobs(200, seed=0, test_size=100)
    seen_lr, history = [], []

    def train(callback, lr):
        seen_lr.append(lr)
        model = make_model("logreg", in_shape=train_set.in_shape, num_classes=2)
        history.append(fit(model, train_set, test=test_set, epochs=3, lr=lr, callback=callback, progress=False))

    box = training_panel(train, {"lr": W.FloatSlider(value=0.2, min=0.01, max=1.0)})
    box.button.click()
    assert seen_lr == [0.2]
    records = history[0].records
    loss, acc = box.figure.data
    assert list(loss.x) == [1, 2, 3] and list(loss.y) == [r["train_loss"] for r in records]
    assert list(acc.y) == [r["test_accuracy"] for r in records]
    assert box.status.value.startswith("epoch 3:") and not box.button.disabled
    box.controls["lr"].value = 0.5
    box.button.click()  # a second run starts from an empty figure
    assert seen_lr == [0.2, 0.5] and list(box.figure.data[0].x) == [1, 2, 3]


def test_an_error_is_shown_and_the_button_comes_back():
    def train(callback):
        callback(1, {"train_loss": 0.5})
        raise ValueError("lr must be positive")

    box = training_panel(train)
    box.button.click()
    assert "stopped" in box.status.value and "lr must be positive" in box.status.value
    assert not box.button.disabled and list(box.figure.data[0].y) == [0.5] and list(box.figure.data[1].y) == []


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(train=None), TypeError),
        (dict(train=print, controls={"lr": W.Button()}), TypeError),
        (dict(train=print, metrics="test_accuracy"), TypeError),
        (dict(train=print, metrics=[]), ValueError),
    ],
)
def test_bad_arguments_are_refused(kwargs, error):
    with pytest.raises(error):
        training_panel(**kwargs)


def test_the_experiment_panel_trains_the_chosen_method_as_the_experiment_runner_does():
    """Oracle: run_experiment's own record of the same method, seed and setting (untuned, one trial)."""
    from dro_course.panels import experiment_training_panel
    from dro_lab.experiments import EXPERIMENTS, run_experiment

    experiment = EXPERIMENTS["hws"]
    config = experiment.config("digits", "smoke", {"epochs": 2})
    splits = experiment.data("digits", 0, config)
    box = experiment_training_panel(experiment, splits, config, methods=["ERM", "HWS β=10 (paper)"],
                                    controls={"beta": W.FloatSlider(value=10.0, min=0.1, max=100.0)},
                                    metrics=("train_loss", "minority_accuracy"), device="cpu")  # fmt: skip
    box.controls["method"].value = "HWS β=10 (paper)"
    box.button.click()
    assert "stopped" not in box.status.value, box.status.value
    result = run_experiment("hws", dataset="digits", seeds=[0], preset="smoke", methods=["HWS β=10 (paper)"],
                            epochs=2, progress=False, device="cpu")  # fmt: skip
    expected = result.curve("minority_accuracy", "HWS β=10 (paper)")[0]
    assert list(box.figure.data[1].x) == [1, 2]
    assert list(box.figure.data[1].y) == pytest.approx(list(expected), abs=1e-12)


def test_the_experiment_panel_refuses_a_method_the_experiment_lacks():
    from dro_course.panels import experiment_training_panel
    from dro_lab.experiments import EXPERIMENTS

    experiment = EXPERIMENTS["hws"]
    config = experiment.config("digits", "smoke")
    with pytest.raises(ValueError, match="no arm 'ALSO'"):
        experiment_training_panel(experiment, experiment.data("digits", 0, config), config, methods=["ALSO"])
    with pytest.raises(TypeError, match="Splits"):
        experiment_training_panel("hws", [1, 2], config)
