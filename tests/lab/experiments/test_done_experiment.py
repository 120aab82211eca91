"""Sow et al.'s DONE experiment (dro_lab.experiments.papers.done), checked from the outside: equal tuning effort
for every arm, the paper's r schedule and the baselines' burn-in at the fractions of training the papers use, the
claims' effects against Table 1, RA-Tail-30 against a numpy hand computation from the per-class accuracies, the
class imbalance, the validation floor and the test counts against the raw loaders, a smoke run that yields every
metric, curve and claim, and the JSON round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from dro_lab import DONEStrategy
from dro_lab.data import ArrayDataset, DatasetUnavailableError, load_digits, load_fashion_mnist
from dro_lab.experiments import ExperimentResult, run_experiment, train_arm
from dro_lab.experiments.papers.done import DONE_EXPERIMENT as EXP
from dro_lab.experiments.protocol import effort_problems, tuning_effort

CLASSES = 10
METRICS = {
    "clean_accuracy",
    "robust_accuracy",
    "balanced_robust_accuracy",
    "tail30_robust_accuracy",
    "worst_class_robust_accuracy",
} | {f"class_{c}_robust_accuracy" for c in range(CLASSES)}
ARMS = ("AT", "DONE", "DONE (no implicit)", "GAIRAT", "MAIL")

pytestmark = pytest.mark.slow  # every test here trains (the smoke runs) or reads Fashion-MNIST


def _tail30_by_hand(per_class) -> float:
    """The paper's RA-Tail-30 (§4.1): the mean of the 3 smallest of 10 per-class accuracies."""
    a = np.sort(np.asarray(per_class, dtype=float))
    return float(a[:3].mean())


def _kept(n: int, ratio: float) -> int:
    """How many of ``n`` images a class keeps at ``ratio`` (round half up, at least one)."""
    return max(1, math.floor(ratio * n + 0.5))


# ---------------------------------------------------------------------------------------------- the design
def test_the_arms_are_at_done_with_and_without_the_implicit_term_gairat_and_mail():
    assert tuple(a.name for a in EXP.arms) == ARMS
    strategies = {a.name: a.strategy for a in EXP.arms}
    assert strategies == {
        "AT": "AdversarialTrainingStrategy",
        "DONE": "DONEStrategy",
        "DONE (no implicit)": "DONEStrategy",
        "GAIRAT": "GAIRATStrategy",
        "MAIL": "MAILStrategy",
    }
    done, lite = EXP.arm("DONE"), EXP.arm("DONE (no implicit)")
    assert done.options["implicit"] is True and lite.options["implicit"] is False
    assert dict(done.grid) == dict(lite.grid), "the two DONE arms differ only by the implicit term"
    attacks = {(a.options["eps"], a.options["steps"]) for a in EXP.arms}
    assert len(attacks) == 1, "every arm trains against the same attack"


def test_every_arm_shares_one_lr_grid_and_starts_from_its_default():
    lr = EXP.arms[0].grid["lr"]
    assert all(tuple(a.grid["lr"]) == tuple(lr) for a in EXP.arms)
    first = {a.name: a.settings(1, 0)[0] for a in EXP.arms}
    assert all(s["lr"] == lr[0] for s in first.values())
    assert first["GAIRAT"]["lam"] == -1.0, "GAIRAT's official λ"
    assert first["MAIL"]["bias"] == -1.5, "MAIL's official bias"
    assert first["DONE"]["r"] == 1.0 and "eta" not in first["DONE"]
    assert (10.0, 1.0, 0.1) in EXP.arm("DONE").grid["r"], "the paper's r schedule (App. B.1) is a point of r's grid"


@pytest.mark.parametrize(
    ("dataset", "preset"), [("digits", "full"), ("fashion-mnist", "full"), ("fashion-mnist", "gpu")]
)
def test_the_full_presets_tune_every_arm_with_equal_effort(dataset, preset):
    config = EXP.config(dataset, preset)
    assert effort_problems(EXP, config["trials"]) == []
    effort = tuning_effort(EXP, config["trials"])
    lrs = set(EXP.arm("AT").grid["lr"])
    for arm in EXP.arms:  # every value of every knob, so every learning rate of the shared grid, for every arm
        tried = arm.settings(config["trials"], 0)
        assert {s["lr"] for s in tried} == lrs
        for knob, values in arm.grid.items():
            assert {repr(s[knob]) for s in tried} == {repr(v) for v in values}, (arm.name, knob)
        assert effort[arm.name]["coverage"] >= 0.25
    assert config["lr_schedule"] == "one_cycle" and config["average_last"] == 3
    assert dataset == "digits" or config["aa_per_class"] * CLASSES >= 1000, "AutoAttack on ≥ 1,000 test images"
    assert EXP.plain == "AT"


