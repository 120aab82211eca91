"""``dro-lab bench chi2-ball``: the fast-dro baseline solves fast-dro's problem, and the section runs.

The baseline re-implements fast-dro's χ²-ball best response; its oracle here is the problem itself, written
out in numpy: q = (ℓ − η)₊/Σ(ℓ − η)₊ on fast-dro's ball ½·mean((nq − 1)²) = ρ, with η by ``scipy.optimize.brentq``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from scipy import optimize

from dro_lab.bench import weights
from dro_lab.cli import main as cli_main


def levy_ball(losses: np.ndarray, rho: float) -> np.ndarray:
    """max ⟨q, ℓ⟩ s.t. ½·mean((nq − 1)²) ≤ ρ: q ∝ (ℓ − η)₊ with η the root of the ball's boundary (brentq)."""
    n = losses.size

    def q_at(eta):
        pos = np.maximum(losses - eta, 0.0)
        return pos / pos.sum()

    def gap(eta):
        return 0.5 * np.mean((n * q_at(eta) - 1.0) ** 2) - rho

    lo = losses.min() - 1.0
    while gap(lo) > 0:
        lo -= 2.0 * (losses.max() - lo)
    hi = np.sort(losses)[-2]  # the ball's boundary lies below the second largest loss (n > 1 + 2ρ, no ties on top)
    return q_at(optimize.brentq(gap, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500))


@pytest.mark.parametrize("rho", [0.05, 1.0, 20.0])
def test_fastdro_baseline_solves_the_ball(rho):
    losses = np.random.default_rng(0).exponential(size=500)
    q_ref = levy_ball(losses, rho)
    q = weights.fastdro_chi2_ball(torch.from_numpy(losses), rho, tol=1e-12).numpy()
    assert abs(q @ losses - q_ref @ losses) <= 1e-9 * (q_ref @ losses)
    assert 0.5 * np.mean((losses.size * q - 1) ** 2) == pytest.approx(rho, rel=1e-9)
    # a loose tolerance stops early, off the boundary: the tolerance matters to the comparison
    loose = weights.fastdro_chi2_ball(torch.from_numpy(losses), rho, tol=1e-2).numpy()
    assert abs(loose @ losses - q_ref @ losses) > 1e-9 * (q_ref @ losses)


def test_fastdro_baseline_keeps_its_guards():
    flat = torch.full((10,), 2.0, dtype=torch.float64)
    assert torch.equal(weights.fastdro_chi2_ball(flat, 0.5), torch.full((10,), 0.1, dtype=torch.float64))
    few = torch.tensor([1.0, 3.0, 3.0, 2.0], dtype=torch.float64)  # n ≤ 1 + 2ρ: the arg-max set
    assert torch.equal(weights.fastdro_chi2_ball(few, 2.0), torch.tensor([0.0, 0.5, 0.5, 0.0], dtype=torch.float64))


def test_bench_cli_chi2_ball_writes_ratios_and_conventions(tmp_path, capsys):
    out = tmp_path / "chi2.json"
    threads = torch.get_num_threads()
    try:
        rc = cli_main(
            ["bench", "chi2-ball", "--chi2-sizes", "300,2000", "--chi2-rhos", "0.05,1", "--repeats", "2"]
            + ["--budget", "0.5", "--threads", "1", "--json", str(out)]
        )
    finally:
        torch.set_num_threads(threads)  # --threads sets the process's count: give the other tests theirs back
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["sections"] == ["chi2-ball"] and data["results"] == []
    rows = data["chi2_ball"]
    assert [(r["n"], r["rho"]) for r in rows] == [(300, 0.05), (300, 1.0), (2000, 0.05), (2000, 1.0)]
    for r in rows:
        assert r["radius"] == 2 * r["rho"] and r["dtype"] == "float64" and r["threads"] == 1
        assert r["value_rel_gap"] <= 1e-9 and r["fastdro_tol"] in weights.FASTDRO_TOLS
        assert r["ratio"] == pytest.approx(r["fastdro_s"] / r["dro_lab_s"]) and r["paired_ratio"] > 0
    printed = capsys.readouterr().out
    assert "our radius 2ρ" in printed and "float64" in printed and "1 torch threads" in printed
    assert "| n | fast-dro ρ" in printed


def test_bench_cli_rejects_bad_rhos(capsys):
    with pytest.raises(SystemExit):
        cli_main(["bench", "chi2-ball", "--chi2-rhos", "0,-1"])
    assert "--chi2-rhos" in capsys.readouterr().err
