r"""Feoktistov et al.'s imbalanced-data experiment (§6.1, Fig. 1, App. B.1): ALSO against its baselines.

**The paper.** CIFAR-10 classes grouped by parity; the odd ones thinned out of the training and validation
sets until :math:`n_{\text{even}}/n_{\text{odd}} = \mathrm{uc}`, a balanced test set, ResNet-18, one π-weight per
training example (:math:`c = n`) with the class-balanced prior :math:`\hat\pi_i\propto 1/N_{y_i}` as prior and
start (App. B.1: "This choice results in a significant improvement in the performance"). Every method is tuned
"for the same number of iterations" (§6; 200 TPE trials in App. B.1, Table 2: learning rate, weight decay,
η_π, τ) and α is fixed to 1. Fig. 1: "ALSO outperforms all the compared baselines … particularly noticeable
for large values of the unbalanced coefficient" (a figure only, with no values in the text).

**Here.** Fashion-MNIST (or the embedded digits), all ten classes kept: every class of
``config["minority_classes"]`` (the odd labels, the paper's parity choice) keeps
``max(1, ⌊per_class / ratio⌋)`` training images, every other class ``per_class``; the validation split is
thinned the same way (``val_fraction`` of each class's pool) and the test set stays balanced. ``ratio`` is the
paper's uc: the full preset runs one ratio, and a sweep calls ``run_experiment(ALSO_EXPERIMENT, ratio=r)``
per ratio. Metrics: worst-class, balanced and average test accuracy, the minority classes' mean accuracy,
and per epoch the worst-class accuracy (and, for ALSO and DRAGO, the radius KL(π‖π̂) π has reached).
Tuning maximises the validation balanced accuracy (the mean of the class accuracies: a thinned class of the
validation split holds a handful of images, too few for its accuracy alone to rank the settings).

**Arms, tuned alike.** Every arm gets the same number of trials on the validation split; its grid is on log
scales and its first point is its special case. The Adam-family arms share one learning-rate grid and one
weight-decay grid (coupled L2 for Adam, Upsampling, Static Weights, online group DRO and ALSO, as the
paper's Adam baseline and ALSO's code; decoupled for the AdamW arms — ERM (AdamW), and Spectral Risk,
FastDRO and RECOVER, which the paper's code trains with AdamW). DRAGO is the paper code's plain-SGD
adaptation and has an SGD step grid (it applies no weight decay). Special cases first: ALSO at η_π = 0 and
α = 0 (π frozen at the class-balanced prior: Static Weights up to float rounding; App. C.3's descent–ascent
α = 0 is in the grid too), DRAGO at η_π = 0, Spectral Risk at ``n_draws`` = 1 (a flat spectrum: ERM),
FastDRO at CVaR level 1 (the mean: ERM), RECOVER at a tilt t = 0.01 (≈ ERM; t must be > 0), online group
DRO at Sagawa et al.'s step 0.01.

**The π step scale.** Algorithm 5 (lines 5, 7) feeds π the unbiased minibatch estimate of eq. 4's group
losses, :math:`\hat g_\pi=s\sum_b f_{j_b,i_b}e_{j_b}` with :math:`s=c/M` (App. A), so one visit moves an
example's log-weight by :math:`\eta_\pi s\,\ell` and the stationary π is eq. 4's
:math:`\pi^\star\propto\hat\pi\,e^{\ell/\tau}`; ``dro_lab.ALSO`` does exactly this (``loss_scale=None``), as
does the official ``also.py`` (``loss_scale = n_groups / batch_size``). The paper's imbalance code instead
overrides ``loss_scale = 1`` (with Adam's ε = 1e-20). Option I's update,
:math:`\log\pi\leftarrow(\log\pi+\eta_\pi\tau\log\hat\pi+\eta_\pi s\,\ell)/(1+\eta_\pi\tau)`, depends on
(η_π s, η_π τ) only, so the code's :math:`(\eta_\pi,\tau)` at s = 1 is the same π trajectory as
:math:`(\eta_\pi M/c,\ \tau\,c/M)` here (θ's step differs by the constant factor c/M on the loss, to which
Adam is invariant up to ε, while the coupled weight decay weighs c/M times more against the loss at s = 1).
With c = n = 6 600 training images and M = 64 (full preset, ratio 10), c/M ≈ 103: the η_π grid below,
``PI_LR_GRID`` = 0, 10⁻⁵ … 10⁻¹, spans the code's η_π ≈ 0, 10⁻³ … 10 (its default 10⁻³ included, and every
step from "π never leaves the prior" to "π jumps to a few examples"), and ``TAU_GRID`` = 0.1, 1, 10 is the
code's τ ≈ 0.001 … 0.1 (its default 10⁻² ≈ our 1). In our units β = 1/τ is the
course's inverse temperature on the per-example loss.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from ..._validation import check_int, check_number
from ...data.datasets import ArrayDataset
from ..protocol import Arm, Claim, Experiment, Splits
from ._common import build_model, class_metrics, image_sets

__all__ = [
    "ALSO_EXPERIMENT",
    "LR_GRID",
    "WD_GRID",
    "ADAMW_WD_GRID",
    "PI_LR_GRID",
    "TAU_GRID",
    "ALPHA_GRID",
    "imbalanced_counts",
]

#: Adam's learning rate, shared by every Adam-family arm; Adam's default first.
LR_GRID = (1e-3, 1e-4, 3e-4, 3e-3, 1e-2)
#: Coupled L2 (Adam, Upsampling, Static Weights, online group DRO, ALSO); none first.
WD_GRID = (0.0, 1e-4, 1e-3)
#: Decoupled weight decay (the AdamW arms); none first.
ADAMW_WD_GRID = (0.0, 1e-2, 1e-1)
#: DRAGO's plain-SGD step (its code default first).
SGD_LR_GRID = (0.01, 0.03, 0.1, 0.3, 1.0)
#: η_π at the unbiased scale s = c/M (× c/M gives the paper code's s = 1 units, see the module docstring); 0 = π frozen.
PI_LR_GRID = (0.0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)
#: τ at the scale s = c/M (β = 1/τ per unit of loss).
TAU_GRID = (1.0, 0.1, 10.0)
#: ALSO's optimism: descent–ascent (the special case) first, then the paper's α = 1.
ALPHA_GRID = (0.0, 1.0)

_ADAM = {"lr": LR_GRID, "weight_decay": WD_GRID}
_ADAMW = {"lr": LR_GRID, "weight_decay": ADAMW_WD_GRID}
_PER_EXAMPLE = {"grouping": "sample", "prior": "class_balanced"}


def imbalanced_counts(num_classes: int, config: Mapping) -> list[int]:
    """Training images per class: ``max(1, ⌊per_class / ratio⌋)`` for the minority classes, ``per_class`` for
    the others (the paper's code keeps ⌊n_0 / uc⌋, at least 1, of the thinned group)."""
    per_class = check_int(config["per_class"], "per_class", low=1)
    ratio = check_number(config["ratio"], "ratio", low=1.0)
    minority = _minority(num_classes, config)
    return [max(1, math.floor(per_class / ratio)) if c in minority else per_class for c in range(num_classes)]


def _minority(num_classes: int, config: Mapping) -> set[int]:
    classes = [check_int(c, "minority_classes[i]", low=0, high=num_classes - 1) for c in config["minority_classes"]]
    if not classes or len(classes) >= num_classes:
        raise ValueError(f"minority_classes must name some but not all of the {num_classes} classes, got {classes}")
    return set(classes)


def _draw(pool: ArrayDataset, counts: list[int], val_fraction: float, seed: int) -> tuple[ArrayDataset, ArrayDataset]:
    """Per class, a seeded draw of ``counts[c]`` training and ``counts[c]·f/(1−f)`` (rounded half up, ≥ 1)
    validation images, disjoint; both parts keep the pool's order."""
    generator = torch.Generator().manual_seed(seed)
    y = pool.y.cpu()
    train_mask = torch.zeros(len(pool), dtype=torch.bool)
    val_mask = torch.zeros(len(pool), dtype=torch.bool)
    for c, count in enumerate(counts):
        members = (y == c).nonzero().squeeze(1)
        n_val = max(1, math.floor(count * val_fraction / (1.0 - val_fraction) + 0.5))
        if count + n_val > members.numel():
            raise ValueError(
                f"class {c} has {members.numel()} images, fewer than the {count} training + {n_val} validation "
                "images asked for: lower per_class"
            )
        order = members[torch.randperm(members.numel(), generator=generator)]
        train_mask[order[:count]] = True
        val_mask[order[count : count + n_val]] = True
    return pool.subset(train_mask), pool.subset(val_mask)


def _data(dataset: str, seed: int, config: Mapping) -> Splits:
    val_fraction = check_number(
        config["val_fraction"], "val_fraction", low=0.0, high=1.0, low_open=True, high_open=True
    )
    pool, test = image_sets(dataset, seed, {**config, "per_class": None})
    counts = imbalanced_counts(pool.num_classes, config)
    train, val = _draw(pool, counts, val_fraction, seed)
    info = {
        "ratio": float(config["ratio"]),
        "minority_classes": sorted(_minority(pool.num_classes, config)),
        "train_per_class": torch.bincount(train.y, minlength=train.num_classes).tolist(),
        "val_per_class": torch.bincount(val.y, minlength=val.num_classes).tolist(),
        "test": len(test),
    }
    return Splits(train, val, test, info)


def _metrics(model, dataset, config: Mapping) -> dict:
    out = class_metrics(model, dataset, config)
    minority = sorted(_minority(dataset.num_classes, config))
    out["minority_accuracy"] = sum(out[f"class_{c}_accuracy"] for c in minority) / len(minority)
    return out


def _curves(record: dict, config: Mapping) -> dict:
    per_class = record["test_per_class_accuracy"]
    present = [a for a in per_class if a == a]
    minority = sorted(_minority(len(per_class), config))
    out = {
        "worst_class_accuracy": record["test_worst_class_accuracy"],
        "balanced_accuracy": sum(present) / len(present),
        "accuracy": record["test_accuracy"],
        "minority_accuracy": sum(per_class[c] for c in minority) / len(minority),
    }
    if "pi_kl_to_prior" in record:  # ALSO and DRAGO: how far π has moved from its prior, KL(π‖π̂)
        out["pi_kl_to_prior"] = record["pi_kl_to_prior"]
    return out


_ODD = [1, 3, 5, 7, 9]  # lists, not tuples: a result's config reads back from JSON unchanged


def _preset(**kw) -> dict:
    base = dict(
        minority_classes=list(_ODD),
        ratio=10.0,
        val_fraction=0.2,
        batch_size=64,
        lr=1e-3,
        optimizer="adam",
        model="mlp",
        model_options={"hidden": [128]},
        size=8,
        test_per_class=None,
    )
    return {**base, **kw}


_PRESETS = {
    "digits": {
        "smoke": _preset(per_class=60, epochs=10, trials=1, model_options={"hidden": [64]}),
        "full": _preset(per_class=100, epochs=100, trials=12, model_options={"hidden": [64]}),
    },
    "fashion-mnist": {
        "smoke": _preset(per_class=100, epochs=2, trials=1, test_per_class=100),
        "full": _preset(per_class=1200, epochs=30, trials=12),
        "gpu": _preset(per_class=4800, epochs=30, trials=15, batch_size=128, model="small_cnn", model_options={}),
    },
}

_PAPER = (
    "Feoktistov et al. (2025), ALSO, §6.1, Fig. 1 and App. B.1 (unbalanced data: every method tuned alike, "
    "π per example with a class-balanced prior)"
)

_ARMS = (
    Arm("ERM (Adam)", None, {"optimizer": "adam"}, grid=_ADAM),
    Arm("ERM (AdamW)", None, {"optimizer": "adamw"}, grid=_ADAMW),
    Arm("Upsampling", "UpsamplingStrategy", {"optimizer": "adam"}, grid=_ADAM),
    Arm("Static Weights", "StaticWeightsStrategy", {"optimizer": "adam"}, grid=_ADAM),
    Arm(
        "Spectral Risk",
        "SpectralRiskStrategy",
        {"optimizer": "adamw", "shift_cost": 1.0, "penalty": "kl"},
        grid={**_ADAMW, "n_draws": (1.0, 2.0, 4.0, 8.0)},
    ),
    Arm(
        "FastDRO (CVaR)",
        "FastDROStrategy",
        {"optimizer": "adamw", "kind": "cvar"},
        grid={**_ADAMW, "size": (1.0, 0.5, 0.2, 0.1, 0.05)},
    ),
    Arm(
        "RECOVER",
        "RecoverStrategy",
        {"optimizer": "adamw", "clip": 10.0, "warmup_steps": 100},
        grid={**_ADAMW, "t": (0.01, 0.1, 0.3, 1.0, 3.0)},
    ),
    Arm(
        "DRAGO",
        "GroupDROStrategy",
        {"method": "drago", "optimizer": "sgd", **_PER_EXAMPLE},
        grid={"lr": SGD_LR_GRID, "pi_lr": PI_LR_GRID, "tau": TAU_GRID},
    ),
    Arm(
        "Group DRO (online)",
        "OnlineGroupDROStrategy",
        {"optimizer": "adam", "grouping": "class"},
        grid={**_ADAM, "step_size": (0.01, 0.001, 0.1, 1.0)},
    ),
    Arm(
        "ALSO",
        "GroupDROStrategy",
        {"method": "also", **_PER_EXAMPLE},
        grid={**_ADAM, "pi_lr": PI_LR_GRID, "tau": TAU_GRID, "alpha": ALPHA_GRID},
    ),
)

_FIG1 = (
    "§6.1, Fig. 1: 'ALSO outperforms all the compared baselines' (CIFAR-10, ResNet-18; a figure, no values in the text)"
)
_OFF_PAPER = "beyond the paper (mentioned, not run, in §1): ALSO against online group DRO (Sagawa et al., 2020)"

ALSO_EXPERIMENT = Experiment(
    name="also",
    title="ALSO against its baselines on imbalanced classes",
    paper=_PAPER,
    arms=_ARMS,
    claims=tuple(
        Claim(
            f"ALSO beats {arm.name} on worst-class test accuracy",
            "worst_class_accuracy",
            "ALSO",
            arm.name,
            paper=_OFF_PAPER if arm.name.startswith("Group DRO") else _FIG1,
        )
        for arm in _ARMS
        if arm.name != "ALSO"
    ),
    data=_data,
    model=build_model,
    metrics=_metrics,
    select="balanced_accuracy",
    curves=_curves,
    presets=_PRESETS,
)
