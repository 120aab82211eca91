"""The experiment protocol (dro_lab.experiments.run_experiment) on a toy experiment, checked from the outside:
every arm gets the same trials, tuning never sees the test set, the chosen setting is the best trial, the
runs are paired, verdicts are judge's on the per-seed differences, a finished run is not trained again."""

from __future__ import annotations

import dataclasses
import json
import math
import re

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
    effort_problems,
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
                # a tuned preset tunes every arm with equal effort
                if config["trials"] > 1:
                    assert effort_problems(e, config["trials"]) == [], (name, dataset, preset)


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


# --------------------------------------------------------------------------- nothing lost, nothing misstated (issue 26)
def _toy_folder(tmp_path):
    out = tmp_path / "toy"
    run_experiment(TOY, seeds=[0, 1], trials=1, out=out, progress=False, epochs=1)
    return out


def test_a_truncated_run_record_stops_the_resume_naming_it_and_the_way_out(tmp_path):
    out = _toy_folder(tmp_path)
    record = next((out / "runs").glob("run-KL-1-*.json"))
    record.write_text(record.read_text()[:40])  # what a crash mid-write left before writes were atomic
    with pytest.raises(ValueError) as raised:
        run_experiment(TOY, seeds=[0, 1], trials=1, out=out, progress=False, epochs=1)
    message = str(raised.value)
    assert message.startswith(f"run record {str(record)!r} is not valid JSON, truncated or corrupt (")
    assert message.endswith(
        "; delete it and run again to redo just that run, or start the folder over with restart=True"
    )
    record.unlink()  # the advice works: the same call redoes just that run
    again = run_experiment(TOY, seeds=[0, 1], trials=1, out=out, progress=False, epochs=1)
    assert sorted((r["seed"], r["method"]) for r in again.runs) == [(0, "ERM"), (0, "KL"), (1, "ERM"), (1, "KL")]


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda r: {k: v for k, v in r.items() if k != "method"}, "lacks the field method"),
        (lambda r: [r], "holds a JSON list, not an object"),
        (lambda r: {**r, "seed": 7}, "does not hold the run of 'KL' at seed 1"),
    ],
)
def test_a_run_record_missing_a_field_is_named_not_a_key_error(tmp_path, edit, problem):
    out = _toy_folder(tmp_path)
    record = next((out / "runs").glob("run-KL-1-*.json"))
    record.write_text(json.dumps(edit(json.loads(record.read_text()))))
    with pytest.raises(ValueError, match=rf"^run record '.*run-KL-1-.*\.json' {re.escape(problem)}; delete it"):
        run_experiment(TOY, seeds=[0, 1], trials=1, out=out, progress=False, epochs=1)


def test_a_truncated_configuration_is_named(tmp_path):
    out = _toy_folder(tmp_path)
    (out / "configuration.json").write_text('{"experiment": "to')
    with pytest.raises(ValueError, match=r"^configuration '.*configuration\.json' is not valid JSON.*start the folder "
                                         r"over with restart=True, or give another out folder$"):  # fmt: skip
        run_experiment(TOY, seeds=[0, 1], trials=1, out=out, progress=False, epochs=1)


def test_an_unreadable_checkpoint_names_the_file_and_restart_not_fits_keyword(tmp_path):
    out = _toy_folder(tmp_path)
    record = next((out / "runs").glob("run-KL-1-*.json"))
    checkpoint = out / "checkpoints" / (record.stem + ".pt")
    record.unlink()
    checkpoint.write_bytes(b"half a checkpoi")
    with pytest.raises(ValueError) as raised:
        run_experiment(TOY, seeds=[0, 1], trials=1, out=out, progress=False, epochs=1)
    message = str(raised.value)
    assert message.startswith(f"checkpoint {str(checkpoint)!r} cannot be read (") and "\n" not in message
    assert "restart=True" in message and "resume=False" not in message  # run_experiment has no resume keyword


def test_restart_discards_the_folder_and_says_so(tmp_path, capsys):
    out = _toy_folder(tmp_path)
    (out / "configuration.json").write_text("{")  # even a broken folder starts over
    (out / "checkpoints" / "stale.pt").write_bytes(b"x")
    (out / "runs" / "keep-me.txt").write_text("not the runner's")
    result = run_experiment(TOY, seeds=[0], trials=1, out=out, progress=False, epochs=2, restart=True)
    assert capsys.readouterr().err.strip() == (
        f"restart: discarded 4 run records, 1 checkpoints, result.json, configuration.json in {out}"
    )
    assert result.config["epochs"] == 2 and len(list((out / "runs").glob("*.json"))) == 2
    assert (out / "runs" / "keep-me.txt").exists() and not (out / "checkpoints" / "stale.pt").exists()
    assert json.loads((out / "configuration.json").read_text())["config"]["epochs"] == 2


