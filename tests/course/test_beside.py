"""beside_reference: the shipped reference first with its verdicts, the live run under it, judged only when it
can carry a verdict (not the smoke preset, at least three paired seeds)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dro_course.beside import beside_reference, claims_in_words, is_illustration, live_label, smoke_artefacts
from dro_lab.experiments import judge, load_reference


def _live(name="hws", *, preset="smoke", seeds=1, part=None):
    """A live run made from the reference's own runs (its first ``seeds`` seeds), relabelled with ``preset``."""
    reference = load_reference(name)
    result = reference.result(part)
    kept = result.seeds[:seeds]
    runs = [r for r in result.runs if r["seed"] in kept]
    return dataclasses.replace(result, preset=preset, seeds=kept, runs=runs)


def test_the_reference_comes_first_with_its_command_and_verdicts():
    text = beside_reference(_live())
    reference = load_reference("hws")
    _, command, result = reference.parts[0]
    before, after = text.split("### Your run", 1)
    assert f"`{command}`" in before and reference.provenance() in before
    for v in result.verdicts():  # the reference's verdicts, recomputed here by judge from its paired seeds
        claim = next(c for c in result.claims if c["text"] == v["text"])
        finals = result.final(claim["metric"])
        d = np.asarray(finals[claim["method"]]) - np.asarray(finals[claim["baseline"]])
        assert judge(d, threshold=claim["threshold"]).verdict == v["verdict"]
        assert v["raw_text"] in before and v["verdict_adjusted"] in before


def test_a_smoke_run_is_an_illustration_without_verdicts():
    text = beside_reference(_live(preset="smoke", seeds=5))
    live = text.split("### Your run", 1)[1]
    assert "an illustration" in live and "no verdict is drawn" in live
    assert "claim (the paper)" not in live and "held" not in live


def test_a_full_run_with_three_seeds_is_judged_by_its_own_seeds():
    text = beside_reference(_live(preset="full", seeds=3))
    live = text.split("### Your run", 1)[1]
    assert "illustration" not in live and "claim (the paper)" in live and "3 seeds" in live


@pytest.mark.parametrize(("preset", "seeds", "expected"), [("smoke", 5, True), ("full", 2, True), ("full", 3, False)])
def test_is_illustration(preset, seeds, expected):
    assert is_illustration(_live(preset=preset, seeds=seeds)) is expected


def test_a_reference_is_named_by_its_name_or_its_lessons_id():
    """The course maps a lesson's id to its reference's name (the library knows the names only)."""
    live = _live("hws", preset="full", seeds=3)
    assert beside_reference(live, "02_hardness_weighted_sampling") == beside_reference(live, "hws")
    assert beside_reference(live, "hws") == beside_reference(live)
    with pytest.raises(ValueError, match="no reference '01_dro_foundations'"):
        beside_reference(live, "01_dro_foundations")


def test_a_reference_of_two_parts_shows_the_one_asked_for():
    live = _live("also", part="ratio 100", preset="smoke")
    text = beside_reference(live, part="ratio 100")
    assert "#### ratio 100" in text and "#### ratio 10\n" not in text
    assert "#### ratio 10\n" in beside_reference(live)
    with pytest.raises(ValueError, match="ratio 7"):
        beside_reference(live, part="ratio 7")


def test_bad_inputs_are_refused_clearly():
    with pytest.raises(TypeError, match="ExperimentResult"):
        beside_reference({"not": "a result"})
    with pytest.raises(TypeError, match="Reference"):
        beside_reference(_live(), reference=3)
    with pytest.raises(ValueError, match="reference 'done'"):
        beside_reference(_live(), reference="done")
    with pytest.raises(TypeError, match="ExperimentResult"):
        is_illustration("hws")


@pytest.mark.slow
def test_train_arm_is_one_run_of_the_runner():
    """The same method, seed and setting through run_experiment (untuned, one trial) and train_arm: equal finals."""
    from dro_lab.experiments import EXPERIMENTS, run_experiment, train_arm

    experiment = EXPERIMENTS["importance"]
    config = experiment.config("digits", "smoke")
    splits = experiment.data("digits", 0, config)
    seen = []
    _, curves, final = train_arm("importance", "SGD p^GN", splits, config, seed=0, device="cpu",
                                 callback=lambda epoch, record: seen.append(epoch))  # fmt: skip
    result = run_experiment("importance", dataset="digits", seeds=[0], preset="smoke", methods=["SGD p^GN"],
                            progress=False, device="cpu")  # fmt: skip
    assert seen == list(range(1, config["epochs"] + 1))
    for metric, value in final.items():
        if "seconds" in metric:  # a timing: never equal twice
            continue
        assert value == pytest.approx(float(result.final(metric)["SGD p^GN"][0]), rel=1e-9, abs=1e-12), metric
    with pytest.raises(ValueError, match="no knob"):
        train_arm("importance", "SGD u", splits, config, beta=3.0)
    with pytest.raises(TypeError, match="Splits"):
        train_arm("importance", "SGD u", {"train": 1}, config)


