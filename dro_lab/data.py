"""Datasets that yield sample indices, imbalance and group construction, and offline defaults.

Every dataset in dro_lab yields ``(x, y, index)`` or, where groups are defined,
``(x, y, index, group)``. ``index`` is the position of the example in *that* dataset
(``0 .. len(dataset) - 1``), so a sampler or a robust objective can keep per-example state
(stored losses, weights) and update it from a mini-batch. After collation by a
:class:`torch.utils.data.DataLoader` the fields are tensors: ``x`` float32, ``y``, ``index`` and
``group`` int64.

The defaults need no network: scikit-learn's bundled digits (:func:`load_digits`), its bundled
tabular sets (:func:`load_tabular`) and a synthetic 2-D set with a minority group
(:func:`make_minority_blobs`). MNIST and CIFAR-10 load through torchvision when their files are
on disk (:func:`load_mnist`, :func:`load_cifar10`); offline they raise
:class:`DatasetUnavailableError`, whose message names the embedded alternative.

Example::

    from dro_lab.data import load_digits, make_imbalanced
    train, test = load_digits(size=8, seed=0)
    train = make_imbalanced(train, classes=[3], keep_fraction=0.05, generator=0)
    x, y, index = train.batch(torch.tensor([0, 5, 7]))   # whole batch, no per-item Python

scikit-learn and torchvision are imported inside the functions that need them, so
``import dro_lab`` stays fast.
"""

from __future__ import annotations

import math
import os
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset

__all__ = [
    "ArrayDataset",
    "IndexedDataset",
    "DatasetUnavailableError",
    "load_digits",
    "load_tabular",
    "load_mnist",
    "load_cifar10",
    "make_minority_blobs",
    "make_imbalanced",
    "split_dataset",
    "assign_groups",
    "groups_from_classes",
    "class_counts",
    "group_counts",
    "TABULAR_DATASETS",
]

#: Names accepted by :func:`load_tabular`.
TABULAR_DATASETS: tuple[str, ...] = ("breast_cancer", "wine", "iris", "digits")

_DIGITS_SIZES = (8, 28)


class DatasetUnavailableError(RuntimeError):
    """A real dataset (MNIST, CIFAR-10) is not on disk and could not be downloaded.

    The message says which embedded dataset to use instead and how to download the real one
    when the machine is online.
    """


# --------------------------------------------------------------------------- helpers


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


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    return int(seed)


