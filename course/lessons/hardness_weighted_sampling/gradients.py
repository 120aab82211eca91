"""Lesson 02, the gradients: §3.3 (Lemma 3.2), §3.4 (App. D.7.4, eq. 82), §3.5 (Theorem 3.2) and §3.7 (Lemma 3.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from dro_course.lessons import CheckResult, require, share, softmax_relative
from dro_course.lessons.hardness_weighted_sampling._shared import DELTA, DIVERGENCES, NAMES, check_beta
from dro_course.lessons.hardness_weighted_sampling.diagnostics import GradientMC, mc_gradient_errors, weights_jacobian
from dro_lab._rounding import SAFETY, U64, gamma
from dro_lab._validation import as_float_vector, check_choice, check_int, check_module, check_number
from dro_lab.oracles import dual_worst_case, fidon_eq21_threshold
from dro_lab.pergrad.vmap import vmap_grads
from dro_lab.robust import robust_loss

__all__ = ["check_lemma_3_2", "check_mc_gradient", "check_jacobian", "check_lipschitz", "chi2_clipping_beta"]


# --------------------------------------------------------------------------- §3.3: Lemma 3.2


@dataclass(frozen=True)
class GradientCheck(CheckResult):
    """:func:`check_lemma_3_2`' numbers; ``grads`` and ``q`` are what §3.4 samples from."""

    grads: torch.Tensor  #: (m, P): row i = ∇θ ℓ_i
    q: torch.Tensor  #: p̄ = softmax(β ℓ), detached
    norm: float  #: ‖∇θ R‖
    err_autograd: float
    err_library: float
    allowed: float

    def lines(self) -> list[str]:
        return [
            f"P = {self.grads.shape[1]} parameters;  ‖∇θR‖ = {self.norm:.4f}",
            f"max |autograd ∇θR − Σ p̄_i ∇θℓ_i| = {self.err_autograd:.1e}; max |robust_loss backward − Σ p̄_i ∇θℓ_i| "
            f"= {self.err_library:.1e}; float64 rounding allows {self.allowed:.1e}",
        ]


def check_lemma_3_2(model, x, y, *, beta: float) -> GradientCheck:
    r"""Lemma 3.2: :math:`\nabla_\theta R_\beta(\ell(\theta))=\sum_i\bar p_i\nabla_\theta\ell_i`, weights detached.

    Three computations of the gradient on the examples ``(x, y)`` of ``model`` (cross-entropy losses): autograd
    through :math:`\frac1\beta(\mathrm{logsumexp}(\beta\ell)-\log m)`, the p̄-weighted sum of per-example gradients
    (``torch.func``), and ``dro_lab.robust_loss``'s backward. Tolerance, a rounding model in the model's precision u:
    every gradient entry is a sum over the m examples of terms computed by dot products no longer than P + d (the
    parameters and the input size bound every sum of the network), so it is exact up to γ(m + P + d) times the sum of
    the magnitudes :math:`\max_j\sum_i\bar p_i|G_{ij}|`, and the two sets of weights differ by their softmax rounding
    (exponents within 3u·β·max|ℓ|). Doubled, like every first-order bound here. Unlike the other tolerances of
    this lesson this one is a model, not a proof: it takes the magnitudes inside the network's sums (and the
    cancellation in the cross-entropy's p − e_y) to be those of the gradients, which holds for the small networks of
    the lesson by a wide margin (the errors seen are 10³–10⁴ times below it).
    """
    model = check_module(model)
    beta = check_beta(beta)
    grads = vmap_grads(model, F.cross_entropy, x, y, None)
    m = len(x)
    G = torch.cat([g.reshape(m, -1) for g in grads.values()], 1)
    params = [p for p in model.parameters() if p.requires_grad]
    ell = F.cross_entropy(model(x), y, reduction="none")
    R = (torch.logsumexp(beta * ell, 0) - math.log(m)) / beta
    grad_R = torch.cat([g.reshape(-1) for g in torch.autograd.grad(R, params)])
    q = torch.softmax(beta * ell.detach(), 0)
    weighted = q @ G
    model.zero_grad()
    robust_loss(F.cross_entropy(model(x), y, reduction="none"), divergence="kl", beta=beta).backward()
    grad_lib = torch.cat([p.grad.reshape(-1) for p in params])
    model.zero_grad()
    u = torch.finfo(G.dtype).eps / 2
    big = float(ell.detach().abs().max())
    weights = softmax_relative(m, 3 * u * beta * big * (1 + 4 * u), u)
    magnitude = float((q.abs() @ G.abs()).max())
    allowed = SAFETY * (gamma(m + G.shape[1] + x[0].numel(), u) + 2 * weights + 4 * u) * magnitude
    err_autograd = float((grad_R - weighted).abs().max())
    err_library = float((grad_lib - weighted).abs().max())
    fact = f"Lemma 3.2 at β = {beta:g}: ∇θR = Σ p̄_i ∇θℓ_i"
    require(err_autograd <= allowed, fact, f"autograd differs by {err_autograd:.3e} > {allowed:.3e}")
    require(err_library <= allowed, fact, f"robust_loss's backward differs by {err_library:.3e} > {allowed:.3e}")
    return GradientCheck(G.detach(), q, float(grad_R.norm()), err_autograd, err_library, allowed)


