"""What a hardness-weighted sampler does to the data: class masses of q, and the staleness of its loss history.

Numbers for lesson 02's figures and checks (arrays in, numbers out), Fidon, Ourselin & Vercauteren (2019):

* how a sampling distribution splits across the classes (:func:`sampling_summary`) and how the minority's
  share moves with β (:func:`minority_mass_curve`);
* the sensitivity of the worst-case weights to each loss, by central finite differences
  (:func:`weights_jacobian`: Theorem 3.2's sign pattern);
* the Monte-Carlo error of the hardness-weighted gradient with and without replacement
  (:func:`mc_gradient_errors`: Lemma 3.2, App. D.7.4, eq. 82);
* the staleness of the loss history: a :class:`~dro_lab.samplers.HardnessWeightedSampler` driven on a fixed
  loss vector (:func:`simulate_history_ages`), the empirical tail of its ages (:func:`age_survival`) and the
  exact tail and bound of eq. 104 under i.i.d. draws (:func:`age_tail`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from dro_lab._validation import as_label_tensor, check_finite, check_int, check_number
from dro_lab.robust import worst_case_weights
from dro_lab.samplers.hardness import HardnessWeightedSampler
from dro_lab.utils import to_numpy

__all__ = [
    "sampling_summary",
    "minority_mass_curve",
    "weights_jacobian",
    "GradientMC",
    "mc_gradient_errors",
    "HistoryAges",
    "simulate_history_ages",
    "age_survival",
    "age_tail",
]


def sampling_summary(
    q, labels, *, minority: int | None = None, batch_size: int | None = None, num_classes: int | None = None
) -> dict:
    """How a sampling distribution ``q`` over the training set splits across classes.

    Returns a dict with ``class_mass`` (the q-mass of each class, i.e. how often a draw lands in
    it), ``class_share`` (its uniform share ``n_c / n``, what ERM draws), ``ess`` (the effective
    sample size ``1 / Σ q_i²``) and, for a ``minority`` class, ``minority_mass``,
    ``minority_share``, ``minority_ratio`` (mass / share) and, with ``batch_size = b``,
    ``expected_minority_draws = b · mass`` against ``uniform_minority_draws = b · n_c / n``.
    """
    if batch_size is not None:
        check_int(batch_size, "batch_size")
    qn = to_numpy(q)
    yn = to_numpy(labels).astype(int)
    if qn.ndim != 1 or qn.shape != yn.shape:
        raise ValueError(f"q and labels must be 1-D of the same length, got {qn.shape} and {yn.shape}")
    if np.any(qn < 0) or not np.isfinite(qn).all():
        raise ValueError("q must be finite and non-negative")
    total = qn.sum()
    if not total > 0:
        raise ValueError("q must have positive mass")
    qn = qn / total
    k = int(num_classes if num_classes is not None else yn.max() + 1)
    mass = np.bincount(yn, weights=qn, minlength=k)
    share = np.bincount(yn, minlength=k) / len(yn)
    out = {
        "class_mass": mass.tolist(),
        "class_share": share.tolist(),
        "ess": float(1.0 / np.sum(qn * qn)),
        "n": int(len(yn)),
    }
    if minority is not None:
        if not 0 <= minority < k:
            raise ValueError(f"minority must be a class in [0, {k}), got {minority}")
        out.update(
            minority_mass=float(mass[minority]),
            minority_share=float(share[minority]),
            minority_ratio=float(mass[minority] / share[minority]) if share[minority] > 0 else float("nan"),
        )
        if batch_size is not None:
            out.update(
                expected_minority_draws=float(batch_size * mass[minority]),
                uniform_minority_draws=float(batch_size * share[minority]),
            )
    return out


def age_survival(ages, kmax: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(k, P(age ≥ k))`` for ``k = 0 .. kmax``: the empirical tail of history ages (``-1`` = never, dropped)."""
    a = to_numpy(ages).ravel()
    a = a[a >= 0].astype(np.int64)
    if a.size == 0:
        raise ValueError("no finite ages (all entries are -1: never written)")
    kmax = int(a.max()) if kmax is None else check_int(kmax, "kmax")
    k = np.arange(kmax + 1)
    counts = np.bincount(a, minlength=kmax + 1)[: kmax + 1]
    at_least = a.size - np.r_[0, np.cumsum(counts)[:-1]]
    return k, at_least / a.size


