"""Lesson 07's comparison as the course draws it: the figure (average against worst-group accuracy, cost as area,
one colour per family), the Run panel, and the lesson each method comes from."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
import torch
from _util import fake_comparison_rows as _fake_rows  # tests/_util.py

from dro_course.lessons.comparison.report import LESSON_OF_METHOD
from dro_course.lessons.comparison.study import METHODS, make_benchmark, pareto_front, run_comparison, summarise

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def bench():
    return make_benchmark(seed=0)


def test_the_course_names_one_lesson_per_method_from_lessons_01_to_06():
    assert set(LESSON_OF_METHOD) == set(METHODS), "the course names the lesson of every method, and only those"
    lessons = set(LESSON_OF_METHOD.values())
    for k in range(1, 7):
        ids = [lesson for lesson in lessons if lesson.startswith(f"0{k}_")]
        assert ids, f"no method from lesson 0{k}"
        assert (REPO / "notebooks" / f"{ids[0]}.ipynb").is_file()


def _summary():
    rows = _fake_rows(random.Random(3), methods=("ERM", "KL-DRO", "ALSO", "DONE"))
    for r in rows:
        r["family"] = {"ERM": "baseline", "KL-DRO": "hard examples", "ALSO": "groups", "DONE": "hard examples"}[
            r["method"]
        ]
    return summarise(rows)


def test_comparison_figure_traces():
    from dro_course import figures

    table = _summary()
    front = pareto_front(table)
    fig = figures.comparison_figure(table, front=front)
    names = [t.name for t in fig.data]
    assert sorted(names[: len(table)]) == sorted(e["method"] for e in table)  # the largest marker first
    assert names[len(table) :] == ["Pareto front", "ERM average", "ERM worst group"]
    traces = {t.name: t for t in fig.data[: len(table)]}
    for e in table:
        t = traces[e["method"]]
        assert t.x[0] == pytest.approx(e["avg_acc"]) and t.y[0] == pytest.approx(e["worst_group_acc"])
        # ± sd, cut at [0, 1]
        assert t.error_x.array[0] == pytest.approx(min(e["avg_acc_sd"], 1 - e["avg_acc"]))
        assert t.error_x.arrayminus[0] == pytest.approx(min(e["avg_acc_sd"], e["avg_acc"]))
        assert t.error_y.array[0] == pytest.approx(min(e["worst_group_acc_sd"], 1 - e["worst_group_acc"]))
    # marker area grows with the cost (down to the 8 px floor)
    sizes = {e["method"]: traces[e["method"]].marker.size for e in table}
    costs = {e["method"]: e["seconds_per_epoch"] for e in table}
    for a, b in itertools.permutations(sizes, 2):
        if costs[a] > costs[b]:
            assert sizes[a] >= sizes[b]
    assert max(sizes.values()) == pytest.approx(44.0)
    # same family, same colour; different families, different colours
    col = {e["method"]: traces[e["method"]].marker.color for e in table}
    family = {e["method"]: METHODS[e["method"]].family for e in table}
    for a in col:
        for b in col:
            assert (col[a] == col[b]) == (family[a] == family[b]), (a, b, family[a], family[b])
    assert len(set(family.values())) >= 2
    pf = fig.data[len(table)]
    assert list(pf.x) == sorted(pf.x) and len(pf.x) == len(front)
    erm = table[0]
    assert set(fig.data[-2].x) == {erm["avg_acc"]} and set(fig.data[-1].y) == {erm["worst_group_acc"]}
    bare = figures.comparison_figure([e for e in table if e["method"] != "ERM"])
    assert len(bare.data) == len(table) - 1
    with pytest.raises(ValueError, match="front"):
        figures.comparison_figure(table, front=["nope"])
    with pytest.raises(ValueError, match="empty"):
        figures.comparison_figure([])


def test_comparison_panel_runs_the_selection_with_the_slider_values():
    from dro_course.lessons.comparison import panels

    calls = []
    table = _summary()

    def run_fn(**kw):
        calls.append(kw)
        return [e for e in table if e["method"] in kw["methods"]]

    box = panels.comparison_panel(
        run_fn,
        [e["method"] for e in table],
        summary=table,
        selected=["ERM", "ALSO"],
        beta=3.0,
        cvar_alpha=0.3,
        ls_alpha=0.2,
    )
    assert len(box.figure.data) == len(table) + 3  # the headless summary, before any click
    assert {w.description for w in box.sliders.values()} >= {
        "α (CVaR level)",
        "α (IS uniform mixing)",
        "α (ALSO optimism)",
        "r (DONE temperature)",
    }
    box.sliders["also_alpha"].value = 0.5
    box.button.click()
    assert calls[-1]["methods"] == ["ERM", "ALSO"] and calls[-1]["also_alpha"] == 0.5
    assert calls[-1]["beta"] == pytest.approx(3.0) and calls[-1]["cvar_alpha"] == pytest.approx(0.3)
    assert calls[-1]["ls_alpha"] == pytest.approx(0.2)
    assert [t.name for t in box.figure.data][:2] == ["ERM", "ALSO"]
    assert "best worst-group" in box.readout.value
    box.methods.value = ()
    box.button.click()
    assert len(calls) == 1 and "select" in box.readout.value


def test_the_panel_builds_its_own_run_function(bench):
    """Run with ``options``: the selected methods with one seed and the sliders' knobs, the same numbers as
    run_comparison called directly."""
    from dro_course.lessons.comparison import panels

    train, test = bench
    small = (train.subset(torch.arange(0, len(train), 3)), test)
    options = dict(data=small, hidden=(8,), batch_size=32, device="cpu", threads=1, beta=3.0, cvar_alpha=0.5)
    box = panels.comparison_panel(options=options, seed=2, epochs=1, selected=["ERM", "CVaR"])
    assert box.sliders["beta"].value == pytest.approx(3.0) and box.sliders["cvar_alpha"].value == pytest.approx(0.5)
    box.sliders["cvar_alpha"].value = 0.3
    box.button.click()
    drawn = {t.name: (t.x[0], t.y[0]) for t in box.figure.data if t.mode == "markers"}
    direct = summarise(
        run_comparison(["ERM", "CVaR"], seeds=[2], epochs=1, progress=False, **{**options, "cvar_alpha": 0.3})
    )
    assert drawn == {e["method"]: (e["avg_acc"], e["worst_group_acc"]) for e in direct}
    assert "best worst-group" in box.readout.value
    with pytest.raises(ValueError, match="options"):
        panels.comparison_panel(options={"seeds": [1, 2]})
    with pytest.raises(ValueError, match="run_fn or options"):
        panels.comparison_panel(lambda **k: [], options={})
    with pytest.raises(TypeError, match="options"):
        panels.comparison_panel(options=[1])
