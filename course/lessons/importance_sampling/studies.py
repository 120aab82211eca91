r"""Two small studies around Lahire (2023)'s experiment: forgetting the importance weights, and the cost per epoch.

* :func:`forgotten_weights_study` — §4 warns that without the weights :math:`1/(Np_i)` SGD reaches "the minimum
  of another dataset, which does not exist". On a network that fits every example the two minima coincide, so the
  study takes a model that cannot: a logistic regression on two overlapping Gaussians, trained with uniform
  sampling, with :math:`p^{GN}` and its weights, and with :math:`p^{GN}` without them, against the exact optimum
  of the empirical loss (scikit-learn, no penalty).
* :data:`PAPER_TABLE1` and :func:`cost_ratios` — Table 1's seconds per run, and an experiment's cost per epoch of
  each arm as a multiple of plain SGD's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from dro_lab._validation import check_int, check_number
from dro_lab.data.datasets import ArrayDataset
from dro_lab.engine.loop import fit
from dro_lab.experiments.result import ExperimentResult
from dro_lab.models import LogisticRegression
from dro_lab.strategies.sampling import ImportanceSamplingStrategy

__all__ = ["PAPER_TABLE1", "ForgottenWeights", "cost_ratios", "forgotten_weights_study", "paper_cost_ratios"]

#: Table 1 of the paper: seconds per 300-step run, scheme → optimizer → seconds (a 2017 two-core laptop).
PAPER_TABLE1: Mapping[str, Mapping[str, float]] = {
    "u": {"SGD": 26.5, "SGD M": 24.9, "RMSProp": 25.5, "Adam": 25.7},
    "p^GN": {"SGD": 53.0, "SGD M": 56.6, "RMSProp": 57.4, "Adam": 61.4},
    "p^1/2": {"SGD": 56.0, "SGD M": 55.3},
}


def paper_cost_ratios() -> dict[str, float]:
    """Table 1 as multiples of plain SGD's run (``"SGD u"``, 26.5 s), by arm name (``"SGD M p^GN"``)."""
    base = PAPER_TABLE1["u"]["SGD"]
    return {f"{opt} {scheme}": s / base for scheme, row in PAPER_TABLE1.items() for opt, s in row.items()}


def cost_ratios(result: ExperimentResult, *, baseline: str = "SGD u") -> dict[str, float]:
    """Each arm's seconds per epoch as a multiple of ``baseline``'s: the geometric mean over seeds of the per-seed
    ratio (what the cost claims judge, on the log scale), for the arms of the importance experiment."""
    if not isinstance(result, ExperimentResult):
        raise TypeError(f"result must be an ExperimentResult, got {type(result).__name__}")
    log_s = result.final("log_seconds")
    if baseline not in log_s:
        raise ValueError(f"baseline must be one of the result's methods {result.methods}, got {baseline!r}")
    return {m: float(np.exp(np.nanmean(v - log_s[baseline]))) for m, v in log_s.items()}


@dataclass(frozen=True)
class ForgottenWeights:
    r"""The runs of :func:`forgotten_weights_study`.

    Attributes:
        paths: run name → (epochs, 3) array: the logit contrast :math:`(w_1-w_0,\ b_1-b_0)` after each epoch
            (a two-class softmax has one redundant direction; the contrast is what the loss sees).
        theta_star: the contrast at the optimum of the empirical loss; loss_star: that loss.
        final_loss: run name → its empirical loss at the end.
    """

    paths: dict
    theta_star: np.ndarray
    loss_star: float
    final_loss: dict

    def distance(self, name: str) -> float:
        """:math:`\\|\\theta-\\theta^*\\|` of a run's last contrast."""
        return float(np.linalg.norm(self.paths[name][-1] - self.theta_star))

    def markdown(self) -> str:
        lines = ["| run | ‖θ − θ*‖ (logit contrast) | empirical loss | loss − optimum |", "|---|---|---|---|",
                 f"| optimum θ* | 0 | {self.loss_star:.5f} | 0 |"]  # fmt: skip
        for name, loss in self.final_loss.items():
            lines.append(f"| {name} | {self.distance(name):.3f} | {loss:.5f} | {loss - self.loss_star:.2e} |")
        return "\n".join(lines)


