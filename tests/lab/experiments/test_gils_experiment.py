"""Wang et al.'s GI-LS experiment (dro_lab.experiments.papers.gils), checked from the outside: every arm's tuning
budget (coverage, every value tried, grid sizes within 4×, counted here) and first grid point, GI-LS's grid (two
values of each of α, T, η inside the paper's box, the default small η first), the claims' effects against the
paper's Tables 3–6 typed in here, the class counts against Table 1 and the images against the raw scikit-learn
digits and Fashion-MNIST files (a validation split of ≥ 30 images a class, disjoint from the other splits), the
metrics against scikit-learn and a hand-computed relative shift, a smoke run that yields every metric, curve and
claim (GI-LS's shift for GI-LS only), and the JSON round trip."""

from __future__ import annotations

import inspect
import json
import math

import numpy as np
import pytest
import sklearn.datasets
import sklearn.metrics
import torch

import dro_lab
from dro_lab.attacks import gils_shift
from dro_lab.data import DatasetUnavailableError, load_fashion_mnist
from dro_lab.experiments import GILS_SEARCH_SPACE, ExperimentResult, run_experiment
from dro_lab.experiments.papers.gils import GILS_EXPERIMENT as EXP

ARMS = ("CE", "LS", "Mixup", "CutMix", "Cutout", "FGSM-aug", "PGD-aug", "GI-LS")
#: The paper's Table 1 (MT and MT-Defect, train / "Testing (unseen)"); digits has 900 "Free" digits, so digits-MT
#: scales Free's 460 / 492 to 435 / 465.
MT_TRAIN, MT_TEST = (435, 41, 57, 52, 27, 13), (465, 62, 58, 33, 27, 16)
MT_DEFECT_TRAIN, MT_DEFECT_TEST = (54, 67, 46, 28, 13), (49, 48, 39, 26, 16)
TILE_TRAIN, TILE_TEST = (460, 41, 57, 52, 27, 13), (492, 62, 58, 33, 27, 16)
#: digits-MT's digits: Free = {0, 1, 2, 3, 9}, then Uneven … Fray = 4 … 8.
DIGITS_OF = ({0, 1, 2, 3, 9}, {4}, {5}, {6}, {7}, {8})
#: The Fashion-MNIST analogue: T-shirt/top, trouser, pullover, dress, coat, shirt.
FASHION_LABELS = (0, 1, 2, 3, 4, 6)
#: The paper's MT top-1 accuracies with ResNet18 (Tables 3–6): GI-LS 84.2 and each baseline.
RESNET18_MT = {"CE": 76.2, "LS": 75.0, "Mixup": 74.9, "CutMix": 75.9, "Cutout": 74.3, "FGSM-aug": 71.6, "PGD-aug": 71.5}
METRICS = {
    "accuracy",
    "balanced_accuracy",
    "worst_class_accuracy",
    "macro_f1",
    "probe_relative_shift",
    "probe_label_kept",
    "probe_label_kept_of_correct",
} | {f"class_{c}_accuracy" for c in range(6)}


def _default(cls, name):
    return inspect.signature(cls).parameters[name].default


def _counts(*datasets, k):
    return tuple(sum(torch.bincount(d.y, minlength=k)[c].item() for d in datasets) for c in range(k))


def _check_validation(s, drawn, k):
    """The validation split holds ≥ 30 images of every class: the stratified fifth of the ``drawn`` training
    counts, topped up with images outside the training split where a class has fewer."""
    train, val = _counts(s.train, k=k), _counts(s.val, k=k)
    assert min(val) >= 30, val
    for c in range(k):
        assert abs(train[c] - 0.8 * drawn[c]) <= 1, (c, train[c], drawn[c])  # the training split is not thinned
        assert train[c] + val[c] == max(drawn[c], train[c] + 30), (c, train[c], val[c], drawn[c])
    train_images = {x.numpy().tobytes() for x in s.train.x}
    assert not any(x.numpy().tobytes() in train_images for x in s.val.x), "validation images are not trained on"


