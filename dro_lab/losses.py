r"""Per-sample losses, pure functions: the cross-entropy every strategy reduces, and label smoothing.

Label smoothing follows the GI-LS paper's convention (Wang et al., eq. 3): :math:`1-\alpha` on the
true class and :math:`\alpha/(k-1)` on each other class, so α ∈ [0, (k−1)/k]. PyTorch's
``label_smoothing=ε`` puts :math:`1-\varepsilon+\varepsilon/k` on the true class; the two agree for
:math:`\varepsilon=\alpha k/(k-1)` (:func:`torch_label_smoothing`). The loss is
:math:`-\sum_j \bar y_j\log p_j` (the paper's eq. 5 writes a double sum by mistake).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ._validation import check_int, check_number
from .utils import to_numpy

__all__ = [
    "per_sample_cross_entropy",
    "check_num_classes",
    "check_ls_alpha",
    "torch_label_smoothing",
    "smoothed_targets",
    "ls_cross_entropy",
    "ls_regularizer_values",
]


def per_sample_cross_entropy(logits: Tensor, y: Tensor) -> Tensor:
    """Cross-entropy with ``reduction="none"``: the per-sample losses every strategy works on."""
    return F.cross_entropy(logits, y, reduction="none")


def check_num_classes(num_classes) -> int:
    """k ≥ 2: label smoothing spreads α over the k − 1 other classes."""
    return check_int(num_classes, "num_classes", low=2)


def check_ls_alpha(alpha, num_classes: int | None = None) -> float:
    """α ∈ [0, (k−1)/k] (beyond it the true class gets less mass than the others); [0, 1) when k is unknown."""
    high = (num_classes - 1) / num_classes if num_classes is not None else 1.0
    alpha = check_number(alpha, "alpha (the label-smoothing factor)")
    if not (0 <= alpha <= high + 1e-12 and (num_classes is not None or alpha < 1)):
        where = f"[0, (k−1)/k] = [0, {high:.6g}] for k = {num_classes}" if num_classes is not None else "[0, (k−1)/k]"
        raise ValueError(f"alpha (the label-smoothing factor) must lie in {where}, got {alpha!r}")
    return float(alpha)


def torch_label_smoothing(alpha: float, num_classes: int) -> float:
    r"""PyTorch's ``label_smoothing`` ε equivalent to the paper's α: :math:`\varepsilon=\alpha k/(k-1)`.

    ``F.cross_entropy(logits, y, label_smoothing=torch_label_smoothing(α, k))`` equals
    :func:`ls_cross_entropy` with ``alpha=α`` (k = 6, α = 0.5 → ε = 0.6).

    Args:
        alpha, num_classes: the paper's α, in [0, (k−1)/k], and ``k ≥ 2``.
    """
    k = check_num_classes(num_classes)
    return check_ls_alpha(alpha, k) * k / (k - 1)


def smoothed_targets(y: Tensor, num_classes: int, alpha: float, *, dtype: torch.dtype | None = None) -> Tensor:
    r"""Label-smoothed targets (GI-LS paper): :math:`1-\alpha` on the true class, :math:`\alpha/(k-1)` elsewhere.

    Eq. 3 of Wang et al.: rows of shape ``(b, k)`` on ``y``'s device, summing to one; α = 0 gives one-hot vectors.

    Args:
        y, num_classes: hard labels, shape ``(b,)``, integers in ``[0, k)``, and ``k ≥ 2``.
        alpha: α ∈ [0, (k−1)/k].
        dtype: the targets' dtype (default: torch's default float type).

    Example:
        >>> smoothed_targets(torch.tensor([0, 2]), num_classes=3, alpha=0.2)
        tensor([[0.8000, 0.1000, 0.1000],
                [0.1000, 0.1000, 0.8000]])

    Raises:
        ValueError: ``num_classes < 2``, α outside [0, (k−1)/k], labels not integers in [0, k).
    """
    k = check_num_classes(num_classes)
    alpha = check_ls_alpha(alpha, k)
    if y.dim() != 1 or y.dtype.is_floating_point or y.dtype == torch.bool:
        raise ValueError(f"y must be a 1-D tensor of integer class labels, got shape {tuple(y.shape)} and {y.dtype}")
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= k):
        raise ValueError(f"y (the labels) must lie in [0, {k}), got values in [{int(y.min())}, {int(y.max())}]")
    dtype = dtype or torch.get_default_dtype()
    out = torch.full((y.shape[0], k), alpha / (k - 1), dtype=dtype, device=y.device)
    return out.scatter_(1, y.long().unsqueeze(1), 1.0 - alpha)


def _smooth(y: Tensor, num_classes: int, alpha: float, dtype: torch.dtype) -> Tensor:
    """Hard labels → LS targets; soft targets ``(b, k)`` → the same affine map, (1 − ε)·y + ε/k with ε = αk/(k−1)."""
    if y.dim() == 2 and y.dtype.is_floating_point:
        if y.shape[1] != num_classes:
            raise ValueError(f"soft targets have {y.shape[1]} classes, logits {num_classes}")
        eps = check_ls_alpha(alpha, num_classes) * num_classes / (num_classes - 1)
        return ((1 - eps) * y + eps / num_classes).to(dtype)
    return smoothed_targets(y, num_classes, alpha, dtype=dtype)


def ls_cross_entropy(logits: Tensor, y: Tensor, *, alpha: float, reduction: str = "none") -> Tensor:
    r"""Label-smoothed cross-entropy :math:`-\sum_j \bar y_{\alpha,j}\log\mathrm{softmax}(s)_j` (the paper's bold ℓ).

    Args:
        logits: ``(b, k)``.
        y: hard labels ``(b,)``, or soft targets ``(b, k)`` (e.g. Mixup's), which are smoothed by the
            same affine map, :math:`(1-\varepsilon)y+\varepsilon/k` with :math:`\varepsilon=\alpha k/(k-1)`
            (for one-hot ``y`` this is exactly eq. 3).
        alpha: the paper's smoothing factor, in [0, (k−1)/k].
        reduction: ``"none"`` (per-sample, the default), ``"mean"`` or ``"sum"``.

    Example:
        >>> ls_cross_entropy(torch.zeros(2, 3), torch.tensor([0, 2]), alpha=0.2)  # uniform logits: log 3
        tensor([1.0986, 1.0986])
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    if logits.dim() != 2:
        raise ValueError(f"logits must be (batch, classes), got shape {tuple(logits.shape)}")
    if y.dim() == 0 or y.shape[0] != logits.shape[0]:
        raise ValueError(
            f"y must have one label (or target row) per logits row: logits shape {tuple(logits.shape)}, "
            f"y shape {tuple(y.shape)}"
        )
    targets = _smooth(y, logits.shape[1], alpha, logits.dtype)
    losses = -(targets * F.log_softmax(logits, dim=1)).sum(1)
    return losses if reduction == "none" else (losses.mean() if reduction == "mean" else losses.sum())


def ls_regularizer_values(p_true, alpha: float, *, k: int = 2, theta_f=None) -> np.ndarray:
    r""":math:`\|\theta_f(p-\bar y_\alpha)\|^2` (eq. 20, corrected form) for a model whose softmax puts ``p_true``
    on the true class (class 0) and spreads the rest evenly over the k − 1 others; ȳ_α = (1 − α, α/(k−1), …).
    ``theta_f`` is the last layer's weight (k, d) — :math:`\theta_f^\top(p-\bar y_\alpha)` is used, so a
    ``torch.nn.Linear(d, k).weight`` fits — the identity by default. Zero at ``p_true = 1 − α``."""
    p = to_numpy(p_true).reshape(-1)
    if not (isinstance(k, (int, np.integer)) and k >= 2):
        raise ValueError(f"k must be an int ≥ 2, got {k!r}")
    if not (isinstance(alpha, (int, float, np.floating)) and 0 <= alpha <= 1):
        raise ValueError(f"alpha (the label-smoothing factor) must lie in [0, 1], got {alpha!r}")
    if not (np.isfinite(p).all() and np.all((p >= 0) & (p <= 1))):
        raise ValueError("p_true must hold probabilities in [0, 1]")
    diff = np.empty((p.size, k))
    diff[:, 0] = p - (1 - alpha)
    diff[:, 1:] = ((1 - p) - alpha)[:, None] / (k - 1)
    w = np.eye(k) if theta_f is None else to_numpy(theta_f)
    if w.ndim != 2 or w.shape[0] != k:
        raise ValueError(f"theta_f must have shape (k={k}, d), got {w.shape}")
    return np.sum((diff @ w) ** 2, axis=1)
