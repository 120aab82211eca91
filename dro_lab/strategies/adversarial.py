r"""Adversarial training through :func:`dro_lab.fit`: Madry's PGD-AT, DONE (Sow et al., ICLR 2024), GAIRAT and MAIL.

Each is a :class:`~dro_lab.Strategy` whose :meth:`transform` replaces the batch by its
adversarial examples (:func:`dro_lab.pgd_attack`, the model in eval mode during the
attack) and whose :meth:`reduce` weights the per-sample adversarial losses:

* :class:`AdversarialTrainingStrategy` — uniform weights (Madry et al. 2018, eq. 1);
* :class:`DONEStrategy` — KL-DRO instance weights :math:`\omega_i = e^{\ell_i/r}/(|\mathcal B|\,u_{t+1})` with the
  compositional running average :math:`u` of CID (in log space), and optionally CID's implicit term through
  the log-barrier attack (:func:`done_weights`, :func:`implicit_correction`);
* :class:`GAIRATStrategy` — geometry-aware weights from κ, the number of PGD steps an example stays
  correctly classified (Zhang et al. 2021);
* :class:`MAILStrategy` — weights from the probabilistic margin (Wang/Liu et al. 2021).

Weights never carry gradient (Danskin: the gradient of r·log-mean-exp(ℓ/r), Sow et al.'s eq. 6, is Σ w*_i ∇ℓ_i
with the weights held fixed; back-propagating through softmax(ℓ/r) gives a different, wrong gradient).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import torch
from torch import Tensor

from .._validation import check_bounds, check_choice, check_int, check_number
from ..attacks import NORMS, STEP_RULES, pgd_attack
from ..attacks.implicit import _implicit_correction
from ..engine.strategy import Batch, Strategy
from ..reweighting import _done_weights64, gairat_weights, mail_weights

__all__ = ["DONE_INNER", "AdversarialTrainingStrategy", "DONEStrategy", "GAIRATStrategy", "MAILStrategy"]


#: DONE's inner solvers (the paper's DONE-PGD / DONE-GD / DONE-ADAM) → pgd_attack's step rule.
DONE_INNER = {"pgd": "sign", "gd": "gd", "adam": "adam"}


class AdversarialTrainingStrategy(Strategy):
    r"""Madry PGD adversarial training: every batch replaced by its PGD examples, mean loss.

    Args:
        eps: the L∞ (or L2) radius ε ≥ 0 in input units (inputs in ``clamp``).
        alpha: attack step; default ``2.5·eps/steps`` (Madry's rule).
        steps: PGD steps K ≥ 1.
        norm, random_start, step_rule, clamp: as in :func:`dro_lab.pgd_attack`.
    The attack runs with the model in eval mode (restored), seeded from ``fit``'s generator.
    """

    name = "pgd-at"

    def __init__(
        self,
        eps: float,
        *,
        alpha: float | None = None,
        steps: int = 5,
        norm: str = "linf",
        random_start: bool = True,
        step_rule: str = "sign",
        clamp: tuple[float, float] = (0.0, 1.0),
    ):
        check_number(eps, "eps", low=0)
        check_int(steps, "steps")
        check_choice(norm, "norm", NORMS)
        check_choice(step_rule, "step_rule", STEP_RULES)
        clamp = check_bounds(clamp)
        self.eps, self.steps, self.norm = float(eps), steps, norm
        self.alpha = (
            check_number(alpha, "alpha", low=0, low_open=True)
            if alpha is not None
            else max(2.5 * self.eps / steps, 1e-12)
        )
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
        out = pgd_attack(
            model,
            x,
            y,
            eps=self.eps,
            alpha=self.alpha,
            steps=self.steps,
            norm=self.norm,
            random_start=self.random_start,
            step_rule=self.step_rule,
            clamp=self.clamp,
            generator=self.generator,
            return_kappa=kappa,
        )
        x_adv, self._kappa = out if kappa else (out, None)
        self._x = x
        self._x_adv = x_adv.requires_grad_(True) if requires_grad else x_adv
        return self._x_adv

    def transform(self, x, y, *, indices, groups, model):
        return [Batch(self._attack(model, x, y), y, groups)]

    def describe(self) -> str:
        return self.name


class DONEStrategy(AdversarialTrainingStrategy):
    r"""DONE (Sow et al., ICLR 2024): doubly robust adversarial training — worst-case noise **and** KL-DRO weights.

    Each batch: δ by the inner solver (``inner``: ``"pgd"`` sign steps, ``"gd"`` non-sign projected gradient
    on the summed loss, ``"adam"``), then the loss :math:`J=\sum_i\omega_i\ell_i` with :func:`done_weights`
    (detached), plus, with ``implicit=True``, CID's Hessian-free implicit term (:func:`implicit_correction`,
    barrier coefficient ``barrier`` = c).

    Args:
        r: the KL temperature (r → ∞ is AT, r → 0 the max loss), or ``r_schedule``: ``{first_epoch: r}`` (the
            paper: ``{1: 10, 41: 1, 51: 0.1}`` of 60 epochs; u is reset when r changes), or a sequence
            ``(r₀, r₁, …)`` whose next value starts at each epoch of ``r_milestones`` (ignored for a number).
        eta: η of the running average :math:`u_{t+1}=(1-\eta)u_t+\eta\,\bar g_{\mathcal B}` (Algorithm 1 line 11);
            1 (the default) = the batch softmax, weights summing to one.
        eps, alpha, steps, norm, random_start, clamp: the attack's.
        inner: ``"pgd"``, ``"gd"`` or ``"adam"``; ``implicit``, ``barrier``: CID's implicit term and its c.

    ``epoch_stats`` reports r, the effective sample size :math:`\mathrm{ESS}/|\mathcal B|=1/(|\mathcal B|\sum\omega^2)`
    and the weights' sum. **η < 1 scales the step**: a batch's weights then sum to :math:`\bar g_{\mathcal B}/u_{t+1}`
    (``done_weight_sum`` in the history), by which ``lr`` is multiplied; at a small r most batches' sums are near
    zero. The weights are kept as eq. (10) has them (the algorithm the paper analyses; normalising would give the
    η = 1 weights), and the constructor warns (:class:`UserWarning`): use ``eta=1`` to keep AT's step size.

    Example:
        >>> strategy = DONEStrategy(eps=0.1, r=1.0, clamp=None)  # inputs not in [0, 1]
        >>> history = fit(LogisticRegression(2, 2), make_minority_blobs(100)[0], strategy=strategy, progress=False)
        >>> 0 < history["done_ess_fraction"][-1] <= 1  # the weights' effective share of the batch
        True
    """

    name = "done"

    def __init__(
        self,
        eps: float,
        *,
        r: float | tuple[float, ...] = 1.0,
        r_schedule: dict[int, float] | None = None,
        r_milestones: tuple[int, ...] = (),
        eta: float = 1.0,
        inner: str = "pgd",
        implicit: bool = False,
        barrier: float = 0.05,
        alpha: float | None = None,
        steps: int = 5,
        norm: str = "linf",
        random_start: bool = True,
        clamp: tuple[float, float] = (0.0, 1.0),
    ):
        if inner not in DONE_INNER:
            raise ValueError(f"inner must be one of {sorted(DONE_INNER)}, got {inner!r}")
        super().__init__(
            eps,
            alpha=alpha,
            steps=steps,
            norm=norm,
            random_start=random_start,
            step_rule=DONE_INNER[inner],
            clamp=clamp,
        )
        if isinstance(r, (tuple, list)):  # (10, 1, 0.1) with r_milestones (41, 51): the paper's schedule
            starts = (1, *r_milestones)
            if r_schedule is not None or len(r) != len(starts) or list(starts) != sorted(set(starts)):
                raise ValueError(f"r={r!r} needs {len(r) - 1} increasing r_milestones > 1 (and no r_schedule)")
            r_schedule, r = dict(zip(starts, r)), r[0]
        self.r = check_number(r, "r", low=0, low_open=True)
        if r_schedule is not None:
            if not r_schedule or not all(isinstance(k, int) and k >= 1 for k in r_schedule):
                raise ValueError(f"r_schedule must map epochs ≥ 1 to r, got {r_schedule!r}")
            for v in r_schedule.values():
                check_number(v, "r_schedule value", low=0, low_open=True)
        self.r_schedule = dict(sorted(r_schedule.items())) if r_schedule else None
        self.eta = check_number(eta, "eta", low=0, high=1, low_open=True)
        if self.eta < 1:
            warnings.warn(
                f"DONEStrategy(eta={self.eta:g}): with eta < 1 the weights of a batch sum to mean(exp(loss/r)) / u, "
                "not 1 (Sow et al., Algorithm 1, eq. (10)), so the effective learning rate is lr times that sum: near "
                "0 for most batches and up to lr/eta for hard ones once r is small against the spread of the "
                "losses. fit's history reports the epoch's mean sum as done_weight_sum. Use eta=1 for weights "
                "summing to one (the batch softmax), or raise lr.",
                UserWarning,
                stacklevel=2,
            )
        self.inner, self.implicit = inner, bool(implicit)
        self.barrier = check_number(barrier, "barrier", low=0, low_open=True)
        self.log_u: Tensor | None = None
        self._r_of_u: float | None = None
        self._stats = {"ess": 0.0, "sum": 0.0, "batches": 0}
        self._model: torch.nn.Module | None = None  # the implicit term's backward: its parameters only
        tags = [
            f"ε={self.eps:g}",
            f"r={self.r:g}" if not self.r_schedule else "r=" + "→".join(f"{v:g}" for v in self.r_schedule.values()),
        ]
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
        return [Batch(self._attack(model, x, y, requires_grad=self.implicit), y, groups)]

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
            objective = objective + _implicit_correction(
                losses, self._x_adv, self._x, w, eps=self.eps, barrier=self.barrier, clamp=self.clamp
            )
        return objective

    def backward(self, objective, *, losses, groups):
        """``objective.backward()``; with the implicit term, into the attacked model's trainable parameters only.

        The attack's output requires grad (for G = ∇_δ ℓ); its own gradient is never used, but a plain
        ``backward`` would still compute it (the first layer's input gradient, ≈ 2 % of a PGD-5 AT iteration on
        the DigitsCNN). The parameters' ``.grad`` are the same either way."""
        params = (
            [p for p in self._model.parameters() if p.requires_grad]
            if self.implicit and self._model is not None and self._x_adv is not None and self._x_adv.requires_grad
            else None
        )
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
        self.burn_in_epochs = check_int(burn_in_epochs, "burn_in_epochs", low=0)

    def _weighting(self) -> bool:
        return self.epoch > self.burn_in_epochs


