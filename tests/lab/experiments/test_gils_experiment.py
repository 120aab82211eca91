"""Wang et al.'s GI-LS experiment (dro_lab.experiments.papers.gils), checked from the outside: every arm's tuning
budget and first grid point, GI-LS's grid (T = 0 in it, the default small η first, η inside the search box), the
class counts against the paper's Table 1 typed in here and the images against the raw scikit-learn digits and
Fashion-MNIST files, the metrics against scikit-learn and a hand-computed relative shift, a smoke run that yields
every metric, curve and claim (GI-LS's shift for GI-LS only), and the JSON round trip."""

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


# ---------------------------------------------------------------------------------------------- the design
def test_the_arms_and_their_grids_start_from_each_methods_default():
    assert tuple(a.name for a in EXP.arms) == ARMS
    first = {a.name: a.settings(1, 0)[0] for a in EXP.arms}
    lr = EXP.arms[0].grid["lr"]
    for arm in EXP.arms:
        assert tuple(arm.grid["lr"]) == tuple(lr), "one learning-rate grid shared by every arm"
        assert tuple(arm.grid["weight_decay"]) == tuple(EXP.arms[0].grid["weight_decay"])
        assert first[arm.name]["weight_decay"] == 0.0
    assert first["LS"]["alpha"] == _default(dro_lab.LabelSmoothingStrategy, "alpha")
    assert first["Mixup"]["beta_param"] == _default(dro_lab.MixupStrategy, "beta_param") == 1.0
    assert first["Cutout"]["size"] is None  # the strategy's default: half the image side
    assert first["FGSM-aug"]["eps"] == first["PGD-aug"]["eps"] == pytest.approx(8 / 255)
    lrs = np.sort(np.asarray(lr))
    assert np.all(lrs[1:] / lrs[:-1] > 1.5), "the learning rates are spread on a log scale"


def test_gils_grid_holds_t0_and_starts_from_the_default_small_eta():
    arm = EXP.arm("GI-LS")
    assert arm.strategy == "GILSStrategy" and arm.options["gamma"] == 1e-3  # the paper's γ
    assert 0 in arm.grid["steps"], "T = 0 (plain label smoothing) must be in GI-LS's grid"
    assert 0.0 in arm.grid["alpha"], "α = 0 (Volpi's ADA) must be in GI-LS's grid"
    first = arm.settings(1, 0)[0]
    for knob in ("alpha", "steps", "eta"):
        assert first[knob] == _default(dro_lab.GILSStrategy, knob), knob
    assert first["eta"] == 0.02
    kind, low, high = GILS_SEARCH_SPACE["eta"]
    etas = np.sort(np.asarray(arm.grid["eta"]))
    assert kind == "logfloat" and low <= etas[0] and etas[-1] <= high
    assert np.all(etas[1:] / etas[:-1] > 2), "η's grid is log-spaced"
    assert max(arm.grid["steps"]) <= GILS_SEARCH_SPACE["steps"][2]


def test_every_preset_fits_every_arms_grid():
    for dataset, presets in EXP.presets.items():
        assert {"smoke", "full"} <= set(presets), dataset
        for preset, config in presets.items():
            assert config["trials"] <= min(a.grid_size for a in EXP.arms), (dataset, preset)
            assert config["optimizer"] == "adam"
    assert set(EXP.presets) == {"digits", "fashion-mnist"}


def test_the_claims_are_gils_against_every_baseline_with_the_papers_numbers():
    assert {c.baseline for c in EXP.claims} == set(ARMS) - {"GI-LS"}
    for c in EXP.claims:
        assert c.method == "GI-LS" and c.metric == "balanced_accuracy" and c.higher_is_better
        assert c.threshold == 0.0 and "Table" in c.paper and "84.2" in c.paper
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
        assert _counts(s.train, s.val, k=6) == MT_TRAIN
        assert _counts(s.test, k=6) == MT_TEST
        for ds in (s.train, s.test):
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
    assert _counts(s.train, s.val, k=k) == train and _counts(s.test, k=k) == test


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
    assert _counts(s.train, s.val, k=6) == tuple(config["train_counts"])
    if preset == "full":
        assert tuple(config["train_counts"]) == TILE_TRAIN, "the full preset keeps MT's training counts"
    per_class = config["test_per_class"] or 1000
    assert _counts(s.test, k=6) == (per_class,) * 6
    for ds, raw in ((s.train, raw_train), (s.test, raw_test)):
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
