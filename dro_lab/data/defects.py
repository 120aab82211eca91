"""Offline analogues of the GI-LS paper's small defect-classification sets.

:func:`load_digits_defects`: 8×8 digits with the magnetic-tile per-class counts; :func:`make_defect_textures`:
procedural 32×32 tile / wood / carpet textures with injected defects and their masks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch
from torch import Tensor

from .._validation import check_bool, check_int
from .datasets import ArrayDataset

__all__ = ["MT_COUNTS", "load_digits_defects", "DEFECT_TEXTURE_CLASSES", "make_defect_textures"]


#: Per-class (train, test) counts of the paper's Table 1: ``MT_COUNTS["MT"]`` (6 classes, with Free) and
#: ``MT_COUNTS["MT-Defect"]`` (5 defect classes, no Free), in the table's column order.
MT_COUNTS: dict[str, dict[str, tuple[int, int]]] = {
    "MT": {
        "Free": (460, 492),
        "Uneven": (41, 62),
        "Blowhole": (57, 58),
        "Break": (52, 33),
        "Crack": (27, 27),
        "Fray": (13, 16),
    },
    "MT-Defect": {"Uneven": (54, 49), "Blowhole": (67, 48), "Break": (46, 39), "Crack": (28, 26), "Fray": (13, 16)},
}


_MT_DEFECT_DIGITS = {"Uneven": 4, "Blowhole": 5, "Break": 6, "Crack": 7, "Fray": 8}


_MT_FREE_DIGITS = (0, 1, 2, 3, 9)


_MT_FREE_SCALED = (435, 465)  # the 900 merged digits {0,1,2,3,9}, split 460:492 as in Table 1


def load_digits_defects(*, free: bool = True, seed: int = 0, test: bool = True) -> tuple[ArrayDataset, ArrayDataset]:
    """``digits-MT``: scikit-learn's 8×8 digits re-labelled to mimic the magnetic-tile (MT) data set.

    The defect classes are digits 4–8 (Uneven = 4, Blowhole = 5, Break = 6, Crack = 7, Fray = 8) with the
    *exact* per-class train / test counts of the paper's Table 1 (:data:`MT_COUNTS`). With ``free=True``
    (MT, k = 6) class 0 is "Free" = the merged digits {0, 1, 2, 3, 9}; digits has only 900 of them, not
    the table's 460 + 492, so Free is scaled to 435 train / 465 test, keeping the 460 : 492 ratio.
    With ``free=False`` (MT-Defect, k = 5) the labels are 0..4 = Uneven … Fray with MT-Defect's counts.
    Each class's images are drawn without replacement by a seeded permutation: disjoint, deterministic splits.

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

    seed = check_int(seed, "seed", low=None)
    check_bool(free, "free")
    check_bool(test, "test")
    table = MT_COUNTS["MT" if free else "MT-Defect"]
    names = tuple(table)
    bunch = sklearn.datasets.load_digits()
    images = torch.as_tensor(bunch.images, dtype=torch.float32).unsqueeze(1) / 16.0
    digits = torch.as_tensor(bunch.target, dtype=torch.int64)
    gen = torch.Generator().manual_seed(seed)
    parts: dict[str, list[Tensor]] = {"train": [], "test": []}
    labels: dict[str, list[Tensor]] = {"train": [], "test": []}
    for label, name in enumerate(names):
        pool = (
            digits == _MT_DEFECT_DIGITS[name] if name != "Free" else torch.isin(digits, torch.tensor(_MT_FREE_DIGITS))
        )
        pos = torch.nonzero(pool).reshape(-1)
        pos = pos[torch.randperm(pos.numel(), generator=gen)]
        n_train, n_test = _MT_FREE_SCALED if name == "Free" else table[name]
        if n_train + n_test > pos.numel():  # cannot happen with sklearn's digits (see the docstring)
            raise RuntimeError(f"digits has only {pos.numel()} images for {name}, need {n_train + n_test}")
        chosen = {"train": pos[:n_train], "test": pos[n_train : n_train + n_test] if test else pos[n_train:]}
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
        img = (
            0.5
            + 0.07 * torch.sin(two_pi * f * (xx * torch.cos(theta) + yy * torch.sin(theta)) + phase)
            + gx * (xx - 0.5)
            + gy * (yy - 0.5)
        )
    elif kind == "wood":
        f, phase, w, a = _u(gen, n, 5.0, 9.0), _u(gen, n, 0.0, two_pi), _u(gen, n, 0.5, 2.0), _u(gen, n, 0.03, 0.1)
        img = 0.55 + 0.1 * torch.sin(two_pi * f * (yy + a * torch.sin(two_pi * w * xx + phase)) + phase)
    else:
        f, px, py = _u(gen, n, 6.0, 10.0), _u(gen, n, 0.0, two_pi), _u(gen, n, 0.0, two_pi)
        img = 0.5 + 0.08 * torch.sin(two_pi * f * xx + px) * torch.sin(two_pi * f * yy + py)
    return img + 0.02 * torch.randn(img.shape, generator=gen)


