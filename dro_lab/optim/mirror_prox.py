"""Optimistic Mirror-Prox (the ALSO paper's Algorithm 4) and the simplified DRAGO its experiments ran."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .._validation import check_int, check_number
from .group_weights import GroupWeightOptimizer

__all__ = ["OptimisticMirrorProx", "DRAGO"]


class OptimisticMirrorProx(GroupWeightOptimizer):
    r"""Optimistic Mirror-Prox for the ALSO problem (Algorithm 4; deterministic, full gradients).

    One step size γ for both players; with :math:`\hat g = g + \alpha(g - g_{\rm prev})` (:math:`g_{-1}:=g_0`):

    .. math::
        \theta^{k+1} = \frac{\theta^k - \gamma\,\hat g_\theta^k}{1+\gamma\lambda},\qquad
        \pi^{k+1} = \mathrm{SM}\Big(\frac{\log\pi^k + \gamma\tau\log\hat\pi + \gamma\hat g_\pi^k}{1+\gamma\tau}\Big)

    where λ = ``weight_decay`` is the prox of :math:`r(\theta)=\frac\lambda2\|\theta\|^2` (exact, not a
    gradient step). α = 1 (Popov) is the paper's choice; α = 0 is simultaneous gradient descent–ascent.
    Hand it the losses of **all** examples each step (``weighted_loss(losses, groups)``): the scale
    c/n then makes :math:`\sum_b w_b\ell_b` the objective's loss term exactly.

    Args:
        params, n_groups: as in :class:`ALSO`.
        lr: γ > 0; ``tau``: τ > 0; ``alpha``: α ≥ 0; ``weight_decay``: λ ≥ 0.
        prior, pi_init, pi_option, loss_scale, sampling, group_sizes, distributed: as in :class:`ALSO`.

    Example:
        >>> w = torch.nn.Parameter(torch.zeros(1))
        >>> opt = OptimisticMirrorProx([w], n_groups=2, lr=0.5, tau=1.0)
        >>> for _ in range(50):
        ...     opt.zero_grad()
        ...     opt.weighted_loss(torch.tensor([1.0, 3.0]) + w, torch.tensor([0, 1])).backward()
        ...     opt.step()
        >>> opt.pi  # π⋆ ∝ π̂·e^{L/τ}
        tensor([0.1192, 0.8808], dtype=torch.float64)
    """

    def __init__(
        self,
        params,
        n_groups: int,
        *,
        lr: float,
        tau: float,
        alpha: float = 1.0,
        weight_decay: float = 0.0,
        prior=None,
        pi_init=None,
        pi_option: str = "I",
        loss_scale: float | None = None,
        sampling: str = "uniform",
        group_sizes=None,
        distributed: bool | str = "auto",
    ):
        check_number(lr, "lr", low=0, low_open=True)
        check_number(alpha, "alpha", low=0)
        check_number(weight_decay, "weight_decay", low=0)
        super().__init__(
            params,
            dict(lr=float(lr), weight_decay=float(weight_decay)),
            n_groups=n_groups,
            tau=tau,
            prior=prior,
            pi_init=pi_init,
            pi_option=pi_option,
            loss_scale=loss_scale,
            sampling=sampling,
            group_sizes=group_sizes,
            distributed=distributed,
        )
        self.alpha = float(alpha)
        self.prev_pi_grad: Tensor | None = None

    _EXTRA_STATE = ("alpha", "prev_pi_grad")

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None):
        loss = self._run_closure(closure)
        g_pi = self._take_pi_grad()
        for group in self.param_groups:
            lr, lam = group["lr"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                g = p.grad
                prev = state.get("prev_grad", g)
                state["prev_grad"] = g.detach().clone()
                p.add_(g + self.alpha * (g - prev), alpha=-lr)
                if lam:
                    p.div_(1 + lr * lam)
        prev = self.prev_pi_grad if self.prev_pi_grad is not None else g_pi
        self.prev_pi_grad = g_pi.clone()
        self.log_pi = self._prox(self.log_pi, g_pi + self.alpha * (g_pi - prev), self.param_groups[0]["lr"])
        self.pi_steps += 1
        return loss


class DRAGO(GroupWeightOptimizer):
    r"""DRAGO as the ALSO experiments ran it — a **simplified** SVRG-like adaptation, not Mehta et al.'s method.

    Every ``freq`` steps a snapshot: at the snapshot step the batch gradient :math:`G_s` and π-gradient
    :math:`\Lambda_s` are stored and no step is taken; at the next step :math:`G_{s+1}, \Lambda_{s+1}`
    are stored; every step after that (and that one) moves

    .. math::
        \theta \leftarrow \theta - \eta\,(g_t - G_{s+1} + G_s),\qquad
        \pi \leftarrow \mathrm{SM}\Big(\frac{\log\pi + \eta_\pi\tau\log\hat\pi
        + \eta_\pi(\ell_t - \Lambda_{s+1} + \Lambda_s)}
        {1+\eta_\pi\tau}\Big)

    with plain SGD on θ and no weight decay, as in the ALSO authors' experiment code (the official DRAGO
    keeps O(nd) tables; this one does not).

    Args:
        params, n_groups: as in :class:`ALSO`.
        lr: η > 0; ``pi_lr``: η_π (default ``lr``); ``tau``: τ > 0; ``freq``: the snapshot period, ≥ 2.
        prior, pi_init, loss_scale, distributed: as in :class:`ALSO`.
    """

    def __init__(
        self,
        params,
        n_groups: int,
        *,
        lr: float = 1e-2,
        pi_lr: float | None = None,
        tau: float = 1e-3,
        freq: int = 10,
        prior=None,
        pi_init=None,
        loss_scale: float | None = None,
        distributed: bool | str = "auto",
    ):
        check_number(lr, "lr", low=0, low_open=True)
        if pi_lr is not None:
            check_number(pi_lr, "pi_lr", low=0)
        check_int(freq, "freq (two snapshot steps per period)", low=2)
        super().__init__(
            params,
            dict(lr=float(lr)),
            n_groups=n_groups,
            tau=tau,
            prior=prior,
            pi_init=pi_init,
            pi_option="I",
            loss_scale=loss_scale,
            sampling="uniform",
            group_sizes=None,
            distributed=distributed,
        )
        self.pi_lr = float(lr if pi_lr is None else pi_lr)
        self.freq = int(freq)
        self.t = 0
        self.snap_pi: list[Tensor | None] = [None, None]

    _EXTRA_STATE = ("pi_lr", "freq", "t", "snap_pi")

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None):
        loss = self._run_closure(closure)
        g_pi = self._take_pi_grad()
        phase = self.t % self.freq
        self.t += 1
        params = [(p, g["lr"]) for g in self.param_groups for p in g["params"] if p.grad is not None]
        if phase == 0:  # the snapshot: store, do not move
            for p, _ in params:
                self.state[p]["snap0"] = p.grad.detach().clone()
            self.snap_pi[0] = g_pi.clone()
            return loss
        if phase == 1:
            for p, _ in params:
                self.state[p]["snap1"] = p.grad.detach().clone()
            self.snap_pi[1] = g_pi.clone()
        for p, lr in params:
            st = self.state[p]
            p.add_(p.grad - st.get("snap1", p.grad) + st.get("snap0", 0 * p.grad), alpha=-lr)
        s0 = self.snap_pi[0] if self.snap_pi[0] is not None else torch.zeros_like(g_pi)
        s1 = self.snap_pi[1] if self.snap_pi[1] is not None else g_pi
        if self.pi_lr > 0:
            self.log_pi = self._prox(self.log_pi, g_pi - s1 + s0, self.pi_lr)
        self.pi_steps += 1
        return loss
