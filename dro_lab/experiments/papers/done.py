"""Sow et al.'s imbalanced robustness experiment (ICLR 2024, §4.1–4.2, Table 1 imbalanced columns, Fig. 1).

The paper trains on CIFAR-10 with an imbalance ratio of 0.2 — the first five classes keep 20 % of their
images, the "last five categories" (§4.2, Fig. 1) keep all — and measures on the untouched test set: the clean
accuracy (SA), the accuracy under PGD-20 (RA-PGD), the RA-PGD of the 30 % most vulnerable classes (RA-Tail-30,
§4.1) and, from Fig. 1, every class's RA-PGD. Here the same imbalance is applied to Fashion-MNIST (or the
embedded digits) and the test set keeps every class whole (1 000 images per class on Fashion-MNIST).

The arms, all L∞ PGD training with the same attack (ε, K steps, α = 2.5ε/K, random start):

* **AT** — Madry's PGD-AT (eq. 1);
* **DONE** — KL-DRO instance weights ω ∝ exp(ℓ/r) with CID's running average u (η) and CID's implicit term
  through the log-barrier attack (Algorithm 1, Proposition 1);
* **DONE (no implicit)** — the same weights without the implicit term (the "DONE-lite" of eq. 6);
* **GAIRAT** (λ) and **MAIL** (bias) — the heuristic instance-reweighted baselines of Table 1.

Every arm tunes the one shared learning-rate grid and its own knobs with the same number of trials, scored by
the class-balanced PGD robust accuracy on a validation split cut from the (imbalanced) training set. The arms'
options hold no epoch counts, so r is a constant (the paper decays it 10 → 1 → 0.1 at epochs 40 and 50 of 60,
App. B.1) and GAIRAT and MAIL reweight from the first epoch (their official codes start half-way).
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
from ._common import TEST_SEED, build_model, holdout, image_sets, per_class_subset

__all__ = ["DONE_EXPERIMENT", "TAIL_FRACTION"]

#: The L∞ radius of training and evaluation (inputs in [0, 1]) and the training attack's PGD steps.
EPS = 0.1
TRAIN_STEPS = 5
#: RA-Tail-30: the mean robust accuracy of the ⌈30 %⌉ most vulnerable classes (§4.1; 10 classes → 3, 43 → 13).
TAIL_FRACTION = 0.3

#: One learning-rate grid for every arm (SGD, momentum 0.9, constant); the first value is every arm's default.
LR_GRID = (0.02, 0.01, 0.05)
#: DONE's r: first the strategy's default 1, the middle of the paper's 10 → 1 → 0.1 schedule (App. B.1).
R_GRID = (1.0, 0.1, 0.3, 3.0, 10.0)
#: GAIRAT's λ (official default −1 first) and MAIL's bias (official default −1.5 first).
LAM_GRID = (-1.0, 0.0, 1.0)
BIAS_GRID = (-1.5, -0.5, -2.5)

#: What every arm shares: the training attack and the weight decay of the code DONE builds on (5e-4).
_SHARED = {"eps": EPS, "steps": TRAIN_STEPS, "weight_decay": 5e-4}


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
    """The training set with the paper's step imbalance (the minority classes keep ``imbalance_ratio``), a
    stratified validation split cut from it, and the whole (or a per-class subsampled) test set."""
    train, test = image_sets(dataset, seed, config)
    if dataset == "fashion-mnist":
        train, test = _resize(train, config["size"]), _resize(test, config["size"])
    train = make_imbalanced(
        train, classes=list(config["minority_classes"]), keep_fraction=config["imbalance_ratio"], generator=seed
    )
    info = {
        "minority_classes": list(config["minority_classes"]),
        "imbalance_ratio": config["imbalance_ratio"],
        "test_per_class": torch.bincount(test.y, minlength=test.num_classes).tolist(),
    }
    return holdout(train, test, config, seed, info)


def _metrics(model, dataset, config: Mapping) -> dict:
    """SA, RA-PGD-20, the balanced RA, RA-Tail-30, the worst class's RA and every class's RA (§4.1, Fig. 1);
    with ``aa_per_class`` > 0 also the AutoAttack-style ensemble's RA on a class-stratified subset."""
    report = robust_accuracy_report(
        model,
        dataset,
        attack="pgd",
        eps=EPS,
        steps=config["eval_steps"],
        batch_size=config["eval_batch_size"],
        tail_fraction=TAIL_FRACTION,
    )
    per_class = report["per_class_robust_accuracy"]
    out = {
        "clean_accuracy": report["clean_accuracy"],
        "robust_accuracy": report["robust_accuracy"],
        "balanced_robust_accuracy": float(np.nanmean(per_class)),
        "tail30_robust_accuracy": report["tail_robust_accuracy"],
        "worst_class_robust_accuracy": report["worst_class_robust_accuracy"],
    }
    out.update({f"class_{c}_robust_accuracy": a for c, a in enumerate(per_class)})
    if config.get("aa_per_class", 0):
        subset = per_class_subset(dataset, config["aa_per_class"], torch.Generator().manual_seed(TEST_SEED))
        gen = torch.Generator().manual_seed(TEST_SEED)
        aa = robust_accuracy_report(
            model,
            subset,
            attack="autoattack",
            eps=EPS,
            steps=config["aa_steps"],
            generator=gen,
            batch_size=config["eval_batch_size"],
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
)

