"""What the papers' experiments share: their image sets, the validation hold-out, models and class metrics."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from ...data.datasets import ArrayDataset, split_dataset
from ...data.embedded import load_digits
from ...data.fashion import load_fashion_mnist
from ...data.groups import make_imbalanced
from ...metrics import evaluate
from ...models import make_model
from ..protocol import Splits

__all__ = [
    "image_sets",
    "keep_count",
    "per_class_subset",
    "holdout",
    "validation_floor",
    "build_model",
    "class_metrics",
    "TEST_SEED",
    "VAL_FLOOR",
]

#: The fewest validation images of a class a claim is about: with 3 images, one image moves the score by 33 points.
VAL_FLOOR = 30

#: The test images are drawn once with this seed (when a preset subsamples them): every seed and every
#: method is measured on the same test set, so the paired differences hold no test-set draw.
TEST_SEED = 12345


def per_class_subset(dataset: ArrayDataset, count: int | None, generator: torch.Generator) -> ArrayDataset:
    """At most ``count`` examples of each class (a seeded draw, original order kept); ``None`` keeps all."""
    if count is None:
        return dataset
    keep = torch.zeros(len(dataset), dtype=torch.bool)
    y = dataset.y.cpu()
    for c in range(dataset.num_classes):
        members = (y == c).nonzero().squeeze(1)
        keep[members[torch.randperm(members.numel(), generator=generator)[:count]]] = True
    return dataset.subset(keep)


def image_sets(dataset: str, seed: int, config: Mapping) -> tuple[ArrayDataset, ArrayDataset]:
    """``(train, test)`` images of ``dataset``: ``"digits"`` (embedded, ``config["size"]`` 8 or 28) or
    ``"fashion-mnist"``; ``config["per_class"]`` / ``config["test_per_class"]`` subsample each class."""
    if dataset == "digits":
        train, test = load_digits(size=config.get("size", 8), seed=seed)
    else:
        train, test = load_fashion_mnist(train=True), load_fashion_mnist(train=False)
    train = per_class_subset(train, config.get("per_class"), torch.Generator().manual_seed(seed))
    test = per_class_subset(test, config.get("test_per_class"), torch.Generator().manual_seed(TEST_SEED))
    return train, test


def keep_count(train: ArrayDataset, cls: int, count: int, seed: int) -> ArrayDataset:
    """Keep ``count`` training examples of class ``cls`` (a seeded draw), every other class whole."""
    n_c = int((train.y == cls).sum())
    if count > n_c:
        raise ValueError(f"cannot keep {count} examples of class {cls}: the training set has {n_c}")
    return make_imbalanced(train, classes=cls, keep_fraction=count / n_c, generator=seed)


def holdout(train: ArrayDataset, test: ArrayDataset, config: Mapping, seed: int, info: dict) -> Splits:
    """Cut a stratified validation split (``config["val_fraction"]``) off the training set."""
    fit_part, val = split_dataset(train, test_fraction=config.get("val_fraction", 0.2), seed=seed)
    counts = torch.bincount(fit_part.y, minlength=fit_part.num_classes).tolist()
    info = {**info, "train_per_class": counts, "val": len(val), "test": len(test)}
    return Splits(fit_part, val, test, info)


def validation_floor(
    pool: ArrayDataset, used: torch.Tensor, val: ArrayDataset, classes, count: int, seed: int
) -> ArrayDataset:
    """``val`` with images of each of ``classes`` added from ``pool``'s unused ones (``used``: a mask over ``pool``
    of the images already in the training or validation split) until it holds ``count`` of each: tuning then
    ranks settings on enough images of the classes the claims are about, where thinning the validation split
    like the training split would leave a handful."""
    y, gen = pool.y.cpu(), torch.Generator().manual_seed(seed)
    extra = torch.zeros(len(pool), dtype=torch.bool)
    for c in classes:
        need = count - int((val.y.cpu() == c).sum())
        free = ((y == c) & ~used.cpu()).nonzero().squeeze(1)
        if need > free.numel():
            raise ValueError(
                f"class {c} has {free.numel()} unused images, fewer than the {need} validation images needed"
            )
        if need > 0:
            extra[free[torch.randperm(free.numel(), generator=gen)[:need]]] = True
    if not extra.any():
        return val
    added = pool.subset(extra)
    return ArrayDataset(
        torch.cat([val.x, added.x.to(val.x.device)]),
        torch.cat([val.y, added.y.to(val.y.device)]),
        num_classes=val.num_classes,
    )


def build_model(train: ArrayDataset, config: Mapping) -> torch.nn.Module:
    """``config["model"]`` from :func:`dro_lab.models.make_model`, sized for ``train``."""
    return make_model(
        config["model"], in_shape=train.in_shape, num_classes=train.num_classes, **dict(config.get("model_options", {}))
    )


def class_metrics(model: torch.nn.Module, dataset, config: Mapping) -> dict:
    """Accuracy, balanced accuracy, worst-class accuracy and every class's accuracy (``class_3_accuracy`` …)."""
    report = evaluate(model, dataset)
    per_class = report["per_class_accuracy"]
    present = [a for a in per_class if a == a]  # NaN for a class absent from the set
    out = {
        "accuracy": report["accuracy"],
        "balanced_accuracy": sum(present) / len(present),
        "worst_class_accuracy": report["worst_class_accuracy"],
    }
    out.update({f"class_{c}_accuracy": a for c, a in enumerate(per_class)})
    return out
