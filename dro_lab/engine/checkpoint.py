"""Checkpoints of a training run: atomic writes, every random generator, and the replay of a part-run epoch.

:func:`dro_lab.fit` saves (:func:`write`) the model, optimizer, scheduler and strategy state, every random
generator, the position in the epoch and the history; :func:`find` reads one back for a resumed call after
checking that it was written by the same configuration (:func:`check_header`).
"""

from __future__ import annotations

import os
import random
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from .._files import RecordError, atomic_write
from .._validation import check_bool, check_optional_int
from .strategy import Strategy

FORMAT = 2  # 2: the learning-rate scheduler's state replaced the base learning rates of format 1


# what must match for a checkpoint to be resumed by this fit call (the dro_lab version only warns)
HEADER_KEYS = ("strategy", "seed", "n", "batch_size", "world_size", "epochs", "lr", "optimizer")


def check_arguments(checkpoint, checkpoint_every, resume) -> Path | None:
    check_bool(resume, "resume")
    check_optional_int(checkpoint_every, "checkpoint_every (optimizer steps)")
    if checkpoint is None:
        if checkpoint_every is not None:
            raise ValueError("checkpoint_every needs checkpoint: the path of the checkpoint file to write")
        return None
    if not isinstance(checkpoint, (str, os.PathLike)):
        raise TypeError(f"checkpoint must be a path (str or os.PathLike) or None, got {type(checkpoint).__name__}")
    path = Path(checkpoint)
    if str(checkpoint) == "" or path.is_dir():
        raise ValueError(f"checkpoint must be a file path, got {str(checkpoint)!r} (a directory or empty)")
    if not path.parent.is_dir():
        raise ValueError(f"checkpoint's folder {str(path.parent)!r} does not exist; create it first")
    return path


def find(path: Path, header: dict, world_size: int = 1, comm: torch.device | None = None) -> dict | None:
    """The checkpoint at ``path`` for the run described by ``header``, or None when there is none.

    Under DDP every rank must see the file, or none (a checkpoint on a rank-local disk would resume some
    ranks only).
    """
    found = path.is_file()
    if world_size > 1:
        box = torch.tensor([int(found)], dtype=torch.int64, device=comm)
        torch.distributed.all_reduce(box)
        if 0 < int(box.item()) < world_size:
            raise ValueError(
                f"checkpoint {str(path)!r} exists on {int(box.item())} of {world_size} ranks: "
                "put it on a file system every rank sees"
            )
    return read(path, header) if found else None


def rng_states() -> dict:
    """The global generators' states: torch's CPU (and CUDA's, once initialised), Python's, NumPy's."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state(legacy=True)
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None,
        "python": random.getstate(),
        # as plain types and a tensor, so the checkpoint loads with torch.load(weights_only=True)
        "numpy": (kind, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(gauss)),
    }


def set_rng_states(states: dict) -> None:
    torch.set_rng_state(states["torch"])
    if states["cuda"] is not None and torch.cuda.is_available() and len(states["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(states["cuda"])
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = states["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))


#: What a reader of :func:`fit` can do about a checkpoint it cannot resume (a caller above ``fit``, such as
#: :func:`dro_lab.experiments.run_experiment`, replaces it with its own advice through ``RecordError.with_fix``).
FIX = "delete it, or call fit(..., resume=False) to start the run afresh and overwrite it"


def write(path: Path, state: dict) -> None:
    """``torch.save`` through :func:`dro_lab._files.atomic_write`: the file named ``path`` is always a whole
    checkpoint (the old one until the new one is complete), whatever interrupts the write."""
    atomic_write(path, lambda handle: torch.save(state, handle))


def read(path: Path, header: dict) -> dict:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0].split(". ")[0]  # torch's run to a dozen lines
        raise RecordError(path, "checkpoint", f"cannot be read ({type(exc).__name__}: {first})", FIX) from exc
    saved = state.get("header", {}) if isinstance(state, dict) else {}
    if saved.get("format") != FORMAT:
        problem = f"is not a dro_lab fit checkpoint (format {saved.get('format')!r}, expected {FORMAT})"
        raise RecordError(path, "checkpoint", problem, FIX)
    check_header(saved, header, path)
    if saved.get("dro_lab") != header["dro_lab"]:
        warnings.warn(
            f"checkpoint {str(path)!r} was written by dro_lab {saved.get('dro_lab')}, this is "
            f"{header['dro_lab']}: the resumed run may not equal an uninterrupted one",
            stacklevel=3,
        )
    return state


def check_header(saved: dict, header: dict, path: Path, keys=HEADER_KEYS) -> None:
    differ = [
        f"{k}={saved.get(k)!r} there, {header[k]!r} here" for k in keys if k in header and saved.get(k) != header[k]
    ]
    if differ:
        problem = f"was written by another configuration ({'; '.join(differ)})"
        raise RecordError(path, "checkpoint", problem, "pass the same arguments to resume it, or " + FIX)


def replay(
    strategy: Strategy, epoch: int, batch_size: int, consumed: int, draws: dict[int, Tensor], generator: torch.Generator
) -> Iterator[Tensor]:
    """``strategy.batches(epoch, ...)`` advanced past its first ``consumed`` batches, which are discarded: before
    the k-th draw the generator is put back where it was when the interrupted run made it (``draws[k]``; draws
    that used no randomness are not recorded); afterwards it is where the checkpoint left it."""
    now = generator.get_state()
    it = iter(strategy.batches(epoch, batch_size))
    for k in range(consumed):
        if k in draws:
            generator.set_state(draws[k])
        try:
            next(it)
        except StopIteration:
            raise ValueError(
                f"cannot resume epoch {epoch}: {strategy.describe()!r} now draws fewer than the "
                f"{consumed} batches the checkpoint had consumed"
            ) from None
    generator.set_state(now)
    return it
