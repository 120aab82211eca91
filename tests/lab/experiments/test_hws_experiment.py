"""Fidon et al.'s HWS experiment (dro_lab.experiments.papers.hws), checked from the outside: the arms (β tuned with
the learning rate beside the paper's β = 10), equal tuning effort in every tuned preset, the presets' protocol
(last-3-epoch means, constant lr, no momentum), the claims, the data draw against the raw scikit-learn digits and
Fashion-MNIST files (no image used twice, 30 validation images of the minority class, the whole test split), the
curves and the early dip against hand-computed values, and a smoke run that yields every metric and curve."""

from __future__ import annotations

import collections
import gzip
import math
from pathlib import Path

import numpy as np
import pytest
import sklearn.datasets
import torch

from dro_lab.experiments import run_experiment
from dro_lab.experiments.papers.hws import HWS_EXPERIMENT as EXP
from dro_lab.experiments.protocol import effort_problems, tuning_effort

ARMS = ("ERM", "HWS", "HWS β=10 (paper)", "OHEM")
PAPER_ARM = "HWS β=10 (paper)"
FASHION = Path("/usr/share/datasets/fashion-mnist")
TUNED = [("digits", "full"), ("fashion-mnist", "full"), ("fashion-mnist", "gpu")]


# ---------------------------------------------------------------------------------------------- the design
def test_beta_is_tuned_with_the_learning_rate_beside_an_arm_at_the_papers_beta():
    assert tuple(a.name for a in EXP.arms) == ARMS and EXP.plain == "ERM"
    lr = tuple(EXP.arm("ERM").grid["lr"])
    assert 0.01 in lr, "the paper's learning rate (App. A.1) is in the grid"
    for arm in EXP.arms:
        assert tuple(arm.grid["lr"]) == lr, "one learning-rate grid shared by every arm"
    hws = EXP.arm("HWS")
    assert hws.strategy == "HardnessWeightedStrategy" and set(hws.grid) == {"lr", "beta"} and not hws.options
    betas = hws.grid["beta"]
    assert sum(0.1 < b < 1 for b in betas) >= 2, "points between ERM-like β = 0.1 and 1"
    assert max(betas) == 10.0 and min(betas) > 0.1, (
        "up to the paper's β = 10; β = 0.1 is ERM, not a point worth a trial"
    )
    paper = EXP.arm(PAPER_ARM)
    assert (
        paper.strategy == "HardnessWeightedStrategy" and paper.options == {"beta": 10.0} and set(paper.grid) == {"lr"}
    )
    assert set(EXP.arm("OHEM").grid) == {"keep", "lr"} and EXP.arm("ERM").strategy is None


@pytest.mark.parametrize(("dataset", "preset"), TUNED)
def test_every_tuned_preset_gives_every_arm_equal_effort_and_every_learning_rate(dataset, preset):
    trials = EXP.config(dataset, preset)["trials"]
    assert effort_problems(EXP, trials) == []
    effort = tuning_effort(EXP, trials)
    sizes = {name: e["grid_size"] for name, e in effort.items()}
    assert sizes == {"ERM": 4, "HWS": 16, PAPER_ARM: 4, "OHEM": 12}
    assert max(sizes.values()) <= 4 * min(sizes.values())
    for arm in EXP.arms:
        assert effort[arm.name]["coverage"] >= 0.25
        for seed in range(3):  # the tuning seed is the first final seed: any of them
            tried = arm.settings(trials, seed)
            assert {s["lr"] for s in tried} == set(arm.grid["lr"])
            if arm.name == "HWS":
                assert {s["beta"] for s in tried} == set(arm.grid["beta"])


