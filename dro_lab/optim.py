r"""Group-DRO optimizers: ALSO, Optimistic Mirror-Prox and a simplified DRAGO, as ``torch.optim.Optimizer``\ s.

They solve the ALSO problem (Feoktistov et al., 2025, eq. 4) over the model parameters θ and group
weights π on the simplex :math:`\Delta_c`:

.. math::
    \min_\theta \max_{\pi\in\Delta_c}\ \sum_{j=1}^c \pi_j\,\frac{c}{n}\sum_{i=1}^{n_j} f_{j,i}(\theta)
    \;+\; r(\theta) \;-\; \tau\,\mathrm{KL}(\pi\,\|\,\hat\pi)

A group is whatever the caller says: a class, a worker, an input transformation, or one example
(``c = n``). π ascends the group losses by a softmax mirror step with a KL pull towards the prior π̂;
θ descends the π-weighted loss. β = 1/τ in the course glossary: the inner maximiser is
:math:`\pi^\star\propto\hat\pi\,e^{L_j/\tau}`.

The training loop hands the optimizer its per-sample losses and group ids through
:meth:`~_GroupDRO.weighted_loss`, which returns the scalar to back-propagate and remembers the losses
for π's step::

    opt = ALSO(model.parameters(), n_groups=c, lr=1e-3, pi_lr=1e-3, tau=1e-2)
    for x, y, groups in loader:
        opt.zero_grad()
        loss = opt.weighted_loss(F.cross_entropy(model(x), y, reduction="none"), groups)
        loss.backward()
        opt.step()

π lives on the parameters' device as float64 log-weights (per-sample weights of 10⁻⁶ do not
underflow, spec pitfall 6); :attr:`~_GroupDRO.pi` returns the probabilities.

Under ``torchrun`` with the model in ``DistributedDataParallel`` the same loop works unchanged
(``distributed="auto"``, the default): each rank hands :meth:`~_GroupDRO.weighted_loss` its own slice,
the batch size M in c/M is the global one (an all-reduce), the returned scalar is scaled by the world
size so that DDP's gradient mean is the global-batch gradient, and :meth:`step` all-reduces (sums) the
scatter-added group losses, so π is the same on every rank and equals one process with the global
batch. :func:`dro_lab.fit` gathers the global batch itself and builds its optimizers with
``distributed=False``.
"""

from __future__ import annotations

import math
import numbers
from typing import Callable, Iterable, Sequence

import torch
from torch import Tensor

__all__ = [
    "ALSO",
    "OptimisticMirrorProx",
    "DRAGO",
    "kl_prox_step",
    "simplex_projection",
    "bilinear_game_path",
    "ALSO_MODES",
    "SAMPLING_SCHEMES",
    "PI_OPTIONS",
]

ALSO_MODES = ("optimistic", "descent-ascent", "popov", "api")
DISTRIBUTED = ("auto", True, False)
SAMPLING_SCHEMES = ("uniform", "group", "pi")
PI_OPTIONS = ("I", "II", "II-euclid")


# --------------------------------------------------------------------------- pure math


def simplex_projection(v: Tensor) -> Tensor:
    """Euclidean projection of ``v`` onto the probability simplex (sort-based, Held et al. / Duchi et al.)."""
    if not isinstance(v, Tensor):
        raise TypeError(f"v must be a 1-D tensor, got {type(v).__name__}")
    if v.dim() != 1 or v.numel() == 0:
        raise ValueError(f"v must be a non-empty 1-D tensor, got shape {tuple(v.shape)}")
    if not bool(torch.isfinite(v).all()):
        raise ValueError("v contains NaN or inf values; v must be finite")
    return _simplex_projection(v)


def _simplex_projection(v: Tensor) -> Tensor:  # unchecked: the optimizers' hot path
    u, _ = torch.sort(v, descending=True)
    css = torch.cumsum(u, 0) - 1
    k = torch.arange(1, v.numel() + 1, device=v.device, dtype=v.dtype)
    rho = int((u - css / k > 0).nonzero().max())
    theta = css[rho] / (rho + 1)
    return torch.clamp(v - theta, min=0)


