"""Lesson 07's study, every method of the course on one benchmark: a method registry and a runner.

The every-method comparison runs one method per course idea on the same data, the same model, the same
optimizer, the same seeds and the same thread count, through the one training engine
:func:`dro_lab.fit`::

    rows = run_comparison(["ERM", "KL-DRO", "ALSO"], seeds=(0, 1, 2), epochs=20, beta=10.0)
    table = summarise(rows)                 # mean ± sd over seeds, per method
    front = pareto_front(table)             # methods no other method beats on both accuracies

* :data:`METHODS` — an ordered mapping ``name -> MethodSpec`` (family, knob, description, strategy);
* :func:`make_benchmark` — imbalanced digits with groups (the minority classes thinned in training only);
* :func:`run_comparison` — one row per method × seed: average and worst-group test accuracy, seconds per epoch;
* :func:`summarise`, :func:`pareto_front`, :func:`paired_differences` — the figure's, table's and verdicts' numbers.

Symbols, as in the course glossary: β the KL inverse temperature (KL-DRO, HWS; ALSO's τ = 1/β), r DONE's
KL temperature, and four different α's — the CVaR level, the importance-sampling uniform mixing, ALSO's
optimism and the label-smoothing factor — each with its own argument name.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import torch

from dro_lab._validation import check_bool, check_int, check_number, check_optional_int
from dro_lab.data.embedded import load_digits
from dro_lab.data.groups import assign_groups, groups_from_classes, make_imbalanced
from dro_lab.engine.loop import fit
from dro_lab.models import MLP
from dro_lab.strategies import STRATEGIES
from dro_lab.utils import resolve_device, seed_everything

__all__ = [
    "FAMILIES",
    "MethodSpec",
    "METHODS",
    "available_methods",
    "make_benchmark",
    "run_comparison",
    "summarise",
    "pareto_front",
    "paired_differences",
]


#: What a method knows of the groups: the families :attr:`MethodSpec.family` names.
FAMILIES: Mapping[str, str] = MappingProxyType(
    {
        "baseline": "the baselines the papers compare with (ERM, adversarial training, label smoothing)",
        "groups": "told the classes or groups of the training examples",
        "hard examples": "not told the groups: finds the hard examples through the loss or the inputs",
    }
)


@dataclass(frozen=True)
class MethodSpec:
    """One method of the comparison: a strategy of :data:`dro_lab.strategies.STRATEGIES` and its options.

    Attributes:
        name: the display name (the key in :data:`METHODS`).
        symbol: the knob :func:`run_comparison` passes to it, in the paper's symbols (``"β"``,
            ``"α (CVaR level)"``, ``"r"`` …), or ``"—"`` for none.
        description: one line on what it does.
        strategy: the class name in :data:`dro_lab.strategies.STRATEGIES`.
        options: ``options(knobs) -> dict`` of keyword arguments; ``knobs`` holds every argument of
            :func:`run_comparison`.
        smoke: cheap enough for the smoke preset (all of them are, at the default budget).
        family: ``"groups"`` (told the classes or groups of the training examples), ``"hard examples"`` (a DRO
            method that finds them through the loss or the inputs) or ``"baseline"`` (ERM, AT, LS; see
            :data:`FAMILIES`).
    """

    name: str
    symbol: str
    description: str
    strategy: str
    options: Callable[[Mapping], dict] = lambda knobs: {}
    smoke: bool = True
    family: str = "baseline"

    def __post_init__(self):
        for field in ("name", "symbol", "description", "strategy"):
            if not isinstance(getattr(self, field), str):
                raise TypeError(f"MethodSpec.{field} must be a str, got {type(getattr(self, field)).__name__}")
        if not self.name:
            raise ValueError("MethodSpec.name must not be empty")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"MethodSpec.strategy: unknown strategy {self.strategy!r}; available: {list(STRATEGIES)}")
        if not callable(self.options):
            raise TypeError(f"MethodSpec.options must be a callable knobs -> dict, got {type(self.options).__name__}")
        if self.family not in FAMILIES:
            raise ValueError(f"MethodSpec.family must be one of {list(FAMILIES)}, got {self.family!r}")

    def build(self, knobs: Mapping):
        """A fresh strategy for one run."""
        return STRATEGIES[self.strategy](**self.options(knobs))

    def knob(self, knobs: Mapping) -> str:
        """The knob's value as text, e.g. ``"β = 10"`` (``""`` for a method without one)."""
        fmt = _KNOB_TEXT.get(self.name)
        return fmt(knobs) if fmt else ""