def _ellipse(
    gen: torch.Generator, n: int, yy: Tensor, xx: Tensor, rmin: float, rmax: float, margin: float = 0.2
) -> Tensor:
    """A random rotated ellipse per image: bool (n, H, W)."""
    cy, cx = _u(gen, n, margin, 1 - margin), _u(gen, n, margin, 1 - margin)
    a, b, th = _u(gen, n, rmin, rmax), _u(gen, n, rmin, rmax), _u(gen, n, 0.0, math.pi)
    u = (xx - cx) * torch.cos(th) + (yy - cy) * torch.sin(th)
    v = -(xx - cx) * torch.sin(th) + (yy - cy) * torch.cos(th)
    return (u / a) ** 2 + (v / b) ** 2 <= 1.0


def _segment(gen: torch.Generator, n: int, yy: Tensor, xx: Tensor, length: tuple[float, float], width: float) -> Tensor:
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
        0.5 * torch.randn(n, steps, generator=gen), 1
    )
    step = 0.6 / size  # sub-pixel steps: the line is connected
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
    jag = 0.04 + 0.14 * torch.rand(n, size, generator=gen)  # one random depth per position along the edge
    pos = (along * size).floor().long().clamp(0, size - 1)
    return dist < torch.gather(jag, 1, pos.reshape(n, -1)).reshape(dist.shape)


def _blob(gen: torch.Generator, n: int, yy: Tensor, xx: Tensor, smin: float, smax: float) -> Tensor:
    """A Gaussian bump with a random centre and width, peak 1: float (n, H, W)."""
    cy, cx, s = _u(gen, n, 0.25, 0.75), _u(gen, n, 0.25, 0.75), _u(gen, n, smin, smax)
    return torch.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * s**2))