def kl_prox_step(log_pi: Tensor, grad: Tensor, *, lr: float, tau: float, log_prior: Tensor | float,
                 option: str = "I", temperature: float = 1.0) -> Tensor:
    r"""One mirror-ascent step for π with the KL pull to the prior; returns the new **log** π.

    * Option I (the paper's practice; the exact prox, Prop. 6):
      :math:`\pi^+ = \mathrm{SM}\big((\log\pi + \eta\tau\log\hat\pi + \eta g)/(1+\eta\tau)\big)`.
    * Option II (the theory's explicit step, KL geometry):
      :math:`\pi^+ = \mathrm{SM}\big((1-\eta\tau)\log\pi + \eta\tau\log\hat\pi + \eta g\big)`; it flips the sign of
      the pull when ητ > 1, so that is refused.
    * Option II-euclid: projected gradient ascent,
      :math:`\pi^+ = \mathrm{Proj}_\Delta\big(\pi + \eta(g - \tau(\log(\pi/\hat\pi) + 1))\big)`.

    ``grad`` is the ascent direction (the group losses); ``temperature`` (not in the paper; the
    official code's ``pi_temperature``) divides the logits of options I and II.
    """
    lr, tau = _check_nonneg(lr, "lr"), _check_nonneg(tau, "tau")
    if not isinstance(log_pi, Tensor) or not isinstance(grad, Tensor):
        raise TypeError(f"log_pi and grad must be tensors, got {type(log_pi).__name__} and {type(grad).__name__}")
    if grad.shape != log_pi.shape:
        raise ValueError(f"grad must have the shape of log_pi {tuple(log_pi.shape)}, got {tuple(grad.shape)}")
    if not bool(torch.isfinite(grad).all()):
        raise ValueError("grad contains NaN or inf values; grad must be finite")
    return _kl_prox_step(log_pi, grad, lr=lr, tau=tau, log_prior=log_prior, option=option, temperature=temperature)


def _kl_prox_step(log_pi: Tensor, grad: Tensor, *, lr: float, tau: float, log_prior: Tensor | float,
                  option: str = "I", temperature: float = 1.0) -> Tensor:
    """:func:`kl_prox_step` without the argument checks (the optimizers validate once, at construction)."""
    if option == "I":
        logits = (log_pi + lr * tau * log_prior + lr * grad) / (1 + lr * tau)
    elif option == "II":
        if lr * tau > 1:
            raise ValueError(f"option 'II' needs pi_lr·tau ≤ 1 (the explicit step flips sign), got {lr * tau:g}")
        logits = (1 - lr * tau) * log_pi + lr * tau * log_prior + lr * grad
    elif option == "II-euclid":
        pi = log_pi.exp()
        pi_new = _simplex_projection(pi + lr * (grad - tau * (log_pi - log_prior + 1)))
        return torch.log(pi_new.clamp_min(torch.finfo(pi_new.dtype).tiny))
    else:
        raise ValueError(f"pi_option must be one of {PI_OPTIONS}, got {option!r}")
    return torch.log_softmax(logits / temperature, 0)


def bilinear_game_path(*, lr: float = 0.1, alpha: float = 0.0, steps: int = 200,
                       start: Sequence[float] = (1.0, 1.0), coupling: float = 1.0) -> Tensor:
    r"""Iterates of simultaneous descent–ascent on :math:`\min_x\max_y\ a\,xy` with optimism α.

    The update is the one-sequence optimistic step of Algorithm 4/5, :math:`\hat g_t = g_t + \alpha(g_t -
    g_{t-1})` (:math:`g_{-1} = g_0`), applied to :math:`(x, y)` with gradient :math:`(a y, -a x)`. α = 0 is plain
    descent–ascent, which spirals out (the iteration matrix has modulus :math:`\sqrt{1+\gamma^2a^2}>1`);
    α = 1 is Popov's method, which converges for small γ. Returns a float64 ``(steps + 1, 2)`` tensor.
    """
    _check_positive(lr, "lr")
    _check_nonneg(alpha, "alpha")
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an integer ≥ 1, got {steps!r}")
    z = torch.tensor([float(v) for v in start], dtype=torch.float64)
    if z.shape != (2,):
        raise ValueError(f"start must be two numbers (x, y), got {start!r}")
    path = [z.clone()]
    prev = None
    for _ in range(steps):
        g = torch.stack([coupling * z[1], -coupling * z[0]])
        prev = g if prev is None else prev
        z = z - lr * (g + alpha * (g - prev))
        prev = g
        path.append(z.clone())
    return torch.stack(path)


