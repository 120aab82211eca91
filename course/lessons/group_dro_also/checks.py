r"""Short training runs that check ALSO's theory (Feoktistov et al., 2025) on real data, through :func:`dro_lab.fit`.

* :func:`trained_parameters` — a seeded MLP trained with a strategy, its parameters before and after as one
  vector each: two runs on the same batches can be compared number by number (with η_π = 0, α = 0 and a uniform
  prior ALSO **is** Adam: "Adam itself can be seen as a particular case of ALSO", §4, after Algorithm 5);
* :func:`mirror_prox_distances` — Optimistic Mirror-Prox (Algorithm 4) on KL-regularised logistic DRO, full
  batch, with the distance :math:`\|\theta_k-\theta^\star\|_2+\|\pi_k-\pi^\star\|_1` to a saddle point found by
  other means (:func:`dro_course.lessons.group_dro_also.saddle.logistic_dro_saddle`) after every step: Theorem 1's
  linear rate;
* :func:`pi_trajectory_run` — ALSO with one weight per class on a small tabular set: π after every epoch and the
  radius :math:`r_t=\mathrm{KL}(\pi_t\|\hat\pi)` it reaches, for β = 1/τ and the optimism α (a lesson's Run
  button calls it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from dro_course.lessons.group_dro_also.saddle import SaddlePoint
from dro_lab._validation import check_int, check_number
from dro_lab.engine.loop import fit
from dro_lab.engine.strategy import Strategy
from dro_lab.models import MLP, LogisticRegression
from dro_lab.strategies.group_dro import GroupDROStrategy
from dro_lab.utils import seed_everything

__all__ = ["mirror_prox_distances", "pi_trajectory_run", "trained_parameters"]


def _flat(model: torch.nn.Module) -> Tensor:
    return torch.cat([p.detach().reshape(-1).double().cpu() for p in model.parameters()])


def _check_data(data, name: str = "data"):
    if not (hasattr(data, "x") and hasattr(data, "y") and hasattr(data, "__len__")):
        raise TypeError(f"{name} must be a dro_lab dataset (an ArrayDataset with x and y), got {type(data).__name__}")
    if len(data) == 0:
        raise ValueError(f"{name} is empty")
    return data


def trained_parameters(
    data,
    strategy: Strategy | None = None,
    *,
    hidden: Sequence[int] = (64,),
    optimizer: str = "adam",
    epochs: int = 5,
    batch_size: int = 64,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    seed: int = 0,
) -> tuple[Tensor, Tensor]:
    """Train a seeded :class:`dro_lab.MLP` on ``data`` with ``strategy`` (``None``: ERM) on the CPU and return its
    parameters before and after, each flattened into one float64 vector.

    The same ``seed`` gives the same initialisation and the same batches whatever the strategy, so two calls
    differ only by their update rule.
    """
    _check_data(data)
    if strategy is not None and not isinstance(strategy, Strategy):
        raise TypeError(f"strategy must be a dro_lab Strategy or None, got {type(strategy).__name__}")
    seed = check_int(seed, "seed", low=0)
    seed_everything(seed)
    model = MLP(int(np.prod(data.x.shape[1:])), data.num_classes, hidden=tuple(hidden))
    start = _flat(model)
    fit(
        model,
        data,
        strategy=strategy,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        optimizer=optimizer,
        weight_decay=weight_decay,
        device="cpu",
        seed=seed,
        progress=False,
    )
    return start, _flat(model)


def mirror_prox_distances(
    data,
    saddle: SaddlePoint,
    *,
    alphas: Sequence[float] = (0.0, 0.5, 1.0),
    steps: int = 150,
    lr: float = 0.3,
    tau: float = 0.3,
    l2: float = 0.03,
    seed: int = 0,
) -> dict[float, np.ndarray]:
    r"""Optimistic Mirror-Prox (Algorithm 4: one full gradient per step, the step γ = ``lr`` for θ and π, the exact
    L2 prox for θ, the softmax step for π) on :class:`dro_lab.LogisticRegression` with one weight per example and a
    uniform prior; for each optimism α of ``alphas``, the distance
    :math:`\|\theta_k-\theta^\star\|_2+\|\pi_k-\pi^\star\|_1` to ``saddle`` after each of ``steps`` steps.

    ``saddle`` must be the saddle point of the same problem (same ``data``, ``tau`` and ``l2``), e.g.
    :func:`dro_course.lessons.group_dro_also.saddle.logistic_dro_saddle`.
    """
    _check_data(data)
    if not isinstance(saddle, SaddlePoint):
        raise TypeError(f"saddle must be a SaddlePoint (logistic_dro_saddle), got {type(saddle).__name__}")
    if saddle.pi.numel() != len(data):
        raise ValueError(f"saddle has {saddle.pi.numel()} example weights, data {len(data)} examples")
    alphas = [check_number(a, "alphas[i]", low=0) for a in alphas]
    steps = check_int(steps, "steps")
    tau = check_number(tau, "tau", low=0, low_open=True)
    out = {}
    for alpha in alphas:
        seed_everything(seed)
        model = LogisticRegression(int(np.prod(data.x.shape[1:])), data.num_classes)
        strategy = GroupDROStrategy("omp", grouping="sample", tau=tau, alpha=alpha)
        distances: list[float] = []

        def track(epoch, record, model=model, strategy=strategy, distances=distances):
            layer = model.classifier
            theta = torch.cat([layer.weight.detach().reshape(-1), layer.bias.detach()])
            distances.append(saddle.distance(theta, strategy.optimizer.pi))

        fit(
            model,
            data,
            strategy=strategy,
            epochs=steps,
            batch_size=len(data),
            lr=lr,
            weight_decay=l2,
            device="cpu",
            seed=seed,
            progress=False,
            callback=track,
        )
        out[alpha] = np.array(distances)
    return out


def pi_trajectory_run(
    data,
    *,
    beta: float,
    alpha: float,
    epochs: int = 40,
    batch_size: int = 16,
    lr: float = 0.05,
    pi_lr: float = 0.05,
    seed: int = 0,
    labels: Sequence[str] | None = None,
) -> dict:
    """ALSO with one weight per class (uniform prior) training :class:`dro_lab.LogisticRegression` on ``data``.

    Args:
        data: a small labelled dataset (scikit-learn's iris, say).
        beta: β = 1/τ > 0, how hard π may lean towards the worst class.
        alpha: ALSO's optimism α ≥ 0.
        epochs, batch_size, lr, pi_lr, seed: the run (η_θ = ``lr``, η_π = ``pi_lr``).
        labels: the class names; default ``"class 0"``, ….

    Returns:
        ``{"pi": (epochs + 1, c) array, "kl": (epochs + 1,) radius KL(π_t‖π̂), "labels": [...], "prior": (c,),
        "x_title": "epoch"}``, row t after epoch t (row 0 the start, the uniform prior) — what
        :func:`dro_course.figures.pi_trajectory_figure` and :func:`dro_course.panels.pi_run_panel` draw.
    """
    _check_data(data)
    beta = check_number(beta, "beta", low=0, low_open=True)
    k = data.num_classes
    names = [f"class {j}" for j in range(k)] if labels is None else [str(s) for s in labels]
    if len(names) != k:
        raise ValueError(f"labels must name the {k} classes, got {len(names)}")
    seed_everything(check_int(seed, "seed", low=0))
    model = LogisticRegression(int(np.prod(data.x.shape[1:])), k)
    strategy = GroupDROStrategy("also", grouping="class", tau=1.0 / beta, alpha=alpha, pi_lr=pi_lr)
    history = fit(
        model,
        data,
        strategy=strategy,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        device="cpu",
        seed=seed,
        progress=False,
    )
    prior = np.full(k, 1.0 / k)
    return {  # the start (π⁰ = π̂, radius 0) first, so that row t is π after epoch t
        "pi": np.vstack([prior, torch.stack(strategy.pi_history).double().numpy()]),
        "kl": np.array([0.0, *history["pi_kl_to_prior"]], dtype=float),
        "labels": names,
        "prior": prior,
        "x_title": "epoch",
    }
