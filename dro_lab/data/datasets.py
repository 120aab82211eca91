"""Datasets that yield their sample indices: :class:`ArrayDataset`, :class:`IndexedDataset`, splits, batches.

Every dataset in dro_lab yields ``(x, y, index)`` or, where groups are defined, ``(x, y, index, group)``;
``index`` is the position of the example in *that* dataset, so a sampler or a robust objective can keep
per-example state and update it from a mini-batch. :func:`fetch_batch` gets a whole batch in one call.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset, default_collate

from .._validation import as_label_tensor, check_int, check_number

__all__ = [
    "labels_of",
    "require_array_dataset",
    "ArrayDataset",
    "IndexedDataset",
    "split_dataset",
    "split_positions",
    "fetch_batch",
]


def _as_generator(generator: torch.Generator | int | None, name: str = "generator") -> torch.Generator:
    """A CPU ``torch.Generator`` from a generator, a seed, or ``None`` (seeded from the global RNG)."""
    if isinstance(generator, torch.Generator):
        return generator
    if generator is None:
        # Like torch.utils.data.RandomSampler: draw a seed from the global RNG, so
        # torch.manual_seed still makes the result reproducible.
        seed = int(torch.empty((), dtype=torch.int64).random_().item())
    elif isinstance(generator, (int, np.integer)) and not isinstance(generator, bool):
        seed = int(generator)
    else:
        raise TypeError(f"{name} must be a torch.Generator, an int seed or None, got {type(generator).__name__}")
    return torch.Generator().manual_seed(seed)


def labels_of(dataset: Any) -> Tensor:
    """The label vector of a dataset: ``.y`` / ``.targets`` when present, else by iteration."""
    for attr in ("y", "targets"):
        labels = getattr(dataset, attr, None)
        if labels is not None:
            return as_label_tensor(labels, f"dataset.{attr}")
    return as_label_tensor([int(dataset[i][1]) for i in range(len(dataset))], "dataset labels")


def require_array_dataset(dataset: Any, name: str = "dataset") -> ArrayDataset:
    """``dataset`` itself if it is an :class:`ArrayDataset`, else a ``TypeError`` naming the argument ``name``."""
    if not isinstance(dataset, ArrayDataset):
        raise TypeError(
            f"{name} must be a dro_lab.data.ArrayDataset (the in-memory datasets returned by the loaders here), "
            f"got {type(dataset).__name__}"
        )
    return dataset


class ArrayDataset(Dataset):
    """An in-memory dataset over tensors that yields ``(x, y, index[, group])``.

    ``dataset[i]`` returns ``(x[i], y[i], i)`` or ``(x[i], y[i], i, groups[i])``; :meth:`batch` takes a whole
    mini-batch by an index tensor in one call. The tensors stay on their device (see :meth:`to`).

    Args:
        x: Inputs, shape ``(n, ...)``; converted to float32.
        y: Integer class labels, shape ``(n,)``; converted to int64. Must be non-negative.
        groups: Optional integer group ids, shape ``(n,)`` (e.g. majority / minority).
        num_classes: Number of classes. Defaults to ``max(y) + 1``. Pass it when a class may be
            absent from this split (subsets keep the parent's value).
        num_groups: Number of groups. Defaults to ``max(groups) + 1``.

    Attributes:
        x, y, groups (Tensor): The inputs (float32), labels and group ids (int64; ``groups`` may be ``None``).
        num_classes, num_groups (int): The numbers of classes and of groups (``None`` without groups).

    Raises:
        ValueError: Empty data, mismatched lengths, negative ids, or ``num_classes`` /
            ``num_groups`` too small for the ids present.
        TypeError: ``y`` or ``groups`` not integer.
    """

    def __init__(
        self, x: Any, y: Any, groups: Any = None, *, num_classes: int | None = None, num_groups: int | None = None
    ) -> None:
        x = x if isinstance(x, Tensor) else torch.as_tensor(np.asarray(x))
        if x.ndim == 0:
            raise ValueError("x must have a leading example dimension, got a scalar")
        if x.is_complex() or x.dtype == torch.bool:
            raise TypeError(f"x must be real numbers, got dtype {x.dtype}")
        x = x.to(torch.float32)
        if not bool(torch.isfinite(x).all()):
            raise ValueError("x contains NaN or inf values; x must be finite")
        y = as_label_tensor(y, "y")
        n = x.shape[0]
        if n == 0:
            raise ValueError("ArrayDataset needs at least one example, got an empty x")
        if y.shape[0] != n:
            raise ValueError(f"x and y must have the same length, got len(x)={n} and len(y)={y.shape[0]}")
        if groups is not None:
            groups = as_label_tensor(groups, "groups")
            if groups.shape[0] != n:
                raise ValueError(f"groups must have one id per example: len(x)={n}, len(groups)={groups.shape[0]}")
            groups = groups.to(x.device)
        self.x: Tensor = x
        self.y: Tensor = y.to(x.device)
        self.groups: Tensor | None = groups
        self.num_classes: int = self._count("num_classes", num_classes, self.y, "y")
        self.num_groups: int | None = (
            None if groups is None else self._count("num_groups", num_groups, groups, "groups")
        )
        if groups is None and num_groups is not None:
            raise ValueError("num_groups was given but groups is None")

    @staticmethod
    def _count(name: str, given: int | None, ids: Tensor, ids_name: str) -> int:
        needed = int(ids.max()) + 1
        if given is None:
            return needed
        return check_int(given, f"{name} ({ids_name} contains the id {needed - 1})", low=needed)

    def __len__(self) -> int:
        return self.x.shape[0]

    def __getitem__(self, i: int) -> tuple:
        try:
            i = operator.index(i)
        except TypeError:
            raise TypeError(
                f"ArrayDataset indices must be integers, got {type(i).__name__}; use .batch(idx) or .subset(idx) "
                "for many examples"
            ) from None
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for a dataset of {n} examples")
        i %= n  # a negative index still reports the position 0..n-1
        if self.groups is None:
            return self.x[i], self.y[i], i
        return self.x[i], self.y[i], i, self.groups[i]

    def batch(self, idx: Tensor | Sequence[int]) -> tuple[Tensor, ...]:
        """Take a whole mini-batch by index, in one tensor operation.

        Args:
            idx: Indices into this dataset, any integer tensor or sequence (moved to the data's
                device).

        Returns:
            ``(x[idx], y[idx], idx)`` or ``(x[idx], y[idx], idx, groups[idx])``, with ``idx`` as an
            int64 tensor on the data's device: the same fields the DataLoader would collate.
        """
        idx = torch.as_tensor(idx, dtype=torch.int64, device=self.x.device)
        if self.groups is None:
            return self.x[idx], self.y[idx], idx
        return self.x[idx], self.y[idx], idx, self.groups[idx]

    def subset(self, indices: Tensor | Sequence[int] | np.ndarray) -> ArrayDataset:
        """A new dataset with the examples ``indices`` (integer positions or a boolean mask).

        The subset's indices are renumbered ``0 .. len(subset) - 1``; ``num_classes`` and
        ``num_groups`` are kept from this dataset so that absent classes still count.

        Raises:
            ValueError: An empty selection, a mask of the wrong length, or an index out of range.
        """
        idx = indices if isinstance(indices, Tensor) else torch.as_tensor(np.asarray(indices))
        idx = idx.to(self.x.device)
        n = len(self)
        if idx.numel() == 0:
            raise ValueError("subset needs at least one index, got an empty selection")
        if idx.dtype == torch.bool:
            if idx.shape != (n,):
                raise ValueError(f"a boolean mask for subset must have shape ({n},), got {tuple(idx.shape)}")
            idx = idx.nonzero().squeeze(1)
        elif idx.is_floating_point() or idx.is_complex():
            raise TypeError(f"subset indices must be integers or a boolean mask, got dtype {idx.dtype}")
        idx = idx.reshape(-1).to(torch.int64)
        if idx.numel() == 0:
            raise ValueError("subset needs at least one index, got an empty mask")
        if int(idx.min()) < -n or int(idx.max()) >= n:
            raise ValueError(
                f"subset indices must be in [-{n}, {n - 1}], got range [{int(idx.min())}, {int(idx.max())}]"
            )
        return ArrayDataset(
            self.x[idx],
            self.y[idx],
            None if self.groups is None else self.groups[idx],
            num_classes=self.num_classes,
            num_groups=self.num_groups,
        )

    def to(self, device: str | torch.device) -> ArrayDataset:
        """A copy of this dataset with every tensor on ``device`` (e.g. to keep it on the GPU)."""
        return ArrayDataset(
            self.x.to(device),
            self.y.to(device),
            None if self.groups is None else self.groups.to(device),
            num_classes=self.num_classes,
            num_groups=self.num_groups,
        )

    @property
    def device(self) -> torch.device:
        """The device of the tensors."""
        return self.x.device

    @property
    def in_shape(self) -> tuple[int, ...]:
        """The shape of one input, e.g. ``(1, 8, 8)``; pass it to :func:`dro_lab.models.make_model`."""
        return tuple(self.x.shape[1:])

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        """``(x, y)`` or ``(x, y, groups)``: the underlying tensors (not copies)."""
        return (self.x, self.y) if self.groups is None else (self.x, self.y, self.groups)

    def __repr__(self) -> str:
        g = "" if self.groups is None else f", num_groups={self.num_groups}"
        return (
            f"ArrayDataset(n={len(self)}, in_shape={self.in_shape}, num_classes={self.num_classes}{g}, "
            f"device={self.device})"
        )


class IndexedDataset(Dataset):
    """Wrap any map-style dataset of ``(x, y)`` so that it yields ``(x, y, index)``.

    A dataset of ``(x, y, group)`` becomes ``(x, y, index, group)``, the order used everywhere in
    dro_lab. ``index`` is a Python int (int64 after collation).

    Args:
        dataset: A map-style dataset with ``__len__`` whose items are ``(x, y)`` or
            ``(x, y, group)``, e.g. a torchvision dataset with transforms.

    Example::

        mnist = torchvision.datasets.MNIST("data", transform=ToTensor())
        loader = DataLoader(IndexedDataset(mnist), batch_size=64, shuffle=True)
        for x, y, index in loader: ...
    """

    def __init__(self, dataset: Dataset) -> None:
        if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
            raise TypeError(
                f"dataset must be a map-style dataset with __getitem__ and __len__, got {type(dataset).__name__}"
            )
        if len(dataset) == 0:
            raise ValueError("dataset is empty")
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i: int) -> tuple:
        i = operator.index(i)
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for a dataset of {n} examples")
        i %= n
        item = self.dataset[i]
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise ValueError(
                f"IndexedDataset expects items (x, y) or (x, y, group), got {type(item).__name__}"
                + (f" of length {len(item)}" if isinstance(item, (tuple, list)) else "")
            )
        if len(item) == 2:
            return item[0], item[1], i
        return item[0], item[1], i, item[2]

    @property
    def num_classes(self) -> int | None:
        """Number of classes when the wrapped dataset says (``num_classes`` or ``classes``), else ``None``."""
        k = getattr(self.dataset, "num_classes", None)
        if k is None and getattr(self.dataset, "classes", None) is not None:
            k = len(self.dataset.classes)
        return k


def split_dataset(
    dataset: ArrayDataset, *, test_fraction: float = 0.25, seed: int = 0, stratify: bool = True
) -> tuple[ArrayDataset, ArrayDataset]:
    """Split an :class:`ArrayDataset` into two, stratified by class by default.

    Useful for a validation split (``train, val = split_dataset(train, test_fraction=0.2)``).
    The split is scikit-learn's :func:`~sklearn.model_selection.train_test_split` on the
    positions, seeded by ``seed``; both parts are renumbered from 0.

    Args:
        dataset: The dataset to split.
        test_fraction: Share of examples in the second part, in (0, 1).
        seed: Seed of the shuffle.
        stratify: Keep the class proportions equal in both parts (needs at least 2 examples
            per class).

    Returns:
        ``(first, second)`` as :class:`ArrayDataset`.
    """
    dataset = require_array_dataset(dataset)
    first, second = split_positions(dataset.y.cpu().numpy(), test_fraction, seed, stratify)
    return dataset.subset(first), dataset.subset(second)


def split_positions(y: np.ndarray, test_fraction: float, seed: int, stratify: bool) -> tuple[np.ndarray, np.ndarray]:
    """Sorted train / test positions of a (stratified) seeded split."""
    from sklearn.model_selection import train_test_split

    test_fraction = check_number(test_fraction, "test_fraction", low=0, high=1, low_open=True, high_open=True)
    seed = check_int(seed, "seed", low=None)
    n = len(y)
    n_test = math.ceil(test_fraction * n)
    if n_test < 1 or n - n_test < 1:
        raise ValueError(f"test_fraction={test_fraction} leaves an empty part for a dataset of {n} examples")
    train_idx, test_idx = train_test_split(
        np.arange(n), test_size=test_fraction, random_state=seed, stratify=y if stratify else None
    )
    # Sorted positions: each part keeps the dataset's original order.
    return np.sort(train_idx), np.sort(test_idx)


def fetch_batch(dataset, idx: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """``(x, y, index, group | None)`` for the examples ``idx`` of a dataset yielding ``(x, y, index[, group])``.

    In-memory datasets that offer ``batch(idx)`` are sliced in one call (no per-item Python);
    any other map-style dataset is collated item by item.
    """
    if hasattr(dataset, "batch"):
        parts = dataset.batch(idx)
    else:
        parts = default_collate([dataset[int(i)] for i in idx])
    parts = tuple(parts)
    if len(parts) == 3:
        return parts[0], parts[1], parts[2], None
    if len(parts) == 4:
        return parts[0], parts[1], parts[2], parts[3]
    raise ValueError(
        f"dataset items must be (x, y, index) or (x, y, index, group), got {len(parts)} fields; "
        "wrap plain (x, y) datasets in dro_lab.data.IndexedDataset"
    )
