"""``dro-lab experiment``: list, run a smoke experiment into a folder, refuse bad settings with exit status 2."""

from __future__ import annotations

from dro_lab.cli import main
from dro_lab.experiments import EXPERIMENTS, ExperimentResult


def test_list_names_every_experiment(capsys):
    assert main(["experiment", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in EXPERIMENTS)


def test_a_smoke_run_writes_a_result_that_loads(tmp_path, capsys):
    status = main(
        [
            "experiment",
            "hws",
            "--preset",
            "smoke",
            "--seeds",
            "0",
            "--methods",
            "ERM",
            "HWS β=10",
            "--set",
            "epochs=2",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert status == 0
    result = ExperimentResult.load(tmp_path / "result.json")
    assert result.methods == ["ERM", "HWS β=10"] and result.config["epochs"] == 2 and result.seeds == [0]
    assert "| claim (the paper) | verdict |" in capsys.readouterr().out
    assert len(list((tmp_path / "runs").glob("*.json"))) == 2


def test_bad_settings_exit_with_status_2(tmp_path, capsys):
    assert main(["experiment", "hws", "--set", "epochs", "--out", str(tmp_path)]) == 2
    assert main(["experiment", "hws", "--set", "epoch=3", "--out", str(tmp_path)]) == 2
    assert main(["experiment", "nope", "--out", str(tmp_path)]) == 2
    assert main(["experiment"]) == 2
    assert "error" in capsys.readouterr().err