# ---------------------------------------------------------------------------------------------- the design
def test_the_arms_and_their_grids_start_from_each_methods_default():
    assert tuple(a.name for a in EXP.arms) == ARMS
    first = {a.name: a.settings(1, 0)[0] for a in EXP.arms}
    lr = EXP.arms[0].grid["lr"]
    for arm in EXP.arms:
        assert tuple(arm.grid["lr"]) == tuple(lr), "one learning-rate grid shared by every arm"
        if arm.name != "GI-LS":
            assert tuple(arm.grid["weight_decay"]) == tuple(EXP.arms[0].grid["weight_decay"])
            assert first[arm.name]["weight_decay"] == 0.0
    assert "weight_decay" not in EXP.arm("GI-LS").grid and "weight_decay" not in EXP.arm("GI-LS").options
    assert _default(dro_lab.fit, "weight_decay") == 0.0, "GI-LS trains without weight decay"
    assert first["LS"]["alpha"] == _default(dro_lab.LabelSmoothingStrategy, "alpha")
    assert first["Mixup"]["beta_param"] == _default(dro_lab.MixupStrategy, "beta_param") == 1.0
    assert first["Cutout"]["size"] is None  # the strategy's default: half the image side
    assert first["FGSM-aug"]["eps"] == first["PGD-aug"]["eps"] == pytest.approx(8 / 255)
    lrs = np.sort(np.asarray(lr))
    assert np.all(lrs[1:] / lrs[:-1] > 1.5), "the learning rates are spread on a log scale"


def test_gils_grid_tunes_the_papers_knobs_and_starts_from_the_default_small_eta():
    arm = EXP.arm("GI-LS")
    assert arm.strategy == "GILSStrategy" and arm.options["gamma"] == 1e-3  # the paper's γ
    assert set(arm.grid) == {"lr", "alpha", "steps", "eta"}
    assert all(len(set(arm.grid[k])) >= 2 for k in ("alpha", "steps", "eta")), "the paper's α, T and η are tuned"
    assert all(0.0 <= a <= 0.5 for a in arm.grid["alpha"]) and all(1 <= t <= 15 for t in arm.grid["steps"])  # §4.2
    first = arm.settings(1, 0)[0]
    for knob in ("alpha", "steps", "eta"):
        assert first[knob] == _default(dro_lab.GILSStrategy, knob), knob
    assert first["eta"] == 0.02
    kind, low, high = GILS_SEARCH_SPACE["eta"]
    etas = np.sort(np.asarray(arm.grid["eta"]))
    assert kind == "logfloat" and low <= etas[0] and etas[-1] <= high
    assert np.all(etas[1:] / etas[:-1] > 2), "η's grid is log-spaced"
    assert max(arm.grid["steps"]) <= GILS_SEARCH_SPACE["steps"][2]


def test_every_tuned_preset_covers_every_grid_alike_under_the_papers_schedule():
    for dataset, presets in EXP.presets.items():
        assert {"smoke", "full"} <= set(presets), dataset
        for preset, config in presets.items():
            assert config["optimizer"] == "adam"
            long = config["epochs"] > 20
            assert config["lr_schedule"] == ("step:20:0.3" if long else None), (dataset, preset)  # × 0.3 every 20
            assert config["average_last"] == (3 if preset != "smoke" else 1), (dataset, preset)
            if preset == "smoke":
                continue
            trials, sizes = config["trials"], {}
            for arm in EXP.arms:
                size = math.prod(len(v) for v in arm.grid.values())
                sizes[arm.name] = size
                assert min(trials, size) >= 0.25 * size, (arm.name, trials, size)
                tried = arm.settings(trials, 0)
                assert len(tried) == min(trials, size)
                for knob, values in arm.grid.items():
                    assert {t[knob] for t in tried} == set(values), (arm.name, knob, "every value tried")
            assert max(sizes.values()) <= 4 * min(sizes.values()), sizes
    assert set(EXP.presets) == {"digits", "fashion-mnist"}


def test_the_claims_are_gils_against_every_baseline_with_the_papers_numbers():
    assert {c.baseline for c in EXP.claims} == set(ARMS) - {"GI-LS"}
    assert EXP.plain == "CE", "a claim against a baseline below plain cross-entropy is flagged"
    for c in EXP.claims:
        assert c.method == "GI-LS" and c.metric == "balanced_accuracy" and c.higher_is_better
        assert c.threshold == 0.0 and "Table" in c.paper and "84.2" in c.paper
        assert c.paper_effect == pytest.approx((84.2 - RESNET18_MT[c.baseline]) / 100)
        assert str(RESNET18_MT[c.baseline]) in c.paper and "balanced accuracy" in c.paper
    ce = next(c for c in EXP.claims if c.baseline == "CE")
    assert "76.2" in ce.paper and "75.0" in ce.paper and "77.2" in ce.paper