def test_an_out_that_is_a_file_is_refused_before_anything_runs(tmp_path):
    (tmp_path / "notes.txt").write_text("")
    for out in (tmp_path / "notes.txt", tmp_path / "notes.txt" / "sub"):
        with pytest.raises(ValueError, match=rf"^out='{re.escape(str(out))}': '.*notes\.txt' is a file, not a folder"):
            run_experiment(TOY, seeds=[0], trials=1, out=out, progress=False)
    with pytest.raises(TypeError, match="restart must be True or False"):
        run_experiment(TOY, seeds=[0], trials=1, progress=False, restart=1)


def test_a_truncated_result_file_names_itself(tmp_path, toy_result):
    path = tmp_path / "result.json"
    path.write_text((toy_result[1] / "result.json").read_text()[:100])
    with pytest.raises(ValueError, match=rf"^experiment result '{re.escape(str(path))}' is not valid JSON.*--restart"):
        ExperimentResult.load(path)
    broken = {k: v for k, v in toy_result[0].to_dict().items() if k != "seeds"}
    path.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match=r"^experiment result '.*' is malformed \(the result lacks \['seeds'\]\)"):
        ExperimentResult.load(path)


def _five_seeds(toy_result, drop=(), nan=()):
    """The toy result with seeds 0–4: KL 0.8 + small noise, ERM 0.7; ``drop`` / ``nan``: (method, seed) pairs."""
    result = ExperimentResult.from_dict(json.loads(json.dumps(toy_result[0].to_dict())))
    result.seeds, runs = [0, 1, 2, 3, 4], []
    for seed in result.seeds:
        for method, value in (("ERM", 0.70 + 0.01 * seed), ("KL", 0.80 + 0.012 * seed)):
            if (method, seed) in drop:
                continue
            value = math.nan if (method, seed) in nan else value
            runs.append(dict(seed=seed, method=method, setting={}, final={"accuracy": value}, curves={}, seconds=1.0))
    result.runs = runs
    return result


def test_a_diverged_seed_is_set_aside_and_named_never_dropped_silently(toy_result):
    result = _five_seeds(toy_result, nan={("KL", 3)})
    first, second = result.verdicts()
    kept = [0.10 + 0.002 * s for s in (0, 1, 2, 4)]
    expected = judge(kept)  # the four paired seeds, by the one rule
    assert first["verdict"] == expected.verdict == "held" and first["n"] == 4
    assert first["interval"] == pytest.approx(list(expected.interval))
    assert first["judged_seeds"] == [0, 1, 2, 4] and first["set_aside"] == ["seed 3 diverged (KL: nan)"]
    assert first["raw_text"].endswith("; judged on 4 of 5 seeds: seed 3 diverged (KL: nan)")
    assert first["raw_text"] in first["verdict_text"]
    # "KL costs no accuracy" is oriented KL − ERM too (a cost of ERM's): the same seeds, the same word
    assert second["verdict"] == "held" and second["set_aside"] == ["seed 3 diverged (KL: nan)"]
    assert "judged on 4 of 5 seeds: seed 3 diverged (KL: nan)" in result.markdown()


def test_a_claim_left_with_too_few_seeds_is_not_judged_with_the_reason(toy_result):
    result = _five_seeds(toy_result, drop={("ERM", 0), ("KL", 2)}, nan={("KL", 4)})
    first = result.verdicts()[0]
    assert first["verdict"] == "not judged" and first["n"] == 2 and first["judged_seeds"] == [1, 3]
    assert first["raw_text"] == first["verdict_text"] and first["verdict_text"].endswith(
        "; a verdict needs 3 paired seeds; only 2 of 5 paired: seed 0 missing (ERM), seed 2 missing (KL), "
        "seed 4 diverged (KL: nan)"
    )
    nothing = _five_seeds(toy_result, drop={("ERM", s) for s in range(5)}).verdicts()[0]
    assert nothing["verdict"] == "not judged" and nothing["n"] == 0
    assert nothing["verdict_text"].startswith(
        "not judged: no paired seeds; a verdict needs 3 paired seeds; only 0 of 5"
    )


# --------------------------------------------------------------------------- provenance


def _repository(root, name: str) -> None:
    import subprocess

    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n', encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "dro_lab").mkdir()


def test_the_commit_comes_only_from_the_projects_own_checkout(tmp_path):
    """A result records the commit of the dro_lab checkout it was run from; a package installed anywhere else —
    also inside a user's own git repository — records its version, never the user's commit."""
    import subprocess
    from pathlib import Path

    import dro_lab
    from dro_lab.experiments.runner import _git_commit, own_checkout

    here = own_checkout()
    assert here == Path(dro_lab.__file__).resolve().parents[1]  # the tests run in the clone
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True).stdout.strip()
    assert _git_commit() == head and len(head) == 40
    _repository(tmp_path / "mine", "my-thesis")  # a user's repository holding an installed dro_lab
    assert own_checkout(tmp_path / "mine" / "dro_lab") is None
    _repository(tmp_path / "clone", "dro-lab")
    assert own_checkout(tmp_path / "clone" / "dro_lab") == (tmp_path / "clone").resolve()
    (tmp_path / "site").mkdir()
    assert own_checkout(tmp_path / "site" / "dro_lab") is None  # site-packages: no pyproject.toml above
