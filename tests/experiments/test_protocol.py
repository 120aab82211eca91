"""The experiment protocol (dro_lab.experiments.run_experiment) on a toy experiment, checked from the outside:
every arm gets the same trials, tuning never sees the test set, the chosen setting is the best trial, the
runs are paired, verdicts are judge's on the per-seed differences, a finished run is not trained again."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from dro_lab.data.datasets import split_dataset
from dro_lab.data.embedded import make_minority_blobs
from dro_lab.experiments import (
    EXPERIMENTS,
    Arm,
    Claim,
    Experiment,
    ExperimentResult,
    Splits,
    judge,
    parse_seeds,
    run_experiment,
)
from dro_lab.experiments import runner as runner_module
from dro_lab.models import make_model

SEEN: list[tuple[str, int]] = []  # (which split the metrics were measured on, its size)


def _data(dataset, seed, config):
    train, test = make_minority_blobs(200, seed=seed, test_size=300)
    fit_part, val = split_dataset(train, test_fraction=0.25, seed=seed)
    test.tag, val.tag = "test", "val"
    return Splits(fit_part, val, test, {"seed": seed, "n_train": len(fit_part)})


def _metrics(model, dataset, config):
    SEEN.append((getattr(dataset, "tag", "?"), len(dataset)))
    from dro_lab.metrics import evaluate

    r = evaluate(model, dataset)
    return {"accuracy": r["accuracy"], "worst_group_like": r["worst_class_accuracy"]}


TOY = Experiment(
    name="toy",
    title="toy",
    paper="none",
    arms=(
        Arm("ERM", None, grid={"lr": (0.1, 0.01, 0.3, 1.0)}),
        Arm("KL", "RobustLossStrategy", {"divergence": "kl"}, grid={"beta": (1.0, 10.0), "lr": (0.1, 0.3)}),
    ),
    claims=(
        Claim("KL beats ERM", "accuracy", "KL", "ERM"),
        Claim("KL costs no accuracy", "accuracy", "ERM", "KL", higher_is_better=False),
    ),
    data=_data,
    model=lambda train, config: make_model("logreg", in_shape=train.in_shape, num_classes=2),
    metrics=_metrics,
    select="accuracy",
    curves=lambda record, config: {"test_accuracy": record["test_accuracy"]},
    presets={"digits": {"smoke": dict(epochs=2, batch_size=32, lr=0.1, trials=3)}},
    summaries=lambda curves, config: {"mean_test_accuracy": float(np.mean(curves["test_accuracy"]))},
)


@pytest.fixture(scope="module")
def toy_result(tmp_path_factory):
    SEEN.clear()
    out = tmp_path_factory.mktemp("toy")
    result = run_experiment(TOY, seeds=[0, 1, 2], out=out, progress=False)
    return result, out, list(SEEN)


def test_every_arm_gets_the_same_number_of_trials_and_keeps_its_best(toy_result):
    result, _, _ = toy_result
    per_arm = {m: [t for t in result.trials if t["method"] == m] for m in result.methods}
    assert {m: len(t) for m, t in per_arm.items()} == {"ERM": 3, "KL": 3}
    for m, trials in per_arm.items():
        assert trials[0]["setting"] == {k: v[0] for k, v in TOY.arm(m).grid.items()}  # the default first
        assert len({json.dumps(t["setting"], sort_keys=True) for t in trials}) == 3  # no repeats
        best = max(trials, key=lambda t: t["score"])
        assert result.chosen[m] == best["setting"]
        assert all(r["setting"] == best["setting"] for r in result.runs if r["method"] == m)


def test_tuning_scores_the_validation_split_and_final_runs_the_test_set(toy_result):
    result, _, seen = toy_result
    n_trials, n_runs = len(result.trials), len(result.runs)
    assert [s[0] for s in seen] == ["val"] * n_trials + ["test"] * n_runs
    assert {s[1] for s in seen[n_trials:]} == {300}


def test_runs_are_paired_and_verdicts_are_judges_on_the_per_seed_differences(toy_result):
    result, _, _ = toy_result
    assert sorted((r["seed"], r["method"]) for r in result.runs) == sorted(
        (s, m) for s in (0, 1, 2) for m in ("ERM", "KL")
    )
    acc = {(r["seed"], r["method"]): r["final"]["accuracy"] for r in result.runs}
    d = np.array([acc[(s, "KL")] - acc[(s, "ERM")] for s in (0, 1, 2)])
    first, second = result.verdicts()
    expected = judge(d)
    assert first["verdict"] == expected.verdict and first["interval"] == pytest.approx(list(expected.interval))
    assert second["verdict"] == judge(d).verdict  # "ERM costs more than KL" oriented the same way
    curves = result.curve("test_accuracy", "KL")
    assert curves.shape == (3, 2)
    mean_acc = result.final("mean_test_accuracy")["KL"]
    assert mean_acc == pytest.approx(curves.mean(axis=1))


def test_the_result_round_trips_through_json_and_a_finished_run_is_not_trained_again(toy_result, monkeypatch):
    result, out, _ = toy_result
    loaded = ExperimentResult.load(out / "result.json")
    assert loaded.to_dict() == json.loads(json.dumps(result.to_dict()))

    def no_training(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr(runner_module, "fit", no_training)
    again = run_experiment(TOY, seeds=[0, 1, 2], out=out, progress=False)
    assert again.runs == json.loads(json.dumps(result.runs)) and again.chosen == result.chosen


def test_a_run_trained_again_matches_the_first(toy_result, tmp_path):
    result, out, _ = toy_result
    for f in list((out / "runs").glob("run-KL-2-*.json")):  # forget the last run: it is trained again
        f.unlink()
    again = run_experiment(TOY, seeds=[0, 1, 2], out=out, progress=False)
    assert again.runs[-1]["final"] == result.runs[-1]["final"]  # same seed, same setting: bit-identical on CPU


def test_methods_picks_arms_and_keeps_only_their_claims():
    result = run_experiment(TOY, seeds=[0], methods=["ERM"], trials=1, progress=False)
    assert result.methods == ["ERM"] and result.claims == [] and result.trials == []


def test_schema_errors_are_clear(toy_result):
    data = toy_result[0].to_dict()
    with pytest.raises(ValueError, match="schema"):
        ExperimentResult.from_dict({**data, "schema": 99})
    with pytest.raises(ValueError, match="lacks"):
        ExperimentResult.from_dict({k: v for k, v in data.items() if k != "seeds"})
    broken = json.loads(json.dumps(data))
    del broken["runs"][0]["final"]
    with pytest.raises(ValueError, match=r"runs\[0\] lacks \['final'\]"):
        ExperimentResult.from_dict(broken)


@pytest.mark.parametrize(
    ("text", "seeds"),
    [("0-4", [0, 1, 2, 3, 4]), ("0,2,5", [0, 2, 5]), ("3", [3]), ("1-2,7", [1, 2, 7]), ([4, 1], [4, 1]), (2, [2])],
)
def test_parse_seeds(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: parse_seeds("4-1"), ValueError),
        (lambda: parse_seeds("a"), ValueError),
        (lambda: parse_seeds("1,1"), ValueError),
        (lambda: run_experiment("nope"), ValueError),
        (lambda: run_experiment(3), TypeError),
        (lambda: run_experiment(TOY, dataset="imagenet"), ValueError),
        (lambda: run_experiment(TOY, trials=5, progress=False), ValueError),  # ERM's grid has 4 settings
        (lambda: run_experiment(TOY, methods=["SVM"]), ValueError),
        (lambda: run_experiment(TOY, epochs_typo=3), ValueError),
        (lambda: run_experiment(TOY, preset="gpu"), ValueError),
        (lambda: Arm("a", grid={"lr": ()}), ValueError),
    ],
)
def test_bad_arguments_are_refused(call, error):
    with pytest.raises(error):
        call()


def test_every_registered_experiment_is_consistent():
    for name, e in EXPERIMENTS.items():
        assert e.name == name and e.arms and e.claims
        for dataset, presets in e.presets.items():
            assert dataset in ("digits", "fashion-mnist") and "smoke" in presets and "full" in presets
            for preset, config in presets.items():
                trials = config["trials"]
                assert all(a.grid_size >= trials for a in e.arms), (name, dataset, preset)


def test_arms_whose_names_differ_in_a_greek_letter_keep_separate_runs(tmp_path):
    greek = dataclasses.replace(
        TOY,
        arms=(Arm("KL α=1", "RobustLossStrategy", {"divergence": "kl", "beta": 1.0}),
              Arm("KL β=1", "RobustLossStrategy", {"divergence": "kl", "beta": 10.0})),
        claims=(),
    )  # fmt: skip
    result = run_experiment(greek, seeds=[0], trials=1, out=tmp_path, progress=False)
    assert len(list((tmp_path / "runs").glob("*.json"))) == 2
    assert [r["method"] for r in result.runs] == ["KL α=1", "KL β=1"]
    names = sorted(p.name for p in (tmp_path / "runs").glob("*.json"))
    assert any("α" in n for n in names) and any("β" in n for n in names)


def test_a_folder_of_another_configuration_is_not_resumed(tmp_path):
    run_experiment(TOY, seeds=[0], trials=1, out=tmp_path, progress=False, epochs=1)
    with pytest.raises(ValueError, match=r"another configuration \(differs in \['epochs'\]\)"):
        run_experiment(TOY, seeds=[0], trials=1, out=tmp_path, progress=False, epochs=2)
    more_seeds = run_experiment(TOY, seeds=[0, 1], trials=1, out=tmp_path, progress=False, epochs=1)
    assert more_seeds.seeds == [0, 1]  # more seeds of the same configuration resume


def test_the_result_says_whether_the_checkout_had_uncommitted_changes(toy_result):
    result, _, _ = toy_result
    assert result.meta["uncommitted_changes"] in (True, False, None) and "commit" in result.meta
