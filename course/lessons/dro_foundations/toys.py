r"""Lesson 01's 2-D minority toy: ERM and the robust losses of the lesson trained side by side.

This is an **illustration**, not a paper's experiment. It shows what each inner worst case of lesson 01
(KL and χ² penalised, the KL ball, CVaR, and KL over groups) does to the decision boundary of a logistic
regression on :func:`dro_lab.data.make_minority_blobs` (a majority group on which a spurious feature agrees with
the class, a minority on which it disagrees). Training is full-batch, so each robust loss is the exact DRO
objective on the training set (Fidon et al., 2020, §2, eq. (9); Levy et al., 2020).

:func:`run_minority_toy` is the one call: for every seed it draws a data set and one initialisation shared by all
methods, trains every method at every knob of its grid with :func:`dro_lab.fit`, and returns a
:class:`MinorityToy` with one row per run, the first seed's models and boundary grids, and the paired per-seed
differences that :func:`dro_lab.experiments.judge` turns into a verdict *about the toy*.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from dro_lab._validation import check_int, check_number
from dro_lab.data import make_minority_blobs
from dro_lab.engine.loop import clone_model, fit
from dro_lab.experiments.verdict import Verdict, judge_seeds, mean_sd_text, pair_seeds
from dro_lab.metrics import model_on_grid, predict
from dro_lab.models import LogisticRegression
from dro_lab.strategies import ERM, RobustLossStrategy
from dro_lab.utils import seed_everything

__all__ = ["TOY_METHODS", "MinorityToy", "run_minority_toy", "toy_strategy"]

#: The methods of the toy and the knob each one takes (``None``: no knob).
TOY_METHODS: dict[str, str | None] = {
    "ERM": None,
    "KL": "beta",
    "χ²": "beta",
    "KL ball": "radius",
    "CVaR": "alpha",
    "group KL": "beta",
}
_SYMBOL = {"beta": "β", "radius": "r", "alpha": "α"}


def toy_strategy(method: str, value: float | None = None):
    """The training strategy of one toy ``method`` (a key of :data:`TOY_METHODS`) at its knob ``value``.

    ``"KL"`` / ``"χ²"``: penalised over the examples at β; ``"KL ball"``: KL constrained at radius r;
    ``"CVaR"``: the mean of the worst α-fraction; ``"group KL"``: KL penalised at β over the two group-average
    losses (uniform prior over groups, so its β → 0 end is group-balanced ERM).
    """
    if not isinstance(method, str):
        raise TypeError(f"method must be one of {list(TOY_METHODS)}, got {type(method).__name__} {method!r}")
    if method not in TOY_METHODS:
        raise ValueError(f"method must be one of {list(TOY_METHODS)}, got {method!r}")
    knob = TOY_METHODS[method]
    if knob is None:
        return ERM()
    if knob == "alpha":
        value = check_number(value, "alpha", low=0, high=1, low_open=True)
    else:
        value = check_number(value, knob, low=0)
    divergence = {"χ²": "chi2", "CVaR": "cvar"}.get(method, "kl")
    over = "groups" if method == "group KL" else "samples"
    return RobustLossStrategy(divergence, **{knob: value}, over=over)


def _label(method: str, value: float | None) -> str:
    knob = TOY_METHODS[method]
    return method if knob is None else f"{method}, {_SYMBOL[knob]}={value:g}"


def _wobble(hist, last: int = 10) -> float:
    """How much the training objective still moves over the last epochs: (max − min) / |mean| of the last ``last``."""
    tail = np.array([r["train_objective"] for r in hist.records[-last:]], dtype=float)
    return float((tail.max() - tail.min()) / max(abs(tail.mean()), 1e-12))


def _geometry(model: torch.nn.Module) -> tuple[float, float]:
    """Angle (degrees) of the boundary's normal w = W₁ − W₀ from the x₁ axis, and ‖w‖."""
    weight = model.classifier.weight.detach().cpu().double()
    w = weight[1] - weight[0]
    return math.degrees(math.atan2(float(w[1]), float(w[0]))), float(w.norm())


