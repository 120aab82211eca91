"""load_fashion_mnist against an independent idx reader (struct + gzip in the test) and hand-written idx files."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

import dro_lab
import dro_lab.data.fashion as fashion
from dro_lab.data import DatasetUnavailableError, load_fashion_mnist

DEBIAN = Path("/usr/share/datasets/fashion-mnist")
HAVE_DEBIAN = all(
    (DEBIAN / f"{split}-{kind}-ubyte.gz").is_file()
    for split in ("train", "t10k")
    for kind in ("images-idx3", "labels-idx1")
)
needs_debian = pytest.mark.skipif(
    not HAVE_DEBIAN, reason="Debian's dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)"
)


def _idx_bytes(values: list[int], shape: tuple[int, ...], magic: int) -> bytes:
    """An idx file written by hand: a big-endian magic and sizes, then one unsigned byte per value."""
    return struct.pack(f">I{len(shape)}I", magic, *shape) + bytes(values)


def _write(folder: Path, split: str, images: np.ndarray, labels: list[int], *, gz: bool) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    n = len(labels)
    files = {
        f"{split}-images-idx3-ubyte": _idx_bytes([int(v) for v in images.reshape(-1)], (n, 28, 28), 2051),
        f"{split}-labels-idx1-ubyte": _idx_bytes(labels, (n,), 2049),
    }
    for name, data in files.items():
        if gz:
            with gzip.open(folder / f"{name}.gz", "wb") as handle:
                handle.write(data)
        else:
            (folder / name).write_bytes(data)


def _tiny(seed: int, n: int) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 28, 28)), [int(v) for v in rng.integers(0, 10, n)]


def _first_image_by_hand(path: Path) -> tuple[int, list[float]]:
    """The count and first image of a gzipped idx3 file, decoded with struct (no NumPy)."""
    with gzip.open(path, "rb") as handle:
        magic, n, rows, cols = struct.unpack(">IIII", handle.read(16))
        assert magic == 2051 and (rows, cols) == (28, 28)
        first = struct.unpack(f">{rows * cols}B", handle.read(rows * cols))
    return n, [v / 255.0 for v in first]


def _labels_by_hand(path: Path) -> list[int]:
    with gzip.open(path, "rb") as handle:
        magic, n = struct.unpack(">II", handle.read(8))
        assert magic == 2049
        return list(struct.unpack(f">{n}B", handle.read(n)))


@pytest.fixture(scope="module")
def debian_train():
    if not HAVE_DEBIAN:
        pytest.skip("Debian's dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)")
    return load_fashion_mnist()


@pytest.mark.slow
@needs_debian
def test_debian_training_split_shapes_classes_and_range(debian_train):
    ds = debian_train
    assert ds.x.shape == (60000, 1, 28, 28) and ds.x.dtype == torch.float32
    assert ds.y.shape == (60000,) and ds.y.dtype == torch.int64 and ds.num_classes == 10
    assert float(ds.x.min()) == 0.0 and float(ds.x.max()) == 1.0
    assert torch.bincount(ds.y, minlength=10).tolist() == [6000] * 10


@needs_debian
def test_debian_test_split_shapes_classes_and_labels():
    ds = load_fashion_mnist(train=False)
    assert ds.x.shape == (10000, 1, 28, 28) and ds.in_shape == (1, 28, 28)
    assert torch.bincount(ds.y, minlength=10).tolist() == [1000] * 10
    assert ds.y.tolist() == _labels_by_hand(DEBIAN / "t10k-labels-idx1-ubyte.gz")


@pytest.mark.slow
@needs_debian
def test_debian_first_image_matches_a_struct_decode(debian_train):
    n, first = _first_image_by_hand(DEBIAN / "train-images-idx3-ubyte.gz")
    assert n == len(debian_train)
    np.testing.assert_allclose(debian_train.x[0, 0].reshape(-1).numpy(), first, rtol=0, atol=1e-7)
    labels = _labels_by_hand(DEBIAN / "train-labels-idx1-ubyte.gz")
    assert debian_train.y[:100].tolist() == labels[:100] and int(debian_train.y[-1]) == labels[-1]


@pytest.mark.slow
@needs_debian
def test_each_call_returns_its_own_tensors(debian_train):
    again = load_fashion_mnist()
    assert again.x.data_ptr() != debian_train.x.data_ptr() and again.y.data_ptr() != debian_train.y.data_ptr()
    again.x[0].fill_(0.5)
    again.y[0] = 9 - int(again.y[0])
    third = load_fashion_mnist()
    assert torch.equal(third.x[0], debian_train.x[0]) and int(third.y[0]) == int(debian_train.y[0])


def test_class_names_in_label_order():
    assert dro_lab.FASHION_MNIST_CLASSES == (
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


@pytest.mark.parametrize("layout", ["gz", "unpacked", "torchvision"])
def test_hand_written_idx_files_load(tmp_path, layout):
    folder = tmp_path / "FashionMNIST" / "raw" if layout == "torchvision" else tmp_path
    train_images, train_labels = _tiny(0, 5)
    test_images, test_labels = _tiny(1, 3)
    _write(folder, "train", train_images, train_labels, gz=layout != "unpacked")
    _write(folder, "t10k", test_images, test_labels, gz=layout != "unpacked")
    train = load_fashion_mnist(tmp_path)
    test = load_fashion_mnist(str(tmp_path), train=False)
    assert isinstance(train, dro_lab.ArrayDataset) and train.num_classes == 10 and len(test) == 3
    assert train.x.shape == (5, 1, 28, 28) and train.x.dtype == torch.float32 and train.y.dtype == torch.int64
    np.testing.assert_allclose(train.x[:, 0].numpy(), train_images / 255.0, rtol=0, atol=1e-7)
    np.testing.assert_allclose(test.x[:, 0].numpy(), test_images / 255.0, rtol=0, atol=1e-7)
    assert train.y.tolist() == train_labels and test.y.tolist() == test_labels
    x, y, index = train[4]
    assert x.shape == (1, 28, 28) and int(y) == train_labels[4] and index == 4


def test_a_rewritten_file_is_read_again(tmp_path):
    images, labels = _tiny(2, 4)
    _write(tmp_path, "train", images, labels, gz=False)
    assert load_fashion_mnist(tmp_path).y.tolist() == labels
    other = [(v + 1) % 10 for v in labels[:3]]  # another size: the cache notices even within one clock tick
    _write(tmp_path, "train", images[::-1][:3].copy(), other, gz=False)
    again = load_fashion_mnist(tmp_path)
    assert again.y.tolist() == other
    np.testing.assert_allclose(again.x[0, 0].numpy(), images[-1] / 255.0, atol=1e-7)


def _corrupt(tmp_path: Path, name: str, data: bytes) -> Path:
    images, labels = _tiny(3, 2)
    _write(tmp_path, "train", images, labels, gz=False)
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "name, data, match",
    [
        ("train-images-idx3-ubyte", _idx_bytes([0] * 2 * 784, (2, 28, 28), 2049), "magic number 2049, expected 2051"),
        ("train-labels-idx1-ubyte", _idx_bytes([0, 1], (2,), 2051), "magic number 2051, expected 2049"),
        ("train-images-idx3-ubyte", _idx_bytes([0] * 700, (2, 28, 28), 2051), "cut or corrupt"),
        ("train-images-idx3-ubyte", b"\x00\x00\x08", "shorter than an idx header"),
        ("train-labels-idx1-ubyte", _idx_bytes([0, 1, 2], (3,), 2049), "2 images but .* 3 labels"),
        ("train-labels-idx1-ubyte", _idx_bytes([0, 10], (2,), 2049), "labels must be 0..9"),
        ("train-images-idx3-ubyte", _idx_bytes([0] * 2 * 64, (2, 8, 8), 2051), "28×28"),
    ],
)
def test_a_bad_file_is_a_value_error_naming_it(tmp_path, name, data, match):
    path = _corrupt(tmp_path, name, data)
    with pytest.raises(ValueError, match=match) as info:
        load_fashion_mnist(tmp_path)
    assert str(path) in str(info.value) or path.name in str(info.value)


def test_a_broken_gzip_is_a_value_error_naming_it(tmp_path):
    images, labels = _tiny(4, 2)
    _write(tmp_path, "train", images, labels, gz=True)
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:40])  # cut in the middle of the stream
    with pytest.raises(ValueError, match=r"not a readable idx file") as info:
        load_fashion_mnist(tmp_path)
    assert str(path) in str(info.value)
    path.write_bytes(b"this is not gzip at all")
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte\.gz: not a readable idx file"):
        load_fashion_mnist(tmp_path)


def test_missing_files_name_the_debian_package_and_the_embedded_alternative(tmp_path):
    with pytest.raises(DatasetUnavailableError) as info:
        load_fashion_mnist(tmp_path / "empty")
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "apt-get install dataset-fashion-mnist" in message
    assert "dro_lab.data.load_digits(size=28)" in message
    assert "load_fashion_mnist(root=" in message and "download=True" in message and str(tmp_path) in message
    # only the test split present: the training split is still missing
    _write(tmp_path, "t10k", *_tiny(5, 2), gz=True)
    assert len(load_fashion_mnist(tmp_path, train=False)) == 2
    with pytest.raises(DatasetUnavailableError, match="apt-get install dataset-fashion-mnist"):
        load_fashion_mnist(tmp_path)


def test_default_root_without_the_debian_package(tmp_path, monkeypatch):
    monkeypatch.setattr(fashion, "DEBIAN_FASHION_MNIST", tmp_path / "not-installed")
    with pytest.raises(DatasetUnavailableError, match=r"apt-get install dataset-fashion-mnist") as info:
        load_fashion_mnist()
    assert "load_fashion_mnist(root='data', download=True)" in str(info.value)
    with pytest.raises(DatasetUnavailableError, match=r"is not on disk \(download=True needs a root folder"):
        load_fashion_mnist(download=True)


def test_download_goes_through_torchvision(tmp_path, monkeypatch):
    import torchvision.datasets

    images, labels = _tiny(6, 3)

    def fake_download(self):  # what a successful download leaves: the unpacked files in root/FashionMNIST/raw
        for split in ("train", "t10k"):
            _write(Path(self.raw_folder), split, images, labels, gz=False)

    monkeypatch.setattr(torchvision.datasets.FashionMNIST, "download", fake_download)
    ds = load_fashion_mnist(tmp_path, download=True)
    assert (tmp_path / "FashionMNIST" / "raw" / "train-images-idx3-ubyte").is_file()
    assert ds.y.tolist() == labels
    np.testing.assert_allclose(ds.x[:, 0].numpy(), images / 255.0, atol=1e-7)


def test_a_failed_download_is_reported(tmp_path, monkeypatch):
    import torchvision.datasets

    def offline(self):  # what torchvision raises when every mirror fails
        raise RuntimeError("Error downloading train-images-idx3-ubyte.gz: <urlopen error offline>")

    monkeypatch.setattr(torchvision.datasets.FashionMNIST, "download", offline)
    with pytest.raises(DatasetUnavailableError, match=r"could not be downloaded") as info:
        load_fashion_mnist(tmp_path, download=True)
    assert "apt-get install dataset-fashion-mnist" in str(info.value) and "load_digits(size=28)" in str(info.value)


@pytest.mark.parametrize(
    "kwargs, name",
    [({"root": 5}, "root"), ({"train": "yes"}, "train"), ({"download": 1}, "download"), ({"train": None}, "train")],
)
def test_wrong_types_are_type_errors(kwargs, name):
    with pytest.raises(TypeError, match=name):
        load_fashion_mnist(**kwargs)
