"""HardnessWeightedSampler under torchrun (2 CPU processes, gloo) equals one process with the same global batch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

WORKER = Path(__file__).parents[1] / "ddp_hws_worker.py"


def _run(args: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(WORKER.parents[1])}
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available")
def test_two_gloo_ranks_match_one_process_with_the_global_batch(tmp_path):
    b = 8
    _run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(WORKER),
            str(tmp_path / "ddp"),
            str(b),
        ],
        tmp_path,
    )
    _run([sys.executable, str(WORKER), str(tmp_path / "single"), str(2 * b)], tmp_path)
    r0, r1 = (torch.load(tmp_path / f"ddp.rank{r}") for r in (0, 1))
    one = torch.load(tmp_path / "single.rank0")
    assert r0["world_size"] == 2 and one["world_size"] == 1
    # One global draw per iteration: rank 0's slice then rank 1's is the single process's batch.
    assert len(r0["drawn"]) == len(one["drawn"]) == 6 + 2 * 7  # warm start ⌈96/16⌉, then ⌊96/16⌋+1 per epoch
    for a, c, full in zip(r0["drawn"], r1["drawn"], one["drawn"]):
        assert len(a) == len(c) == b
        assert torch.equal(torch.cat([a, c]), full)
    # The history is updated with all ranks' losses: identical on both ranks and equal to one process.
    assert torch.equal(r0["history"], r1["history"])
    torch.testing.assert_close(r0["history"], one["history"], rtol=1e-5, atol=1e-6)
    for p0, p1, p in zip(r0["params"], r1["params"], one["params"]):
        torch.testing.assert_close(p0, p1)
        torch.testing.assert_close(p0, p, rtol=1e-5, atol=1e-6)
