r"""Wang et al.'s few-data defect study (2024, §4.2–4.3, Tables 3–6): GI-LS against CE, LS and five augmentations.

**The paper.** Small, imbalanced surface-defect classification sets — magnetic tile MT (a majority "Free"
class and five defect classes of 13–57 training images, Table 1), MT-Defect, MVTec wood and carpet —
ImageNet-pretrained ResNet18/34/50, γ = 10⁻³, GI-LS's (α, T, η, epochs) from 20 Bayesian-optimisation trials
scored on the test split (§4.2, Table 3), single runs, top-1 accuracy. The baselines (§4.3) are the
cross-entropy "benchmark", label smoothing (Table 4, at GI-LS's tuned α and epochs), CutMix, Cutout and Mixup
(Table 5, no stated settings) and PGD / FGSM augmentation at ε = "8/225" (Table 6). On MT, GI-LS scored
84.2 / 86.6 / 84.4 % (ResNet18 / 34 / 50) against the benchmark's 76.2 / 75.0 / 77.2 % and every baseline's
≤ 77.3 %.

**The data here** (no offline copy of the paper's images exists):

* ``dataset="digits"`` — ``config["defects"]``: ``"digits-MT"`` (:func:`dro_lab.data.load_digits_defects`,
  digits 4–8 as the five defect classes with Table 1's exact MT train / test counts and the merged digits
  {0, 1, 2, 3, 9} as "Free", 435 / 465 images), ``"digits-MT-Defect"`` (the five defect classes with
  MT-Defect's counts) or a procedural texture set ``"tile"`` / ``"wood"`` / ``"carpet"``
  (:func:`dro_lab.data.make_defect_textures` at ``texture_size`` pixels, the training counts of Tables 1–2
  per seed, the tables' "Testing (unseen)" counts drawn once with another seed).
* ``dataset="fashion-mnist"`` — a few-data, imbalanced Fashion-MNIST subset with the paper's MT class counts:
  six classes (T-shirt/top as the majority, then trouser, pullover, dress, coat, shirt) keep MT's training
  counts 460 / 41 / 57 / 52 / 27 / 13, drawn per seed from the 60 000 training images; the test set holds
  ``test_per_class`` images of each (all 1 000 in the full preset, the same draw for every seed). These are
  clothes, not defects: the analogue keeps the paper's *few data and imbalance*, not its domain. Images are
  average-pooled to ``size`` pixels on the CPU presets.

Each seed's training set gives a stratified validation hold-out (``val_fraction``, 20 %); the final runs train
on the rest. Tuning scores it, never the test set (the paper's Table 3 is the best of 20 test evaluations), after
topping every class up to :data:`~dro_lab.experiments.papers._common.VAL_FLOOR` (30) images from those no split
uses (Fashion-MNIST's unused training images; digits-MT's digits in neither Table 1 split — Free needs none;
a texture set's fresh draw with another seed): thinned like the training set it would hold 3 shirts.

**Arms, tuned alike** (the same trials each, on the validation split of the first seed; Adam, × 0.3 every 20
epochs as in the paper, the final metrics the mean over the last 3 epochs; epochs fixed by the preset, where
the paper tuned 21–60). Every arm tries the learning rates ``LR_GRID``; the arms whose own knobs leave room
under the 4× grid-size rule also tune a coupled-L2 weight decay; the first grid point is each arm's default:

* **CE** — the paper's benchmark; **LS** — :class:`dro_lab.LabelSmoothingStrategy` (the paper's convention,
  off-target mass α/(k−1)), α on a log grid;
* **Mixup**, **CutMix** — the Beta(a, a) parameter a on a log₂ grid from 1; **Cutout** — the square's side
  (half the image side first, DeVries & Taylor's choice);
* **FGSM-aug**, **PGD-aug** — :class:`dro_lab.AttackAugmentStrategy` (one step on the attacked batch, one on
  the original, §4.3), ε = 8/255 first, then 4/255 and 16/255; PGD takes 10 steps of ε/4;
* **GI-LS** — :class:`dro_lab.GILSStrategy` at γ = 10⁻³, two values of each of the paper's α, T and η (no
  weight decay: the paper states none, and its 2³ points fill the 4× room): the library's default α = 0.3,
  T = 10, η = 0.02 first (small η: the paper's 1.5–3 were for ImageNet-normalised 224×224 inputs, and on
  [0, 1] images they turn the shifted samples into label noise), then α = 0.1, T = 3 and η = 0.06.

**Metrics.** Balanced accuracy (the mean of the class recalls: an "always Free" classifier scores 70 % accuracy
on digits-MT, and the paper's Table 6 MT accuracies of 71.5 % are exactly that), accuracy (the paper's),
worst-class accuracy, macro-F1 and every class's accuracy. For the GI-LS arm, ``gils_relative_shift``: the
mean ‖x^T − x‖₂ / ‖x‖₂ of the images it generated in its last training epoch, at its chosen setting (from
:func:`dro_lab.fit`'s history; missing, NaN, for the other arms). Every arm's trained model is also probed
with GI-LS's default shift (``config["probe"]``: α = 0.3, γ = 10⁻³, η = 0.02, T = 10) on the test images
(``probe_per_class`` of each class, drawn once; ``None``: all) by
:func:`dro_lab.attacks.gils_shift_report`: ``probe_relative_shift`` (the mean ‖Δx‖/‖x‖) and
``probe_label_kept`` / ``probe_label_kept_of_correct`` (the share of shifted test images the model still
assigns to their label, of all / of those it got right unshifted). The probe uses one fixed setting because
the metrics of a run see the trained model but not its arm's setting; for the GI-LS arm it is its own
shift when the default setting is chosen. Per epoch: the test accuracy, balanced accuracy, worst-class
accuracy and GI-LS's relative shift.

**Claims**: GI-LS beats CE and each of the six other baselines (Tables 3–6), read against 0 and against the
paper's own gap with ResNet18 on MT (its top-1 accuracy; ours is balanced accuracy on an analogue).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
import torch.nn.functional as F

from ...attacks import gils_shift_report
from ...data.datasets import ArrayDataset
from ...data.defects import DEFECT_TEXTURE_CLASSES, MT_COUNTS, load_digits_defects, make_defect_textures
from ...data.fashion import load_fashion_mnist
from ...metrics import macro_f1, predict
from ..protocol import Arm, Claim, Experiment, Splits
from ..tuning import GILS_SEARCH_SPACE
from ._common import TEST_SEED, VAL_FLOOR, build_model, class_metrics, holdout, per_class_subset, validation_floor

__all__ = [
    "GILS_EXPERIMENT",
    "LR_GRID",
    "WD_GRID",
    "LS_ALPHA_GRID",
    "MIX_GRID",
    "CUTOUT_GRID",
    "EPS_GRID",
    "GILS_ALPHA_GRID",
    "GILS_STEPS_GRID",
    "GILS_ETA_GRID",
    "FASHION_CLASSES",
    "FASHION_NAMES",
    "TEXTURE_TEST_COUNTS",
    "DEFECT_SETS",
]

#: Adam's learning rate, tried by every arm: 3e-3, every preset's default, first (3e-4 lost every earlier trial).
LR_GRID = (3e-3, 1e-3, 1e-2)
#: Adam's (coupled L2) weight decay, tuned by every arm but GI-LS; none first.
WD_GRID = (0.0, 1e-3)
#: LS's α (the paper's convention): the strategy's default 0.1 first, then a log grid and the paper's upper end 0.5.
LS_ALPHA_GRID = (0.1, 0.03, 0.3, 0.5)
#: Mixup's and CutMix's Beta(a, a) parameter: 1 (uniform λ) first, then a log₂ grid.
MIX_GRID = (1.0, 0.25, 0.5, 2.0)
#: Cutout's square side in pixels: None (half the image side) first.
CUTOUT_GRID = (None, 2, 3, 6)
#: FGSM / PGD augmentation's L∞ budget: the paper's 8/255 (printed 8/225) first, then half and double.
EPS_GRID = (8 / 255, 4 / 255, 16 / 255)
#: GI-LS's α: the default 0.3 (Table 3's MT optima: 0.41, 0.30, 0.14) first, then 0.1.
GILS_ALPHA_GRID = (0.3, 0.1)
#: GI-LS's T: the default 10 (Table 3's MT optima: 15, 12, 6) first, then 3.
GILS_STEPS_GRID = (10, 3)
#: GI-LS's η on inputs in [0, 1]: the default 0.02 first, then 0.06 (toward the paper's larger steps).
GILS_ETA_GRID = (0.02, 0.06)
_ETA_BOX = GILS_SEARCH_SPACE["eta"]
if not all(_ETA_BOX[1] <= e <= _ETA_BOX[2] for e in GILS_ETA_GRID):  # pragma: no cover - a module constant
    raise AssertionError("GILS_ETA_GRID must lie inside GILS_SEARCH_SPACE['eta']")

#: Fashion-MNIST classes of the few-data analogue (original labels), the majority first, and their names.
FASHION_CLASSES = (0, 1, 2, 3, 4, 6)
FASHION_NAMES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Shirt")
#: MT's training counts (Table 1), in the table's column order: Free, Uneven, Blowhole, Break, Crack, Fray.
_MT_TRAIN = tuple(train for train, _ in MT_COUNTS["MT"].values())

#: The "Testing (unseen)" counts of the paper's Tables 1 (tile = MT) and 2 (wood, carpet).
TEXTURE_TEST_COUNTS = {
    "tile": {"Free": 492, "Uneven": 62, "Blowhole": 58, "Break": 33, "Crack": 27, "Fray": 16},
    "wood": {"Free": 137, "Color": 4, "Combined": 7, "Hole": 7, "Liquid": 6, "Scratch": 9},
    "carpet": {"Free": 113, "Color": 7, "Hole": 5, "Thread": 5, "Cut": 7, "Metal_contamination": 4},
}
#: The values of ``config["defects"]`` for ``dataset="digits"``.
DEFECT_SETS = ("digits-MT", "digits-MT-Defect", "tile", "wood", "carpet")


def _fashion_few(config: Mapping, seed: int) -> tuple:
    """The few-data Fashion-MNIST subset: ``train_counts`` images of each of :data:`FASHION_CLASSES` (drawn
    with ``seed``), ``test_per_class`` test images of each (drawn once), relabelled 0..5, pooled to ``size``;
    then every training image of those classes and the mask of the drawn ones (the validation top-up's pool)."""
    parts = []
    for train, counts, gen_seed in (
        (True, config["train_counts"], seed),
        (False, [config["test_per_class"]] * len(FASHION_CLASSES), TEST_SEED),
    ):
        raw = load_fashion_mnist(train=train)
        gen, keep = torch.Generator().manual_seed(gen_seed), torch.zeros(len(raw), dtype=torch.bool)
        for old, count in zip(FASHION_CLASSES, counts):
            members = (raw.y == old).nonzero().squeeze(1)
            keep[members if count is None else members[torch.randperm(members.numel(), generator=gen)[:count]]] = True
        classes = torch.tensor(FASHION_CLASSES)
        mine, relabel = torch.isin(raw.y, classes), torch.zeros(10, dtype=torch.int64)
        relabel[classes] = torch.arange(len(FASHION_CLASSES))
        x, side = raw.x[mine], raw.x.shape[-1]
        if side % config["size"]:
            raise ValueError(f"size must divide the image side {side}, got {config['size']}")
        x = F.avg_pool2d(x, side // config["size"]) if config["size"] != side else x
        pool = ArrayDataset(x, relabel[raw.y[mine]], num_classes=len(FASHION_CLASSES))
        drawn = pool.subset(keep[mine])
        drawn.class_names = pool.class_names = FASHION_NAMES
        parts += [drawn, pool, keep[mine]]
    return parts[0], parts[3], parts[1], parts[2]


def _defect_sets(config: Mapping, seed: int) -> tuple:
    """The offline defect analogue ``config["defects"]`` (the module docstring describes them): ``(train, test,
    pool, used)``, the validation top-up drawn from ``pool``'s images outside the mask ``used``."""
    kind = config["defects"]
    if kind not in DEFECT_SETS:
        raise ValueError(f"defects must be one of {DEFECT_SETS}, got {kind!r}")
    if kind.startswith("digits"):
        train, test = load_digits_defects(free=kind == "digits-MT", seed=seed)
        _, rest = load_digits_defects(free=kind == "digits-MT", seed=seed, test=False)  # test + unused, by class
        sizes = zip(torch.bincount(rest.y).tolist(), torch.bincount(test.y).tolist())
        return train, test, rest, torch.cat([torch.arange(n) < t for n, t in sizes])
    size, names = config["texture_size"], DEFECT_TEXTURE_CLASSES[kind]
    train = make_defect_textures(kind, size=size, seed=seed)
    test = make_defect_textures(kind, counts=TEXTURE_TEST_COUNTS[kind], size=size, seed=TEST_SEED)
    pool = make_defect_textures(kind, counts=dict.fromkeys(names, VAL_FLOOR), size=size, seed=-1 - seed)
    return train, test, pool, torch.zeros(len(pool), dtype=torch.bool)


def _data(dataset: str, seed: int, config: Mapping) -> Splits:
    train, test, pool, used = _defect_sets(config, seed) if dataset == "digits" else _fashion_few(config, seed)
    names = list(train.class_names)
    info = {
        "set": config["defects"] if dataset == "digits" else "fashion-mnist few-data (MT counts)",
        "class_names": names,
        "test_per_class": torch.bincount(test.y, minlength=test.num_classes).tolist(),
    }
    splits = holdout(train, test, config, seed, info)
    splits.val = validation_floor(pool, used, splits.val, range(train.num_classes), VAL_FLOOR, seed)
    splits.info["val_per_class"] = torch.bincount(splits.val.y, minlength=train.num_classes).tolist()
    splits.info["val"] = len(splits.val)
    return splits


def _shift_probe(model, dataset, config: Mapping) -> dict:
    """GI-LS's shift at ``config["probe"]`` on the test images (``probe_per_class`` of each class, drawn once),
    judged by the trained model."""
    dataset = per_class_subset(dataset, config["probe_per_class"], torch.Generator().manual_seed(TEST_SEED))
    x, y = dataset.x, dataset.y
    nonzero = x.flatten(1).norm(dim=1) > 0  # an all-zero image has no relative shift
    device = next(model.parameters()).device
    report = gils_shift_report(model, x[nonzero].to(device), y[nonzero].to(device), **dict(config["probe"]))
    kept_of_correct = report["label_kept_of_correct"]
    return {
        "probe_relative_shift": report["relative_shift_mean"],
        "probe_label_kept": report["label_kept"],
        "probe_label_kept_of_correct": float("nan") if kept_of_correct is None else kept_of_correct,
    }


def _metrics(model, dataset, config: Mapping) -> dict:
    """Accuracy, balanced and worst-class accuracy, every class's accuracy, macro-F1 and the GI-LS probe."""
    out = class_metrics(model, dataset, config)
    out["macro_f1"] = macro_f1(predict(model, dataset.x).argmax(1).cpu(), dataset.y.cpu())
    out.update(_shift_probe(model, dataset, config))
    return out


def _curves(record: dict, config: Mapping) -> dict:
    out = {
        "test_accuracy": record["test_accuracy"],
        "test_balanced_accuracy": float(np.nanmean(record["test_per_class_accuracy"])),
        "test_worst_class_accuracy": record["test_worst_class_accuracy"],
    }
    if "gils_relative_shift" in record:  # the GI-LS arm: ‖x^T − x‖/‖x‖ of the epoch's generated images
        out["gils_relative_shift"] = record["gils_relative_shift"]
    return out


def _summaries(curves: Mapping, config: Mapping) -> dict:
    """The GI-LS arm's realised relative shift in its last epoch (nothing for the other arms)."""
    if "gils_relative_shift" not in curves:
        return {}
    return {"gils_relative_shift": float(curves["gils_relative_shift"][-1])}


_PAPER = (
    "Wang, Zhang, Xu & Guo (2024), §4.2–4.3, Tables 3–6 (small imbalanced defect sets, MT: GI-LS against the "
    "cross-entropy benchmark, LS, CutMix, Cutout, Mixup, PGD and FGSM augmentation)"
)

#: GI-LS's default shift, applied to every arm's test images by the probe metrics.
PROBE = {"alpha": 0.3, "gamma": 1e-3, "eta": 0.02, "steps": 10}

_COMMON = dict(
    model="digits_cnn",
    model_options={"width": 16},
    optimizer="adam",
    lr=LR_GRID[0],
    batch_size=32,
    val_fraction=0.2,
    probe=PROBE,
    lr_schedule=None,
    average_last=1,
)
#: The paper's schedule (× 0.3 every 20 epochs) and the mean over the last 3 epochs, for runs past 20 epochs.
_LONG = dict(lr_schedule="step:20:0.3", average_last=3)
_DIGITS = dict(_COMMON, defects="digits-MT", texture_size=16, probe_per_class=None)
_FASHION = dict(_COMMON, train_counts=_MT_TRAIN, probe_per_class=50)
#: A fifth of MT's counts (at least 3 a class: the stratified validation split needs 2), for the smoke preset.
_SMOKE_COUNTS = tuple(max(3, c // 5) for c in _MT_TRAIN)

_PRESETS = {
    "digits": {
        "smoke": dict(_DIGITS, probe_per_class=10, epochs=2, trials=1),
        "full": dict(_DIGITS, **_LONG, epochs=30, trials=8),
    },
    "fashion-mnist": {
        "smoke": dict(
            _FASHION, train_counts=_SMOKE_COUNTS, size=14, test_per_class=20, probe_per_class=10, epochs=2, trials=1
        ),
        "full": dict(_FASHION, **_LONG, size=14, test_per_class=None, epochs=30, trials=8),
        "gpu": dict(
            _FASHION,
            **_LONG,
            size=28,
            test_per_class=None,
            probe_per_class=200,
            epochs=60,
            trials=12,
            model="small_cnn",
            model_options={},
        ),
    },
}

_SHARED = {"lr": LR_GRID, "weight_decay": WD_GRID}
_GILS_GRID = {"lr": LR_GRID, "alpha": GILS_ALPHA_GRID, "steps": GILS_STEPS_GRID, "eta": GILS_ETA_GRID}
_GILS_MT = "GI-LS on MT 84.2 / 86.6 / 84.4 % (ResNet18 / 34 / 50, Table 3)"


def _claim(baseline: str, where: str, whose: str, scores: tuple, note: str = "") -> Claim:
    """GI-LS beats ``baseline``, whose MT top-1 accuracies (ResNet18 / 34 / 50) the paper gives as ``scores``; the
    paper's effect is the ResNet18 gap."""
    return Claim(
        f"GI-LS beats {baseline} on balanced accuracy",
        "balanced_accuracy",
        "GI-LS",
        baseline,
        paper=f"{where}: {_GILS_MT} vs {whose} {' / '.join(map(str, scores))} %{note}; the effect: ResNet18's gap "
        "in top-1 accuracy (ours: balanced accuracy on a Fashion-MNIST analogue)",
        paper_effect=round((84.2 - scores[0]) / 100, 4),
    )


GILS_EXPERIMENT = Experiment(
    name="gils",
    title="GI-LS against cross-entropy, label smoothing and five augmentations on a small imbalanced set",
    paper=_PAPER,
    arms=(
        Arm("CE", None, grid=_SHARED),
        Arm("LS", "LabelSmoothingStrategy", grid={**_SHARED, "alpha": LS_ALPHA_GRID}),
        Arm("Mixup", "MixupStrategy", grid={**_SHARED, "beta_param": MIX_GRID}),
        Arm("CutMix", "CutMixStrategy", grid={**_SHARED, "beta_param": MIX_GRID}),
        Arm("Cutout", "CutoutStrategy", grid={**_SHARED, "size": CUTOUT_GRID}),
        Arm("FGSM-aug", "AttackAugmentStrategy", {"attack": "fgsm"}, grid={**_SHARED, "eps": EPS_GRID}),
        Arm("PGD-aug", "AttackAugmentStrategy", {"attack": "pgd", "steps": 10}, grid={**_SHARED, "eps": EPS_GRID}),
        Arm("GI-LS", "GILSStrategy", {"gamma": 1e-3}, grid=_GILS_GRID),
    ),
    claims=(
        _claim("CE", "§4.3, Tables 3 and 5", "the cross-entropy benchmark's", (76.2, 75.0, 77.2)),
        _claim("LS", "§4.2, Tables 3–4", "LS's", (75.0, 76.0, 76.3), " (LS at GI-LS's tuned α, epochs)"),
        _claim("Mixup", "§4.3, Table 5", "Mixup's", (74.9, 76.0, 77.3)),
        _claim("CutMix", "§4.3, Table 5", "CutMix's", (75.9, 75.1, 76.6)),
        _claim("Cutout", "§4.3, Table 5", "Cutout's", (74.3, 74.7, 77.2)),
        _claim("FGSM-aug", "§4.3, Table 6", "FGSM augmentation's", (71.6, 71.8, 71.8), " (ε '8/225')"),
        _claim("PGD-aug", "§4.3, Table 6", "PGD augmentation's", (71.5, 71.5, 71.5), " (ε '8/225')"),
    ),
    data=_data,
    model=build_model,
    metrics=_metrics,
    select="balanced_accuracy",
    curves=_curves,
    summaries=_summaries,
    presets=_PRESETS,
    plain="CE",
)