# --------------------------------------------------------------------------- §3.4: Monte Carlo, App. D.7.4


@dataclass(frozen=True)
class MonteCarloCheck(CheckResult):
    """:func:`check_mc_gradient`' numbers; ``mc`` is what the figure draws."""

    mc: GradientMC
    beta: float | None
    batch_size: int
    ess: float
    support: int
    error: float  #: relative error with replacement after the last M
    rms: float  #: relative RMS of the unbiased estimator
    deviation: float  #: the smaller of the two bounds' terms beyond the mean, relative
    bound: float  #: what the error may reach (relative), rounding included
    delta: float
    which: str = "McDiarmid"  #: the bound that was smaller: "McDiarmid" or "Bernstein"

    def lines(self) -> list[str]:
        mc, N = self.mc, self.batch_size * int(self.mc.ms[-1])
        at = "" if self.beta is None else f"β = {self.beta:g}, "
        without = (
            f"without replacement {mc.without_replacement[-1]:.4f}"
            if mc.without_replacement is not None
            else f"without replacement: impossible ({mc.without_reason})"
        )
        return [
            f"{at}b = {self.batch_size}: p̄ has effective sample size 1/Σp̄² = {self.ess:.1f} of {len(mc.q)} "
            f"examples ({self.support} with positive probability)",
            f"after M = {mc.ms[-1]} batches (N = bM = {N} draws), relative errors: with replacement {self.error:.4f}; "
            f"{without}",
            f"    with replacement ≤ {self._formula()} = {self.bound:.4f} ({self.which}'s bound, the smaller of two; "
            f"this fails with probability at most {self.delta:.0e})",
        ]

    def _formula(self) -> str:
        if self.which == "McDiarmid":
            return f"RMS + D·√(ln(2/δ)/(2N)) = {self.rms:.4f} + {self.deviation:.4f}"
        return f"√(2σ²·ln(4/δ)/N) + 2c·ln(4/δ)/N = {self.deviation:.4f}"


