"""The reference runs shipped with the package: every file matches the JSON Schema (checked by jsonschema, not by
our own loader), was made by its registered command from today's presets and claims, and judges its claims from
at least five paired seeds; a smoke version of each command regenerates a file that loads."""

from __future__ import annotations

import dataclasses
import json
import math
import shlex
from importlib import resources
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from scipy import stats

from dro_lab.cli import build_parser, main
from dro_lab.data import DatasetUnavailableError, load_fashion_mnist
from dro_lab.experiments import (
    EXPERIMENTS,
    REFERENCES,
    VERDICTS,
    Claim,
    Reference,
    bundle_reference,
    load_reference,
)

DATA = resources.files("dro_lab.experiments").joinpath("reference_results")
SCHEMA = json.loads(DATA.joinpath("reference.schema.json").read_text())
NAMES = list(REFERENCES)
REPO = Path(__file__).resolve().parents[3]


def _shipped(name: str) -> dict:
    return json.loads(DATA.joinpath(f"{name}.json").read_text(encoding="utf-8"))


def test_one_reference_per_paper():
    """The library knows each reference by its experiment's name (which lesson shows it is the course's mapping)."""
    assert sorted(REFERENCES) == sorted(EXPERIMENTS)
    assert all(not hasattr(plan, "lesson") for plan in REFERENCES.values())


@pytest.mark.parametrize("name", NAMES)
def test_the_shipped_file_matches_the_json_schema(name):
    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
    validator.validate(_shipped(name))
    validator.validate(load_reference(name).to_dict())  # what save writes today (no "lesson" key) matches too


@pytest.mark.parametrize("name", NAMES)
def test_the_shipped_result_is_what_its_command_makes_today(name):
    """Same experiment, data set, seeds and preset as the registered command, and the configuration and claims the
    current code gives that command: a reference that drifts from the code fails here and must be regenerated."""
    plan, reference = REFERENCES[name], load_reference(name)
    assert reference.name == name and not hasattr(reference, "lesson")
    assert reference.labels == [p.label for p in plan.parts]
    for part, command, (label, shipped_command, result) in zip(plan.parts, plan.commands(), reference.parts):
        assert shipped_command == command
        experiment = EXPERIMENTS[part.experiment]
        expected = experiment.config(plan.dataset, part.preset or plan.preset, dict(part.overrides))
        assert {k: result.config[k] for k in expected} == json.loads(json.dumps(expected)), label
        assert result.config["tune_seed"] == result.seeds[0] and result.config["trials"] == expected["trials"]
        arms = list(part.methods) if part.methods else [a.name for a in experiment.arms]
        claims = [c for c in experiment.claims if {c.method, c.baseline} <= set(arms)]
        as_read = [json.loads(json.dumps(dataclasses.asdict(Claim(**c)))) for c in result.claims]  # defaults filled in
        assert as_read == [json.loads(json.dumps(dataclasses.asdict(c))) for c in claims]
        assert result.methods == arms
        assert (result.experiment, result.dataset) == (part.experiment, plan.dataset)
        assert result.preset == (part.preset or plan.preset)
        assert result.meta["uncommitted_changes"] is False and len(result.meta["commit"]) == 40
        _check_recorded_command(result.meta["command"], part, plan)


def _check_recorded_command(recorded: str, part, plan) -> None:
    args = build_parser().parse_args(shlex.split(recorded)[1:])
    if args.command == "reference":
        assert args.name in (plan.name, "all") and args.regenerate and args.preset is None and args.seeds is None
        return
    assert (args.command, args.name, args.dataset, args.preset, args.seeds) == (
        "experiment",
        part.experiment,
        plan.dataset,
        plan.preset,
        plan.seeds,
    )
    assert dict(s.split("=", 1) for s in args.overrides) == {k: repr(v) for k, v in part.overrides.items()}
    assert args.methods is None and args.trials is None


