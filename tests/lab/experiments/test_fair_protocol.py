"""Equal tuning effort and the rest of issue 28's protocol, checked from the outside:

* an arm's trials are distinct grid points, its default first, and try every value of every knob once the trials
  reach its count (counted here over the settings returned);
* the expected best validation score after k trials is the brute-force mean over every sequence of k draws;
* the final metrics are the mean over the last epochs of what the engine measured at each of them;
* two runs at once give the same records as one at a time; a run folder refuses another commit;
* a claim against a baseline below plain training says so, and arms that made identical runs are judged once.
"""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest

from dro_lab.data.datasets import split_dataset
from dro_lab.data.embedded import make_minority_blobs
from dro_lab.experiments import (
    Arm,
    Claim,
    Experiment,
    Splits,
    effort_problems,
    expected_validation_performance,
    run_experiment,
    tuning_effort,
)
from dro_lab.experiments import runner as runner_module
from dro_lab.experiments.runner import lr_schedule
from dro_lab.metrics import evaluate
from dro_lab.models import make_model


# Module-level pieces (a run in another process receives the experiment by pickling).
def _data(dataset, seed, config):
    train, test = make_minority_blobs(160, seed=seed, test_size=200)
    fit_part, val = split_dataset(train, test_fraction=0.25, seed=seed)
    return Splits(fit_part, val, test, {"n": len(fit_part)})


def _model(train, config):
    return make_model("logreg", in_shape=train.in_shape, num_classes=2)


def _metrics(model, dataset, config):
    return {"accuracy": evaluate(model, dataset)["accuracy"]}


def _curves(record, config):
    return {"test_accuracy": record["test_accuracy"]}


def _half_the_epochs(config):
    return config["epochs"] // 2


TOY = Experiment(
    name="fair-toy",
    title="toy",
    paper="none",
    arms=(
        Arm("ERM", None, grid={"lr": (0.1, 0.3, 1.0)}),
        Arm("KL", "RobustLossStrategy", {"divergence": "kl"}, grid={"beta": (1.0, 3.0, 10.0), "lr": (0.1, 0.3, 1.0)}),
    ),
    claims=(Claim("KL beats ERM", "accuracy", "KL", "ERM"),),
    data=_data,
    model=_model,
    metrics=_metrics,
    select="accuracy",
    curves=_curves,
    presets={"digits": {"smoke": dict(epochs=4, batch_size=32, lr=0.1, trials=3, average_last=3)}},
    plain="ERM",
)


# --------------------------------------------------------------------------- the trials of an arm


@pytest.mark.parametrize("trials", [1, 3, 4, 7, 12, 40])
@pytest.mark.parametrize("seed", [0, 5])
def test_trials_are_distinct_grid_points_that_try_every_value(trials, seed):
    arm = Arm("x", grid={"lr": (0.01, 0.03, 0.1, 0.3), "beta": (1.0, 0.3, 3.0), "keep": (0.5, 0.25)})
    settings = arm.settings(trials, seed)
    grid = [dict(zip(arm.grid, combo)) for combo in itertools.product(*arm.grid.values())]
    assert len(settings) == min(trials, len(grid)) and all(s in grid for s in settings)
    assert len({json.dumps(s, sort_keys=True) for s in settings}) == len(settings)
    assert settings[0] == {k: v[0] for k, v in arm.grid.items()}  # the default first
    for knob, values in arm.grid.items():
        if len(settings) >= len(values):
            assert {s[knob] for s in settings} == set(values), knob
    assert settings == arm.settings(trials, seed)  # seeded


def test_effort_is_measured_and_shortfalls_are_named():
    effort = tuning_effort(TOY, 3)
    assert effort["ERM"] == {"grid": {"lr": [0.1, 0.3, 1.0]}, "grid_size": 3, "trials": 3, "coverage": 1.0}
    assert effort["KL"]["trials"] == 3 and effort["KL"]["coverage"] == pytest.approx(1 / 3)
    assert effort_problems(TOY, 3) == []
    assert sorted(effort_problems(TOY, 2)) == [
        "ERM: 2 trials cannot try every value of ['lr']",
        "KL: 2 of 9 settings (22%)",
        "KL: 2 trials cannot try every value of ['beta', 'lr']",
    ]
    wide = dataclasses.replace(
        TOY, arms=(*TOY.arms, Arm("wide", "RobustLossStrategy", grid={"beta": tuple(range(1, 14))}))
    )
    assert any("more than 4× apart" in p for p in effort_problems(wide, 13))


# --------------------------------------------------------------------------- expected validation performance


@pytest.mark.parametrize("scores", [[0.3], [0.1, 0.3, 0.2], [0.5, 0.5, 0.9, 0.1], [0.2, 0.7, 0.4, 0.4, 0.6]])
def test_expected_validation_performance_is_the_mean_best_over_every_sequence_of_draws(scores):
    curve = expected_validation_performance(scores)
    for k in range(1, len(scores) + 1):  # every sequence of k draws with replacement, equally likely
        best = [max(draw) for draw in itertools.product(scores, repeat=k)]
        assert curve[k - 1] == pytest.approx(np.mean(best))
    assert curve[0] == pytest.approx(np.mean(scores)) and curve[-1] <= max(scores) + 1e-12


