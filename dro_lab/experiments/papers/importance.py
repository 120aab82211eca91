"""Lahire's importance-sampling experiment (§4, App. F–G, Fig. 2–3, Table 1): u, p^GN and p^{1/2} under four optimizers.

The paper's protocol (§4): a two-class task on 28×28 images — MNIST "zero or one" — with 50 training images per
class (N = 100), the App. F CNN (:class:`dro_lab.models.SmallCNN`), batch 5, learning rate 0.01 and 300 steps, for
SGD, SGD with momentum 0.5, RMSProp and Adam (PyTorch's other defaults). Here the pair is Fashion-MNIST's labels 0
and 1 (T-shirt/top against Trouser: the same label pair, an easy pair as 0 against 1 is on MNIST), or the embedded
digits 0 and 1 upsampled to 28×28; 15 epochs of ⌈100/5⌉ = 20 draws are the paper's 300 steps. A disjoint
validation set is drawn from the rest of the training split (tuning scores it); the test set is the pair's whole
test split (the paper's 2 115 test images are MNIST's 980 zeros and 1 135 ones), the same for every seed.

The arms (scheme × optimizer, :class:`dro_lab.ImportanceSamplingStrategy`, eq. 2 with the weights 1/(N p_i)):

* **u** — uniform sampling: weights 1, nothing scored, the run is plain SGD's (ERM's batches);
* **p^GN** — p ∝ exact per-sample gradient norms on all N, recomputed before every step (§2.1, the optimal
  scheme for SGD); the α = 1 − 10⁻⁹ mixture with uniform, so an example whose gradient underflows to 0 keeps a
  positive probability;
* **p^1/2** — p = (p^GN + u)/2 (§3.1, the theorem's example), with SGD and SGD M only, as in Table 1;
* **SGD u+eval** — the evaluating baseline: draws from u (α = 10⁻⁹ on the losses) after a forward pass over all
  N before every step, what a uniform run that evaluates the training loss each step costs.

Every arm tunes the same learning-rate grid (the paper's 0.01 first) with the same number of trials, scored by
the validation loss. Final metrics: test accuracy and test loss; curves: test accuracy, test loss, the training
loss (the importance-weighted batch mean, unbiased for the training loss), seconds per epoch and the sampler's
variance ratio H(p)/H(u) (App. B's H; exact for the gradient-norm schemes, 1 for u).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np
import torch

from ..._validation import check_int
from ...data.datasets import ArrayDataset
from ...data.embedded import load_digits
from ...data.fashion import load_fashion_mnist
from ...metrics import evaluate
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
    return {
        "test_accuracy": record["test_accuracy"],
        "test_loss": record["test_loss"],
        "train_loss": record["train_objective"],
        "seconds": record["seconds"],
        "variance_ratio": record.get("sampler_variance_ratio", float("nan")),
    }


def _summaries(curves: Mapping, config: Mapping) -> dict:
    """The cost per epoch (mean seconds, and its log: a difference of logs is a log-ratio, Table 1's ratio) and
    the speed of the training loss: the mean of log10 of the training loss over epochs (Fig. 2's area under a
    log-scale curve; lower is faster)."""
    seconds = float(np.mean(curves["seconds"]))
    train = np.maximum(np.asarray(curves["train_loss"], dtype=float), 1e-12)
    return {
        "seconds_per_epoch": seconds,
        "log_seconds": math.log(max(seconds, 1e-9)),
        "train_log_loss_auc": float(np.mean(np.log10(train))),
    }


_PAPER = "Lahire (2023), §4, App. F–G, Fig. 2–3 and Table 1 (binary MNIST 0 vs 1, N = 100, App. F CNN)"
_FIG2 = "§4, Fig. 2 (300 steps, batch 5, lr 0.01, mean of 45 runs)"
_TABLE1 = "Table 1: seconds per 300-step run, p^GN / u = 53.0 / 26.5 = 2.00 with SGD (2.00–2.39 over the optimizers)"


def _lower(text: str, metric: str, method: str, baseline: str, paper: str, threshold: float = 0.0) -> Claim:
    """A claim that ``method``'s ``metric`` (a loss, or a log of seconds) is below ``baseline``'s, in its own units."""
    return Claim(
        text, metric, method, baseline, higher_is_better=False, threshold=threshold, paper=paper, scale=1.0, unit=""
    )


def _claims() -> tuple[Claim, ...]:
    sgd, sgdm = (lambda s: arm_name("SGD", s)), (lambda s: arm_name("SGD M", s))
    fig2 = _FIG2
    return (
        _lower(
            "SGD: p^GN ends with a lower test loss than u",
            "loss",
            sgd("p^GN"),
            sgd("u"),
            f"{fig2}, upper left: p^GN 'is indeed faster (in terms of iteration)' than u",
        ),
        _lower(
            "SGD: p^GN lowers the training loss faster than u (mean log10 loss over epochs)",
            "train_log_loss_auc",
            sgd("p^GN"),
            sgd("u"),
            f"{fig2}, upper left: loss against steps",
        ),
        _lower(
            "SGD M: p^GN ends with a lower test loss than u",
            "loss",
            sgdm("p^GN"),
            sgdm("u"),
            f"{fig2}, upper right (momentum 0.5): p^GN faster than u",
        ),
        _lower(
            "SGD: p^1/2 ends with a lower test loss than u",
            "loss",
            sgd("p^1/2"),
            sgd("u"),
            f"{fig2}, upper left: p^1/2 'faster than ... the uniform sampling'",
        ),
        _lower(
            "SGD: p^GN ends with a lower test loss than p^1/2",
            "loss",
            sgd("p^GN"),
            sgd("p^1/2"),
            f"{fig2}, upper left: p^1/2 'slower than ... the optimal sampling scheme'",
        ),
        _lower(
            "uniform sampling: SGD ends with a lower test loss than Adam",
            "loss",
            sgd("u"),
            arm_name("Adam", "u"),
            f"{fig2}, lower right: 'the final loss is lower for SGD than for ... ADAM'",
        ),
        _lower(
            "uniform sampling: SGD ends with a lower test loss than RMSProp",
            "loss",
            sgd("u"),
            arm_name("RMSProp", "u"),
            f"{fig2}, lower right: 'the final loss is lower for SGD than for RMSProp'",
        ),
        _lower(
            "an SGD epoch with p^GN costs more than twice one of plain SGD (u): log-ratio above log 2",
            "log_seconds",
            sgd("u"),
            sgd("p^GN"),
            _TABLE1,
            threshold=math.log(2.0),
        ),
        _lower(
            "an SGD epoch with p^GN costs more than twice one of the evaluating uniform run: log-ratio above log 2",
            "log_seconds",
            sgd("u+eval"),
            sgd("p^GN"),
            _TABLE1,
            threshold=math.log(2.0),
        ),
    )


def _preset(per_class: int, val_per_class: int, test_per_class: int | None, epochs: int, trials: int) -> dict:
    return dict(
        classes=(0, 1),
        model="small_cnn",
        per_class=per_class,
        val_per_class=val_per_class,
        test_per_class=test_per_class,
        epochs=epochs,
        batch_size=5,
        lr=0.01,
        trials=trials,
    )


#: digits keep 133–137 training images per class after the fixed test draw (about 45 per class).
_PRESETS = {
    "digits": {"smoke": _preset(15, 10, None, 2, 1), "full": _preset(50, 50, None, 15, 3)},
    "fashion-mnist": {
        "smoke": _preset(15, 10, 200, 2, 1),
        "full": _preset(50, 100, None, 15, 3),
        "gpu": _preset(50, 500, None, 15, 5),
    },
}

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
)
