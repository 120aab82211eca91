"""Lesson 07's study (dro_course.lessons.comparison.study, every method compared) against independent oracles.

* the ERM row equals a hand-written Adam loop with the same seed (same init, same batch order), and its
  average / worst-group accuracy equal a brute-force Python loop over that model's test predictions;
* the Pareto front equals a brute-force dominance check; summaries equal ``statistics`` means / stdevs;
* the registry holds one method from each of lessons 01–06; same seed → same accuracies for every method;
* every method builds a strategy of dro_lab.strategies.STRATEGIES;
* bad inputs raise ValueError naming the argument.
"""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _util import fake_comparison_rows as _fake_rows  # tests/_util.py

import dro_lab
import dro_lab.strategies as S
from dro_course.lessons.comparison.study import (
    FAMILIES,
    METHODS,
    MethodSpec,
    available_methods,
    make_benchmark,
    paired_differences,
    pareto_front,
    run_comparison,
    summarise,
)

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def bench():
    return make_benchmark(seed=0)


# --------------------------------------------------------------------------- the benchmark


def test_benchmark_is_imbalanced_in_training_and_balanced_in_test(bench):
    train, test = bench
    tr_counts = np.bincount(train.y.numpy(), minlength=10)
    te_counts = np.bincount(test.y.numpy(), minlength=10)
    full_train, _ = dro_lab.load_digits(flatten=True, seed=0)
    full_counts = np.bincount(full_train.y.numpy(), minlength=10)
    for c in range(10):
        expected = math.floor(0.1 * full_counts[c] + 0.5) if c < 5 else full_counts[c]
        assert tr_counts[c] == expected
    assert te_counts.min() == te_counts.max() > 40  # exactly balanced
    # groups: 1 exactly for the minority classes, in both sets
    for ds in (train, test):
        for yi, gi in zip(ds.y.tolist(), ds.groups.tolist()):
            assert gi == (1 if yi < 5 else 0)
    by_class, _ = make_benchmark(seed=0, groups="class")
    assert by_class.groups.tolist() == by_class.y.tolist()


# --------------------------------------------------------------------------- ERM against a hand-written loop


