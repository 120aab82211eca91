"""Data-parallel training under ``torchrun``: the layout, the device per rank, the global batch."""

from __future__ import annotations

import os

import torch
from torch import Tensor

from .._validation import check_choice
from ..utils import resolve_device


def layout(distributed) -> tuple[int, int]:
    """``(world_size, rank)`` of the run ``fit`` does: ``(1, 0)`` unless DDP is on."""
    check_choice(distributed, "distributed", ("auto", True, False))
    dist = torch.distributed
    ready = dist.is_available() and dist.is_initialized()
    if distributed is True and not ready:
        raise ValueError(
            "distributed=True needs an initialised process group: run under torchrun and call "
            "torch.distributed.init_process_group('gloo' or 'nccl') before fit"
        )
    if distributed is False or not ready:
        return 1, 0
    return dist.get_world_size(), dist.get_rank()


def rank_device(device, world_size: int) -> torch.device:
    """``device`` for this rank: ``"auto"``/``"cuda"`` → ``cuda:LOCAL_RANK`` under DDP when CUDA is there."""
    if (
        world_size > 1
        and (device is None or (isinstance(device, str) and device in ("auto", "cuda")))
        and torch.cuda.is_available()
    ):
        local = int(os.environ.get("LOCAL_RANK", torch.distributed.get_rank()))
        return torch.device("cuda", local % torch.cuda.device_count())
    return resolve_device(device)


def comm_device(dev: torch.device) -> torch.device:
    """Where collectives run: the GPU for NCCL, the host otherwise (gloo gathers CPU tensors)."""
    return dev if torch.distributed.get_backend() == "nccl" else torch.device("cpu")


def broadcast_seed(seed: int, comm: torch.device) -> int:
    box = torch.tensor([int(seed)], dtype=torch.int64, device=comm)
    torch.distributed.broadcast(box, src=0)
    return int(box.item())


def split_sizes(m: int, world_size: int) -> list[int]:
    """Slice lengths of a global batch of ``m`` over the ranks (``torch.tensor_split``'s: the first
    ``m mod world_size`` ranks get one more; a rank may get none)."""
    q, r = divmod(m, world_size)
    return [q + 1 if k < r else q for k in range(world_size)]


def gather_global_batch(
    losses: Tensor, index: Tensor, groups: Tensor | None, sizes: list[int], rank: int, comm: torch.device
) -> tuple[Tensor, Tensor, Tensor | None]:
    """The global batch's ``(losses, index, groups)`` on every rank, from each rank's slice.

    One all-gather of a float64 ``(max slice, 3)`` block (exact for float32/bfloat16 losses and for
    integer ids below 2⁵³). The other ranks' losses are constants; this rank's slice keeps its graph,
    so a reduction of the returned vector back-propagates into this rank's forward pass only, and the
    sum over ranks of those gradients is the gradient of the global reduction.
    """
    world_size, m = len(sizes), max(sizes)
    block = torch.zeros(m, 3, dtype=torch.float64, device=comm)
    k = losses.shape[0]
    block[:k, 0] = losses.detach().to(comm, torch.float64)
    block[:k, 1] = index.to(comm, torch.float64)
    if groups is not None:
        block[:k, 2] = groups.to(comm, torch.float64)
    parts = [torch.empty_like(block) for _ in range(world_size)]
    torch.distributed.all_gather(parts, block)
    rows = torch.cat([part[:size] for part, size in zip(parts, sizes)]).to(losses.device)
    start = sum(sizes[:rank])
    glob = rows[:, 0].to(losses.dtype)
    glob = torch.cat([glob[:start], losses, glob[start + k :]])
    g_index = rows[:, 1].to(torch.int64).to(index.device)
    g_groups = rows[:, 2].to(torch.int64).to(groups.device) if groups is not None else None
    return glob, g_index, g_groups