def _check_fraction(value: Any, name: str, *, low_open: bool = True, high_closed: bool = False) -> float:
    """Validate a fraction in (0, 1) or (0, 1] and return it as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    hi_ok = value <= 1.0 if high_closed else value < 1.0
    lo_ok = value > 0.0 if low_open else value >= 0.0
    if not (lo_ok and hi_ok and math.isfinite(value)):
        interval = ("(" if low_open else "[") + "0, 1" + ("]" if high_closed else ")")
        raise ValueError(f"{name} must be in {interval}, got {value}")
    return value


def _to_label_tensor(values: Any, name: str) -> Tensor:
    """Integer labels (class or group ids) as an int64 tensor; rejects floats and negatives."""
    if isinstance(values, Tensor):
        t = values
    else:
        arr = np.asarray(values)
        # An empty list becomes float64 in numpy; let it through so the caller reports "empty".
        t = torch.as_tensor(arr if arr.size else arr.astype(np.int64))
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        raise TypeError(f"{name} must hold integer ids, got dtype {t.dtype}")
    if t.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one id per example), got shape {tuple(t.shape)}")
    t = t.to(torch.int64)
    if t.numel() and int(t.min()) < 0:
        raise ValueError(f"{name} must be non-negative ids, got minimum {int(t.min())}")
    return t


def _labels_of(dataset: Any) -> Tensor:
    """The label vector of a dataset: ``.y`` / ``.targets`` when present, else by iteration."""
    for attr in ("y", "targets"):
        labels = getattr(dataset, attr, None)
        if labels is not None:
            return _to_label_tensor(labels, f"dataset.{attr}")
    return _to_label_tensor([int(dataset[i][1]) for i in range(len(dataset))], "dataset labels")


def _require_array_dataset(dataset: Any, name: str = "dataset") -> ArrayDataset:
    if not isinstance(dataset, ArrayDataset):
        raise TypeError(
            f"{name} must be a dro_lab.data.ArrayDataset (the in-memory datasets returned by the loaders here), "
            f"got {type(dataset).__name__}"
        )
    return dataset


# --------------------------------------------------------------------------- datasets


class ArrayDataset(Dataset):
    """An in-memory dataset over tensors that yields ``(x, y, index[, group])``.

    ``dataset[i]`` returns ``(x[i], y[i], i)`` or ``(x[i], y[i], i, groups[i])``; the default
    :class:`~torch.utils.data.DataLoader` collates these into tensors (``index`` and ``group`` as
    int64). For a training loop, :meth:`batch` takes a whole mini-batch by an index tensor in one
    call, with no per-item Python, which is much faster for small models.

    The tensors stay on the device they were given (see :meth:`to`); nothing here moves data.

    Args:
        x: Inputs, shape ``(n, ...)``; converted to float32.
        y: Integer class labels, shape ``(n,)``; converted to int64. Must be non-negative.
        groups: Optional integer group ids, shape ``(n,)`` (e.g. majority / minority).
        num_classes: Number of classes. Defaults to ``max(y) + 1``. Pass it when a class may be
            absent from this split (subsets keep the parent's value).
        num_groups: Number of groups. Defaults to ``max(groups) + 1``.

    Attributes:
        x (Tensor): Inputs, float32, ``(n, ...)``.
        y (Tensor): Labels, int64, ``(n,)``.
        groups (Tensor | None): Group ids, int64, ``(n,)``, or ``None``.
        num_classes (int): Number of classes.
        num_groups (int | None): Number of groups, or ``None`` without groups.

    Raises:
        ValueError: Empty data, mismatched lengths, negative ids, or ``num_classes`` /
            ``num_groups`` too small for the ids present.
        TypeError: ``y`` or ``groups`` not integer.
    """

    def __init__(self, x: Any, y: Any, groups: Any = None, *, num_classes: int | None = None,
                 num_groups: int | None = None) -> None:
        x = x if isinstance(x, Tensor) else torch.as_tensor(np.asarray(x))
        if x.ndim == 0:
            raise ValueError("x must have a leading example dimension, got a scalar")
        if x.is_complex() or x.dtype == torch.bool:
            raise TypeError(f"x must be real numbers, got dtype {x.dtype}")
        x = x.to(torch.float32)
        if not bool(torch.isfinite(x).all()):
            raise ValueError("x contains NaN or inf values; x must be finite")
        y = _to_label_tensor(y, "y")
        n = x.shape[0]
        if n == 0:
            raise ValueError("ArrayDataset needs at least one example, got an empty x")
        if y.shape[0] != n:
            raise ValueError(f"x and y must have the same length, got len(x)={n} and len(y)={y.shape[0]}")
        if groups is not None:
            groups = _to_label_tensor(groups, "groups")
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
        if isinstance(given, bool) or not isinstance(given, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(given).__name__}")
        if given < needed:
            raise ValueError(f"{name}={given} is too small: {ids_name} contains the id {needed - 1}")
        return int(given)

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
            self.x[idx], self.y[idx], None if self.groups is None else self.groups[idx],
            num_classes=self.num_classes, num_groups=self.num_groups,
        )

    def to(self, device: str | torch.device) -> ArrayDataset:
        """A copy of this dataset with every tensor on ``device`` (e.g. to keep it on the GPU)."""
        return ArrayDataset(
            self.x.to(device), self.y.to(device), None if self.groups is None else self.groups.to(device),
            num_classes=self.num_classes, num_groups=self.num_groups,
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
        return (f"ArrayDataset(n={len(self)}, in_shape={self.in_shape}, num_classes={self.num_classes}{g}, "
                f"device={self.device})")


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


# --------------------------------------------------------------------------- splitting


def split_dataset(dataset: ArrayDataset, *, test_fraction: float = 0.25, seed: int = 0,
                  stratify: bool = True) -> tuple[ArrayDataset, ArrayDataset]:
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
    dataset = _require_array_dataset(dataset)
    first, second = _split_positions(dataset.y.cpu().numpy(), test_fraction, seed, stratify)
    return dataset.subset(first), dataset.subset(second)


def _split_positions(y: np.ndarray, test_fraction: float, seed: int, stratify: bool) -> tuple[np.ndarray, np.ndarray]:
    """Sorted train / test positions of a (stratified) seeded split."""
    from sklearn.model_selection import train_test_split

    test_fraction = _check_fraction(test_fraction, "test_fraction")
    seed = _check_seed(seed)
    n = len(y)
    n_test = math.ceil(test_fraction * n)
    if n_test < 1 or n - n_test < 1:
        raise ValueError(f"test_fraction={test_fraction} leaves an empty part for a dataset of {n} examples")
    train_idx, test_idx = train_test_split(
        np.arange(n), test_size=test_fraction, random_state=seed, stratify=y if stratify else None
    )
    # Sorted positions: each part keeps the dataset's original order.
    return np.sort(train_idx), np.sort(test_idx)


# --------------------------------------------------------------------------- embedded datasets


def load_digits(*, size: int = 8, flatten: bool = False, test_fraction: float = 0.25, seed: int = 0,
                normalize: bool = True) -> tuple[ArrayDataset, ArrayDataset]:
    """scikit-learn's bundled handwritten digits: 1797 grey 8×8 images, 10 classes, no download.

    The offline stand-in for MNIST. Pixel values 0..16 are scaled to [0, 1] (``normalize``);
    ``size=28`` upsamples bilinearly (``align_corners=False``) to 28×28 so the papers'
    MNIST-sized networks (e.g. :class:`dro_lab.models.SmallCNN`) run unchanged. The split is
    stratified by class and seeded.

    Args:
        size: Image side, 8 (original) or 28 (bilinear upsampling).
        flatten: Return vectors of ``size * size`` features instead of ``(1, size, size)`` images.
        test_fraction: Share of the test split, in (0, 1).
        seed: Seed of the stratified split.
        normalize: Scale pixels to [0, 1] (divide by 16); otherwise keep 0..16 as floats.

    Returns:
        ``(train, test)`` :class:`ArrayDataset` yielding ``(x, y, index)``, ``num_classes=10``.

    Raises:
        ValueError: ``size`` not in {8, 28} or ``test_fraction`` outside (0, 1).
    """
    import sklearn.datasets

    if size not in _DIGITS_SIZES:
        raise ValueError(f"size must be one of {set(_DIGITS_SIZES)}, got {size!r}")
    _check_fraction(test_fraction, "test_fraction")
    seed = _check_seed(seed)
    bunch = sklearn.datasets.load_digits()
    x = torch.as_tensor(bunch.images, dtype=torch.float32).unsqueeze(1)  # (n, 1, 8, 8)
    if normalize:
        x = x / 16.0
    if size != 8:
        x = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    if flatten:
        x = x.reshape(x.shape[0], -1)
    full = ArrayDataset(x, torch.as_tensor(bunch.target, dtype=torch.int64), num_classes=10)
    return split_dataset(full, test_fraction=test_fraction, seed=seed, stratify=True)


_TABULAR_LOADERS = {
    "breast_cancer": "load_breast_cancer",
    "wine": "load_wine",
    "iris": "load_iris",
    "digits": "load_digits",
}


def load_tabular(name: str, *, test_fraction: float = 0.25, seed: int = 0,
                 standardize: bool = True) -> tuple[ArrayDataset, ArrayDataset]:
    """One of scikit-learn's bundled tabular classification sets, split and standardised.

    ``"breast_cancer"`` (569 × 30, 2 classes), ``"wine"`` (178 × 13, 3 classes), ``"iris"``
    (150 × 4, 3 classes) and ``"digits"`` (1797 × 64 pixels as features, 10 classes).
    Standardisation uses the mean and standard deviation of the *training* split only
    (constant features are centred, not scaled), so no test information leaks into training.

    Args:
        name: One of :data:`TABULAR_DATASETS`.
        test_fraction: Share of the stratified test split, in (0, 1).
        seed: Seed of the split.
        standardize: Centre and scale each feature with the training statistics.

    Returns:
        ``(train, test)`` :class:`ArrayDataset` of float32 feature vectors.

    Raises:
        ValueError: An unknown ``name`` (the message lists the valid names) or a bad
            ``test_fraction``.
    """
    import sklearn.datasets

    if not isinstance(name, str):
        raise TypeError(f"name must be a str, one of {', '.join(TABULAR_DATASETS)}; got {type(name).__name__}")
    if name not in _TABULAR_LOADERS:
        raise ValueError(f"unknown tabular dataset name={name!r}; valid names: {', '.join(TABULAR_DATASETS)}")
    _check_fraction(test_fraction, "test_fraction")
    seed = _check_seed(seed)
    bunch = getattr(sklearn.datasets, _TABULAR_LOADERS[name])()
    x = torch.as_tensor(np.asarray(bunch.data, dtype=np.float64))
    y = torch.as_tensor(bunch.target, dtype=torch.int64)
    k = int(y.max()) + 1
    # Split first, then standardise (in float64) with the training statistics only.
    tr, te = (torch.as_tensor(p) for p in _split_positions(y.numpy(), test_fraction, seed, stratify=True))
    x_tr, x_te = x[tr], x[te]
    if standardize:
        mean = x_tr.mean(0)
        std = x_tr.std(0, unbiased=False)
        std = torch.where(std > 0, std, torch.ones_like(std))
        x_tr, x_te = (x_tr - mean) / std, (x_te - mean) / std
    return ArrayDataset(x_tr, y[tr], num_classes=k), ArrayDataset(x_te, y[te], num_classes=k)


def _minority_blobs_part(n: int, minority_fraction: float, gen: torch.Generator, core_shift: float,
                         spurious_shift: float, noise: float) -> ArrayDataset:
    n_min = max(1, int(math.floor(n * minority_fraction + 0.5)))
    n_maj = n - n_min
    if n_maj < 1:
        raise ValueError(f"minority_fraction={minority_fraction} leaves no majority example for n={n}")
    groups = torch.cat([torch.zeros(n_maj, dtype=torch.int64), torch.ones(n_min, dtype=torch.int64)])
    # Exactly balanced labels inside each group (odd sizes: one extra 0), in a random order.
    y = torch.cat([torch.arange(n_maj) % 2, torch.arange(n_min) % 2])
    perm = torch.cat([torch.randperm(n_maj, generator=gen), n_maj + torch.randperm(n_min, generator=gen)])
    y = y[perm]
    sign = 2.0 * y.to(torch.float64) - 1.0
    agree = 1.0 - 2.0 * groups.to(torch.float64)  # +1 majority, -1 minority
    eps = torch.randn(n, 2, generator=gen, dtype=torch.float64)
    x = torch.stack([core_shift * sign, spurious_shift * sign * agree], dim=1) + noise * eps
    # Shuffle the rows so groups are interleaved (a sequential sampler would otherwise see all
    # of the minority at the end of an epoch).
    order = torch.randperm(n, generator=gen)
    return ArrayDataset(x[order], y[order], groups[order], num_classes=2, num_groups=2)


def make_minority_blobs(n: int = 1000, *, minority_fraction: float = 0.1, seed: int = 0, noise: float = 1.0,
                        test_size: int | None = None, test_minority_fraction: float = 0.5,
                        core_shift: float = 1.0, spurious_shift: float = 2.0) -> tuple[ArrayDataset, ArrayDataset]:
    r"""A 2-D binary task with a minority group on which ERM fails: a spurious correlation.

    Construction (labels :math:`y\in\{0,1\}`, :math:`s = 2y-1`, noise
    :math:`\varepsilon\sim\mathcal N(0, \sigma^2 I_2)` with :math:`\sigma` = ``noise``):

    * **core feature** :math:`x_1 = \mu_c\, s + \varepsilon_1` (``core_shift`` :math:`\mu_c=1`) —
      predicts the label equally well in both groups: accuracy :math:`\Phi(\mu_c/\sigma)\approx 0.84`;
    * **spurious feature** :math:`x_2 = \mu_s\, s\, a_g + \varepsilon_2` (``spurious_shift``
      :math:`\mu_s=2`), with :math:`a_g=+1` in the **majority** (group 0) and :math:`a_g=-1` in
      the **minority** (group 1). On the majority :math:`x_2` alone is right with probability
      :math:`\Phi(2)\approx 0.98`; on the minority it is right only :math:`\approx 0.02` of the time.

    So the data form four Gaussian blobs: the majority on the diagonal, the minority on the
    anti-diagonal. The boundary that is best for the majority leans on :math:`x_2`; the one that
    is fair to both groups is the vertical line :math:`x_1 = 0`. ERM on a training set with a
    10 % minority leans on the spurious feature. Measured over seeds 0–4 with ``n=1000``:
    scikit-learn's logistic regression reaches 0.92 average training accuracy, 0.96 on the
    majority and only 0.53 on the minority (test accuracies); an ``MLP(2, 2)`` trained by
    full-batch Adam reaches 0.95 / 0.96 / 0.51. Up-weighting the minority group moves the boundary
    towards :math:`x_1 = 0`: with group-balanced weights, logistic regression gets 0.85 on the
    majority and 0.83 on the minority. Up-weighting the hard, high-loss *examples* does not (the
    classes overlap, so the hardest points are noise in both groups): lesson 01 measures this. Labels are exactly balanced inside each group.

    The test set follows the same construction with ``test_minority_fraction`` (default 0.5), so
    the minority accuracy is measured on many points; report per-group and worst-group
    accuracy (the test-set average then weighs the groups equally, not 90/10).

    Args:
        n: Number of training examples (at least 2).
        minority_fraction: Share of the minority group in training, in (0, 0.5]; at least one
            minority example is kept.
        seed: Seed of a ``torch.Generator``; the test set is drawn after the training set from
            the same stream.
        noise: Standard deviation :math:`\sigma` of the isotropic Gaussian noise, > 0.
        test_size: Number of test examples; defaults to ``n``.
        test_minority_fraction: Share of the minority in the test set, in (0, 0.5].
        core_shift: :math:`\mu_c`, the class separation along the core feature, > 0.
        spurious_shift: :math:`\mu_s`, the class separation along the spurious feature, >= 0.

    Returns:
        ``(train, test)`` :class:`ArrayDataset` yielding ``(x, y, index, group)`` with float32
        ``x`` of shape ``(n, 2)``, ``num_classes=2`` and ``num_groups=2`` (0 majority, 1 minority).
    """
    for name, value in (("n", n), ("test_size", test_size)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 2:
            raise ValueError(f"{name} must be at least 2, got {value}")
    for name, value in (("minority_fraction", minority_fraction), ("test_minority_fraction", test_minority_fraction)):
        v = _check_fraction(value, name, high_closed=True)
        if v > 0.5:
            raise ValueError(f"{name} must be in (0, 0.5], got {v}")
    for name, value, strict in (("noise", noise, True), ("core_shift", core_shift, True),
                                ("spurious_shift", spurious_shift, False)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise TypeError(f"{name} must be a number, got {type(value).__name__}")
        if not math.isfinite(value) or value < 0 or (strict and value == 0):
            raise ValueError(f"{name} must be {'> 0' if strict else '>= 0'} and finite, got {value}")
    seed = _check_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    args = (float(core_shift), float(spurious_shift), float(noise))
    train = _minority_blobs_part(int(n), float(minority_fraction), gen, *args)
    test = _minority_blobs_part(int(n if test_size is None else test_size), float(test_minority_fraction), gen, *args)
    return train, test


# --------------------------------------------------------------------------- imbalance and groups


def make_imbalanced(dataset: ArrayDataset, *, classes: int | Iterable[int], keep_fraction: float,
                    generator: torch.Generator | int | None = None) -> ArrayDataset:
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
    dataset = _require_array_dataset(dataset)
    keep_fraction = _check_fraction(keep_fraction, "keep_fraction", high_closed=True)
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


def assign_groups(dataset: ArrayDataset, groups: Any | Callable[[Tensor, Tensor], Any], *,
                  num_groups: int | None = None) -> ArrayDataset:
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
    dataset = _require_array_dataset(dataset)
    ids = groups(dataset.x, dataset.y) if callable(groups) else groups
    ids = _to_label_tensor(ids, "groups")
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
    labels = _to_label_tensor(y, "y")
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
    y = _labels_of(base).cpu()
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


# --------------------------------------------------------------------------- torchvision datasets


def _unavailable_message(name: str, root: str, download: bool, cause: BaseException | None, alternative: str,
                         loader: str) -> str:
    why = "could not be downloaded" if download else "is not on disk and download=False"
    detail = f" ({type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''})" if cause else ""
    return (
        f"{name} {why} under root={root!r}{detail}.\n"
        f"Offline, use the embedded alternative {alternative}: it ships with scikit-learn and needs no network.\n"
        f"When the machine is online, download {name} once with "
        f"dro_lab.data.{loader}(root={root!r}, download=True)."
    )


def _torchvision_datasets():
    try:
        import torchvision.datasets as tv_datasets
    except ImportError as exc:  # pragma: no cover - torchvision is a declared extra
        raise ImportError(
            "torchvision is needed for MNIST/CIFAR-10: pip install 'dro-lab[vision]'. "
            "Offline, use dro_lab.data.load_digits(size=28)."
        ) from exc
    return tv_datasets


def _load_torchvision(cls_name: str, name: str, root: str, train: bool, download: bool, alternative: str,
                      loader: str):
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root must be a folder path (str or os.PathLike), got {type(root).__name__}")
    for arg, value in (("train", train), ("download", download)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{arg} must be True or False, got {value!r}")
    tv = _torchvision_datasets()
    cls = getattr(tv, cls_name)
    try:
        return cls(root=str(root), train=train, download=download)
    except (RuntimeError, OSError) as exc:
        # torchvision raises RuntimeError("Dataset not found ...") for missing files and
        # RuntimeError / URLError (an OSError) when a download fails offline.
        raise DatasetUnavailableError(
            _unavailable_message(name, str(root), download, exc, alternative, loader)
        ) from exc


def load_mnist(root: str = "data", *, train: bool = True, download: bool = False) -> ArrayDataset:
    """MNIST through torchvision, as an in-memory :class:`ArrayDataset` of ``(1, 28, 28)`` images in [0, 1].

    Nothing is downloaded unless ``download=True``. The whole split is held in memory
    (60 000 × 784 float32 ≈ 190 MB for training), so :meth:`ArrayDataset.batch`,
    :func:`make_imbalanced` and friends work as on the embedded sets.

    Args:
        root: Folder holding ``MNIST/raw/`` (torchvision's layout).
        train: Training split (60 000) or test split (10 000).
        download: Download the files if absent (needs a network).

    Returns:
        An :class:`ArrayDataset` yielding ``(x, y, index)``, ``num_classes=10``.

    Raises:
        DatasetUnavailableError: The files are absent and ``download=False``, or the download
            failed (e.g. offline). The message names the embedded alternative
            ``dro_lab.data.load_digits(size=28)``.
    """
    ds = _load_torchvision("MNIST", "MNIST", root, train, download,
                           "dro_lab.data.load_digits(size=28) (8x8 digits upsampled to 28x28)", "load_mnist")
    x = ds.data.to(torch.float32).div_(255.0).unsqueeze(1)
    return ArrayDataset(x, torch.as_tensor(ds.targets, dtype=torch.int64), num_classes=10)


def load_cifar10(root: str = "data", *, train: bool = True, download: bool = False) -> ArrayDataset:
    """CIFAR-10 through torchvision, as an in-memory :class:`ArrayDataset` of ``(3, 32, 32)`` images in [0, 1].

    Nothing is downloaded unless ``download=True``. The whole split is held in memory
    (50 000 × 3072 float32 ≈ 600 MB for training); for data augmentation use torchvision's
    dataset with transforms wrapped in :class:`IndexedDataset` instead.

    Args:
        root: Folder holding ``cifar-10-batches-py/`` (torchvision's layout).
        train: Training split (50 000) or test split (10 000).
        download: Download the archive if absent (needs a network, about 170 MB).

    Returns:
        An :class:`ArrayDataset` yielding ``(x, y, index)``, ``num_classes=10``.

    Raises:
        DatasetUnavailableError: The files are absent and ``download=False``, or the download
            failed (e.g. offline). No colour-image set ships with dro_lab; the message names the
            embedded grey-scale alternative ``dro_lab.data.load_digits(size=28)``.
    """
    ds = _load_torchvision("CIFAR10", "CIFAR-10", root, train, download,
                           "dro_lab.data.load_digits(size=28) (grey-scale digits; no colour set is embedded)",
                           "load_cifar10")
    x = torch.as_tensor(np.asarray(ds.data)).permute(0, 3, 1, 2).to(torch.float32).div_(255.0).contiguous()
    return ArrayDataset(x, torch.as_tensor(ds.targets, dtype=torch.int64), num_classes=10)


# --------------------------------------------------------------------------- lesson 06: label-smoothing DRO (GI-LS)
# The small-data "anomaly classification" analogues of Wang et al. (2024), spec §4.4: A. digits with the
# magnetic-tile (MT) per-class counts of the paper's Table 1; B. procedural 32×32 textures with injected
# defects and the MT / MVTec (wood, carpet) class names and counts of Tables 1–2.

__all__ += ["load_digits_defects", "make_defect_textures", "MT_COUNTS", "DEFECT_TEXTURE_CLASSES"]

#: Per-class (train, test) counts of the paper's Table 1: ``MT_COUNTS["MT"]`` (6 classes, with Free) and
#: ``MT_COUNTS["MT-Defect"]`` (5 defect classes, no Free), in the table's column order.
MT_COUNTS: dict[str, dict[str, tuple[int, int]]] = {
    "MT": {"Free": (460, 492), "Uneven": (41, 62), "Blowhole": (57, 58), "Break": (52, 33), "Crack": (27, 27),
           "Fray": (13, 16)},
    "MT-Defect": {"Uneven": (54, 49), "Blowhole": (67, 48), "Break": (46, 39), "Crack": (28, 26), "Fray": (13, 16)},
}

_MT_DEFECT_DIGITS = {"Uneven": 4, "Blowhole": 5, "Break": 6, "Crack": 7, "Fray": 8}
_MT_FREE_DIGITS = (0, 1, 2, 3, 9)
_MT_FREE_SCALED = (435, 465)   # the 900 merged digits {0,1,2,3,9}, split 460:492 as in Table 1


def load_digits_defects(*, free: bool = True, seed: int = 0,
                        test: bool = True) -> tuple[ArrayDataset, ArrayDataset]:
    """``digits-MT``: scikit-learn's 8×8 digits re-labelled to mimic the magnetic-tile (MT) data set.

    The defect classes are digits 4–8 (Uneven = 4, Blowhole = 5, Break = 6, Crack = 7, Fray = 8) with the
    *exact* per-class train / test counts of the paper's Table 1 (:data:`MT_COUNTS`). With ``free=True``
    (MT, k = 6) class 0 is "Free" = the merged digits {0, 1, 2, 3, 9}; digits has only 900 of them, not
    the table's 460 + 492, so Free is scaled to 435 train / 465 test, keeping the 460 : 492 ratio (spec
    §4.4). With ``free=False`` (MT-Defect, k = 5) the labels are 0..4 = Uneven … Fray with MT-Defect's counts.
    No defect count needs capping: the largest per-class total is 115 (Blowhole) and every digit has at
    least 174 images.

    The images of each class are drawn without replacement by a seeded permutation (train first, then
    test), so the two splits are disjoint and the result is deterministic for a given ``seed``.

    Args:
        free: MT (with the Free class) or MT-Defect (defect classes only).
        seed: Seed of the per-class draws.
        test: ``True``: the test split has Table 1's "Testing (unseen)" counts. ``False``: the test split
            holds every image of the used digits not in the training split (a larger held-out set for
            lower-variance estimates; the training split is the same).

    Returns:
        ``(train, test)`` :class:`ArrayDataset` of ``(1, 8, 8)`` images in [0, 1] yielding
        ``(x, y, index)``, each with ``class_names`` (a tuple, indexed by the label).
    """
    import sklearn.datasets

    seed = _check_seed(seed)
    if not isinstance(free, bool) or not isinstance(test, bool):
        raise TypeError("free and test must be bools")
    table = MT_COUNTS["MT" if free else "MT-Defect"]
    names = tuple(table)
    bunch = sklearn.datasets.load_digits()
    images = torch.as_tensor(bunch.images, dtype=torch.float32).unsqueeze(1) / 16.0
    digits = torch.as_tensor(bunch.target, dtype=torch.int64)
    gen = torch.Generator().manual_seed(seed)
    parts: dict[str, list[Tensor]] = {"train": [], "test": []}
    labels: dict[str, list[Tensor]] = {"train": [], "test": []}
    for label, name in enumerate(names):
        pool = digits == _MT_DEFECT_DIGITS[name] if name != "Free" else torch.isin(
            digits, torch.tensor(_MT_FREE_DIGITS))
        pos = torch.nonzero(pool).reshape(-1)
        pos = pos[torch.randperm(pos.numel(), generator=gen)]
        n_train, n_test = _MT_FREE_SCALED if name == "Free" else table[name]
        if n_train + n_test > pos.numel():   # cannot happen with sklearn's digits (see the docstring)
            raise RuntimeError(f"digits has only {pos.numel()} images for {name}, need {n_train + n_test}")
        chosen = {"train": pos[:n_train], "test": pos[n_train:n_train + n_test] if test else pos[n_train:]}
        for split, idx in chosen.items():
            parts[split].append(idx)
            labels[split].append(torch.full((idx.numel(),), label, dtype=torch.int64))
    out = []
    for split in ("train", "test"):
        idx = torch.cat(parts[split])
        ds = ArrayDataset(images[idx], torch.cat(labels[split]), num_classes=len(names))
        ds.class_names = names
        out.append(ds)
    return out[0], out[1]


#: Class names of :func:`make_defect_textures` per kind, "Free" first (label 0), with the default counts =
#: the training counts of the paper's Table 1 (tile = MT) and Table 2 (wood, carpet; "Mental-contamination"
#: is the paper's typo for MVTec's metal_contamination).
DEFECT_TEXTURE_CLASSES: dict[str, dict[str, int]] = {
    "tile": {"Free": 460, "Uneven": 41, "Blowhole": 57, "Break": 52, "Crack": 27, "Fray": 13},
    "wood": {"Free": 110, "Color": 4, "Combined": 4, "Hole": 3, "Liquid": 4, "Scratch": 12},
    "carpet": {"Free": 167, "Color": 12, "Hole": 12, "Thread": 14, "Cut": 10, "Metal_contamination": 13},
}


def _u(gen: torch.Generator, n: int, lo: float, hi: float) -> Tensor:
    """n uniform draws in [lo, hi) shaped (n, 1, 1) for broadcasting over an image."""
    return lo + (hi - lo) * torch.rand(n, 1, 1, generator=gen)


def _texture_base(kind: str, n: int, yy: Tensor, xx: Tensor, gen: torch.Generator) -> Tensor:
    """Defect-free textures (n, H, W): tile = stripes + illumination gradient, wood = wavy grain, carpet = weave."""
    two_pi = 2 * math.pi
    if kind == "tile":
        theta, f, phase = _u(gen, n, -0.3, 0.3), _u(gen, n, 3.0, 6.0), _u(gen, n, 0.0, two_pi)
        gx, gy = _u(gen, n, -0.15, 0.15), _u(gen, n, -0.15, 0.15)
        img = (0.5 + 0.07 * torch.sin(two_pi * f * (xx * torch.cos(theta) + yy * torch.sin(theta)) + phase)
               + gx * (xx - 0.5) + gy * (yy - 0.5))
    elif kind == "wood":
        f, phase, w, a = _u(gen, n, 5.0, 9.0), _u(gen, n, 0.0, two_pi), _u(gen, n, 0.5, 2.0), _u(gen, n, 0.03, 0.1)
        img = 0.55 + 0.1 * torch.sin(two_pi * f * (yy + a * torch.sin(two_pi * w * xx + phase)) + phase)
    else:
        f, px, py = _u(gen, n, 6.0, 10.0), _u(gen, n, 0.0, two_pi), _u(gen, n, 0.0, two_pi)
        img = 0.5 + 0.08 * torch.sin(two_pi * f * xx + px) * torch.sin(two_pi * f * yy + py)
    return img + 0.02 * torch.randn(img.shape, generator=gen)


def _ellipse(gen: torch.Generator, n: int, yy: Tensor, xx: Tensor, rmin: float, rmax: float,
             margin: float = 0.2) -> Tensor:
    """A random rotated ellipse per image: bool (n, H, W)."""
    cy, cx = _u(gen, n, margin, 1 - margin), _u(gen, n, margin, 1 - margin)
    a, b, th = _u(gen, n, rmin, rmax), _u(gen, n, rmin, rmax), _u(gen, n, 0.0, math.pi)
    u = (xx - cx) * torch.cos(th) + (yy - cy) * torch.sin(th)
    v = -(xx - cx) * torch.sin(th) + (yy - cy) * torch.cos(th)
    return (u / a) ** 2 + (v / b) ** 2 <= 1.0


def _segment(gen: torch.Generator, n: int, yy: Tensor, xx: Tensor, length: tuple[float, float],
             width: float) -> Tensor:
    """A random straight segment per image, ``width`` (image units) thick: bool (n, H, W)."""
    cy, cx = _u(gen, n, 0.25, 0.75), _u(gen, n, 0.25, 0.75)
    half, th = _u(gen, n, *length) / 2, _u(gen, n, 0.0, math.pi)
    u = (xx - cx) * torch.cos(th) + (yy - cy) * torch.sin(th)
    v = -(xx - cx) * torch.sin(th) + (yy - cy) * torch.cos(th)
    return (v.abs() <= width / 2) & (u.abs() <= half)


def _random_walk(gen: torch.Generator, n: int, size: int, steps: int) -> Tensor:
    """A persistent random walk per image rasterised to pixels (a crack or a loose thread): bool (n, H, W)."""
    start = 0.25 + 0.5 * torch.rand(n, 1, 2, generator=gen)
    heading = 2 * math.pi * torch.rand(n, 1, generator=gen) + torch.cumsum(
        0.5 * torch.randn(n, steps, generator=gen), 1)
    step = 0.6 / size   # sub-pixel steps: the line is connected
    path = start + torch.cumsum(step * torch.stack([torch.cos(heading), torch.sin(heading)], -1), 1)
    pix = (path * size).floor().long().clamp_(0, size - 1)
    flat = torch.zeros(n, size * size, dtype=torch.bool)
    flat.scatter_(1, pix[..., 0] * size + pix[..., 1], True)
    return flat.reshape(n, size, size)


def _edge_coords(gen: torch.Generator, n: int, yy: Tensor, xx: Tensor) -> tuple[Tensor, Tensor]:
    """Distance to a random image edge and the position along it, each (n, H, W)."""
    side = torch.randint(0, 4, (n, 1, 1), generator=gen)
    yy, xx = yy.expand(n, -1, -1), xx.expand(n, -1, -1)
    dist = torch.where(side == 0, xx, torch.where(side == 1, 1 - xx, torch.where(side == 2, yy, 1 - yy)))
    along = torch.where(side < 2, yy, xx)
    return dist, along


def _edge_wedge(gen: torch.Generator, n: int, yy: Tensor, xx: Tensor) -> Tensor:
    """A triangular piece broken off a random edge: bool (n, H, W)."""
    dist, along = _edge_coords(gen, n, yy, xx)
    t0, half, depth = _u(gen, n, 0.25, 0.75), _u(gen, n, 0.12, 0.25), _u(gen, n, 0.15, 0.3)
    return dist < depth * (1 - (along - t0).abs() / half).clamp(min=0)


def _jagged_border(gen: torch.Generator, n: int, size: int, yy: Tensor, xx: Tensor) -> Tensor:
    """A frayed strip with a jagged inner border along a random edge: bool (n, H, W)."""
    dist, along = _edge_coords(gen, n, yy, xx)
    jag = 0.04 + 0.14 * torch.rand(n, size, generator=gen)   # one random depth per position along the edge
    pos = (along * size).floor().long().clamp(0, size - 1)
    return dist < torch.gather(jag, 1, pos.reshape(n, -1)).reshape(dist.shape)


def _blob(gen: torch.Generator, n: int, yy: Tensor, xx: Tensor, smin: float, smax: float) -> Tensor:
    """A Gaussian bump with a random centre and width, peak 1: float (n, H, W)."""
    cy, cx, s = _u(gen, n, 0.25, 0.75), _u(gen, n, 0.25, 0.75), _u(gen, n, smin, smax)
    return torch.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * s ** 2))


def _inject(name: str, img: Tensor, gen: torch.Generator, size: int, yy: Tensor, xx: Tensor) -> tuple[Tensor, Tensor]:
    """Images of defect class ``name`` from clean ``img`` (n, H, W): (images, defect masks)."""
    n = img.shape[0]

    def paint(mask: Tensor, value) -> Tensor:
        return torch.where(mask, value, img)

    if name == "Free":
        return img, torch.zeros_like(img, dtype=torch.bool)
    if name == "Uneven":   # a low-frequency dark or bright blotch
        bump = _blob(gen, n, yy, xx, 0.12, 0.22)
        sign = torch.where(torch.rand(n, 1, 1, generator=gen) < 0.5, -1.0, 1.0)
        return img + sign * 0.4 * bump, bump > 0.5
    if name == "Blowhole":   # one or two dark ellipses
        mask = _ellipse(gen, n, yy, xx, 0.05, 0.12)
        mask |= _ellipse(gen, n, yy, xx, 0.04, 0.08) & (torch.rand(n, 1, 1, generator=gen) < 0.5)
        return paint(mask, 0.08 + 0.05 * torch.rand(img.shape, generator=gen)), mask
    if name in ("Crack", "Thread"):   # a dark crack / a bright loose thread: a random walk
        mask = _random_walk(gen, n, size, steps=int(1.2 * size))
        return paint(mask, 0.05 if name == "Crack" else 0.95), mask
    if name == "Break":   # a piece broken off an edge (black background shows)
        mask = _edge_wedge(gen, n, yy, xx)
        return paint(mask, torch.tensor(0.0)), mask
    if name == "Fray":   # a jagged, noisy strip along an edge
        mask = _jagged_border(gen, n, size, yy, xx)
        return paint(mask, 0.1 * torch.rand(img.shape, generator=gen)), mask
    if name == "Color":   # a brighter or darker stained patch
        mask = _ellipse(gen, n, yy, xx, 0.08, 0.16)
        shift = torch.where(torch.rand(n, 1, 1, generator=gen) < 0.5, -0.35, 0.35)
        return torch.where(mask, img + shift, img), mask
    if name == "Hole":   # a small dark disc
        mask = _ellipse(gen, n, yy, xx, 0.05, 0.08)
        return paint(mask, torch.tensor(0.03)), mask
    if name == "Liquid":   # a soft dark stain
        bump = _blob(gen, n, yy, xx, 0.08, 0.14)
        return img - 0.45 * bump, bump > 0.5
    if name in ("Scratch", "Cut"):   # a thin bright scratch / a thicker dark cut
        mask = (_segment(gen, n, yy, xx, (0.4, 0.8), 1.5 / size) if name == "Scratch"
                else _segment(gen, n, yy, xx, (0.25, 0.5), 2.5 / size))
        return paint(mask, torch.tensor(0.95 if name == "Scratch" else 0.05)), mask
    if name == "Metal_contamination":   # a small, very bright speck
        mask = _ellipse(gen, n, yy, xx, 0.04, 0.07)
        return paint(mask, torch.tensor(1.0)), mask
    if name == "Combined":   # a hole and a scratch together
        x1, m1 = _inject("Hole", img, gen, size, yy, xx)
        x2, m2 = _inject("Scratch", x1, gen, size, yy, xx)
        return x2, m1 | m2
    raise AssertionError(name)


def make_defect_textures(kind: str = "tile", *, counts: Mapping[str, int] | None = None, size: int = 32,
                         seed: int = 0) -> ArrayDataset:
    """``synth-tile`` / ``synth-wood`` / ``synth-carpet``: procedural grey textures with injected defects.

    The classes of each kind are :data:`DEFECT_TEXTURE_CLASSES` (label 0 = "Free", then the table's defect
    columns): tile (magnetic tile, Table 1) = stripes + an illumination gradient with Uneven (a
    low-frequency blotch), Blowhole (dark ellipses), Break (a wedge broken off an edge), Crack (a dark
    random-walk line) and Fray (a jagged border strip); wood (Table 2) = wavy grain with Color (a stained
    patch), Combined (hole + scratch), Hole (a dark disc), Liquid (a soft dark stain) and Scratch (a thin
    bright line); carpet (Table 2) = a weave with Color, Hole, Thread (a bright random walk), Cut (a short
    thick dark line) and Metal_contamination (a bright speck). Procedural and simple: an analogue of the
    paper's sets, not a model of them.

    Args:
        kind: ``"tile"``, ``"wood"`` or ``"carpet"``.
        counts: Images per class name (a subset of the kind's classes; those left out get 0). Default: the
            training counts of the paper's Table 1 (tile = MT: 650 images) / Table 2 (wood 137, carpet 228).
        size: Image side in pixels (≥ 8).
        seed: Seed of a private ``torch.Generator`` (the global RNG is neither used nor advanced).

    Returns:
        An :class:`ArrayDataset` of ``(1, size, size)`` images in [0, 1], labels grouped by class in the
        order of the class names, ``num_classes`` = the kind's number of classes, with ``class_names``
        (a tuple indexed by the label) and ``masks`` (bool ``(n, 1, size, size)``: the defect pixels, empty
        for Free; the "defect location" row of the paper's Figs. 1–2).

    Raises:
        ValueError: Unknown ``kind`` or class name, negative counts, no image at all, ``size`` < 8.
    """
    if kind not in DEFECT_TEXTURE_CLASSES:
        raise ValueError(f"kind must be one of {sorted(DEFECT_TEXTURE_CLASSES)}, got {kind!r}")
    names = tuple(DEFECT_TEXTURE_CLASSES[kind])
    if counts is None:
        counts = DEFECT_TEXTURE_CLASSES[kind]
    unknown = set(counts) - set(names)
    if unknown:
        raise ValueError(f"counts has unknown class names for kind={kind!r}: {sorted(unknown)}; "
                         f"the classes are {names}")
    for name, c in counts.items():
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 0:
            raise ValueError(f"counts[{name!r}] must be a non-negative int, got {c!r}")
    if sum(int(c) for c in counts.values()) == 0:
        raise ValueError("counts must ask for at least one image")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 8:
        raise ValueError(f"size must be an int ≥ 8, got {size!r}")
    size = int(size)
    gen = torch.Generator().manual_seed(_check_seed(seed))
    grid = (torch.arange(size, dtype=torch.float32) + 0.5) / size
    yy, xx = grid.reshape(1, size, 1), grid.reshape(1, 1, size)
    xs, masks, ys = [], [], []
    for label, name in enumerate(names):
        n = int(counts.get(name, 0))
        if n == 0:
            continue
        img, mask = _inject(name, _texture_base(kind, n, yy, xx, gen), gen, size, yy, xx)
        xs.append(img.clamp(0.0, 1.0))
        masks.append(mask)
        ys.append(torch.full((n,), label, dtype=torch.int64))
    ds = ArrayDataset(torch.cat(xs).unsqueeze(1), torch.cat(ys), num_classes=len(names))
    ds.class_names = names
    ds.masks = torch.cat(masks).unsqueeze(1)
    return ds