def test_each_paper_lesson_maps_to_its_reference():
    """Which lesson shows which reference run is the course's mapping; the library knows them by name only."""
    from dro_course.beside import REFERENCE_FOR_LESSON
    from dro_course.syllabus import load_syllabus
    from dro_lab.experiments import REFERENCES

    assert sorted(REFERENCE_FOR_LESSON.values()) == sorted(REFERENCES)
    lessons = list(REFERENCE_FOR_LESSON)
    assert len(set(lessons)) == 5 and all(lesson[:2] in {"02", "03", "04", "05", "06"} for lesson in lessons)
    assert set(lessons) <= set(load_syllabus(check_notebooks=False).ids)
    hws = load_reference(REFERENCE_FOR_LESSON["02_hardness_weighted_sampling"])
    assert hws.to_dict() == load_reference("hws").to_dict()


def test_the_reference_is_drawn_beside_a_live_run():
    from dro_course.figures import reference_beside_live_figure

    reference = load_reference("hws").result()
    live = dataclasses.replace(reference, seeds=[0], runs=[r for r in reference.runs if r["seed"] == 0], preset="smoke")
    fig = reference_beside_live_figure(reference, live, "minority_accuracy")
    titles = [a.text for a in fig.layout.annotations]
    assert titles == [
        f"Reference run<br>fashion-mnist, {len(reference.seeds)} seeds, full preset",
        "Your run (an illustration)<br>fashion-mnist, 1 seed, smoke preset",
    ]
    lines = [t for t in fig.data if t.mode == "lines" and t.fill != "toself"]
    assert len(lines) == 2 * len(reference.methods)
    left = {t.name: t for t in lines if t.xaxis == "x"}
    right = {t.name: t for t in lines if t.xaxis == "x2"}
    for m in reference.methods:  # the left panel is the mean over the five seeds, the right one seed 0's curve
        expected = [
            100 * np.mean([r["curves"]["minority_accuracy"][e] for r in reference.runs if r["method"] == m])
            for e in range(15)
        ]
        np.testing.assert_allclose(left[m].y, expected)
        seed0 = next(r for r in reference.runs if r["method"] == m and r["seed"] == 0)
        np.testing.assert_allclose(right[m].y, 100 * np.array(seed0["curves"]["minority_accuracy"]))
        assert left[m].line.color == right[m].line.color and right[m].showlegend is False
    assert len({t.line.color for t in left.values()}) == len(reference.methods)


@pytest.mark.parametrize("name", ["hws", "also", "done"])
def test_claims_in_words_quote_the_holm_adjusted_verdict_of_every_claim(name):
    reference = load_reference(name)
    rows = reference.verdicts()
    words = claims_in_words(reference).splitlines()
    assert len(words) == len(rows)
    tested = [v for v in rows if not v["same_as"] and v["verdict"] in ("held", "did not hold", "not resolved")]
    for line, v in zip(words, rows):
        assert line.startswith(f"- **{v['text']}**") and v["raw_text"].split(": ", 1)[1] in line
        changed = v["verdict"] in ("held", "did not hold") and v["verdict_adjusted"] == "not resolved"
        assert (f"Alone this would read “{v['verdict']}”" in line) == changed
        if not v["same_as"] and v["note"] != "no spread":
            assert f"other {len(tested) - 1} claims" in line


def test_a_reference_with_two_parts_is_one_family_beside_a_live_run():
    reference = load_reference("also")
    text = beside_reference(_live("also", part="ratio 10"), reference)
    for v in reference.verdicts():  # Holm over both ratios, not per ratio
        assert f"{v['part']}: {v['text']}" in text
    assert all(v["family"] == reference.verdicts()[0]["family"] for v in reference.verdicts())


