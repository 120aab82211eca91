"""Instance and class weights of the reweighting methods, pure functions on a batch's numbers.

* class balance: :func:`class_balanced_weights` (inverse class frequency; ALSO's static-weights baseline);
* spectral risk (Mehta et al., 2023): :func:`extremile_spectrum` and :func:`spectral_risk_weights`, the
  worst case over the permutahedron with a KL or χ² shift penalty, by pool-adjacent-violators;
* adversarial training: DONE's KL-DRO weights with CID's running average (Sow et al., Algorithm 1,
  :func:`done_weights`), GAIRAT's geometry-aware weights (Zhang et al., 2021, :func:`gairat_weights`)
  and MAIL's margin weights (Wang/Liu et al., 2021, :func:`mail_weights`).

The strategies in :mod:`dro_lab.strategies` apply them; the weights never carry gradient (Danskin).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from ._validation import as_label_tensor, check_choice, check_finite, check_int, check_number
from .utils import to_numpy

__all__ = [
    "class_balanced_weights",
    "extremile_spectrum",
    "spectral_risk_weights",
    "done_weights",
    "gairat_weights",
    "mail_weights",
    "done_weight_stats",
]


def class_balanced_weights(labels) -> Tensor:
    r"""Per-example inverse-class-frequency weights, normalised to sum to 1.

    .. math:: w_i = \frac{1/N_{y_i}}{\sum_k 1/N_{y_k}}

    so every class present gets total mass ``1/C`` (``C`` the number of classes present).

    Args:
        labels: integer class ids, shape ``(n,)``, non-negative, non-empty.

    Returns:
        ``w``, float64, shape ``(n,)``, on the labels' device.

    Example:
        >>> class_balanced_weights(torch.tensor([0, 0, 0, 1]))
        tensor([0.1667, 0.1667, 0.1667, 0.5000], dtype=torch.float64)
    """
    labels = as_label_tensor(labels, "labels")
    if labels.numel() == 0:
        raise ValueError("labels is empty: need at least one example")
    counts = torch.bincount(labels)
    inv = 1.0 / counts[labels].to(torch.float64)
    return inv / inv.sum()


def extremile_spectrum(m: int, n_draws: float) -> Tensor:
    r"""The extremile spectrum of a batch of ``m`` losses: :math:`\sigma_k=\frac{k^r-(k-1)^r}{m^r}`, ``r = n_draws``.

    ``σ_k`` weighs the ``k``-th smallest loss; it is the law of the maximum of ``r`` draws, so it
    sums to 1 and is nondecreasing for ``r ≥ 1`` (``r = 1``: uniform, the mean).

    Args:
        m, n_draws: the batch size ``M ≥ 1`` and ``r ≥ 1``.

    Returns:
        ``σ``, float64, shape ``(m,)``.

    Raises:
        ValueError: ``n_draws < 1``: the spectrum would *decrease*, weighting the easy samples most
            (the official ``deshift`` code asserts ``n_draws ≥ 1``, though the ALSO authors'
            split-learning code searches down to 1e-3).
    """
    m = check_int(m, "m", low=1)
    r = check_number(n_draws, "n_draws", low=-math.inf)
    if r < 1:
        raise ValueError(
            f"n_draws must be ≥ 1, got {r:g}: with n_draws < 1 the extremile spectrum decreases, "
            "so the largest weights go to the smallest losses (easy-sample mining, not robustness)"
        )
    k = torch.arange(1, m + 1, dtype=torch.float64)
    return (k / m) ** r - ((k - 1) / m) ** r  # the ratio form: k^r / m^r overflows for large m, r


def _check_spectrum(spectrum, m: int) -> Tensor:
    if not isinstance(spectrum, Tensor):
        spectrum = torch.as_tensor(spectrum, dtype=torch.float64)
    if spectrum.is_complex() or not spectrum.is_floating_point():
        raise TypeError(f"spectrum must be a float tensor, got dtype {spectrum.dtype}")
    spectrum = spectrum.detach().to("cpu", torch.float64)
    if spectrum.shape != (m,):
        raise ValueError(f"spectrum must have one weight per loss, shape ({m},), got {tuple(spectrum.shape)}")
    if not bool(torch.isfinite(spectrum).all()) or bool((spectrum < 0).any()):
        raise ValueError("spectrum must hold finite non-negative weights")
    if abs(float(spectrum.sum()) - 1.0) > 1e-6:
        raise ValueError(f"spectrum must sum to 1, got {float(spectrum.sum())}")
    if m > 1 and bool((spectrum[1:] < spectrum[:-1] - 1e-12).any()):
        raise ValueError("spectrum must be nondecreasing (σ_1 ≤ … ≤ σ_m weigh the sorted losses, smallest first)")
    return spectrum


def _pav_kl(s: list[float], sigma: list[float], nu: float) -> list[float]:
    """KL penalty: pool-adjacent-violators on the sorted losses; returns the sorted weights.

    Block level ``ν·logΣ_B e^{ℓ/ν} − ν·logΣ_B σ`` (deshift's negative-entropy isotonic regression,
    times ν, so it stays finite as ν → 0); blocks merge while levels fail to increase. Within a
    block, ``q = (Σ_B σ)·softmax(ℓ_B/ν)``, i.e. ``exp(ℓ/ν − c*)/M``.
    """
    blocks: list[list[float]] = []  # [start, end(excl), max ℓ, Σ e^{(ℓ-max)/ν}, Σ σ, level]
    for i, (li, si) in enumerate(zip(s, sigma)):
        block = [i, i + 1, li, 1.0, si, 0.0]
        block[5] = li - nu * math.log(si) if si > 0 else math.inf
        blocks.append(block)
        while len(blocks) > 1 and blocks[-2][5] >= blocks[-1][5]:
            b2 = blocks.pop()
            b1 = blocks[-1]
            top = max(b1[2], b2[2])
            e = b1[3] * math.exp((b1[2] - top) / nu) + b2[3] * math.exp((b2[2] - top) / nu)
            mass = b1[4] + b2[4]
            level = top + nu * math.log(e) - nu * math.log(mass) if mass > 0 else math.inf
            blocks[-1] = [b1[0], b2[1], top, e, mass, level]
    q = [0.0] * len(s)
    for start, end, top, e, mass, _ in blocks:
        for i in range(start, end):
            q[i] = mass * math.exp((s[i] - top) / nu) / e
    return q


def _pav_chi2(s: list[float], sigma: list[float], nu: float, m: int) -> list[float]:
    """χ² penalty: pool-adjacent-violators on the sorted losses; returns the sorted weights.

    With our ``D(q‖u) = M Σ (q − 1/M)²`` the stationarity condition reads
    ``q = ℓ/(2Mν) − c* + 1/M`` (deshift's ``shift_cost`` is ``2Mν``). Block level
    ``mean_B ℓ − 2Mν·mean_B σ`` (the l2 centered isotonic regression, times 2Mν); within a block
    ``q_i = (ℓ_i − mean_B ℓ)/(2Mν) + mean_B σ``.
    """
    scale = 2.0 * m * nu
    blocks: list[list[float]] = []  # [start, end(excl), Σ ℓ, Σ σ, level]
    for i, (li, si) in enumerate(zip(s, sigma)):
        blocks.append([i, i + 1, li, si, li - scale * si])
        while len(blocks) > 1 and blocks[-2][4] >= blocks[-1][4]:
            b2 = blocks.pop()
            b1 = blocks[-1]
            count = b2[1] - b1[0]
            tot_l, tot_s = b1[2] + b2[2], b1[3] + b2[3]
            blocks[-1] = [b1[0], b2[1], tot_l, tot_s, (tot_l - scale * tot_s) / count]
    q = [0.0] * len(s)
    for start, end, tot_l, tot_s, _ in blocks:
        count = end - start
        for i in range(start, end):
            q[i] = max((s[i] - tot_l / count) / scale + tot_s / count, 0.0)  # ≥ 0 exactly; clamp rounding
    return q


def spectral_risk_weights(losses: Tensor, spectrum, *, shift_cost: float, penalty: str = "kl") -> Tensor:
    r"""The worst-case weights of a spectral risk measure with a shift penalty (Mehta et al., 2023).

    .. math:: q^\star=\arg\max_{q\in\mathcal P(\sigma)}\ \langle q,\ell\rangle-\nu\,D(q\,\|\,\tfrac1M\mathbf 1)

    over the permutahedron :math:`\mathcal P(\sigma)` of the spectrum, ``ν = shift_cost``, ``D`` dro_lab's KL or
    χ². Solved exactly by pool-adjacent-violators on the sorted losses (deshift's algorithm):

    * KL: :math:`q=\exp(\ell/\nu-c^\star)/M`, :math:`c^\star` the negative-entropy isotonic regression;
    * χ²: :math:`q=\ell/(2M\nu)-c^\star+1/M` (deshift writes ``ℓ/ν'``: its ``shift_cost`` ν' is our ``2Mν``);
    * ``ν = 0``: :math:`q_b=\sigma_{\mathrm{rank}(\ell_b)}` (the plain spectral risk).

    Args:
        losses: the batch's per-sample losses, shape ``(M,)``, finite.
        spectrum: ``σ``, shape ``(M,)``, non-negative, nondecreasing, summing to 1 (e.g.
            :func:`extremile_spectrum`).
        shift_cost: ``ν ≥ 0``.
        penalty: ``"kl"`` or ``"chi2"``.

    Returns:
        ``q`` (sums to 1), detached, in the losses' dtype and on their device (computed in float64 on the CPU).

    Example:
        >>> spectral_risk_weights(torch.tensor([3.0, 1.0, 2.0]), extremile_spectrum(3, 2.0), shift_cost=0.0)
        tensor([0.5556, 0.1111, 0.3333])
    """
    nu = check_number(shift_cost, "shift_cost", low=0.0)
    penalty = check_choice(penalty, "penalty", ("kl", "chi2"))
    if not isinstance(losses, Tensor):
        raise TypeError(f"losses must be a tensor, got {type(losses).__name__}")
    if losses.dim() != 1 or losses.numel() == 0:
        raise ValueError(f"losses must be a non-empty 1-D vector, got shape {tuple(losses.shape)}")
    if not losses.is_floating_point():
        raise TypeError(f"losses must be floating point, got dtype {losses.dtype}")
    m = losses.numel()
    sigma = _check_spectrum(spectrum, m)
    work = losses.detach().to("cpu", torch.float64)
    if not bool(torch.isfinite(work).all()):
        raise ValueError("losses contains NaN or inf values; losses must be finite")
    order = torch.argsort(work, stable=True)
    if nu == 0.0:
        q_sorted = sigma.clone()
    else:
        s, sig = work[order].tolist(), sigma.tolist()
        solved = _pav_kl(s, sig, nu) if penalty == "kl" else _pav_chi2(s, sig, nu, m)
        q_sorted = torch.tensor(solved, dtype=torch.float64)
    q = torch.empty_like(q_sorted)
    q[order] = q_sorted
    return q.to(device=losses.device, dtype=losses.dtype)


def done_weights(losses: Tensor, *, r: float, log_u: Tensor | None = None, eta: float = 1.0) -> tuple[Tensor, Tensor]:
    r"""DONE's instance weights and the updated log running average (Sow et al., Algorithm 1, lines 10–12).

    With :math:`g_i=e^{\ell_i/r}` and :math:`f(z)=r\log z`, the step :math:`\theta_{t+1}=\theta_t-\beta_t
    \widehat\nabla g\,\nabla f(u_{t+1})` of the paper's eq. (10) is a plain step on :math:`\sum_i\omega_i\ell_i` with

    .. math::
        s = \log\frac1{|\mathcal B|}\sum_{i\in\mathcal B}e^{\ell_i/r},\qquad
        \log u_{t+1} = \log\big((1-\eta)u_t + \eta e^{s}\big),\qquad
        \omega_i = \frac{e^{\ell_i/r-\log u_{t+1}}}{|\mathcal B|}

    all in log space (``e^{ℓ/r}`` overflows float32 once ℓ/r > 88.7). With ``eta = 1`` or no previous
    ``log_u`` the weights are ``softmax(ℓ/r)`` over the batch and sum to one. With η < 1 they sum to
    :math:`e^{s}/u_{t+1}` (at most :math:`1/\eta`): :math:`u_{t+1}` stands in for the full-data mean of
    :math:`g` in the exact gradient (eq. (11)), whose weights sum to one over all examples, not per batch.
    They are unnormalised on purpose (normalising cancels :math:`u_{t+1}`: the η = 1 weights);
    :class:`~dro_lab.strategies.DONEStrategy` warns when η < 1.

    Args:
        losses: the batch's per-sample losses ``ℓ``, shape ``(|B|,)``, finite.
        r: the KL regularisation ``r > 0`` (large ``r``: uniform weights).
        log_u: ``log u_t``, the previous call's second output (``None`` at the first batch).
        eta: the running average's step ``η ∈ (0, 1]``.

    Returns:
        ``(ω, log u_{t+1})``, both detached; ``ω`` in the losses' dtype, ``log u_{t+1}`` float64.

    Example:
        >>> done_weights(torch.tensor([1.0, 2.0, 3.0]), r=1.0)[0]  # softmax(ℓ/r)
        tensor([0.0900, 0.2447, 0.6652])
    """
    r = check_number(r, "r", low=0, low_open=True)
    eta = check_number(eta, "eta", low=0, high=1, low_open=True)
    ell = losses.detach().to(torch.float64)
    if ell.dim() != 1 or ell.numel() == 0:
        raise ValueError(f"losses must be a non-empty 1-D tensor, got shape {tuple(losses.shape)}")
    if not bool(torch.isfinite(ell).all()):
        raise ValueError("losses contain NaN or inf")
    if log_u is not None and (not isinstance(log_u, Tensor) or log_u.numel() != 1):
        shape = tuple(log_u.shape) if isinstance(log_u, Tensor) else type(log_u).__name__
        raise ValueError(f"log_u must be the scalar returned by done_weights, got {shape}")
    w, new_log_u = _done_weights64(ell, r, log_u, eta)
    return w.to(losses.dtype), new_log_u


def _done_weights64(ell: Tensor, r: float, log_u: Tensor | None, eta: float) -> tuple[Tensor, Tensor]:
    """:func:`done_weights` on float64 losses, unchecked and without a host sync (DONE's per-batch path).

    With ``eta = 1`` or no ``log_u``, ω = e^{ℓ/r − s}/|B| = softmax(ℓ/r) (one fused kernel)."""
    z = ell / r
    b = z.numel()
    s = torch.logsumexp(z, 0) - math.log(b)
    if log_u is None or eta == 1:
        return torch.softmax(z, 0), s
    new_log_u = torch.logaddexp(math.log1p(-eta) + log_u.to(s), math.log(eta) + s)
    return torch.exp(z - (new_log_u + math.log(b))), new_log_u


def gairat_weights(kappa: Tensor, steps: int, *, lam: float = -1.0) -> Tensor:
    r"""GAIRAT (Zhang et al. 2021): :math:`\omega_i=\frac{1+\tanh(\lambda+5(1-2\kappa_i/K))}2`, normalised to mean 1.

    κ_i is the number of the K PGD steps at whose start example i was still classified correctly (the
    official code writes ⌊K/2⌋ for K/2; the two agree for even K). Few steps correct (close to the
    boundary) → large weight. Returns ω, float32, shape ``(n,)``.

    Args:
        kappa, steps, lam: κ (shape ``(n,)``, counts in ``[0, K]``), K and λ.
    """
    check_int(steps, "steps")
    lam = check_number(lam, "lam")
    if not isinstance(kappa, Tensor) or kappa.dim() != 1 or kappa.numel() == 0:
        raise ValueError(f"kappa must be a non-empty 1-D tensor of counts in [0, steps={steps}]")
    k = kappa.to(torch.float64)
    if bool(((k < 0) | (k > steps)).any()):
        raise ValueError(
            f"kappa must hold counts in [0, steps={steps}], got values in [{float(k.min()):g}, {float(k.max()):g}]"
        )
    w = (1 + torch.tanh(lam + 5 * (1 - 2 * k / steps))) / 2
    return (w * w.numel() / w.sum()).to(torch.float32)


def mail_weights(logits: Tensor, y: Tensor, *, bias: float = -1.5, slope: float = 1.0, scale: float = 3.0) -> Tensor:
    r"""MAIL (the official code's form): :math:`\omega_i = s\cdot\sigma(\text{slope}\,(PM_i + \text{bias}))` with the
    negative probabilistic margin :math:`PM_i = \max_{j\ne y_i}p_j(x_i') - p_{y_i}(x_i')` of the adversarial example
    (large when it is misclassified). Returns ω, float32, shape ``(n,)``.

    Args:
        logits, y: the logits on the adversarial examples :math:`x_i'`, shape ``(n, k)``, and the labels.
        bias, slope, scale: the formula's constants (defaults: the official code's; ``scale > 0``).
    """
    bias, slope, scale = check_number(bias, "bias"), check_number(slope, "slope"), check_number(scale, "scale")
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale!r}")
    if logits.dim() != 2 or y.shape != logits.shape[:1]:
        raise ValueError(f"y must have one label per row of logits {tuple(logits.shape)}, got {tuple(y.shape)}")
    if not bool(torch.isfinite(logits).all()):
        raise ValueError("logits contain NaN or inf")
    p = torch.softmax(logits.detach().float(), 1)
    p_true = p.gather(1, y.view(-1, 1)).squeeze(1)
    other = p.scatter(1, y.view(-1, 1), -1.0).max(1).values
    return scale * torch.sigmoid(slope * (other - p_true + bias))


def done_weight_stats(weights) -> dict[str, float]:
    r"""Summary of one batch of instance weights ω: ``ess`` = :math:`1/\sum_i\omega_i^2` (ω summing to one, as
    :func:`dro_lab.done_weights` gives with η = 1), ``batch`` = :math:`|\mathcal B|`, ``ess_fraction`` =
    :math:`\mathrm{ESS}/|\mathcal B|` and ``max_scaled`` = :math:`\max_i\omega_i|\mathcal B|` (1 everywhere = the
    uniform weights of AT)."""
    w = to_numpy(weights).reshape(-1)
    if w.size == 0:
        raise ValueError("weights must be a non-empty vector")
    check_finite(w, "weights")
    ess = float(1.0 / np.sum(w**2))
    return {"ess": ess, "batch": int(w.size), "ess_fraction": ess / w.size, "max_scaled": float(w.max() * w.size)}
