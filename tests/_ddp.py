"""Set-up and tear-down shared by the torchrun worker scripts (`ddp_hws_worker.py`, `ddp_fit_worker.py`), and
the launcher the tests use (:func:`two_ranks_and_one`).

Each worker runs as `python -m torch.distributed.run --nproc_per_node 2 WORKER OUT B` (gloo on CPU) or as a
single process, and saves what it computed to `OUT.rank<r>` for the test to compare.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch
import torch.distributed as dist


def start() -> bool:
    """One torch thread; join the process group when launched by torchrun. Returns whether distributed."""
    torch.set_num_threads(1)
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    return distributed


def finish(result: dict, out: str, distributed: bool) -> None:
    """Save this rank's ``result`` to ``OUT.rank<r>`` and leave the process group."""
    rank = dist.get_rank() if distributed else 0
    torch.save(result, f"{out}.rank{rank}")
    if distributed:
        # every rank reaches the end before any tears gloo down, then the process leaves without the interpreter's
        # teardown: gloo threads still referenced by the DDP model can otherwise abort at exit ("terminate called
        # without an active exception"), which fails the launch although every result was saved
        dist.barrier()
        dist.destroy_process_group()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _run(args: list[str], folder: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).parent)}
    proc = subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def two_ranks_and_one(worker: Path, folder: Path, batch_size: int) -> tuple[dict, dict, dict]:
    """Run ``worker`` under torchrun on 2 gloo ranks with ``batch_size`` each, then alone with the global batch;
    return what rank 0, rank 1 and the single process saved."""
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    _run([*torchrun, str(worker), str(folder / "ddp"), str(batch_size)], folder)
    _run([sys.executable, str(worker), str(folder / "single"), str(2 * batch_size)], folder)
    return tuple(torch.load(folder / name) for name in ("ddp.rank0", "ddp.rank1", "single.rank0"))