_SPECS = [
    MethodSpec("ERM", "—", "uniform batches, mean loss (β = 0 of every DRO method)", "ERM"),
    MethodSpec(
        "Static weights",
        "—",
        "uniform batches, each loss weighted by its inverse class frequency (ALSO's frozen-π baseline)",
        "StaticWeightsStrategy",
        family="groups",
    ),
    MethodSpec(
        "Upsampling",
        "—",
        "examples drawn with probability ∝ 1/N_class, mean loss",
        "UpsamplingStrategy",
        family="groups",
    ),
    MethodSpec(
        "KL-DRO",
        "β",
        "each batch's losses reduced by (1/β)·log mean exp(β·ℓ): weights ∝ e^{βℓ}",
        "RobustLossStrategy",
        lambda k: dict(divergence="kl", beta=k["beta"]),
        family="hard examples",
    ),
    MethodSpec(
        "CVaR",
        "α (CVaR level)",
        "the mean of the worst α-fraction of each batch's losses",
        "RobustLossStrategy",
        lambda k: dict(divergence="cvar", alpha=k["cvar_alpha"]),
        family="hard examples",
    ),
    MethodSpec(
        "HWS",
        "β",
        "hardness-weighted sampling: indices drawn from q ∝ e^{β·ℓ} over a loss history, mean loss",
        "HardnessWeightedStrategy",
        lambda k: dict(beta=k["beta"]),
        family="hard examples",
    ),
    MethodSpec(
        "IS (grad norm)",
        "α (uniform mixing)",
        "importance sampling p = (1−α)·u + α·p^GN by per-sample gradient norms, weights 1/(N·p)",
        "ImportanceSamplingStrategy",
        lambda k: dict(scheme="grad_norm", alpha=k["is_alpha"], refresh_every=k["is_refresh_every"]),
        family="hard examples",
    ),
    MethodSpec(
        "Online group DRO",
        "η (step size)",
        "Sagawa et al.: exponentiated-gradient ascent on group weights, mean loss per group",
        "OnlineGroupDROStrategy",
        lambda k: dict(step_size=k["group_step"], grouping="group"),
        family="groups",
    ),
    MethodSpec(
        "ALSO",
        "τ = 1/β, α (optimism)",
        "ALSO optimizer: optimistic Adam on θ, KL-prox steps on group weights π (class-balanced prior)",
        "GroupDROStrategy",
        lambda k: dict(
            method="also",
            grouping="group",
            prior="class_balanced",
            tau=1.0 / k["beta"],
            alpha=k["also_alpha"],
            pi_lr=k["pi_lr"],
        ),
        family="groups",
    ),
    MethodSpec(
        "AT",
        "ε",
        "Madry's adversarial training: every batch replaced by its PGD examples",
        "AdversarialTrainingStrategy",
        lambda k: dict(eps=k["eps"], steps=k["attack_steps"]),
    ),
    MethodSpec(
        "DONE",
        "r",
        "doubly robust AT: PGD examples and KL-DRO instance weights ω ∝ e^{ℓ/r}",
        "DONEStrategy",
        lambda k: dict(eps=k["eps"], r=k["done_r"], steps=k["attack_steps"]),
        family="hard examples",
    ),
    MethodSpec(
        "LS",
        "α (label smoothing)",
        "label smoothing: true class 1 − α, others α/(k−1)",
        "LabelSmoothingStrategy",
        lambda k: dict(alpha=k["ls_alpha"]),
    ),
    MethodSpec(
        "GI-LS",
        "α (label smoothing), γ",
        "LS on feature-space worst-case shifts (T ascent steps), then on the batch (two steps)",
        "GILSStrategy",
        lambda k: dict(alpha=k["ls_alpha"], gamma=k["gils_gamma"], eta=k["gils_eta"], steps=k["gils_steps"]),
        family="hard examples",
    ),
]


#: The methods of the comparison, in the course's order (name -> :class:`MethodSpec`).
METHODS: Mapping[str, MethodSpec] = MappingProxyType({s.name: s for s in _SPECS})


