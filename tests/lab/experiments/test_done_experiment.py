"""Sow et al.'s DONE experiment (dro_lab.experiments.papers.done), checked from the outside: the same tuning
budget for every arm, RA-Tail-30 against a numpy hand computation from the per-class accuracies, the class
imbalance and the test counts against the raw loaders, a smoke run that yields every metric, curve and claim,
and the JSON round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from dro_lab.data import ArrayDataset, DatasetUnavailableError, load_digits, load_fashion_mnist
from dro_lab.experiments import ExperimentResult, run_experiment
from dro_lab.experiments.papers.done import DONE_EXPERIMENT as EXP

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
    for dataset, presets in EXP.presets.items():
        for preset, config in presets.items():
            assert config["trials"] <= min(a.grid_size for a in EXP.arms), (dataset, preset)


def test_the_claims_name_the_papers_numbers_and_known_metrics():
    for claim in EXP.claims:
        assert claim.metric in METRICS and claim.higher_is_better
        assert claim.method == "DONE" and claim.paper
    pairs = {(c.metric, c.baseline) for c in EXP.claims}
    assert {("robust_accuracy", "AT"), ("tail30_robust_accuracy", "AT"), ("worst_class_robust_accuracy", "AT")} <= pairs
    assert any("48.13" in c.paper and "42.37" in c.paper for c in EXP.claims)
    assert any("15.83" in c.paper and "6.25" in c.paper for c in EXP.claims)


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
def test_digits_training_set_has_the_papers_step_imbalance_and_the_test_set_keeps_every_class():
    config = EXP.config("digits", "full")
    assert config["imbalance_ratio"] == 0.2 and tuple(config["minority_classes"]) == (0, 1, 2, 3, 4)
    for seed in (0, 3):
        raw_train, raw_test = load_digits(seed=seed)
        n = torch.bincount(raw_train.y, minlength=CLASSES).tolist()
        s = EXP.data("digits", seed, config)
        got = (torch.bincount(s.train.y, minlength=CLASSES) + torch.bincount(s.val.y, minlength=CLASSES)).tolist()
        want = [_kept(n[c], 0.2) if c < 5 else n[c] for c in range(CLASSES)]
        assert got == want
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
    per_class = config["per_class"]
    got = (torch.bincount(s.train.y, minlength=CLASSES) + torch.bincount(s.val.y, minlength=CLASSES)).tolist()
    assert got == [_kept(per_class, 0.2)] * 5 + [per_class] * 5
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