#: Sizes: the embedded digits (8×8, every image, the test split whole) and Fashion-MNIST (average-pooled to 14×14
#: on the CPU presets, ``per_class`` training images drawn per class and seed before the imbalance, the test set
#: whole: 1 000 images per class) at full size on a GPU.
_DIGITS = dict(size=8, per_class=None, test_per_class=None, val_fraction=0.2, batch_size=32)
_FASHION = dict(size=14, test_per_class=None, val_fraction=0.1, batch_size=64)

_PRESETS = {
    "digits": {
        "smoke": {**_COMMON, **_DIGITS, "epochs": 6, "trials": 1, "aa_per_class": 0},
        "full": {**_COMMON, **_DIGITS, "epochs": 30, "trials": 3, "aa_per_class": 10},
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
        "full": {**_COMMON, **_FASHION, "per_class": 1500, "epochs": 10, "trials": 3, "aa_per_class": 10},
        "gpu": {
            **_COMMON,
            **_FASHION,
            "size": 28,
            "per_class": None,
            "epochs": 30,
            "batch_size": 128,
            "trials": 3,
            "aa_per_class": 50,
            "aa_steps": 100,
        },
    },
}

#: CID's averaging weight stays at η = 1 (the batch softmax): with η < 1 the weights of a batch sum to far less
#: than one, a silent rescaling of the learning rate (DONEStrategy warns) that the lr grid would have to undo.
_DONE_GRID = {"lr": LR_GRID, "r": R_GRID}

DONE_EXPERIMENT = Experiment(
    name="done",
    title="Doubly robust adversarial training (DONE) on an imbalanced image set",
    paper=_PAPER,
    arms=(
        Arm("AT", "AdversarialTrainingStrategy", _SHARED, grid={"lr": LR_GRID}),
        Arm("DONE", "DONEStrategy", {**_SHARED, "implicit": True}, grid=_DONE_GRID),
        Arm("DONE (no implicit)", "DONEStrategy", {**_SHARED, "implicit": False}, grid=_DONE_GRID),
        Arm("GAIRAT", "GAIRATStrategy", _SHARED, grid={"lr": LR_GRID, "lam": LAM_GRID}),
        Arm("MAIL", "MAILStrategy", _SHARED, grid={"lr": LR_GRID, "bias": BIAS_GRID}),
    ),
    claims=(
        Claim(
            "DONE raises the average PGD-20 robust accuracy over AT",
            "robust_accuracy",
            "DONE",
            "AT",
            paper="Table 1, imbalanced CIFAR-10: RA-PGD 48.13 (DONE-PGD) vs 42.37 (AT), +5.76 points",
        ),
        Claim(
            "DONE raises the robustness of the 30 % most vulnerable classes (RA-Tail-30) over AT",
            "tail30_robust_accuracy",
            "DONE",
            "AT",
            paper="Table 1, imbalanced CIFAR-10: RA-Tail-30 15.83 (DONE-PGD) vs 6.25 (AT); §4.2, Fig. 1: "
            "'+11% on average on the 3 most vulnerable classes'",
        ),
        Claim(
            "DONE raises the worst class's robust accuracy over AT",
            "worst_class_robust_accuracy",
            "DONE",
            "AT",
            paper="§1 and §4.2, Fig. 1: under imbalance AT's weakest class falls to about 0 %, DONE "
            "'can still boost the per class RA-PGD on the weak classes' (not tabulated)",
        ),
        Claim(
            "DONE beats MAIL on average PGD-20 robust accuracy",
            "robust_accuracy",
            "DONE",
            "MAIL",
            paper="Table 1, imbalanced CIFAR-10: RA-PGD 48.13 vs 45.64 (MAIL); §4.2: 'outperform all other "
            "baselines in terms of all three robustness metrics'",
        ),
        Claim(
            "DONE beats GAIRAT on average PGD-20 robust accuracy",
            "robust_accuracy",
            "DONE",
            "GAIRAT",
            paper="Table 1, imbalanced CIFAR-10: RA-PGD 48.13 vs 45.18 (GAIRAT)",
        ),
        Claim(
            "DONE beats MAIL on RA-Tail-30",
            "tail30_robust_accuracy",
            "DONE",
            "MAIL",
            paper="Table 1, imbalanced CIFAR-10: RA-Tail-30 15.83 vs 9.8 (MAIL)",
        ),
        Claim(
            "DONE beats GAIRAT on RA-Tail-30",
            "tail30_robust_accuracy",
            "DONE",
            "GAIRAT",
            paper="Table 1, imbalanced CIFAR-10: RA-Tail-30 17.19 (DONE-GD), 15.83 (DONE-PGD) vs 16.9 (GAIRAT)",
        ),
        Claim(
            "DONE keeps a competitive clean accuracy: no more than 2 points below AT",
            "clean_accuracy",
            "DONE",
            "AT",
            threshold=-0.02,
            paper="§4.2: 'while also maintaining a competitive standard accuracy'; Table 1, imbalanced: SA "
            "74.58 (DONE-PGD) vs 69.74 (AT)",
        ),
    ),
    data=_data,
    model=build_model,
    metrics=_metrics,
    select="balanced_robust_accuracy",
    curves=_curves,
    presets=_PRESETS,
)
