"""Small shared helpers: device resolution and seeding."""

from __future__ import annotations

import os
import random

import numpy as np
import torch

__all__ = ["resolve_device", "seed_everything", "make_generator"]


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``"auto"`` (or ``None``) → CUDA when available, else CPU; anything else is passed to ``torch.device``.

    Resolve once at the top (engine, notebook parameters); library functions then follow the
    device of their tensors and never choose one themselves.
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} was asked for but CUDA is not available here; use device='auto' or 'cpu'")
    return dev


def seed_everything(seed: int, *, deterministic: bool = True) -> torch.Generator:
    """Seed Python, NumPy and torch (all devices) and return a fresh CPU ``torch.Generator`` with that seed.

    With ``deterministic=True`` cuDNN picks deterministic kernels (``benchmark=False``), the uvadlc
    set-up cell; CPU runs are then bit-identical for a given seed.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    return make_generator(seed)


def make_generator(seed: int | None = None, device: str | torch.device = "cpu") -> torch.Generator:
    """A ``torch.Generator`` on ``device``, seeded with ``seed`` (from the global RNG when ``None``)."""
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be a non-negative integer or None, got {type(seed).__name__}")
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    try:
        gen = torch.Generator(device=device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}") from exc
    if seed is None:
        seed = int(torch.empty((), dtype=torch.int64).random_().item())
    gen.manual_seed(int(seed))
    return gen


def check_int(value, name: str, minimum: int = 1) -> int:
    """``value`` as an int, or a ``ValueError`` naming ``name`` when it is not an integer ≥ ``minimum`` (bools refused)."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
    return int(value)