def test_the_papers_r_schedule_and_the_baselines_burn_in_scale_with_the_epochs():
    # App. B.1: r = 10, then 1 from epoch 41 and 0.1 from epoch 51 of 60, i.e. at 2/3 and 5/6 of training;
    # GAIRAT's and MAIL's official codes reweight from half-way (60 of 120 epochs)
    for epochs, (first_1, first_01), burn_in in ((60, (41, 51), 30), (30, (21, 26), 15), (12, (9, 11), 6)):
        config = {**EXP.config("fashion-mnist", "full"), "epochs": epochs}
        options, _ = EXP.arm("DONE").split({"lr": 0.05, "r": (10.0, 1.0, 0.1)}, config)
        strategy = DONEStrategy(**options)
        schedule = []
        for epoch in range(1, epochs + 1):
            strategy.epoch = epoch
            schedule.append(strategy.current_r())
        assert schedule == [10.0] * (first_1 - 1) + [1.0] * (first_01 - first_1) + [0.1] * (epochs - first_01 + 1)
        constant, _ = EXP.arm("DONE").split({"lr": 0.05, "r": 0.3}, config)
        assert DONEStrategy(**constant).current_r() == 0.3
        for name in ("GAIRAT", "MAIL"):
            options, _ = EXP.arm(name).split(EXP.arm(name).settings(1, 0)[0], config)
            assert options["burn_in_epochs"] == burn_in, name
        assert "burn_in_epochs" not in EXP.arm("AT").split({"lr": 0.05}, config)[0]
    for milestones in ((5,), (5, 5), (1, 5)):  # one start per later value, increasing, after epoch 1
        with pytest.raises(ValueError, match="r_milestones"):
            DONEStrategy(0.1, r=(10.0, 1.0, 0.1), r_milestones=milestones)


def test_a_done_run_steps_r_down_at_two_thirds_and_five_sixths_of_its_epochs():
    config = EXP.config("digits", "smoke", {"epochs": 6})
    splits = EXP.data("digits", 0, config)
    seen = []
    train_arm(EXP, "DONE (no implicit)", splits, config, device="cpu", r=(10.0, 1.0, 0.1),
              callback=lambda epoch, record: seen.append(record["done_r"]))  # fmt: skip
    assert seen == [10.0, 10.0, 10.0, 10.0, 1.0, 0.1]  # 4 of 6 epochs at 10, then one at 1 and one at 0.1


#: Table 1, imbalanced CIFAR-10 (SA, RA-PGD, RA-Tail-30), typed from the paper; DONE-PGD has our inner solver.
_TABLE_1 = {
    "AT": (69.74, 42.37, 6.25),
    "MAIL": (72.01, 45.64, 9.8),
    "GAIRAT": (73.87, 45.18, 16.9),
    "DONE": (74.58, 48.13, 15.83),
}
_COLUMN = {"clean_accuracy": 0, "robust_accuracy": 1, "tail30_robust_accuracy": 2}


def test_the_claims_name_the_papers_numbers_and_its_effects():
    for claim in EXP.claims:
        assert claim.metric in METRICS and claim.higher_is_better
        assert claim.method == "DONE" and claim.paper
        if claim.metric in _COLUMN:
            k = _COLUMN[claim.metric]
            done, base = _TABLE_1["DONE"][k], _TABLE_1[claim.baseline][k]
            assert claim.paper_effect == pytest.approx((done - base) / 100, abs=1e-9), claim.text
            assert f"{done:g}" in claim.paper and f"{base:g}" in claim.paper
        else:
            assert claim.paper_effect is None, "the worst class is not tabulated"
    pairs = {(c.metric, c.baseline) for c in EXP.claims}
    assert {("robust_accuracy", "AT"), ("tail30_robust_accuracy", "AT"), ("worst_class_robust_accuracy", "AT")} <= pairs


# ---------------------------------------------------------------------------------------------- the metrics
class _Lookup(torch.nn.Module):
    """Predicts the class written in the first pixel (value c/10); its input gradient is zero, so PGD cannot
    move it and the robust predictions are the clean ones: every per-class accuracy is known in advance."""

    def forward(self, x):
        pred = torch.round(x.reshape(len(x), -1)[:, 0] * 10).long().clamp(0, CLASSES - 1)
        return 10.0 * torch.nn.functional.one_hot(pred, CLASSES).float() + 0.0 * x.sum()