_KNOB_TEXT: dict[str, Callable[[Mapping], str]] = {
    "KL-DRO": lambda k: f"β = {k['beta']:g}",
    "CVaR": lambda k: f"α = {k['cvar_alpha']:g}",
    "HWS": lambda k: f"β = {k['beta']:g}",
    "IS (grad norm)": lambda k: f"α = {k['is_alpha']:g}",
    "Online group DRO": lambda k: f"η = {k['group_step']:g}",
    "ALSO": lambda k: f"τ = 1/β = {1.0 / k['beta']:.3g}, α = {k['also_alpha']:g}",
    "AT": lambda k: f"ε = {k['eps']:g}, K = {k['attack_steps']}",
    "DONE": lambda k: f"r = {k['done_r']:g}, ε = {k['eps']:g}, K = {k['attack_steps']}",
    "LS": lambda k: f"α = {k['ls_alpha']:g}",
    "GI-LS": lambda k: f"α = {k['ls_alpha']:g}, γ = {k['gils_gamma']:g}, T = {k['gils_steps']}",
}


def available_methods(*, smoke_only: bool = False) -> tuple[str, ...]:
    """The names :func:`run_comparison` accepts, in the course's order.

    Args:
        smoke_only: only the methods cheap enough for the smoke preset.
    """
    check_bool(smoke_only, "smoke_only")
    return tuple(name for name, spec in METHODS.items() if spec.smoke or not smoke_only)


def _method_specs(methods) -> list[MethodSpec]:
    """The methods to run: names from :data:`METHODS` or :class:`MethodSpec` objects of one's own."""
    if methods is None:
        return list(METHODS.values())
    if isinstance(methods, (str, MethodSpec)):
        methods = [methods]
    try:
        items = list(methods)
    except TypeError:
        raise ValueError(f"methods must be None or a sequence of method names, got {methods!r}") from None
    if not items:
        raise ValueError(f"methods must name at least one method; available: {list(METHODS)}")
    unknown = [m for m in items if not isinstance(m, MethodSpec) and m not in METHODS]
    if unknown:
        raise ValueError(
            f"methods: unknown method(s) {unknown}; available: {list(METHODS)}, or a MethodSpec of your own"
        )
    specs = [m if isinstance(m, MethodSpec) else METHODS[m] for m in items]
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"methods must not repeat a name, got {names}")
    return specs


def _seeds(seeds) -> list[int]:
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise ValueError(f"seeds must be a non-empty sequence of integers ≥ 0, got {seeds!r}")
    out = [check_int(s, "seeds (each seed)", low=0) for s in seeds]
    if not out:
        raise ValueError("seeds must be a non-empty sequence of integers ≥ 0, got an empty one")
    if len(set(out)) != len(out):
        raise ValueError(f"seeds must be distinct, got {out}")
    return out


def make_benchmark(
    *,
    minority_classes: Sequence[int] = (0, 1, 2, 3, 4),
    keep_fraction: float = 0.1,
    groups: str = "minority",
    seed: int = 0,
    test_fraction: float = 0.25,
):
    """Imbalanced digits with groups: ``(train, test)`` :class:`dro_lab.data.ArrayDataset` of flat 8×8 images.

    scikit-learn's 1,797 digits are split (stratified by class, seeded); in the training part only, each of
    ``minority_classes`` keeps ``keep_fraction`` of its examples (drawn with ``seed``); the test part keeps
    every class, cut to the smallest class's count (43 images each at the default split, a seeded draw), so
    average test accuracy weighs the classes equally.

    Args:
        minority_classes, keep_fraction: the classes thinned in training, and the share of each they keep.
        groups: ``"minority"`` (1 for the minority classes, 0 for the others) or ``"class"`` (the class itself).
        seed, test_fraction: the split's seed and test share.
    """

    if groups not in ("minority", "class"):
        raise ValueError(f"groups must be 'minority' or 'class', got {groups!r}")
    check_number(keep_fraction, "keep_fraction", low=0.0, high=1.0, low_open=True)
    seed = check_int(seed, "seed", low=0)
    try:
        minority = sorted({int(c) for c in minority_classes})
    except (TypeError, ValueError):
        raise ValueError(
            f"minority_classes must be a sequence of class ids in [0, 10), got {minority_classes!r}"
        ) from None
    if not minority or any(not 0 <= c < 10 for c in minority) or len(minority) == 10:
        raise ValueError(f"minority_classes must name 1 to 9 classes in [0, 10), got {minority_classes!r}")
    train, test = load_digits(flatten=True, seed=seed, test_fraction=test_fraction)
    train = make_imbalanced(train, classes=minority, keep_fraction=keep_fraction, generator=seed)
    # exactly balanced test set: every class cut to the smallest class's count (a seeded draw)
    counts = torch.bincount(test.y, minlength=10)
    m = int(counts[counts > 0].min())
    gen = torch.Generator().manual_seed(seed)
    keep = torch.zeros(len(test), dtype=torch.bool)
    for c in range(10):
        members = (test.y == c).nonzero().squeeze(1)
        keep[members[torch.randperm(members.numel(), generator=gen)[:m]]] = True
    test = test.subset(keep)
    if groups == "minority":
        mapping = [int(c in minority) for c in range(10)]
        return (
            assign_groups(train, lambda x, y: groups_from_classes(y, mapping), num_groups=2),
            assign_groups(test, lambda x, y: groups_from_classes(y, mapping), num_groups=2),
        )
    return (
        assign_groups(train, lambda x, y: y.clone(), num_groups=10),
        assign_groups(test, lambda x, y: y.clone(), num_groups=10),
    )


