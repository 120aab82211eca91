"""Small helpers shared by several test files (import as ``from _util import ...``)."""

from __future__ import annotations

import io

import torch


def through_bytes(state: dict) -> dict:
    """``state`` after a ``torch.save`` / ``torch.load`` round trip in memory (what a checkpoint does)."""
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)
