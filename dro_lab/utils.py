"""Small shared helpers: devices, seeds and the float type of exact sums."""

from __future__ import annotations

import os
import random

import numpy as np
import torch

from ._validation import check_int, check_optional_int

__all__ = ["resolve_device", "seed_everything", "make_generator", "model_device", "work_dtype", "to_numpy"]


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``"auto"`` (or ``None``) → CUDA when available, else CPU; anything else is passed to ``torch.device``.

    An accelerator torch reports unavailable here (``"cuda"``, ``"cuda:N"`` past the last device, ``"mps"``,
    ``"xpu"``) is refused at once, with a ``ValueError`` naming the devices that are available, instead of failing
    deep inside the first tensor moved there. Resolve once at the top (engine, notebook parameters); library
    functions then follow the device of their tensors and never choose one themselves.

    Args:
        device: ``"auto"``, ``None``, a device string, an index or a ``torch.device``.
    """
    if not (device is None or isinstance(device, (str, torch.device, int))) or isinstance(device, bool):
        raise TypeError(
            f"device must be 'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device, got {type(device).__name__}"
        )
    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}") from exc
    if dev.type in _ACCELERATORS:
        name, count = _ACCELERATORS[dev.type], _device_count(dev.type)
        if count == 0 or (dev.index is not None and dev.index >= count):
            there = f"{name} is not available here" if count == 0 else f"this machine has {count} {name} device(s)"
            raise ValueError(
                f"device={device!r} was asked for but {there} (available: {', '.join(_available())}); "
                "use device='auto' (it picks what is there) or 'cpu'"
            )
    return dev


#: The accelerators whose availability torch reports, by device type, with the name a message gives them.
_ACCELERATORS = {"cuda": "CUDA", "mps": "MPS (Apple GPU)", "xpu": "XPU (Intel GPU)"}


def _device_count(kind: str) -> int:
    """How many devices of an accelerator type torch can use here (0 when it is not available)."""
    if kind == "cuda":
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    if kind == "mps":
        return int(torch.backends.mps.is_available())
    xpu = getattr(torch, "xpu", None)
    return xpu.device_count() if xpu is not None and xpu.is_available() else 0


def _available() -> list[str]:
    """The device names usable here: ``cpu`` and each available accelerator's devices."""
    out = ["cpu"]
    for kind in _ACCELERATORS:
        count = _device_count(kind)
        if kind == "mps":
            out += ["mps"] if count else []
        else:
            out += [f"{kind}:{i}" for i in range(count)]
    return out


def seed_everything(seed: int, *, deterministic: bool = True) -> torch.Generator:
    """Seed Python, NumPy and torch (all devices) and return a fresh CPU ``torch.Generator`` with that seed.

    Args:
        seed: a non-negative int.
        deterministic: make cuDNN pick deterministic kernels (``benchmark=False``), the uvadlc set-up
            cell; CPU runs are bit-identical for a given seed either way.
    """
    seed = check_int(seed, "seed", low=0)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    return make_generator(seed)


def make_generator(seed: int | None = None, device: str | torch.device = "cpu") -> torch.Generator:
    """A ``torch.Generator`` on ``device``, seeded with ``seed`` (from the global RNG when ``None``).

    Args:
        seed: a non-negative int, or ``None``.
        device: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    """
    check_optional_int(seed, "seed", low=0)
    try:
        gen = torch.Generator(device=device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}") from exc
    if seed is None:
        seed = int(torch.empty((), dtype=torch.int64).random_().item())
    gen.manual_seed(int(seed))
    return gen


def model_device(model: torch.nn.Module, fallback: torch.device | None = None) -> torch.device:
    """Where ``model`` lives: its first parameter's device, else its first buffer's, else ``fallback`` (CPU).

    Library functions follow the model's device (as torchattacks' ``Attack`` does) instead of choosing one.
    """
    for t in model.parameters():
        return t.device
    for t in model.buffers():
        return t.device
    return fallback if fallback is not None else torch.device("cpu")


def work_dtype(device: torch.device) -> torch.dtype:
    """float64 for sums and bisections over n entries, except on MPS, which has no float64."""
    return torch.float32 if device.type == "mps" else torch.float64


def to_numpy(x) -> np.ndarray:
    """``x`` (a tensor, an array or a sequence) as a float64 numpy array on the host."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=float)