# ---------------------------------------------------------------------------------------------- the data
def test_digits_mt_has_table_1s_counts_and_the_right_digits():
    config = EXP.config("digits", "full")
    bunch = sklearn.datasets.load_digits()
    raw = {
        d: {bunch.images[i].astype(np.float32).tobytes() for i in np.flatnonzero(bunch.target == d)} for d in range(10)
    }
    for seed in (0, 4):
        s = EXP.data("digits", seed, config)
        _check_validation(s, MT_TRAIN, 6)
        assert _counts(s.test, k=6) == MT_TEST
        test_images = {x.numpy().tobytes() for x in s.test.x}
        assert not any(x.numpy().tobytes() in test_images for x in s.val.x), "no test image in validation"
        for ds in (s.train, s.val, s.test):
            for x, y in zip(ds.x[::7], ds.y[::7]):
                image = (x[0].numpy() * 16).round().astype(np.float32).tobytes()
                assert any(image in raw[d] for d in DIGITS_OF[int(y)]), f"label {int(y)} is not one of its digits"
        assert s.info["class_names"][0] == "Free"


@pytest.mark.parametrize(
    ("defects", "train", "test"),
    [("digits-MT-Defect", MT_DEFECT_TRAIN, MT_DEFECT_TEST), ("tile", TILE_TRAIN, TILE_TEST)],
)
def test_the_other_defect_sets_have_their_tables_counts(defects, train, test):
    config = EXP.config("digits", "smoke", {"defects": defects})
    s = EXP.data("digits", 1, config)
    k = len(train)
    assert s.train.num_classes == k
    _check_validation(s, train, k)
    assert _counts(s.test, k=k) == test


@pytest.fixture(scope="module")
def fashion():
    try:
        return load_fashion_mnist(train=True), load_fashion_mnist(train=False)
    except DatasetUnavailableError:
        pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["smoke", "full"])
def test_fashion_few_data_subset_has_the_configured_counts_and_real_images(fashion, preset):
    raw_train, raw_test = fashion
    config = EXP.config("fashion-mnist", preset, {"size": 28})
    s = EXP.data("fashion-mnist", 2, config)
    _check_validation(s, tuple(config["train_counts"]), 6)
    if preset == "full":
        assert tuple(config["train_counts"]) == TILE_TRAIN, "the full preset keeps MT's training counts"
    per_class = config["test_per_class"] or 1000
    assert _counts(s.test, k=6) == (per_class,) * 6
    for ds, raw in ((s.train, raw_train), (s.val, raw_train), (s.test, raw_test)):
        by_label = {
            old: {hash(raw.x[i].numpy().tobytes()) for i in torch.nonzero(raw.y == old).squeeze(1).tolist()}
            for old in FASHION_LABELS
        }
        for x, y in zip(ds.x, ds.y):
            assert hash(x.numpy().tobytes()) in by_label[FASHION_LABELS[int(y)]]
    pooled = EXP.data("fashion-mnist", 2, EXP.config("fashion-mnist", preset)).train
    assert pooled.in_shape == (1, 14, 14)
    by_hand = s.train.x.numpy().reshape(-1, 1, 14, 2, 14, 2).mean(axis=(3, 5))
    assert np.allclose(pooled.x.numpy(), by_hand, atol=1e-6), "the same draw, average-pooled to 14×14"


