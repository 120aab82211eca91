"""ALSO, the Adaptive Loss Scaling Optimizer (Feoktistov et al., 2025): Adam on θ with optimism, KL-prox on π."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import torch
from torch import Tensor

from .._validation import check_number
from .group_weights import GroupWeightOptimizer

__all__ = ["ALSO_MODES", "ALSO"]


#: The ``mode`` values of :class:`ALSO`: Algorithm 5, plain descent–ascent, the official code's Popov form, AπLSO.
ALSO_MODES = ("optimistic", "descent-ascent", "popov", "api")


class ALSO(GroupWeightOptimizer):
    r"""ALSO, the Adaptive Loss Scaling Optimizer (Feoktistov et al., 2025, Algorithm 5).

    Each :meth:`step`, with the batch's losses handed over by :meth:`weighted_loss`:

    .. math::
        \hat g_\theta^t = g_\theta^t + \alpha(g_\theta^t - g_\theta^{t-1}),\qquad
        \hat g_\pi^t = g_\pi^t + \alpha(g_\pi^t - g_\pi^{t-1})\qquad(g^{-1}:=g^0)

    θ takes an Adam step on :math:`\hat g_\theta` (torch's Adam formula; ``weight_decay`` is coupled L2,
    added before the moments as in the official code), and π the softmax KL-prox step

    .. math::
        \pi^{t+1} = \mathrm{SM}\Big(\frac{\log\pi^t + \eta_\pi\tau\log\hat\pi
        + \eta_\pi\hat g_\pi^t}{1+\eta_\pi\tau}\Big)

    (Option I; ``pi_option="II"`` or ``"II-euclid"`` take the theory's forms.)

    Args:
        params: the model parameters (or parameter groups).
        n_groups: c, the number of groups (``c = n`` for one weight per example).
        lr, betas, eps, weight_decay: Adam's (torch defaults; the official code uses
            ``eps`` = 1.19e-7 and ``weight_decay`` = 1e-3).
        pi_lr: η_π, π's step size (0 freezes π: Adam / Static Weights).
        tau: τ > 0, the KL strength towards the prior (β = 1/τ).
        alpha: optimism ("negative momentum"); the paper fixes α = 1. α = 0 is descent–ascent.
        mode: ``"optimistic"`` (Algorithm 5, the default), ``"descent-ascent"`` (α forced to 0),
            ``"popov"`` (the official code's two-sequence form, gradients at an extrapolated point:
            :meth:`step` needs a ``closure``) or ``"api"`` (AπLSO: π's gradient normalised by its own
            Adam moments, a reconstruction: the paper gives no formula).
        prior: π̂: ``"uniform"`` (default) or ``n_groups`` positive weights (e.g. class-balanced).
        pi_init: π⁰ (default: uniform).
        pi_option: ``"I"`` (practice), ``"II"`` or ``"II-euclid"``; see :func:`kl_prox_step`.
        loss_scale: s; ``None``: c/M for a batch of M (unbiased; the paper's imbalance code uses 1).
        sampling: how the batch was drawn (the paper's App. A), one of :data:`SAMPLING_SCHEMES`
            (``"group"`` and ``"pi"`` need ``group_sizes``; with ``"pi"`` the estimator drops π's factor).
        group_sizes: n_j per group.
        temperature: softmax temperature of the official code (not in the paper; 1 = off).
        pi_betas: the moments of π's gradient in ``mode="api"`` (default: ``betas``).
        distributed: ``"auto"``: under a process group of several ranks :meth:`weighted_loss` gets this
            rank's slice (see the module docstring); ``True`` requires one; ``False``: the whole batch.

    With ``pi_lr=0``, ``alpha=0``, a uniform prior and π⁰ it is ``torch.optim.Adam`` on the mean loss.

    Example:
        >>> w = torch.nn.Parameter(torch.zeros(1))
        >>> opt = ALSO([w], n_groups=2, pi_lr=1.0, tau=1.0)
        >>> opt.weighted_loss(torch.tensor([1.0, 3.0]) + w, torch.tensor([0, 1])).backward()
        >>> opt.step()
        >>> opt.pi  # the group with the larger loss gains weight
        tensor([0.2689, 0.7311], dtype=torch.float64)
    """

    def __init__(
        self,
        params,
        n_groups: int,
        *,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        pi_lr: float = 1e-3,
        tau: float = 1e-2,
        alpha: float = 1.0,
        mode: str = "optimistic",
        prior=None,
        pi_init=None,
        pi_option: str = "I",
        loss_scale: float | None = None,
        sampling: str = "uniform",
        group_sizes=None,
        temperature: float = 1.0,
        pi_betas: tuple[float, float] | None = None,
        distributed: bool | str = "auto",
    ):
        if not (isinstance(lr, numbers.Real) and lr >= 0 and math.isfinite(lr)):
            raise ValueError(f"Invalid learning rate: {lr!r}")
        if not (isinstance(eps, numbers.Real) and eps >= 0):
            raise ValueError(f"Invalid epsilon value: {eps!r}")
        for k, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {k}: {b!r}")
        check_number(weight_decay, "weight_decay", low=0)
        check_number(pi_lr, "pi_lr", low=0)
        check_number(alpha, "alpha", low=0)
        if mode not in ALSO_MODES:
            raise ValueError(f"mode must be one of {ALSO_MODES}, got {mode!r}")
        pi_betas = tuple(betas if pi_betas is None else pi_betas)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)
        super().__init__(
            params,
            defaults,
            n_groups=n_groups,
            tau=tau,
            prior=prior,
            pi_init=pi_init,
            pi_option=pi_option,
            loss_scale=loss_scale,
            sampling=sampling,
            group_sizes=group_sizes,
            temperature=temperature,
            distributed=distributed,
        )
        self.pi_lr = float(pi_lr)
        self.alpha = 0.0 if mode == "descent-ascent" else float(alpha)
        self.mode = mode
        self.pi_betas = pi_betas
        self.prev_pi_grad: Tensor | None = None
        self.pi_moments: tuple[Tensor, Tensor] | None = None

    _EXTRA_STATE = ("pi_lr", "alpha", "mode", "pi_betas", "prev_pi_grad", "pi_moments")

    @property
    def needs_closure(self) -> bool:
        """``"popov"`` mode takes the gradient at an extrapolated point: :meth:`step` must re-run the loss."""
        return self.mode == "popov"

    def state_dict(self) -> dict:
        sd = super().state_dict()
        if self.pi_moments is not None:
            sd["group_dro"]["pi_moments"] = tuple(t.clone() for t in self.pi_moments)
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        if self.pi_moments is not None:
            self.pi_moments = tuple(t.to(self.device) for t in self.pi_moments)

    # -- θ: torch's Adam formula, on a given direction per parameter
    def _adam(self, directions: dict[Tensor, Tensor], *, count: bool = True) -> None:
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                d = directions.get(p)
                if d is None:
                    continue
                state = self.state[p]
                if "step" not in state:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                if group["weight_decay"]:
                    d = d.add(p, alpha=group["weight_decay"])  # coupled L2, as torch.optim.Adam
                state["step"] += 1
                step = float(state["step"])
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.lerp_(d, 1 - beta1)
                v.mul_(beta2).addcmul_(d, d.conj(), value=1 - beta2)
                bias1 = 1 - beta1**step
                bias2_sqrt = math.sqrt(1 - beta2**step)
                denom = (v.sqrt() / bias2_sqrt).add_(group["eps"])
                p.addcdiv_(m, denom, value=-group["lr"] / bias1)

    def _grads(self) -> dict[Tensor, Tensor]:
        return {p: p.grad for g in self.param_groups for p in g["params"] if p.grad is not None}

    def _optimistic(self, grads: dict[Tensor, Tensor]) -> dict[Tensor, Tensor]:
        if self.alpha == 0:
            return grads
        out = {}
        for p, g in grads.items():
            state = self.state[p]
            prev = state.get("prev_grad")
            out[p] = g if prev is None else g + self.alpha * (g - prev)
            state["prev_grad"] = g.detach().clone()
        return out

    def _pi_update(self, g_pi: Tensor) -> None:
        if self.mode == "api":  # AπLSO (reconstructed): Adam-normalised π-gradient inside the prox
            b1, b2 = self.pi_betas
            if self.pi_moments is None:
                self.pi_moments = (torch.zeros_like(g_pi), torch.zeros_like(g_pi))
            m, v = self.pi_moments
            m.lerp_(g_pi, 1 - b1)
            v.mul_(b2).addcmul_(g_pi, g_pi, value=1 - b2)
            t = self.pi_steps + 1
            g_pi = (m / (1 - b1**t)) / ((v / (1 - b2**t)).sqrt() + self.param_groups[0]["eps"])
        if self.pi_lr > 0:
            self.log_pi = self._prox(self.log_pi, g_pi, self.pi_lr)
        self.pi_steps += 1

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None):
        """One ALSO step. ``closure`` (optional; required in ``"popov"`` mode) re-computes the loss: it must
        zero the gradients, call :meth:`weighted_loss` and ``backward()``, and return the loss."""
        if self.mode == "popov":
            return self._popov_step(closure)
        loss = self._run_closure(closure)
        g_pi = self._take_pi_grad()
        self._adam(self._optimistic(self._grads()))
        if self.alpha and self.mode != "descent-ascent":
            prev = self.prev_pi_grad if self.prev_pi_grad is not None else g_pi
            self.prev_pi_grad = g_pi.clone()
            g_pi = g_pi + self.alpha * (g_pi - prev)
        self._pi_update(g_pi)
        return loss

    def _popov_step(self, closure):
        """The official code's form: extrapolate (θ̃, π̃) with the previous gradients (through Adam, α-scaled
        for θ, unscaled for π), take the gradient there, then step from the saved (θ, π)."""
        if closure is None:
            raise ValueError("ALSO(mode='popov') evaluates the gradient at an extrapolated point: pass step(closure)")
        params = [p for g in self.param_groups for p in g["params"]]
        saved = [p.detach().clone() for p in params]
        prev = {p: self.state[p]["prev_grad"] for p in params if "prev_grad" in self.state[p]}
        if prev:
            self._adam({p: self.alpha * g for p, g in prev.items()})
        self._eval_log_pi = (
            self._prox(self.log_pi, self.prev_pi_grad, self.pi_lr)
            if self.prev_pi_grad is not None and self.pi_lr > 0
            else None
        )
        try:
            with torch.enable_grad():
                loss = closure()
        finally:
            self._eval_log_pi = None
        g_pi = self._take_pi_grad()
        grads = self._grads()
        for p, s in zip(params, saved):
            p.copy_(s)
        for p, g in grads.items():
            self.state[p]["prev_grad"] = g.detach().clone()
        self._adam(grads)
        self.prev_pi_grad = g_pi.clone()
        self._pi_update(g_pi)
        return loss
