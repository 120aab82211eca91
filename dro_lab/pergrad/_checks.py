"""Argument checks shared by the per-sample gradient functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn


def check_batch(x: Any, y: Any, device: torch.device) -> tuple[Tensor, Tensor]:
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a tensor (a batch of inputs), got {type(x).__name__}")
    if not isinstance(y, Tensor):
        raise TypeError(f"y must be a tensor (one target per input), got {type(y).__name__}")
    if x.dim() < 1 or x.shape[0] == 0:
        raise ValueError(f"x must be a non-empty batch with the batch on dim 0, got shape {tuple(x.shape)}")
    if y.dim() < 1 or y.shape[0] != x.shape[0]:
        raise ValueError(
            f"y must have one target per input: x has batch size {x.shape[0]}, y has shape {tuple(y.shape)}"
        )
    return x.to(device), y.to(device)


def check_labels(y: Tensor, num_classes: int, name: str = "y") -> Tensor:
    if y.dim() != 1:
        raise ValueError(f"{name} must be a 1-D vector of class indices, got shape {tuple(y.shape)}")
    if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer class indices, got dtype {y.dtype}")
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= num_classes):
        raise ValueError(
            f"{name} must hold class indices in [0, {num_classes - 1}], got values in [{int(y.min())}, {int(y.max())}]"
        )
    return y.long()


def check_loss_fn(loss_fn: Any) -> Callable[[Tensor, Tensor], Tensor]:
    if not callable(loss_fn):
        raise TypeError(
            f"loss_fn must be a callable loss_fn(logits, y) -> per-sample losses, got {type(loss_fn).__name__}"
        )
    reduction = getattr(loss_fn, "reduction", "none")
    if isinstance(loss_fn, nn.Module) and reduction != "none":
        raise ValueError(
            f"loss_fn must return per-sample losses: got {type(loss_fn).__name__}(reduction={reduction!r}); "
            f"use {type(loss_fn).__name__}(reduction='none')"
        )
    return loss_fn


def check_loss_shape(losses: Any, b: int) -> None:
    if not isinstance(losses, Tensor) or tuple(losses.shape) != (b,):
        shape = tuple(losses.shape) if isinstance(losses, Tensor) else type(losses).__name__
        raise ValueError(
            f"loss_fn(logits, y) must return per-sample losses of shape ({b},) (reduction='none'), got {shape}; "
            "e.g. lambda z, y: F.cross_entropy(z, y, reduction='none')"
        )


def check_batchnorm(model: nn.Module) -> None:
    for name, m in model.named_modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training:
            raise ValueError(
                f"model has a BatchNorm layer in train mode ({name or type(m).__name__}): it couples the samples "
                "of a batch, so per-sample gradients are ill-defined. Call model.eval() first (BatchNorm then "
                "uses its running statistics), or use a model without BatchNorm"
            )