# --------------------------------------------------------------------------- validation


def _check_positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _check_nonneg(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number ≥ 0, got {value!r}")
    return float(value)


def _as_distribution(value, c: int, name: str, device) -> Tensor:
    """A length-``c`` probability vector (float64, positive entries) from ``None``/"uniform"/a sequence."""
    if value is None or (isinstance(value, str) and value == "uniform"):
        return torch.full((c,), 1.0 / c, dtype=torch.float64, device=device)
    if isinstance(value, str):
        raise ValueError(f"{name} must be 'uniform', None or a vector of {c} positive weights, got {value!r}")
    t = torch.as_tensor(value, dtype=torch.float64).to(device).flatten()
    if t.numel() != c:
        raise ValueError(f"{name} must have n_groups = {c} entries, got {t.numel()}")
    if not torch.isfinite(t).all() or bool((t <= 0).any()):
        raise ValueError(f"{name} must be finite and positive (a KL prior with zeros is undefined)")
    return t / t.sum()


# --------------------------------------------------------------------------- the shared π machinery


class _GroupDRO(torch.optim.Optimizer):
    """Base: π on the simplex, the group bookkeeping, the sampling estimators and ``weighted_loss``."""

    def __init__(self, params, defaults: dict, *, n_groups: int, tau: float, prior, pi_init, pi_option: str,
                 loss_scale: float | None, sampling: str, group_sizes, temperature: float = 1.0,
                 distributed: bool | str = "auto"):
        if not any(distributed is d or (isinstance(distributed, str) and distributed == d) for d in DISTRIBUTED):
            raise ValueError(f"distributed must be 'auto', True or False, got {distributed!r}")
        if isinstance(n_groups, bool) or not isinstance(n_groups, numbers.Integral) or n_groups < 1:
            raise ValueError(f"n_groups must be an integer ≥ 1, got {n_groups!r}")
        _check_positive(tau, "tau")
        if pi_option not in PI_OPTIONS:
            raise ValueError(f"pi_option must be one of {PI_OPTIONS}, got {pi_option!r}")
        if sampling not in SAMPLING_SCHEMES:
            raise ValueError(f"sampling must be one of {SAMPLING_SCHEMES}, got {sampling!r}")
        if loss_scale is not None:
            _check_positive(loss_scale, "loss_scale")
        _check_positive(temperature, "temperature")
        super().__init__(params, defaults)
        first = next((p for g in self.param_groups for p in g["params"]), None)
        self.device = first.device if first is not None else torch.device("cpu")
        c = int(n_groups)
        self.n_groups = c
        self.tau = float(tau)
        self.pi_option = pi_option
        self.loss_scale = None if loss_scale is None else float(loss_scale)
        self.sampling = sampling
        self.temperature = float(temperature)
        self.distributed = distributed
        self.log_prior = _as_distribution(prior, c, "prior", self.device).log()
        self.log_pi = _as_distribution(pi_init, c, "pi_init", self.device).log()
        if group_sizes is None:
            if sampling != "uniform":
                raise ValueError(f"sampling={sampling!r} needs group_sizes (n_j, the objects per group)")
            self.group_sizes = None
        else:
            sizes = torch.as_tensor(group_sizes, dtype=torch.float64).to(self.device).flatten()
            if sizes.numel() != c:
                raise ValueError(f"group_sizes must have n_groups = {c} entries, got {sizes.numel()}")
            if bool((sizes < 1).any()):
                empty = (sizes < 1).nonzero().flatten().tolist()[:5]
                raise ValueError(f"empty group(s) {empty}: every group needs at least one object (group_sizes ≥ 1)")
            self.group_sizes = sizes
        self.pi_steps = 0
        self._pending: tuple[Tensor, Tensor] | None = None
        self._eval_log_pi: Tensor | None = None  # popov: the extrapolated π̃ the closure must use

    # -- public read-outs
    @property
    def pi(self) -> Tensor:
        """The current group weights π (float64, on the parameters' device, a copy)."""
        return self.log_pi.exp()

    @property
    def prior(self) -> Tensor:
        return self.log_prior.exp()

    def kl_to_prior(self) -> float:
        """KL(π‖π̂): the radius the penalised problem has reached (the course's r read-out)."""
        pi = self.pi
        return float((pi * (self.log_pi - self.log_prior)).sum())

    def group_probabilities(self) -> Tensor:
        """P(group j) of the sampling scheme: n_j/n (uniform over objects), 1/c (group) or π (pi)."""
        if self.sampling == "pi":
            return self.pi
        if self.sampling == "group":
            return torch.full((self.n_groups,), 1.0 / self.n_groups, dtype=torch.float64, device=self.device)
        if self.group_sizes is None:
            raise ValueError("group_probabilities() with sampling='uniform' needs group_sizes")
        return self.group_sizes / self.group_sizes.sum()

    def sample_groups(self, m: int, generator: torch.Generator | None = None) -> Tensor:
        """``m`` group ids drawn from :meth:`group_probabilities` (for π-weighted attack / transform sampling)."""
        return torch.multinomial(self.group_probabilities().float(), m, replacement=True, generator=generator)

    # -- DDP: each rank's slice of the global batch
    def _world(self) -> tuple[int, torch.device | None]:
        """``(world_size, device of the collectives)`` when losses are per-rank slices, else ``(1, None)``."""
        if self.distributed is False:
            return 1, None
        dist = torch.distributed
        if not (dist.is_available() and dist.is_initialized()):
            if self.distributed is True:
                raise RuntimeError(f"{type(self).__name__}(distributed=True) needs an initialised process group")
            return 1, None
        ws = dist.get_world_size()
        return ws, (self.device if dist.get_backend() == "nccl" else torch.device("cpu"))

    # -- the estimators of spec §2.1
    def _factors(self, groups: Tensor, m: int, log_pi: Tensor) -> tuple[Tensor, Tensor]:
        """Per-sample (θ-weight, π-gradient factor) of the sampling scheme; both float64, shape (m,)."""
        c = self.n_groups
        s = self.loss_scale if self.loss_scale is not None else c / m
        pi_b = log_pi[groups].exp()
        if self.sampling == "uniform":
            return s * pi_b, torch.full_like(pi_b, s)
        share = self.group_sizes[groups] / self.group_sizes.sum()  # n_j / n
        if self.sampling == "group":
            return s * c * share * pi_b, s * c * share
        return s * share, s * share / pi_b  # "pi": the draw already weights by π (pitfall 12)

    def weighted_loss(self, losses: Tensor, groups: Tensor) -> Tensor:
        r"""The scalar to back-propagate, :math:`\sum_b w_b\,\ell_b`, and π's gradient for the next :meth:`step`.

        ``losses``: per-sample losses (shape ``(M,)``, with their graph); ``groups``: the group id of
        each (integers in ``[0, n_groups)``). With the default ``sampling="uniform"`` and
        ``loss_scale=None`` the weight is :math:`w_b = \frac{c}{M}\pi_{j_b}`, so uniform π gives the mean
        loss (ERM) and the π-gradient :math:`\frac cM\sum_b\ell_b e_{j_b}` is unbiased for the group losses
        (a scatter-add: duplicates of a group add up, pitfall 3).
        """
        if not isinstance(losses, Tensor) or losses.dim() != 1 or losses.numel() == 0:
            raise ValueError(f"losses must be a non-empty 1-D tensor of per-sample losses, got "
                             f"{tuple(losses.shape) if isinstance(losses, Tensor) else type(losses).__name__}")
        groups = torch.as_tensor(groups)
        if groups.shape != losses.shape:
            raise ValueError(f"groups must have one id per loss: shape {tuple(losses.shape)}, got {tuple(groups.shape)}")
        if groups.dtype.is_floating_point or groups.dtype == torch.bool:
            raise TypeError(f"groups must be integer ids, got dtype {groups.dtype}")
        groups = groups.to(self.device)
        lo, hi = int(groups.min()), int(groups.max())  # one host read: unknown ids must fail loudly
        if lo < 0 or hi >= self.n_groups:
            raise ValueError(f"unknown group id {lo if lo < 0 else hi}: ids must lie in [0, {self.n_groups})")
        detached = losses.detach()
        if not bool(torch.isfinite(detached).all()):
            raise ValueError("losses contain NaN or inf")
        log_pi = self._eval_log_pi if self._eval_log_pi is not None else self.log_pi
        world_size, comm = self._world()
        m = losses.numel()
        if world_size > 1:  # M of c/M is the global batch: the sum of the ranks' slices
            total = torch.tensor([float(m)], dtype=torch.float64, device=comm)
            torch.distributed.all_reduce(total)
            m = int(total.item())
        w_theta, w_pi = self._factors(groups, m, log_pi)
        self._pending = (groups, (w_pi * detached.to(torch.float64)), comm)
        loss = (w_theta.to(losses.dtype) * losses).sum()
        return loss * world_size if world_size > 1 else loss  # DDP averages the ranks' gradients

    @staticmethod
    def _run_closure(closure):
        if closure is None:
            return None
        with torch.enable_grad():
            return closure()

    def _take_pi_grad(self) -> Tensor:
        if self._pending is None:
            raise RuntimeError(f"{type(self).__name__}.step() needs the batch's losses: call "
                               "weighted_loss(losses, groups) (and backward) before step()")
        groups, contrib, comm = self._pending
        self._pending = None
        g = torch.zeros(self.n_groups, dtype=torch.float64, device=self.device).index_add_(0, groups, contrib)
        if comm is not None:  # the global batch's group losses: the sum of the ranks' scatter-adds
            g_comm = g.to(comm)
            torch.distributed.all_reduce(g_comm)
            g = g_comm.to(self.device)
        return g

    def _prox(self, log_pi: Tensor, grad: Tensor, lr: float) -> Tensor:
        return _kl_prox_step(log_pi, grad, lr=lr, tau=self.tau, log_prior=self.log_prior, option=self.pi_option,
                            temperature=self.temperature)

    # -- state
    _GROUP_STATE = ("log_pi", "log_prior", "group_sizes", "pi_steps", "n_groups", "tau", "pi_option", "loss_scale",
                    "sampling", "temperature")
    _EXTRA_STATE: tuple[str, ...] = ()

    def state_dict(self) -> dict:
        sd = super().state_dict()
        sd["group_dro"] = {k: getattr(self, k) for k in self._GROUP_STATE + self._EXTRA_STATE}
        sd["group_dro"] = {k: (v.clone() if isinstance(v, Tensor) else v) for k, v in sd["group_dro"].items()}
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        extra = state_dict.pop("group_dro", None)
        if extra is None:
            raise ValueError(f"not a {type(self).__name__} state_dict: no 'group_dro' entry")
        if extra["n_groups"] != self.n_groups:
            raise ValueError(f"state_dict has n_groups={extra['n_groups']}, this optimizer {self.n_groups}")
        super().load_state_dict(state_dict)
        for k, v in extra.items():
            setattr(self, k, v.to(self.device) if isinstance(v, Tensor) else v)
        self._pending = None


# --------------------------------------------------------------------------- ALSO


class ALSO(_GroupDRO):
    r"""ALSO, the Adaptive Loss Scaling Optimizer (Feoktistov et al., 2025, Algorithm 5).

    Each :meth:`step`, with the batch's losses handed over by :meth:`weighted_loss`:

    .. math::
        \hat g_\theta^t = g_\theta^t + \alpha(g_\theta^t - g_\theta^{t-1}),\qquad
        \hat g_\pi^t = g_\pi^t + \alpha(g_\pi^t - g_\pi^{t-1})\qquad(g^{-1}:=g^0)

    θ takes an Adam step on :math:`\hat g_\theta` (torch's Adam formula; ``weight_decay`` is coupled L2,
    added before the moments as in the official code), and π the softmax KL-prox step

    .. math::
        \pi^{t+1} = \mathrm{SM}\Big(\frac{\log\pi^t + \eta_\pi\tau\log\hat\pi + \eta_\pi\hat g_\pi^t}{1+\eta_\pi\tau}\Big)
        \quad\text{(Option I; ``pi_option="II"`` / ``"II-euclid"`` for the theory's forms).}

    Args:
        params: the model parameters (or parameter groups).
        n_groups: c, the number of groups (``c = n`` for one weight per example).
        lr, betas, eps, weight_decay, amsgrad-free: Adam's (torch defaults; the official code uses
            ``eps`` = 1.19e-7 and ``weight_decay`` = 1e-3).
        pi_lr: η_π, π's step size (0 freezes π: Adam / Static Weights).
        tau: τ > 0, the KL strength towards the prior (β = 1/τ).
        alpha: optimism ("negative momentum"); the paper fixes α = 1. α = 0 is descent–ascent.
        mode: ``"optimistic"`` (Algorithm 5, the default), ``"descent-ascent"`` (α forced to 0: one
            plain Adam update per step), ``"popov"`` (the official code's two-sequence form: the
            gradient is taken at an extrapolated point; :meth:`step` needs a ``closure``; Adam's
            moments are updated twice per step, as there), ``"api"`` (AπLSO: π's gradient
            normalised by its own Adam moments before the prox — a reconstruction, the paper gives
            no formula).
        prior: π̂ — ``"uniform"`` (default) or a vector of ``n_groups`` positive weights (e.g. the
            class-balanced per-sample prior of the paper's imbalance experiment).
        pi_init: π⁰ (default: uniform).
        pi_option: ``"I"`` (practice), ``"II"`` or ``"II-euclid"``; see :func:`kl_prox_step`.
        loss_scale: s; ``None`` means c/M for a batch of M (unbiased); the paper's imbalance code
            overrides it to 1.
        sampling: how the batch was drawn (spec §2.1): ``"uniform"`` over objects (a shuffled
            loader), ``"group"`` (group uniform, then object) or ``"pi"`` (group ∼ π, then object;
            the estimator drops π's factor). The latter two need ``group_sizes``.
        group_sizes: n_j per group.
        temperature: softmax temperature of the official code (not in the paper; 1 = off).
        distributed: ``"auto"`` (default): under an initialised ``torch.distributed`` process group with
            more than one process, :meth:`weighted_loss` gets this rank's slice of the batch (M, π's
            gradient and the scale for DDP's mean are made global, see the module docstring); ``True``
            requires a process group; ``False``: the losses are the whole batch (what :func:`dro_lab.fit`
            hands over).

    With ``pi_lr=0``, ``alpha=0``, a uniform prior and π⁰ it is ``torch.optim.Adam`` on the mean loss.
    """

    def __init__(self, params, n_groups: int, *, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, pi_lr: float = 1e-3, tau: float = 1e-2,
                 alpha: float = 1.0, mode: str = "optimistic", prior=None, pi_init=None, pi_option: str = "I",
                 loss_scale: float | None = None, sampling: str = "uniform", group_sizes=None,
                 temperature: float = 1.0, pi_betas: tuple[float, float] | None = None,
                 distributed: bool | str = "auto"):
        if not (isinstance(lr, numbers.Real) and lr >= 0 and math.isfinite(lr)):
            raise ValueError(f"Invalid learning rate: {lr!r}")
        if not (isinstance(eps, numbers.Real) and eps >= 0):
            raise ValueError(f"Invalid epsilon value: {eps!r}")
        for k, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {k}: {b!r}")
        _check_nonneg(weight_decay, "weight_decay")
        _check_nonneg(pi_lr, "pi_lr")
        _check_nonneg(alpha, "alpha")
        if mode not in ALSO_MODES:
            raise ValueError(f"mode must be one of {ALSO_MODES}, got {mode!r}")
        pi_betas = tuple(betas if pi_betas is None else pi_betas)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults, n_groups=n_groups, tau=tau, prior=prior, pi_init=pi_init,
                         pi_option=pi_option, loss_scale=loss_scale, sampling=sampling, group_sizes=group_sizes,
                         temperature=temperature, distributed=distributed)
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
                bias1 = 1 - beta1 ** step
                bias2_sqrt = math.sqrt(1 - beta2 ** step)
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
            g_pi = (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + self.param_groups[0]["eps"])
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
        self._eval_log_pi = (self._prox(self.log_pi, self.prev_pi_grad, self.pi_lr)
                             if self.prev_pi_grad is not None and self.pi_lr > 0 else None)
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