def test_a_diverged_trial_counts_as_the_worst_finite_score():
    assert expected_validation_performance([-np.inf, 0.5, 0.7]) == pytest.approx(
        expected_validation_performance([0.5, 0.5, 0.7])
    )
    with pytest.raises(ValueError, match="finite numbers"):
        expected_validation_performance([np.nan, 0.3])


# --------------------------------------------------------------------------- the runs


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    return run_experiment(TOY, seeds=[0, 1, 2], out=out, progress=False, threads=1), out


def test_the_final_metric_is_the_mean_over_the_last_epochs(serial):
    result, _ = serial
    for run in result.runs:  # fit measured the test accuracy at every epoch, by its own evaluation
        assert run["final"]["accuracy"] == pytest.approx(np.mean(run["curves"]["test_accuracy"][-3:]))
    assert result.meta["threads"] == 1 and result.meta["deterministic"] is True


def test_two_runs_at_once_give_the_same_records(serial, tmp_path):
    result, _ = serial
    parallel = run_experiment(TOY, seeds=[0, 1, 2], out=tmp_path, progress=False, threads=1, jobs=2)
    assert parallel.trials == result.trials and parallel.chosen == result.chosen
    strip = lambda runs: [{k: v for k, v in r.items() if k != "seconds"} for r in runs]  # noqa: E731
    assert strip(parallel.runs) == strip(result.runs)
    assert parallel.tuning == tuning_effort(TOY, 3) and parallel.meta["jobs"] == 2


def test_a_run_folder_refuses_another_commit(serial, monkeypatch):
    _, out = serial
    monkeypatch.setattr(runner_module, "_git_commit", lambda: "0" * 40)
    with pytest.raises(ValueError, match=r"holds runs of another configuration \(differs in \['commit'\]\)"):
        run_experiment(TOY, seeds=[0, 1, 2], out=out, progress=False, threads=1)


def test_a_baseline_below_plain_training_is_flagged(serial):
    result, _ = serial
    shift = {"ERM": 0.0, "KL": -0.2, "CE": 0.0}  # KL, the baseline of the claim, falls 20 points below CE
    runs = [
        {**r, "method": m, "final": {"accuracy": r["final"]["accuracy"] + shift[m] - 0.01 * r["seed"] * (m == "KL")}}
        for r in result.runs
        if r["method"] == "ERM"
        for m in shift
    ]
    claims = [Claim("ERM beats KL", "accuracy", "ERM", "KL"), Claim("ERM beats CE", "accuracy", "ERM", "CE")]
    made = dataclasses.replace(
        result, methods=list(shift), runs=runs, claims=[dataclasses.asdict(c) for c in claims], plain="CE"
    )
    against_kl, against_ce = made.verdicts()
    assert against_kl["baseline_below"].startswith("KL is itself below CE here (-2")
    assert "note: KL is itself below CE" in against_kl["verdict_text"]
    assert against_ce["baseline_below"] is None  # a claim against the plain arm itself
    band = dataclasses.replace(
        made, claims=[dataclasses.asdict(Claim("costs", "accuracy", "ERM", "KL", band=(0.1, 0.2)))]
    )
    assert band.verdicts()[0]["baseline_below"] is None  # a range compares two methods' costs, not a training


def test_arms_with_identical_runs_are_judged_once(serial):
    result, _ = serial
    twin = [{**r, "method": "KL twin"} for r in result.runs if r["method"] == "KL"]
    claims = [Claim("ERM beats KL", "accuracy", "ERM", "KL"), Claim("ERM beats KL twin", "accuracy", "ERM", "KL twin")]
    both = dataclasses.replace(result, methods=["ERM", "KL", "KL twin"], runs=[*result.runs, *twin],
                               claims=[dataclasses.asdict(c) for c in claims])  # fmt: skip
    first, second = both.verdicts()
    assert first["same_as"] is None and second["same_as"] == "ERM beats KL"
    assert first["family"] == second["family"] == 1 and second["verdict_adjusted"] == first["verdict_adjusted"]
    assert both.identical_arms() == {"KL twin": "KL"}


def test_learning_rate_schedules():
    assert lr_schedule(None, 10) is None
    step = lr_schedule("step:20:0.3", 60)
    assert [step(e) for e in (1, 20, 21, 41)] == pytest.approx([1, 1, 0.3, 0.09])
    cycle = lr_schedule("one_cycle", 60)
    assert cycle(25) == 1 and cycle(1) == pytest.approx(1 / 25) and cycle(60) == pytest.approx(1 / 36)
    with pytest.raises(ValueError, match="lr_schedule must be"):
        lr_schedule("cosine", 10)


def test_an_option_that_is_a_function_of_the_configuration():
    arm = Arm("GAIRAT", "GAIRATStrategy", {"burn_in_epochs": _half_the_epochs}, grid={"lr": (0.1,)})
    strategy_options, fit_options = arm.split({"lr": 0.1}, {"epochs": 30})
    assert strategy_options == {"burn_in_epochs": 15} and fit_options == {"lr": 0.1}
