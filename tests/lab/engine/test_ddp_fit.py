"""fit under torchrun (2 CPU processes, gloo, DDP) equals one process with the same global batch.

One worker run trains every strategy in turn (ERM, KL-DRO, HWS, importance sampling, ALSO through
GroupDROStrategy, and ALSO in a user's own DDP loop), so the process start-up is paid once. The oracle
is the single-process run with ``batch_size = 2 b``; the ranks must agree bit for bit with each other
(DDP's all-reduced gradient and the all-gathered losses are the same bits everywhere) and with one
process up to float summation order.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from _ddp import two_ranks_and_one

WORKER = Path(__file__).parents[2] / "ddp_fit_worker.py"
STRATEGIES = ("erm", "kl", "hws", "is", "also")


def _close_records(ddp: list[dict], one: list[dict]) -> None:
    assert len(ddp) == len(one)
    for a, b in zip(ddp, one):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(a[key], (float, list)):  # a list: per-class accuracies, HWS's per-class mass of q
                assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-6), key
            else:
                assert a[key] == b[key], key


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("ddp_fit")
    return two_ranks_and_one(WORKER, tmp_path, batch_size=8)


pytestmark = [
    pytest.mark.slow,
    pytest.mark.ddp,
    pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available"),
]


@pytest.mark.parametrize("name", STRATEGIES)
def test_fit_on_two_gloo_ranks_matches_one_process_with_the_global_batch(runs, name):
    r0, r1, one = (r[name] for r in runs)
    assert r0["world_size"] == r1["world_size"] == 2 and one["world_size"] == 1
    # identical on the ranks (rank 1 started from another initialisation: DDP broadcast rank 0's) ...
    for p0, p1 in zip(r0["params"], r1["params"]):
        assert torch.equal(p0, p1)
    assert r0["records"] == r1["records"]
    # ... and the single process's run, up to summation order
    for p0, p in zip(r0["params"], one["params"]):
        torch.testing.assert_close(p0, p, rtol=1e-5, atol=1e-6)
    _close_records(r0["records"], one["records"])
    for key in ("table", "pi"):  # HWS loss history, IS scores, ALSO's π: global on every rank
        if key in r0:
            assert torch.equal(r0[key], r1[key])
            torch.testing.assert_close(r0[key], one[key], rtol=1e-5, atol=1e-6)


def test_also_in_a_users_own_ddp_loop_syncs_pi_and_the_batch_size(runs):
    r0, r1, one = (r["own_loop_also"] for r in runs)
    assert torch.equal(r0["pi"], r1["pi"])
    torch.testing.assert_close(r0["pi"], one["pi"], rtol=1e-6, atol=1e-9)
    assert not torch.allclose(one["pi"], torch.full_like(one["pi"], 0.5))  # π moved: the check has teeth
    for p0, p1, p in zip(r0["params"], r1["params"], one["params"]):
        assert torch.equal(p0, p1)
        torch.testing.assert_close(p0, p, rtol=1e-5, atol=1e-6)


def test_compressed_workers_are_refused_under_ddp_and_run_alone(runs):
    r0, r1, one = (r["perm_k"] for r in runs)
    assert "does not support distributed training" in r0 and r0 == r1
    assert one == "ran"


def test_distributed_true_without_a_process_group_is_refused():
    from dro_lab import ArrayDataset, fit

    data = ArrayDataset(torch.randn(4, 2), torch.tensor([0, 1, 0, 1]))
    with pytest.raises(ValueError, match="distributed=True needs an initialised process group"):
        fit(torch.nn.Linear(2, 2), data, epochs=1, distributed=True, progress=False, device="cpu")
    with pytest.raises(ValueError, match="distributed must be"):
        fit(torch.nn.Linear(2, 2), data, epochs=1, distributed="yes", progress=False, device="cpu")