def test_presets_average_the_last_three_epochs_at_a_constant_learning_rate_without_momentum():
    for dataset, presets in EXP.presets.items():
        for preset in presets:
            config = EXP.config(dataset, preset)
            assert config["average_last"] == (1 if preset == "smoke" else 3), (dataset, preset)
            assert config["lr_schedule"] is None and config.get("momentum", 0.0) == 0.0
            assert config.get("optimizer", "sgd") == "sgd"
    assert EXP.config("fashion-mnist", "full")["test_per_class"] is None, "the whole test split"


def test_the_claims_name_the_arms_the_paper_and_its_ten_points():
    by_metric = collections.defaultdict(list)
    for claim in EXP.claims:
        by_metric[claim.metric].append(claim)
        assert claim.baseline == "ERM" and "§4" in claim.paper and claim.band is None
    minority = {(c.method, c.threshold, c.paper_effect) for c in by_metric["minority_accuracy"]}
    assert minority == {("HWS", 0.0, 0.10), ("HWS", 0.10, 0.10), (PAPER_ARM, 0.0, 0.10)}
    assert [c.method for c in by_metric["minority_mean_accuracy"]] == ["HWS"]
    assert [c.method for c in by_metric["early_dip"]] == [PAPER_ARM]
    assert "more than 10% of accuracy on the under-represented class" in by_metric["minority_accuracy"][0].paper
    assert "beginning of training" in by_metric["early_dip"][0].paper


# ---------------------------------------------------------------------------------------------- curves
def test_curves_read_the_samplers_mass_on_the_minority_class_and_nan_without_a_sampler():
    config = EXP.config("digits", "smoke")
    record = {"test_accuracy": 0.7, "test_per_class_accuracy": [0.9, 0.8, 0.7, 0.25] + [0.5] * 6}
    plain = EXP.curves(record, config)
    assert plain["test_accuracy"] == 0.7 and plain["minority_accuracy"] == 0.25  # class 3
    assert math.isnan(plain["sampler_ess"]) and math.isnan(plain["minority_mass"])
    mass = [0.1, 0.1, 0.1, 0.32, 0.08, 0.1, 0.05, 0.05, 0.05, 0.05]
    sampled = EXP.curves({**record, "sampler_ess": 12.5, "sampler_class_mass": mass}, config)
    assert sampled["sampler_ess"] == 12.5 and sampled["minority_mass"] == 0.32


def test_the_early_dip_is_the_largest_fall_below_the_running_best_in_the_first_third():
    overall = [0.5, 0.8, 0.6, 0.9, 0.95, 0.96, 0.5, 0.97, 0.98]  # a fall of 0.2 early, of 0.46 late
    minority = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    got = EXP.summaries({"test_accuracy": overall, "minority_accuracy": minority}, {})
    assert got["early_dip"] == pytest.approx(0.2) and got["minority_mean_accuracy"] == pytest.approx(0.4)
    rising = EXP.summaries({"test_accuracy": [0.2, 0.4, 0.3, 0.1, 0.9, 0.95], "minority_accuracy": [0.0] * 6}, {})
    assert rising["early_dip"] == 0.0, "the first third of 6 epochs is epochs 1–2; a later fall is not early"


# ---------------------------------------------------------------------------------------------- the data
def _hashes(x) -> collections.Counter:
    return collections.Counter(hash(row.tobytes()) for row in np.asarray(x, dtype=np.float32).reshape(len(x), -1))


def _check_draw(splits, pool: collections.Counter, config, others: dict[int, int]):
    """The minority's count in training and 30 in validation, every other class's ``others[c]`` images in the two,
    and no image of ``pool`` used twice (nor one from outside it)."""
    minority = config["minority_class"]
    train_counts = torch.bincount(splits.train.y, minlength=10).tolist()
    val_counts = torch.bincount(splits.val.y, minlength=10).tolist()
    kept = config["minority_count"] * (1 - config["val_fraction"])  # a stratified split rounds either way
    assert math.floor(kept) <= train_counts[minority] <= math.ceil(kept)
    assert val_counts[minority] == 30, "the validation split holds 30 images of the minority class"
    assert {c: train_counts[c] + val_counts[c] for c in others} == others
    used = _hashes(splits.train.x) + _hashes(splits.val.x)
    assert all(pool[h] >= k for h, k in used.items()), "no training image used twice, none from elsewhere"