def _check_pair(pair, name: str):
    if not isinstance(pair, (tuple, list)):
        raise TypeError(f"{name} must be a (train, test) pair of datasets, got {type(pair).__name__}")
    if len(pair) != 2:
        raise ValueError(f"{name} must be a (train, test) pair of datasets, got {len(pair)} items")
    train, test = pair
    for part, ds in (("train", train), ("test", test)):
        if getattr(ds, "groups", None) is None:
            raise ValueError(
                f"{name}: the {part} set has no groups; worst-group accuracy needs them "
                "(dro_lab.data.assign_groups, or make_benchmark)"
            )
    return train, test


def run_comparison(
    methods: Sequence[str] | None = None,
    *,
    data=None,
    seeds: Sequence[int] = (0,),
    epochs: int = 10,
    batch_size: int = 64,
    lr: float = 3e-3,
    hidden: Sequence[int] = (64,),
    beta: float = 10.0,
    done_r: float = 1.0,
    cvar_alpha: float = 0.2,
    is_alpha: float = 0.5,
    also_alpha: float = 1.0,
    ls_alpha: float = 0.1,
    group_step: float = 0.01,
    pi_lr: float = 0.01,
    eps: float = 0.1,
    attack_steps: int = 2,
    gils_gamma: float = 1.0,
    gils_eta: float = 0.1,
    gils_steps: int = 2,
    is_refresh_every: int | None = 1,
    threads: int | None = 1,
    device: str = "auto",
    warmup: bool = True,
    progress: bool = True,
    callback: Callable[[dict], None] | None = None,
) -> list[dict]:
    r"""Train every method in ``methods`` with every seed in ``seeds``; one row per (method, seed).

    Every run goes through :func:`dro_lab.fit` with Adam (ALSO: optimistic Adam with its own π) on an
    :class:`dro_lab.MLP` built right after ``dro_lab.seed_everything(seed)``: for one seed every method starts
    from the same weights and draws from ``fit``'s generator seeded with ``seed`` (reproducible on a CPU).

    Args:
        methods: names from :data:`METHODS` (``None``: all, in the course's order) or :class:`MethodSpec`
            objects of one's own (a method the registry does not hold: any strategy of
            :data:`dro_lab.strategies.STRATEGIES` with its options).
        data: ``None`` (:func:`make_benchmark` with ``seed=s`` for seed ``s``: split and subsample vary with
            the seed), a dict of :func:`make_benchmark`'s other arguments (``minority_classes``,
            ``keep_fraction``, ``groups``, ``test_fraction``; the seed is each run's), a ``(train, test)`` pair
            used for every seed, or a callable ``seed -> (train, test)``. Both sets must carry group ids.
        seeds: non-empty, distinct integers ≥ 0.
        beta: β > 0 of KL-DRO and HWS; ALSO's τ = 1/β.
        done_r: DONE's KL temperature r > 0 (weights ∝ e^{ℓ/r}).
        cvar_alpha: CVaR level α ∈ (0, 1]. is_alpha: importance sampling's uniform-mixing α ∈ [0, 1).
        also_alpha: ALSO's optimism α ≥ 0. ls_alpha: label-smoothing α ∈ [0, 0.9) (LS and GI-LS).
        group_step: online group DRO's η > 0. pi_lr: ALSO's step on π (≥ 0).
        eps, attack_steps: the L∞ budget (pixel units) and PGD steps of AT and DONE.
        gils_gamma, gils_eta, gils_steps: GI-LS's transport penalty γ (β = 1/γ), ascent step η and T.
        is_refresh_every: importance sampling's score refresh (1: all N gradient norms before every draw,
            the paper's; ``None``: a stale table updated by each batch).
        threads: ``torch.set_num_threads`` for the whole comparison (restored afterwards), so that every
            method is timed with the same number of threads; ``None`` leaves torch's setting.
        device: ``"auto"``, ``"cpu"``, ``"cuda"`` …
        warmup: one untimed ERM epoch before the first timed run (first-call overheads are not charged to
            the first method).
        progress: a progress bar over the runs. callback: ``callback(row)`` after each run.

    Returns:
        A list of dicts with ``method``, ``seed``, ``avg_acc``, ``worst_group_acc``, ``worst_class_acc``,
        ``per_group_acc``, ``seconds_per_epoch`` (mean wall time of the training epochs, evaluation
        excluded), ``epochs``, ``family``, ``symbol``, ``knob``, ``strategy`` (the strategy's own name) and
        ``family`` (:attr:`MethodSpec.family`).

    Raises:
        ValueError: an unknown method name, an empty seed list, or a knob outside its range; the message
            names the argument.
    """
    specs, seed_list = _method_specs(methods), _seeds(seeds)
    knobs = _check_knobs(
        beta=beta,
        done_r=done_r,
        cvar_alpha=cvar_alpha,
        is_alpha=is_alpha,
        also_alpha=also_alpha,
        ls_alpha=ls_alpha,
        group_step=group_step,
        pi_lr=pi_lr,
        eps=eps,
        attack_steps=attack_steps,
        gils_gamma=gils_gamma,
        gils_eta=gils_eta,
        gils_steps=gils_steps,
        is_refresh_every=is_refresh_every,
    )
    budget = dict(
        epochs=check_int(epochs, "epochs"),
        batch_size=check_int(batch_size, "batch_size"),
        lr=check_number(lr, "lr", low=0.0, low_open=True),
        device=resolve_device(device),
    )
    hidden = (hidden,) if isinstance(hidden, numbers.Integral) else hidden
    hidden = tuple(check_int(h, "hidden (each width)") for h in hidden)
    threads = check_optional_int(threads, "threads")
    get_data = _data_source(data)
    old_threads = torch.get_num_threads()
    bar = _progress(len(specs) * len(seed_list)) if progress else None
    rows: list[dict] = []
    try:
        if threads is not None:  # every method timed with the same number of threads
            torch.set_num_threads(threads)
        for s in seed_list:
            train, test = _check_pair(get_data(s), "data")
            if warmup and s == seed_list[0]:  # first-call overheads are not charged to the first method
                fit(
                    _model(train, hidden),
                    train,
                    epochs=1,
                    batch_size=budget["batch_size"],
                    lr=budget["lr"],
                    optimizer="adam",
                    device=budget["device"],
                    seed=s,
                    progress=False,
                )
            for spec in specs:
                if bar is not None:
                    bar.set_postfix_str(f"{spec.name}, seed {s}")
                rows.append(_run_one(spec, knobs, train, test, s, hidden, budget))
                if bar is not None:
                    bar.update(1)
                if callback is not None:
                    callback(rows[-1])
    finally:
        if threads is not None:
            torch.set_num_threads(old_threads)
        if bar is not None:
            bar.close()
    return rows