#: The three runs: scheme, α and weight exponent e of :class:`dro_lab.ImportanceSamplingStrategy`.
_RUNS = {
    "u": ("uniform", 0.0, 1.0),
    "p^GN, weighted (e = 1)": ("grad_norm", 1.0 - 1e-9, 1.0),
    "p^GN, weights forgotten (e = 0)": ("grad_norm", 1.0 - 1e-9, 0.0),
}


def _two_gaussians(n: int, seed: int) -> ArrayDataset:
    gen = torch.Generator().manual_seed(seed)
    y = (torch.arange(n) % 2).long()
    sign = 2.0 * y - 1
    x = torch.randn(n, 2, generator=gen) + torch.stack([sign, 0.5 * sign], 1) * 0.8
    return ArrayDataset(x, y, num_classes=2)


def _contrast(model: LogisticRegression) -> np.ndarray:
    W, b = model.classifier.weight.detach().double(), model.classifier.bias.detach().double()
    return np.r_[(W[1] - W[0]).numpy(), float(b[1] - b[0])]


def forgotten_weights_study(
    *, epochs: int = 15, batch_size: int = 5, n: int = 200, lr: float = 0.5, decay_steps: float = 500.0, seed: int = 0
) -> ForgottenWeights:
    r"""Logistic regression on ``n`` points of two overlapping Gaussians, trained three times with
    :func:`dro_lab.fit` — uniform sampling; :math:`p^{GN}` with the weights :math:`1/(Np_i)`; :math:`p^{GN}` without
    them — at the decreasing learning rate :math:`\eta_t=\text{lr}/(1+t/\text{decay\_steps})` (stepped once per
    epoch, ``t`` the steps before it), against the optimum :math:`\theta^*` of the mean cross-entropy
    (scikit-learn's logistic regression without a penalty). "p^GN" is the α = 1 − 10⁻⁹ mixture.

    The weighted runs approach :math:`\theta^*`; the unweighted one follows :math:`\sum_ip_i\nabla\ell_i` and settles
    at another point, of higher empirical loss (Lahire 2023, §4, the practical recommendations after Table 1).
    """
    from sklearn.linear_model import LogisticRegression as SkLogisticRegression  # the oracle only

    epochs, batch_size = check_int(epochs, "epochs"), check_int(batch_size, "batch_size")
    n, seed = check_int(n, "n", low=2), check_int(seed, "seed", low=0)
    lr = check_number(lr, "lr", low=0.0, low_open=True)
    decay_steps = check_number(decay_steps, "decay_steps", low=0.0, low_open=True)
    data = _two_gaussians(n, seed)
    x64 = data.x.double().numpy()
    sk = SkLogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(x64, data.y.numpy())
    theta_star = np.r_[sk.coef_[0], sk.intercept_]
    z = x64 @ sk.coef_[0] + sk.intercept_[0]  # the logit of class 1
    loss_star = float(np.mean(np.logaddexp(0.0, -np.where(data.y.numpy() == 1, z, -z))))
    steps = math.ceil(n / batch_size)
    paths, final = {}, {}
    for name, (scheme, alpha, exponent) in _RUNS.items():
        torch.manual_seed(seed)
        model, path = LogisticRegression(2, 2), []
        strategy = ImportanceSamplingStrategy(scheme, alpha=alpha, weight_exponent=exponent)
        fit(model, data, strategy=strategy, lr=lr, epochs=epochs, batch_size=batch_size, device="cpu", seed=seed,
            progress=False, lr_schedule=lambda e: 1.0 / (1.0 + (e - 1) * steps / decay_steps),
            callback=lambda epoch, record, m=model, out=path: out.append(_contrast(m)))  # fmt: skip
        paths[name] = np.array(path)
        final[name] = float(F.cross_entropy(model(data.x), data.y).detach())
    return ForgottenWeights(paths, theta_star, loss_star, final)
