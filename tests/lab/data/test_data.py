"""Tests of dro_lab.data: indices, splits, imbalance, groups, the embedded sets, offline errors.

Oracles are independent of the code under test: scikit-learn's raw arrays, a numpy bilinear
interpolation, per-item loops, bincounts, the closed-form construction of the minority blobs
and scikit-learn's LogisticRegression. No test touches the network.
"""

from __future__ import annotations

import pickle
import struct
import urllib.error
from pathlib import Path

import numpy as np
import pytest
import sklearn.datasets
import torch
from torch.utils.data import DataLoader, TensorDataset

from dro_lab import data as D


def _rows(x) -> np.ndarray:
    """Rows of a 2-D array sorted lexicographically (a multiset of examples)."""
    a = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    return a[np.lexsort(a.T[::-1])]


# --------------------------------------------------------------------------- ArrayDataset


def test_array_dataset_items_and_collation():
    x = torch.arange(20, dtype=torch.float64).reshape(10, 2)
    ds = D.ArrayDataset(x, np.arange(10) % 3, groups=[0, 1] * 5)
    assert len(ds) == 10 and ds.num_classes == 3 and ds.num_groups == 2 and ds.in_shape == (2,)
    xi, yi, i, gi = ds[7]
    assert xi.dtype == torch.float32 and yi.dtype == torch.int64 and gi.dtype == torch.int64
    assert i == 7 and xi.tolist() == [14.0, 15.0] and int(yi) == 1 and int(gi) == 1
    assert ds[-1][2] == 9  # a negative index still reports the position 0..n-1
    with pytest.raises(IndexError):
        ds[10]
    batches = list(DataLoader(ds, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(0)))
    xb, yb, ib, gb = batches[0]
    assert [t.dtype for t in (xb, yb, ib, gb)] == [torch.float32, torch.int64, torch.int64, torch.int64]
    seen = torch.cat([b[2] for b in batches])
    assert sorted(seen.tolist()) == list(range(10))
    for xb, yb, ib, gb in batches:  # the index maps each collated row back to its example
        assert torch.equal(xb, x[ib].float()) and torch.equal(yb, ib % 3) and torch.equal(gb, ib % 2)


def test_array_dataset_batch_matches_per_item_loop():
    gen = torch.Generator().manual_seed(1)
    ds = D.ArrayDataset(
        torch.randn(50, 1, 3, 3, generator=gen),
        torch.randint(0, 4, (50,), generator=gen),
        torch.randint(0, 2, (50,), generator=gen),
    )
    idx = torch.tensor([3, 0, 49, 3, 17])
    fast = ds.batch(idx)
    slow = torch.utils.data.default_collate([ds[int(i)] for i in idx])
    assert len(fast) == 4
    for a, b in zip(fast, slow):
        assert torch.equal(a, b) and a.dtype == b.dtype
    no_groups = D.ArrayDataset(ds.x, ds.y)
    assert len(no_groups.batch([1, 2])) == 3