def _with_finals(live, finals: dict[str, float], curves: dict[str, list[float]] | None = None):
    """``live`` with each method's final ``test_accuracy`` (and per-epoch curve) set by hand."""
    runs = []
    for run in live.runs:
        run = dict(run, final=dict(run["final"], test_accuracy=finals[run["method"]]))
        if curves:
            run["curves"] = dict(run["curves"], test_accuracy=curves[run["method"]])
        runs.append(run)
    return dataclasses.replace(live, runs=runs)


def test_smoke_artefacts_name_an_empty_panel_chance_and_a_falling_curve():
    live = _live("hws")
    zeros = _with_finals(live, dict.fromkeys(live.methods, 0.0))
    assert "every method scores 0" in smoke_artefacts(zeros, "test_accuracy")
    chance = _with_finals(live, {m: 0.1 + 0.3 * (i > 0) for i, m in enumerate(live.methods)})
    said = smoke_artefacts(chance, "test_accuracy", chance=0.1)
    assert f"{live.methods[0]} sits at chance (0.1)" in said and live.methods[1] not in said.split("chance")[0]
    falling = _with_finals(
        live,
        dict.fromkeys(live.methods, 0.5),
        {m: [0.6, 0.5] if m == live.methods[0] else [0.4, 0.5] for m in live.methods},  # fmt: skip
    )
    said = smoke_artefacts(falling, "test_accuracy")
    assert f"falls over training for {live.methods[0]}:" in said and "reference run above" in said
    trained = _with_finals(live, dict.fromkeys(live.methods, 0.5), dict.fromkeys(live.methods, [0.4, 0.5]))
    assert smoke_artefacts(trained, "test_accuracy") == ""
    assert smoke_artefacts(_live("hws", preset="full", seeds=3), "minority_accuracy", chance=0.1) == ""


def test_smoke_artefacts_read_a_curve_named_apart_from_its_final_metric():
    """Lesson 05's curve ``test_accuracy`` ends in the final ``clean_accuracy``: ``curve=`` names it."""
    live = _live("hws")
    falling = _with_finals(live, dict.fromkeys(live.methods, 0.5), dict.fromkeys(live.methods, [0.6, 0.5]))
    runs = [dict(r, final={"clean_accuracy": 0.5, **r["final"]}) for r in falling.runs]
    falling = dataclasses.replace(falling, runs=runs)
    said = smoke_artefacts(falling, "clean_accuracy", curve="test_accuracy")
    assert "`test_accuracy` falls over training" in said and "at chance" not in said


def test_smoke_artefacts_refuse_a_bad_option_on_any_run():
    """Checked before the run's size decides whether there is anything to say: a full run is refused alike."""
    for live in (_live("hws"), _live("hws", preset="full", seeds=3)):
        with pytest.raises(ValueError, match=r"chance must be in \[0, 1\]"):
            smoke_artefacts(live, "minority_accuracy", chance=10.0)
        with pytest.raises(ValueError, match=r"no final metric 'nope'"):
            smoke_artefacts(live, "nope")
        with pytest.raises(ValueError, match=r"no per-epoch curve 'test_acuracy'"):
            smoke_artefacts(live, "minority_accuracy", curve="test_acuracy")
        with pytest.raises(ValueError, match=r"margin must be in \[0, 1\)"):
            smoke_artefacts(live, "minority_accuracy", margin=-0.1)
    with pytest.raises(TypeError, match="ExperimentResult"):
        smoke_artefacts({"ERM": 0.5}, "minority_accuracy")


def test_smoke_artefacts_say_at_0_without_a_reference_and_ignore_a_dip_within_the_margin():
    live = _live("hws")
    flat = _with_finals(live, {m: 0.0 if i == 0 else 0.4 for i, m in enumerate(live.methods)},
                        dict.fromkeys(live.methods, [0.50, 0.49]))  # fmt: skip
    said = smoke_artefacts(flat, "test_accuracy", chance=0.0, reference=False)
    assert f"{live.methods[0]} sits at 0 on `test_accuracy`" in said
    assert "reference run" not in said and "falls" not in said  # a 0.01 dip is within the 0.02 margin
    with pytest.raises(ValueError, match="no final metric"):  # a run without methods has nothing to say about
        smoke_artefacts(dataclasses.replace(live, methods=[], runs=[]), "test_accuracy")
    assert live_label(live) == "Your run (an illustration)"
    assert live_label(_live("hws", preset="full", seeds=3)) == "Your run"
