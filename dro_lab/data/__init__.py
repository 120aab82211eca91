"""Datasets that yield sample indices, imbalance and group construction, and offline defaults.

Every dataset in dro_lab yields ``(x, y, index)`` or, where groups are defined, ``(x, y, index, group)``:
``index`` is the example's position in *that* dataset, so a sampler or a robust objective can keep
per-example state (stored losses, weights) and update it from a mini-batch.

Example::

    from dro_lab.data import load_digits, make_imbalanced
    train, test = load_digits(size=8, seed=0)
    train = make_imbalanced(train, classes=[3], keep_fraction=0.05, generator=0)
    x, y, index = train.batch(torch.tensor([0, 5, 7]))   # whole batch, no per-item Python

Modules:

* :mod:`~dro_lab.data.datasets` — :class:`ArrayDataset`, :class:`IndexedDataset`, splits, :func:`fetch_batch`;
* :mod:`~dro_lab.data.embedded` — the offline defaults: scikit-learn's digits and tabular sets, 2-D blobs;
* :mod:`~dro_lab.data.online` — MNIST and CIFAR-10 through torchvision (offline: :class:`DatasetUnavailableError`);
* :mod:`~dro_lab.data.fashion` — Fashion-MNIST offline from Debian's ``dataset-fashion-mnist`` package;
* :mod:`~dro_lab.data.groups` — imbalance (:func:`make_imbalanced`), groups and counts;
* :mod:`~dro_lab.data.defects` — offline analogues of the GI-LS paper's defect sets;
* :mod:`~dro_lab.data.transforms` — batch transformations (Mixup, CutMix, Cutout).
"""

from __future__ import annotations

from .datasets import (
    ArrayDataset,
    IndexedDataset,
    fetch_batch,
    labels_of,
    require_array_dataset,
    split_dataset,
    split_positions,
)
from .defects import DEFECT_TEXTURE_CLASSES, MT_COUNTS, load_digits_defects, make_defect_textures
from .embedded import TABULAR_DATASETS, load_digits, load_tabular, make_minority_blobs
from .fashion import FASHION_MNIST_CLASSES, load_fashion_mnist
from .groups import assign_groups, class_counts, dirichlet_split, group_counts, groups_from_classes, make_imbalanced
from .online import DatasetUnavailableError, load_cifar10, load_mnist
from .transforms import (
    InputTransform,
    blur_transform,
    cutmix_batch,
    cutout_batch,
    identity_transform,
    mixup_batch,
    noise_transform,
    rotation_transform,
    shift_transform,
)

__all__ = [
    "ArrayDataset",
    "IndexedDataset",
    "fetch_batch",
    "labels_of",
    "require_array_dataset",
    "split_dataset",
    "split_positions",
    "DEFECT_TEXTURE_CLASSES",
    "MT_COUNTS",
    "load_digits_defects",
    "make_defect_textures",
    "TABULAR_DATASETS",
    "load_digits",
    "load_tabular",
    "make_minority_blobs",
    "assign_groups",
    "class_counts",
    "dirichlet_split",
    "group_counts",
    "groups_from_classes",
    "make_imbalanced",
    "DatasetUnavailableError",
    "load_cifar10",
    "load_mnist",
    "FASHION_MNIST_CLASSES",
    "load_fashion_mnist",
    "InputTransform",
    "blur_transform",
    "cutmix_batch",
    "cutout_batch",
    "identity_transform",
    "mixup_batch",
    "noise_transform",
    "rotation_transform",
    "shift_transform",
]