def _check_knobs(
    *,
    beta,
    done_r,
    cvar_alpha,
    is_alpha,
    also_alpha,
    ls_alpha,
    group_step,
    pi_lr,
    eps,
    attack_steps,
    gils_gamma,
    gils_eta,
    gils_steps,
    is_refresh_every,
) -> dict:
    """Every method's knob, checked once: the ``knobs`` that :meth:`MethodSpec.build` reads."""
    return dict(
        beta=check_number(beta, "beta", low=0.0, low_open=True),
        done_r=check_number(done_r, "done_r", low=0.0, low_open=True),
        cvar_alpha=check_number(cvar_alpha, "cvar_alpha", low=0.0, high=1.0, low_open=True),
        is_alpha=check_number(is_alpha, "is_alpha", low=0.0, high=1.0, high_open=True),
        also_alpha=check_number(also_alpha, "also_alpha", low=0.0),
        ls_alpha=check_number(ls_alpha, "ls_alpha", low=0.0, high=0.9, high_open=True),
        group_step=check_number(group_step, "group_step", low=0.0, low_open=True),
        pi_lr=check_number(pi_lr, "pi_lr", low=0.0),
        eps=check_number(eps, "eps", low=0.0, high=1.0),
        attack_steps=check_int(attack_steps, "attack_steps"),
        gils_gamma=check_number(gils_gamma, "gils_gamma", low=0.0),
        gils_eta=check_number(gils_eta, "gils_eta", low=0.0, low_open=True),
        gils_steps=check_int(gils_steps, "gils_steps", low=0),
        is_refresh_every=check_optional_int(is_refresh_every, "is_refresh_every"),
    )


