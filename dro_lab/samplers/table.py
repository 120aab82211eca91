"""The table sampler: what the hardness-weighted and the importance sampler share.

A per-example table on the sampler's device, a ``torch.Generator``, lazily drawn epochs, a guard against
stale draws (DataLoader prefetching), and the DDP layout (every rank draws the same global batch and
takes its slice; updates are all-gathered).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator

import torch
from torch import Tensor
from torch.utils.data import Sampler

from .._validation import check_int
from ..utils import resolve_device


def _dist_world() -> tuple[int, int]:
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return 1, 0


def mean_over_duplicates(indices: Tensor, values: Tensor) -> Tensor:
    """Each position's value replaced by the mean over the positions holding the same index.

    Duplicates then write one identical value, so an indexed assignment is deterministic (in any
    order, on any device), and the cost is O(b log b), never O(n) (``scatter_reduce_(reduce="mean")``
    allocates a count buffer the size of the history). On the CPU a sort finds duplicates (a
    host-side test is free there); on accelerators an equality matrix avoids the sync for
    ordinary batches.
    """
    b = indices.numel()
    if indices.device.type != "cpu" and b <= 2048:
        same = (indices[:, None] == indices[None, :]).to(values.dtype)
        return (same @ values) / same.sum(1)
    ordered, order = torch.sort(indices)
    if indices.device.type == "cpu" and not bool((ordered[1:] == ordered[:-1]).any()):
        return values
    _, inverse, counts = torch.unique_consecutive(ordered, return_inverse=True, return_counts=True)
    means = torch.zeros(counts.numel(), dtype=values.dtype, device=values.device).index_add_(0, inverse, values[order])
    out = torch.empty_like(values)
    out[order] = (means / counts.to(values.dtype))[inverse]
    return out


def _broadcast_seed(seed: int, world_size: int) -> int:
    if world_size > 1 and torch.distributed.is_available() and torch.distributed.is_initialized():
        box = [seed]
        torch.distributed.broadcast_object_list(box, src=0)
        return int(box[0])
    return seed


class TableSampler(Sampler[list[int]]):
    """What the table-driven batch samplers share: the layout (n, b, DDP), the generator, lazy epochs,
    the staleness guard and the all-gather of updates. Subclasses draw (``_next_batch``) and learn."""

    def _setup(
        self,
        data_source,
        batch_size,
        *,
        refresh_every,
        refresh_fn,
        max_pending,
        device,
        generator,
        world_size,
        rank,
        what: str,
    ) -> None:
        if isinstance(data_source, numbers.Integral) and not isinstance(data_source, bool):
            n = int(data_source)
        elif hasattr(data_source, "__len__"):
            n = len(data_source)
        else:
            raise TypeError(f"data_source must be a dataset or its size, got {type(data_source).__name__}")
        if n < 1:
            raise ValueError(f"the dataset is empty (n={n}): need at least one example")
        self.n = n
        self.batch_size = check_int(batch_size, "batch_size", low=1)
        if refresh_every is not None:
            refresh_every = check_int(refresh_every, "refresh_every", low=1)
            if refresh_fn is None:
                raise ValueError(f"refresh_every needs refresh_fn: a callable returning the n current {what}")
        if refresh_fn is not None and not callable(refresh_fn):
            raise TypeError(f"refresh_fn must be callable, got {type(refresh_fn).__name__}")
        self.refresh_every = refresh_every
        self.refresh_fn = refresh_fn
        self.max_pending = check_int(max_pending, "max_pending", low=0)

        ws, rk = _dist_world()
        self.world_size = check_int(ws if world_size is None else world_size, "world_size", low=1)
        self.rank = check_int(rk if rank is None else rank, "rank", low=0)
        if self.rank >= self.world_size:
            raise ValueError(f"rank must be in [0, world_size={self.world_size}), got {self.rank}")

        self.device = resolve_device(device)
        if generator is None:
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
            generator = torch.Generator(device=self.device).manual_seed(_broadcast_seed(seed, self.world_size))
        elif not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        elif generator.device.type != self.device.type:
            raise ValueError(
                f"generator is on {generator.device} but the sampler draws on {self.device}; "
                "make the generator with torch.Generator(device=...) on the same device"
            )
        self.generator = generator
        self._counts = torch.zeros(n, dtype=torch.int32, device=self.device)  # draws this epoch (global)
        self.epoch = 0  # completed epochs
        self.position = 0  # batches drawn in the current epoch
        self.step = 0  # global batches drawn so far
        self.pending = 0  # drawn batches not yet followed by update()

    @property
    def global_batch_size(self) -> int:
        """``world_size × batch_size``: the indices drawn per iteration across all processes."""
        return self.world_size * self.batch_size

    def _refreshed(self) -> Tensor:
        """``refresh_fn()``, checked to hold ``n`` values, as float32 on the device."""
        values = self.refresh_fn()
        if not isinstance(values, Tensor) or values.shape != (self.n,):
            got = tuple(values.shape) if isinstance(values, Tensor) else type(values).__name__
            raise ValueError(f"refresh_fn must return a tensor of shape ({self.n},), got {got}")
        return values.detach().to(self.device, torch.float32)

    def _check_pending(self, dist_name: str) -> None:
        if self.pending > self.max_pending:
            raise RuntimeError(
                f"{self.pending} batches were drawn without sampler.update(): {dist_name} is stale by that many "
                "steps. A DataLoader with num_workers > 0 prefetches batches ahead of training; use "
                "num_workers=0, or accept the staleness with max_pending=prefetch_factor * num_workers"
            )

    def _count_draw(self, idx: Tensor) -> Tensor:
        """Book a global draw (counts, position, step, pending) and return this process's slice of it."""
        self._counts.index_add_(0, idx, torch.ones_like(idx, dtype=torch.int32))
        self.position += 1
        self.step += 1
        self.pending += 1
        if self.world_size > 1:
            idx = idx[self.rank * self.batch_size : (self.rank + 1) * self.batch_size]
        return idx

    def _on_epoch_end(self) -> None:
        pass

    def _end_of_epoch(self) -> bool:
        if self.position >= len(self):
            self.epoch += 1
            self.position = 0
            self._on_epoch_end()
            return True
        return False

    def batches(self) -> Iterator[Tensor]:
        """The rest of the current epoch (or the next epoch) as int64 index tensors on the device.

        Each batch is drawn when the loop asks for it, from the table as it is then. Resuming from
        :meth:`load_state_dict` mid-epoch continues exactly where the saved sampler stopped.
        """
        if self.position >= len(self):
            self._end_of_epoch()
        if self.position == 0:
            self._counts.zero_()
        while True:
            yield self._next_batch()
            if self._end_of_epoch():
                return

    def __iter__(self) -> Iterator[list[int]]:
        """One epoch of batches as lists of ints (the ``torch.utils.data`` batch-sampler contract)."""
        for idx in self.batches():
            yield idx.tolist()

    def _as_indices(self, indices) -> Tensor:
        indices = torch.as_tensor(indices, device=self.device)
        if indices.numel() and (indices.is_floating_point() or indices.dtype == torch.bool or indices.is_complex()):
            raise TypeError(f"indices must be integers, got dtype {indices.dtype}")
        return indices.to(torch.int64).flatten()

    def _gather(self, indices: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Every process's batch, concatenated in rank order (the global batch), on every process."""
        dist = torch.distributed
        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError(f"world_size={self.world_size} but torch.distributed is not initialised")
        all_idx = [torch.empty_like(indices) for _ in range(self.world_size)]
        all_values = [torch.empty_like(values) for _ in range(self.world_size)]
        dist.all_gather(all_idx, indices)
        dist.all_gather(all_values, values)
        return torch.cat(all_idx), torch.cat(all_values)

    def draw_counts(self) -> Tensor:
        """How often each example was drawn in the current epoch (global, all ranks), ``(n,)`` int32."""
        return self._counts.clone()