def test_the_final_metrics_match_a_numpy_hand_computation():
    rng = np.random.default_rng(1)
    correct = rng.permutation(11)[:CLASSES]  # class c: correct[c] of its 10 test images right
    labels, shown = [], []
    for c in range(CLASSES):
        for i in range(10):
            labels.append(c)
            shown.append(c if i < correct[c] else (c + 1) % CLASSES)
    x = torch.zeros(len(labels), 1, 4, 4)
    x[:, 0, 0, 0] = torch.tensor(shown, dtype=torch.float32) / 10
    test = ArrayDataset(x, torch.tensor(labels), num_classes=CLASSES)
    out = EXP.metrics(_Lookup(), test, EXP.config("digits", "smoke"))
    per_class = correct / 10
    assert [out[f"class_{c}_robust_accuracy"] for c in range(CLASSES)] == pytest.approx(per_class)
    assert out["tail30_robust_accuracy"] == pytest.approx(np.sort(per_class)[:3].mean())
    assert out["worst_class_robust_accuracy"] == pytest.approx(per_class.min())
    assert out["robust_accuracy"] == out["clean_accuracy"] == pytest.approx(per_class.mean())
    assert out["balanced_robust_accuracy"] == pytest.approx(per_class.mean())


# ---------------------------------------------------------------------------------------------- the data
def _rows(x: torch.Tensor) -> set[bytes]:
    """Each image as exact integers (digits are multiples of 1/16, 14×14 Fashion-MNIST of 1/1020)."""
    return {r.tobytes() for r in np.rint(x.numpy().reshape(len(x), -1) * 4080).astype(np.int32)}


def _check_splits(s, kept: list[int], fraction: float, raw_x: torch.Tensor) -> None:
    """The training split holds each class's kept images less a stratified ``fraction`` of them (±1 for rounding);
    the validation split holds the rest, topped up to 30 of each class from the unused raw training images: no
    image in both, every image a raw training image."""
    train_n = torch.bincount(s.train.y, minlength=CLASSES).tolist()
    val_n = torch.bincount(s.val.y, minlength=CLASSES).tolist()
    for c in range(CLASSES):
        assert abs(train_n[c] - kept[c] * (1 - fraction)) <= 1, (c, train_n[c], kept[c])
        assert val_n[c] == max(30, kept[c] - train_n[c]), (c, val_n[c], kept[c] - train_n[c])
    train, val = _rows(s.train.x), _rows(s.val.x)
    assert len(train) == len(s.train) and len(val) == len(s.val) and not train & val
    assert train | val <= _rows(raw_x)


def test_digits_training_set_has_the_papers_step_imbalance_and_the_test_set_keeps_every_class():
    config = EXP.config("digits", "full")
    assert config["imbalance_ratio"] == 0.2 and tuple(config["minority_classes"]) == (0, 1, 2, 3, 4)
    for seed in (0, 3):
        raw_train, raw_test = load_digits(seed=seed)
        n = torch.bincount(raw_train.y, minlength=CLASSES).tolist()
        s = EXP.data("digits", seed, config)
        _check_splits(s, [_kept(n[c], 0.2) if c < 5 else n[c] for c in range(CLASSES)], 0.25, raw_train.x)
        assert (
            torch.bincount(s.test.y, minlength=CLASSES).tolist()
            == torch.bincount(raw_test.y, minlength=CLASSES).tolist()
        )


@pytest.fixture(scope="module")
def fashion():
    try:
        load_fashion_mnist(train=False)
    except DatasetUnavailableError:
        pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")


@pytest.mark.parametrize("preset", ["smoke", "full"])
def test_fashion_imbalance_and_test_counts(fashion, preset):
    config = EXP.config("fashion-mnist", preset)
    s = EXP.data("fashion-mnist", 1, config)
    per_class, raw = config["per_class"], load_fashion_mnist(train=True).x
    pooled = torch.from_numpy(raw.numpy().reshape(-1, 1, 14, 2, 14, 2).mean(axis=(3, 5)))
    _check_splits(s, [_kept(per_class, 0.2)] * 5 + [per_class] * 5, 0.1, pooled)
    test_counts = torch.bincount(s.test.y, minlength=CLASSES).tolist()
    want = config["test_per_class"] or 1000
    assert test_counts == [want] * CLASSES
    if preset == "full":
        assert test_counts == [1000] * CLASSES, "the full preset measures on the whole Fashion-MNIST test set"
    side = config["size"]
    assert s.train.in_shape == s.test.in_shape == (1, side, side)
    assert float(s.test.x.min()) >= 0 and float(s.test.x.max()) <= 1