# --------------------------------------------------------------------------- Optimistic Mirror-Prox


class OptimisticMirrorProx(_GroupDRO):
    r"""Optimistic Mirror-Prox for the ALSO problem (Algorithm 4; deterministic, full gradients).

    One step size γ for both players; with :math:`\hat g = g + \alpha(g - g_{\rm prev})` (:math:`g_{-1}:=g_0`):

    .. math::
        \theta^{k+1} = \frac{\theta^k - \gamma\,\hat g_\theta^k}{1+\gamma\lambda},\qquad
        \pi^{k+1} = \mathrm{SM}\Big(\frac{\log\pi^k + \gamma\tau\log\hat\pi + \gamma\hat g_\pi^k}{1+\gamma\tau}\Big)

    where λ = ``weight_decay`` is the prox of :math:`r(\theta)=\frac\lambda2\|\theta\|^2` (exact, not a
    gradient step). α = 1 (Popov) is the paper's choice; α = 0 is simultaneous gradient descent–ascent.
    Hand it the losses of **all** examples each step (``weighted_loss(losses, groups)``): the scale
    c/n then makes :math:`\sum_b w_b\ell_b` the objective's loss term exactly.
    """

    def __init__(self, params, n_groups: int, *, lr: float, tau: float, alpha: float = 1.0,
                 weight_decay: float = 0.0, prior=None, pi_init=None, pi_option: str = "I",
                 loss_scale: float | None = None, sampling: str = "uniform", group_sizes=None,
                 distributed: bool | str = "auto"):
        _check_positive(lr, "lr")
        _check_nonneg(alpha, "alpha")
        _check_nonneg(weight_decay, "weight_decay")
        super().__init__(params, dict(lr=float(lr), weight_decay=float(weight_decay)), n_groups=n_groups, tau=tau,
                         prior=prior, pi_init=pi_init, pi_option=pi_option, loss_scale=loss_scale,
                         sampling=sampling, group_sizes=group_sizes, distributed=distributed)
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


