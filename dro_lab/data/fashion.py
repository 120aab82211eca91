"""Fashion-MNIST offline: the idx files of Debian's ``dataset-fashion-mnist`` package, read with gzip and NumPy.

Fashion-MNIST (Xiao, Rasul & Vollgraf, 2017) has MNIST's format and sizes — 60 000 training and 10 000 test
grey-scale 28×28 images in 10 balanced classes — with clothes instead of digits. Debian ships it as
``dataset-fashion-mnist`` (``apt-get install dataset-fashion-mnist``), which puts the four gzipped idx files in
``/usr/share/datasets/fashion-mnist/``; :func:`load_fashion_mnist` reads them with no network and no torchvision.
torchvision is used only to download the files when asked (``download=True``).
"""

from __future__ import annotations

import functools
import gzip
import os
import zlib
from pathlib import Path

import numpy as np
import torch

from .._validation import check_bool
from .datasets import ArrayDataset
from .online import DatasetUnavailableError, _load_torchvision, _unavailable_message

__all__ = ["FASHION_MNIST_CLASSES", "DEBIAN_FASHION_MNIST", "load_fashion_mnist"]

#: The 10 class names, in label order (label ``k`` is ``FASHION_MNIST_CLASSES[k]``).
FASHION_MNIST_CLASSES: tuple[str, ...] = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)

#: Where Debian's ``dataset-fashion-mnist`` package installs the four ``.gz`` files.
DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")

