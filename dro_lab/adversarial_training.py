r"""Adversarial training through :func:`dro_lab.fit`: Madry's PGD-AT, DONE (Sow et al., ICLR 2024), GAIRAT and MAIL.

Each is a :class:`~dro_lab.train.Strategy` whose :meth:`transform` replaces the batch by its
adversarial examples (:func:`dro_lab.adversarial.pgd_attack`, the model in eval mode during the
attack) and whose :meth:`reduce` weights the per-sample adversarial losses:

* :class:`AdversarialTrainingStrategy` — uniform weights (Madry et al. 2018, eq. 1);
* :class:`DONEStrategy` — KL-DRO instance weights :math:`\omega_i = e^{\ell_i/r}/(|\mathcal B|\,u_{t+1})` with the
  compositional running average :math:`u` of CID (in log space), and optionally CID's implicit term through
  the log-barrier attack (:func:`done_weights`, :func:`implicit_correction`);
* :class:`GAIRATStrategy` — geometry-aware weights from κ, the number of PGD steps an example stays
  correctly classified (Zhang et al. 2021);
* :class:`MAILStrategy` — weights from the probabilistic margin (Wang/Liu et al. 2021).

Weights never carry gradient (Danskin; spec pitfall 1: back-propagating through softmax(ℓ/r) changes
the gradient by 65 %).
"""

from __future__ import annotations

import math
import numbers
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from .adversarial import pgd_attack
from .train import Strategy

__all__ = ["AdversarialTrainingStrategy", "DONEStrategy", "GAIRATStrategy", "MAILStrategy", "done_weights",
           "implicit_correction", "gairat_weights", "mail_weights", "DONE_INNER"]

#: DONE's inner solvers (the paper's DONE-PGD / DONE-GD / DONE-ADAM) → pgd_attack's step rule.
DONE_INNER = {"pgd": "sign", "gd": "gd", "adam": "adam"}


def _positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


# --------------------------------------------------------------------------- pure weight functions


def done_weights(losses: Tensor, *, r: float, log_u: Tensor | None = None, eta: float = 1.0) -> tuple[Tensor, Tensor]:
    r"""DONE's instance weights and the updated log running average (Algorithm 1 steps 5–6 for :math:`g=e^{\ell/r}`).

    .. math::
        s = \log\frac1{|\mathcal B|}\sum_{i\in\mathcal B}e^{\ell_i/r},\qquad
        \log u_{t+1} = \log\big((1-\eta)u_t + \eta e^{s}\big),\qquad
        \omega_i = \frac{e^{\ell_i/r-\log u_{t+1}}}{|\mathcal B|}

    all in log space (``e^{ℓ/r}`` overflows float32 once ℓ/r > 88.7). With ``eta = 1`` or no previous
    ``log_u`` the weights are ``softmax(ℓ/r)`` over the batch and sum to one; with η < 1 they sum to
    :math:`e^{s}/u_{t+1}`. Returns ``(ω, log u_{t+1})``, both detached, float64 internally.
    """
    r = _positive(r, "r")
    if not 0 < eta <= 1:
        raise ValueError(f"eta must lie in (0, 1], got {eta!r}")
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


