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
:meth:`~GroupWeightOptimizer.weighted_loss`, which returns the scalar to back-propagate and remembers the losses
for π's step::

    opt = ALSO(model.parameters(), n_groups=c, lr=1e-3, pi_lr=1e-3, tau=1e-2)
    for x, y, groups in loader:
        opt.zero_grad()
        loss = opt.weighted_loss(F.cross_entropy(model(x), y, reduction="none"), groups)
        loss.backward()
        opt.step()

π lives on the parameters' device as float64 log-weights (so that per-sample weights of 10⁻⁶, c = n,
do not underflow); :attr:`~GroupWeightOptimizer.pi` returns the probabilities.

Under ``torchrun`` with the model in ``DistributedDataParallel`` the same loop works unchanged
(``distributed="auto"``): each rank hands :meth:`~GroupWeightOptimizer.weighted_loss` its slice, M and π's
step are made global by all-reduces, so π equals one process's with the global batch. :func:`dro_lab.fit`
gathers the global batch itself and builds its optimizers with ``distributed=False``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .._validation import check_int, check_number
from .prox import PI_OPTIONS, _kl_prox_step

__all__ = ["DISTRIBUTED", "SAMPLING_SCHEMES", "GroupWeightOptimizer"]


#: The ``distributed`` values of the group-DRO optimizers: under a process group of several ranks, always, never.
DISTRIBUTED = ("auto", True, False)


#: How a batch was drawn (``sampling``): uniform over objects, group-uniform then object, group ∼ π then object.
SAMPLING_SCHEMES = ("uniform", "group", "pi")


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


class GroupWeightOptimizer(torch.optim.Optimizer):
    """Base: π on the simplex, the group bookkeeping, the sampling estimators and ``weighted_loss``."""

    def __init__(
        self,
        params,
        defaults: dict,
        *,
        n_groups: int,
        tau: float,
        prior,
        pi_init,
        pi_option: str,
        loss_scale: float | None,
        sampling: str,
        group_sizes,
        temperature: float = 1.0,
        distributed: bool | str = "auto",
    ):
        if not any(distributed is d or (isinstance(distributed, str) and distributed == d) for d in DISTRIBUTED):
            raise ValueError(f"distributed must be 'auto', True or False, got {distributed!r}")
        check_int(n_groups, "n_groups")
        check_number(tau, "tau", low=0, low_open=True)
        if pi_option not in PI_OPTIONS:
            raise ValueError(f"pi_option must be one of {PI_OPTIONS}, got {pi_option!r}")
        if sampling not in SAMPLING_SCHEMES:
            raise ValueError(f"sampling must be one of {SAMPLING_SCHEMES}, got {sampling!r}")
        if loss_scale is not None:
            check_number(loss_scale, "loss_scale", low=0, low_open=True)
        check_number(temperature, "temperature", low=0, low_open=True)
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

    # -- the unbiased estimators of the three sampling schemes (Feoktistov et al., 2025, App. A)
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
        # "pi": the draw already weights by π, so a π factor here would count it twice
        return s * share, s * share / pi_b

    def weighted_loss(self, losses: Tensor, groups: Tensor) -> Tensor:
        r"""The scalar to back-propagate, :math:`\sum_b w_b\,\ell_b`, and π's gradient for the next :meth:`step`.

        ``losses``: per-sample losses (shape ``(M,)``, with their graph); ``groups``: the group id of
        each (integers in ``[0, n_groups)``). With the default ``sampling="uniform"`` and
        ``loss_scale=None`` the weight is :math:`w_b = \frac{c}{M}\pi_{j_b}`, so uniform π gives the mean
        loss (ERM) and the π-gradient :math:`\frac cM\sum_b\ell_b e_{j_b}` is unbiased for the group losses
        (a scatter-add: duplicates of a group add up; an indexed assignment would keep only the last).
        """
        if not isinstance(losses, Tensor) or losses.dim() != 1 or losses.numel() == 0:
            raise ValueError(
                f"losses must be a non-empty 1-D tensor of per-sample losses, got "
                f"{tuple(losses.shape) if isinstance(losses, Tensor) else type(losses).__name__}"
            )
        groups = torch.as_tensor(groups)
        if groups.shape != losses.shape:
            raise ValueError(
                f"groups must have one id per loss: shape {tuple(losses.shape)}, got {tuple(groups.shape)}"
            )
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
            raise RuntimeError(
                f"{type(self).__name__}.step() needs the batch's losses: call "
                "weighted_loss(losses, groups) (and backward) before step()"
            )
        groups, contrib, comm = self._pending
        self._pending = None
        g = torch.zeros(self.n_groups, dtype=torch.float64, device=self.device).index_add_(0, groups, contrib)
        if comm is not None:  # the global batch's group losses: the sum of the ranks' scatter-adds
            g_comm = g.to(comm)
            torch.distributed.all_reduce(g_comm)
            g = g_comm.to(self.device)
        return g

    def _prox(self, log_pi: Tensor, grad: Tensor, lr: float) -> Tensor:
        return _kl_prox_step(
            log_pi,
            grad,
            lr=lr,
            tau=self.tau,
            log_prior=self.log_prior,
            option=self.pi_option,
            temperature=self.temperature,
        )

    # -- state
    _GROUP_STATE = (
        "log_pi",
        "log_prior",
        "group_sizes",
        "pi_steps",
        "n_groups",
        "tau",
        "pi_option",
        "loss_scale",
        "sampling",
        "temperature",
    )
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
