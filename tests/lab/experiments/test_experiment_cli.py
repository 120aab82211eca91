"""``dro-lab experiment`` (and the expected failures of ``dro-lab``): list, run a smoke experiment into a folder,
resume or ``--restart`` it, and turn every expected failure (a missing or unknown name, an output path that is a
file, a record of an earlier run that cannot be read, a device that is not here) into one line on stderr and exit
status 2, never a traceback."""

from __future__ import annotations

import shlex
import shutil

import pytest
import torch

from dro_lab.cli import main
from dro_lab.experiments import EXPERIMENTS, REFERENCES, ExperimentResult

SMOKE = ["experiment", "hws", "--preset", "smoke", "--seeds", "0", "--methods", "ERM", "HWS β=10 (paper)"]
SMOKE += ["--set", "epochs=2"]


def test_list_names_every_experiment(capsys):
    assert main(["experiment", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in EXPERIMENTS)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """One smoke run of two methods, one seed (about 5 s); tests copy its folder."""
    out = tmp_path_factory.mktemp("smoke") / "hws"
    assert main([*SMOKE, "--out", str(out), "--no-progress"]) == 0
    return out


def _copy(smoke_run, tmp_path):
    return shutil.copytree(smoke_run, tmp_path / "hws")


def _one_error_line(capsys, command="experiment") -> str:
    captured = capsys.readouterr()
    assert captured.out == "", captured.out  # nothing that looks like a result or a listing
    err = captured.err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith(f"dro-lab {command}: error: "), err
    return err.removeprefix(f"dro-lab {command}: error: ")


def test_a_smoke_run_writes_a_result_that_loads(smoke_run):
    result = ExperimentResult.load(smoke_run / "result.json")
    assert result.methods == ["ERM", "HWS β=10 (paper)"] and result.config["epochs"] == 2 and result.seeds == [0]
    assert len(list((smoke_run / "runs").glob("*.json"))) == 2
    assert result.verdicts() and all(v["verdict"] == "not judged" for v in result.verdicts())  # one seed


def test_bad_settings_exit_with_status_2(tmp_path, capsys):
    assert main(["experiment", "hws", "--set", "epochs", "--out", str(tmp_path)]) == 2
    assert main(["experiment", "hws", "--set", "epoch=3", "--out", str(tmp_path)]) == 2
    assert main(["experiment", "nope", "--out", str(tmp_path)]) == 2
    assert "error" in capsys.readouterr().err


def test_no_name_is_a_usage_error_that_names_the_choices(capsys):
    assert main(["experiment"]) == 2
    assert _one_error_line(capsys) == "name an experiment: hws, importance, also, done, gils (--list describes them)"
    assert main(["reference"]) == 2
    assert _one_error_line(capsys, "reference") == (
        "name a reference: hws, importance, also, done, gils or all (--list shows their commands)"
    )
    assert main(["reference", "--list"]) == 0
    listing = capsys.readouterr().out
    assert [line for line in listing.splitlines() if not line.startswith(" ")] == [f"{name}:" for name in REFERENCES]


def test_unknown_names_are_one_line(capsys):
    assert main(["experiment", "nope"]) == 2
    assert _one_error_line(capsys).startswith("experiment must be one of 'hws', 'importance'")
    assert main(["reference", "nope"]) == 2
    assert _one_error_line(capsys, "reference").startswith("no reference 'nope'; references: hws, importance")


def test_an_out_that_is_a_file_is_one_line(tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("")
    assert main([*SMOKE, "--out", str(notes), "--no-progress"]) == 2
    assert _one_error_line(capsys) == f"out={str(notes)!r}: {str(notes)!r} is a file, not a folder; give a folder"
    for action in ("--regenerate", "--bundle"):
        assert main(["reference", "hws", action, "--preset", "smoke", "--runs", str(notes), "--no-progress"]) == 2
        assert _one_error_line(capsys, "reference") == (
            f"runs={str(notes)!r}: {str(notes)!r} is a file, not a folder; give a folder"
        )
    assert notes.read_text() == ""


def test_a_truncated_run_record_names_the_file_and_the_restart_command(smoke_run, tmp_path, capsys):
    out = _copy(smoke_run, tmp_path)
    record = next((out / "runs").glob("run-ERM-0-*.json"))
    record.write_text(record.read_text()[:50])
    assert main([*SMOKE, "--out", str(out), "--no-progress"]) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"run record {str(record)!r} is not valid JSON, truncated or corrupt (")
    assert line.endswith(
        "; delete it and run again to redo just that run, or start the folder over with `dro-lab experiment hws "
        "--dataset digits --seeds 0 --preset smoke --methods ERM 'HWS β=10 (paper)' --set epochs=2 "
        f"--out {shlex.quote(str(out))} --restart`"
    )


def test_a_record_missing_a_field_is_one_line_not_a_key_error(smoke_run, tmp_path, capsys):
    out = _copy(smoke_run, tmp_path)
    record = next((out / "runs").glob("run-ERM-0-*.json"))
    record.write_text('{"seed": 0, "setting": {}, "final": {}, "curves": {}, "seconds": 1.0}')
    assert main([*SMOKE, "--out", str(out), "--no-progress"]) == 2
    assert _one_error_line(capsys).startswith(f"run record {str(record)!r} lacks the field method; delete it and run")


def test_restart_starts_the_folder_over_and_says_what_it_discarded(smoke_run, tmp_path, capsys):
    out = _copy(smoke_run, tmp_path)
    record = next((out / "runs").glob("run-ERM-0-*.json"))
    record.write_text("{")
    (out / "configuration.json").write_text("")
    assert main([*SMOKE, "--out", str(out), "--no-progress", "--restart"]) == 0
    captured = capsys.readouterr()
    assert f"restart: discarded 2 run records, 0 checkpoints, result.json, configuration.json in {out}" in captured.err
    assert ExperimentResult.load(out / "result.json").seeds == [0] and len(list((out / "runs").glob("*.json"))) == 2


def test_an_unreadable_checkpoint_suggests_restart(smoke_run, tmp_path, capsys):
    out = _copy(smoke_run, tmp_path)
    record = next((out / "runs").glob("run-ERM-0-*.json"))
    checkpoint = out / "checkpoints" / (record.stem + ".pt")
    record.unlink()
    checkpoint.write_bytes(b"garbage")
    assert main([*SMOKE, "--out", str(out), "--no-progress"]) == 2
    line = _one_error_line(capsys)
    assert line.startswith(
        f"checkpoint {str(checkpoint)!r} cannot be read (UnpicklingError: Weights only load failed); "
    )
    assert line.endswith(f"--out {out} --restart`") and "resume=False" not in line


@pytest.mark.parametrize("device", ["cuda", "mps", "xpu"])
def test_a_device_that_is_not_here_is_one_line(tmp_path, capsys, monkeypatch, device):
    for module in (torch.cuda, torch.backends.mps, torch.xpu):  # the same on a machine that has one
        monkeypatch.setattr(module, "is_available", lambda: False)
    assert main([*SMOKE, "--out", str(tmp_path / "x"), "--device", device, "--no-progress"]) == 2
    assert _one_error_line(capsys).startswith(f"device={device!r} was asked for but ")
    assert not (tmp_path / "x").exists()  # refused before the folder is made