_DEBIAN_PACKAGE = "dataset-fashion-mnist"
_ALTERNATIVE = ("dro_lab.data.load_digits(size=28) (8x8 digits upsampled to 28x28)", "load_fashion_mnist")
_INSTALL = (
    f"Offline on Debian (and its derivatives), install the files with `apt-get install {_DEBIAN_PACKAGE}` "
    f"(as root): they land in {DEBIAN_FASHION_MNIST}/, which load_fashion_mnist() reads by default."
)
_FILES = {
    True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
_IMAGES_MAGIC, _LABELS_MAGIC = 2051, 2049  # idx: 0x00 0x00, type 0x08 (unsigned byte), number of dimensions
_SIDE = 28


def _find_files(root: Path, train: bool) -> tuple[Path, Path] | None:
    """``(images, labels)`` under ``root`` or torchvision's ``root/FashionMNIST/raw``, gzipped or not; else None."""
    for folder in (root, root / "FashionMNIST" / "raw"):
        found = []
        for name in _FILES[train]:
            path = next((p for p in (folder / f"{name}.gz", folder / name) if p.is_file()), None)
            found.append(path)
        if all(found):
            return found[0], found[1]
    return None


def _read_idx(path: Path, magic: int, ndim: int) -> np.ndarray:
    """The uint8 array of an idx file (LeCun's MNIST format: big-endian magic, ``ndim`` sizes, then the bytes)."""
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as handle:
            data = handle.read()
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError; a cut .gz ends in EOFError
        raise ValueError(f"{path}: not a readable idx file ({type(exc).__name__}: {exc})") from exc
    header = 4 * (1 + ndim)
    if len(data) < header:
        raise ValueError(f"{path}: {len(data)} bytes is shorter than an idx header ({header} bytes); the file is cut")
    found = int.from_bytes(data[:4], "big")
    if found != magic:
        raise ValueError(f"{path}: idx magic number {found}, expected {magic}; this is not the file it is named after")
    shape = tuple(int.from_bytes(data[4 + 4 * k : 8 + 4 * k], "big") for k in range(ndim))
    expected = int(np.prod(shape))
    if len(data) - header != expected:
        raise ValueError(
            f"{path}: the header announces shape {shape} ({expected} bytes) but the file holds "
            f"{len(data) - header} bytes after it; the file is cut or corrupt"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


@functools.lru_cache(maxsize=4)
def _decode(images: str, labels: str, stamp: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Decoded ``(images, labels)`` as read-only uint8 arrays, cached per file pair (``stamp``: sizes and mtimes)."""
    x = _read_idx(Path(images), _IMAGES_MAGIC, 3)
    y = _read_idx(Path(labels), _LABELS_MAGIC, 1)
    if x.shape[1:] != (_SIDE, _SIDE):
        raise ValueError(f"{images}: Fashion-MNIST images are 28×28, got {x.shape[1]}×{x.shape[2]}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"{images} holds {x.shape[0]} images but {labels} holds {y.shape[0]} labels")
    if x.shape[0] == 0:
        raise ValueError(f"{images} holds no images")
    if int(y.max()) >= len(FASHION_MNIST_CLASSES):
        raise ValueError(f"{labels}: labels must be 0..9, found {int(y.max())}")
    return x, y


def _stamp(*paths: Path) -> tuple[int, ...]:
    stats = [p.stat() for p in paths]
    return tuple(v for s in stats for v in (s.st_size, s.st_mtime_ns))


def load_fashion_mnist(
    root: str | os.PathLike | None = None, *, train: bool = True, download: bool = False
) -> ArrayDataset:
    """Fashion-MNIST as an in-memory :class:`ArrayDataset` of ``(1, 28, 28)`` float32 images in [0, 1].

    The idx files are read with :mod:`gzip` and NumPy (checked), their bytes cached in the process; each call
    returns a dataset with its own tensors. Label ``k`` is ``FASHION_MNIST_CLASSES[k]`` (6 000 training and
    1 000 test images each).

    Args:
        root: ``None`` for Debian's folder ``/usr/share/datasets/fashion-mnist`` (package
            ``dataset-fashion-mnist``); otherwise a folder holding ``{train,t10k}-{images-idx3,labels-idx1}-ubyte``
            (gzipped ``.gz`` or unpacked), directly or in torchvision's layout ``root/FashionMNIST/raw/``.
        train: Training split (60 000) or test split (10 000).
        download: When the files are absent, download them into ``root`` through torchvision's
            ``FashionMNIST(root, download=True)`` (needs a network and a ``root``); never by default.

    Returns:
        An :class:`ArrayDataset` yielding ``(x, y, index)``, ``num_classes=10``.

    Raises:
        DatasetUnavailableError: The files are absent and ``download=False`` (or ``root=None``), or the download
            failed. The message names ``apt-get install dataset-fashion-mnist``, the embedded alternative
            ``dro_lab.data.load_digits(size=28)`` and the download call.
        ValueError: A file is cut, corrupt or not an idx file of the expected kind (the message names it).
        TypeError: ``root`` is not a path or ``None``; ``train`` or ``download`` is not a bool.
    """
    if root is not None and not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root must be None or a folder path (str or os.PathLike), got {type(root).__name__}")
    train, download = check_bool(train, "train"), check_bool(download, "download")
    folder = DEBIAN_FASHION_MNIST if root is None else Path(root)
    files = _find_files(folder, train)
    if files is None and download and root is not None:
        _load_torchvision("FashionMNIST", "Fashion-MNIST", str(root), train, True, *_ALTERNATIVE, install=_INSTALL)
        files = _find_files(folder, train)
    if files is None:
        message = _unavailable_message(
            "Fashion-MNIST",
            str(folder),
            download,
            None,
            *_ALTERNATIVE,
            install=_INSTALL,
            download_root=None if root is not None else "data",
            why="is not on disk (download=True needs a root folder to download into)"
            if download and root is None
            else None,
        )
        raise DatasetUnavailableError(message)
    x, y = _decode(str(files[0]), str(files[1]), _stamp(*files))
    images = torch.from_numpy(x.astype(np.float32)).div_(255.0).unsqueeze(1)  # astype copies: a fresh tensor
    return ArrayDataset(images, torch.from_numpy(y.astype(np.int64)), num_classes=len(FASHION_MNIST_CLASSES))
