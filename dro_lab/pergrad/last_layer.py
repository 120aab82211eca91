"""Forward-only bounds: the logit-gradient norm (Katharopoulos & Fleuret) and the exact last-layer norm."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .._validation import check_bool, check_module
from ..utils import model_device, work_dtype
from ._checks import check_batch, check_labels, check_loss_fn, check_loss_shape

__all__ = ["logit_grad_norms", "last_layer_grad_norms"]


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

    Example:
        >>> logit_grad_norms(torch.tensor([[0.0, 0.0], [2.0, -2.0]]), torch.tensor([0, 1]))  # √2·(1 − σ_y)
        tensor([0.7071, 1.3888])
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
    y = check_labels(y.to(logits.device), logits.shape[1])
    z = logits.detach().to(work_dtype(logits.device))
    if not bool(torch.isfinite(z).all()):
        raise ValueError("logits contain NaN or inf values")
    prob = torch.softmax(z, dim=1)
    onehot = F.one_hot(y, logits.shape[1]).bool()
    others = prob.masked_fill(onehot, 0.0)
    one_minus_py = others.sum(1)
    return (one_minus_py.pow(2) + others.pow(2).sum(1)).sqrt().to(logits.dtype)


def last_layer_grad_norms(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    exact: bool = False,
    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
) -> Tensor:
    r"""Cheap per-sample scores from the last layer, forward only.

    With ``h = model.penultimate(x)`` and ``z = model.classifier(h)``:

    * ``exact=False`` (default): :math:`\|\partial\ell_i/\partial z_i\|_2`, Katharopoulos & Fleuret's bound (up
      to a constant) on :math:`\|\nabla_\theta\ell_i\|` (:func:`logit_grad_norms` for cross-entropy);
    * ``exact=True``: the classifier's parameter-gradient norm :math:`\|\partial\ell_i/\partial z_i\|_2
      \sqrt{\|h_i\|^2+1}`, a lower bound on the full norm. The model's mode is not changed; no graph.

    Args:
        model: A model with ``penultimate(x)`` and a ``classifier`` :class:`~torch.nn.Linear`
            (every :mod:`dro_lab.models` model).
        x: A batch of inputs (moved to the model's device).
        y: Class indices, shape ``(b,)``.
        exact: Return the exact last-layer parameter gradient norm instead of the logit norm.
        loss_fn: ``None`` for cross-entropy (closed form); otherwise a per-sample loss ``(logits, y)``
            (its logit gradient by autograd).

    Returns:
        Shape ``(b,)``, on the model's device.
    """
    model = check_module(model)
    if not callable(getattr(model, "penultimate", None)) or not isinstance(
        getattr(model, "classifier", None), nn.Linear
    ):
        raise TypeError(
            f"model must have a penultimate(x) method and a .classifier nn.Linear (every dro_lab.models model), "
            f"got {type(model).__name__}"
        )
    check_bool(exact, "exact")
    if loss_fn is not None:
        loss_fn = check_loss_fn(loss_fn)
    x, y = check_batch(x, y, model_device(model))
    with torch.no_grad():
        h = model.penultimate(x)
        z = model.classifier(h)
    if loss_fn is None:
        s = logit_grad_norms(z, y)
    else:
        with torch.enable_grad():
            zz = z.detach().requires_grad_(True)
            losses = loss_fn(zz, y)
            check_loss_shape(losses, x.shape[0])
            (d,) = torch.autograd.grad(losses.sum(), zz)
        s = d.flatten(1).norm(dim=1)
    if not exact:
        return s
    hsq = h.detach().flatten(1).pow(2).sum(1)
    if model.classifier.bias is not None:
        hsq = hsq + 1.0
    return s * hsq.sqrt()