def implicit_correction(losses: Tensor, x_adv: Tensor, x: Tensor, weights: Tensor, *, eps: float, barrier: float,
                        clamp: tuple[float, float] = (0.0, 1.0), tol: float = 1e-7) -> Tensor:
    r"""CID's implicit term through the log-barrier attack, with the Hessian of the attack loss neglected (spec §2.3).

    :math:`\mathrm{corr}=\sum_i\omega_i\langle G_i,\ \mathrm{sg}(C_i^{-1}G_i)\rangle`, :math:`G_i=\nabla_\delta\ell_i` at
    the attack's δ (built with ``create_graph`` so that its θ-gradient is :math:`\nabla_{\theta\delta}\ell_i\,C_i^{-1}G_i`),
    :math:`[C_i]_{jj}=c\,(1/(u_j-\delta_j)^2+1/(\delta_j-l_j)^2)`, :math:`u_j=\min(\epsilon, hi-x_j)`,
    :math:`l_j=-\min(\epsilon, x_j-lo)`, and :math:`C^{-1}=0` on coordinates at a face of the box (pitfall 10).
    ``x_adv`` must require grad and ``losses`` must come from it; the model should have no batch-dependent
    layers in train mode (BatchNorm couples the examples, pitfall 6).

    Cost: one input-gradient pass that records its graph (``G``), O(p) elementwise work for :math:`C^{-1}`, and,
    in the caller's backward, one double backward through that pass. The weights are folded into the stopped
    factor (:math:`\mathrm{corr}=\langle G,\ \mathrm{sg}(\omega\odot C^{-1}G)\rangle`), so the graph gains only a
    product and a sum. Only the parameters need this backward: :meth:`DONEStrategy.backward` skips ``x_adv``'s.
    """
    _positive(barrier, "barrier")
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not (eps >= 0 and math.isfinite(eps)):
        raise ValueError(f"eps must be a finite number ≥ 0, got {eps!r}")
    if x_adv.shape != x.shape:
        raise ValueError(f"x_adv must have the shape of x {tuple(x.shape)}, got {tuple(x_adv.shape)}")
    if losses.shape != (x.shape[0],):
        raise ValueError(f"losses must have one entry per example ({x.shape[0]},), got {tuple(losses.shape)}")
    if weights.shape != losses.shape:
        raise ValueError(f"weights must have the shape of losses {tuple(losses.shape)}, got {tuple(weights.shape)}")
    if not bool(torch.isfinite(losses.detach()).all()):
        raise ValueError("losses contain NaN or inf")
    return _implicit_correction(losses, x_adv, x, weights, eps=eps, barrier=barrier, clamp=clamp, tol=tol)


def _implicit_correction(losses: Tensor, x_adv: Tensor, x: Tensor, weights: Tensor, *, eps: float, barrier: float,
                         clamp: tuple[float, float] = (0.0, 1.0), tol: float = 1e-7) -> Tensor:
    """:func:`implicit_correction` unchecked and without a host sync (DONE's per-batch path)."""
    (grad,) = torch.autograd.grad(losses, x_adv, grad_outputs=torch.ones_like(losses), create_graph=True)
    with torch.no_grad():
        xa = x_adv.detach()
        # the distances u_j − δ_j and δ_j − l_j to the box's faces min(x + ε, hi) and max(x − ε, lo)
        gap_u = torch.clamp(x + eps, max=clamp[1]).sub_(xa)
        gap_l = xa - torch.clamp(x - eps, min=clamp[0])
        interior = torch.minimum(gap_u, gap_l) > tol
        gap_u.square_()
        gap_l.square_()
        # C⁻¹ = 1 / (c (1/gu² + 1/gl²)) = gu² gl² / (c (gu² + gl²)), and 0 off the interior (pitfall 10)
        c_inv = torch.where(interior, (gap_u * gap_l).div_((gap_u + gap_l).mul_(barrier)), 0.0)
        v = c_inv.mul_(grad).mul_(weights.detach().reshape(-1, *([1] * (grad.dim() - 1))))
    return (grad * v).sum()