def age_tail(q, k, batch_size: int) -> tuple[np.ndarray, np.ndarray, float]:
    r"""The tail of history ages under ``b = batch_size`` i.i.d. draws per iteration from a fixed ``q``: the exact
    :math:`\frac1n\sum_i(1-q_i)^{kb}` and the bound :math:`(1-\alpha)^{kb}` with :math:`\alpha=\min_iq_i`
    (the paper's eq. 104, which holds for every entry), at each age in ``k``. Returns ``(exact, bound, α)``;
    ``q`` is normalised first."""
    qn = to_numpy(q).ravel()
    qn = qn / qn.sum()
    k = np.asarray(k)
    exact = np.array([np.mean((1.0 - qn) ** (kk * batch_size)) for kk in k])
    alpha = float(qn.min())
    return exact, (1.0 - alpha) ** (k * batch_size), alpha


def _loss_vector(losses, name: str = "losses") -> Tensor:
    """``losses`` as a finite 1-D float64 CPU tensor (``TypeError`` for what is not numbers)."""
    if isinstance(losses, (str, bytes, dict)) or losses is None or isinstance(losses, (bool, int, float)):
        raise TypeError(f"{name} must be a 1-D tensor, array or list of losses, got {type(losses).__name__}")
    try:
        vec = torch.as_tensor(to_numpy(losses), dtype=torch.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a 1-D tensor, array or list of losses, got {type(losses).__name__}") from None
    if vec.ndim != 1 or vec.numel() == 0:
        raise ValueError(f"{name} must be a non-empty 1-D vector, got shape {tuple(vec.shape)}")
    check_finite(vec.numpy(), name)
    return vec


def minority_mass_curve(losses, labels, *, minority: int, betas, divergence: str = "kl") -> tuple[np.ndarray, ...]:
    r"""How much of the sampling distribution lands on one class as β grows: ``(mass, ess)`` over ``betas``.

    ``mass[k]`` is :math:`\sum_{i:\,y_i=c}q_i` and ``ess[k]`` the effective sample size :math:`1/\sum_iq_i^2` of
    ``q = worst_case_weights(losses, divergence, betas[k])`` (KL: :math:`\mathrm{softmax}(\beta\ell)`, the
    paper's eq. 20). At β = 0 the mass is the class's share :math:`n_c/n` (ERM); as β → ∞ it goes to the
    class of the largest loss.
    """
    ell = _loss_vector(losses)
    y = as_label_tensor(labels, "labels")
    if y.numel() != ell.numel():
        raise ValueError(f"labels must hold one label per loss: {y.numel()} labels for {ell.numel()} losses")
    minority = check_int(minority, "minority", low=0)
    if not bool((y == minority).any()):
        raise ValueError(f"minority={minority} is not a label of any example")
    grid = [check_number(b, "betas", low=0.0) for b in np.atleast_1d(np.asarray(betas, dtype=float))]
    mass, ess = [], []
    for b in grid:
        q = worst_case_weights(ell, divergence=divergence, beta=b)
        mass.append(float(q[y == minority].sum()))
        ess.append(float(1.0 / (q * q).sum()))
    return np.array(mass), np.array(ess)


def weights_jacobian(losses, *, divergence: str = "kl", beta: float, h: float = 1e-6) -> Tensor:
    r"""The Jacobian :math:`J_{ij}=\partial q_i/\partial\ell_j` of ``worst_case_weights(losses, divergence, β)``,
    by central finite differences with step ``h`` (float64, one column per loss).

    Fidon et al.'s Theorem 3.2 says the sampler is online hard-example mining: :math:`J_{ii}\ge0` (an example is
    drawn more when its own loss grows) and :math:`J_{ij}\le0` for :math:`j\ne i` (less when another's does).
    For KL the closed form is :math:`\beta(\mathrm{diag}\,q-qq^\top)`; for χ² there is none once weights clip,
    which is why the differences are taken numerically.
    """
    ell = _loss_vector(losses)
    beta = check_number(beta, "beta", low=0.0)
    h = check_number(h, "h", low=0.0, low_open=True)
    cols = [
        (worst_case_weights(ell + h * e, divergence=divergence, beta=beta)
         - worst_case_weights(ell - h * e, divergence=divergence, beta=beta)) / (2.0 * h)
        for e in torch.eye(ell.numel(), dtype=torch.float64)
    ]  # fmt: skip
    return torch.stack(cols, 1)


@dataclass(frozen=True)
class GradientMC:
    """:func:`mc_gradient_errors`' result: relative errors of the averaged batch gradient after ``ms`` batches."""

    ms: np.ndarray  #: numbers of batches M (increasing)
    with_replacement: np.ndarray  #: ‖ĝ_M − ∇R‖ / scale, batches of b i.i.d. draws (Algorithm 1)
    without_replacement: np.ndarray | None  #: the same, batches of b distinct indices; ``None`` when impossible
    predicted: np.ndarray  #: the RMS error of the unbiased estimator, √((Σ q‖∇ℓ‖² − ‖∇R‖²)/(bM)) / scale
    exact: Tensor  #: ∇R = Σ_i q_i ∇ℓ_i
    q: Tensor  #: the sampling distribution, normalised, float64
    scale: float  #: what the errors are divided by: ‖∇R‖ (1 when ∇R = 0: the errors are then absolute)
    without_reason: str | None = None  #: why there is no batch of b distinct indices, when there is none


def mc_gradient_errors(q, grads, *, batch_size: int, batches: int, points: int = 25, generator=None) -> GradientMC:
    r"""Average ``M`` hardness-weighted batch gradients and measure how far they are from :math:`\nabla R`.

    ``grads`` holds one per-example gradient per row (``(n, P)``), ``q`` the sampling distribution. The exact
    gradient of the robust loss is :math:`\nabla R=\sum_iq_i\nabla\ell_i` (Lemma 3.2). A batch of ``b`` indices
    drawn **i.i.d.** from ``q`` has a plain-mean gradient whose expectation is :math:`\nabla R` (App. D.7.4,
    eq. 82), so the average of ``M`` batches has RMS error
    :math:`\sqrt{(\sum_iq_i\|\nabla\ell_i\|^2-\|\nabla R\|^2)/(bM)}`; a batch of ``b`` **distinct** indices
    (``torch.multinomial(..., replacement=False)``) is biased once a few examples hold most of ``q``, and its
    error stops falling. When fewer than ``b`` examples have positive probability there is no batch of ``b``
    distinct ones: ``without_replacement`` is then ``None`` and ``without_reason`` says why. Errors are reported at
    ``points`` log-spaced ``M`` up to ``batches``.
    """
    q = _loss_vector(q, "q")
    if bool((q < 0).any()) or not float(q.sum()) > 0:
        raise ValueError("q must be non-negative with positive mass")
    q = q / q.sum()
    if not isinstance(grads, Tensor):
        raise TypeError(f"grads must be a tensor of per-example gradients (n, P), got {type(grads).__name__}")
    G = grads.detach().double().cpu()
    if G.ndim != 2 or G.shape[0] != q.numel():
        raise ValueError(f"grads must have shape (n, P) with n = len(q) = {q.numel()}, got {tuple(G.shape)}")
    b = check_int(batch_size, "batch_size")
    batches, points = check_int(batches, "batches"), check_int(points, "points")
    exact = q @ G
    ms = np.unique(np.logspace(0, np.log10(batches), points).astype(int))
    draws = torch.multinomial(q, b * batches, replacement=True, generator=generator)
    scale = float(exact.norm()) or 1.0
    err_with = [float(((torch.bincount(draws[: b * m], minlength=q.numel()).double() @ G) / (b * m) - exact).norm())
                / scale for m in ms]  # fmt: skip
    positive = int((q > 0).sum())
    err_without, reason = None, None
    if positive < b:
        has = "example has" if positive == 1 else "examples have"
        reason = f"only {positive} {has} positive probability, fewer than b = {b}"
    else:
        counts, err_without, wanted = torch.zeros_like(q), [], set(ms.tolist())
        for m in range(1, batches + 1):
            counts += torch.bincount(
                torch.multinomial(q, b, replacement=False, generator=generator), minlength=q.numel()
            )
            if m in wanted:
                err_without.append(float(((counts @ G) / (b * m) - exact).norm()) / scale)
        err_without = np.array(err_without)
    spread = max(float(q @ (G * G).sum(1)) - float(exact @ exact), 0.0)
    predicted = np.sqrt(spread / (b * ms)) / scale
    return GradientMC(ms, np.array(err_with), err_without, predicted, exact, q, scale, reason)


@dataclass(frozen=True)
class HistoryAges:
    """:func:`simulate_history_ages`' result."""

    ages: Tensor  #: the ages of every history entry, pooled over the snapshots (int64)
    q: Tensor  #: the (fixed) sampling distribution, float64
    draws: Tensor  #: how often each example was drawn in the hardness-weighted epochs (int64)
    batch_size: int

    def drawn_share(self, mask) -> float:
        """The share of the hardness-weighted draws that fell on the examples in ``mask`` (a boolean vector)."""
        mask = torch.as_tensor(mask, dtype=torch.bool)
        return float(self.draws[mask].sum() / self.draws.sum())


def simulate_history_ages(
    losses, batch_size: int, *, beta: float, epochs: int, divergence: str = "kl", every: int = 5, seed: int = 0
) -> HistoryAges:
    r"""Drive a :class:`HardnessWeightedSampler` on a **fixed** loss vector and record how stale its history gets.

    Algorithm 1 of Fidon et al.: a warm-start epoch, then ``epochs`` hardness-weighted epochs of
    :math:`\lfloor n/b\rfloor+1` batches; every update writes back the same loss, so ``q`` stays put and the
    age :math:`t-t_i(t)` of entry ``i`` follows :math:`P(\text{age}\ge k)=(1-q_i)^{kb}` (App. D.8, eq. 104).
    The ages of all ``n`` entries are read every ``every`` iterations after one hardness-weighted epoch of
    burn-in (so at least two epochs are needed), and every draw of those epochs is counted.
    """
    ell = _loss_vector(losses).float()
    epochs = check_int(epochs, "epochs", low=2)
    every = check_int(every, "every")
    seed = check_int(seed, "seed", low=0)
    sampler = HardnessWeightedSampler(ell.numel(), batch_size, beta=beta, divergence=divergence, device="cpu",
                                      generator=torch.Generator().manual_seed(seed))  # fmt: skip
    draws = torch.zeros(ell.numel(), dtype=torch.int64)
    snapshots = []
    for epoch in range(1 + epochs):
        for idx in sampler.batches():
            sampler.update(idx, ell[idx])  # the loss "recomputed" at the same value: q is fixed
            if epoch == 0:
                continue
            draws += torch.bincount(idx, minlength=ell.numel())
            if epoch >= 2 and sampler.step % every == 0:
                snapshots.append(sampler.ages())
    if not snapshots:
        raise ValueError(f"no snapshot taken: the burn-in epoch has fewer than every={every} iterations left")
    return HistoryAges(torch.cat(snapshots), sampler.probabilities().double(), draws, sampler.batch_size)
