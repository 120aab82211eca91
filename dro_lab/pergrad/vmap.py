"""The general fallback for per-sample gradient norms: ``torch.func`` ``vmap(grad)`` over the batch."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class SharedModule(Exception):
    """A trainable layer was called more than once in one forward: ghost norms do not apply."""


def vmap_grads(model: nn.Module, loss_fn, x: Tensor, y: Tensor, chunk_size: int | None) -> dict[str, Tensor]:
    from torch.func import functional_call, grad, vmap

    params = {k: v.detach() for k, v in model.named_parameters() if v.requires_grad}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def loss_one(prm, buf, xi, yi):
        out = functional_call(model, (prm, buf), (xi.unsqueeze(0),))
        return loss_fn(out, yi.unsqueeze(0)).sum()

    with torch.enable_grad():
        return vmap(grad(loss_one), in_dims=(None, None, 0, 0), chunk_size=chunk_size, randomness="different")(
            params, buffers, x, y
        )