def test_digits_draw_keeps_the_minority_count_and_tops_the_validation_split_up_from_unused_images():
    config = EXP.config("digits", "full")
    digits = sklearn.datasets.load_digits()
    everything = _hashes(digits.images / 16.0)
    for seed in (0, 3):
        splits = EXP.data("digits", seed, config)
        test = _hashes(splits.test.x)
        assert len(splits.test) == 450 and all(everything[h] >= k for h, k in test.items())  # load_digits' 25 %
        pool = everything - test  # the training split: every digit but the test split's
        test_counts = torch.bincount(splits.test.y, minlength=10).tolist()
        others = {c: int((digits.target == c).sum()) - test_counts[c] for c in range(10) if c != 3}
        _check_draw(splits, pool, config, others)  # per_class None: every other training digit is used


def _idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        data = f.read()
    if "labels" in path.name:
        return np.frombuffer(data, np.uint8, offset=8)
    return np.frombuffer(data, np.uint8, offset=16).reshape(-1, 28, 28)


@pytest.mark.slow
def test_fashion_full_draw_keeps_about_61_dresses_and_the_whole_test_split():
    if not (FASHION / "train-images-idx3-ubyte.gz").exists():
        pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
    config = EXP.config("fashion-mnist", "full")
    pool = _hashes(_idx(FASHION / "train-images-idx3-ubyte.gz") / np.float32(255))
    test = _hashes(_idx(FASHION / "t10k-images-idx3-ubyte.gz") / np.float32(255))
    splits = EXP.data("fashion-mnist", 1, config)
    _check_draw(splits, pool, config, {c: config["per_class"] for c in range(10) if c != 3})
    assert _hashes(splits.test.x) == test, "the test set is the whole test split"
    assert 60 <= int((splits.train.y == 3).sum()) <= 61 and len(splits.test) == 10_000
    assert splits.info["val_minority"] == 30 and splits.info["minority_class"] == 3


# ---------------------------------------------------------------------------------------------- a smoke run
@pytest.fixture(scope="module")
def smoke():
    return run_experiment("hws", seeds="0", preset="smoke", progress=False, epochs=3)


def test_a_smoke_run_yields_every_metric_and_curve_with_the_samplers_only_for_hws(smoke):
    assert smoke.plain == "ERM" and [r["method"] for r in smoke.runs] == list(ARMS)
    n_train = sum(smoke.data["0"]["train_per_class"])
    for run in smoke.runs:
        curves, final = run["curves"], run["final"]
        assert set(curves) == {"test_accuracy", "minority_accuracy", "sampler_ess", "minority_mass"}
        assert all(len(v) == 3 for v in curves.values())
        for key in ("accuracy", "balanced_accuracy", "minority_accuracy", "minority_mean_accuracy", "early_dip"):
            assert math.isfinite(final[key]), (run["method"], key)
        assert final["minority_accuracy"] == final["class_3_accuracy"]
        assert final["minority_mean_accuracy"] == pytest.approx(np.mean(curves["minority_accuracy"]))
        acc = curves["test_accuracy"]
        assert final["early_dip"] == pytest.approx(max(0.0, acc[0] - acc[1]))  # the first third of 3 epochs: 2
        ess, mass = np.asarray(curves["sampler_ess"]), np.asarray(curves["minority_mass"])
        if run["method"].startswith("HWS"):
            assert np.all((ess >= 1 - 1e-9) & (ess <= n_train + 1e-6)) and np.all((mass >= 0) & (mass <= 1))
        else:
            assert np.isnan(ess).all() and np.isnan(mass).all()
    assert "accuracy" in smoke.metric_names() and "minority_accuracy" in smoke.metric_names()