class GAIRATStrategy(_BurnIn):
    r"""GAIRAT (Zhang et al. 2021) through the engine: PGD-AT with :func:`gairat_weights` from the attack's κ.

    Args:
        eps: the attack's radius; ``**kw``: the other options of :class:`AdversarialTrainingStrategy`.
        lam: λ (official default −1).
        burn_in_epochs: uniform weights for the first epochs (the official code: 60 of 120).
    """

    name = "gairat"

    def __init__(self, eps: float, *, lam: float = -1.0, burn_in_epochs: int = 0, **kw):
        super().__init__(eps, burn_in_epochs=burn_in_epochs, **kw)
        self.lam = check_number(lam, "lam")
        self.name = f"gairat(ε={self.eps:g},λ={self.lam:g})"

    def transform(self, x, y, *, indices, groups, model):
        return [Batch(self._attack(model, x, y, kappa=True), y, groups)]

    def reduce(self, losses, *, indices, groups):
        if not self._weighting():
            return losses.mean()
        w = gairat_weights(self._kappa, self.steps, lam=self.lam).to(losses)
        return (w * losses).mean()


class MAILStrategy(_BurnIn):
    r"""MAIL-AT (margin-aware instance reweighting, the official code's): PGD-AT with :func:`mail_weights`.

    Args:
        eps: the attack's radius; ``**kw``: the other options of :class:`AdversarialTrainingStrategy`.
        bias, slope: :func:`mail_weights`'s.
        burn_in_epochs: uniform weights for the first epochs (the official code starts from an AT checkpoint
            halfway).
    """

    name = "mail"

    def __init__(self, eps: float, *, bias: float = -1.5, slope: float = 1.0, burn_in_epochs: int = 0, **kw):
        super().__init__(eps, burn_in_epochs=burn_in_epochs, **kw)
        self.bias, self.slope = check_number(bias, "bias"), check_number(slope, "slope")
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