def _data_source(data) -> Callable[[int], tuple]:
    """``seed -> (train, test)`` from run_comparison's ``data`` argument."""
    if data is None:
        return lambda s: make_benchmark(seed=s)
    if isinstance(data, Mapping):
        unknown = sorted(set(data) - {"minority_classes", "keep_fraction", "groups", "test_fraction"})
        if unknown:
            raise ValueError(f"data: {unknown} are not arguments of make_benchmark (the seed is each run's)")
        options = dict(data)
        make_benchmark(**options, seed=0)  # bad values raise here, before any training
        return lambda s: make_benchmark(**options, seed=s)
    if callable(data):
        return data
    fixed = _check_pair(data, "data")
    return lambda s: fixed


def _progress(total: int):
    from tqdm.auto import tqdm  # a widget in Jupyter: imported when a bar is asked for

    return tqdm(total=total, desc="comparison", leave=False)


def _model(train, hidden: tuple[int, ...]) -> MLP:
    k = int(getattr(train, "num_classes", None) or int(train.y.max()) + 1)
    return MLP(int(np.prod(train.in_shape)), k, hidden=hidden)


def _run_one(spec: MethodSpec, knobs: Mapping, train, test, seed: int, hidden: tuple[int, ...], budget: dict) -> dict:
    """One method with one seed: a fresh model from ``seed``, trained through fit; its row."""
    strategy = spec.build(knobs)
    seed_everything(seed)  # same seed, same initial weights for every method
    model = _model(train, hidden)
    start = time.perf_counter()
    hist = fit(model, train, strategy=strategy, test=test, optimizer="adam", seed=seed, progress=False, **budget)
    wall = time.perf_counter() - start
    last = hist.last
    return {
        "method": spec.name,
        "seed": seed,
        "avg_acc": float(last["test_accuracy"]),
        "worst_group_acc": float(last["test_worst_group_accuracy"]),
        "worst_class_acc": float(last["test_worst_class_accuracy"]),
        "per_group_acc": [float(v) for v in last["test_per_group_accuracy"]],
        "seconds_per_epoch": float(np.mean(hist["seconds"])),
        "seconds_total": wall,
        "epochs": budget["epochs"],
        "family": spec.family,
        "symbol": spec.symbol,
        "knob": spec.knob(knobs),
        "strategy": hist.strategy,
        "device": str(budget["device"]),
    }


_ROW_KEYS = ("method", "seed", "avg_acc", "worst_group_acc", "seconds_per_epoch")


def _check_rows(rows) -> list[dict]:
    try:
        rows = list(rows)
    except TypeError:
        raise TypeError(f"rows must be a list of dicts from run_comparison, got {type(rows).__name__}") from None
    if not rows:
        raise ValueError("rows is empty: run_comparison returned no runs")
    for i, r in enumerate(rows):
        missing = [key for key in _ROW_KEYS if not isinstance(r, Mapping) or key not in r]
        if missing:
            raise ValueError(f"rows[{i}] lacks {missing}; pass the rows run_comparison returns")
    return rows