def test_array_dataset_subset_renumbers_and_keeps_counts():
    ds = D.ArrayDataset(torch.randn(6, 2), [0, 1, 2, 2, 1, 0], groups=[0, 0, 1, 1, 2, 2])
    sub = ds.subset([4, 1])
    assert len(sub) == 2 and [sub[i][2] for i in range(2)] == [0, 1]
    assert torch.equal(sub.x, ds.x[[4, 1]]) and sub.y.tolist() == [1, 1]
    assert sub.num_classes == 3 and sub.num_groups == 3  # absent classes still count
    masked = ds.subset(torch.tensor([True, False, True, False, False, False]))
    assert masked.y.tolist() == [0, 2]
    with pytest.raises(ValueError, match="at least one"):
        ds.subset([])
    with pytest.raises(ValueError, match="range"):
        ds.subset([6])
    with pytest.raises(ValueError, match="mask"):
        ds.subset(torch.tensor([True, False]))
    moved = ds.to("cpu")
    assert moved.device.type == "cpu" and torch.equal(moved.x, ds.x) and moved.tensors[2] is not None


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((torch.randn(3, 2), torch.tensor([0, 1])), {}, ValueError, "same length"),
        ((torch.randn(0, 2), torch.tensor([], dtype=torch.int64)), {}, ValueError, "at least one"),
        ((torch.randn(3, 2), torch.tensor([0.0, 1.0, 1.0])), {}, TypeError, "integer"),
        ((torch.randn(3, 2), torch.tensor([0, -1, 1])), {}, ValueError, "non-negative"),
        ((torch.randn(3, 2), torch.tensor([0, 1, 1]), [0, 1]), {}, ValueError, "one id per example"),
        ((torch.randn(3, 2), torch.tensor([0, 1, 2])), {"num_classes": 2}, ValueError, "num_classes"),
    ],
)
def test_array_dataset_validation(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        D.ArrayDataset(*args, **kwargs)


def test_indexed_dataset_wraps_pairs_and_triples():
    x, y = torch.randn(8, 3), torch.arange(8) % 2
    wrapped = D.IndexedDataset(TensorDataset(x, y))
    assert len(wrapped) == 8 and wrapped[5][2] == 5 and wrapped[-1][2] == 7
    for xb, yb, ib in DataLoader(wrapped, batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(0)):
        assert ib.dtype == torch.int64 and torch.equal(xb, x[ib]) and torch.equal(yb, y[ib])
    g = torch.arange(8) % 3
    xi, yi, i, gi = D.IndexedDataset(TensorDataset(x, y, g))[4]
    assert i == 4 and int(gi) == 1
    with pytest.raises(ValueError, match=r"\(x, y\)"):
        D.IndexedDataset(TensorDataset(x))[0]
    with pytest.raises(ValueError, match="empty"):
        D.IndexedDataset(TensorDataset(x[:0], y[:0]))


# --------------------------------------------------------------------------- digits


def _bilinear_numpy(img: np.ndarray, size: int) -> np.ndarray:
    """Bilinear resize with half-pixel centres (align_corners=False), written independently."""
    n = img.shape[0]

    def axis(out):
        src = np.maximum((np.arange(out) + 0.5) * n / out - 0.5, 0.0)
        i0 = np.floor(src).astype(int)
        i1 = np.minimum(i0 + 1, n - 1)
        return i0, i1, src - i0

    r0, r1, wr = axis(size)
    c0, c1, wc = axis(size)
    top = img[r0][:, c0] * (1 - wc) + img[r0][:, c1] * wc
    bottom = img[r1][:, c0] * (1 - wc) + img[r1][:, c1] * wc
    return top * (1 - wr)[:, None] + bottom * wr[:, None]


def test_load_digits_is_a_stratified_partition_of_sklearn_digits():
    raw = sklearn.datasets.load_digits()
    train, test = D.load_digits(seed=3)
    assert train.in_shape == (1, 8, 8) and train.num_classes == 10
    assert len(train) + len(test) == 1797 and abs(len(test) - 0.25 * 1797) <= 1
    both = np.concatenate([train.x.reshape(len(train), -1).numpy(), test.x.reshape(len(test), -1).numpy()])
    np.testing.assert_allclose(_rows(both), _rows(raw.data / 16.0), atol=1e-7)
    full_counts = np.bincount(raw.target, minlength=10)
    assert np.all(np.abs(D.class_counts(test).numpy() - 0.25 * full_counts) <= 1)
    assert train.x.min() >= 0 and train.x.max() <= 1
    again, _ = D.load_digits(seed=3)
    other, _ = D.load_digits(seed=4)
    assert torch.equal(again.x, train.x) and not torch.equal(other.y, train.y)
    raw_train, _ = D.load_digits(seed=3, normalize=False, flatten=True)
    assert raw_train.in_shape == (64,) and torch.allclose(raw_train.x, train.x.reshape(len(train), -1) * 16)


def test_load_digits_upsampled_matches_numpy_bilinear():
    small, _ = D.load_digits(seed=0)
    big, _ = D.load_digits(size=28, seed=0)
    assert big.in_shape == (1, 28, 28) and torch.equal(big.y, small.y)
    for i in (0, 100):
        expected = _bilinear_numpy(small.x[i, 0].double().numpy(), 28)
        np.testing.assert_allclose(big.x[i, 0].numpy(), expected, atol=1e-5)
    flat, _ = D.load_digits(size=28, flatten=True)
    assert flat.in_shape == (784,)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"size": 16}, ValueError, "size"),
        ({"test_fraction": 1.0}, ValueError, "test_fraction"),
        ({"test_fraction": 0}, ValueError, r"\(0, 1\)"),
        ({"seed": 1.5}, TypeError, "seed"),
    ],
)
def test_load_digits_validation(kwargs, error, match):
    with pytest.raises(error, match=match):
        D.load_digits(**kwargs)


