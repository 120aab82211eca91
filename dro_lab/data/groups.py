"""Imbalance and groups: subsample classes, assign group ids, count them."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from .._validation import check_int, check_number
from .datasets import (
    ArrayDataset,
    IndexedDataset,
    _as_generator,
    as_label_tensor,
    labels_of,
    require_array_dataset,
)

__all__ = ["make_imbalanced", "assign_groups", "groups_from_classes", "class_counts", "group_counts", "dirichlet_split"]


def make_imbalanced(
    dataset: ArrayDataset,
    *,
    classes: int | Iterable[int],
    keep_fraction: float,
    generator: torch.Generator | int | None = None,
) -> ArrayDataset:
    """Keep only a fraction of the examples of some classes (a class-imbalanced training set).

    For each chosen class with :math:`n_c` examples, ``max(1, round(keep_fraction * n_c))``
    examples (round half up) are kept, drawn uniformly without replacement; every other class is
    kept whole. The kept examples stay in their original order and are renumbered from 0.

    Args:
        dataset: The dataset to subsample.
        classes: A class id or several, each in ``[0, dataset.num_classes)``.
        keep_fraction: Share kept of each chosen class, in (0, 1].
        generator: A CPU ``torch.Generator``, an int seed, or ``None`` to draw a seed from the global
            RNG (as ``torch.utils.data.RandomSampler`` does). Same generator state, same subset.

    Returns:
        A new :class:`ArrayDataset` (groups, if any, are carried along).

    Example:
        The hardness-weighted-sampling paper keeps 1 % of the digit 3::

            train = make_imbalanced(train, classes=3, keep_fraction=0.01, generator=0)
    """
    dataset = require_array_dataset(dataset)
    keep_fraction = check_number(keep_fraction, "keep_fraction", low=0, high=1, low_open=True)
    if isinstance(classes, (int, np.integer)) and not isinstance(classes, bool):
        classes = [int(classes)]
    try:
        chosen = sorted({operator.index(c) for c in classes})
    except TypeError:
        raise TypeError(f"classes must be an int or an iterable of ints, got {classes!r}") from None
    if not chosen:
        raise ValueError("classes must name at least one class")
    bad = [c for c in chosen if not 0 <= c < dataset.num_classes]
    if bad:
        raise ValueError(f"classes must be in [0, {dataset.num_classes}), got {bad}")
    gen = _as_generator(generator)
    y = dataset.y.cpu()
    keep = torch.ones(len(dataset), dtype=torch.bool)
    for c in chosen:
        members = (y == c).nonzero().squeeze(1)
        n_c = members.numel()
        if n_c == 0:
            continue
        k = max(1, int(math.floor(keep_fraction * n_c + 0.5)))
        keep[members] = False
        keep[members[torch.randperm(n_c, generator=gen)[:k]]] = True
    return dataset.subset(keep)


def assign_groups(
    dataset: ArrayDataset, groups: Any | Callable[[Tensor, Tensor], Any], *, num_groups: int | None = None
) -> ArrayDataset:
    """Attach group ids to a dataset, so that it yields ``(x, y, index, group)``.

    Args:
        dataset: The dataset (its tensors are shared, not copied).
        groups: Per-example integer group ids (tensor, array or list of length ``len(dataset)``),
            or a callable ``(x, y) -> ids`` evaluated once on the whole ``dataset.x, dataset.y``,
            e.g. ``lambda x, y: groups_from_classes(y, {0: 0, 1: 0, 2: 1})``.
        num_groups: Number of groups; defaults to ``max(ids) + 1``.

    Returns:
        A new :class:`ArrayDataset` with ``groups`` set (any previous groups are replaced).

    Raises:
        ValueError: The number of ids differs from ``len(dataset)``, or ids are negative.
        TypeError: Ids are not integers.
    """
    dataset = require_array_dataset(dataset)
    ids = groups(dataset.x, dataset.y) if callable(groups) else groups
    ids = as_label_tensor(ids, "groups")
    if ids.shape[0] != len(dataset):
        raise ValueError(f"groups must have one id per example: len(dataset)={len(dataset)}, got {ids.shape[0]} ids")
    return ArrayDataset(dataset.x, dataset.y, ids, num_classes=dataset.num_classes, num_groups=num_groups)


def groups_from_classes(y: Any, mapping: Mapping[int, int] | Sequence[int]) -> Tensor:
    """Group ids from class labels through a class → group map.

    Args:
        y: Integer class labels (tensor, array or list).
        mapping: A dict ``{class: group}`` or a sequence where ``mapping[c]`` is the group of
            class ``c``. Every class present in ``y`` must be mapped.

    Returns:
        An int64 tensor of group ids on the device of ``y`` (CPU for non-tensors).

    Raises:
        ValueError: A class in ``y`` has no group, or a group id is negative.

    Example:
        Odd digits as a minority group: ``groups_from_classes(y, [c % 2 for c in range(10)])``.
    """
    labels = as_label_tensor(y, "y")
    if isinstance(mapping, Mapping):
        table_items = {operator.index(k): operator.index(v) for k, v in mapping.items()}
    elif isinstance(mapping, (Sequence, np.ndarray, Tensor)) and not isinstance(mapping, str):
        table_items = {c: operator.index(v) for c, v in enumerate(list(mapping))}
    else:
        raise TypeError(f"mapping must be a dict or a sequence, got {type(mapping).__name__}")
    if any(v < 0 for v in table_items.values()):
        raise ValueError("mapping must assign non-negative group ids")
    present = sorted(int(c) for c in torch.unique(labels).tolist())
    missing = [c for c in present if c not in table_items]
    if missing:
        raise ValueError(f"mapping has no group for the classes {missing}")
    size = max(max(table_items) + 1, present[-1] + 1 if present else 0)
    table = torch.full((size,), -1, dtype=torch.int64)
    for c, g in table_items.items():
        if c >= 0:
            table[c] = g
    return table.to(labels.device)[labels]


def class_counts(dataset: Any) -> Tensor:
    """Number of examples per class, an int64 tensor of length ``num_classes``.

    Works on an :class:`ArrayDataset`, anything with ``.y`` or ``.targets`` (e.g. torchvision
    datasets, possibly wrapped in :class:`IndexedDataset`), or by iterating over ``(x, y, ...)``
    items.
    """
    base = dataset.dataset if isinstance(dataset, IndexedDataset) else dataset
    y = labels_of(base).cpu()
    k = getattr(dataset, "num_classes", None) or 0
    return torch.bincount(y, minlength=int(k))


def group_counts(dataset: ArrayDataset) -> Tensor:
    """Number of examples per group, an int64 tensor of length ``num_groups``.

    Raises:
        ValueError: The dataset has no groups (see :func:`assign_groups`).
    """
    groups = getattr(dataset, "groups", None)
    if groups is None:
        raise ValueError("the dataset has no groups; attach them with dro_lab.data.assign_groups")
    return torch.bincount(groups.cpu(), minlength=int(getattr(dataset, "num_groups", 0) or 0))


def dirichlet_split(labels, n_groups: int, concentration: float, *, seed: int = 0) -> Tensor:
    """Non-IID group ids (workers, clients): each class is split over ``n_groups`` groups in Dirichlet proportions.

    For every class, its examples are shuffled and cut into ``n_groups`` consecutive parts whose sizes follow
    one draw of Dir(concentration, …, concentration): a small concentration gives each group a few classes,
    a large one an even mix (the ALSO paper's distributed experiment, §6). NumPy's generator seeded with
    ``seed`` makes every draw. Returns an int64 tensor of group ids, one per example.
    """
    labels = as_label_tensor(labels, "labels")
    if labels.numel() == 0:
        raise ValueError("labels is empty: need at least one example")
    n_groups = check_int(n_groups, "n_groups")
    concentration = check_number(concentration, "concentration", low=0, low_open=True)
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
    y = labels.numpy()
    ids = np.empty(len(y), dtype=np.int64)
    for cls in range(int(y.max()) + 1):
        members = rng.permutation(np.nonzero(y == cls)[0])
        cuts = (np.cumsum(rng.dirichlet(np.full(n_groups, concentration)))[:-1] * len(members)).astype(int)
        for j, part in enumerate(np.split(members, cuts)):
            ids[part] = j
    return torch.from_numpy(ids)
