"""Set-up and tear-down shared by the torchrun worker scripts (`ddp_hws_worker.py`, `ddp_fit_worker.py`).

Each worker runs as `python -m torch.distributed.run --nproc_per_node 2 WORKER OUT B` (gloo on CPU) or as a
single process, and saves what it computed to `OUT.rank<r>` for the test to compare.
"""

from __future__ import annotations

import os
import sys

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