def test_split_dataset_stratified():
    ds = D.ArrayDataset(torch.randn(100, 2), torch.tensor([0] * 80 + [1] * 20))
    a, b = D.split_dataset(ds, test_fraction=0.2, seed=0)
    assert len(a) == 80 and len(b) == 20 and D.class_counts(b).tolist() == [16, 4]
    assert _rows(torch.cat([a.x, b.x])).tolist() == _rows(ds.x).tolist()


# --------------------------------------------------------------------------- tabular


@pytest.mark.parametrize(("name", "shape"), [("breast_cancer", (569, 30)), ("wine", (178, 13)), ("iris", (150, 4))])
def test_load_tabular_standardizes_with_train_statistics(name, shape):
    raw = getattr(sklearn.datasets, f"load_{name}")()
    train, test = D.load_tabular(name, seed=1)
    assert len(train) + len(test) == shape[0] and train.in_shape == (shape[1],)
    assert train.num_classes == len(np.unique(raw.target))
    torch.testing.assert_close(train.x.double().mean(0), torch.zeros(shape[1], dtype=torch.float64), atol=1e-5, rtol=0)
    torch.testing.assert_close(
        train.x.double().std(0, unbiased=False), torch.ones(shape[1], dtype=torch.float64), atol=1e-4, rtol=0
    )
    # Undo the train-statistics transform on both splits: we must get the raw rows back.
    plain_train, plain_test = D.load_tabular(name, seed=1, standardize=False)
    mean, std = plain_train.x.double().mean(0), plain_train.x.double().std(0, unbiased=False)
    np.testing.assert_allclose(
        (test.x.double() * std + mean).numpy(), plain_test.x.double().numpy(), rtol=1e-4, atol=1e-3
    )
    np.testing.assert_allclose(
        _rows(torch.cat([plain_train.x, plain_test.x])), _rows(raw.data.astype(np.float32)), rtol=1e-6
    )
    assert not torch.allclose(test.x.double().mean(0), torch.zeros(shape[1], dtype=torch.float64), atol=1e-6)


def test_load_tabular_unknown_name_lists_valid_names():
    with pytest.raises(ValueError, match="breast_cancer, wine, iris"):
        D.load_tabular("titanic")
    digits_train, _ = D.load_tabular("digits")
    assert digits_train.in_shape == (64,) and torch.isfinite(digits_train.x).all()


# --------------------------------------------------------------------------- minority blobs