def _inject(name: str, img: Tensor, gen: torch.Generator, size: int, yy: Tensor, xx: Tensor) -> tuple[Tensor, Tensor]:
    """Images of defect class ``name`` from clean ``img`` (n, H, W): (images, defect masks)."""
    n = img.shape[0]

    def paint(mask: Tensor, value) -> Tensor:
        return torch.where(mask, value, img)

    if name == "Free":
        return img, torch.zeros_like(img, dtype=torch.bool)
    if name == "Uneven":  # a low-frequency dark or bright blotch
        bump = _blob(gen, n, yy, xx, 0.12, 0.22)
        sign = torch.where(torch.rand(n, 1, 1, generator=gen) < 0.5, -1.0, 1.0)
        return img + sign * 0.4 * bump, bump > 0.5
    if name == "Blowhole":  # one or two dark ellipses
        mask = _ellipse(gen, n, yy, xx, 0.05, 0.12)
        mask |= _ellipse(gen, n, yy, xx, 0.04, 0.08) & (torch.rand(n, 1, 1, generator=gen) < 0.5)
        return paint(mask, 0.08 + 0.05 * torch.rand(img.shape, generator=gen)), mask
    if name in ("Crack", "Thread"):  # a dark crack / a bright loose thread: a random walk
        mask = _random_walk(gen, n, size, steps=int(1.2 * size))
        return paint(mask, 0.05 if name == "Crack" else 0.95), mask
    if name == "Break":  # a piece broken off an edge (black background shows)
        mask = _edge_wedge(gen, n, yy, xx)
        return paint(mask, torch.tensor(0.0)), mask
    if name == "Fray":  # a jagged, noisy strip along an edge
        mask = _jagged_border(gen, n, size, yy, xx)
        return paint(mask, 0.1 * torch.rand(img.shape, generator=gen)), mask
    if name == "Color":  # a brighter or darker stained patch
        mask = _ellipse(gen, n, yy, xx, 0.08, 0.16)
        shift = torch.where(torch.rand(n, 1, 1, generator=gen) < 0.5, -0.35, 0.35)
        return torch.where(mask, img + shift, img), mask
    if name == "Hole":  # a small dark disc
        mask = _ellipse(gen, n, yy, xx, 0.05, 0.08)
        return paint(mask, torch.tensor(0.03)), mask
    if name == "Liquid":  # a soft dark stain
        bump = _blob(gen, n, yy, xx, 0.08, 0.14)
        return img - 0.45 * bump, bump > 0.5
    if name in ("Scratch", "Cut"):  # a thin bright scratch / a thicker dark cut
        mask = (
            _segment(gen, n, yy, xx, (0.4, 0.8), 1.5 / size)
            if name == "Scratch"
            else _segment(gen, n, yy, xx, (0.25, 0.5), 2.5 / size)
        )
        return paint(mask, torch.tensor(0.95 if name == "Scratch" else 0.05)), mask
    if name == "Metal_contamination":  # a small, very bright speck
        mask = _ellipse(gen, n, yy, xx, 0.04, 0.07)
        return paint(mask, torch.tensor(1.0)), mask
    if name == "Combined":  # a hole and a scratch together
        x1, m1 = _inject("Hole", img, gen, size, yy, xx)
        x2, m2 = _inject("Scratch", x1, gen, size, yy, xx)
        return x2, m1 | m2
    raise AssertionError(name)


def make_defect_textures(
    kind: str = "tile", *, counts: Mapping[str, int] | None = None, size: int = 32, seed: int = 0
) -> ArrayDataset:
    """``synth-tile`` / ``synth-wood`` / ``synth-carpet``: procedural grey textures with injected defects.

    The classes of each kind are :data:`DEFECT_TEXTURE_CLASSES` (label 0 = "Free", then the table's defect
    columns): tile (magnetic tile, Table 1) = stripes + an illumination gradient with Uneven (a
    low-frequency blotch), Blowhole (dark ellipses), Break (a wedge broken off an edge), Crack (a dark
    random-walk line) and Fray (a jagged border strip); wood (Table 2) = wavy grain with Color (a stained
    patch), Combined (hole + scratch), Hole (a dark disc), Liquid (a soft dark stain) and Scratch (a thin
    bright line); carpet (Table 2) = a weave with Color, Hole, Thread (a bright random walk), Cut (a short
    thick dark line) and Metal_contamination (a bright speck): an analogue of the paper's sets, not a model.

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
        raise ValueError(
            f"counts has unknown class names for kind={kind!r}: {sorted(unknown)}; the classes are {names}"
        )
    for name, c in counts.items():
        check_int(c, f"counts[{name!r}]", low=0)
    if sum(int(c) for c in counts.values()) == 0:
        raise ValueError("counts must ask for at least one image")
    size = check_int(size, "size", low=8)
    gen = torch.Generator().manual_seed(check_int(seed, "seed", low=None))
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
