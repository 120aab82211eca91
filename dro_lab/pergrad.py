r"""Per-sample gradient norms, the cheap last-layer bound, and the sampling-quality metric.

The importance-sampling lesson (Lahire 2023) needs, at the current parameters :math:`\theta`,

* the exact per-sample gradient norms :math:`g_i = \|\nabla_\theta \ell_i(\theta)\|_2` (the optimal
  scheme :math:`p^{GN}_i = g_i / \sum_j g_j`): :func:`per_sample_grad_norms`;
* the forward-only proxy of Katharopoulos & Fleuret (2018), the norm of the gradient of the loss
  with respect to the logits, :math:`\|\partial\ell_i/\partial z_i\|_2 = \|\mathrm{softmax}(z_i) - e_{y_i}\|_2`
  for cross-entropy: :func:`logit_grad_norms` (pure, on logits) and :func:`last_layer_grad_norms`
  (on a model; with ``exact=True`` the exact gradient norm of the last :class:`~torch.nn.Linear`
  layer's parameters, :math:`\|\partial\ell/\partial z\|\sqrt{\|h\|^2 + 1}`);
* the paper's Algorithm 1 and the exact score :math:`\rho`: :func:`sampling_quality`.

Nothing here touches a parameter's ``.grad`` or the model's train/eval mode.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = [
    "per_sample_grad_norms",
    "logit_grad_norms",
    "last_layer_grad_norms",
    "sampling_quality",
    "SamplingQuality",
]

_METHODS = ("auto", "ghost", "vmap")


# --------------------------------------------------------------------------- validation


def _work_dtype(device: torch.device) -> torch.dtype:
    return torch.float32 if device.type == "mps" else torch.float64


def _check_model(model: Any) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return model


def _model_device(model: nn.Module) -> torch.device:
    for t in model.parameters():
        return t.device
    for t in model.buffers():
        return t.device
    return torch.device("cpu")


def _check_batch(x: Any, y: Any, device: torch.device) -> tuple[Tensor, Tensor]:
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


def _check_labels(y: Tensor, num_classes: int, name: str = "y") -> Tensor:
    if y.dim() != 1:
        raise ValueError(f"{name} must be a 1-D vector of class indices, got shape {tuple(y.shape)}")
    if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer class indices, got dtype {y.dtype}")
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= num_classes):
        raise ValueError(f"{name} must hold class indices in [0, {num_classes - 1}], got values in "
                         f"[{int(y.min())}, {int(y.max())}]")
    return y.long()


def _check_loss_fn(loss_fn: Any) -> Callable[[Tensor, Tensor], Tensor]:
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be a callable loss_fn(logits, y) -> per-sample losses, got {type(loss_fn).__name__}")
    reduction = getattr(loss_fn, "reduction", "none")
    if isinstance(loss_fn, nn.Module) and reduction != "none":
        raise ValueError(
            f"loss_fn must return per-sample losses: got {type(loss_fn).__name__}(reduction={reduction!r}); "
            f"use {type(loss_fn).__name__}(reduction='none')"
        )
    return loss_fn


def _check_loss_shape(losses: Any, b: int) -> None:
    if not isinstance(losses, Tensor) or tuple(losses.shape) != (b,):
        shape = tuple(losses.shape) if isinstance(losses, Tensor) else type(losses).__name__
        raise ValueError(
            f"loss_fn(logits, y) must return per-sample losses of shape ({b},) (reduction='none'), got {shape}; "
            "e.g. lambda z, y: F.cross_entropy(z, y, reduction='none')"
        )


def _check_batchnorm(model: nn.Module) -> None:
    for name, m in model.named_modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training:
            raise ValueError(
                f"model has a BatchNorm layer in train mode ({name or type(m).__name__}): it couples the samples "
                "of a batch, so per-sample gradients are ill-defined. Call model.eval() first (BatchNorm then "
                "uses its running statistics), or use a model without BatchNorm"
            )


# --------------------------------------------------------------------------- per-sample gradient norms


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
        cols = F.unfold(a.unsqueeze(-1), (m.kernel_size[0], 1), dilation=(m.dilation[0], 1),
                        padding=(m.padding[0], 0), stride=(m.stride[0], 1))
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
            raise _SharedModule
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
            _check_loss_shape(losses, x.shape[0])
            deltas = torch.autograd.grad(losses.sum(), [z for _, _, z in records], allow_unused=True)
    finally:
        for h in handles:
            h.remove()
    b = x.shape[0]
    total = torch.zeros(b, dtype=logits.dtype, device=x.device)
    for (m, a, z), d in zip(records, deltas):
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


class _SharedModule(Exception):
    """A trainable layer was called more than once in one forward: ghost norms do not apply."""


def _vmap_grads(model: nn.Module, loss_fn, x: Tensor, y: Tensor, chunk_size: int | None) -> dict[str, Tensor]:
    from torch.func import functional_call, grad, vmap

    params = {k: v.detach() for k, v in model.named_parameters() if v.requires_grad}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def loss_one(prm, buf, xi, yi):
        out = functional_call(model, (prm, buf), (xi.unsqueeze(0),))
        return loss_fn(out, yi.unsqueeze(0)).sum()

    with torch.enable_grad():
        return vmap(grad(loss_one), in_dims=(None, None, 0, 0), chunk_size=chunk_size,
                    randomness="different")(params, buffers, x, y)


def per_sample_grad_norms(model: nn.Module, loss_fn: Callable[[Tensor, Tensor], Tensor], x: Tensor, y: Tensor, *,
                          method: str = "auto", return_grads: bool = False, chunk_size: int | None = None):
    r"""Exact per-sample gradient norms :math:`g_i = \|\nabla_\theta \ell(f_\theta(x_i), y_i)\|_2`.

    The L2 norm runs over all trainable parameters (``requires_grad=True``) of ``model``, at its
    current values, in one batched pass (no Python loop over the samples).

    Methods:

    * ``"ghost"`` — one batched forward and one backward to the layer outputs, with hooks. For each
      :class:`~torch.nn.Linear` layer, :math:`\|\nabla W_i\|_F^2 = \|a_i\|^2\|\delta_i\|^2` (the "ghost
      norm", never forming :math:`\nabla W_i`); for each convolution the per-sample weight gradient
      :math:`\delta_i\,\mathrm{unfold}(a_i)^T` is formed (small: 5×25 and 10×125 for :class:`SmallCNN`).
      Needs every trainable parameter to sit in a ``Linear`` or an ungrouped, zero-padded ``Conv1d/2d/3d``
      that is called once per forward.
    * ``"vmap"`` — ``torch.func.vmap(grad(...))`` over :func:`torch.func.functional_call`: any model,
      but it materialises the ``b × P`` per-sample gradients (use ``chunk_size`` to cap memory).
    * ``"auto"`` (default) — ``"ghost"`` when it applies, else ``"vmap"``; ``"vmap"`` when
      ``return_grads=True``.

    Why ghost by default: it is one ordinary batched pass plus cheap per-layer products, so on a
    CPU it costs about 1–2× one ordinary forward+backward of the batch, at every batch size. vmap
    pays for forming all ``b × P`` per-sample gradients (for :class:`SmallCNN` P = 401 692 with 2
    classes: 206 MB at b = 128) and was 2–14× a backward; with 1 thread it was slower than a
    Python loop of single-example backwards in 5 of the 6 cases below, with 2 threads at most
    1.7× faster than the loop. Ghost was 1.2–4.6× faster than the loop (1 thread) and 1.4–7×
    faster than vmap.

    MEASURED (2-core shared CPU, torch 2.14, float32, 28×28 inputs, median ms per call;
    ``bwd`` = ordinary batched forward+backward of the mean loss, ``loop`` = b single-example
    ``autograd.grad`` calls, ``last`` = :func:`last_layer_grad_norms`)::

        threads model            b   bwd    ghost   vmap    loop   last
        1       DigitsCNN(s=28)   5   2.1    2.8     6.6     3.6   1.0
        1       DigitsCNN(s=28)  32   9.9   17.9    25.0    22.1   3.8
        1       DigitsCNN(s=28) 128  47.7   50.7    99.2    90.7  14.0
        1       SmallCNN(2 cls)   5   1.7    2.4     5.9     6.2   0.7
        1       SmallCNN(2 cls)  32   5.1    8.8    61.8    40.7   1.4
        1       SmallCNN(2 cls) 128  18.1   34.7   221.4   158.0   3.9
        2       DigitsCNN(s=28) 128  22.7   29.1    58.9    98.9   7.9
        2       SmallCNN(2 cls) 128  10.0   17.1   144.2   149.9   2.4

    Caveats:

    * BatchNorm in train mode couples the samples, so per-sample gradients are ill-defined: a
      ``ValueError`` asks for ``model.eval()`` (running statistics) or a model without BatchNorm.
    * Dropout in train mode is applied (per sample); masks differ from those of a later training
      step. Call ``model.eval()`` for deterministic norms.
    * The model's mode and its parameters' ``.grad`` are left untouched.

    Args:
        model: The network; inputs are moved to its device.
        loss_fn: ``loss_fn(logits, y)`` returning per-sample losses of shape ``(b,)``, e.g.
            ``nn.CrossEntropyLoss(reduction="none")`` or
            ``lambda z, y: F.cross_entropy(z, y, reduction="none")``.
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
    """
    model = _check_model(model)
    loss_fn = _check_loss_fn(loss_fn)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if not isinstance(return_grads, bool):
        raise TypeError(f"return_grads must be a bool, got {type(return_grads).__name__}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"chunk_size must be a positive int or None, got {chunk_size!r}")
    if not any(p.requires_grad for p in model.parameters()):
        raise ValueError("model has no trainable parameter (requires_grad=True): nothing to differentiate")
    x, y = _check_batch(x, y, _model_device(model))
    _check_batchnorm(model)

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
        except _SharedModule:
            if method == "ghost":
                raise ValueError("method='ghost' needs each trainable layer to be called once per forward "
                                 "(weight sharing found); use method='vmap'") from None
    # vmap path: check the loss is per-sample on a tiny batch first (vmap cannot tell a mean from one value)
    k = min(2, x.shape[0])
    with torch.no_grad():
        _check_loss_shape(loss_fn(model(x[:k]), y[:k]), k)
    grads = _vmap_grads(model, loss_fn, x, y, chunk_size)
    sq = None
    for g in grads.values():
        s = g.detach().flatten(1).pow(2).sum(1)
        sq = s if sq is None else sq + s
    norms = sq.sqrt()
    if return_grads:
        return norms, {k_: g.detach() for k_, g in grads.items()}
    return norms


# --------------------------------------------------------------------------- last-layer bound


def logit_grad_norms(logits: Tensor, y: Tensor) -> Tensor:
    r"""Norm of the cross-entropy gradient w.r.t. the logits: :math:`\|\mathrm{softmax}(z_i) - e_{y_i}\|_2`.

    The forward-only importance score of Katharopoulos & Fleuret (2018): up to a constant it
    bounds the full per-sample gradient norm. Computed in float64 as
    :math:`\sqrt{(1-\sigma_{y})^2 + \sum_{k\ne y}\sigma_k^2}` with :math:`1-\sigma_y = \sum_{k\ne y}\sigma_k`,
    so it does not round to 0 when the true class is nearly certain. For two classes it equals
    :math:`\sqrt2\,(1-\sigma_y)`.

    Args:
        logits: Pre-softmax scores, shape ``(b, C)``.
        y: Class indices, shape ``(b,)``.

    Returns:
        Shape ``(b,)``, dtype and device of ``logits``; no autograd graph.
    """
    if not isinstance(logits, Tensor):
        raise TypeError(f"logits must be a tensor of shape (b, C), got {type(logits).__name__}")
    if not isinstance(y, Tensor):
        raise TypeError(f"y must be a tensor of class indices, got {type(y).__name__}")
    if logits.dim() != 2 or logits.shape[1] < 1:
        raise ValueError(f"logits must have shape (b, C), got {tuple(logits.shape)}")
    if not logits.is_floating_point():
        raise TypeError(f"logits must be floating point, got dtype {logits.dtype}")
    if y.shape != logits.shape[:1]:
        raise ValueError(f"y must have shape ({logits.shape[0]},) (one label per row of logits), got {tuple(y.shape)}")
    if y.device != logits.device:
        raise ValueError(f"y is on device {y.device} but logits are on {logits.device}; put them on one device")
    y = _check_labels(y.to(logits.device), logits.shape[1])
    z = logits.detach().to(_work_dtype(logits.device))
    if not bool(torch.isfinite(z).all()):
        raise ValueError("logits contain NaN or inf values")
    prob = torch.softmax(z, dim=1)
    onehot = F.one_hot(y, logits.shape[1]).bool()
    others = prob.masked_fill(onehot, 0.0)
    one_minus_py = others.sum(1)
    return (one_minus_py.pow(2) + others.pow(2).sum(1)).sqrt().to(logits.dtype)


def last_layer_grad_norms(model: nn.Module, x: Tensor, y: Tensor, *, exact: bool = False,
                          loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None) -> Tensor:
    r"""Cheap per-sample scores from the last layer, forward only.

    With ``h = model.penultimate(x)`` and ``z = model.classifier(h)``:

    * ``exact=False`` (default): :math:`\|\partial\ell_i/\partial z_i\|_2` (Katharopoulos & Fleuret's
      upper bound, up to a constant, of :math:`\|\nabla_\theta\ell_i\|`); for cross-entropy
      :math:`\|\mathrm{softmax}(z_i)-e_{y_i}\|_2`, see :func:`logit_grad_norms`.
    * ``exact=True``: the exact norm of the gradient w.r.t. the classifier's parameters,
      :math:`\|\partial\ell_i/\partial z_i\|_2\sqrt{\|h_i\|^2+1}` (:math:`\|h_i\|` without a bias). It is
      a lower bound on the full norm :math:`g_i` and costs no backward either.

    The model's mode is not changed (train-mode dropout applies); no gradient is recorded.

    Args:
        model: A model with ``penultimate(x)`` and a ``classifier`` :class:`~torch.nn.Linear`
            (every :mod:`dro_lab.models` model).
        x: A batch of inputs (moved to the model's device).
        y: Class indices, shape ``(b,)``.
        exact: Return the exact last-layer parameter gradient norm instead of the logit norm.
        loss_fn: ``None`` for cross-entropy (closed form); otherwise a per-sample loss
            ``loss_fn(logits, y)`` whose logit gradient is taken with autograd (a backward to the
            logits only).

    Returns:
        Shape ``(b,)``, on the model's device.
    """
    model = _check_model(model)
    if not callable(getattr(model, "penultimate", None)) or not isinstance(getattr(model, "classifier", None), nn.Linear):
        raise TypeError(
            f"model must have a penultimate(x) method and a .classifier nn.Linear (every dro_lab.models model), "
            f"got {type(model).__name__}"
        )
    if not isinstance(exact, bool):
        raise TypeError(f"exact must be a bool, got {type(exact).__name__}")
    if loss_fn is not None:
        loss_fn = _check_loss_fn(loss_fn)
    x, y = _check_batch(x, y, _model_device(model))
    with torch.no_grad():
        h = model.penultimate(x)
        z = model.classifier(h)
    if loss_fn is None:
        s = logit_grad_norms(z, y)
    else:
        with torch.enable_grad():
            zz = z.detach().requires_grad_(True)
            losses = loss_fn(zz, y)
            _check_loss_shape(losses, x.shape[0])
            (d,) = torch.autograd.grad(losses.sum(), zz)
        s = d.flatten(1).norm(dim=1)
    if not exact:
        return s
    hsq = h.detach().flatten(1).pow(2).sum(1)
    if model.classifier.bias is not None:
        hsq = hsq + 1.0
    return s * hsq.sqrt()


# --------------------------------------------------------------------------- Algorithm 1


@dataclass(frozen=True)
class SamplingQuality:
    r"""Algorithm 1 of Lahire (2023) on M evaluated items, plus the exact score ρ.

    All distributions are over the M items: ``p̃ = p / Σp``, ``p̃GN = g / Σg``, ``ũ = 1/M``.
    KL and TV use the paper's order ``D(p̃, p̃GN)``; χ² the order that makes it exact,
    ``χ²(p̃GN ‖ q) = Σ (p̃GN_j − q_j)² / q_j``. ``H(q) = Σ g_j² / q_j`` (raw ``g``).

    Attributes:
        m: Number of items M.
        kl_p: ``KL(p̃ ‖ p̃GN)``; ``inf`` when p̃ puts mass on an item with zero gradient.
        kl_u: ``KL(ũ ‖ p̃GN)``; ``inf`` when some item has a zero gradient.
        tv_p: ``TV(p̃, p̃GN) = ½ Σ|p̃ − p̃GN|`` in [0, 1].
        tv_u: ``TV(ũ, p̃GN)`` in [0, 1 − 1/M].
        kl_rev_p: ``KL(p̃GN ‖ p̃)`` (the other order; ``inf`` when p̃ misses an item with g > 0).
        kl_rev_u: ``KL(p̃GN ‖ ũ)``.
        chi2_p: ``χ²(p̃GN ‖ p̃)`` (``inf`` when p̃ misses an item with g > 0).
        chi2_u: ``χ²(p̃GN ‖ ũ) = M Σ p̃GN² − 1``.
        rho: ``1 − chi2_p / chi2_u = (H(ũ) − H(p̃)) / (H(ũ) − H(p̃GN))``: 1 optimal, 0 as good as
            uniform, < 0 worse than uniform (``-inf`` when p̃ misses an item with g > 0); NaN (with a
            ``RuntimeWarning``) when p̃GN = ũ (all norms equal).
        h_p: ``H(p̃)``; h_u: ``H(ũ) = M Σ g²``; h_gn: ``H(p̃GN) = (Σ g)²``.
        p: p̃ (float64 tensor, CPU); p_gn: p̃GN (float64 tensor, CPU).
    """

    m: int
    kl_p: float
    kl_u: float
    tv_p: float
    tv_u: float
    kl_rev_p: float
    kl_rev_u: float
    chi2_p: float
    chi2_u: float
    rho: float
    h_p: float
    h_u: float
    h_gn: float
    p: Tensor
    p_gn: Tensor

    def as_dict(self) -> dict[str, Any]:
        """The scalar fields as a dict of floats (for logging / a DataFrame row)."""
        d = asdict(self)
        d.pop("p"), d.pop("p_gn")
        return d


def _as_nonneg_vector(v: Any, name: str) -> Tensor:
    if isinstance(v, Tensor):
        t = v.detach()
    else:
        try:
            # Python lists are read as float64 (not torch's float32 default); numpy keeps its dtype
            t = torch.as_tensor(v, dtype=torch.float64 if isinstance(v, (list, tuple)) else None)
        except Exception as exc:  # noqa: BLE001 - re-raised with the argument's name
            raise TypeError(f"{name} must be a 1-D tensor or array of numbers, got {type(v).__name__}") from exc
    if t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must hold real numbers, got dtype {t.dtype}")
    t = t.to(device="cpu", dtype=torch.float64)
    if t.dim() != 1:
        raise ValueError(f"{name} must be a 1-D vector, got shape {tuple(t.shape)}")
    if t.numel() == 0:
        raise ValueError(f"{name} is empty: need at least one item")
    if not bool(torch.isfinite(t).all()):
        where = torch.nonzero(~torch.isfinite(t)).flatten()[:5].tolist()
        raise ValueError(f"{name} contains NaN or inf values (first at indices {where}); it must be finite")
    if bool((t < 0).any()):
        where = torch.nonzero(t < 0).flatten()[:5].tolist()
        raise ValueError(f"{name} must be non-negative, got negative entries (first at indices {where})")
    return t


def _kl(a: Tensor, b: Tensor) -> float:
    """Σ a log(a/b) with 0 log 0 = 0 and a log(a/0) = inf (scipy.special.rel_entr semantics)."""
    pos = a > 0
    if bool((pos & (b == 0)).any()):
        return math.inf
    return float((a[pos] * (a[pos].log() - b[pos].log())).sum().clamp_min(0.0))


def _chi2(q: Tensor, p: Tensor) -> float:
    """χ²(q ‖ p) = Σ (q − p)² / p, with 0/0 = 0 and (q>0)/0 = inf."""
    zero = p == 0
    if bool((zero & (q > 0)).any()):
        return math.inf
    nz = ~zero
    return float(((q[nz] - p[nz]).pow(2) / p[nz]).sum())


def _h(g: Tensor, q: Tensor) -> float:
    zero = q == 0
    if bool((zero & (g > 0)).any()):
        return math.inf
    nz = ~zero
    return float((g[nz].pow(2) / q[nz]).sum())


def sampling_quality(p: Any, grad_norms: Any) -> SamplingQuality:
    r"""How good is a sampling scheme ``p`` on M evaluated items? (Lahire 2023, Algorithm 1 + ρ.)

    One step of Algorithm 1: ``p`` are the scheme's probabilities (or unnormalised scores) of the
    M evaluated items, ``grad_norms`` their exact per-sample gradient norms (e.g. from
    :func:`per_sample_grad_norms`). Both are renormalised over the M items. Returns the paper's
    KL / TV distances of ``p̃`` and of uniform to ``p̃GN`` and the exact score

    .. math::
        \rho = \frac{H(\tilde u) - H(\tilde p)}{H(\tilde u) - H(\tilde p^{GN})}
             = 1 - \frac{\chi^2(\tilde p^{GN}\|\tilde p)}{\chi^2(\tilde p^{GN}\|\tilde u)},
        \qquad H(q) = \sum_j g_j^2 / q_j,

    the fraction of the best possible SGD variance-term reduction that ``p`` achieves (1 optimal,
    0 as uniform, negative worse). TV and KL closeness do not imply ρ > 0: for
    ``g = (1, 1, 1, 4)`` and ``p = (0.001, 0.2, 0.2, 0.599)``, TV and KL say "closer than uniform"
    but ρ ≈ −35.58. All arithmetic in float64 on the CPU.

    Args:
        p: Non-negative probabilities or scores of the M items, not all zero (1-D, tensor/array/list).
        grad_norms: Non-negative per-sample gradient norms of the same M items, not all zero.

    Returns:
        A :class:`SamplingQuality` (``.as_dict()`` for the scalars).

    Raises:
        TypeError: Non-numeric inputs.
        ValueError: Not 1-D, empty, different lengths, NaN/inf/negative entries, all-zero ``p`` or
            all-zero ``grad_norms``.
    """
    pt = _as_nonneg_vector(p, "p")
    g = _as_nonneg_vector(grad_norms, "grad_norms")
    if pt.numel() != g.numel():
        raise ValueError(f"p and grad_norms must have the same length (one entry per evaluated item), "
                         f"got {pt.numel()} and {g.numel()}")
    if float(pt.sum()) == 0.0:
        raise ValueError("p is all zeros: it must put positive mass on at least one item")
    if float(g.sum()) == 0.0:
        raise ValueError("grad_norms are all zero: p^GN = g / Σg is undefined (every item is fitted)")
    m = pt.numel()
    # Scale first (g may be tiny or huge), then normalise.
    pt = pt / pt.max()
    pt = pt / pt.sum()
    g_scaled = g / g.max()
    pgn = g_scaled / g_scaled.sum()
    u = torch.full((m,), 1.0 / m, dtype=torch.float64)

    chi2_p = _chi2(pgn, pt)
    chi2_u = _chi2(pgn, u)
    if chi2_u <= 1e-13 * max(1.0, chi2_p if math.isfinite(chi2_p) else 1.0):
        warnings.warn("sampling_quality: all gradient norms are equal (p^GN = uniform), so rho is undefined (NaN)",
                      RuntimeWarning, stacklevel=2)
        rho = math.nan
    else:
        rho = 1.0 - chi2_p / chi2_u
    return SamplingQuality(
        m=m,
        kl_p=_kl(pt, pgn), kl_u=_kl(u, pgn),
        tv_p=float(0.5 * (pt - pgn).abs().sum()), tv_u=float(0.5 * (u - pgn).abs().sum()),
        kl_rev_p=_kl(pgn, pt), kl_rev_u=_kl(pgn, u),
        chi2_p=chi2_p, chi2_u=chi2_u, rho=rho,
        h_p=_h(g, pt), h_u=_h(g, u), h_gn=float(g.sum() ** 2),
        p=pt, p_gn=pgn,
    )
