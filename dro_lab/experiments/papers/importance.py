"""Lahire's importance-sampling experiment (§4, App. F–G, Fig. 2–3, Table 1): u, p^GN and p^{1/2} under four optimizers.

The paper (§4): MNIST "zero or one" with 50 training images per class (N = 100), the App. F CNN
(:class:`dro_lab.models.SmallCNN`), batch 5, learning rate 0.01, 300 steps, 45 runs, for SGD, SGD with momentum 0.5,
RMSProp and Adam (PyTorch's other defaults). Here: Fashion-MNIST's labels 0 and 1 (the same pair, as easy as 0 against
1 on MNIST) or the embedded digits 0 and 1 upsampled to 28×28; 15 epochs of ⌈100/5⌉ = 20 draws are the 300 steps;
the test set is the pair's whole test split (250 images per class in ``protocol``: no claim reads it), the same for
every seed. Tuning scores a validation set drawn from the pair's unused training images, not a share of N = 100 thinned
like the training set (100 images per class in ``full``; the paper tunes nothing).

The arms (scheme × optimizer, :class:`dro_lab.ImportanceSamplingStrategy`, eq. 2 with the weights 1/(N p_i)):
**u** (uniform: ERM's batches, nothing scored), **p^GN** (p ∝ exact per-sample gradient norms over all N before every
step, §2.1; mixed with u at 10⁻⁹ so that a vanishing gradient keeps a positive probability), **p^1/2** (the mean of
p^GN and u, §3.1; SGD and SGD M only, as in Table 1), and **SGD u+eval**: uniform draws after a forward pass over all
N before every step (the loss scores mixed in at 10⁻⁹), what a uniform run costs that evaluates the loss each step.

The ``protocol`` preset is the paper's (lr 0.01 for every arm, untuned); ``full`` and ``gpu`` tune every arm over the
whole learning-rate grid (5 trials), at a constant lr as in §4. The training loss is the full loss over all N after
every epoch (fit's ``eval_train``: the empirical loss of §4), not the importance-weighted batch mean. The cost is read
three ways: seconds per epoch against plain SGD (u) and against SGD u+eval, both judged as Table 1's band, and FLOPs
per step counted by torch's ``FlopCounterMode`` (``flops_vs_plain``: a step's FLOPs, its scoring pass included, over
plain SGD's). The seconds time the training steps only (the full-loss and test passes at the epoch's end fall
outside them), so the three readings measure the same work; time them one run at a time, at a fixed thread count.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from ..._validation import check_int
from ...data.datasets import ArrayDataset
from ...data.embedded import load_digits
from ...data.fashion import load_fashion_mnist
from ...engine.loop import fit
from ...metrics import evaluate
from ...strategies import ImportanceSamplingStrategy
from ..protocol import Arm, Claim, Experiment, Splits
from ._common import TEST_SEED, build_model

__all__ = ["IMPORTANCE_EXPERIMENT", "OPTIMIZERS", "SCHEMES", "LR_GRID", "arm_name"]

#: One learning-rate grid for every arm (log-spaced): the paper's 0.01 (§4) first; 0.001 is Adam's own default.
LR_GRID = (0.01, 0.001, 0.003, 0.03, 0.1)
#: The four optimizers of §4 as :func:`dro_lab.fit` knobs ("SGD M": momentum 0.5, the paper's).
OPTIMIZERS = {
    "SGD": {"optimizer": "sgd", "momentum": 0.0},
    "SGD M": {"optimizer": "sgd", "momentum": 0.5},
    "RMSProp": {"optimizer": "rmsprop", "momentum": 0.0},
    "Adam": {"optimizer": "adam", "momentum": 0.0},
}
#: The paper's three schemes as :class:`dro_lab.ImportanceSamplingStrategy` options (§2.1, §3.1).
SCHEMES = {
    "u": {"scheme": "uniform"},
    "p^GN": {"scheme": "grad_norm", "alpha": 1.0 - 1e-9},
    "p^1/2": {"scheme": "grad_norm", "alpha": 0.5},
}
#: Table 1 runs p^{1/2} with SGD and SGD M only ("×" for RMSProp and Adam).
_HALF_OPTIMIZERS = ("SGD", "SGD M")
#: The evaluating baseline: uniform draws after a forward pass over all N (the loss scores, mixed in at 10⁻⁹).
_EVAL = {"scheme": "loss", "alpha": 1e-9}
#: The digits' test split is drawn once, with this share of each class.
_DIGITS_TEST_FRACTION = 0.25


def arm_name(optimizer: str, scheme: str) -> str:
    """The arm of ``scheme`` under ``optimizer``: ``"SGD M p^GN"``."""
    return f"{optimizer} {scheme}"


def _arms() -> tuple[Arm, ...]:
    arms = []
    for opt, fit_knobs in OPTIMIZERS.items():
        for scheme, options in SCHEMES.items():
            if scheme == "p^1/2" and opt not in _HALF_OPTIMIZERS:
                continue
            arms.append(
                Arm(arm_name(opt, scheme), "ImportanceSamplingStrategy", {**options, **fit_knobs}, grid={"lr": LR_GRID})
            )
    arms.append(
        Arm(
            arm_name("SGD", "u+eval"),
            "ImportanceSamplingStrategy",
            {**_EVAL, **OPTIMIZERS["SGD"]},
            grid={"lr": LR_GRID},
        )
    )
    return tuple(arms)


@functools.lru_cache(maxsize=4)
def _pools(dataset: str, classes: tuple[int, int]) -> tuple[tuple[torch.Tensor, torch.Tensor], ...]:
    """The pair's training and test images with labels 0 / 1 (``classes[0]`` → 0), in the loader's order."""
    if dataset == "digits":
        train, test = load_digits(size=28, test_fraction=_DIGITS_TEST_FRACTION, seed=TEST_SEED)
    else:
        train, test = load_fashion_mnist(train=True), load_fashion_mnist(train=False)
    out = []
    for part in (train, test):
        keep = (part.y == classes[0]) | (part.y == classes[1])
        out.append((part.x[keep], (part.y[keep] == classes[1]).long()))
    return tuple(out)


def _classes(config: Mapping) -> tuple[int, int]:
    classes = tuple(config["classes"])
    if len(classes) != 2 or classes[0] == classes[1]:
        raise ValueError(f"classes must be two different labels 0..9, got {config['classes']!r}")
    return tuple(check_int(c, "classes[i]", low=0, high=9) for c in classes)


def _draw(y: torch.Tensor, counts: tuple[int | None, ...], generator: torch.Generator) -> list[torch.Tensor]:
    """Disjoint seeded draws of ``counts[k]`` positions per class (``None``: every remaining one)."""
    parts: list[list[torch.Tensor]] = [[] for _ in counts]
    for c in (0, 1):
        members = (y == c).nonzero().squeeze(1)
        order = members[torch.randperm(members.numel(), generator=generator)]
        start = 0
        for k, count in enumerate(counts):
            stop = order.numel() if count is None else start + count
            if stop > order.numel():
                raise ValueError(f"class {c} has {order.numel()} images, fewer than the {sum(counts[: k + 1])} asked")
            parts[k].append(order[start:stop].sort().values)
            start = stop
    return [torch.cat(p) for p in parts]


def _data(dataset: str, seed: int, config: Mapping) -> Splits:
    """Two classes: ``per_class`` training and ``val_per_class`` validation images per class (disjoint, seeded by
    ``seed``) and ``test_per_class`` test images per class (``None``: all; drawn once for every seed)."""
    classes = _classes(config)
    (x_tr, y_tr), (x_te, y_te) = _pools(dataset, classes)
    per_class = check_int(config["per_class"], "per_class")
    val_per_class = check_int(config["val_per_class"], "val_per_class")
    fit_idx, val_idx = _draw(y_tr, (per_class, val_per_class), torch.Generator().manual_seed(seed))
    (test_idx,) = _draw(y_te, (config.get("test_per_class"),), torch.Generator().manual_seed(TEST_SEED))
    train, val, test = (
        ArrayDataset(x[i], y[i], num_classes=2)
        for x, y, i in ((x_tr, y_tr, fit_idx), (x_tr, y_tr, val_idx), (x_te, y_te, test_idx))
    )
    info = {
        "classes": list(classes),
        "train_per_class": [per_class] * 2,
        "val_per_class": [val_per_class] * 2,
        "test_per_class": torch.bincount(test.y, minlength=2).tolist(),
    }
    return Splits(train, val, test, info)


def _metrics(model, dataset, config: Mapping) -> dict:
    """Accuracy and mean cross-entropy; ``neg_loss`` (−loss, −∞ for a diverged run) is what tuning maximises."""
    report = evaluate(model, dataset)
    loss = report["loss"]
    return {"accuracy": report["accuracy"], "loss": loss, "neg_loss": -loss if math.isfinite(loss) else -math.inf}


def _curves(record: dict, config: Mapping) -> dict:
    """Per epoch: the test metrics, the full training loss over N (NaN without ``eval_train``), the seconds of the
    training steps, the sampler's H(p)/H(u) (App. B's H; exact for the gradient-norm schemes, 1 for u) and the
    FLOPs of one step of the run's scheme."""
    # the scheme's scoring pass, read off the sampler's record: none for p = u, the losses for SGD u+eval's α
    scoring = "grad_norm" if "sampler_scores_mean" in record else "uniform"
    scoring = "loss" if scoring != "uniform" and record["sampler_alpha"] == _EVAL["alpha"] else scoring
    return {
        "test_accuracy": record["test_accuracy"],
        "test_loss": record["test_loss"],
        "train_loss": record.get("train_full_loss", math.nan),
        "seconds": record["seconds"],
        "variance_ratio": record.get("sampler_variance_ratio", math.nan),
        "flops_per_step": _step_flops(scoring, 2 * config["per_class"], config["batch_size"], config["model"]),
    }