# ---------------------------------------------------------------------------------------------- the metrics
def test_metrics_agree_with_sklearn_and_a_hand_computed_shift():
    config = EXP.config("digits", "smoke", {"probe_per_class": None})
    s = EXP.data("digits", 0, config)
    torch.manual_seed(0)
    model = EXP.model(s.train, config)
    dro_lab.fit(
        model, s.train, epochs=3, batch_size=32, lr=3e-3, optimizer="adam", device="cpu", seed=0, progress=False
    )
    out = EXP.metrics(model, s.test, config)
    pred = model.eval()(s.test.x).argmax(1).numpy()
    y = s.test.y.numpy()
    assert out["accuracy"] == pytest.approx(sklearn.metrics.accuracy_score(y, pred))
    assert out["balanced_accuracy"] == pytest.approx(sklearn.metrics.balanced_accuracy_score(y, pred))
    assert out["macro_f1"] == pytest.approx(sklearn.metrics.f1_score(y, pred, average="macro", zero_division=0))
    recall = sklearn.metrics.recall_score(y, pred, average=None, labels=range(6), zero_division=0)
    assert out["worst_class_accuracy"] == pytest.approx(recall.min())
    x_t, _ = gils_shift(model, s.test.x, s.test.y, **config["probe"])
    rel = ((x_t - s.test.x).flatten(1).double().norm(dim=1) / s.test.x.flatten(1).double().norm(dim=1)).mean()
    assert out["probe_relative_shift"] == pytest.approx(float(rel), rel=1e-5)
    kept = model.eval()(x_t).argmax(1).numpy() == y
    assert out["probe_label_kept"] == pytest.approx(kept.mean())
    assert out["probe_label_kept_of_correct"] == pytest.approx(kept[pred == y].mean())


# ---------------------------------------------------------------------------------------------- runs
@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("gils")
    result = run_experiment(
        EXP, dataset="digits", seeds=[0, 1], preset="smoke", trials=2, out=out, progress=False, device="cpu", epochs=1
    )
    return result, out


@pytest.mark.slow
def test_every_arm_gets_the_same_number_of_trials_starting_from_its_default(smoke):
    result, _ = smoke
    per_arm = {m: [t for t in result.trials if t["method"] == m] for m in result.methods}
    assert {m: len(t) for m, t in per_arm.items()} == {a: 2 for a in ARMS}
    for m, trials in per_arm.items():
        assert trials[0]["setting"] == EXP.arm(m).settings(1, 0)[0], "the first trial is the arm's default"
        assert result.chosen[m] == max(trials, key=lambda t: t["score"])["setting"]


@pytest.mark.slow
def test_smoke_run_yields_every_metric_curve_and_claim(smoke):
    result, _ = smoke
    assert len(result.runs) == 2 * len(ARMS)
    assert METRICS | {"gils_relative_shift"} <= set(result.metric_names())
    for metric in METRICS:
        for method, values in result.final(metric).items():
            finite = values[~np.isnan(values)]
            assert finite.size >= 1 and np.all((finite >= 0) & (finite <= 1)), (metric, method)
    shift = result.final("gils_relative_shift")
    assert np.all(np.isfinite(shift["GI-LS"])) and np.all(shift["GI-LS"] >= 0)
    assert all(np.all(np.isnan(v)) for m, v in shift.items() if m != "GI-LS"), "GI-LS's own shift: GI-LS only"
    for run in result.runs:
        assert {"test_accuracy", "test_balanced_accuracy", "test_worst_class_accuracy"} <= set(run["curves"])
        assert ("gils_relative_shift" in run["curves"]) == (run["method"] == "GI-LS")
        if run["method"] == "GI-LS":
            assert run["final"]["gils_relative_shift"] == run["curves"]["gils_relative_shift"][-1]
    verdicts = result.verdicts()
    assert [v["baseline"] for v in verdicts] == [c.baseline for c in EXP.claims]
    assert all(v["verdict"] == "not judged" and v["n"] == 2 for v in verdicts), "2 seeds draw no verdict"
    assert "GI-LS beats CE" in result.markdown()


@pytest.mark.slow
def test_result_round_trips_through_json(smoke):
    result, out = smoke
    loaded = ExperimentResult.load(out / "result.json")
    assert json.dumps(loaded.to_dict(), sort_keys=True) == json.dumps(result.to_dict(), sort_keys=True)
    assert [v["verdict_text"] for v in loaded.verdicts()] == [v["verdict_text"] for v in result.verdicts()]
    for m in ("balanced_accuracy", "gils_relative_shift", "probe_label_kept"):
        a, b = loaded.final(m), result.final(m)
        assert all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)
    assert math.isclose(loaded.config["probe"]["eta"], 0.02)
