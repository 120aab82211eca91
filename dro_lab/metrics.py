"""Evaluation metrics, defined once: accuracy, per-class and per-group accuracy, worst-class/group."""

from __future__ import annotations

import numbers
from typing import Callable

import torch
from torch import Tensor

__all__ = ["accuracy_report", "evaluate", "predict", "dataset_losses"]


def accuracy_report(pred: Tensor, y: Tensor, *, groups: Tensor | None = None,
                    num_classes: int | None = None, losses: Tensor | None = None) -> dict:
    """Average, per-class and worst-class accuracy (and per-group / worst-group when ``groups`` given).

    Classes or groups absent from ``y`` are reported as ``nan`` and ignored by the worst-case.
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
    if num_classes is not None and (isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral)
                                    or num_classes <= int(y.max())):
        raise ValueError(f"num_classes must be an int > max(y) = {int(y.max())}, got {num_classes!r}")
    if groups is not None:
        if groups.shape != y.shape:
            raise ValueError(f"groups must have one id per example: shape {tuple(y.shape)}, got {tuple(groups.shape)}")
        if groups.dtype.is_floating_point or groups.dtype == torch.bool or int(groups.min()) < 0:
            raise ValueError(f"groups must hold integer group ids >= 0, got dtype {groups.dtype}, "
                             f"minimum {groups.min().item()}")
    if losses is not None:
        if losses.shape != y.shape:
            raise ValueError(f"losses must have one entry per example: shape {tuple(y.shape)}, "
                             f"got {tuple(losses.shape)}")
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
        raise TypeError(f"dataset must be a sized dataset yielding (x, y, index[, group]), "
                        f"got {type(dataset).__name__}") from None
    if n == 0:
        raise ValueError("dataset is empty (len(dataset) == 0): need at least one example")
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    if loss_fn is not None and not callable(loss_fn):
        raise TypeError(f"loss_fn must be a callable loss_fn(logits, y) -> per-sample losses, "
                        f"got {type(loss_fn).__name__}")


@torch.no_grad()
def predict(model: torch.nn.Module, x: Tensor, *, batch_size: int = 1024) -> Tensor:
    """Logits of ``model`` on ``x`` in eval mode, batched; the model's train/eval mode is restored."""
    was_training = model.training
    model.eval()
    try:
        device = next(model.parameters()).device
        outs = [model(x[i:i + batch_size].to(device)) for i in range(0, len(x), batch_size)]
    finally:
        model.train(was_training)
    return torch.cat(outs)


def evaluate(model: torch.nn.Module, dataset, *, batch_size: int = 1024,
             loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None, num_classes: int | None = None) -> dict:
    """Metrics of ``model`` on a dataset yielding ``(x, y, index[, group])`` (see :mod:`dro_lab.data`)."""
    from .train import fetch_batch, per_sample_cross_entropy  # local: train imports metrics

    _check_eval_args(model, dataset, batch_size, loss_fn)
    if num_classes is not None and (isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral)
                                    or num_classes < 1):
        raise ValueError(f"num_classes must be a positive int, got {num_classes!r}")
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
def dataset_losses(model: torch.nn.Module, dataset, *, loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
                   batch_size: int = 1024) -> Tensor:
    """Per-sample losses of ``model`` on every example of ``dataset``, in index order, on the model's device.

    Eval mode (BatchNorm's running statistics are left alone), the train/eval mode restored: the
    exact loss vector of the hardness-weighted sampler's Theorem B.1 variant.
    """
    from .train import fetch_batch, per_sample_cross_entropy  # local: train imports metrics

    _check_eval_args(model, dataset, batch_size, loss_fn)
    loss_fn = loss_fn or per_sample_cross_entropy
    x, y, _, _ = fetch_batch(dataset, torch.arange(len(dataset)))
    logits = predict(model, x, batch_size=batch_size)
    return loss_fn(logits, y.to(logits.device))