@functools.lru_cache(maxsize=8)
def _step_flops(scoring: str, n: int, batch_size: int, model: str) -> float:
    """FLOPs of one training step whose scoring pass over the N images is ``scoring``'s ("uniform": none; "loss":
    forward; "grad_norm": the per-sample gradient norms): FlopCounterMode over one epoch of :func:`dro_lab.fit` on N
    random 28×28 images, divided by its steps (the count depends on the shapes only)."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        data = ArrayDataset(torch.rand(n, 1, 28, 28), torch.arange(n) % 2, num_classes=2)
        net, strategy = build_model(data, {"model": model}), ImportanceSamplingStrategy(scoring, alpha=0.5)
        with FlopCounterMode(display=False) as counter:
            history = fit(net, data, strategy=strategy, epochs=1, batch_size=batch_size, lr=0.01, device="cpu",
                          progress=False, distributed=False)  # fmt: skip
    return counter.get_total_flops() / history.records[-1]["steps"]


def _summaries(curves: Mapping, config: Mapping) -> dict:
    """The cost (mean seconds per epoch and its log: a difference of logs is Table 1's log-ratio; FLOPs per step and
    their ratio to plain SGD's), the final full training loss (the mean of the last ``average_last`` epochs) and its
    speed: the mean of log10 of the training loss over epochs (Fig. 2's area under a log-scale curve; lower is
    faster)."""
    seconds, flops = float(np.mean(curves["seconds"])), float(curves["flops_per_step"][-1])
    plain = _step_flops("uniform", 2 * config["per_class"], config["batch_size"], config["model"])
    train = np.maximum(np.asarray(curves["train_loss"], dtype=float), 1e-12)
    return {
        "seconds_per_epoch": seconds,
        "log_seconds": math.log(max(seconds, 1e-9)),
        "flops_per_step": flops,
        "flops_vs_plain": flops / plain,
        "train_loss": float(np.mean(train[-config.get("average_last", 1) :])),
        "train_log_loss_auc": float(np.mean(np.log10(train))),
    }


_PAPER = "Lahire (2023), §4, App. F–G, Fig. 2–3 and Table 1 (binary MNIST 0 vs 1, N = 100, App. F CNN)"
_FIG2 = "§4, Fig. 2 (the loss against steps; 300 steps, batch 5, lr 0.01, mean of 45 runs)"
_TABLE1 = "Table 1: seconds per 300-step run, p^GN / u = 53.0/26.5 = 2.00 with SGD, 2.00–2.39 over the optimizers"
#: Table 1's p^GN / u over the four optimizers: 53.0/26.5 = 2.00 (SGD) to 61.4/25.7 = 2.39 (Adam), as log-ratios.
_COST_BAND = (math.log(2.0), math.log(2.39))


def _lower(text: str, metric: str, method: str, baseline: str, paper: str, **options) -> Claim:
    """A claim that ``method``'s ``metric`` (a loss, or a log of seconds) is below ``baseline``'s, in its own units."""
    return Claim(text, metric, method, baseline, higher_is_better=False, paper=paper, scale=1.0, unit="", **options)


def _claims() -> tuple[Claim, ...]:
    sgd, sgdm = (lambda s: arm_name("SGD", s)), (lambda s: arm_name("SGD M", s))
    faster = "lowers the full training loss faster than"
    cost = dict(band=_COST_BAND, paper_effect=_COST_BAND[0])
    return (
        _lower(f"SGD: p^GN {faster} u", "train_log_loss_auc", sgd("p^GN"), sgd("u"),
               f"{_FIG2}, upper left: p^GN 'is indeed faster (in terms of iteration)' than u"),
        _lower(f"SGD M: p^GN {faster} u", "train_log_loss_auc", sgdm("p^GN"), sgdm("u"),
               f"{_FIG2}, upper right (momentum 0.5): p^GN faster than u"),
        _lower(f"SGD: p^1/2 {faster} u", "train_log_loss_auc", sgd("p^1/2"), sgd("u"),
               f"{_FIG2}, upper left: with p^1/2 'the loss decrease is faster than ... with the uniform sampling'"),
        _lower(f"SGD: p^GN {faster} p^1/2", "train_log_loss_auc", sgd("p^GN"), sgd("p^1/2"),
               f"{_FIG2}, upper left: p^1/2 'slower than the one obtained with the optimal sampling scheme'"),
        _lower("uniform sampling: SGD ends with a lower full training loss than Adam", "train_loss", sgd("u"),
               arm_name("Adam", "u"), f"{_FIG2}, lower right: 'the final loss is lower for SGD than for ... ADAM'"),
        _lower("uniform sampling: SGD ends with a lower full training loss than RMSProp", "train_loss", sgd("u"),
               arm_name("RMSProp", "u"), f"{_FIG2}, lower right: 'the final loss is lower for SGD than for RMSProp'"),
        _lower("an SGD epoch with p^GN costs 2.0–2.39× one of plain SGD (u): the log-ratio inside Table 1's band",
               "log_seconds", sgd("u"), sgd("p^GN"), _TABLE1, **cost),
        _lower("an SGD epoch with p^GN costs 2.0–2.39× one of SGD u+eval: the log-ratio inside Table 1's band",
               "log_seconds", sgd("u+eval"), sgd("p^GN"), _TABLE1, **cost),
    )  # fmt: skip


def _preset(per_class: int, val_per_class: int, test_per_class: int | None, epochs: int, trials: int) -> dict:
    return dict(classes=(0, 1), model="small_cnn", per_class=per_class, val_per_class=val_per_class,
                test_per_class=test_per_class, epochs=epochs, batch_size=5, lr=0.01, trials=trials,
                average_last=1 if epochs < 3 else 3, lr_schedule=None, eval_train=True)  # fmt: skip


#: ``full``/``gpu`` tune every arm over the whole lr grid (5 trials); ``protocol`` is §4's: lr 0.01, untuned.
#: The digits keep 133–137 training images per class after the fixed test draw.
_PRESETS = {
    "digits": {"smoke": _preset(15, 10, None, 2, 1), "full": _preset(50, 50, None, 15, 5),
               "protocol": _preset(50, 30, None, 15, 1)},
    "fashion-mnist": {"smoke": _preset(15, 10, 200, 2, 1), "full": _preset(50, 100, None, 15, 5),
                      "protocol": _preset(50, 30, 250, 15, 1), "gpu": _preset(50, 500, None, 15, 5)},
}  # fmt: skip

IMPORTANCE_EXPERIMENT = Experiment(
    name="importance",
    title="Importance sampling for SGD: u, p^GN and p^1/2 under SGD, SGD M, RMSProp and Adam",
    paper=_PAPER,
    arms=_arms(),
    claims=_claims(),
    data=_data,
    model=build_model,
    metrics=_metrics,
    select="neg_loss",
    curves=_curves,
    summaries=_summaries,
    presets=_PRESETS,
    plain=arm_name("SGD", "u"),
)
