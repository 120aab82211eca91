r"""Per-sample gradient norms, the cheap last-layer bound, and the sampling-quality metric.

Importance sampling for SGD (Lahire 2023) needs, at the current parameters :math:`\theta`,

* the exact per-sample gradient norms :math:`g_i = \|\nabla_\theta \ell_i(\theta)\|_2` (the optimal
  scheme :math:`p^{GN}_i = g_i / \sum_j g_j`): :func:`per_sample_grad_norms`;
* the forward-only proxy of Katharopoulos & Fleuret (2018), :math:`\|\partial\ell_i/\partial z_i\|_2`:
  :func:`logit_grad_norms` (on logits) and :func:`last_layer_grad_norms` (on a model);
* the paper's Algorithm 1 and the exact score :math:`\rho`: :func:`sampling_quality`.

Nothing here touches a parameter's ``.grad`` or the model's train/eval mode.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .._validation import check_bool, check_module, check_optional_int
from ..utils import model_device
from ._checks import check_batch, check_batchnorm, check_loss_fn, check_loss_shape
from .vmap import SharedModule, vmap_grads

__all__ = ["per_sample_grad_norms"]


_METHODS = ("auto", "ghost", "vmap")


def _ghost_supported(model: nn.Module) -> bool:
    """Every trainable parameter belongs to a Linear or a plain Conv1d/2d/3d (weight/bias)."""
    any_trainable = False
    for m in model.modules():
        own = [(n, p) for n, p in m.named_parameters(recurse=False) if p.requires_grad]
        if not own:
            continue
        any_trainable = True
        if isinstance(m, nn.Linear):
            continue
        if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d)) and type(m) in (nn.Conv1d, nn.Conv2d, nn.Conv3d):
            if m.groups == 1 and m.padding_mode == "zeros" and not isinstance(m.padding, str):
                continue
        return False
    return any_trainable


def _unfold(a: Tensor, m: nn.Module) -> Tensor:
    """Patches of the input of a Conv{1,2,3}d, shape (b, C·prod(k), L)."""
    if isinstance(m, nn.Conv2d):
        return F.unfold(a, m.kernel_size, dilation=m.dilation, padding=m.padding, stride=m.stride)
    if isinstance(m, nn.Conv1d):
        cols = F.unfold(
            a.unsqueeze(-1),
            (m.kernel_size[0], 1),
            dilation=(m.dilation[0], 1),
            padding=(m.padding[0], 0),
            stride=(m.stride[0], 1),
        )
        return cols
    # Conv3d: pad, then extract patches with unfold along each spatial dim.
    a = F.pad(a, [p for pad in reversed(m.padding) for p in (pad, pad)])
    for d in range(3):
        a = a.unfold(2 + d, (m.kernel_size[d] - 1) * m.dilation[d] + 1, m.stride[d])
    # a: (b, C, L1, L2, L3, e1, e2, e3); take the dilated taps
    a = a[..., :: m.dilation[0], :: m.dilation[1], :: m.dilation[2]]
    b, c = a.shape[:2]
    a = a.permute(0, 1, 5, 6, 7, 2, 3, 4).reshape(b, c * math.prod(m.kernel_size), -1)
    return a


def _ghost_norms_sq(model: nn.Module, loss_fn, x: Tensor, y: Tensor) -> Tensor:
    """Squared per-sample norms from one batched forward and one backward to the layer outputs.

    A forward hook adds a zero leaf ``z`` to each trainable layer's output; the gradient of
    ``Σ_i ℓ_i`` with respect to ``z`` is the per-sample output gradient ``δ_i = ∂ℓ_i/∂out_i``
    (samples do not interact). Then, with ``a`` the layer's input:

    * Linear on (b, in): ``‖∇W_i‖² = ‖a_i‖²‖δ_i‖²``, ``‖∇b_i‖² = ‖δ_i‖²`` (ghost norm);
      on (b, ..., in) the per-sample gradient ``Σ_t δ_it a_itᵀ`` is formed;
    * Conv: ``∇W_i = δ_i · unfold(a_i)ᵀ`` (out × C·k², small), ``∇b_i = Σ_ℓ δ_iℓ``.
    """
    records: list[tuple[nn.Module, Tensor, Tensor]] = []
    seen: set[int] = set()
    handles = []

    def hook(module, inputs, output):
        if id(module) in seen:
            raise SharedModule
        seen.add(id(module))
        z = torch.zeros_like(output, requires_grad=True)
        records.append((module, inputs[0].detach(), z))
        return output + z

    for m in model.modules():
        if any(p.requires_grad for p in m.parameters(recurse=False)):
            handles.append(m.register_forward_hook(hook))
    try:
        with torch.enable_grad():
            logits = model(x)
            losses = loss_fn(logits, y)
            check_loss_shape(losses, x.shape[0])
            deltas = torch.autograd.grad(losses.sum(), [z for _, _, z in records], allow_unused=True)
    finally:
        for h in handles:
            h.remove()
    b = x.shape[0]
    total = torch.zeros(b, dtype=logits.dtype, device=x.device)
    for (m, a, _z), d in zip(records, deltas):
        if d is None:
            continue
        w_ok = m.weight is not None and m.weight.requires_grad
        b_ok = m.bias is not None and m.bias.requires_grad
        if isinstance(m, nn.Linear):
            if d.dim() == 2:
                d2 = d.pow(2).sum(1)
                if w_ok:
                    total += a.pow(2).sum(1) * d2
                if b_ok:
                    total += d2
            else:
                a3, d3 = a.reshape(b, -1, a.shape[-1]), d.reshape(b, -1, d.shape[-1])
                if w_ok:
                    total += torch.einsum("bto,bti->boi", d3, a3).pow(2).flatten(1).sum(1)
                if b_ok:
                    total += d3.sum(1).pow(2).sum(1)
        else:  # Conv
            d3 = d.reshape(b, d.shape[1], -1)  # (b, out, L)
            if w_ok:
                cols = _unfold(a, m)  # (b, C·k, L)
                total += torch.bmm(d3, cols.transpose(1, 2)).pow(2).flatten(1).sum(1)
            if b_ok:
                total += d3.sum(2).pow(2).sum(1)
    return total


def per_sample_grad_norms(
    model: nn.Module,
    loss_fn: Callable[[Tensor, Tensor], Tensor],
    x: Tensor,
    y: Tensor,
    *,
    method: str = "auto",
    return_grads: bool = False,
    chunk_size: int | None = None,
):
    r"""Exact per-sample gradient norms :math:`g_i = \|\nabla_\theta \ell(f_\theta(x_i), y_i)\|_2`.

    The L2 norm runs over all trainable parameters (``requires_grad=True``) of ``model``, at its
    current values, in one batched pass (no Python loop over the samples).

    Methods:

    * ``"ghost"`` — one batched forward and one backward to the layer outputs, with hooks: for each
      :class:`~torch.nn.Linear` layer :math:`\|\nabla W_i\|_F^2 = \|a_i\|^2\|\delta_i\|^2` (the "ghost norm"),
      for each convolution the small per-sample weight gradient :math:`\delta_i\,\mathrm{unfold}(a_i)^T`. Needs
      every trainable parameter in a ``Linear`` or an ungrouped, zero-padded ``Conv1d/2d/3d`` called once.
    * ``"vmap"`` — ``torch.func.vmap(grad(...))`` over :func:`torch.func.functional_call`: any model,
      but it materialises the ``b × P`` per-sample gradients (use ``chunk_size`` to cap memory).
    * ``"auto"`` (default) — ``"ghost"`` when it applies, else ``"vmap"``; ``"vmap"`` when
      ``return_grads=True``.

    Ghost by default: its cost stays a small multiple of one forward+backward at every batch size, while vmap
    forms all ``b × P`` per-sample gradients (``dro-lab bench --only pergrad`` times them on your machine).

    BatchNorm in train mode couples the samples (a ``ValueError`` asks for ``model.eval()``); dropout in
    train mode is applied per sample. The model's mode and its parameters' ``.grad`` are left untouched.

    Args:
        model: The network; inputs are moved to its device.
        loss_fn: ``loss_fn(logits, y)`` returning per-sample losses of shape ``(b,)``, e.g.
            ``nn.CrossEntropyLoss(reduction="none")``.
        x: A batch of inputs, batch on dim 0.
        y: Targets, one per input.
        method: ``"auto"``, ``"ghost"`` or ``"vmap"``.
        return_grads: Also return the per-sample gradients, a dict ``name -> (b, *param.shape)``
            (computed with vmap).
        chunk_size: vmap chunk size (``None``: the whole batch at once).

    Returns:
        The norms, shape ``(b,)``, on the model's device, in the loss's dtype; with
        ``return_grads=True`` a tuple ``(norms, grads)``.

    Raises:
        TypeError: ``model`` is not a module, ``x``/``y`` are not tensors, ``loss_fn`` is not callable.
        ValueError: mismatched batch sizes, a loss that is not per-sample, an unknown ``method``,
            ``method="ghost"`` on an unsupported model, no trainable parameter, train-mode BatchNorm.

    Example:
        >>> model, x, y = torch.nn.Linear(3, 2), torch.randn(4, 3), torch.tensor([0, 1, 0, 1])
        >>> ce = lambda z, y: F.cross_entropy(z, y, reduction="none")
        >>> norms = per_sample_grad_norms(model, ce, x, y)  # ghost norms: one batched pass
        >>> norms.shape, torch.allclose(norms, per_sample_grad_norms(model, ce, x, y, method="vmap"))
        (torch.Size([4]), True)
    """
    model = check_module(model)
    loss_fn = check_loss_fn(loss_fn)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    check_bool(return_grads, "return_grads")
    check_optional_int(chunk_size, "chunk_size")
    if not any(p.requires_grad for p in model.parameters()):
        raise ValueError("model has no trainable parameter (requires_grad=True): nothing to differentiate")
    x, y = check_batch(x, y, model_device(model))
    check_batchnorm(model)

    if method == "ghost" and return_grads:
        raise ValueError("return_grads=True needs method='vmap' or 'auto' (ghost norms never form the gradients)")
    use_ghost = method == "ghost" or (method == "auto" and not return_grads and _ghost_supported(model))
    if method == "ghost" and not _ghost_supported(model):
        raise ValueError(
            "method='ghost' needs every trainable parameter in an nn.Linear or an ungrouped, zero-padded "
            "nn.Conv1d/2d/3d with numeric padding; use method='vmap' (or 'auto')"
        )
    if use_ghost:
        try:
            return _ghost_norms_sq(model, loss_fn, x, y).sqrt()
        except SharedModule:
            if method == "ghost":
                raise ValueError(
                    "method='ghost' needs each trainable layer to be called once per forward "
                    "(weight sharing found); use method='vmap'"
                ) from None
    # vmap path: check the loss is per-sample on a tiny batch first (vmap cannot tell a mean from one value)
    k = min(2, x.shape[0])
    with torch.no_grad():
        check_loss_shape(loss_fn(model(x[:k]), y[:k]), k)
    grads = vmap_grads(model, loss_fn, x, y, chunk_size)
    sq = None
    for g in grads.values():
        s = g.detach().flatten(1).pow(2).sum(1)
        sq = s if sq is None else sq + s
    norms = sq.sqrt()
    if return_grads:
        return norms, {k_: g.detach() for k_, g in grads.items()}
    return norms