def gairat_weights(kappa: Tensor, steps: int, *, lam: float = -1.0) -> Tensor:
    r"""GAIRAT (Zhang et al. 2021): :math:`\omega_i=\frac{1+\tanh(\lambda+5(1-2\kappa_i/K))}2`, normalised to mean 1.

    κ_i is the number of the K PGD steps at whose start example i was still classified correctly (the
    official code writes ⌊K/2⌋ for K/2; the two agree for even K). Few steps correct (close to the
    boundary) → large weight."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an integer ≥ 1, got {steps!r}")
    lam = _real(lam, "lam")
    if not isinstance(kappa, Tensor) or kappa.dim() != 1 or kappa.numel() == 0:
        raise ValueError(f"kappa must be a non-empty 1-D tensor of counts in [0, steps={steps}]")
    k = kappa.to(torch.float64)
    if bool(((k < 0) | (k > steps)).any()):
        raise ValueError(f"kappa must hold counts in [0, steps={steps}], got values in "
                         f"[{float(k.min()):g}, {float(k.max()):g}]")
    w = (1 + torch.tanh(lam + 5 * (1 - 2 * k / steps))) / 2
    return (w * w.numel() / w.sum()).to(torch.float32)


def mail_weights(logits: Tensor, y: Tensor, *, bias: float = -1.5, slope: float = 1.0, scale: float = 3.0) -> Tensor:
    r"""MAIL (the official code's form): :math:`\omega_i = s\cdot\sigma(\text{slope}\,(PM_i + \text{bias}))` with the
    negative probabilistic margin :math:`PM_i = \max_{j\ne y_i}p_j(x_i') - p_{y_i}(x_i')` of the adversarial example
    (large when it is misclassified). Defaults: bias −1.5, slope 1, scale 3 (the code's constant normaliser)."""
    bias, slope, scale = _real(bias, "bias"), _real(slope, "slope"), _real(scale, "scale")
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


# --------------------------------------------------------------------------- strategies


class AdversarialTrainingStrategy(Strategy):
    r"""Madry PGD adversarial training: every batch replaced by its PGD examples, mean loss.

    Args:
        eps: the L∞ (or L2) radius ε ≥ 0 in input units (inputs in ``clamp``).
        alpha: attack step; default ``2.5·eps/steps`` (Madry's rule).
        steps: PGD steps K ≥ 1.
        norm, random_start, step_rule, clamp: as in :func:`dro_lab.adversarial.pgd_attack`.
    The attack runs with the model in eval mode (restored), seeded from ``fit``'s generator.
    """

    name = "pgd-at"

    def __init__(self, eps: float, *, alpha: float | None = None, steps: int = 5, norm: str = "linf",
                 random_start: bool = True, step_rule: str = "sign", clamp: tuple[float, float] = (0.0, 1.0)):
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not (eps >= 0 and math.isfinite(eps)):
            raise ValueError(f"eps must be a finite number ≥ 0, got {eps!r}")
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be an integer ≥ 1, got {steps!r}")
        from .adversarial import _NORMS, _STEP_RULES, _check_choice, _check_clamp

        _check_choice(norm, "norm", _NORMS)
        _check_choice(step_rule, "step_rule", _STEP_RULES)
        clamp = _check_clamp(clamp)
        self.eps, self.steps, self.norm = float(eps), steps, norm
        self.alpha = _positive(alpha, "alpha") if alpha is not None else max(2.5 * self.eps / steps, 1e-12)
        self.random_start, self.step_rule, self.clamp = random_start, step_rule, clamp
        self.epoch = 0
        self._kappa: Tensor | None = None
        self._x: Tensor | None = None
        self._x_adv: Tensor | None = None
        self.name = f"{type(self).name}(ε={self.eps:g},K={steps})"

    def batches(self, epoch: int, batch_size: int):
        self.epoch = epoch
        return super().batches(epoch, batch_size)

    def _attack(self, model, x, y, *, requires_grad: bool = False, kappa: bool = False):
        out = pgd_attack(model, x, y, eps=self.eps, alpha=self.alpha, steps=self.steps, norm=self.norm,
                         random_start=self.random_start, step_rule=self.step_rule, clamp=self.clamp,
                         generator=self.generator, return_kappa=kappa)
        x_adv, self._kappa = out if kappa else (out, None)
        self._x = x
        self._x_adv = x_adv.requires_grad_(True) if requires_grad else x_adv
        return self._x_adv

    def transform(self, x, y, *, indices, groups, model):
        return self._attack(model, x, y), y, groups

    def describe(self) -> str:
        return self.name


class DONEStrategy(AdversarialTrainingStrategy):
    r"""DONE (Sow et al., ICLR 2024): doubly robust adversarial training — worst-case noise **and** KL-DRO weights.

    Each batch: δ by the inner solver (``inner``: ``"pgd"`` sign steps, ``"gd"`` non-sign projected gradient
    on the summed loss, ``"adam"``), then the loss :math:`J=\sum_i\omega_i\ell_i` with :func:`done_weights`
    (detached), plus, with ``implicit=True``, CID's Hessian-free implicit term (:func:`implicit_correction`,
    barrier coefficient ``barrier`` = c).

    Args:
        r: the KL temperature (loss units; r → ∞ is AT, r → 0 the max loss), or ``r_schedule``: a dict
            ``{first_epoch: r}`` (the paper: ``{1: 10, 41: 1, 51: 0.1}`` of 60 epochs); u is reset when r changes
            (pitfall 3).
        eta: η of the running average :math:`u_{t+1}=(1-\eta)u_t+\eta\,\bar g_{\mathcal B}`; 1 = the batch softmax.
        eps, alpha, steps, norm, random_start, clamp: the attack's.
    ``epoch_stats`` reports r, the effective sample size ESS/|B| = 1/(|B|Σω²) and the weights' sum.
    """

    name = "done"

    def __init__(self, eps: float, *, r: float = 1.0, r_schedule: dict[int, float] | None = None, eta: float = 1.0,
                 inner: str = "pgd", implicit: bool = False, barrier: float = 0.05, alpha: float | None = None,
                 steps: int = 5, norm: str = "linf", random_start: bool = True, clamp: tuple[float, float] = (0.0, 1.0)):
        if inner not in DONE_INNER:
            raise ValueError(f"inner must be one of {sorted(DONE_INNER)}, got {inner!r}")
        super().__init__(eps, alpha=alpha, steps=steps, norm=norm, random_start=random_start,
                         step_rule=DONE_INNER[inner], clamp=clamp)
        self.r = _positive(r, "r")
        if r_schedule is not None:
            if not r_schedule or not all(isinstance(k, int) and k >= 1 for k in r_schedule):
                raise ValueError(f"r_schedule must map epochs ≥ 1 to r, got {r_schedule!r}")
            for v in r_schedule.values():
                _positive(v, "r_schedule value")
        self.r_schedule = dict(sorted(r_schedule.items())) if r_schedule else None
        if not (isinstance(eta, numbers.Real) and 0 < eta <= 1):
            raise ValueError(f"eta must lie in (0, 1], got {eta!r}")
        self.eta = float(eta)
        self.inner, self.implicit = inner, bool(implicit)
        self.barrier = _positive(barrier, "barrier")
        self.log_u: Tensor | None = None
        self._r_of_u: float | None = None
        self._stats = {"ess": 0.0, "sum": 0.0, "batches": 0}
        self._model: torch.nn.Module | None = None  # the implicit term's backward: its parameters only
        tags = [f"ε={self.eps:g}", f"r={self.r:g}" if not self.r_schedule else
                "r=" + "→".join(f"{v:g}" for v in self.r_schedule.values())]
        tags += ([f"η={self.eta:g}"] if self.eta != 1 else []) + (["implicit"] if implicit else [])
        self.name = f"done-{inner}({','.join(tags)})"

    def current_r(self) -> float:
        if not self.r_schedule:
            return self.r
        r = next(iter(self.r_schedule.values()))
        for start, value in self.r_schedule.items():
            if self.epoch >= start:
                r = value
        return r

    def transform(self, x, y, *, indices, groups, model):
        self._model = model
        return self._attack(model, x, y, requires_grad=self.implicit), y, groups

    def reduce(self, losses, *, indices, groups):
        r = self.current_r()
        if r != self._r_of_u:  # u tracks mean e^{ℓ/r}: a new r starts it afresh
            self.log_u, self._r_of_u = None, r
        if losses.dim() != 1 or losses.numel() == 0:
            raise ValueError(f"losses must be a non-empty 1-D tensor, got shape {tuple(losses.shape)}")
        # no host sync per batch: the statistics stay on the device until epoch_stats; a NaN or inf loss
        # makes the weights NaN, which epoch_stats reports (done_weights itself checks before computing)
        w64, self.log_u = _done_weights64(losses.detach().to(torch.float64), r, self.log_u, self.eta)
        with torch.no_grad():
            total, squares = w64.sum(), torch.dot(w64, w64)
            self._stats["ess"] += total * total / (squares * w64.numel())  # ESS/|B| = (Σω)² / (|B| Σω²)
            self._stats["sum"] += total
            self._stats["batches"] += 1
        w = w64.to(losses.dtype)
        objective = (w * losses).sum()
        if self.implicit:
            objective = objective + _implicit_correction(losses, self._x_adv, self._x, w, eps=self.eps,
                                                        barrier=self.barrier, clamp=self.clamp)
        return objective

    def backward(self, objective, *, losses, groups):
        """``objective.backward()``; with the implicit term, into the attacked model's trainable parameters only.

        The attack's output requires grad (for G = ∇_δ ℓ); its own gradient is never used, but a plain
        ``backward`` would still compute it (the first layer's input gradient, ≈ 2 % of a PGD-5 AT iteration on
        the DigitsCNN). The parameters' ``.grad`` are the same either way."""
        params = [p for p in self._model.parameters() if p.requires_grad] \
            if self.implicit and self._model is not None and self._x_adv is not None and self._x_adv.requires_grad \
            else None
        if params:
            torch.autograd.backward(objective, inputs=params)
        else:
            objective.backward()

    def epoch_stats(self) -> dict:
        k = max(self._stats["batches"], 1)
        ess, total = (float(self._stats[key]) for key in ("ess", "sum"))  # one host sync per epoch
        bad = self._stats["batches"] and not (math.isfinite(ess) and math.isfinite(total))
        self._stats = {"ess": 0.0, "sum": 0.0, "batches": 0}
        if bad:
            raise ValueError("DONE: the losses contained NaN or inf in this epoch (the weights are undefined)")
        return {"done_r": self.current_r(), "done_ess_fraction": ess / k, "done_weight_sum": total / k}

    def state_dict(self) -> dict:
        # the epoch's running statistics too: a run resumed mid-epoch reports the same epoch_stats
        stats = {k: v.clone() if isinstance(v, Tensor) else v for k, v in self._stats.items()}
        return {"log_u": None if self.log_u is None else self.log_u.clone(), "r_of_u": self._r_of_u, "stats": stats}

    def load_state_dict(self, state: dict) -> None:
        device = getattr(self, "device", None)  # set by setup (fit loads after it)
        def move(v):
            return v.to(device) if isinstance(v, Tensor) and device is not None else v
        self.log_u, self._r_of_u = move(state["log_u"]), state["r_of_u"]
        self._stats = {k: move(v) for k, v in state.get("stats", {"ess": 0.0, "sum": 0.0, "batches": 0}).items()}


class _BurnIn(AdversarialTrainingStrategy):
    """Uniform weights (plain AT) before ``burn_in_epochs``, the method's weights after (both baselines do this)."""

    def __init__(self, eps: float, *, burn_in_epochs: int = 0, **kw):
        super().__init__(eps, **kw)
        if isinstance(burn_in_epochs, bool) or not isinstance(burn_in_epochs, int) or burn_in_epochs < 0:
            raise ValueError(f"burn_in_epochs must be an integer ≥ 0, got {burn_in_epochs!r}")
        self.burn_in_epochs = burn_in_epochs

    def _weighting(self) -> bool:
        return self.epoch > self.burn_in_epochs


class GAIRATStrategy(_BurnIn):
    r"""GAIRAT (Zhang et al. 2021) through the engine: PGD-AT with :func:`gairat_weights` from the attack's κ.

    ``lam`` = λ (official default −1); uniform weights for the first ``burn_in_epochs`` (the official code:
    60 of 120)."""

    name = "gairat"

    def __init__(self, eps: float, *, lam: float = -1.0, burn_in_epochs: int = 0, **kw):
        super().__init__(eps, burn_in_epochs=burn_in_epochs, **kw)
        self.lam = _real(lam, "lam")
        self.name = f"gairat(ε={self.eps:g},λ={self.lam:g})"

    def transform(self, x, y, *, indices, groups, model):
        return self._attack(model, x, y, kappa=True), y, groups

    def reduce(self, losses, *, indices, groups):
        if not self._weighting():
            return losses.mean()
        w = gairat_weights(self._kappa, self.steps, lam=self.lam).to(losses)
        return (w * losses).mean()


class MAILStrategy(_BurnIn):
    r"""MAIL (margin-aware instance reweighting; the official MAIL-AT) with :func:`mail_weights` of the adversarial
    logits; uniform for the first ``burn_in_epochs`` (the official code starts from an AT checkpoint halfway)."""

    name = "mail"

    def __init__(self, eps: float, *, bias: float = -1.5, slope: float = 1.0, burn_in_epochs: int = 0, **kw):
        super().__init__(eps, burn_in_epochs=burn_in_epochs, **kw)
        self.bias, self.slope = _real(bias, "bias"), _real(slope, "slope")
        self._model: Callable | None = None
        self.name = f"mail(ε={self.eps:g},bias={self.bias:g},slope={self.slope:g})"

    def transform(self, x, y, *, indices, groups, model):
        self._model, self._y = model, y
        return super().transform(x, y, indices=indices, groups=groups, model=model)

    def reduce(self, losses, *, indices, groups):
        if not self._weighting():
            return losses.mean()
        # the weights need the adversarial logits; recomputing them (no grad) keeps fit's loss_fn generic
        with torch.no_grad():
            logits = self._model(self._x_adv)
        w = mail_weights(logits, self._y, bias=self.bias, slope=self.slope).to(losses)
        return (w * losses).mean()