@dataclass
class MinorityToy:
    """What :func:`run_minority_toy` returns.

    Attributes:
        runs: one dict per (method, knob value, seed): ``method``, ``label``, ``knob``, ``value``, ``beta``,
            ``alpha``, ``radius`` (the knob under its own name, else ``None``), ``seed``, ``headline`` (the
            lesson's knob), ``accuracy``, ``worst_group_accuracy``, ``majority_accuracy``, ``minority_accuracy``
            (test set), ``angle``, ``weight_norm``, ``train_objective`` and ``wobble`` (how much the training
            objective still moved over the last 10 epochs, relative to its mean).
        models, histories: the first seed's models and training histories at the lesson's knobs, by label.
        grids: each of those models' P(class 1) on a mesh, ``(grid_x, grid_y, prob)`` (see
            :func:`dro_lab.metrics.model_on_grid`).
        train, test: the first seed's data sets.
        headline: method → label of its run at the lesson's knob.
        seeds, config: the seeds and the settings of the run.
    """

    runs: list[dict]
    models: dict[str, torch.nn.Module]
    histories: dict[str, object]
    grids: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
    train: object
    test: object
    headline: dict[str, str]
    seeds: list[int]
    config: dict = field(default_factory=dict)

    def rows(self, methods: Sequence[str] | None = None, *, headline: bool | None = None) -> list[dict]:
        """The runs of ``methods`` (all when ``None``); ``headline=True`` keeps only the lesson's knobs."""
        return [
            r
            for r in self.runs
            if (methods is None or r["method"] in methods) and (headline is None or r["headline"] == headline)
        ]

    def differences(self, method: str, *, baseline: str = "ERM", metric: str = "worst_group_accuracy") -> np.ndarray:
        """Per-seed ``metric`` of ``method`` minus ``baseline`` at the lesson's knobs (paired: same data and start)."""
        if method not in self.headline or baseline not in self.headline:
            raise ValueError(f"method and baseline must be among {list(self.headline)}, got {method!r}, {baseline!r}")
        by = {(r["method"], r["seed"]): r[metric] for r in self.rows(headline=True)}
        return np.array([by[method, s] - by[baseline, s] for s in self.seeds], dtype=float)

    def verdicts(self, *, metric: str = "worst_group_accuracy", baseline: str = "ERM") -> dict[str, Verdict]:
        """For each method: :func:`judge_seeds` on "it raises the toy's ``metric`` over ``baseline``" (paired seeds;
        a seed whose run diverged is set aside and named in the verdict, never dropped silently)."""
        if baseline not in self.headline:
            raise ValueError(f"baseline must be one of {list(self.headline)}, got {baseline!r}")
        out = {}
        for m in self.headline:
            if m != baseline:
                values = {
                    name: {r["seed"]: r[metric] for r in self.rows([name], headline=True)} for name in (m, baseline)
                }
                by_seed, reasons = pair_seeds(self.seeds, values)
                out[self.headline[m]] = judge_seeds(by_seed, reasons=reasons)
        return out

    def hardest_minority_share(self, fraction: float = 0.1, *, method: str = "ERM") -> float:
        """Share of minority points among the ``fraction`` of training points with the largest losses under the
        first seed's ``method`` model (the minority's share of the whole training set is ``minority_fraction``)."""
        fraction = check_number(fraction, "fraction", low=0, high=1, low_open=True)
        if method not in self.headline:
            raise ValueError(f"method must be one of {list(self.headline)}, got {method!r}")
        with torch.no_grad():
            logits = predict(self.models[self.headline[method]], self.train.x).cpu()
            losses = torch.nn.functional.cross_entropy(logits, self.train.y.cpu(), reduction="none")
        k = max(1, math.ceil(round(fraction * len(losses), 9)))
        hardest = torch.topk(losses, k).indices
        return float((self.train.groups.cpu()[hardest] == 1).double().mean())

    def unsettled(self, threshold: float = 0.01) -> dict[str, int]:
        """Label → number of seeds whose training objective still moved by more than ``threshold`` (relative) over
        its last 10 epochs: a step size too large for that objective (its smoothness shrinks like 1/β, Fidon et al.,
        §3.1, eq. (17); CVaR is not smooth at all), so its final metrics measure the optimiser as much as the loss."""
        threshold = check_number(threshold, "threshold", low=0, low_open=True)
        out: dict[str, int] = {}
        for r in self.runs:
            if r["wobble"] > threshold:
                out[r["label"]] = out.get(r["label"], 0) + 1
        return out

    def table_markdown(self) -> str:
        """The runs at the lesson's knobs: test accuracy, worst-group accuracy (mean ± sd over seeds), geometry."""
        lines = [
            f"| method | test accuracy | worst-group accuracy | angle of w from x₁ (seed {self.seeds[0]}) | ‖w‖ |",
            "|---|---|---|---|---|",
        ]
        for method, label in self.headline.items():
            rows = [r for r in self.rows([method], headline=True)]
            first = next(r for r in rows if r["seed"] == self.seeds[0])
            acc = mean_sd_text([r["accuracy"] for r in rows])
            worst = mean_sd_text([r["worst_group_accuracy"] for r in rows])
            lines.append(f"| {label} | {acc} | {worst} | {first['angle']:.0f}° | {first['weight_norm']:.2f} |")
        return "\n".join(lines)

    def verdicts_markdown(self, *, metric: str = "worst_group_accuracy") -> str:
        """One line per method: the verdict on "raises the toy's worst-group accuracy over ERM", with its interval."""
        n = len(self.seeds)
        head = (
            f"On the 2-D toy ({n} paired seed{'s' if n != 1 else ''}; a verdict needs at least 3): does each "
            f"method raise the {metric.replace('worst_group', 'worst-group').replace('_', ' ')} over ERM?"
        )
        items = [
            f"- {label}: {v.text(1, scale=100, unit=' points')}" for label, v in self.verdicts(metric=metric).items()
        ]
        return "\n".join([head, "", *items])


