"""Lahire's importance-sampling experiment (dro_lab.experiments.papers.importance), checked from the outside:
the whole lr grid for every arm in the tuned preset and the paper's protocol in the other, the two-class data
against the raw loaders, a smoke run that yields every metric, curve and claim (the training loss recomputed over
all N, the cost claim's log-ratio from the epoch times, the FLOPs of each scheme's step counted by hand), JSON."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest
import sklearn.datasets
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from dro_lab.data import DatasetUnavailableError, load_fashion_mnist
from dro_lab.experiments import ExperimentResult, run_experiment, train_arm
from dro_lab.experiments.papers.importance import IMPORTANCE_EXPERIMENT as EXP
from dro_lab.experiments.protocol import effort_problems, tuning_effort
from dro_lab.pergrad import per_sample_grad_norms

#: A configuration small enough to tune every arm twice in seconds.
TINY = dict(per_class=4, val_per_class=3, test_per_class=None, epochs=1, batch_size=4)
METRICS = {"accuracy", "loss", "neg_loss", "seconds_per_epoch", "log_seconds", "train_log_loss_auc", "train_loss",
           "flops_per_step", "flops_vs_plain"}  # fmt: skip
CURVES = {"test_accuracy", "test_loss", "train_loss", "seconds", "variance_ratio", "flops_per_step"}


def _digest(image: torch.Tensor) -> str:
    return hashlib.sha1(image.contiguous().numpy().tobytes()).hexdigest()


def _index(x: torch.Tensor, y: torch.Tensor) -> dict[str, list[int]]:
    """image bytes → the labels of every raw image with those bytes."""
    out: dict[str, list[int]] = {}
    for image, label in zip(x, y.tolist()):
        out.setdefault(_digest(image), []).append(label)
    return out


def _check_split(split, raw: dict[str, list[int]], classes, per_class) -> set[str]:
    """Every image is a raw image of the class its 0/1 label names; ``per_class`` of each; returns the digests."""
    assert split.num_classes == 2 and set(split.y.tolist()) <= {0, 1}
    if per_class is not None:
        assert torch.bincount(split.y, minlength=2).tolist() == [per_class, per_class]
    digests = [_digest(image) for image in split.x]
    for d, label in zip(digests, split.y.tolist()):
        assert d in raw and classes[label] in raw[d], "an image that is not a raw image of its class"
    assert len(set(digests)) == len(digests), "an image drawn twice"
    return set(digests)


@pytest.fixture(scope="module")
def fashion_raw():
    try:
        train, test = load_fashion_mnist(train=True), load_fashion_mnist(train=False)
    except DatasetUnavailableError:
        pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
    return _index(train.x, train.y), _index(test.x, test.y)


@pytest.mark.slow
@pytest.mark.parametrize("classes", [(0, 1), (3, 8)])
def test_fashion_data_is_two_classes_with_the_configured_counts_and_a_disjoint_validation_split(fashion_raw, classes):
    raw_train, raw_test = fashion_raw
    config = EXP.config(
        "fashion-mnist", "smoke", {"classes": classes, "per_class": 30, "val_per_class": 12, "test_per_class": 40}
    )
    splits = {seed: EXP.data("fashion-mnist", seed, config) for seed in (0, 1)}
    for s in splits.values():
        train = _check_split(s.train, raw_train, classes, 30)
        val = _check_split(s.val, raw_train, classes, 12)
        test = _check_split(s.test, raw_test, classes, 40)
        assert not train & val, "the validation split shares images with the training split"
        assert not (train | val) & test
    first, second = splits[0], splits[1]
    assert torch.equal(first.test.x, second.test.x), "every seed is measured on the same test images"
    assert not torch.equal(first.train.x, second.train.x), "the seed draws the training images"
    assert first.info["classes"] == list(classes) and first.info["test_per_class"] == [40, 40]


@pytest.mark.slow
def test_fashion_test_set_is_the_pairs_whole_test_split_by_default(fashion_raw):
    config = EXP.config("fashion-mnist", "full")
    assert config["per_class"] == 50, "the paper trains on 50 images per class (N = 100)"
    test = EXP.data("fashion-mnist", 0, config).test
    assert torch.bincount(test.y, minlength=2).tolist() == [1000, 1000]


def test_digits_data_are_the_pairs_images_upsampled_to_28(monkeypatch):
    bunch = sklearn.datasets.load_digits()
    x = torch.as_tensor(bunch.images, dtype=torch.float32).unsqueeze(1) / 16.0
    x = F.interpolate(x, size=(28, 28), mode="bilinear", align_corners=False)
    raw = _index(x, torch.as_tensor(bunch.target))
    config = EXP.config("digits", "full")
    s = EXP.data("digits", 3, config)
    train = _check_split(s.train, raw, (0, 1), config["per_class"])
    val = _check_split(s.val, raw, (0, 1), config["val_per_class"])
    test = _check_split(s.test, raw, (0, 1), None)
    assert not train & val and not (train | val) & test
    n_pair = int(np.isin(bunch.target, (0, 1)).sum())  # 178 zeros + 182 ones
    assert 80 <= len(test) <= n_pair - 2 * (config["per_class"] + config["val_per_class"])


def test_bad_classes_are_refused():
    for classes in ((0, 0), (0, 1, 2), (0, 10)):
        config = EXP.config("digits", "smoke", {"classes": classes})
        with pytest.raises(ValueError, match="classes"):
            EXP.data("digits", 0, config)


def test_the_arms_are_the_papers_configurations_with_one_shared_grid():
    names = [a.name for a in EXP.arms]
    for opt in ("SGD", "SGD M", "RMSProp", "Adam"):
        assert f"{opt} u" in names and f"{opt} p^GN" in names
    assert {n for n in names if n.endswith("p^1/2")} == {"SGD p^1/2", "SGD M p^1/2"}  # Table 1: × for the others
    assert "SGD u+eval" in names and len(names) == 11
    assert {tuple(a.grid["lr"]) for a in EXP.arms} == {EXP.arms[0].grid["lr"]}
    assert all(a.grid["lr"][0] == 0.01 for a in EXP.arms), "the paper's learning rate is every arm's default"
    momentum = {a.name: a.options["momentum"] for a in EXP.arms}
    assert momentum["SGD M p^GN"] == 0.5 and momentum["SGD p^GN"] == momentum["RMSProp u"] == 0.0


def test_the_tuned_preset_tries_every_learning_rate_for_every_arm():
    for dataset, preset in (("digits", "full"), ("fashion-mnist", "full"), ("fashion-mnist", "gpu")):
        config = EXP.config(dataset, preset)
        assert effort_problems(EXP, config["trials"]) == []
        effort = tuning_effort(EXP, config["trials"])
        assert {e["trials"] for e in effort.values()} == {5} and {e["coverage"] for e in effort.values()} == {1.0}
        for arm in EXP.arms:
            assert sorted(s["lr"] for s in arm.settings(config["trials"], seed=7)) == sorted(arm.grid["lr"])
        assert config["average_last"] == 3 and config["lr_schedule"] is None and config["eval_train"] is True


def test_the_protocol_preset_is_the_papers_section_4():
    for dataset in ("digits", "fashion-mnist"):
        config = EXP.config(dataset, "protocol")
        assert config["trials"] == 1 and config["batch_size"] == 5 and config["per_class"] == 50  # N = 100
        assert config["epochs"] * math.ceil(2 * config["per_class"] / config["batch_size"]) == 300  # 300 steps
        assert all(arm.settings(1, seed=3) == [{"lr": 0.01}] for arm in EXP.arms), "lr 0.01 for every arm, untuned"
        assert config["lr_schedule"] is None and config["eval_train"] is True


def test_the_claims_read_the_full_training_loss_and_the_cost_as_table_1s_band():
    table1 = {"SGD": (26.5, 53.0), "SGD M": (24.9, 56.6), "RMSProp": (25.5, 57.4), "Adam": (25.7, 61.4)}  # u, p^GN
    ratios = [gn / u for u, gn in table1.values()]
    cost = [c for c in EXP.claims if c.metric == "log_seconds"]
    assert {(c.method, c.baseline) for c in cost} == {("SGD u", "SGD p^GN"), ("SGD u+eval", "SGD p^GN")}
    for c in cost:
        assert c.band == pytest.approx((math.log(min(ratios)), math.log(max(ratios))), abs=2e-3)
        assert c.paper_effect == pytest.approx(math.log(53.0 / 26.5)) and not c.higher_is_better
    others = [c for c in EXP.claims if c.metric != "log_seconds"]
    assert {c.metric for c in others} == {"train_log_loss_auc", "train_loss"}, "the loss over N, not the batch mean"
    assert all(c.band is None and c.paper for c in others) and EXP.plain == "SGD u"


def test_every_arm_gets_the_same_number_of_trials():
    result = run_experiment(
        EXP, dataset="digits", seeds=[0], preset="smoke", trials=2, progress=False, device="cpu", **TINY
    )
    per_arm = {m: [t for t in result.trials if t["method"] == m] for m in result.methods}
    assert {m: len(t) for m, t in per_arm.items()} == {a.name: 2 for a in EXP.arms}
    for m, trials in per_arm.items():
        assert trials[0]["setting"] == {"lr": 0.01}
        best = max(trials, key=lambda t: t["score"])
        assert result.chosen[m] == best["setting"]
    assert sorted(r["method"] for r in result.runs) == sorted(a.name for a in EXP.arms)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("importance")
    result = run_experiment(EXP, dataset="digits", seeds=[0, 1], preset="smoke", out=out, progress=False, device="cpu")
    return result, out


@pytest.mark.slow
def test_a_smoke_run_produces_every_metric_curve_and_claim(smoke):
    result, _ = smoke
    epochs = result.config["epochs"]
    assert set(result.metric_names()) >= METRICS
    assert len(result.runs) == 2 * len(EXP.arms)
    for run in result.runs:
        assert set(run["curves"]) == CURVES and all(len(v) == epochs for v in run["curves"].values())
        assert run["final"]["loss"] > 0 and 0 <= run["final"]["accuracy"] <= 1
        ratio = run["curves"]["variance_ratio"]
        if run["method"].endswith(" u"):
            assert ratio == [1.0] * epochs  # p = u: H(u)/H(u)
        if run["method"].endswith("p^GN"):  # H(p^GN)/H(u) = (Σg)²/(N Σg²) ∈ [1/N, 1] (Cauchy–Schwarz)
            n = 2 * result.config["per_class"]
            assert all(1 / n - 1e-9 <= r <= 1 + 1e-9 for r in ratio)
    verdicts = result.verdicts()
    assert [v["text"] for v in verdicts] and len(verdicts) == len(EXP.claims)
    assert all(v["verdict"] == "not judged" for v in verdicts), "two seeds draw no verdict"
    assert all(c.paper for c in EXP.claims)


@pytest.mark.slow
def test_the_cost_claim_is_the_log_ratio_of_mean_epoch_seconds(smoke):
    result, _ = smoke
    claim = next(v for v in result.verdicts() if v["metric"] == "log_seconds" and v["method"] == "SGD u")
    secs = {m: result.curve("seconds", m).mean(axis=1) for m in ("SGD u", "SGD p^GN")}
    log_ratio = np.log(secs["SGD p^GN"]) - np.log(secs["SGD u"])
    assert claim["mean"] == pytest.approx(log_ratio.mean(), rel=1e-9)
    assert claim["band"] == pytest.approx([math.log(2.0), math.log(2.39)])


@pytest.mark.slow
def test_the_result_round_trips_through_json(smoke):
    result, out = smoke
    loaded = ExperimentResult.load(out / "result.json")
    assert loaded.to_dict() == json.loads(json.dumps(result.to_dict()))
    assert [v["text"] for v in loaded.verdicts()] == [v["text"] for v in result.verdicts()]


def _counted(step) -> float:
    with FlopCounterMode(display=False) as counter:
        step()
    return counter.get_total_flops()


@pytest.mark.slow
def test_each_arms_flops_per_step_are_its_schemes_work_counted_by_hand(smoke):
    """One step of plain SGD is a forward and backward pass on a batch; SGD u+eval adds a forward pass over all N;
    p^GN and p^1/2 add the per-sample gradient norms over all N."""
    result, _ = smoke
    config = result.config
    n, b = 2 * config["per_class"], config["batch_size"]
    train = EXP.data("digits", 0, config).train
    model = EXP.model(train, config)
    x, y = train.x[:n], train.y[:n]
    plain = _counted(lambda: F.cross_entropy(model(x[:b]), y[:b]).backward())
    with torch.no_grad():
        forward = _counted(lambda: model(x))
    norms = _counted(lambda: per_sample_grad_norms(model, lambda z, t: F.cross_entropy(z, t, reduction="none"), x, y))
    expected = {"u": plain, "u+eval": plain + forward, "p^GN": plain + norms, "p^1/2": plain + norms}
    flops = result.final("flops_per_step")
    ratio = result.final("flops_vs_plain")
    for arm in EXP.arms:
        scheme = arm.name.split(" ")[-1]
        assert flops[arm.name] == pytest.approx([expected[scheme]] * 2, rel=1e-9), arm.name
        assert ratio[arm.name] == pytest.approx([expected[scheme] / plain] * 2, rel=1e-9)
    assert forward > 0 and norms > forward


def test_the_training_loss_is_the_mean_cross_entropy_over_all_n():
    config = EXP.config("digits", "smoke", {"per_class": 6, "epochs": 2})
    splits = EXP.data("digits", 0, config)
    model, curves, final = train_arm(EXP, "SGD p^GN", splits, config, device="cpu")
    with torch.no_grad():
        full = F.cross_entropy(model(splits.train.x), splits.train.y).item()
    assert len(splits.train) == 12 and curves["train_loss"][-1] == pytest.approx(full, rel=1e-5)
    assert final["train_loss"] == pytest.approx(full, rel=1e-5)  # average_last = 1 in the smoke preset
    assert final["train_log_loss_auc"] == pytest.approx(np.mean(np.log10(curves["train_loss"])), rel=1e-9)