def check_mc_gradient(q, grads, *, batch_size: int, batches: int, generator=None, beta=None, delta: float = DELTA):
    r"""App. D.7.4, eq. 82: the mean of N = bM i.i.d. draws from p̄ estimates ∇R, with a bound on its error.

    With :math:`\hat g` the mean of N gradients drawn i.i.d. from q and :math:`f=\|\hat g-\nabla R\|`, two bounds
    each fail with probability at most δ/2, and the smaller one is asserted:

    * McDiarmid: :math:`\mathbb Ef\le\mathrm{RMS}=\sqrt{\sigma^2/N}`, :math:`\sigma^2=\sum_iq_i\|G_i\|^2-\|\nabla
      R\|^2`, and one draw moves f by at most D/N with D the diameter of :math:`\{G_i:q_i>0\}`, so
      :math:`P(f\ge\mathrm{RMS}+D\sqrt{\ln(2/\delta)/(2N)})\le\delta/2`;
    * Bernstein in a Hilbert space (Pinelis 1994, as stated by Smale & Zhou 2007, Lemma 2): the draws
      :math:`G_{i_j}-\nabla R` have mean 0, norm at most c (the radius of :math:`\{G_i:q_i>0\}` about ∇R) and
      second moment σ², so :math:`P(f\ge\sqrt{2\sigma^2\ln(4/\delta)/N}+2c\ln(4/\delta)/N)\le\delta/2`. It shrinks
      with σ, where McDiarmid's does not: at large β, when p̄ sits on a few examples.

    ``torch.multinomial`` (float64 on the CPU) draws
    from probabilities within :math:`3u` of q each, and lands on a zero-probability index 0 with probability at most
    :math:`2^{-53}` per draw: both are charged (the first to the bound, the second to δ).
    """
    batch_size, batches = check_int(batch_size, "batch_size"), check_int(batches, "batches")
    delta = check_number(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    mc = mc_gradient_errors(q, grads, batch_size=batch_size, batches=batches, generator=generator)
    qn, G = mc.q, grads.detach().double().cpu()
    N, n = batch_size * int(mc.ms[-1]), qn.numel()
    scale, exact = mc.scale, mc.exact
    support = qn > 0
    Gs = G[support]
    diameter = float(torch.cdist(Gs, Gs).max()) if len(Gs) > 1 else 0.0
    radius = float((Gs - exact).norm(dim=1).max())
    second = float(qn @ (G * G).sum(1))
    rms = math.sqrt(max(second - float(exact @ exact), 0.0) / N)
    eps_pi = n * (3 * U64 + 2.0**-53) + gamma(n)  # Σ|π − q| over the realised probabilities π
    rounding = (math.sqrt(eps_pi / N) + eps_pi) * radius + gamma(n) * float(exact.norm())
    rounding += math.sqrt(gamma(n + G.shape[1] + 2) * (second + float(exact @ exact)) / N)
    rounding += SAFETY * 2 * gamma(n + 1) * float(G.norm(dim=1).max())
    left = delta - N * 2.0**-53  # the chance of a draw on a zero-probability index is charged to δ
    mcdiarmid = rms + diameter * math.sqrt(math.log(2.0 / left) / (2 * N)) if left > 0 else math.inf
    # the realised probabilities move the second moment and the radius by at most eps_pi of theirs (charged here)
    sigma2 = max(second - float(exact @ exact), 0.0) + 2 * eps_pi * radius**2
    log4 = math.log(4.0 / left) if left > 0 else math.inf
    bernstein = math.sqrt(2 * sigma2 * log4 / N) + 2 * radius * (1 + eps_pi) * log4 / N
    which, deviation = ("McDiarmid", mcdiarmid - rms) if mcdiarmid <= bernstein else ("Bernstein", bernstein)
    error = float(mc.with_replacement[-1]) * scale
    bound = min(mcdiarmid, bernstein) + rounding
    require(
        error <= bound,
        f"the i.i.d. batch mean stays within the smaller of McDiarmid's and Bernstein's bounds (δ = {delta:g})",
        f"‖ĝ − ∇R‖ = {error:.4e} > McDiarmid {mcdiarmid:.4e}, Bernstein {bernstein:.4e} + rounding {rounding:.1e}",
    )
    ess = float(1.0 / (qn * qn).sum())
    return MonteCarloCheck(
        mc,
        beta,
        batch_size,
        ess,
        int(support.sum()),
        error / scale,
        rms / scale,
        deviation / scale,
        bound / scale,
        delta,
        which,
    )


# --------------------------------------------------------------------------- §3.5: Theorem 3.2, the Jacobian


def _chi2_brackets(ell: np.ndarray, beta: float) -> np.ndarray:
    """1 + (β/2)(ℓ_i − λ) with λ the χ² multiplier, from the exact dual (uniform prior): q_i = max(0, bracket)/n."""
    eta = dual_worst_case(ell, divergence="chi2", beta=beta).eta
    return 1.0 + beta / 2.0 * (ell - eta)


def chi2_clipping_beta(losses) -> float | None:
    """A β at which the χ² worst case clips (§3.6), kept off its kinks: ``None`` for equal losses (nothing clips).

    At β ≥ 4·:func:`~dro_lab.oracles.fidon_eq21_threshold` the smallest loss's bracket in eq. (21) is ≤ −3, and the
    exact multiplier only lies higher, so some weight is 0. Of 4, 4.5, 5, 5.5 and 6 times the threshold, the one
    whose brackets stay farthest from 0 (a kink of the weights) is returned.
    """
    ell = as_float_vector(losses, "losses")
    threshold = fidon_eq21_threshold(ell)
    if math.isinf(threshold):
        return None
    candidates = [c * threshold for c in (4.0, 4.5, 5.0, 5.5, 6.0)]
    return max(candidates, key=lambda b: float(np.abs(_chi2_brackets(ell, b)).min()))


@dataclass(frozen=True)
class JacobianCheck(CheckResult):
    """:func:`check_jacobian`' numbers."""

    divergence: str
    beta: float
    h: float
    jacobian: np.ndarray  #: the finite differences
    on: np.ndarray  #: the weights that are positive (not clipped to 0, not underflowed)
    error: float  #: max |finite differences − closed form|
    used: float  #: the largest |error_ij| / allowed_ij

    def lines(self) -> list[str]:
        on = self.on
        A = self.jacobian[np.ix_(on, on)]
        off = A[~np.eye(len(A), dtype=bool)]
        clipped = max(np.abs(self.jacobian[~on]).max(initial=0.0), np.abs(self.jacobian[:, ~on]).max(initial=0.0))
        closed = "β(diag p̄ − p̄p̄ᵀ)" if self.divergence == "kl" else "(β/2n)(δ_ij − 1/|S|) on the support S"
        return [
            f"{NAMES[self.divergence]} at β = {self.beta:.4g}, step h = {self.h:.1e}: max |finite differences − "
            f"{closed}| = {self.error:.1e} ({share(self.used)} of the allowed)",
            f"    {int(on.sum())} of {len(self.jacobian)} weights positive; on them min ∂q_i/∂ℓ_i = "
            f"{A.diagonal().min():+.2e} (≥ 0), max ∂q_i/∂ℓ_j = "
            + (f"{off.max():+.2e} (≤ 0)" if off.size else "— (one weight)")
            + f"; the others' rows and columns: max |J| = {clipped:.0e}",
        ]


def _kl_jacobian(ell: np.ndarray, beta: float) -> tuple:
    """The KL closed form β(diag p − ppᵀ), the finite differences and the allowed error of each entry."""
    n, spread = ell.size, float(ell.max() - ell.min())
    p = torch.softmax(beta * torch.from_numpy(ell), 0).numpy()
    closed = beta * (np.diag(p) - np.outer(p, p))
    rel = softmax_relative(n, 2.01 * U64 * beta * (spread + 1.0), U64)  # the library's softmax of β(ℓ − max ℓ)
    # The third derivative of q_i along one loss is β³ times that of a logistic function (≤ 1/8): truncation
    # h²β³/48; rounding of the two evaluations: rel·q_i/h. The h balancing them:
    h = min((24.0 * rel / beta**3) ** (1.0 / 3.0), 1.0 / beta)
    fd = weights_jacobian(ell, divergence="kl", beta=beta, h=h).numpy()
    col = np.abs(ell)[None, :] + h  # the step ℓ_j ± h is itself rounded: it moves by u·(|ℓ_j| + h)
    allowed = SAFETY * (
        h * h * beta**3 / 48
        + rel * (1 + rel) * p[:, None] * math.exp(beta * h) / h
        + np.abs(closed) * U64 * col / h
        + U64 * col * beta**2 / 10
        + (4 * beta * rel + 3 * U64 * beta) * p[:, None]
    )
    return closed, fd, allowed, h, p > 0


def _chi2_jacobian(ell: np.ndarray, beta: float) -> tuple:
    """The χ² closed form on the support, the finite differences with a step that crosses no kink, the allowed error."""
    n, spread = ell.size, float(ell.max() - ell.min())
    brackets = _chi2_brackets(ell, beta)
    margin = float(np.abs(brackets).min())
    if not margin > 0:
        raise ValueError(f"beta={beta:g} puts a χ² bracket exactly at 0, a kink of the weights: no derivative there")
    # Moving one loss by t moves every bracket by at most (β/2)|t| while the support S stays put, so with βh = margin
    # no bracket changes sign: q is affine on the whole step and central differences are exact but for rounding.
    h = margin / beta
    on = brackets > 0
    size = int(on.sum())
    closed = np.zeros((n, n))
    closed[np.ix_(on, on)] = beta / (2 * n) * (np.eye(size) - 1.0 / size)
    fd = weights_jacobian(ell, divergence="chi2", beta=beta, h=h).numpy()
    mass, g = size / n, gamma(n)
    # The library's weights (robust.py, Michelot): the multiplier from sums of n terms ≤ max − min + 2/(β·mass), so
    # each bracket within e_b, and q_i within p·e_b + q_i·(γ(n) + 2u + mass·e_b).
    e_b = (g + 5 * U64) * (beta * (spread + h) + 1.0 / mass)
    q_step = np.maximum(brackets, 0.0) / n + beta * h / (2 * n)
    eps_q = e_b / n + q_step * (g + 2 * U64 + mass * e_b)
    col = np.abs(ell)[None, :] + h
    allowed = SAFETY * (eps_q[:, None] / h + np.abs(closed) * U64 * col / h + 3 * U64 * np.abs(closed))
    return closed, fd, allowed, h, on


def check_jacobian(losses, *, divergence: str, beta: float) -> JacobianCheck:
    r"""Theorem 3.2's Jacobian :math:`J_{ij}=\partial q_i/\partial\ell_j`: central finite differences
    (``dro_lab.samplers.weights_jacobian``) against the closed forms, entry by entry.

    KL: :math:`J=\beta(\mathrm{diag}\,\bar p-\bar p\bar p^\top)`. Along one loss, :math:`q_i` is a logistic function
    of :math:`\beta\ell_j` (times a factor ≤ 1), whose third derivative is at most 1/8, so the truncation error is at
    most :math:`h^2\beta^3/48`; rounding adds :math:`\rho q_i/h` (ρ the softmax's relative rounding); h balances the
    two. χ²: on the support S, :math:`J_{ij}=\frac{\beta}{2n}(\delta_{ij}-1/|S|)`, and 0 on clipped rows and columns;
    a step that crosses no kink (:math:`h<\min_i|1+\frac\beta2(\ell_i-\lambda)|/\beta`) leaves q affine, so the
    differences are exact up to rounding. The sign pattern (:math:`J_{ii}\ge0`, :math:`J_{ij}\le0`) then follows
    from the closed forms; it is printed from the differences.
    """
    ell = as_float_vector(losses, "losses")
    divergence = check_choice(divergence, "divergence", DIVERGENCES)
    beta = check_beta(beta)
    closed, fd, allowed, h, on = (_kl_jacobian if divergence == "kl" else _chi2_jacobian)(ell, beta)
    err = np.abs(fd - closed)
    i, j = np.unravel_index(int(np.argmax(err / allowed)), err.shape)
    require(
        bool(np.all(err <= allowed)),
        f"{NAMES[divergence]} at β = {beta:g}: the finite differences are the closed-form Jacobian",
        f"entry ({i}, {j}): {fd[i, j]!r} against {closed[i, j]!r}, "
        f"|Δ| = {err[i, j]:.3e} > {allowed[i, j]:.3e} (h = {h:.3e})",
    )
    return JacobianCheck(divergence, beta, h, fd, on, float(err.max()), float((err / allowed).max()))


# --------------------------------------------------------------------------- §3.7: Lemma 3.1, smoothness


@dataclass(frozen=True)
class LipschitzCheck(CheckResult):
    """:func:`check_lipschitz`' numbers."""

    beta: float
    pairs: int
    largest: float  #: the largest ratio ‖softmax(βu) − softmax(βw)‖ / ‖u − w‖
    rounding: float  #: the largest rounding allowance of a pair

    def lines(self) -> list[str]:
        return [
            f"β = {self.beta:g}: largest ratio over {self.pairs} pairs {self.largest:.3f}  ≤  β/2 = {self.beta / 2:g}  "
            f"<  β = {self.beta:g} (the paper's constant)",
            f"    (a pair may exceed β/2 by the float64 rounding of its two softmaxes: at most {self.rounding:.0e})",
        ]


def check_lipschitz(
    beta: float, generator: np.random.Generator, *, pairs: int = 2000, size: int = 12, scale: float = 3.0
) -> LipschitzCheck:
    r"""Lemma 3.1 with the sharp constant: :math:`\|\mathrm{softmax}(\beta u)-\mathrm{softmax}(\beta w)\|_2\le
    \frac\beta2\|u-w\|_2`.

    The Jacobian :math:`\beta(\mathrm{diag}\,p-pp^\top)` is symmetric, and Gershgorin's theorem puts its eigenvalues
    below :math:`\beta\max_i2p_i(1-p_i)\le\beta/2` (the off-diagonal row sum equals the diagonal); the mean-value
    theorem does the rest. Checked on ``pairs`` random pairs of ``size`` losses, uniform on [0, ``scale``], drawn
    from ``generator``; each ratio may exceed β/2 by the rounding of two float64 softmaxes (exponents within
    3u·β·``scale``) divided by ‖u − w‖.
    """
    beta = check_beta(beta)
    if not isinstance(generator, np.random.Generator):
        raise TypeError(f"generator must be a numpy.random.Generator, got {type(generator).__name__}")
    pairs, size = check_int(pairs, "pairs"), check_int(size, "size", low=2)
    scale = check_number(scale, "scale", low=0.0, low_open=True)
    u, w = torch.tensor(generator.uniform(0.0, scale, size=(2, pairs, size)))
    apart = (u - w).norm(dim=1)
    ratio = (torch.softmax(beta * u, 1) - torch.softmax(beta * w, 1)).norm(dim=1) / apart
    rel = softmax_relative(size, 3 * U64 * beta * scale * (1 + 4 * U64), U64)
    g = gamma(size + 4)
    rounding = SAFETY * (2 * rel * (1 + 3 * g) / apart + beta / 2 * 3 * g)
    allowed = beta / 2 + rounding
    k = int(torch.argmax(ratio - allowed))
    require(
        bool((ratio <= allowed).all()),
        f"softmax(β·) is (β/2)-Lipschitz at β = {beta:g}",
        f"pair {k}: ratio {float(ratio[k])!r} > β/2 + rounding = {float(allowed[k])!r}",
    )
    return LipschitzCheck(beta, pairs, float(ratio.max()), float(rounding.max()))
