r"""The studies around GI-LS's experiment (Wang, Zhang, Xu & Guo, 2024): its Bayesian optimisation (§4.2, Table 3,
Fig. 3) on a validation split, the transport cost against γ and Table 8's γ perturbations (§4.4), the cost per
epoch against T, the data split's class counts and the 2-D toy of the lesson's panel.

Each takes the experiment's data (:class:`~dro_lab.experiments.Splits`, from ``GILS_EXPERIMENT.data``) and
configuration, and trains as :func:`~dro_lab.experiments.run_experiment` trains the GI-LS arm
(:func:`~dro_lab.experiments.train_arm`), so a lesson's study and the experiment's runs are the same computation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from dro_lab._validation import check_choice, check_int, check_module, check_nonempty, check_number
from dro_lab.attacks import gils_shift
from dro_lab.data.datasets import ArrayDataset
from dro_lab.engine.loop import fit
from dro_lab.experiments.papers.gils import GILS_EXPERIMENT
from dro_lab.experiments.protocol import Splits
from dro_lab.experiments.runner import train_arm
from dro_lab.experiments.tuning import GILS_SEARCH_SPACE, best_at_bounds, tune
from dro_lab.models import MLP
from dro_lab.strategies.smoothing import GILSStrategy, LabelSmoothingStrategy
from dro_lab.utils import seed_everything

__all__ = [
    "TABLE8_GAMMAS",
    "bo_search_space",
    "gils_bo_objective",
    "compare_samplers",
    "bo_studies_markdown",
    "transport_cost_sweep",
    "stable_gamma_limit",
    "gamma_perturbation_shift",
    "gils_epoch_seconds",
    "split_counts_markdown",
    "gils_toy_problem",
]

#: Table 8's perturbed penalties: γ = 10⁻³ with its denominator moved by ±0.1, ±1, ±10 and ±100.
TABLE8_GAMMAS: Mapping[str, float] = {f"1/{d:g}": 1.0 / d for d in (1000.1, 999.9, 1001, 999, 1010, 990, 1100, 900)}


def _splits(splits) -> Splits:
    if not isinstance(splits, Splits):
        raise TypeError(
            f"splits must be the experiment's Splits (GILS_EXPERIMENT.data(...)), got {type(splits).__name__}"
        )
    return splits


def bo_search_space(max_steps: int, max_epochs: int, *, min_epochs: int | None = None) -> dict:
    """:data:`~dro_lab.experiments.GILS_SEARCH_SPACE` (α ∈ [0, 0.5], η ∈ [10⁻³, 0.3] log-scaled) with T narrowed to
    ``0..max_steps`` and the epochs to ``min_epochs..max_epochs`` (default: half of ``max_epochs``, at least 1) —
    the box a preset can afford; the paper's §4.2 searched T ∈ 1..15 and 21..60 epochs."""
    max_steps = check_int(max_steps, "max_steps", low=0)
    max_epochs = check_int(max_epochs, "max_epochs", low=1)
    low = max(1, max_epochs // 2) if min_epochs is None else check_int(min_epochs, "min_epochs", low=1)
    if low > max_epochs:
        raise ValueError(f"min_epochs ({low}) must not exceed max_epochs ({max_epochs})")
    return {**GILS_SEARCH_SPACE, "steps": ("int", 0, max_steps), "epochs": ("int", low, max_epochs)}


def gils_bo_objective(
    splits: Splits,
    config: Mapping,
    *,
    metric: str = "balanced_accuracy",
    seed: int = 0,
    device: str | torch.device = "auto",
    experiment=GILS_EXPERIMENT,
) -> Callable[[dict], float]:
    """The objective of the paper's Bayesian optimisation (§4.2), on a **validation** split: ``params -> score``
    trains GI-LS at ``params`` (``alpha``, ``steps``, ``eta``, ``epochs``, and any other knob of the GI-LS arm such
    as ``lr``) on ``splits.train`` exactly as the experiment's runner does, and returns ``metric`` on
    ``splits.val``. The paper scored every trial on the test split and reported the best of 20 (Table 3); pass
    the result to :func:`~dro_lab.experiments.tune` and evaluate the chosen parameters on the test split once."""
    splits = _splits(splits)
    if splits.val is None:
        raise ValueError("splits has no validation split to score the trials on")
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping (experiment.config(...)), got {type(config).__name__}")
    check_choice(metric, "metric", ("balanced_accuracy", "accuracy", "worst_class_accuracy", "macro_f1"))
    check_int(seed, "seed", low=0)
    tuning = Splits(splits.train, None, splits.val, splits.info)

    def objective(params: dict) -> float:
        _, _, final = train_arm(experiment, "GI-LS", tuning, config, seed=seed, device=device, **params)
        return float(final[metric])

    return objective


def compare_samplers(
    objective: Callable[[dict], float], space: Mapping, samplers: Sequence[str], *, n_trials: int, seed: int = 0
) -> tuple[dict, dict[str, float]]:
    """One :func:`~dro_lab.experiments.tune` study per sampler of ``samplers`` (``"gp"``, ``"tpe"``,
    ``"random"``) on the same ``objective`` and ``space`` at the same budget of ``n_trials`` and the same
    ``seed``: ``(sampler -> study, sampler -> seconds)``, each time measured around its whole study (the trials
    and the sampler's own work), for :func:`bo_studies_markdown`."""
    check_nonempty(list(samplers), "samplers")
    studies, seconds = {}, {}
    for sampler in samplers:
        start = time.perf_counter()
        studies[sampler] = tune(objective, space, n_trials=n_trials, sampler=sampler, seed=seed)
        seconds[sampler] = time.perf_counter() - start
    return studies, seconds


def bo_studies_markdown(
    studies: Mapping[str, object], space: Mapping, seconds: Mapping[str, float] | None = None
) -> str:
    """A Markdown table of optuna studies (``sampler -> study``): each one's best validation score, its
    (α, T, η, epochs), the parameters on the box's edge (:func:`best_at_bounds`) and, with ``seconds``, its time."""
    check_nonempty(studies, "studies")
    rows = [
        "| sampler | best validation score | best (α, T, η, epochs) | on the box's edge | s |",
        "|---|---|---|---|---|",
    ]
    for name, study in studies.items():
        best = study.best_params
        chosen = f"({best['alpha']:.3f}, {best['steps']}, {best['eta']:.4f}, {best['epochs']})"
        edge = ", ".join(best_at_bounds(study, space)) or "–"
        took = f"{seconds[name]:.1f}" if seconds and name in seconds else "–"
        rows.append(f"| {name} | {study.best_value:.3f} | {chosen} | {edge} | {took} |")
    return "\n".join(rows)


def transport_cost_sweep(
    model, x, y, *, alpha: float, gammas: Sequence[float], etas: Sequence[float], steps: int = 10
) -> dict[float, np.ndarray]:
    r"""η → the mean realised transport cost :math:`\hat\rho=\mathrm{mean}\,\tfrac12\|f(x^T)-f(x)\|^2` of
    :func:`~dro_lab.attacks.gils_shift` (clamped to [0, 1]) for each γ of ``gammas``.
    With γ = 10⁻³ the penalty is negligible next to the loss gradient, so the cost is set by η·T alone; it falls
    once γ‖J_f‖² is comparable to 1/(ηT), and the explicit ascent turns unstable beyond η·γ·‖J_f‖² ≈ 2."""
    check_module(model)
    check_nonempty(list(gammas), "gammas")
    check_nonempty(list(etas), "etas")
    for g in gammas:
        check_number(g, "gammas[i]", low=0)
    return {
        float(e): np.array(
            [float(gils_shift(model, x, y, alpha=alpha, gamma=g, eta=e, steps=steps)[1].mean()) for g in gammas]
        )
        for e in etas
    }


def stable_gamma_limit(gammas: Sequence[float], costs, *, tolerance: float = 0.05) -> float:
    """The largest γ of ``gammas`` up to which ``costs`` does not rise by more than ``tolerance`` (relative) from
    one γ to the next, nor turn non-finite: beyond it the explicit ascent overshoots (the cost grows with γ)."""
    g = [check_number(v, "gammas[i]", low=0) for v in gammas]
    c = np.asarray(costs, dtype=float).reshape(-1)
    if c.size != len(g) or c.size == 0:
        raise ValueError(f"costs must have one value per γ ({len(g)}), got {c.size}")
    for i in range(1, c.size):
        if not math.isfinite(c[i]) or c[i] > (1 + tolerance) * c[i - 1]:
            return g[i - 1]
    return g[-1]


def gamma_perturbation_shift(
    model,
    x,
    y,
    *,
    alpha: float,
    eta: float,
    steps: int,
    gammas: Mapping[str, float] = TABLE8_GAMMAS,
    reference: float = 1e-3,
) -> dict[str, float]:
    """Table 8's experiment without retraining: for each perturbed γ, the largest pixel difference between the
    images GI-LS generates at it and at ``reference`` (same model, images, α, η, T). A training run at a γ whose
    generated images differ by far less than a grey level (1/255) can only differ from the reference run by what
    such differences change — the paper's identical rows are what small γ implies."""
    base = gils_shift(model, x, y, alpha=alpha, gamma=reference, eta=eta, steps=steps, return_cost=False)
    return {
        name: float((gils_shift(model, x, y, alpha=alpha, gamma=g, eta=eta, steps=steps, return_cost=False) - base)
                    .abs().max())
        for name, g in gammas.items()
    }  # fmt: skip


def gils_epoch_seconds(
    splits: Splits,
    config: Mapping,
    steps: Sequence[int],
    *,
    alpha: float,
    gamma: float = 1e-3,
    eta: float = 0.02,
    seed: int = 0,
    device: str | torch.device = "auto",
    experiment=GILS_EXPERIMENT,
) -> tuple[list[float], float]:
    """Seconds of one training epoch of GI-LS on ``splits.train`` for each T of ``steps`` (Algorithm 1:
    one anchor forward, T input-gradient passes and two parameter steps per batch), and of one epoch of plain LS
    at the same α (one step per batch: GI-LS at T = 0 is exactly that computation). Timed by :func:`fit`'s history."""
    splits = _splits(splits)
    check_nonempty(list(steps), "steps")
    options = dict(epochs=1, batch_size=config["batch_size"], lr=config["lr"], device=device, seed=seed,
                   optimizer=config.get("optimizer", "adam"), progress=False)  # fmt: skip

    def one_epoch(strategy) -> float:
        seed_everything(seed)
        return float(
            fit(experiment.model(splits.train, config), splits.train, strategy=strategy, **options)["seconds"][0]
        )

    gils = [one_epoch(GILSStrategy(alpha, gamma=gamma, eta=eta, steps=check_int(t, "steps[i]", low=0))) for t in steps]
    return gils, one_epoch(LabelSmoothingStrategy(alpha))


def split_counts_markdown(splits: Splits) -> str:
    """The images of each class in the training, validation and test splits, with the majority class's share (the
    accuracy of a classifier that always answers it)."""
    splits = _splits(splits)
    names = list(splits.info.get("class_names") or range(splits.train.num_classes))
    rows = ["| split | " + " | ".join(map(str, names)) + " | total | majority-class rate |",
            "|---|" + "---|" * (len(names) + 2)]  # fmt: skip
    for label, part in (("train", splits.train), ("validation", splits.val), ("test", splits.test)):
        if part is None:
            continue
        counts = torch.bincount(part.y.cpu(), minlength=len(names)).tolist()
        total = sum(counts)
        rows.append(f"| {label} | " + " | ".join(map(str, counts)) + f" | {total} | {max(counts) / total:.1%} |")
    return "\n".join(rows)


def gils_toy_problem(
    seed: int = 0, *, n: int = 150, epochs: int = 40
) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    """The 2-D toy of lesson 06's panel (Algorithm 1's shift in the plane): ``n`` points of three Gaussian
    classes (centres (−2, 0), (2, 0), (0, 2.8), sd 0.8, labels in turn) and an MLP (16, 16) trained on them with
    plain cross-entropy (Adam, lr 0.02, batches of 32, on the CPU). Returns ``(model, x, y)``."""
    seed = check_int(seed, "seed", low=0)
    n = check_int(n, "n", low=3)
    epochs = check_int(epochs, "epochs", low=1)
    gen = torch.Generator().manual_seed(seed)
    centres = torch.tensor([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.8]])
    y = torch.arange(n) % 3
    x = centres[y] + 0.8 * torch.randn(n, 2, generator=gen)
    seed_everything(seed)
    model = MLP(2, 3, hidden=(16, 16))
    fit(model, ArrayDataset(x, y, num_classes=3), epochs=epochs, batch_size=32, lr=0.02, optimizer="adam",
        device="cpu", seed=seed, progress=False)  # fmt: skip
    return model.eval(), x, y
