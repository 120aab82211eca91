"""Sow et al.'s imbalanced robustness experiment (ICLR 2024, §4.1–4.2, Table 1 imbalanced columns, Fig. 1).

The paper: CIFAR-10 whose first five classes keep 20 % of their images (imbalance ratio 0.2; the "last five
categories" of Fig. 1 keep all), ResNet-18, 60 epochs of SGD (momentum 0.9) under a cyclic learning rate peaking at
epoch 25, r = 10 → 1 → 0.1 at epochs 40 and 50 (App. B.1), hyper-parameters chosen on a 10 % hold-out; measured on
the untouched test set: the clean accuracy (SA), RA-PGD-20, RA-Tail-30 (the 30 % most vulnerable classes, §4.1),
RA-AA and every class's RA-PGD (Fig. 1). Here: the same imbalance on Fashion-MNIST (14×14 on a CPU) or the
embedded digits, a small CNN, the test set whole (1 000 images per class on Fashion-MNIST).

The arms, all L∞ PGD training with the same attack (ε, K steps, α = 2.5ε/K, random start):

* **AT** — Madry's PGD-AT (eq. 1), the plain arm;
* **DONE** — KL-DRO instance weights ω ∝ exp(ℓ/r) (η = 1) and CID's implicit term through the log-barrier attack
  (Algorithm 1, Proposition 1); **DONE (no implicit)** — the same weights alone (eq. 6);
* **GAIRAT** (λ) and **MAIL** (bias) — Table 1's heuristic reweightings, plain AT for the first half of training
  as in their official codes.

Every arm tunes the shared peak learning rate (the one-cycle schedule) jointly with its own knob, with the same
trials, scored by the class-balanced PGD robust accuracy on the validation split; r's grid holds the paper's
schedule (10, 1, 0.1), its steps at 2/3 and 5/6 of the run. Where we depart: the validation split (10 % of the
imbalanced training set, as the paper's) is topped up to 30 images of every class from unused training images
where it holds fewer (smoke presets; the digits hold out 25 %: their majority classes have no unused images) —
thinned like training it would score a class on 2 images. The AutoAttack-style ensemble runs once, at the end of a
final run, on 100 test images per class (all 450 digits). Epochs: AT at lr 0.05 (`full`, seed 0) reaches 65 % clean
test accuracy by epoch 25 of 30 (40 epochs: no higher) and then jumps 2–4 points between epochs; its mean over the
last 5 epochs rose 0.2 points per epoch over the 5 before — hence 30 epochs, and the last 3 averaged.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
import torch.nn.functional as F

from ...attacks import robust_accuracy_report
from ...data.datasets import ArrayDataset
from ...data.groups import make_imbalanced
from ..protocol import Arm, Claim, Experiment, Splits
from ._common import TEST_SEED, VAL_FLOOR, build_model, holdout, image_sets, per_class_subset, validation_floor

__all__ = ["DONE_EXPERIMENT", "TAIL_FRACTION", "r_milestones", "half_the_epochs"]

#: The L∞ radius of training and evaluation (inputs in [0, 1]) and the training attack's PGD steps.
EPS = 0.1
TRAIN_STEPS = 5
#: RA-Tail-30: the mean robust accuracy of the ⌈30 %⌉ most vulnerable classes (§4.1; 10 classes → 3, 43 → 13).
TAIL_FRACTION = 0.3

#: One grid of peak learning rates for every arm (SGD, momentum 0.9, one-cycle in full/gpu); the first is the default
#: (the smoke presets keep it constant).
LR_GRID = (0.02, 0.05, 0.1, 0.2)
#: DONE's r: the strategy's default 1, constants around it, and the paper's schedule 10 → 1 → 0.1 (App. B.1).
R_GRID = (1.0, 0.3, 3.0, (10.0, 1.0, 0.1))
#: GAIRAT's λ (official default −1 first) and MAIL's bias (official default −1.5 first).
LAM_GRID = (-1.0, 0.0, 1.0)
BIAS_GRID = (-1.5, -0.5, -2.5)

#: What every arm shares: the training attack and the weight decay of the code DONE builds on (5e-4).
_SHARED = {"eps": EPS, "steps": TRAIN_STEPS, "weight_decay": 5e-4}


def r_milestones(config: Mapping) -> tuple[int, int]:
    """The first epochs of r = 1 and r = 0.1 in the paper's schedule: 2/3 and 5/6 through (41 and 51 of 60)."""
    first = max(2, 2 * config["epochs"] // 3 + 1)
    return first, max(first + 1, 5 * config["epochs"] // 6 + 1)


def half_the_epochs(config: Mapping) -> int:
    """GAIRAT's and MAIL's burn-in: plain AT for the first half of training (their codes: 60 of 120 epochs)."""
    return config["epochs"] // 2


def _resize(dataset: ArrayDataset, size: int) -> ArrayDataset:
    """Images average-pooled to ``size`` × ``size`` (28 → 14 for the CPU presets); the labels untouched."""
    side = dataset.x.shape[-1]
    if size == side:
        return dataset
    if side % size:
        raise ValueError(f"size must divide the image side {side}, got {size}")
    x = F.avg_pool2d(dataset.x, side // size)
    return ArrayDataset(x, dataset.y, num_classes=dataset.num_classes)


def _data(dataset: str, seed: int, config: Mapping) -> Splits:
    """The training set with the paper's step imbalance (the minority classes keep ``imbalance_ratio``), a stratified
    validation split cut from it and topped up to ``VAL_FLOOR`` images of every class, and the test set."""
    pool, test = image_sets(dataset, seed, {**config, "per_class": None})
    if dataset == "fashion-mnist":
        pool, test = _resize(pool, config["size"]), _resize(test, config["size"])
    pool = ArrayDataset(pool.x, pool.y, torch.arange(len(pool)), num_classes=pool.num_classes)  # groups: pool index
    train = per_class_subset(pool, config["per_class"], torch.Generator().manual_seed(seed))  # = image_sets' draw
    classes, ratio = list(config["minority_classes"]), config["imbalance_ratio"]
    train = make_imbalanced(train, classes=classes, keep_fraction=ratio, generator=seed)
    used = torch.zeros(len(pool), dtype=torch.bool)
    used[train.groups] = True
    test_counts = torch.bincount(test.y, minlength=test.num_classes).tolist()
    info = {"minority_classes": classes, "imbalance_ratio": ratio, "test_per_class": test_counts}
    splits = holdout(ArrayDataset(train.x, train.y, num_classes=train.num_classes), test, config, seed, info)
    splits.val = validation_floor(pool, used, splits.val, range(pool.num_classes), VAL_FLOOR, seed)
    splits.info.update(val=len(splits.val), val_per_class=torch.bincount(splits.val.y).tolist())
    return splits


def _pgd_metrics(model, dataset, config: Mapping) -> dict:
    """SA, RA-PGD-20, the balanced RA, RA-Tail-30, the worst class's RA and every class's RA (§4.1, Fig. 1)."""
    report = robust_accuracy_report(model, dataset, attack="pgd", eps=EPS, steps=config["eval_steps"],
                                    batch_size=config["eval_batch_size"], tail_fraction=TAIL_FRACTION)  # fmt: skip
    per_class = report["per_class_robust_accuracy"]
    out = {
        "clean_accuracy": report["clean_accuracy"],
        "robust_accuracy": report["robust_accuracy"],
        "balanced_robust_accuracy": float(np.nanmean(per_class)),
        "tail30_robust_accuracy": report["tail_robust_accuracy"],
        "worst_class_robust_accuracy": report["worst_class_robust_accuracy"],
    }
    out.update({f"class_{c}_robust_accuracy": a for c, a in enumerate(per_class)})
    return out


def _metrics(model, dataset, config: Mapping) -> dict:
    """The PGD metrics and, with ``aa_per_class`` > 0, the AutoAttack-style ensemble's RA on that many test images
    of each class (one batch) beside PGD-20's on the same images: measured once, at the end of a final run."""
    out = _pgd_metrics(model, dataset, config)
    if config.get("aa_per_class", 0):
        subset = per_class_subset(dataset, config["aa_per_class"], torch.Generator().manual_seed(TEST_SEED))
        gen = torch.Generator().manual_seed(TEST_SEED)
        aa = robust_accuracy_report(
            model, subset, attack="autoattack", eps=EPS, steps=config["aa_steps"], generator=gen, batch_size=len(subset)
        )
        pgd = robust_accuracy_report(model, subset, attack="pgd", eps=EPS, steps=config["eval_steps"])
        out["autoattack_robust_accuracy"] = aa["robust_accuracy"]
        out["autoattack_subset_pgd_accuracy"] = pgd["robust_accuracy"]  # PGD on the same images: the gap
    return out


def _curves(record: dict, config: Mapping) -> dict:
    out = {"test_accuracy": record["test_accuracy"], "test_worst_class_accuracy": record["test_worst_class_accuracy"]}
    if "done_ess_fraction" in record:  # DONE's arms: how many examples effectively carry a batch
        out["done_ess_fraction"] = record["done_ess_fraction"]
    return out


_PAPER = (
    "Sow, Lin, Wang & Liang (ICLR 2024), §4.1–4.2, Table 1 (imbalanced CIFAR-10, ratio 0.2) and Fig. 1 "
    "(per-class RA-PGD)"
)

_COMMON = dict(
    minority_classes=(0, 1, 2, 3, 4),
    imbalance_ratio=0.2,
    model="digits_cnn",
    lr=LR_GRID[0],
    momentum=0.9,
    optimizer="sgd",
    eval_steps=20,
    eval_batch_size=500,
    aa_steps=20,
    lr_schedule=None,
    average_last=1,
)
#: The full and gpu presets: the paper's cyclic learning rate, the last 3 epochs averaged, 4 trials per arm (every
#: lr, every r; a quarter of DONE's grid), the AutoAttack-style ensemble on 100 test images per class.
_FULL = dict(lr_schedule="one_cycle", average_last=3, trials=4, aa_per_class=100)

#: Sizes: the embedded digits (8×8, every image, the test split whole) and Fashion-MNIST (average-pooled to 14×14
#: on the CPU presets, ``per_class`` training images drawn per class and seed before the imbalance, the test set
#: whole: 1 000 images per class) at full size on a GPU for the paper's 60 epochs.
_DIGITS = dict(size=8, per_class=None, test_per_class=None, val_fraction=0.25, batch_size=32)
_FASHION = dict(size=14, test_per_class=None, val_fraction=0.1, batch_size=64)
_GPU = dict(size=28, per_class=None, epochs=60, batch_size=128, aa_steps=100)

_PRESETS = {
    "digits": {
        "smoke": {**_COMMON, **_DIGITS, "epochs": 6, "trials": 1, "aa_per_class": 0},
        "full": {**_COMMON, **_DIGITS, **_FULL, "epochs": 30},
    },
    "fashion-mnist": {
        "smoke": {
            **_COMMON,
            **_FASHION,
            "per_class": 100,
            "test_per_class": 10,
            "epochs": 1,
            "trials": 1,
            "aa_per_class": 1,
            "aa_steps": 5,
        },
        "full": {**_COMMON, **_FASHION, **_FULL, "per_class": 1500, "epochs": 30},
        "gpu": {**_COMMON, **_FASHION, **_FULL, **_GPU},
    },
}

#: CID's averaging weight stays at η = 1 (the batch softmax): with η < 1 the weights of a batch sum to far less
#: than one, a silent rescaling of the learning rate (DONEStrategy warns) that the lr grid would have to undo.
_DONE_GRID = {"lr": LR_GRID, "r": R_GRID}
_DONE = {**_SHARED, "r_milestones": r_milestones}  # where the schedule in R_GRID steps down
_BURN_IN = {**_SHARED, "burn_in_epochs": half_the_epochs}

#: DONE against each baseline: text, metric, baseline, where the paper says it, and its effect (Table 1, imbalanced
#: CIFAR-10: DONE-PGD, whose inner solver ours is, minus the baseline, as a fraction).
_T1 = "Table 1, imbalanced CIFAR-10: "
_CLAIMS = (
    ("DONE raises the average PGD-20 robust accuracy over AT", "robust_accuracy", "AT",
     _T1 + "RA-PGD 48.13 (DONE-PGD) vs 42.37 (AT), +5.76 points", {"paper_effect": 0.0576}),
    ("DONE raises the robustness of the 30 % most vulnerable classes (RA-Tail-30) over AT", "tail30_robust_accuracy",
     "AT", _T1 + "RA-Tail-30 15.83 (DONE-PGD) vs 6.25 (AT); §4.2, Fig. 1: '+11% on average on the 3 most "
     "vulnerable classes'", {"paper_effect": 0.0958}),
    ("DONE raises the worst class's robust accuracy over AT", "worst_class_robust_accuracy", "AT",
     "§1 and §4.2, Fig. 1: under imbalance AT's weakest class falls to about 0 %, DONE 'can still boost the per "
     "class RA-PGD on the weak classes' (not tabulated)", {}),
    ("DONE beats MAIL on average PGD-20 robust accuracy", "robust_accuracy", "MAIL", _T1 + "RA-PGD 48.13 vs 45.64 "
     "(MAIL); §4.2: 'outperform all other baselines in terms of all three robustness metrics'",
     {"paper_effect": 0.0249}),
    ("DONE beats GAIRAT on average PGD-20 robust accuracy", "robust_accuracy", "GAIRAT",
     _T1 + "RA-PGD 48.13 vs 45.18 (GAIRAT)", {"paper_effect": 0.0295}),
    ("DONE beats MAIL on RA-Tail-30", "tail30_robust_accuracy", "MAIL", _T1 + "RA-Tail-30 15.83 vs 9.8 (MAIL)",
     {"paper_effect": 0.0603}),
    ("DONE beats GAIRAT on RA-Tail-30", "tail30_robust_accuracy", "GAIRAT", _T1 + "RA-Tail-30 15.83 (DONE-PGD) vs "
     "16.9 (GAIRAT), −1.07 points (DONE-GD: 17.19)", {"paper_effect": -0.0107}),
    ("DONE keeps a competitive clean accuracy: no more than 2 points below AT", "clean_accuracy", "AT",
     "§4.2: 'while also maintaining a competitive standard accuracy'; " + _T1 + "SA 74.58 (DONE-PGD) vs 69.74 (AT)",
     {"threshold": -0.02, "paper_effect": 0.0484}),
)  # fmt: skip

DONE_EXPERIMENT = Experiment(
    name="done",
    title="Doubly robust adversarial training (DONE) on an imbalanced image set",
    paper=_PAPER,
    arms=(
        Arm("AT", "AdversarialTrainingStrategy", _SHARED, grid={"lr": LR_GRID}),
        Arm("DONE", "DONEStrategy", {**_DONE, "implicit": True}, grid=_DONE_GRID),
        Arm("DONE (no implicit)", "DONEStrategy", {**_DONE, "implicit": False}, grid=_DONE_GRID),
        Arm("GAIRAT", "GAIRATStrategy", _BURN_IN, grid={"lr": LR_GRID, "lam": LAM_GRID}),
        Arm("MAIL", "MAILStrategy", _BURN_IN, grid={"lr": LR_GRID, "bias": BIAS_GRID}),
    ),
    claims=tuple(Claim(t, m, "DONE", b, paper=p, **kw) for t, m, b, p, kw in _CLAIMS),
    data=_data,
    model=build_model,
    metrics=_metrics,
    select="balanced_robust_accuracy",
    curves=_curves,
    presets=_PRESETS,
    tail_metrics=_pgd_metrics,
    plain="AT",
)