def test_fashion_images_are_the_raw_images_average_pooled(fashion):
    raw = load_fashion_mnist(train=False)
    config = EXP.config("fashion-mnist", "full")
    test = EXP.data("fashion-mnist", 0, config).test
    k = 28 // config["size"]
    by_hand = raw.x.numpy().reshape(-1, 1, config["size"], k, config["size"], k).mean(axis=(3, 5))
    assert np.allclose(test.x.numpy(), by_hand, atol=1e-6)
    assert torch.equal(test.y, raw.y)


# ---------------------------------------------------------------------------------------------- runs
@pytest.mark.filterwarnings("ignore:DONEStrategy\\(eta=0.5\\)")
def test_every_arm_gets_the_same_number_of_trials():
    result = run_experiment(
        EXP, dataset="digits", seeds=[0], preset="smoke", trials=2, progress=False, device="cpu", epochs=1
    )
    per_arm = {m: [t for t in result.trials if t["method"] == m] for m in result.methods}
    assert {m: len(t) for m, t in per_arm.items()} == {a: 2 for a in ARMS}
    for m, trials in per_arm.items():
        assert trials[0]["setting"] == EXP.arm(m).settings(1, 0)[0], "the first trial is the arm's default"
        assert result.chosen[m] == max(trials, key=lambda t: t["score"])["setting"]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("done")
    result = run_experiment(EXP, dataset="digits", seeds=[0, 1], preset="smoke", out=out, progress=False, device="cpu")
    return result, out


def test_a_smoke_run_produces_every_metric_curve_and_claim(smoke):
    result, _ = smoke
    assert set(result.metric_names()) >= METRICS
    assert len(result.runs) == 2 * len(ARMS)
    epochs = result.config["epochs"]
    for run in result.runs:
        final = run["final"]
        assert 0 <= final["robust_accuracy"] <= final["clean_accuracy"] <= 1
        per_class = [final[f"class_{c}_robust_accuracy"] for c in range(CLASSES)]
        assert final["tail30_robust_accuracy"] == pytest.approx(_tail30_by_hand(per_class))
        assert final["worst_class_robust_accuracy"] == pytest.approx(min(per_class))
        assert final["balanced_robust_accuracy"] == pytest.approx(np.mean(per_class))
        curves = {"test_accuracy", "test_worst_class_accuracy"}
        if run["method"].startswith("DONE"):
            curves.add("done_ess_fraction")
        assert set(run["curves"]) == curves and all(len(v) == epochs for v in run["curves"].values())
    verdicts = result.verdicts()
    assert len(verdicts) == len(EXP.claims)
    assert all(v["verdict"] == "not judged" and v["n"] == 2 for v in verdicts), "two seeds draw no verdict"
    for v in verdicts:
        finals = result.final(v["metric"])
        d = finals[v["method"]] - finals[v["baseline"]]
        assert v["mean"] == pytest.approx(float(d.mean()))
    text = result.markdown()
    assert all(c.text.split(" ")[0] in text for c in EXP.claims)


def test_robust_accuracy_is_the_test_set_mean_of_the_per_class_accuracies(smoke):
    # the digits test set is not balanced: the overall RA is the count-weighted mean of the per-class RAs
    result, _ = smoke
    for run in result.runs:
        test = EXP.data("digits", run["seed"], result.config).test
        counts = torch.bincount(test.y, minlength=CLASSES).numpy()
        per_class = np.array([run["final"][f"class_{c}_robust_accuracy"] for c in range(CLASSES)])
        assert run["final"]["robust_accuracy"] == pytest.approx(float(counts @ per_class / counts.sum()))


def test_the_result_survives_a_json_round_trip(smoke):
    result, out = smoke
    loaded = ExperimentResult.load(out / "result.json")
    assert json.loads(json.dumps(loaded.to_dict())) == json.loads(json.dumps(result.to_dict()))
    assert loaded.verdicts() == result.verdicts()
    assert loaded.markdown() == result.markdown()
    for metric in ("tail30_robust_accuracy", "worst_class_robust_accuracy"):
        for m in ARMS:
            assert np.array_equal(loaded.final(metric)[m], result.final(metric)[m])


def test_the_fashion_smoke_preset_runs_with_the_autoattack_rows(fashion):
    result = run_experiment(
        EXP,
        dataset="fashion-mnist",
        seeds=[0],
        preset="smoke",
        progress=False,
        device="cpu",
        methods=["AT", "DONE"],
        aa_per_class=1,
        aa_steps=2,
    )
    assert METRICS | {"autoattack_robust_accuracy", "autoattack_subset_pgd_accuracy"} <= set(result.metric_names())
    for run in result.runs:
        assert 0 <= run["final"]["autoattack_robust_accuracy"] <= run["final"]["clean_accuracy"]
    assert {c["baseline"] for c in result.claims} == {"AT"}
