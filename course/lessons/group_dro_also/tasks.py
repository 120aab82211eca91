r"""Small versions of the ALSO paper's other three experiments (Feoktistov et al., 2025, §6.2–6.4), one call each.

The paper's imbalanced-data experiment (§6.1) is :data:`dro_lab.experiments.papers.also.ALSO_EXPERIMENT`, tuned
and run by :func:`dro_lab.experiments.run_experiment`. The three here are smaller and **untuned**: one setting for
every method (the caller's), paired seeds (seed ``s`` fixes the data draw, the initialisation and the batch order
of every method), and the result as an :class:`~dro_lab.experiments.ExperimentResult`, whose
:meth:`~dro_lab.experiments.ExperimentResult.verdicts` judge the paper's claims with
:func:`dro_lab.experiments.judge`.

* :func:`run_also_tabular` — §6.2, Table 1: one of scikit-learn's tabular sets, an MLP, one weight per example
  (c = n), ROC-AUC; ALSO against AdamW, Static Weights, Spectral Risk, FastDRO, RECOVER and DRAGO.
* :func:`run_also_transforms` — §6.3, Fig. 2: a small CNN pretrained for one epoch on 8×8 digits, then trained
  under seven input transformations, the groups (:func:`robust_training_transforms`); the paper's criterion
  :math:`Q=\frac1c\sum_jQ_j` (mean test accuracy over the transformations) and the worst one.
* :func:`run_also_workers` — §6.4, Fig. 3: digits split over workers in Dirichlet proportions (non-IID),
  gradients compressed with Perm-K; ALSO's groups are the workers and each sends a share of the coordinates
  ∝ its π ("the larger π_i is, the more worker i will transmit"); global and worst-worker accuracy.

These are illustrations of the protocol at a few seconds of CPU each, not the paper's scale (14 tabular sets with
100 tuning trials per method; MNIST with a list of attacks the paper does not give; ResNet-18 on CIFAR-10).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from dro_lab._validation import check_choice, check_int, check_number
from dro_lab.attacks.gradient import fgsm_transform
from dro_lab.attacks.transformed import transform_accuracies
from dro_lab.data import transforms as T
from dro_lab.data.embedded import load_digits, load_tabular
from dro_lab.data.groups import assign_groups, dirichlet_split
from dro_lab.engine.loop import clone_model, fit
from dro_lab.experiments.protocol import Claim
from dro_lab.experiments.result import ExperimentResult
from dro_lab.experiments.runner import _meta, parse_seeds
from dro_lab.metrics import accuracy_report, evaluate, predict
from dro_lab.models import MLP, DigitsCNN
from dro_lab.strategies.baselines import FastDROStrategy, RecoverStrategy, SpectralRiskStrategy, StaticWeightsStrategy
from dro_lab.strategies.basic import ERM
from dro_lab.strategies.group_dro import CompressedWorkersStrategy, GroupDROStrategy, TransformGroupsStrategy
from dro_lab.utils import resolve_device, seed_everything

__all__ = [
    "TABULAR_SETS",
    "robust_training_transforms",
    "run_also_tabular",
    "run_also_transforms",
    "run_also_workers",
]

#: The tabular sets :func:`run_also_tabular` accepts (scikit-learn's, bundled).
TABULAR_SETS = ("breast_cancer", "wine")

_PAPER = "Feoktistov et al. (2025), ALSO"


def robust_training_transforms() -> tuple[list[Callable], list[str]]:
    """The seven groups of :func:`run_also_transforms` and their names: the identity, a rotation by ±20°, Gaussian
    noise σ = 0.3, a Gaussian blur (3 × 3, σ = 1), a 1-pixel shift, FGSM at ε = 0.1 and at ε = 0.2 (against the
    current model). The paper names "various transformations from torchvision" and FGSM, not which: the list is
    ours."""
    transforms = [
        T.identity_transform(),
        T.rotation_transform(20.0),
        T.noise_transform(0.3),
        T.blur_transform(3, 1.0),
        T.shift_transform(1),
        fgsm_transform(0.1),
        fgsm_transform(0.2),
    ]
    names = ["identity", "rotate ±20°", "noise σ=0.3", "blur", "shift 1px", "FGSM ε=0.1", "FGSM ε=0.2"]
    return transforms, names


def _result(name: str, title: str, paper: str, preset: str, seeds, config: dict, methods, claims, device):
    return ExperimentResult(
        experiment=name,
        title=title,
        paper=paper,
        dataset=str(config.get("dataset", "digits")),
        preset=check_choice(preset, "preset", ("smoke", "full", "gpu")),
        seeds=list(seeds),
        config=config,
        methods=list(methods),
        claims=[c.__dict__ for c in claims],
        meta=_meta(device),
    )


def _claims(metric: str, baselines: Sequence[str], paper: str, *, what: str, scale: float = 100.0) -> list[Claim]:
    unit = " points" if scale == 100.0 else ""
    return [
        Claim(f"ALSO beats {b} on {what}", metric, "ALSO", b, paper=paper, scale=scale, unit=unit) for b in baselines
    ]


def _run(result: ExperimentResult, seed: int, method: str, final: Mapping, curves: Mapping, seconds: float) -> None:
    result.runs.append(
        {
            "seed": seed,
            "method": method,
            "setting": {},
            "final": {k: float(v) for k, v in final.items()},
            "curves": {k: [float(x) for x in v] for k, v in curves.items()},
            "seconds": float(seconds),
        }
    )


def _check_common(seeds, preset, epochs, batch_size, lr, weight_decay, pi_lr, tau, alpha) -> tuple[list[int], dict]:
    """The seeds, and the settings every task shares as they go into its configuration (after checking them)."""
    check_choice(preset, "preset", ("smoke", "full", "gpu"))
    check_int(epochs, "epochs")
    check_int(batch_size, "batch_size")
    check_number(lr, "lr", low=0, low_open=True)
    check_number(weight_decay, "weight_decay", low=0)
    check_number(pi_lr, "pi_lr", low=0)
    check_number(tau, "tau", low=0, low_open=True)
    check_number(alpha, "alpha", low=0)
    common = dict(
        epochs=epochs, batch_size=batch_size, lr=lr, weight_decay=weight_decay, pi_lr=pi_lr, tau=tau, alpha=alpha
    )
    return parse_seeds(seeds), common


def run_also_tabular(
    *,
    dataset: str = "breast_cancer",
    seeds: str | Sequence[int] = (0,),
    preset: str = "smoke",
    epochs: int = 3,
    batch_size: int = 64,
    lr: float = 3e-3,
    weight_decay: float = 1e-4,
    pi_lr: float = 0.03,
    tau: float = 0.3,
    alpha: float = 1.0,
    loss_scale: float | None = None,
    drago_lr: float = 0.1,
    fastdro_size: float = 0.2,
    recover_t: float = 1.0,
    recover_warmup: int = 20,
    device: str | torch.device = "auto",
) -> ExperimentResult:
    """§6.2, Table 1 in small: ALSO (one weight per example, uniform prior) against six baselines on one tabular set.

    Every method trains an MLP (one hidden layer of 64) for ``epochs`` epochs with ``lr`` and ``weight_decay``
    (Adam's coupled L2 for ALSO and Static Weights, AdamW's decoupled decay for the others); ALSO and DRAGO share
    η_π = ``pi_lr`` and τ = ``tau``; DRAGO (the paper code's plain-SGD adaptation) takes ``drago_lr``. Final
    metrics on the test split: ``roc_auc`` (one-vs-rest for three classes), ``accuracy``,
    ``worst_class_accuracy`` and, for ALSO and DRAGO, ``pi_kl_to_prior`` (the radius KL(π‖π̂) π reached); the
    curve is the test accuracy per epoch. The claims: ALSO's ROC-AUC above each baseline's ("ALSO demonstrates
    the best performance on the most datasets").
    """
    from sklearn.metrics import roc_auc_score  # the oracle for ROC-AUC; only this experiment needs it

    check_choice(dataset, "dataset", TABULAR_SETS)
    seeds, common = _check_common(seeds, preset, epochs, batch_size, lr, weight_decay, pi_lr, tau, alpha)
    device = resolve_device(device)
    adamw = {"optimizer": "adamw"}
    methods: dict[str, Callable[[], tuple]] = {
        "AdamW": lambda: (ERM(), adamw),
        "ALSO": lambda: (
            GroupDROStrategy("also", grouping="sample", pi_lr=pi_lr, tau=tau, alpha=alpha, loss_scale=loss_scale),
            {},
        ),
        "Static Weights": lambda: (StaticWeightsStrategy(), {"optimizer": "adam"}),
        "Spectral Risk": lambda: (SpectralRiskStrategy(n_draws=2.0, shift_cost=1.0, penalty="kl"), adamw),
        "FastDRO (CVaR)": lambda: (FastDROStrategy("cvar", size=fastdro_size), adamw),
        "RECOVER": lambda: (RecoverStrategy(t=recover_t, clip=10.0, warmup_steps=recover_warmup), adamw),
        "DRAGO": lambda: (GroupDROStrategy("drago", grouping="sample", pi_lr=pi_lr, tau=tau), {"lr": drago_lr}),
    }
    config = dict(dataset=dataset, **common, loss_scale=loss_scale, drago_lr=drago_lr)
    paper = f"{_PAPER}, §6.2, Table 1: 'ALSO demonstrates the best performance on the most datasets' (14 sets)"
    claims = _claims("roc_auc", [m for m in methods if m != "ALSO"], paper, what="ROC-AUC", scale=1.0)
    result = _result(
        "also-tabular", f"ALSO on tabular data ({dataset})", paper, preset, seeds, config, methods, claims, device
    )
    for s in seeds:
        train, test = load_tabular(dataset, seed=s)
        result.data[str(s)] = {"train": len(train), "test": len(test)}
        k = train.num_classes
        for name, make in methods.items():
            strategy, options = make()
            seed_everything(s)
            model = MLP(train.x.shape[1], k, hidden=(64,))
            start = time.perf_counter()
            history = fit(
                model,
                train,
                strategy=strategy,
                test=test,
                epochs=epochs,
                batch_size=batch_size,
                weight_decay=weight_decay,
                device=device,
                seed=s,
                progress=False,
                **{"lr": lr, "optimizer": "adam", **options},
            )
            prob = torch.softmax(predict(model, test.x).double().cpu(), 1).numpy()
            y = test.y.numpy()
            auc = roc_auc_score(y, prob[:, 1]) if k == 2 else roc_auc_score(y, prob, multi_class="ovr")
            report = accuracy_report(torch.from_numpy(prob.argmax(1)), test.y, num_classes=k)
            final = {
                "roc_auc": auc,
                "accuracy": report["accuracy"],
                "worst_class_accuracy": report["worst_class_accuracy"],
            }
            if "pi_kl_to_prior" in history:
                final["pi_kl_to_prior"] = history.last["pi_kl_to_prior"]
            _run(result, s, name, final, {"test_accuracy": history["test_accuracy"]}, time.perf_counter() - start)
    return result


def run_also_transforms(
    *,
    seeds: str | Sequence[int] = (0,),
    preset: str = "smoke",
    epochs: int = 1,
    batch_size: int = 64,
    lr: float = 3e-3,
    weight_decay: float = 1e-4,
    pi_lr: float = 0.05,
    tau: float = 0.3,
    alpha: float = 1.0,
    fastdro_size: float = 0.2,
    recover_t: float = 1.0,
    device: str | torch.device = "auto",
) -> ExperimentResult:
    r"""§6.3, Fig. 2 in small: robust training over input transformations, the transformations being the groups.

    Per seed, :class:`dro_lab.DigitsCNN` is pretrained for one epoch with AdamW on 8×8 digits; every method then
    starts from that network and trains ``epochs`` more epochs under :func:`robust_training_transforms`
    (:class:`dro_lab.TransformGroupsStrategy`): ALSO draws the transformation of each batch from π (estimator (c)
    of the paper's App. A; η_π = ``pi_lr``, τ = ``tau``, α = ``alpha``), AdamW draws it uniformly and takes the
    mean loss, RECOVER and FastDRO (CVaR level ``fastdro_size``) draw it uniformly and reduce the transformed
    batch's losses robustly. Final metrics on the test split: ``mean_attack_accuracy`` (the paper's
    :math:`Q`), ``worst_attack_accuracy`` and ``accuracy: <name>`` per transformation; curves: both per epoch,
    epoch 0 being the pretrained network. ``result.data[seed]`` keeps ALSO's π after each epoch (``pi``, the
    prior first) and its radius ``pi_kl``. The claims: ALSO's Q above each baseline's (Fig. 2), and — beyond the
    paper, the criterion a group-DRO method optimises — its worst-transformation accuracy above AdamW's.
    """
    seeds, common = _check_common(seeds, preset, epochs, batch_size, lr, weight_decay, pi_lr, tau, alpha)
    device = resolve_device(device)
    _, names = robust_training_transforms()
    methods: dict[str, Callable[[], object]] = {
        "AdamW": ERM,
        "ALSO": lambda: GroupDROStrategy("also", grouping="group", sampling="pi", pi_lr=pi_lr, tau=tau, alpha=alpha),
        "RECOVER": lambda: RecoverStrategy(t=recover_t, clip=10.0, warmup_steps=0),
        "FastDRO (CVaR)": lambda: FastDROStrategy("cvar", size=fastdro_size),
    }
    config = dict(dataset="digits", **common, pretrain_epochs=1, transforms=names)
    paper = f"{_PAPER}, §6.3, Fig. 2: 'ALSO outperforms both AdamW and DRO baselines' (Q, the mean over attacks)"
    beyond = "beyond the paper: the worst transformation, the criterion a group-DRO method optimises"
    claims = _claims("mean_attack_accuracy", [m for m in methods if m != "ALSO"], paper, what="Q")
    claims.append(
        Claim("ALSO beats AdamW on the worst transformation", "worst_attack_accuracy", "ALSO", "AdamW", paper=beyond)
    )
    result = _result(
        "also-transforms",
        "ALSO in robust training over transformations (digits)",
        paper,
        preset,
        seeds,
        config,
        methods,
        claims,
        device,
    )
    fit_options = dict(batch_size=batch_size, lr=lr, optimizer="adamw", weight_decay=weight_decay, device=device)
    for s in seeds:
        _transforms_seed(result, s, methods, epochs, fit_options)
    return result


def _transforms_seed(result: ExperimentResult, s: int, methods: Mapping, epochs: int, fit_options: dict) -> None:
    """One seed of :func:`run_also_transforms`: pretrain, then every method from the pretrained network."""
    transforms, names = robust_training_transforms()
    train, test = load_digits(seed=s)
    seed_everything(s)
    pretrained = DigitsCNN(num_classes=10)
    fit(pretrained, train, epochs=1, seed=s, progress=False, **fit_options)

    def accuracies(model):
        return transform_accuracies(model, test, transforms, generator=torch.Generator().manual_seed(s))

    before = accuracies(pretrained)
    for name, make in methods.items():
        inner = make()
        model, per_epoch = clone_model(pretrained), [before]
        start = time.perf_counter()
        history = fit(model, train, strategy=TransformGroupsStrategy(inner, transforms, names), epochs=epochs, seed=s,
                      progress=False, callback=lambda e, r, m=model, a=per_epoch: a.append(accuracies(m)),
                      **fit_options)  # fmt: skip
        seconds, acc = time.perf_counter() - start, per_epoch[-1]
        final = {"mean_attack_accuracy": acc.mean(), "worst_attack_accuracy": acc.min(),
                 **{f"accuracy: {n}": a for n, a in zip(names, acc)}}  # fmt: skip
        curves = {"mean_attack_accuracy": [a.mean() for a in per_epoch],
                  "worst_attack_accuracy": [a.min() for a in per_epoch]}  # fmt: skip
        _run(result, s, name, final, curves, seconds)
        if name == "ALSO":
            prior = np.full(len(names), 1.0 / len(names))
            pis = [prior.tolist()] + [p.double().tolist() for p in inner.pi_history]
            result.data[str(s)] = {"pi": pis, "pi_kl": [0.0, *map(float, history["pi_kl_to_prior"])]}


def _worker_accuracy(per_class_accuracy, labels: np.ndarray, workers: np.ndarray, n_workers: int) -> np.ndarray:
    """Each worker's accuracy on a test set mixed like its own data: its label mixture applied to the per-class
    test accuracies."""
    acc = np.nan_to_num(np.asarray(per_class_accuracy, dtype=float))
    k = acc.size
    mix = np.stack([np.bincount(labels[workers == j], minlength=k) for j in range(n_workers)]).astype(float)
    mix /= np.maximum(mix.sum(1, keepdims=True), 1.0)
    return mix @ acc


def run_also_workers(
    *,
    seeds: str | Sequence[int] = (0,),
    preset: str = "smoke",
    epochs: int = 2,
    n_workers: int = 5,
    dirichlet: float = 0.3,
    batch_size: int = 64,
    lr: float = 3e-3,
    weight_decay: float = 1e-4,
    pi_lr: float = 0.05,
    tau: float = 0.3,
    alpha: float = 1.0,
    device: str | torch.device = "auto",
) -> ExperimentResult:
    r"""§6.4, Fig. 3 in small: distributed training with gradients compressed by Perm-K, the workers being the groups.

    Per seed, the 8×8 digits' training split is cut over ``n_workers`` workers, each class in Dirichlet(``dirichlet``)
    proportions (a non-IID split, :func:`dro_lab.data.dirichlet_split`); an MLP 64–64–10 trains ``epochs`` epochs
    through :class:`dro_lab.CompressedWorkersStrategy`: plain Perm-K with AdamW (every worker sends an equal share of
    the coordinates) against ALSO with one weight per worker (uniform prior) whose shares are ∝ π (the personalised
    Perm-K). Both send exactly d numbers per step. Final metrics: ``accuracy`` (the balanced test set),
    ``worst_worker_accuracy`` (each worker's label mixture applied to the per-class test accuracies),
    ``floats_sent`` and, for ALSO, ``pi_kl_to_prior``. The claims: ALSO above plain Perm-K on both accuracies
    ("applying the ALSO algorithm in the distributed setup demonstrates superiority over all baselines").
    ``result.data[seed]["worker_sizes"]`` gives the workers' sizes: group size enters ALSO's objective (a worker
    with more data has a larger :math:`L_j`).
    """
    seeds, common = _check_common(seeds, preset, epochs, batch_size, lr, weight_decay, pi_lr, tau, alpha)
    n_workers = check_int(n_workers, "n_workers", low=2)
    check_number(dirichlet, "dirichlet", low=0, low_open=True)
    device = resolve_device(device)
    methods: dict[str, Callable[[], tuple]] = {
        "AdamW + Perm-K": lambda: (CompressedWorkersStrategy(ERM(), n_workers), "adamw"),
        "ALSO": lambda: (
            CompressedWorkersStrategy(
                GroupDROStrategy("also", grouping="group", pi_lr=pi_lr, tau=tau, alpha=alpha), n_workers
            ),
            "adam",
        ),
    }
    config = dict(dataset="digits", **common, n_workers=n_workers, dirichlet=dirichlet)
    paper = f"{_PAPER}, §6.4, Fig. 3: ALSO 'demonstrates superiority over all baselines' with Perm-K compression"
    claims = [
        Claim("ALSO beats AdamW + Perm-K on test accuracy", "accuracy", "ALSO", "AdamW + Perm-K", paper=paper),
        Claim(
            "ALSO beats AdamW + Perm-K on the worst worker's accuracy",
            "worst_worker_accuracy",
            "ALSO",
            "AdamW + Perm-K",
            paper=paper,
        ),
    ]
    result = _result(
        "also-workers",
        f"ALSO with Perm-K over {n_workers} workers (digits)",
        paper,
        preset,
        seeds,
        config,
        methods,
        claims,
        device,
    )
    fit_options = dict(epochs=epochs, batch_size=batch_size, lr=lr, weight_decay=weight_decay, device=device)
    for s in seeds:
        _workers_seed(result, s, methods, n_workers, dirichlet, fit_options)
    return result


def _workers_seed(result: ExperimentResult, s: int, methods: Mapping, n_workers: int, dirichlet: float,
                  fit_options: dict) -> None:  # fmt: skip
    """One seed of :func:`run_also_workers`: the non-IID split, then every method on it."""
    train, test = load_digits(flatten=True, seed=s)
    workers = dirichlet_split(train.y, n_workers, dirichlet, seed=s)
    grouped = assign_groups(train, workers, num_groups=n_workers)
    result.data[str(s)] = {"worker_sizes": torch.bincount(workers, minlength=n_workers).tolist()}
    for name, make in methods.items():
        strategy, optimizer = make()
        seed_everything(s)
        model = MLP(64, 10, hidden=(64,))
        start = time.perf_counter()
        history = fit(model, grouped, strategy=strategy, test=test, optimizer=optimizer, seed=s, progress=False,
                      **fit_options)  # fmt: skip
        report = evaluate(model, test)
        per_worker = _worker_accuracy(report["per_class_accuracy"], train.y.numpy(), workers.numpy(), n_workers)
        final = {"accuracy": report["accuracy"], "worst_worker_accuracy": per_worker.min(),
                 "floats_sent": history.last["floats_sent"]}  # fmt: skip
        if "pi_kl_to_prior" in history:
            final["pi_kl_to_prior"] = history.last["pi_kl_to_prior"]
        _run(result, s, name, final, {"test_accuracy": history["test_accuracy"]}, time.perf_counter() - start)
