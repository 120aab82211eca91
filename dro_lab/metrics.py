"""Evaluation metrics, defined once: accuracy, per-class and per-group accuracy, worst-class/group."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

from ._validation import check_int, check_optional_int
from .data.datasets import fetch_batch
from .losses import per_sample_cross_entropy
from .utils import to_numpy

__all__ = [
    "accuracy_report",
    "balanced_accuracy",
    "f1_scores",
    "macro_f1",
    "predict",
    "evaluate",
    "dataset_losses",
    "model_on_grid",
]


def accuracy_report(
    pred: Tensor,
    y: Tensor,
    *,
    groups: Tensor | None = None,
    num_classes: int | None = None,
    losses: Tensor | None = None,
) -> dict:
    """Average, per-class and worst-class accuracy (and per-group / worst-group when ``groups`` given).

    Classes or groups absent from ``y`` are reported as ``nan`` and ignored by the worst-case.

    Args:
        pred, y, groups: predicted and true class ids, and group ids, shape ``(n,)``.
        num_classes: the number of classes (default: ``max(y) + 1``).
        losses: per-sample losses: adds their mean ``loss``, ``loss_std`` and ``max_loss``.

    Example:
        >>> accuracy_report(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 0, 1, 1]))
        {'accuracy': 0.75, 'n': 4, 'per_class_accuracy': [0.5, 1.0], 'worst_class_accuracy': 0.5}
    """
    for name, value in (("pred", pred), ("y", y), ("groups", groups), ("losses", losses)):
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"{name} must be a tensor, got {type(value).__name__}")
    if pred.shape != y.shape:
        raise ValueError(f"pred and y must have the same shape, got {tuple(pred.shape)} and {tuple(y.shape)}")
    if y.numel() == 0:
        raise ValueError("pred and y are empty: cannot compute accuracy on an empty set")
    for name, value in (("y", y), ("groups", groups), ("losses", losses)):
        if value is not None and value.device != pred.device:
            raise ValueError(f"{name} is on device {value.device} but pred is on {pred.device}; put them on one device")
    if y.min() < 0:
        raise ValueError(f"y must hold class ids >= 0, got minimum {int(y.min())}")
    if num_classes is not None:
        check_int(num_classes, "num_classes (> max(y))", low=int(y.max()) + 1)
    if groups is not None:
        if groups.shape != y.shape:
            raise ValueError(f"groups must have one id per example: shape {tuple(y.shape)}, got {tuple(groups.shape)}")
        if groups.dtype.is_floating_point or groups.dtype == torch.bool or int(groups.min()) < 0:
            raise ValueError(
                f"groups must hold integer group ids >= 0, got dtype {groups.dtype}, minimum {groups.min().item()}"
            )
    if losses is not None and losses.shape != y.shape:
        raise ValueError(f"losses must have one entry per example: shape {tuple(y.shape)}, got {tuple(losses.shape)}")
    correct = (pred == y).double()
    k = int(num_classes if num_classes is not None else int(y.max()) + 1)
    out = {"accuracy": float(correct.mean()), "n": int(y.numel())}
    per_class = _per_label_mean(correct, y, k)
    out["per_class_accuracy"] = per_class
    out["worst_class_accuracy"] = _nanmin(per_class)
    if groups is not None:
        g = int(groups.max()) + 1
        per_group = _per_label_mean(correct, groups, g)
        out["per_group_accuracy"] = per_group
        out["worst_group_accuracy"] = _nanmin(per_group)
    if losses is not None:
        out["loss"] = float(losses.double().mean())
        out["loss_std"] = float(losses.double().std(unbiased=False))  # spread of the per-sample losses
        out["max_loss"] = float(losses.max())
    return out


def _confusion_counts(pred: Tensor, y: Tensor, num_classes: int | None) -> tuple[Tensor, Tensor, Tensor]:
    """Per-class true positives, predicted counts and true counts (float64, on the host)."""
    for name, value in (("pred", pred), ("y", y)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name} must be a tensor of class ids, got {type(value).__name__}")
    if pred.shape != y.shape or y.dim() != 1 or y.numel() == 0:
        raise ValueError(
            f"pred and y must be non-empty 1-D tensors of one shape, got {tuple(pred.shape)} and {tuple(y.shape)}"
        )
    pred, y = pred.detach().long().cpu(), y.detach().long().cpu()
    k = max(int(y.max()), int(pred.max())) + 1
    if num_classes is not None:
        k = check_int(num_classes, "num_classes (> every class id)", low=k)
    hits = torch.bincount(y[pred == y], minlength=k).double()
    return hits, torch.bincount(pred, minlength=k).double(), torch.bincount(y, minlength=k).double()


def balanced_accuracy(pred: Tensor, y: Tensor) -> float:
    """The mean recall over the classes present in ``y`` (scikit-learn's ``balanced_accuracy_score``)."""
    hits, _, true = _confusion_counts(pred, y, None)
    present = true > 0
    return float((hits[present] / true[present]).mean())


def f1_scores(pred: Tensor, y: Tensor, *, num_classes: int | None = None) -> list[float]:
    """Each class's F1 = 2·TP / (2·TP + FP + FN), 0 for a class neither predicted nor present."""
    hits, predicted, true = _confusion_counts(pred, y, num_classes)
    denominator = predicted + true
    return [float(v) for v in torch.where(denominator > 0, 2 * hits / denominator.clamp_min(1), 0.0)]


def macro_f1(pred: Tensor, y: Tensor) -> float:
    """The mean F1 over the classes present in ``y`` or ``pred`` (scikit-learn's ``f1_score(average="macro")``)."""
    hits, predicted, true = _confusion_counts(pred, y, None)
    seen = (predicted + true) > 0
    return float((2 * hits[seen] / (predicted[seen] + true[seen])).mean())


def _per_label_mean(values: Tensor, labels: Tensor, k: int) -> list[float]:
    labels = labels.long()
    sums = torch.zeros(k, dtype=torch.float64, device=values.device).index_add_(0, labels, values)
    counts = torch.bincount(labels, minlength=k).double()
    means = sums / counts  # 0/0 → nan for absent labels, on purpose
    return [float(v) for v in means.cpu()]


def _nanmin(values: list[float]) -> float:
    finite = [v for v in values if v == v]
    return min(finite) if finite else float("nan")


def _check_eval_args(model, dataset, batch_size, loss_fn) -> None:
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    try:
        n = len(dataset)
    except TypeError:
        raise TypeError(
            f"dataset must be a sized dataset yielding (x, y, index[, group]), got {type(dataset).__name__}"
        ) from None
    if n == 0:
        raise ValueError("dataset is empty (len(dataset) == 0): need at least one example")
    check_int(batch_size, "batch_size")
    if loss_fn is not None and not callable(loss_fn):
        raise TypeError(
            f"loss_fn must be a callable loss_fn(logits, y) -> per-sample losses, got {type(loss_fn).__name__}"
        )


@torch.no_grad()
def predict(model: torch.nn.Module, x: Tensor, *, batch_size: int = 1024) -> Tensor:
    """Logits of ``model`` on ``x`` in eval mode, batched; the model's train/eval mode is restored."""
    was_training = model.training
    model.eval()
    try:
        device = next(model.parameters()).device
        outs = [model(x[i : i + batch_size].to(device)) for i in range(0, len(x), batch_size)]
    finally:
        model.train(was_training)
    return torch.cat(outs)


def evaluate(
    model: torch.nn.Module,
    dataset,
    *,
    batch_size: int = 1024,
    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
    num_classes: int | None = None,
) -> dict:
    """Metrics of ``model`` on a dataset yielding ``(x, y, index[, group])`` (see :mod:`dro_lab.data`).

    Returns :func:`accuracy_report`'s dict, with the losses' ``loss``, ``loss_std`` and ``max_loss``.

    Args:
        model, dataset: maps inputs to logits (run in eval mode), and e.g. an :class:`~dro_lab.data.ArrayDataset`.
        batch_size, loss_fn: the forward passes' batch; a per-sample loss ``(logits, y) -> (n,)`` (default CE).
        num_classes: default: the dataset's ``num_classes``.

    Example:
        >>> report = evaluate(torch.nn.Linear(2, 2), make_minority_blobs(100)[1])
        >>> report["n"], report["worst_group_accuracy"] <= report["accuracy"]
        (100, True)
    """
    _check_eval_args(model, dataset, batch_size, loss_fn)
    check_optional_int(num_classes, "num_classes")
    idx = torch.arange(len(dataset))
    x, y, _, groups = fetch_batch(dataset, idx)
    logits = predict(model, x, batch_size=batch_size).cpu()
    y = y.cpu()  # the dataset may live on the GPU (ArrayDataset.to); metrics are computed on the host
    groups = groups.cpu() if groups is not None else None
    loss_fn = loss_fn or per_sample_cross_entropy
    losses = loss_fn(logits, y)
    k = num_classes or getattr(dataset, "num_classes", None) or logits.shape[1]
    return accuracy_report(logits.argmax(1), y, groups=groups, num_classes=k, losses=losses)


@torch.no_grad()
def dataset_losses(
    model: torch.nn.Module,
    dataset,
    *,
    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
    batch_size: int = 1024,
) -> Tensor:
    """Per-sample losses of ``model`` on every example of ``dataset``, in index order, on the model's device.

    Eval mode (BatchNorm's running statistics are left alone), the train/eval mode restored: the
    exact loss vector of the hardness-weighted sampler's Theorem B.1 variant.

    Args:
        model, dataset, loss_fn, batch_size: as in :func:`evaluate`.
    """
    _check_eval_args(model, dataset, batch_size, loss_fn)
    loss_fn = loss_fn or per_sample_cross_entropy
    x, y, _, _ = fetch_batch(dataset, torch.arange(len(dataset)))
    logits = predict(model, x, batch_size=batch_size)
    return loss_fn(logits, y.to(logits.device))


def model_on_grid(
    model: torch.nn.Module, points, *, resolution: int, pad: float = 0.5, output: str = "prob"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A classifier over a square mesh around 2-D ``points``: ``(grid_x, grid_y, values)``.

    The mesh spans the points' bounding box widened by ``pad`` on every side, ``resolution`` values per axis;
    ``values`` has shape ``(resolution, resolution)``, laid out as ``np.meshgrid(grid_x, grid_y)``: P(class 1)
    (softmax column 1) for ``output="prob"``, the predicted class for ``output="class"``. The model runs through
    :func:`dro_lab.metrics.predict` (eval mode on its own device, its mode restored), without gradients.
    """
    if output not in ("prob", "class"):
        raise ValueError(f"output must be 'prob' or 'class', got {output!r}")
    xn = to_numpy(points)
    if xn.ndim != 2 or xn.shape[1] != 2:
        raise ValueError(f"points must be 2-D inputs of shape (n, 2), got {xn.shape}")
    resolution = check_int(resolution, "resolution", low=2)
    lo, hi = xn.min(0) - pad, xn.max(0) + pad
    gx, gy = np.linspace(lo[0], hi[0], resolution), np.linspace(lo[1], hi[1], resolution)
    mesh = torch.tensor(np.stack(np.meshgrid(gx, gy), -1).reshape(-1, 2), dtype=torch.float32)
    with torch.no_grad():
        logits = predict(model, mesh).cpu()
    values = torch.softmax(logits, 1)[:, 1] if output == "prob" else logits.argmax(1)
    return gx, gy, values.numpy().reshape(resolution, resolution)