# --------------------------------------------------------------------------- DRAGO (simplified)


class DRAGO(_GroupDRO):
    r"""DRAGO as the ALSO experiments ran it — a **simplified** SVRG-like adaptation, not Mehta et al.'s method.

    Every ``freq`` steps a snapshot: at the snapshot step the batch gradient :math:`G_s` and π-gradient
    :math:`\Lambda_s` are stored and no step is taken; at the next step :math:`G_{s+1}, \Lambda_{s+1}`
    are stored; every step after that (and that one) moves

    .. math::
        \theta \leftarrow \theta - \eta\,(g_t - G_{s+1} + G_s),\qquad
        \pi \leftarrow \mathrm{SM}\Big(\frac{\log\pi + \eta_\pi\tau\log\hat\pi + \eta_\pi(\ell_t - \Lambda_{s+1} + \Lambda_s)}
        {1+\eta_\pi\tau}\Big)

    with plain SGD on θ, ``pi_lr`` = ``lr`` by default and no weight decay (spec §2.8, pitfall 14: the
    adaptation stores but never applies it). The official DRAGO keeps O(nd) tables; this one does not.
    """

    def __init__(self, params, n_groups: int, *, lr: float = 1e-2, pi_lr: float | None = None, tau: float = 1e-3,
                 freq: int = 10, prior=None, pi_init=None, loss_scale: float | None = None,
                 distributed: bool | str = "auto"):
        _check_positive(lr, "lr")
        if pi_lr is not None:
            _check_nonneg(pi_lr, "pi_lr")
        if isinstance(freq, bool) or not isinstance(freq, numbers.Integral) or freq < 2:
            raise ValueError(f"freq must be an integer ≥ 2 (two snapshot steps per period), got {freq!r}")
        super().__init__(params, dict(lr=float(lr)), n_groups=n_groups, tau=tau, prior=prior, pi_init=pi_init,
                         pi_option="I", loss_scale=loss_scale, sampling="uniform", group_sizes=None,
                         distributed=distributed)
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