@pytest.mark.parametrize("name", NAMES)
def test_every_claim_is_judged_from_five_paired_seeds(name):
    reference = load_reference(name)
    for _, _, result in reference.parts:
        assert len(result.seeds) >= 5
        pairs = {(r["seed"], r["method"]) for r in result.runs}
        assert pairs == {(s, m) for s in result.seeds for m in result.methods}
        for method, setting in result.chosen.items() if result.config["trials"] > 1 else ():  # the best trial
            trials = [t for t in result.trials if t["method"] == method]
            assert setting == max(trials, key=lambda t: t["score"])["setting"]
            assert len(trials) == result.tuning.get(method, {}).get("trials", result.config["trials"])
    for v in reference.verdicts():
        assert v["verdict"] in VERDICTS and v["n"] >= 5
        assert all(math.isfinite(b) for b in v["interval"]), v


def test_a_reference_is_found_by_its_name_only_and_prints_its_provenance():
    """A lesson's id is not a name the library knows; files of earlier versions kept a "lesson" key, which loading
    ignores and saving leaves out."""
    reference = load_reference("hws")
    assert set(reference.to_dict()) == {"schema", "name", "parts"}
    earlier = Reference.from_dict({**_shipped("hws"), "lesson": "02_hardness_weighted_sampling"})
    assert earlier.to_dict() == reference.to_dict()
    with pytest.raises(ValueError, match=r"^no reference '02_hardness_weighted_sampling'; references: hws, importance"):
        load_reference("02_hardness_weighted_sampling")
    text = reference.markdown()
    assert REFERENCES["hws"].commands()[0] in text and "5 paired seeds" in text and "fashion-mnist" in text


def test_bad_requests_are_refused(tmp_path):
    with pytest.raises(ValueError, match="no reference 'nope'"):
        load_reference("nope")
    with pytest.raises(ValueError, match="not both or neither"):
        load_reference()
    with pytest.raises(ValueError, match="schema 0"):
        Reference.from_dict({**_shipped("hws"), "schema": 0})
    with pytest.raises(ValueError, match=r"parts\[0\] lacks \['command'\]"):
        Reference.from_dict({"schema": 1, "name": "x", "parts": [{"label": "", "result": {}}]})
    with pytest.raises(ValueError, match=r"lacks \['name'\]"):
        Reference.from_dict({"schema": 1, "lesson": "x", "parts": _shipped("hws")["parts"]})
    with pytest.raises(FileNotFoundError, match="dro-lab experiment hws"):
        bundle_reference("hws", tmp_path)
    with pytest.raises(ValueError, match="parts"):
        load_reference("also").result("ratio 7")


