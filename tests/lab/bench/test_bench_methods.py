"""``dro-lab bench also-step / done-step / gils-T``: the training-method sections run and report their ratios."""

from __future__ import annotations

import json

import pytest
import torch

from dro_lab.bench import also
from dro_lab.cli import main as cli_main


def test_bench_also_step_section(tmp_path, capsys):
    out = tmp_path / "also.json"
    rc = cli_main(
        [
            "bench",
            "--only",
            "also-step",
            "--quick",
            "--device",
            "cpu",
            "--also-groups",
            "10,1000",
            "--hws-batch",
            "16",
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    rows = json.loads(out.read_text())["also_step"]
    assert [r["groups"] for r in rows] == [10, 1000]
    for r in rows:
        assert r["also_over_adam"] == pytest.approx(r["also_s"] / r["adam_s"])
        assert min(r["part_fwd_bwd_s"], r["part_theta_s"], r["part_pi_s"]) > 0
        assert r["pi_state_bytes"] == 24 * r["groups"]
    assert "| groups c | Adam step | ALSO step |" in capsys.readouterr().out
    with pytest.raises(ValueError, match="model must be one of"):
        also.bench_also_step([10], model="mlp", device=torch.device("cpu"))


def test_bench_done_step_section(tmp_path):
    out = tmp_path / "done.json"
    assert (
        cli_main(
            ["bench", "--only", "done-step", "--quick", "--device", "cpu", "--done-steps", "2", "--json", str(out)]
        )
        == 0
    )
    r = json.loads(out.read_text())["done_step"]
    assert set(r["configs"]) == {"at", "done", "done_implicit"} and r["pgd_steps"] == 2
    assert r["configs"]["at"]["paired_ratio_vs_at"] == pytest.approx(1.0)
    assert all(c["step_s"] > 0 for c in r["configs"].values())


def test_bench_gils_section(tmp_path):
    out = tmp_path / "gils.json"
    assert (
        cli_main(["bench", "--only", "gils-T", "--quick", "--device", "cpu", "--gils-T", "0,2", "--json", str(out)])
        == 0
    )
    r = json.loads(out.read_text())["gils_T"]
    assert [x["T"] for x in r["rows"]] == [0, 2] and r["rows"][0]["ratio_to_T0"] == pytest.approx(1.0)
    assert all(x["epoch_s"] > 0 and x["ratio_to_ls"] > 0 for x in r["rows"])
