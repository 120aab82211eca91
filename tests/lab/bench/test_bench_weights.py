"""``dro-lab bench weights``: the scipy baselines reach the library's worst-case objective, and the section runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from dro_lab import worst_case_weights
from dro_lab.bench import weights
from dro_lab.cli import main as cli_main


@pytest.mark.parametrize(("divergence", "knob", "value"), weights.CASES)
def test_scipy_baseline_reaches_the_same_objective(divergence, knob, value):
    rng = np.random.default_rng(0)
    losses = rng.exponential(size=30)
    for solver in (weights.scipy_worst_case, weights.scipy_dual_worst_case):
        _check_baseline(solver, losses, divergence, knob, value)


def _check_baseline(solver, losses, divergence, knob, value):
    q_base = solver(losses, divergence, knob, value)
    q_ours = worst_case_weights(torch.tensor(losses), divergence=divergence, **{knob: value}).numpy()
    assert abs(q_base.sum() - 1) < 1e-6

    # Same objective value (penalty included) within solver tolerance.
    def objective(q):
        if knob != "beta":
            return q @ losses
        p = np.full(len(q), 1 / len(q))
        if divergence == "kl":
            d = np.sum(np.where(q > 0, q * np.log(np.maximum(q, 1e-300) / p), 0))
        else:
            d = np.sum((q - p) ** 2 / p)
        return q @ losses - d / value

    assert objective(q_ours) >= objective(q_base) - 1e-5


@pytest.mark.slow
def test_bench_cli_writes_json_with_ratios(tmp_path, capsys):
    out = tmp_path / "bench.json"
    rc = cli_main(
        [
            "bench",
            "weights",
            "--sizes",
            "50,2000",
            "--repeats",
            "1",
            "--scipy-max-n",
            "50",
            "--dual-max-n",
            "50",
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["machine"]["torch"] == torch.__version__
    rows = data["results"]
    assert {(r["divergence"], r["n"]) for r in rows} >= {("kl", 50), ("cvar", 2000)}
    small = [r for r in rows if r["n"] == 50]
    assert all(r["speedup"] and r["speedup"] > 0 and r["dual_speedup"] > 0 for r in small)
    assert all(r["dual_s"] is None for r in rows if r["n"] == 2000)
    assert "| divergence |" in capsys.readouterr().out