def _check_grid(values, name: str, *, alpha: bool = False) -> list[float]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a list of numbers, got {type(values).__name__}")
    if alpha:
        return [check_number(v, f"{name}[{i}]", low=0, high=1, low_open=True) for i, v in enumerate(values)]
    return [check_number(v, f"{name}[{i}]", low=0, low_open=True) for i, v in enumerate(values)]


def run_minority_toy(
    *,
    beta: float,
    radius: float,
    alpha: float,
    seeds: Sequence[int],
    kl_betas: Sequence[float] = (),
    cvar_alphas: Sequence[float] = (),
    methods: Sequence[str] = tuple(TOY_METHODS),
    sweep: Sequence[str] = ("KL", "group KL", "CVaR"),
    n_train: int = 400,
    epochs: int = 150,
    lr: float = 0.05,
    momentum: float = 0.9,
    minority_fraction: float = 0.1,
    noise: float = 1.0,
    resolution: int = 60,
    device="cpu",
) -> MinorityToy:
    """Train ERM and lesson 01's robust losses on the 2-D minority toy, over seeds and knob grids.

    Args:
        beta, radius, alpha: the lesson's knobs: β of KL, χ² and group KL, r of the KL ball, α of CVaR. Every
            method runs there on every seed (the ``headline`` runs: the boundaries and the verdicts).
        seeds: the seeds; each draws a data set and one initialisation shared by all methods (paired runs).
        kl_betas, cvar_alphas: extra knob values for the sweeps (β for the β methods, α for CVaR).
        methods: which of :data:`TOY_METHODS` to train (ERM is always trained: it is the baseline).
        sweep: the methods that also run at every value of their grid (the others only at the lesson's knob).
        n_train, minority_fraction, noise: the data (:func:`dro_lab.data.make_minority_blobs`).
        epochs, lr, momentum: full-batch SGD, the same for every method.
        resolution: mesh points per axis of the boundary grids (60: a smooth p = ½ line, and six boundaries that
            weigh 0.1 MB on the site, against 0.46 MB at 120).
        device: where to train.

    Returns:
        :class:`MinorityToy`.
    """
    beta = check_number(beta, "beta", low=0, low_open=True)
    radius = check_number(radius, "radius", low=0)
    alpha = check_number(alpha, "alpha", low=0, high=1, low_open=True)
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise TypeError(f"seeds must be a non-empty list of integers, got {seeds!r}")
    seeds = [check_int(s, f"seeds[{i}]", low=0) for i, s in enumerate(seeds)]
    betas, alphas = _check_grid(kl_betas, "kl_betas"), _check_grid(cvar_alphas, "cvar_alphas", alpha=True)
    if isinstance(methods, str) or any(not isinstance(m, str) or m not in TOY_METHODS for m in methods):
        raise ValueError(f"methods must be a list of {list(TOY_METHODS)}, got {methods!r}")
    methods = ["ERM", *[m for m in TOY_METHODS if m in methods and m != "ERM"]]
    if isinstance(sweep, str) or any(not isinstance(m, str) or m not in TOY_METHODS for m in sweep):
        raise ValueError(f"sweep must be a list of {list(TOY_METHODS)}, got {sweep!r}")
    n_train = check_int(n_train, "n_train", low=20)
    epochs = check_int(epochs, "epochs")
    resolution = check_int(resolution, "resolution", low=2)
    own = {"beta": beta, "radius": radius, "alpha": alpha}
    grid = {"beta": sorted({beta, *betas}), "radius": [radius], "alpha": sorted({alpha, *alphas}, reverse=True)}
    arms = [
        (m, v)
        for m in methods
        for v in ([None] if TOY_METHODS[m] is None else grid[TOY_METHODS[m]] if m in sweep else [own[TOY_METHODS[m]]])
    ]
    headline = {m: _label(m, None if TOY_METHODS[m] is None else own[TOY_METHODS[m]]) for m in methods}

    runs, models, histories = [], {}, {}
    first = {}
    for s in seeds:
        train, test = make_minority_blobs(n_train, minority_fraction=minority_fraction, noise=noise, seed=s)
        seed_everything(s)
        base = LogisticRegression(2, 2)
        for method, value in arms:
            model = clone_model(base)
            strategy = toy_strategy(method, value)
            hist = fit(model, train, test=test, strategy=strategy, epochs=epochs, batch_size=len(train), lr=lr,
                       momentum=momentum, device=device, seed=s, progress=False)  # fmt: skip
            label, knob = _label(method, value), TOY_METHODS[method]
            is_head = knob is None or value == own[knob]
            angle, norm = _geometry(model)
            majority, minority = hist.last["test_per_group_accuracy"][:2]
            runs.append({
                "method": method, "label": label, "knob": knob, "value": value, "seed": s, "headline": is_head,
                **{k: (value if knob == k else None) for k in ("beta", "alpha", "radius")},
                "accuracy": hist.last["test_accuracy"], "worst_group_accuracy": hist.last["test_worst_group_accuracy"],
                "majority_accuracy": majority, "minority_accuracy": minority, "angle": angle, "weight_norm": norm,
                "train_objective": hist.last["train_objective"], "wobble": _wobble(hist),
            })  # fmt: skip
            if s == seeds[0] and is_head:
                models[label], histories[label] = model, hist
        if s == seeds[0]:
            first = {"train": train, "test": test}
    points = first["train"].x
    grids = {label: model_on_grid(m, points, resolution=resolution, pad=0.5) for label, m in models.items()}
    config = {
        "n_train": n_train, "epochs": epochs, "lr": lr, "momentum": momentum, "minority_fraction": minority_fraction,
        "noise": noise, "beta": beta, "radius": radius, "alpha": alpha, "kl_betas": betas, "cvar_alphas": alphas,
    }  # fmt: skip
    return MinorityToy(runs, models, histories, grids, first["train"], first["test"], headline, seeds, config)