def test_a_truncated_or_malformed_reference_file_is_one_line_naming_it(tmp_path):
    path = tmp_path / "hws.json"
    path.write_text(json.dumps(_shipped("hws"))[:200], encoding="utf-8")  # a write cut short
    fix = "; regenerate it (`dro-lab reference NAME --regenerate`, or --bundle from its runs)"
    with pytest.raises(ValueError) as raised:
        load_reference(path=path)
    message = str(raised.value)
    assert message.startswith(f"reference {str(path)!r} is not valid JSON, truncated or corrupt (") and fix in message
    path.write_text(json.dumps({**_shipped("hws"), "schema": 0}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"^reference '.*hws\.json' is malformed \(reference schema 0 is not 1"):
        load_reference(path=path)
    with pytest.raises(ValueError, match=r"^reference '.*missing\.json' does not exist; regenerate it"):
        load_reference(path=tmp_path / "missing.json")
    with pytest.raises(TypeError, match="path must be a file path"):
        load_reference(path=3)


def test_a_reference_saves_whole_or_not_at_all(tmp_path, monkeypatch):
    import dro_lab._files as files

    path = load_reference("hws").save(tmp_path / "out" / "hws.json")  # its folder is made
    before = path.read_bytes()
    assert load_reference(path=path).to_dict() == load_reference("hws").to_dict()

    def crash(*args):
        raise KeyboardInterrupt  # Ctrl-C between the write and the rename

    monkeypatch.setattr(files.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        load_reference("also").save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before and sorted(p.name for p in path.parent.iterdir()) == ["hws.json"]


def test_bundling_from_a_runs_path_that_is_a_file_is_refused(tmp_path):
    runs = tmp_path / "runs"
    runs.write_text("")
    with pytest.raises(ValueError, match=r"runs='.*runs': '.*runs' is a file, not a folder"):
        bundle_reference("hws", runs)


def _have_fashion() -> bool:
    try:
        load_fashion_mnist(train=False)
    except DatasetUnavailableError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.skipif(
    not _have_fashion(), reason="Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)"
)
@pytest.mark.parametrize("name", NAMES)
def test_a_smoke_version_of_each_command_regenerates_a_file_that_loads(name, tmp_path, capsys):
    status = main(["reference", name, "--regenerate", "--preset", "smoke", "--seeds", "0", "--runs", str(tmp_path)])
    assert status == 0, capsys.readouterr().err
    data = json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    made = load_reference(path=tmp_path / f"{name}.json")
    assert [r.preset for _, _, r in made.parts] == ["smoke"] * len(REFERENCES[name].parts)
    assert all("--seeds 0 --preset smoke" in c for _, c, _ in made.parts)
    assert "reference:" in capsys.readouterr().out


def test_list_prints_every_command(capsys):
    assert main(["reference", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(c in out for plan in REFERENCES.values() for c in plan.commands())


# ------------------------------------------------------------------------ judged as a sceptical reader would


def _oriented(result, claim) -> np.ndarray:
    """The claim's paired per-seed differences, straight from the stored runs (finite ones only)."""
    finals = {(r["seed"], r["method"]): r["final"][claim["metric"]] for r in result.runs}
    d = np.array([finals[(s, claim["method"])] - finals[(s, claim["baseline"])] for s in result.seeds], dtype=float)
    d = d if claim["higher_is_better"] else -d
    return d[np.isfinite(d)]


def _step_down(p: list[float]) -> list[float]:
    """Holm's adjusted p-values, written out as its definition reads (Holm 1979)."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


@pytest.mark.parametrize("name", NAMES)
def test_every_verdict_is_judged_again_from_the_stored_per_seed_records(name):
    """Interval, p-value and Holm's adjustment recomputed here with scipy from each run's stored final metric."""
    reference = load_reference(name)
    rows = reference.verdicts()
    family = []
    for row in rows:
        d = _oriented(reference.result(row["part"] or None), row)
        assert row["n"] == d.size and row["mean"] == pytest.approx(d.mean())
        if row["band"] is None and d.std() > 0:
            half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
            assert row["interval"] == pytest.approx([d.mean() - half, d.mean() + half])
            assert row["p_value"] == pytest.approx(stats.ttest_1samp(d, row["threshold"]).pvalue)
        if not row["same_as"] and math.isfinite(row["p_value"]):
            family.append(row)
    for row, q in zip(family, _step_down([r["p_value"] for r in family])):
        assert row["p_adjusted"] == pytest.approx(q)
        assert (row["verdict_adjusted"] in ("held", "did not hold")) == (q < 0.05 and row["verdict"] != "not resolved")


@pytest.mark.parametrize("name", NAMES)
def test_a_reference_made_under_the_fair_protocol_shows_its_effort(name):
    """Every arm tuned alike (its trials cover ≥ 25 % of its grid and every value of every knob, grids within 4×),
    10 paired seeds (DONE 5, the importance protocol 45), one thread per run with deterministic algorithms, and a
    second, disjoint seed set."""
    plan = REFERENCES[name]
    reference = load_reference(name)
    first_seeds = set(reference.parts[0][2].seeds)
    for part, (label, _, result) in zip(plan.parts, reference.parts):
        assert result.meta["threads"] == 1 and result.meta["deterministic"] is True, label
        expected_seeds = {"done": 5}.get(name, 10) if result.preset != "protocol" else 45
        assert len(result.seeds) >= (5 if part.methods else expected_seeds), label
        if "second seed set" in label:
            assert not set(result.seeds) & first_seeds, label
        if result.config["trials"] == 1:
            continue
        sizes = []
        for method, effort in result.tuning.items():
            tried = [t["setting"] for t in result.trials if t["method"] == method]
            assert len(tried) == effort["trials"] == min(result.config["trials"], effort["grid_size"]), method
            assert effort["trials"] >= 0.25 * effort["grid_size"] or effort["trials"] == effort["grid_size"], method
            for knob, values in effort["grid"].items():
                assert {json.dumps(s[knob]) for s in tried} == {json.dumps(v) for v in values}, (method, knob)
            sizes.append(effort["grid_size"])
        tuned = [s for s in sizes if s > 1]
        assert max(tuned) <= 4 * min(tuned), label
