r"""Feoktistov et al.'s imbalanced-data experiment (§6.1, Fig. 1, App. B.1): ALSO against its baselines.

**The paper.** CIFAR-10 classes grouped by parity; the odd ones thinned out of the training and validation
sets until :math:`n_{\text{even}}/n_{\text{odd}} = \mathrm{uc}`, a balanced test set, ResNet-18, no learning-rate
schedule, one π-weight per training example (:math:`c = n`) with the class-balanced prior
:math:`\hat\pi_i\propto 1/N_{y_i}` as prior and start. Every method is tuned "for the same number of iterations"
(200 TPE trials; Table 2: learning rate, weight decay, η_π, τ) with α fixed to 1 (App. C.3: descent–ascent,
α = 0, performs "significantly lower"). Fig. 1: "ALSO outperforms all the compared baselines" (a figure only).

**Here.** Fashion-MNIST (or the embedded digits), all ten classes: every class of ``config["minority_classes"]``
(the odd labels) keeps ``max(1, ⌊per_class / ratio⌋)`` training images, every other class ``per_class``; the
test set stays balanced; ``ratio`` is the paper's uc (a sweep calls ``run_experiment(ALSO_EXPERIMENT, ratio=r)``).
The validation split is ``val_fraction`` of each class's draw, thinned like the training split as in the paper,
**but then topped up** from the unused images to ``VAL_FLOOR`` = 30 of every class: the claims are on the worst
class, and a thinned class of 3 validation images would rank the settings by single images. Tuning maximises
the validation balanced accuracy; the final metrics are the mean of the last ``average_last`` epochs. Metrics:
worst-class, balanced and average test accuracy, the minority classes' mean, and per epoch the worst-class
accuracy (and, for ALSO and DRAGO, how far π has moved from its prior, KL(π‖π̂)).

**Arms, tuned alike.** Every arm gets the same trials on one shared learning-rate grid and one weight-decay grid
(coupled L2 for the Adam arms and ALSO, as in the paper's code; decoupled for the AdamW arms), plus at most four
settings of its own knobs, so that every grid is covered to at least a quarter; each arm's special case comes
first (Spectral Risk at ``n_draws`` = 1 and FastDRO at CVaR level 1 are ERM, RECOVER's t = 0.01 nearly so, DRAGO
at η_π = 0 is SGD on the prior's weights). ALSO runs at the paper's α = 1 with η_π > 0: frozen at its prior it
would be Static Weights, which is its own arm. Two values each of η_π and τ suffice where App. C.2 finds ALSO
"largely insensitive" to them. DRAGO, the paper code's plain-SGD adaptation, has its own SGD step grid.

**The π step scale.** Algorithm 5 feeds π the unbiased minibatch estimate of the group losses, scaled by
:math:`s = c/M` (App. A), so a visit moves an example's log-weight by :math:`\eta_\pi s\,\ell` and the
stationary π is :math:`\hat\pi\,e^{\ell/\tau}`, as ``dro_lab.ALSO`` does; the paper's imbalance code sets
:math:`s = 1`, the same π trajectory at :math:`(\eta_\pi M/c,\ \tau c/M)` here (Adam is invariant to the
constant factor on θ's loss up to ε, not the coupled weight decay). With c ≈ 6 000 and M = 64 (full preset),
c/M ≈ 100 and a run is T ≈ 3 000 steps: at η_π = 10⁻³ π relaxes to its stationary point within the run
(η_π τ T ≈ 3 at τ = 1), at 10⁻⁴ it stays near its prior (ratio 100, seed 0: KL(π‖π̂) ≈ 0.01 at the end, 0.15
at 10⁻³ and τ = 1, 1.1 at τ = 0.1; at 10⁻² π collapses onto a few examples); the code's default, 10⁻³ at
s = 1, is 10⁻⁵ here. τ = 1 is the code's default 10⁻², τ = 0.1 its split-learning default 10⁻³; β = 1/τ is the
course's inverse temperature.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from ..._validation import check_int, check_number
from ...data.datasets import ArrayDataset
from ..protocol import Arm, Claim, Experiment, Splits
from ._common import VAL_FLOOR, build_model, class_metrics, image_sets, validation_floor

__all__ = [
    "ALSO_EXPERIMENT",
    "LR_GRID",
    "WD_GRID",
    "ADAMW_WD_GRID",
    "SGD_LR_GRID",
    "PI_LR_GRID",
    "TAU_GRID",
    "imbalanced_counts",
]

#: Adam's learning rate, shared by every Adam-family arm; Adam's default first.
LR_GRID = (1e-3, 1e-4, 3e-4, 3e-3)
#: Coupled L2 (Adam, Upsampling, Static Weights, online group DRO, ALSO); none first.
WD_GRID = (0.0, 1e-4, 1e-3)
#: Decoupled weight decay (the AdamW arms); none first.
ADAMW_WD_GRID = (0.0, 1e-2, 1e-1)
#: DRAGO's plain-SGD step (its code default first).
SGD_LR_GRID = (0.01, 0.03, 0.1, 0.3, 1.0)
#: η_π at the unbiased scale s = c/M (× c/M gives the paper code's s = 1 units, see the module docstring).
PI_LR_GRID = (1e-3, 1e-4)
#: τ at the scale s = c/M (β = 1/τ per unit of loss): the paper code's two defaults.
TAU_GRID = (1.0, 0.1)

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
    validation images, disjoint, the validation part then topped up to ``VAL_FLOOR`` images of every class
    from the images left over."""
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
    val = validation_floor(pool, train_mask | val_mask, pool.subset(val_mask), range(len(counts)), VAL_FLOOR, seed)
    return pool.subset(train_mask), val


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
        average_last=1,
        lr_schedule=None,  # the paper: "We do not apply learning rate schedules"
    )
    return {**base, **kw}


_PRESETS = {
    "digits": {
        "smoke": _preset(per_class=60, epochs=10, trials=1, model_options={"hidden": [64]}),
        "full": _preset(per_class=100, epochs=100, trials=12, average_last=3, model_options={"hidden": [64]}),
    },
    "fashion-mnist": {
        "smoke": _preset(per_class=100, epochs=2, trials=1, test_per_class=100),
        "full": _preset(per_class=1200, epochs=30, trials=12, average_last=3),
        "gpu": _preset(
            per_class=4800, epochs=30, trials=15, average_last=3, batch_size=128, model="small_cnn", model_options={}
        ),
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
        grid={**_ADAMW, "size": (1.0, 0.5, 0.2, 0.05)},
    ),
    Arm(
        "RECOVER",
        "RecoverStrategy",
        {"optimizer": "adamw", "clip": 10.0, "warmup_steps": 100},
        grid={**_ADAMW, "t": (0.01, 0.1, 0.3, 1.0)},
    ),
    Arm(
        "DRAGO",
        "GroupDROStrategy",
        {"method": "drago", "optimizer": "sgd", **_PER_EXAMPLE},
        grid={"lr": SGD_LR_GRID, "pi_lr": (0.0, *PI_LR_GRID), "tau": TAU_GRID},
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
        {"method": "also", "alpha": 1.0, **_PER_EXAMPLE},
        grid={**_ADAM, "pi_lr": PI_LR_GRID, "tau": TAU_GRID},
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
    plain="ERM (Adam)",
)
