"""Real image sets through torchvision (MNIST, CIFAR-10) when their files are on disk or the machine is online.

Offline, :class:`DatasetUnavailableError` says which embedded dataset to use instead and how to get the
real one. torchvision is imported inside the loaders.
"""

from __future__ import annotations

import os

import numpy as np
import torch

from .datasets import ArrayDataset

__all__ = ["DatasetUnavailableError", "load_mnist", "load_cifar10"]


class DatasetUnavailableError(RuntimeError):
    """A real dataset (MNIST, Fashion-MNIST, CIFAR-10) is not on disk and could not be downloaded.

    The message says which embedded dataset to use instead and how to download the real one
    when the machine is online.
    """


def _unavailable_message(
    name: str,
    root: str,
    download: bool,
    cause: BaseException | None,
    alternative: str,
    loader: str,
    *,
    install: str | None = None,
    download_root: str | None = None,
    why: str | None = None,
) -> str:
    """What a :class:`DatasetUnavailableError` says: why (``why`` overrides the default reason), an optional
    system package (``install``), the embedded alternative, and the download call (into ``download_root``, by
    default ``root``)."""
    why = why or ("could not be downloaded" if download else "is not on disk and download=False")
    detail = f" ({type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''})" if cause else ""
    return (
        f"{name} {why} under root={root!r}{detail}.\n"
        + (f"{install}\n" if install else "")
        + f"Offline, use the embedded alternative {alternative}: it ships with scikit-learn and needs no network.\n"
        f"When the machine is online, download {name} once with "
        f"dro_lab.data.{loader}(root={download_root or root!r}, download=True)."
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


def _load_torchvision(
    cls_name: str,
    name: str,
    root: str,
    train: bool,
    download: bool,
    alternative: str,
    loader: str,
    *,
    install: str | None = None,
):
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
            _unavailable_message(name, str(root), download, exc, alternative, loader, install=install)
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
    ds = _load_torchvision(
        "MNIST",
        "MNIST",
        root,
        train,
        download,
        "dro_lab.data.load_digits(size=28) (8x8 digits upsampled to 28x28)",
        "load_mnist",
    )
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
    ds = _load_torchvision(
        "CIFAR10",
        "CIFAR-10",
        root,
        train,
        download,
        "dro_lab.data.load_digits(size=28) (grey-scale digits; no colour set is embedded)",
        "load_cifar10",
    )
    x = torch.as_tensor(np.asarray(ds.data)).permute(0, 3, 1, 2).to(torch.float32).div_(255.0).contiguous()
    return ArrayDataset(x, torch.as_tensor(ds.targets, dtype=torch.int64), num_classes=10)