def test_minority_blobs_construction():
    train, test = D.make_minority_blobs(4000, minority_fraction=0.1, seed=0, test_size=2000)
    assert D.group_counts(train).tolist() == [3600, 400] and D.group_counts(test).tolist() == [1000, 1000]
    assert train.in_shape == (2,) and train.num_classes == 2 and train.num_groups == 2
    for g in (0, 1):  # labels exactly balanced inside each group
        part = train.subset(train.groups == g)
        assert D.class_counts(part).tolist() == [len(part) // 2] * 2
    # Closed form: class-conditional means (core_shift * s, spurious_shift * s * a_g), noise std 1.
    for g, a in ((0, 1.0), (1, -1.0)):
        for c in (0, 1):
            s = 2 * c - 1
            pts = test.x[(test.groups == g) & (test.y == c)].double()
            torch.testing.assert_close(
                pts.mean(0), torch.tensor([1.0 * s, 2.0 * s * a], dtype=torch.float64), atol=0.15, rtol=0
            )
            torch.testing.assert_close(pts.std(0), torch.ones(2, dtype=torch.float64), atol=0.12, rtol=0)
    again, _ = D.make_minority_blobs(4000, minority_fraction=0.1, seed=0, test_size=2000)
    other, _ = D.make_minority_blobs(4000, minority_fraction=0.1, seed=1, test_size=2000)
    assert torch.equal(again.x, train.x) and not torch.equal(other.x, train.x)
    # Groups are interleaved, not all minority at the end.
    assert 0 < int(train.groups[: len(train) // 2].sum()) < 400


def test_minority_blobs_erm_fails_the_minority_and_reweighting_helps():
    from sklearn.linear_model import LogisticRegression

    train, test = D.make_minority_blobs(1000, minority_fraction=0.1, seed=0)
    x, y, g = train.x.numpy(), train.y.numpy(), train.groups.numpy()
    xt, yt, gt = test.x.numpy(), test.y.numpy(), test.groups.numpy()
    erm = LogisticRegression().fit(x, y)
    avg = (erm.predict(x) == y).mean()  # average accuracy on the training distribution (90/10)
    hit = erm.predict(xt) == yt
    majority, minority = hit[gt == 0].mean(), hit[gt == 1].mean()
    assert avg > 0.88 and majority > 0.93
    assert minority < avg - 0.25, (avg, majority, minority)
    # Group-balanced weights (what up-weighting the minority amounts to) close the gap.
    weights = np.where(g == 1, (g == 0).sum() / (g == 1).sum(), 1.0)
    fair = LogisticRegression().fit(x, y, sample_weight=weights)
    hit = fair.predict(xt) == yt
    assert hit[gt == 1].mean() > minority + 0.2 and abs(hit[gt == 1].mean() - hit[gt == 0].mean()) < 0.1


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"minority_fraction": 0.0}, ValueError, "minority_fraction"),
        ({"minority_fraction": 0.7}, ValueError, "0.5"),
        ({"noise": 0.0}, ValueError, "noise"),
        ({"n": 1}, ValueError, "n must"),
        ({"n": 10.0}, TypeError, "n must"),
    ],
)
def test_minority_blobs_validation(kwargs, error, match):
    with pytest.raises(error, match=match):
        D.make_minority_blobs(**kwargs)


# --------------------------------------------------------------------------- imbalance and groups


def test_make_imbalanced_counts_and_membership():
    digits, _ = D.load_digits(seed=0)
    # x holds each example's original position, so membership and order are read off directly.
    train = D.ArrayDataset(torch.arange(len(digits)).unsqueeze(1), digits.y)
    before = D.class_counts(train)
    kept = D.make_imbalanced(train, classes=[3, 5], keep_fraction=0.05, generator=0)
    after = D.class_counts(kept)
    for c in range(10):
        expected = max(1, int(np.floor(0.05 * before[c].item() + 0.5))) if c in (3, 5) else before[c].item()
        assert after[c].item() == expected
    # Every kept example is an original example of the same class, in the original order.
    pos = kept.x[:, 0].long()
    assert torch.all(pos[1:] > pos[:-1]) and torch.equal(train.y[pos], kept.y)
    assert [kept[i][2] for i in (0, len(kept) - 1)] == [0, len(kept) - 1]
    same = D.make_imbalanced(train, classes=[3, 5], keep_fraction=0.05, generator=torch.Generator().manual_seed(0))
    other = D.make_imbalanced(train, classes=[3, 5], keep_fraction=0.05, generator=1)
    assert torch.equal(same.x, kept.x) and not torch.equal(other.x, kept.x)
    torch.manual_seed(5)
    a = D.make_imbalanced(train, classes=3, keep_fraction=0.3)
    torch.manual_seed(5)
    b = D.make_imbalanced(train, classes=3, keep_fraction=0.3)
    assert torch.equal(a.x, b.x)
    tiny = D.make_imbalanced(train, classes=3, keep_fraction=1e-6, generator=0)
    assert D.class_counts(tiny)[3] == 1  # at least one example survives
    assert len(D.make_imbalanced(train, classes=3, keep_fraction=1.0, generator=0)) == len(train)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"classes": 3, "keep_fraction": 0.0}, ValueError, r"keep_fraction must be a number in \(0, 1\]"),
        ({"classes": 3, "keep_fraction": 1.5}, ValueError, "keep_fraction"),
        ({"classes": [12], "keep_fraction": 0.5}, ValueError, r"\[0, 10\)"),
        ({"classes": 3, "keep_fraction": 0.5, "generator": "x"}, TypeError, "generator"),
    ],
)
def test_make_imbalanced_validation(kwargs, error, match):
    train = D.ArrayDataset(torch.randn(20, 2), torch.arange(20) % 10)
    with pytest.raises(error, match=match):
        D.make_imbalanced(train, **kwargs)


