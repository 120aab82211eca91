"""The one set of argument checks behind every public name of dro_lab.

One rule everywhere: a value of the wrong **type** raises ``TypeError``, a value of the right type
outside its valid range raises ``ValueError``, and the message names the argument and what it
accepts (``beta must be a number in [0, inf), got -1.0``). Each check returns the value converted
to its plain Python type, so callers write ``self.lr = check_number(lr, "lr", low=0, low_open=True)``.

Checks that only one module needs (the shape of a loss vector, a dataset's fields) stay in that
module and are built from these.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "as_float_vector",
    "as_label_tensor",
    "check_bool",
    "check_bounds",
    "check_callable",
    "check_choice",
    "check_int",
    "check_module",
    "check_nonempty",
    "check_finite",
    "check_folder",
    "check_number",
    "check_optional_int",
    "check_order",
    "interval_text",
]


def _number_text(x: float) -> str:
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:g}" if isinstance(x, float) else str(x)


def interval_text(low: float | None, high: float | None, *, low_open: bool = False, high_open: bool = False) -> str:
    """``[0, 1)``-style text of a range; an absent bound is ±inf (always open)."""
    left = "(" if low is None or low_open else "["
    right = ")" if high is None or high_open else "]"
    lo = "-inf" if low is None else _number_text(low)
    hi = "inf" if high is None else _number_text(high)
    return f"{left}{lo}, {hi}{right}"


def check_int(value: Any, name: str, *, low: int | None = 1, high: int | None = None) -> int:
    """``value`` as an ``int`` in ``[low, high]`` (``bool`` is not an integer here).

    Raises ``TypeError`` for a non-integer (``1.5``, ``"3"``, ``True``), ``ValueError`` outside the range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer{_int_range(low, high)}, got {type(value).__name__} {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be an integer{_int_range(low, high)}, got {value!r}")
    return int(value)


def _int_range(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f" in [{low}, {high}]"
    if low is not None:
        return f" ≥ {low}"
    if high is not None:
        return f" ≤ {high}"
    return ""


def check_optional_int(value: Any, name: str, *, low: int | None = 1, high: int | None = None) -> int | None:
    """``None``, or :func:`check_int`."""
    return None if value is None else check_int(value, name, low=low, high=high)


def check_number(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
) -> float:
    """``value`` as a ``float`` in the range ``low``..``high`` (closed unless ``low_open`` / ``high_open``).

    Accepts Python and NumPy reals and one-element tensors; refuses ``bool``. NaN is always refused and
    ±inf unless ``allow_inf`` (then the range still applies: ``beta=inf`` is the max loss).
    """
    if hasattr(value, "numel") and hasattr(value, "item"):  # a tensor: one element only
        if value.numel() != 1:
            raise TypeError(f"{name} must be a number, got a tensor of shape {tuple(value.shape)}")
        value = value.item()
    where = (
        ""
        if low is None and high is None
        else f" in {interval_text(low, high, low_open=low_open, high_open=high_open)}"
    )
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number{where}, got {type(value).__name__} {value!r}")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{name} must be a finite number, got {value}")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        raise ValueError(f"{name} must be a number{where}, got {value:g}")
    return value


def check_choice(value: Any, name: str, choices: Iterable[Any]) -> Any:
    """``value`` if it is one of ``choices`` (compared with ``==``; ``True`` never matches ``1``), else ``ValueError``.

    A value of another type than every choice (``3`` for a name) raises ``TypeError``.
    """
    choices = tuple(choices)
    text = ", ".join(repr(c) for c in choices)
    if choices and not any(isinstance(value, type(c)) for c in choices):
        raise TypeError(f"{name} must be one of {text}, got {type(value).__name__} {value!r}")
    if not any(value == c and isinstance(value, bool) == isinstance(c, bool) for c in choices):
        raise ValueError(f"{name} must be one of {text}, got {value!r}")
    return value


def check_bounds(value: Any, name: str = "clamp") -> tuple[float, float] | None:
    """``None``, or a pair ``(low, high)`` of numbers with ``low < high`` (an input range), as floats."""
    if value is None:
        return None
    try:
        lo, hi = (float(c) for c in value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be None or a pair (low, high) of numbers, got {value!r}") from None
    if not lo < hi:
        raise ValueError(f"{name} must satisfy low < high, got {value!r}")
    return lo, hi


def check_order(low: Any, high: Any, low_name: str, high_name: str) -> None:
    """Two numbers that must satisfy ``low < high`` (a slider's ends, a bracket): ``ValueError`` otherwise."""
    check_number(low, low_name)
    check_number(high, high_name)
    if not low < high:
        raise ValueError(f"{low_name} must be < {high_name}, got {low_name}={low!r} and {high_name}={high!r}")


def check_nonempty(value: Any, name: str) -> Any:
    """A non-empty mapping or sequence (``TypeError`` for something without a length, ``ValueError`` if empty)."""
    try:
        n = len(value)
    except TypeError:
        raise TypeError(f"{name} must be a mapping or sequence, got {type(value).__name__}") from None
    if n == 0:
        raise ValueError(f"{name} is empty: nothing to draw or summarise")
    return value


def check_finite(values: Any, name: str) -> Any:
    """An array or tensor without NaN or inf (``ValueError`` naming the argument otherwise)."""
    import numpy as np

    if not bool(np.isfinite(np.asarray(values, dtype=float)).all()):
        raise ValueError(f"{name} contains NaN or inf values; {name} must be finite")
    return values


def as_float_vector(values: Any, name: str, *, size: int | None = None) -> Any:
    """``values`` (a tensor, an array or a list of numbers) as a finite, non-empty 1-D float64 numpy array, a copy
    (a tensor is detached and moved to the CPU); ``size``: the length it must have."""
    import numpy as np

    if hasattr(values, "detach"):  # a torch tensor: leave autograd and the device behind
        values = values.detach().cpu().double().numpy()
    if values is None or isinstance(values, (str, bytes, dict, set, bool, int, float)):
        raise TypeError(f"{name} must be a 1-D tensor, array or list of numbers, got {type(values).__name__}")
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a 1-D tensor, array or list of numbers, got {type(values).__name__}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D vector, got shape {arr.shape}")
    if size is not None and arr.size != size:
        raise ValueError(f"{name} must have {size} entries, got {arr.size}")
    check_finite(arr, name)
    return arr


def check_folder(value: Any, name: str) -> Any:
    """A folder path to write into, as a :class:`~pathlib.Path` (it need not exist yet): ``TypeError`` for something
    that is not a path, ``ValueError`` naming the file when the path, or a folder above it, is a file."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a folder path, got {type(value).__name__}")
    path = Path(value)
    for above in (path, *path.parents):
        if above.exists() and not above.is_dir():
            raise ValueError(f"{name}={str(value)!r}: {str(above)!r} is a file, not a folder; give a folder")
    return path


def check_bool(value: Any, name: str) -> bool:
    """``value`` if it is ``True`` or ``False`` (not 0 / 1), else ``TypeError``."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value


def check_callable(value: Any, name: str, what: str = "a callable") -> Any:
    """``value`` if it is callable, else ``TypeError`` (``what`` describes the expected signature)."""
    if not callable(value):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    return value


def as_label_tensor(values: Any, name: str) -> Any:
    """Integer ids (class or group labels), one per example, as a 1-D int64 tensor.

    ``TypeError`` for floats, bools or complex numbers; ``ValueError`` for another shape or a negative id.
    """
    import numpy as np
    import torch

    if isinstance(values, torch.Tensor):
        t = values
    else:
        arr = np.asarray(values)
        # An empty list becomes float64 in numpy; let it through so the caller reports "empty".
        t = torch.as_tensor(arr if arr.size else arr.astype(np.int64))
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        raise TypeError(f"{name} must hold integer ids, got dtype {t.dtype}")
    if t.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one id per example), got shape {tuple(t.shape)}")
    t = t.to(torch.int64)
    if t.numel() and int(t.min()) < 0:
        raise ValueError(f"{name} must be non-negative ids, got minimum {int(t.min())}")
    return t


def check_module(value: Any, name: str = "model") -> Any:
    """``value`` if it is a ``torch.nn.Module``, else ``TypeError``."""
    import torch  # here, not at the top: this module stays importable without torch (the command line)

    if not isinstance(value, torch.nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(value).__name__}")
    return value


def check_xy(data) -> tuple:
    """``(x, y)`` of a dataset with ``x`` and ``y`` tensors (``ArrayDataset`` …) or of a pair ``(x, y)``: n > 0
    inputs and as many labels, else a TypeError / ValueError that says which."""
    import torch  # here, as in as_label_tensor: the checks above need no torch

    if isinstance(data, tuple) and len(data) == 2:
        x, y = data
    elif hasattr(data, "x") and hasattr(data, "y"):
        x, y = data.x, data.y
    else:
        raise TypeError(f"data must be a dataset with .x and .y, or a pair (x, y), got {type(data).__name__}")
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError("data's x and y must be tensors")
    if x.shape[0] == 0 or x.shape[0] != y.shape[0]:
        raise ValueError(f"data must hold n > 0 inputs and n labels, got {x.shape[0]} and {y.shape[0]}")
    return x, y
