"""dro_course.lessons.group_dro_also.tasks (the ALSO paper's §6.2–6.4 in small) and
dro_lab.attacks.transform_accuracies: accuracies against hand-written loops, the numbers Perm-K sends against d × steps,
the workers' accuracy against a brute-force mixture, and the results' tables and verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import dro_lab
from dro_course.lessons.group_dro_also.tasks import (
    _worker_accuracy,
    robust_training_transforms,
    run_also_tabular,
    run_also_transforms,
    run_also_workers,
)
from dro_lab.attacks import fgsm_transform, transform_accuracies
from dro_lab.data import load_digits, transforms
from dro_lab.experiments import ExperimentResult


def _tiny_model():
    torch.manual_seed(0)
    return dro_lab.DigitsCNN(num_classes=10)


def test_transform_accuracies_against_hand_written_loops():
    _, test = load_digits(seed=0)
    model = _tiny_model()
    model.train()
    blank = lambda x, y, m, g: torch.zeros_like(x)  # noqa: E731  every image becomes the blank image
    acc = transform_accuracies(
        model, test, [transforms.identity_transform(), blank, fgsm_transform(0.0)], batch_size=100
    )
    model.eval()
    with torch.no_grad():
        clean = float((model(test.x).argmax(1) == test.y).float().mean())
        blank_class = int(model(torch.zeros_like(test.x[:1])).argmax(1))
    assert acc[0] == pytest.approx(clean)
    assert acc[1] == pytest.approx(float((test.y == blank_class).float().mean()))
    assert acc[2] == pytest.approx(clean)  # FGSM with ε = 0 changes nothing
    model.train()
    transform_accuracies(model, (test.x, test.y), [transforms.identity_transform()])
    assert model.training  # the mode is restored
    with pytest.raises(ValueError, match="transforms"):
        transform_accuracies(model, test, [])
    with pytest.raises(TypeError, match="data"):
        transform_accuracies(model, [1, 2], [transforms.identity_transform()])
    with pytest.raises(ValueError, match="batch_size"):
        transform_accuracies(model, test, [transforms.identity_transform()], batch_size=0)


def test_worker_accuracy_is_each_workers_label_mixture_of_the_class_accuracies():
    rng = np.random.default_rng(0)
    labels, workers = rng.integers(0, 4, size=200), rng.integers(0, 3, size=200)
    per_class = rng.uniform(size=4)
    brute = [np.mean([per_class[y] for y in labels[workers == j]]) for j in range(3)]
    np.testing.assert_allclose(_worker_accuracy(per_class, labels, workers, 3), brute)


def test_tabular_result_reads_as_an_experiment_result():
    r = run_also_tabular(seeds=[0, 1], epochs=1)
    assert isinstance(r, ExperimentResult) and r.seeds == [0, 1] and r.preset == "smoke"
    assert r.methods == ["AdamW", "ALSO", "Static Weights", "Spectral Risk", "FastDRO (CVaR)", "RECOVER", "DRAGO"]
    auc = r.final("roc_auc")
    assert all(((v > 0.5) & (v <= 1)).all() for v in auc.values())
    kl = r.final("pi_kl_to_prior")
    assert np.isnan(kl["AdamW"]).all() and (kl["ALSO"] > 0).all() and (kl["DRAGO"] > 0).all()
    verdicts = r.verdicts()
    assert len(verdicts) == 6 and {v["verdict"] for v in verdicts} == {"not judged"}  # two seeds: no verdict
    assert "| ALSO |" in r.markdown(["roc_auc", "accuracy"], verdicts=False)
    assert r.curve("test_accuracy", "ALSO").shape == (2, 1)
    with pytest.raises(ValueError, match="dataset"):
        run_also_tabular(dataset="iris")


@pytest.mark.slow
def test_transforms_result_pairs_every_method_on_one_pretrained_network():
    r = run_also_transforms(seeds=[0], epochs=1)
    _, names = robust_training_transforms()
    assert r.methods == ["AdamW", "ALSO", "RECOVER", "FastDRO (CVaR)"] and r.config["transforms"] == names
    for run in r.runs:
        per = [run["final"][f"accuracy: {n}"] for n in names]
        assert run["final"]["mean_attack_accuracy"] == pytest.approx(np.mean(per))
        assert run["final"]["worst_attack_accuracy"] == pytest.approx(min(per))
        assert len(run["curves"]["mean_attack_accuracy"]) == 2  # the pretrained network, then one epoch
    starts = {run["curves"]["mean_attack_accuracy"][0] for run in r.runs}
    assert len(starts) == 1  # every method starts from the same pretrained network
    pi = np.array(r.data["0"]["pi"])
    np.testing.assert_allclose(pi.sum(1), 1.0, atol=1e-5)
    np.testing.assert_allclose(pi[0], 1 / 7)
    assert r.data["0"]["pi_kl"][0] == 0.0 and len(r.data["0"]["pi_kl"]) == 2
    assert [v["baseline"] for v in r.verdicts()] == ["AdamW", "RECOVER", "FastDRO (CVaR)", "AdamW"]


def test_workers_send_d_numbers_per_step_whatever_the_weights():
    r = run_also_workers(seeds=[0], epochs=1, n_workers=3)
    train, _ = load_digits(flatten=True, seed=0)
    d = sum(p.numel() for p in dro_lab.MLP(64, 10, hidden=(64,)).parameters())
    steps = math.ceil(len(train) / 64)
    sent = r.final("floats_sent")
    assert sent["AdamW + Perm-K"][0] == sent["ALSO"][0] == d * steps
    assert sum(r.data["0"]["worker_sizes"]) == len(train) and len(r.data["0"]["worker_sizes"]) == 3
    worst, acc = r.final("worst_worker_accuracy"), r.final("accuracy")
    assert all(0 <= worst[m][0] <= 1 and 0 <= acc[m][0] <= 1 for m in r.methods)
    with pytest.raises(ValueError, match="n_workers"):
        run_also_workers(n_workers=1)
    with pytest.raises(ValueError, match="preset"):
        run_also_workers(preset="huge")