def test_assign_groups_and_groups_from_classes():
    y = torch.tensor([0, 1, 2, 3, 2, 1, 0])
    ds = D.ArrayDataset(torch.randn(7, 2), y)
    mapping = {0: 0, 1: 1, 2: 0, 3: 1}
    expected = [mapping[int(c)] for c in y]
    assert D.groups_from_classes(y, mapping).tolist() == expected
    assert D.groups_from_classes(y.numpy(), [0, 1, 0, 1]).tolist() == expected
    with pytest.raises(ValueError, match=r"\[3\]"):
        D.groups_from_classes(y, {0: 0, 1: 1, 2: 0})
    grouped = D.assign_groups(ds, lambda x, labels: D.groups_from_classes(labels, mapping))
    assert grouped.groups.tolist() == expected and grouped.num_groups == 2 and len(grouped[0]) == 4
    assert grouped.x is ds.x  # shared, not copied
    by_array = D.assign_groups(ds, np.array(expected), num_groups=3)
    assert by_array.num_groups == 3 and D.group_counts(by_array).tolist() == [4, 3, 0]
    with pytest.raises(ValueError, match="one id per example"):
        D.assign_groups(ds, [0, 1])
    with pytest.raises(TypeError, match="integer"):
        D.assign_groups(ds, np.zeros(7))
    with pytest.raises(ValueError, match="no groups"):
        D.group_counts(ds)


def test_class_counts_matches_bincount_on_any_dataset():
    y = torch.tensor([2, 2, 0, 1, 2, 0])
    assert D.class_counts(D.ArrayDataset(torch.zeros(6, 1), y, num_classes=4)).tolist() == [2, 1, 3, 0]
    assert D.class_counts(D.IndexedDataset(TensorDataset(torch.zeros(6, 1), y))).tolist() == [2, 1, 3]


# --------------------------------------------------------------------------- torchvision, offline


def _write_idx(path: Path, array: np.ndarray) -> None:
    magic = 2051 if array.ndim == 3 else 2049  # IDX: uint8 images / labels, big-endian header
    with open(path, "wb") as f:
        f.write(struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in array.shape))
        f.write(array.astype(np.uint8).tobytes())


def test_load_mnist_missing_files_names_the_embedded_alternative(tmp_path):
    with pytest.raises(D.DatasetUnavailableError) as info:
        D.load_mnist(tmp_path, download=False)
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "load_digits(size=28)" in message and "download=True" in message and str(tmp_path) in message