def _mean_sd(values: list[float]) -> tuple[float, float]:
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def summarise(rows, *, reference: str = "ERM") -> list[dict]:
    """Mean and sample standard deviation over seeds, one dict per method (in order of first appearance).

    Keys: ``method``, ``n_seeds``, ``avg_acc`` / ``avg_acc_sd``, ``worst_group_acc`` / ``worst_group_acc_sd``,
    ``seconds_per_epoch`` / ``seconds_per_epoch_sd``, ``cost_vs_reference`` (mean seconds per epoch divided by
    the ``reference`` method's; ``nan`` when it was not run), ``family``, ``symbol``, ``knob``. With one seed
    every ``_sd`` is 0.

    Args:
        rows: the rows :func:`run_comparison` returns (one per method and seed).
        reference: the method of ``cost_vs_reference``.
    """
    rows = _check_rows(rows)
    if not isinstance(reference, str):
        raise TypeError(f"reference must be a method name (str), got {type(reference).__name__}")
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["method"], []).append(r)
    ref_sec = float(np.mean([r["seconds_per_epoch"] for r in by[reference]])) if reference in by else math.nan
    out = []
    for name, rs in by.items():
        entry = {"method": name, "n_seeds": len(rs)}
        for key in ("avg_acc", "worst_group_acc", "seconds_per_epoch"):
            entry[key], entry[f"{key}_sd"] = _mean_sd([float(r[key]) for r in rs])
        entry["cost_vs_reference"] = entry["seconds_per_epoch"] / ref_sec if ref_sec > 0 else math.nan
        for key in ("family", "symbol", "knob"):
            entry[key] = rs[0].get(key, "")
        out.append(entry)
    return out


def pareto_front(summary, *, x: str = "avg_acc", y: str = "worst_group_acc") -> list[str]:
    """The methods no other method dominates on (``x``, ``y``), both larger-is-better, sorted by ``x``.

    A method is dominated when another is at least as good on both and strictly better on one; methods
    with identical points are all on the front.

    Args:
        summary: dicts with ``method``, ``x`` and ``y`` keys (:func:`summarise`'s).
        x, y: the two metrics.
    """
    if isinstance(summary, Mapping) or not isinstance(summary, Iterable):
        raise ValueError(f"summary must be a list of dicts (from summarise), got {type(summary).__name__}")
    entries = list(summary)
    if not entries:
        raise ValueError("summary is empty")
    for i, e in enumerate(entries):
        if not isinstance(e, Mapping) or any(k not in e for k in ("method", x, y)):
            raise ValueError(f"summary[{i}] must be a dict with 'method', {x!r} and {y!r}")
    pts = np.array([[float(e[x]), float(e[y])] for e in entries])
    if not np.isfinite(pts).all():
        raise ValueError(f"summary holds non-finite {x!r} / {y!r} values")
    ge = (pts[None, :, :] >= pts[:, None, :]).all(-1)  # ge[i, j]: j at least as good as i on both
    gt = (pts[None, :, :] > pts[:, None, :]).any(-1)  # gt[i, j]: j strictly better on one
    dominated = (ge & gt).any(1)
    keep = [i for i in range(len(entries)) if not dominated[i]]
    keep.sort(key=lambda i: (pts[i, 0], pts[i, 1]))
    return [entries[i]["method"] for i in keep]


def paired_differences(rows, *, metric: str = "worst_group_acc", reference: str = "ERM") -> dict[str, np.ndarray]:
    """Per-seed differences ``method − reference`` of ``metric`` over the seeds both ran (sorted by seed).

    Args:
        rows: the rows :func:`run_comparison` returns.
        metric: the metric compared; ``reference``: the method subtracted.

    Returns:
        ``{method: array}`` for every method but the reference.
    """
    rows = _check_rows(rows)
    if metric not in rows[0]:
        raise ValueError(f"metric must be a key of the rows such as 'avg_acc' or 'worst_group_acc', got {metric!r}")
    table: dict[str, dict[int, float]] = {}
    for r in rows:
        table.setdefault(r["method"], {})[int(r["seed"])] = float(r[metric])
    if reference not in table:
        raise ValueError(f"reference {reference!r} was not run; methods in rows: {list(table)}")
    ref = table[reference]
    out = {}
    for name, per_seed in table.items():
        if name == reference:
            continue
        common = sorted(set(per_seed) & set(ref))
        out[name] = np.array([per_seed[s] - ref[s] for s in common], dtype=float)
    return out