def _hand_erm(train, test, *, seed, epochs, batch_size, lr, hidden):
    """Adam on the mean cross-entropy over a seeded permutation per epoch; no dro_lab engine involved."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        dro_lab.seed_everything(seed)
        model = dro_lab.MLP(64, 10, hidden=hidden)
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        gen = torch.Generator().manual_seed(seed)
        n = len(train)
        for _ in range(epochs):
            perm = torch.randperm(n, generator=gen)
            for start in range(0, n, batch_size):
                idx = perm[start : start + batch_size]
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(train.x[idx]), train.y[idx]).backward()
                opt.step()
        with torch.no_grad():
            pred = model(test.x).argmax(1).tolist()
    finally:
        torch.set_num_threads(old)
    y, g = test.y.tolist(), test.groups.tolist()
    avg = sum(p == t for p, t in zip(pred, y)) / len(y)
    per_group = {}
    for p, t, gi in zip(pred, y, g):
        hits, total = per_group.get(gi, (0, 0))
        per_group[gi] = (hits + (p == t), total + 1)
    worst = min(h / t for h, t in per_group.values())
    return avg, worst


def test_erm_row_equals_a_hand_written_loop_and_brute_force_metrics(bench):
    train, test = bench
    kw = dict(epochs=3, batch_size=50, lr=0.01, hidden=(16,))
    (row,) = run_comparison(["ERM"], data=bench, seeds=(3,), device="cpu", progress=False, **kw)
    avg, worst = _hand_erm(train, test, seed=3, **kw)
    assert row["avg_acc"] == pytest.approx(avg, abs=1e-12)
    assert row["worst_group_acc"] == pytest.approx(worst, abs=1e-12)
    assert 0.3 < avg < 1.0 and worst < avg  # a trained but imbalanced model
    assert row["method"] == "ERM" and row["seed"] == 3 and row["epochs"] == 3
    assert row["seconds_per_epoch"] > 0 and len(row["per_group_acc"]) == 2


# --------------------------------------------------------------------------- registry


def test_registry_covers_the_methods():
    assert {spec.family for spec in METHODS.values()} <= set(FAMILIES)
    assert available_methods() == tuple(METHODS)
    assert list(METHODS)[0] == "ERM"
    for name in (
        "Static weights",
        "Upsampling",
        "KL-DRO",
        "CVaR",
        "HWS",
        "IS (grad norm)",
        "Online group DRO",
        "ALSO",
        "AT",
        "DONE",
        "LS",
        "GI-LS",
    ):
        assert name in METHODS and METHODS[name].description
    assert "β" in METHODS["KL-DRO"].symbol and METHODS["DONE"].symbol == "r"
    assert "CVaR" in METHODS["CVaR"].symbol and "mixing" in METHODS["IS (grad norm)"].symbol
    assert "optimism" in METHODS["ALSO"].symbol and "smoothing" in METHODS["LS"].symbol


def test_the_strategies_get_the_knobs():
    knobs = dict(
        beta=4.0,
        done_r=0.5,
        cvar_alpha=0.3,
        is_alpha=0.25,
        also_alpha=0.5,
        ls_alpha=0.2,
        group_step=0.02,
        pi_lr=0.01,
        eps=0.1,
        attack_steps=2,
        gils_gamma=1.0,
        gils_eta=0.1,
        gils_steps=2,
        is_refresh_every=1,
    )
    assert METHODS["KL-DRO"].build(knobs).criterion.beta == 4.0
    assert METHODS["HWS"].build(knobs).options["beta"] == 4.0
    also = METHODS["ALSO"].build(knobs)
    assert also.options["tau"] == pytest.approx(0.25) and also.options["alpha"] == 0.5
    assert METHODS["DONE"].build(knobs).r == 0.5
    assert METHODS["IS (grad norm)"].build(knobs).options["alpha"] == 0.25
    assert METHODS["LS"].build(knobs).alpha == 0.2 and METHODS["GI-LS"].build(knobs).alpha == 0.2
    assert METHODS["DONE"].knob(knobs).startswith("r = 0.5")


# --------------------------------------------------------------------------- determinism


def test_same_seed_same_accuracies_for_every_method(bench):
    train, test = bench
    small = (train.subset(torch.arange(0, len(train), 3)), test)
    kw = dict(data=small, seeds=(1,), epochs=1, batch_size=64, device="cpu", progress=False, hidden=(16,))
    a = run_comparison(**kw)
    b = run_comparison(**kw)
    assert [r["method"] for r in a] == list(METHODS)
    for ra, rb in zip(a, b):
        assert (ra["method"], ra["avg_acc"], ra["worst_group_acc"]) == (
            rb["method"],
            rb["avg_acc"],
            rb["worst_group_acc"],
        )
    # different seeds change the runs
    c = run_comparison(["ERM", "HWS"], **{**kw, "seeds": (2,)})
    assert any(rc["avg_acc"] != ra["avg_acc"] for rc, ra in zip(c, [a[0], a[5]]))


def test_threads_are_restored_and_callback_sees_every_row(bench):
    before = torch.get_num_threads()
    seen = []
    rows = run_comparison(
        ["ERM", "CVaR"],
        data=bench,
        seeds=(0, 1),
        epochs=1,
        threads=1,
        progress=False,
        device="cpu",
        callback=seen.append,
    )
    assert torch.get_num_threads() == before
    assert seen == rows and [(r["method"], r["seed"]) for r in rows] == [
        ("ERM", 0),
        ("CVaR", 0),
        ("ERM", 1),
        ("CVaR", 1),
    ]


# --------------------------------------------------------------------------- summaries


def test_summarise_against_statistics():
    rng = random.Random(0)
    rows = _fake_rows(rng)
    table = summarise(rows)
    assert [e["method"] for e in table] == ["ERM", "A", "B"]
    erm_sec = statistics.mean(r["seconds_per_epoch"] for r in rows if r["method"] == "ERM")
    for e in table:
        mine = [r for r in rows if r["method"] == e["method"]]
        for key in ("avg_acc", "worst_group_acc", "seconds_per_epoch"):
            vals = [r[key] for r in mine]
            assert e[key] == pytest.approx(statistics.mean(vals), rel=1e-12)
            assert e[f"{key}_sd"] == pytest.approx(statistics.stdev(vals), rel=1e-12)
        assert e["cost_vs_reference"] == pytest.approx(e["seconds_per_epoch"] / erm_sec)
        assert e["n_seeds"] == 3
    one = summarise([r for r in rows if r["seed"] == 0])
    assert all(e["avg_acc_sd"] == 0.0 for e in one)
    no_ref = summarise([r for r in rows if r["method"] != "ERM"])
    assert all(math.isnan(e["cost_vs_reference"]) for e in no_ref)


def _brute_front(points):
    front = []
    for name, (x, y) in points.items():
        beaten = any((x2 >= x and y2 >= y) and (x2 > x or y2 > y) for n2, (x2, y2) in points.items() if n2 != name)
        if not beaten:
            front.append(name)
    return sorted(front, key=lambda n: points[n])


@pytest.mark.parametrize("trial", range(30))
def test_pareto_front_against_brute_force(trial):
    rng = random.Random(trial)
    k = rng.randint(1, 12)
    grid = [0.1 * i for i in range(6)]  # coarse values: ties on one or both coordinates happen
    points = {f"m{i}": (rng.choice(grid), rng.choice(grid)) for i in range(k)}
    summary = [{"method": n, "avg_acc": x, "worst_group_acc": y} for n, (x, y) in points.items()]
    assert pareto_front(summary) == _brute_front(points)


def test_pareto_front_simple_cases():
    s = [
        {"method": "a", "avg_acc": 0.9, "worst_group_acc": 0.5},
        {"method": "b", "avg_acc": 0.8, "worst_group_acc": 0.7},
        {"method": "c", "avg_acc": 0.7, "worst_group_acc": 0.6},
        {"method": "d", "avg_acc": 0.9, "worst_group_acc": 0.5},
    ]
    assert pareto_front(s) == ["b", "a", "d"]  # c is beaten by b; a and d tie


def test_paired_differences_by_seed():
    rows = _fake_rows(random.Random(1))
    d = paired_differences(rows, metric="avg_acc")
    assert set(d) == {"A", "B"}
    for m in ("A", "B"):
        expect = [
            next(r["avg_acc"] for r in rows if r["method"] == m and r["seed"] == s)
            - next(r["avg_acc"] for r in rows if r["method"] == "ERM" and r["seed"] == s)
            for s in (0, 1, 2)
        ]
        np.testing.assert_allclose(d[m], expect, rtol=0, atol=1e-15)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(methods=["ERM", "nope"]), "methods"),
        (dict(methods=[]), "methods"),
        (dict(methods=["ERM", "ERM"]), "methods"),
        (dict(seeds=()), "seeds"),
        (dict(seeds=(-1,)), "seeds"),
        (dict(seeds=(0, 0)), "seeds"),
        (dict(beta=-1.0), "beta"),
        (dict(beta=0.0), "beta"),
        (dict(beta=float("nan")), "beta"),
        (dict(done_r=0.0), "done_r"),
        (dict(cvar_alpha=0.0), "cvar_alpha"),
        (dict(cvar_alpha=1.5), "cvar_alpha"),
        (dict(is_alpha=1.0), "is_alpha"),
        (dict(is_alpha=-0.1), "is_alpha"),
        (dict(also_alpha=-1.0), "also_alpha"),
        (dict(ls_alpha=0.95), "ls_alpha"),
        (dict(epochs=0), "epochs"),
        (dict(batch_size=0), "batch_size"),
        (dict(lr=0.0), "lr"),
        (dict(threads=0), "threads"),
        (dict(attack_steps=0), "attack_steps"),
        (dict(data=(1, 2, 3)), "data"),
    ],
)
def test_bad_inputs_raise_value_errors_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        run_comparison(**{"progress": False, **kwargs})


def test_data_without_groups_is_refused(bench):
    train, test = bench
    plain = dro_lab.ArrayDataset(test.x, test.y)
    with pytest.raises(ValueError, match="data.*groups"):
        run_comparison(["ERM"], data=(train, plain), progress=False)


def test_summary_helpers_validate():
    with pytest.raises(ValueError, match="rows"):
        summarise([])
    with pytest.raises(ValueError, match="rows"):
        summarise([{"method": "ERM"}])
    with pytest.raises(ValueError, match="summary"):
        pareto_front([])
    with pytest.raises(ValueError, match="reference"):
        paired_differences(_fake_rows(random.Random(0), methods=("A", "B")))
    with pytest.raises(ValueError, match="groups"):
        make_benchmark(groups="pairs")
    with pytest.raises(ValueError, match="keep_fraction"):
        make_benchmark(keep_fraction=0.0)
    with pytest.raises(ValueError, match="minority_classes"):
        make_benchmark(minority_classes=[12])


# --------------------------------------------------------------------------- figure and panel


# --------------------------------------------------------------------------- a method of one's own, data as a dict


def test_a_method_spec_of_ones_own_runs_beside_the_registry(bench):
    """OHEM is not in METHODS: a MethodSpec of one's own trains it; at keep = 1 it keeps every example of every
    batch (the top-k of all b losses is the batch mean), so it trains exactly as ERM does."""
    train, test = bench
    small = (train.subset(torch.arange(0, len(train), 2)), test)
    ohem = MethodSpec("OHEM", "keep", "top-k of each batch", "OHEMStrategy",
                      lambda knobs: {"keep": 1.0})  # fmt: skip
    rows = run_comparison(["ERM", ohem], data=small, seeds=(4,), epochs=5, lr=0.02, device="cpu", progress=False)
    assert [r["method"] for r in rows] == ["ERM", "OHEM"]
    assert rows[1]["strategy"] == dro_lab.OHEMStrategy(1.0).name and rows[1]["family"] == "baseline"
    (hand,) = [r for r in rows if r["method"] == "ERM"]
    assert hand["avg_acc"] > 0.5  # a trained model
    assert rows[1]["avg_acc"] == pytest.approx(hand["avg_acc"], abs=1 / len(test))  # the same up to one image
    assert rows[1]["worst_group_acc"] == pytest.approx(hand["worst_group_acc"], abs=2 / len(test))
    with pytest.raises(ValueError, match="strategy"):
        MethodSpec("X", "—", "d", "NoSuchStrategy")
    with pytest.raises(ValueError, match="family"):
        MethodSpec("X", "—", "d", "ERM", family="neither")
    with pytest.raises(ValueError, match="methods"):
        run_comparison(["ERM", MethodSpec("ERM", "—", "d", "ERM")], progress=False)


def test_data_as_a_dict_of_make_benchmark_arguments():
    options = dict(minority_classes=[3, 8], keep_fraction=0.2, groups="minority")
    kw = dict(seeds=(1,), epochs=1, hidden=(8,), device="cpu", progress=False)
    by_dict = run_comparison(["ERM"], data=options, **kw)
    by_call = run_comparison(["ERM"], data=lambda s: make_benchmark(**options, seed=s), **kw)
    assert by_dict[0]["avg_acc"] == by_call[0]["avg_acc"]
    assert by_dict[0]["worst_group_acc"] == by_call[0]["worst_group_acc"]
    with pytest.raises(ValueError, match="seed"):
        run_comparison(["ERM"], data={"seed": 3}, progress=False)
    with pytest.raises(ValueError, match="keep_fraction"):
        run_comparison(["ERM"], data={"keep_fraction": 2.0}, progress=False)


def test_every_method_has_a_family():
    assert {spec.family for spec in METHODS.values()} == set(FAMILIES)
    told = [m for m, spec in METHODS.items() if spec.family == "groups"]
    assert told == ["Static weights", "Upsampling", "Online group DRO", "ALSO"]
    assert [m for m, spec in METHODS.items() if spec.family == "baseline"] == ["ERM", "AT", "LS"]


def test_every_method_picks_a_strategy_from_the_library_list():
    """Every method of the comparison builds a strategy of the library's one list, dro_lab.strategies.STRATEGIES."""
    knobs = dict(
        beta=10.0,
        cvar_alpha=0.2,
        is_alpha=0.5,
        is_refresh_every=None,
        group_step=0.01,
        also_alpha=1.0,
        pi_lr=0.01,
        eps=0.1,
        attack_steps=2,
        done_r=1.0,
        ls_alpha=0.1,
        gils_gamma=1e-3,
        gils_eta=0.1,
        gils_steps=1,
    )
    for name, spec in METHODS.items():
        strategy = spec.build(knobs)
        assert type(strategy) in S.STRATEGIES.values(), name
