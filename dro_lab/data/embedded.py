"""The offline defaults: scikit-learn's bundled digits and tabular sets, and 2-D blobs with a minority group.

scikit-learn is imported inside the loaders, so ``import dro_lab`` stays fast.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._validation import check_int, check_number
from .datasets import ArrayDataset, split_dataset, split_positions

__all__ = ["TABULAR_DATASETS", "load_digits", "load_tabular", "make_minority_blobs"]


#: Names accepted by :func:`load_tabular`.
TABULAR_DATASETS: tuple[str, ...] = ("breast_cancer", "wine", "iris", "digits")


_DIGITS_SIZES = (8, 28)


def load_digits(
    *, size: int = 8, flatten: bool = False, test_fraction: float = 0.25, seed: int = 0, normalize: bool = True
) -> tuple[ArrayDataset, ArrayDataset]:
    """scikit-learn's bundled handwritten digits: 1797 grey 8×8 images, 10 classes, no download.

    The offline stand-in for MNIST (``size=28`` upsamples bilinearly, so MNIST-sized networks run
    unchanged). The split is stratified by class and seeded.

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

    Example:
        >>> train, test = load_digits()
        >>> len(train), len(test), train.x.shape[1:], train.num_classes
        (1347, 450, torch.Size([1, 8, 8]), 10)
    """
    import sklearn.datasets

    check_int(size, "size", low=None)
    if size not in _DIGITS_SIZES:
        raise ValueError(f"size must be one of {set(_DIGITS_SIZES)}, got {size!r}")
    check_number(test_fraction, "test_fraction", low=0, high=1, low_open=True, high_open=True)
    seed = check_int(seed, "seed", low=None)
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


def load_tabular(
    name: str, *, test_fraction: float = 0.25, seed: int = 0, standardize: bool = True
) -> tuple[ArrayDataset, ArrayDataset]:
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
    check_number(test_fraction, "test_fraction", low=0, high=1, low_open=True, high_open=True)
    seed = check_int(seed, "seed", low=None)
    bunch = getattr(sklearn.datasets, _TABULAR_LOADERS[name])()
    x = torch.as_tensor(np.asarray(bunch.data, dtype=np.float64))
    y = torch.as_tensor(bunch.target, dtype=torch.int64)
    k = int(y.max()) + 1
    # Split first, then standardise (in float64) with the training statistics only.
    tr, te = (torch.as_tensor(p) for p in split_positions(y.numpy(), test_fraction, seed, stratify=True))
    x_tr, x_te = x[tr], x[te]
    if standardize:
        mean = x_tr.mean(0)
        std = x_tr.std(0, unbiased=False)
        std = torch.where(std > 0, std, torch.ones_like(std))
        x_tr, x_te = (x_tr - mean) / std, (x_te - mean) / std
    return ArrayDataset(x_tr, y[tr], num_classes=k), ArrayDataset(x_te, y[te], num_classes=k)


def _minority_blobs_part(
    n: int, minority_fraction: float, gen: torch.Generator, core_shift: float, spurious_shift: float, noise: float
) -> ArrayDataset:
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


def make_minority_blobs(
    n: int = 1000,
    *,
    minority_fraction: float = 0.1,
    seed: int = 0,
    noise: float = 1.0,
    test_size: int | None = None,
    test_minority_fraction: float = 0.5,
    core_shift: float = 1.0,
    spurious_shift: float = 2.0,
) -> tuple[ArrayDataset, ArrayDataset]:
    r"""A 2-D binary task with a minority group on which ERM fails: a spurious correlation.

    Construction (labels :math:`y\in\{0,1\}`, :math:`s = 2y-1`, noise
    :math:`\varepsilon\sim\mathcal N(0, \sigma^2 I_2)` with :math:`\sigma` = ``noise``):

    * **core feature** :math:`x_1 = \mu_c\, s + \varepsilon_1` (``core_shift`` :math:`\mu_c=1`) —
      predicts the label equally well in both groups: accuracy :math:`\Phi(\mu_c/\sigma)\approx 0.84`;
    * **spurious feature** :math:`x_2 = \mu_s\, s\, a_g + \varepsilon_2` (``spurious_shift``
      :math:`\mu_s=2`), with :math:`a_g=+1` in the **majority** (group 0) and :math:`a_g=-1` in
      the **minority** (group 1). On the majority :math:`x_2` alone is right with probability
      :math:`\Phi(2)\approx 0.98`; on the minority it is right only :math:`\approx 0.02` of the time.

    Four Gaussian blobs: the majority on the diagonal, the minority on the anti-diagonal. The boundary
    fair to both groups is the vertical line :math:`x_1 = 0`. ERM on a 10 % minority leans on the
    spurious feature (logistic regression, seeds 0–4, ``n=1000``: 0.96 test accuracy on the majority, 0.53
    on the minority); group-balanced weights move the boundary towards :math:`x_1 = 0` (0.85 / 0.83);
    up-weighting the high-loss *examples* does not (the hardest points are noise in both groups). Labels
    are exactly balanced inside each group.

    The test set follows the same construction with ``test_minority_fraction`` (default 0.5): report
    per-group and worst-group accuracy.

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

    Example:
        >>> train, test = make_minority_blobs(100, minority_fraction=0.1)
        >>> train.x.shape, torch.bincount(train.groups), torch.bincount(test.groups)
        (torch.Size([100, 2]), tensor([90, 10]), tensor([50, 50]))
    """
    for name, value in (("n", n), ("test_size", test_size)):
        if value is None:
            continue
        check_int(value, name, low=2)
    for name, value in (("minority_fraction", minority_fraction), ("test_minority_fraction", test_minority_fraction)):
        v = check_number(value, name, low=0, high=1, low_open=True)
        if v > 0.5:
            raise ValueError(f"{name} must be in (0, 0.5], got {v}")
    for name, value, strict in (
        ("noise", noise, True),
        ("core_shift", core_shift, True),
        ("spurious_shift", spurious_shift, False),
    ):
        check_number(value, name, low=0, low_open=strict)
    seed = check_int(seed, "seed", low=None)
    gen = torch.Generator().manual_seed(seed)
    args = (float(core_shift), float(spurious_shift), float(noise))
    train = _minority_blobs_part(int(n), float(minority_fraction), gen, *args)
    test = _minority_blobs_part(int(n if test_size is None else test_size), float(test_minority_fraction), gen, *args)
    return train, test