def test_load_mnist_failed_download_is_reported(tmp_path, monkeypatch):
    import torchvision.datasets

    def offline(self):  # what torchvision raises when every mirror fails
        raise RuntimeError("Error downloading train-images-idx3-ubyte.gz: <urlopen error offline>")

    monkeypatch.setattr(torchvision.datasets.MNIST, "download", offline)
    with pytest.raises(D.DatasetUnavailableError, match=r"could not be downloaded[\s\S]*load_digits\(size=28\)"):
        D.load_mnist(tmp_path, download=True)


def test_load_mnist_reads_local_idx_files(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    images = {"train": rng.integers(0, 256, (5, 28, 28)), "t10k": rng.integers(0, 256, (3, 28, 28))}
    labels = {"train": np.array([0, 9, 3, 3, 1]), "t10k": np.array([7, 2, 1])}
    for split in ("train", "t10k"):
        _write_idx(raw / f"{split}-images-idx3-ubyte", images[split])
        _write_idx(raw / f"{split}-labels-idx1-ubyte", labels[split])
    train = D.load_mnist(tmp_path, train=True)
    test = D.load_mnist(str(tmp_path), train=False)
    assert train.in_shape == (1, 28, 28) and len(train) == 5 and len(test) == 3 and train.num_classes == 10
    np.testing.assert_allclose(train.x[:, 0].numpy(), images["train"] / 255.0, rtol=1e-6)
    assert train.y.tolist() == labels["train"].tolist() and test.y.tolist() == labels["t10k"].tolist()


def test_load_cifar10_offline_and_local_files(tmp_path, monkeypatch):
    import torchvision.datasets
    import torchvision.datasets.cifar

    with pytest.raises(D.DatasetUnavailableError, match=r"load_digits\(size=28\)"):
        D.load_cifar10(tmp_path)

    def offline(self):
        raise urllib.error.URLError("offline")

    monkeypatch.setattr(torchvision.datasets.CIFAR10, "download", offline)
    with pytest.raises(D.DatasetUnavailableError, match="could not be downloaded"):
        D.load_cifar10(tmp_path, download=True)

    # Local files in torchvision's layout; md5 checks disabled for the synthetic batches.
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    test_pixels = rng.integers(0, 256, (4, 3 * 32 * 32)).astype(np.uint8)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        pixels = test_pixels if name == "test_batch" else rng.integers(0, 256, (2, 3072)).astype(np.uint8)
        labels = [1, 2, 3, 4] if name == "test_batch" else [0, 9]
        with open(folder / name, "wb") as f:
            pickle.dump({"data": pixels, "labels": labels}, f)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": [f"c{i}" for i in range(10)]}, f)
    monkeypatch.setattr(torchvision.datasets.CIFAR10, "_check_integrity", lambda self: True)
    monkeypatch.setattr(torchvision.datasets.cifar, "check_integrity", lambda *a, **k: True)
    test = D.load_cifar10(tmp_path, train=False)
    train = D.load_cifar10(tmp_path, train=True)
    assert test.in_shape == (3, 32, 32) and len(test) == 4 and len(train) == 10
    np.testing.assert_allclose(test.x.reshape(4, -1).numpy(), test_pixels / 255.0, rtol=1e-6)  # CHW order kept
    assert test.y.tolist() == [1, 2, 3, 4]


def test_library_source_never_hardcodes_cuda():
    for path in Path(D.__file__).parent.glob("*.py"):
        source = path.read_text()
        assert ".cuda(" not in source and 'device="cuda"' not in source, path.name


# --------------------------------------------------------------------------- lesson 06: digits-MT, defect textures


@pytest.mark.parametrize("free", [True, False])
def test_load_digits_defects_has_the_papers_per_class_counts(free):
    train, test = D.load_digits_defects(free=free, seed=0)
    table = D.MT_COUNTS["MT" if free else "MT-Defect"]
    names = tuple(table)
    assert train.class_names == test.class_names == names
    assert train.num_classes == test.num_classes == (6 if free else 5)
    want_train = [435 if n == "Free" else table[n][0] for n in names]  # Free scaled from 460 (900 digits)
    want_test = [465 if n == "Free" else table[n][1] for n in names]
    assert torch.bincount(train.y, minlength=len(names)).tolist() == want_train
    assert torch.bincount(test.y, minlength=len(names)).tolist() == want_test
    for ds in (train, test):
        assert ds.x.shape[1:] == (1, 8, 8) and float(ds.x.min()) >= 0.0 and float(ds.x.max()) <= 1.0
    # the splits are disjoint (no image drawn twice)
    flat_train = {tuple(r) for r in train.x.reshape(len(train), -1).tolist()}
    digits = sklearn.datasets.load_digits()
    n_dup = len(digits.images) - len({tuple(r) for r in digits.images.reshape(len(digits.images), -1).tolist()})
    overlap = sum(tuple(r) in flat_train for r in test.x.reshape(len(test), -1).tolist())
    assert overlap <= n_dup


def test_load_digits_defects_is_seeded_and_test_false_keeps_the_rest():
    a_train, a_test = D.load_digits_defects(seed=3)
    b_train, b_test = D.load_digits_defects(seed=3)
    c_train, _ = D.load_digits_defects(seed=4)
    assert torch.equal(a_train.x, b_train.x) and torch.equal(a_test.y, b_test.y)
    assert not torch.equal(a_train.x, c_train.x)
    rest_train, rest = D.load_digits_defects(free=False, seed=3, test=False)
    assert torch.equal(rest_train.x, D.load_digits_defects(free=False, seed=3)[0].x)
    assert len(rest_train) + len(rest) == sum(
        int(c) for c in np.bincount(sklearn.datasets.load_digits().target)[[4, 5, 6, 7, 8]]
    )


@pytest.mark.parametrize("kind", ["tile", "wood", "carpet"])
def test_make_defect_textures_counts_range_and_defects(kind):
    ds = D.make_defect_textures(kind, seed=0)
    names = tuple(D.DEFECT_TEXTURE_CLASSES[kind])
    assert ds.class_names == names and names[0] == "Free" and ds.num_classes == 6
    assert torch.bincount(ds.y, minlength=6).tolist() == list(D.DEFECT_TEXTURE_CLASSES[kind].values())
    assert ds.x.shape[1:] == (1, 32, 32) and float(ds.x.min()) >= 0.0 and float(ds.x.max()) <= 1.0
    assert ds.masks.shape == ds.x.shape and not ds.masks[ds.y == 0].any()
    # defect classes differ from Free in pixel statistics: share of pixels far from the image's median
    x = ds.x.reshape(len(ds), -1)
    far = ((x - x.median(1, keepdim=True).values).abs() > 0.25).float().mean(1)
    free_far = float(far[ds.y == 0].mean())
    for c in range(1, 6):
        assert float(far[ds.y == c].mean()) > free_far + 0.005, names[c]
        assert bool(ds.masks[ds.y == c].flatten(1).any(1).all()), names[c]


def test_make_defect_textures_seeded_requested_counts_and_errors():
    counts = {"Free": 5, "Crack": 3, "Fray": 0, "Break": 2}
    a = D.make_defect_textures("tile", counts=counts, size=16, seed=1)
    b = D.make_defect_textures("tile", counts=counts, size=16, seed=1)
    c = D.make_defect_textures("tile", counts=counts, size=16, seed=2)
    assert a.x.shape == (10, 1, 16, 16) and torch.bincount(a.y, minlength=6).tolist() == [5, 0, 0, 2, 3, 0]
    assert torch.equal(a.x, b.x) and not torch.equal(a.x, c.x)
    state = torch.random.get_rng_state()
    D.make_defect_textures("carpet", counts={"Hole": 4}, seed=0)
    assert torch.equal(state, torch.random.get_rng_state())  # the global RNG is untouched
    with pytest.raises(ValueError, match="unknown class"):
        D.make_defect_textures("wood", counts={"Crack": 3})
    with pytest.raises(ValueError, match="kind"):
        D.make_defect_textures("marble")
    with pytest.raises(ValueError, match="at least one"):
        D.make_defect_textures("tile", counts={"Free": 0})
