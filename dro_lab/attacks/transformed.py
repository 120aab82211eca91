"""A model's test accuracy under each of several input transformations (rotations, noise, blur, FGSM …).

The robust-training experiment of Feoktistov et al. (2025, §6.3, Fig. 2) scores a model by its accuracy on the
test set transformed by each "attack" :math:`j`, :math:`Q_j`, and by their mean :math:`Q=\\frac1c\\sum_jQ_j`;
a group-DRO method also cares about the worst one, :math:`\\min_jQ_j`. :func:`transform_accuracies` measures
every :math:`Q_j`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from .._validation import check_callable, check_int, check_module, check_xy

__all__ = ["transform_accuracies"]


def transform_accuracies(
    model: torch.nn.Module,
    data,
    transforms: Sequence[Callable],
    *,
    generator: torch.Generator | None = None,
    batch_size: int = 1024,
) -> np.ndarray:
    """The accuracy of ``model`` on ``data`` after each transformation: one number in [0, 1] per transform.

    Args:
        model: a classifier (inputs to logits); evaluated in eval mode, its train/eval mode restored.
        data: a dataset with ``x`` and ``y`` tensors, or a pair ``(x, y)``; moved to the model's device.
        transforms: callables ``t(x, y, model, generator) -> x'`` (:mod:`dro_lab.data.transforms`,
            :func:`dro_lab.attacks.fgsm_transform`); each is applied to the whole set in batches, in order.
        generator: the random draws of the random transforms (noise, the rotation's sign); ``None``: torch's
            global generator.
        batch_size: inputs per forward pass.
    """
    check_module(model)
    x, y = check_xy(data)
    transforms = list(transforms)
    if not transforms:
        raise ValueError("transforms must be a non-empty sequence of callables t(x, y, model, generator)")
    for t in transforms:
        check_callable(t, "transforms", "a sequence of callables t(x, y, model, generator)")
    batch_size = check_int(batch_size, "batch_size")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    correct = np.zeros(len(transforms))
    try:
        for start in range(0, len(x), batch_size):
            xb, yb = x[start : start + batch_size].to(device), y[start : start + batch_size].to(device)
            for j, t in enumerate(transforms):
                xt = t(xb, yb, model, generator).detach()
                with torch.no_grad():
                    correct[j] += float((model(xt).argmax(1) == yb).sum())
    finally:
        model.train(was_training)
    return correct / len(x)
