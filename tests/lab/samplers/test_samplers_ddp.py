"""HardnessWeightedSampler under torchrun (2 CPU processes, gloo) equals one process with the same global batch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from _ddp import two_ranks_and_one

WORKER = Path(__file__).parents[2] / "ddp_hws_worker.py"


@pytest.mark.slow
@pytest.mark.ddp
@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available")
def test_two_gloo_ranks_match_one_process_with_the_global_batch(tmp_path):
    b = 8
    r0, r1, one = two_ranks_and_one(WORKER, tmp_path, batch_size=b)
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
