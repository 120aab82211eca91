"""Group-DRO training through :func:`dro_lab.fit`: ALSO / Optimistic Mirror-Prox / DRAGO as strategies,
groups made of input transformations (robust training), and simulated workers with compressed gradients.

* :class:`GroupDROStrategy` owns one of the optimizers of :mod:`dro_lab.optim` and hands it each
  batch's per-sample losses and group ids. Groups are the examples (``"sample"``, c = n, the paper's
  choice for imbalance), the classes, or the dataset's groups.
* :class:`TransformGroupsStrategy` wraps any strategy: each example of a batch gets one of ``c``
  transformations (identity, rotation, noise, FGSM …) — uniformly, or from the inner optimizer's π
  (the paper's §6.3 pipeline, with the π-weighted group sampling of its App. A) — and the transformation
  is its group.
* :class:`CompressedWorkersStrategy` wraps any strategy: groups are workers, each sends only its
  block of a shared random permutation of the gradient coordinates (Perm-K); block sizes follow π
  (the paper's §6.4 "personalised" Perm-K) or are equal (plain Perm-K).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import torch
from torch import Tensor

from .._validation import check_callable, check_int, check_optional_int
from ..data.datasets import labels_of
from ..engine.strategy import Batch, Strategy
from ..optim.also import ALSO
from ..optim.group_weights import SAMPLING_SCHEMES
from ..optim.mirror_prox import DRAGO, OptimisticMirrorProx

__all__ = [
    "GROUP_DRO_METHODS",
    "GROUPINGS",
    "PRIORS",
    "GroupDROStrategy",
    "TransformGroupsStrategy",
    "CompressedWorkersStrategy",
]


#: :class:`GroupDROStrategy`'s ``method`` -> its optimizer class.
GROUP_DRO_METHODS = {"also": ALSO, "omp": OptimisticMirrorProx, "drago": DRAGO}


#: :class:`GroupDROStrategy`'s ``grouping``: one weight per example, per class, or per group of the data.
GROUPINGS = ("sample", "class", "group")


#: The named priors π̂ of :class:`GroupDROStrategy` (a vector of c positive weights is the third kind).
PRIORS = ("uniform", "class_balanced")


class GroupDROStrategy(Strategy):
    r"""Train with group weights π: ALSO (default), Optimistic Mirror-Prox or the simplified DRAGO.

    Args:
        method: ``"also"``, ``"omp"`` (full-batch: use ``batch_size = n``) or ``"drago"``.
        grouping: ``"sample"`` (one weight per example, c = n), ``"class"`` or ``"group"`` (the
            dataset's groups, or the transformation / worker a wrapper assigns).
        prior: π̂ (and π⁰ unless ``pi_init`` is given): ``"uniform"``, ``"class_balanced"`` (∝ 1/N_{y_i} per
            example, ∝ 1/n_j per group; the paper's choice for imbalanced data) or c positive weights.
        n_groups: c for ``grouping="group"`` when the dataset does not say (a wrapper sets it).
        sampling: ``"uniform"`` (shuffled batches), ``"group"`` (group uniform, then a member) or
            ``"pi"`` (group ∼ π, then a member); the optimizer applies the matching estimator.
        **options: the optimizer's (``pi_lr``, ``tau``, ``alpha``, ``mode``, ``betas``, ``eps``,
            ``pi_option``, ``loss_scale``, ``freq`` …). ``lr`` and ``weight_decay`` come from ``fit``.

    The optimizer is built at the first :func:`fit` and kept by later calls on the same model, so a second
    ``fit`` continues (π included); under DDP π steps on the global batch. ``pi_history`` holds π at the
    end of each epoch (c ≤ 10⁴).

    Example:
        >>> strategy = GroupDROStrategy(grouping="group", pi_lr=0.1)
        >>> history = fit(LogisticRegression(2, 2), make_minority_blobs(100)[0], strategy=strategy, progress=False)
        >>> len(strategy.pi_history), strategy.optimizer.pi.shape  # π over the 2 groups, per epoch
        (10, torch.Size([2]))
    """

    def __init__(
        self,
        method: str = "also",
        *,
        grouping: str = "sample",
        prior="uniform",
        n_groups: int | None = None,
        sampling: str = "uniform",
        **options,
    ):
        if method not in GROUP_DRO_METHODS:
            raise ValueError(f"method must be one of {sorted(GROUP_DRO_METHODS)}, got {method!r}")
        if grouping not in GROUPINGS:
            raise ValueError(f"grouping must be one of {GROUPINGS}, got {grouping!r}")
        if isinstance(prior, str) and prior not in PRIORS:
            raise ValueError(f"prior must be one of {PRIORS} or a weight vector, got {prior!r}")
        if sampling not in SAMPLING_SCHEMES:
            raise ValueError(f"sampling must be one of {SAMPLING_SCHEMES}, got {sampling!r}")
        for key in ("lr", "weight_decay", "params", "n_groups", "sampling", "prior", "group_sizes", "distributed"):
            if key in options:
                raise ValueError(
                    f"{key!r} is not an option here: lr/weight_decay come from fit, the rest from "
                    "grouping/prior/sampling (fit runs DDP itself)"
                )
        self.method, self.grouping, self.prior_spec, self.sampling = method, grouping, prior, sampling
        check_optional_int(n_groups, "n_groups")
        self.n_groups_given = n_groups
        self.options = options
        self.optimizer = None
        self._params: list | None = None
        self._saved: dict | None = None
        self.external_groups = False  # set by a wrapper that assigns the groups itself
        self.group_sizes_override: Tensor | None = None
        self.pi_history: list[Tensor] = []
        tags = [grouping] + ([f"prior={prior}"] if isinstance(prior, str) and prior != "uniform" else [])
        tags += [
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in sorted(options.items())
            if k in ("tau", "pi_lr", "alpha", "mode", "freq")
        ]
        self.name = f"{method}({','.join(tags)})"

    # -- groups
    def setup(self, n: int, **context) -> None:
        super().setup(n, **context)
        device, train = self.device, self.train
        labels = labels_of(train).to(device) if train is not None and self.grouping != "group" else None
        self.member_table = None  # which group each example is in, for group-first sampling
        if self.grouping == "sample":
            self.group_of = torch.arange(n, device=device)
            self.c = n
            sizes = torch.ones(n, dtype=torch.float64, device=device)
        elif self.grouping == "class":
            self.group_of = self.member_table = labels
            self.c = int(getattr(train, "num_classes", None) or int(labels.max()) + 1)
            sizes = torch.bincount(labels, minlength=self.c).to(torch.float64)
        else:
            self.group_of = None
            table = getattr(train, "groups", None)
            self.c = self.n_groups_given or getattr(train, "num_groups", None)
            if self.c is None:
                raise ValueError("grouping='group' needs n_groups, or a dataset with groups")
            if self.group_sizes_override is not None:
                sizes = self.group_sizes_override.to(device, torch.float64)
            elif table is not None:
                sizes = torch.bincount(table.to(device), minlength=self.c).to(torch.float64)
            else:
                sizes = torch.full((self.c,), float(n), dtype=torch.float64, device=device)
            if table is not None and not self.external_groups:
                self.member_table = table.to(device)
        self.sizes = sizes
        self.prior_vec = self._prior(train, sizes)

    def _prior(self, train, sizes: Tensor):
        if not isinstance(self.prior_spec, str):
            return self.prior_spec
        if self.prior_spec == "uniform":
            return None
        if self.grouping == "sample":
            y = labels_of(train).to(sizes.device)
            return 1.0 / torch.bincount(y).to(torch.float64)[y]
        if bool((sizes < 1).any()):
            raise ValueError("prior='class_balanced' with an empty group: every group needs a member")
        return 1.0 / sizes

    def make_optimizer(self, params, *, lr: float, weight_decay: float, momentum: float):
        params = list(params)
        if (
            self.optimizer is not None
            and self._params is not None
            and len(params) == len(self._params)
            and all(a is b for a, b in zip(params, self._params))
        ):
            return self.optimizer  # a later fit on the same model continues
        cls = GROUP_DRO_METHODS[self.method]
        kw = dict(self.options)
        if self.method != "drago":
            kw.update(sampling=self.sampling, group_sizes=self.sizes)
            if weight_decay:
                kw["weight_decay"] = weight_decay
        elif self.sampling != "uniform":
            raise ValueError("method='drago' supports sampling='uniform' only")
        kw.setdefault("pi_init", self.prior_vec)
        # fit hands reduce() the global batch under DDP (all-gathered losses), so the optimizer must not sync again
        self.optimizer = cls(params, n_groups=self.c, lr=lr, prior=self.prior_vec, distributed=False, **kw)
        self._params = params
        if self._saved is not None:
            self.optimizer.load_state_dict(self._saved)
            self._saved = None
        return self.optimizer

    # -- batches: uniform, or a group first (uniform / ∼ π) then a member of it
    def batches(self, epoch: int, batch_size: int) -> Iterator[Tensor]:
        if self.sampling == "uniform" or self.external_groups:
            yield from super().batches(epoch, batch_size)
            return
        if self.member_table is None:
            raise ValueError(
                f"sampling={self.sampling!r} needs group membership (grouping 'class' or a dataset with groups)"
            )
        members = self.member_table.cpu()
        order = torch.argsort(members, stable=True)  # examples sorted by group; group j starts at starts[j]
        counts = torch.bincount(members, minlength=self.c)
        starts = torch.cumsum(counts, 0) - counts
        for _ in range(math.ceil(self.n / batch_size)):
            g = torch.multinomial(
                self.optimizer.group_probabilities().float().cpu(),
                batch_size,
                replacement=True,
                generator=self.generator,
            )
            offset = (torch.rand(batch_size, generator=self.generator) * counts[g]).long()
            yield order[starts[g] + offset]

    def group_ids(self, indices: Tensor, groups: Tensor | None) -> Tensor:
        if self.group_of is not None:
            return self.group_of[indices.to(self.group_of.device)]
        if groups is None:
            raise ValueError("grouping='group' needs a dataset that yields groups (or a wrapper that assigns them)")
        return groups

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        return self.optimizer.weighted_loss(losses, self.group_ids(indices, groups))

    def group_weights(self) -> Tensor:
        """π (what a wrapper's π-weighted draw or block split uses)."""
        return self.optimizer.pi

    def epoch_stats(self) -> dict:
        pi = self.optimizer.pi
        if self.c <= 10_000:
            self.pi_history.append(pi.float().cpu())
        entropy = float(-(pi * self.optimizer.log_pi).sum())
        return {"pi_kl_to_prior": self.optimizer.kl_to_prior(), "pi_entropy": entropy, "pi_max": float(pi.max())}

    def state_dict(self) -> dict:
        return {
            "optimizer": None if self.optimizer is None else self.optimizer.state_dict(),
            "pi_history": [pi.clone() for pi in self.pi_history],
        }

    def load_state_dict(self, state: dict) -> None:
        if self.optimizer is None:
            self._saved = state["optimizer"]
        else:
            self.optimizer.load_state_dict(state["optimizer"])
        self.pi_history = [pi.clone() for pi in state.get("pi_history", [])]

    def describe(self) -> str:
        return self.name


class _Wrapper(Strategy):
    """Delegates every hook to ``inner`` (subclasses override one or two)."""

    def __init__(self, inner: Strategy):
        if not isinstance(inner, Strategy):
            raise TypeError(f"inner must be a dro_lab Strategy, got {type(inner).__name__}")
        self.inner = inner

    def setup(self, n, **context):
        super().setup(n, **context)
        self.inner.setup(n, **context)

    def make_optimizer(self, params, **kw):
        return self.inner.make_optimizer(params, **kw)

    def batches(self, epoch, batch_size):
        return self.inner.batches(epoch, batch_size)

    def resume_batches(self, epoch, batch_size, consumed):
        return self.inner.resume_batches(epoch, batch_size, consumed)

    def reduce(self, losses, *, indices, groups):
        return self.inner.reduce(losses, indices=indices, groups=groups)

    def transform(self, x, y, *, indices, groups, model):
        return self.inner.transform(x, y, indices=indices, groups=groups, model=model)

    @property
    def supports_distributed(self) -> bool:
        return self.inner.supports_distributed

    def backward(self, objective, *, losses, groups):
        self.inner.backward(objective, losses=losses, groups=groups)

    def observe(self, indices, losses):
        self.inner.observe(indices, losses)

    def epoch_stats(self):
        return self.inner.epoch_stats()

    def state_dict(self):
        return {"inner": self.inner.state_dict()}

    def load_state_dict(self, state):
        self.inner.load_state_dict(state["inner"])

    def _inner_weights(self, c: int, device) -> Tensor:
        """π of a group-DRO inner strategy whose sampling is π-weighted, else uniform over the c groups."""
        inner = self.inner
        if isinstance(inner, GroupDROStrategy) and inner.optimizer is not None:
            return inner.group_weights()
        return torch.full((c,), 1.0 / c, dtype=torch.float64, device=device)


class TransformGroupsStrategy(_Wrapper):
    r"""Groups are input transformations: each example of a batch gets transformation ``j`` and group ``j``.

    With an inner :class:`GroupDROStrategy` using ``sampling="pi"``, ``j`` is drawn from its π (the paper's
    robust-training pipeline; the estimator then drops π's factor); otherwise uniformly (the AdamW baseline
    "samples the attack uniformly"). Each transformation applies to every example, so n_j = n for all groups.

    Args:
        inner: the strategy that reduces the transformed batch (a :class:`GroupDROStrategy` to learn π).
        transforms: callables ``t(x, y, model, generator) -> x'`` (``x`` a batch on the device; ``x'`` of
            its shape).
        names: one label per transformation.
    """

    def __init__(self, inner: Strategy, transforms: Sequence[Callable], names: Sequence[str] | None = None):
        super().__init__(inner)
        self.transforms = list(transforms)
        if not self.transforms:
            raise ValueError("transforms must be a non-empty sequence of callables t(x, y, model, generator)")
        for t in self.transforms:
            check_callable(t, "transforms", "a sequence of callables t(x, y, model, generator)")
        self.names = list(names) if names is not None else [f"t{j}" for j in range(len(self.transforms))]
        if len(self.names) != len(self.transforms):
            raise ValueError(f"names must have one entry per transform ({len(self.transforms)}), got {len(self.names)}")
        if isinstance(inner, GroupDROStrategy):
            if inner.grouping != "group":
                raise ValueError("the inner GroupDROStrategy must use grouping='group' (the transform is the group)")
            inner.n_groups_given = len(self.transforms)
            inner.external_groups = True
        self.name = f"{inner.describe()}+transforms({len(self.transforms)})"

    def setup(self, n, **context):
        if isinstance(self.inner, GroupDROStrategy):
            self.inner.group_sizes_override = torch.full((len(self.transforms),), float(n), dtype=torch.float64)
        super().setup(n, **context)

    def transform(self, x, y, *, indices, groups, model):
        c = len(self.transforms)
        inner = self.inner
        pi_weighted = isinstance(inner, GroupDROStrategy) and inner.sampling == "pi"
        probs = self._inner_weights(c, x.device) if pi_weighted else torch.full((c,), 1.0 / c, dtype=torch.float64)
        g = torch.multinomial(probs.float().cpu(), x.shape[0], replacement=True, generator=self.generator).to(x.device)
        out = x.clone()
        for j in torch.unique(g).tolist():
            mask = g == j
            out[mask] = self.transforms[j](x[mask], y[mask], model, self.generator).to(x.dtype)
        return [Batch(out, y, g)]

    def describe(self) -> str:
        return self.name


class CompressedWorkersStrategy(_Wrapper):
    r"""Groups are workers; each sends only its block of a shared random permutation of the gradient (Perm-K).

    Every step a fresh permutation of the d parameter coordinates is split into blocks :math:`B_j` of sizes
    ∝ the worker weights (π of an inner :class:`GroupDROStrategy`: the paper's personalised Perm-K, §6.4;
    else uniform). Worker ``j`` computes :math:`x_j = \frac cM\sum_{b\in j}\nabla\ell_b` on its share of the
    batch and the server receives :math:`\sum_j \mathbf 1_{B_j}\odot x_j`, unbiased for :math:`\sum_j w_jx_j`;
    d numbers per step in all (:attr:`floats_sent`). Simulated workers (the dataset's groups) in one
    process: :func:`dro_lab.fit` under DDP refuses it.

    Args:
        inner: the strategy whose weights the workers follow (a :class:`GroupDROStrategy`, or any other).
        n_workers: c, the number of workers (the dataset's groups).
    """

    @property
    def supports_distributed(self) -> bool:
        return False  # its autograd.grad per worker bypasses DDP's gradient reducer

    def __init__(self, inner: Strategy, n_workers: int):
        super().__init__(inner)
        self.n_workers = check_int(n_workers, "n_workers")
        self.floats_sent = 0
        self._params: list[Tensor] | None = None
        self.name = f"{inner.describe()}+perm-k({n_workers})"

    def make_optimizer(self, params, **kw):
        params = list(params)
        self._params = [p for p in params if p.requires_grad]
        return self.inner.make_optimizer(params, **kw)

    def backward(self, objective, *, losses, groups):
        if groups is None:
            raise ValueError("CompressedWorkersStrategy needs a dataset with groups (the worker of each example)")
        params = self._params
        c, m = self.n_workers, losses.numel()
        if int(groups.max()) >= c or int(groups.min()) < 0:
            raise ValueError(f"worker ids must lie in [0, {c}), got {int(groups.min())}…{int(groups.max())}")
        d = sum(p.numel() for p in params)
        w = self._inner_weights(c, losses.device).double().cpu()
        bounds = torch.round(torch.cumsum(w, 0) * d).long()
        bounds[-1] = d
        perm = torch.randperm(d, generator=self.generator).to(losses.device)
        owner = torch.empty(d, dtype=torch.long, device=losses.device)
        lo = 0
        for j, hi in enumerate(bounds.tolist()):
            owner[perm[lo:hi]] = j
            lo = hi
        total = torch.zeros(d, dtype=losses.dtype, device=losses.device)
        present = torch.unique(groups).tolist()
        for k, j in enumerate(present):
            part = losses[groups == j].sum() * (c / m)
            grads = torch.autograd.grad(part, params, retain_graph=k < len(present) - 1, allow_unused=True)
            flat = torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)])
            total += torch.where(owner == j, flat, torch.zeros_like(flat))
        self.floats_sent += d
        offset = 0
        for p in params:
            p.grad = total[offset : offset + p.numel()].view_as(p).clone()
            offset += p.numel()

    def epoch_stats(self):
        return {**self.inner.epoch_stats(), "floats_sent": self.floats_sent}

    def state_dict(self):
        return {**super().state_dict(), "floats_sent": self.floats_sent}

    def load_state_dict(self, state):
        super().load_state_dict(state)
        self.floats_sent = int(state.get("floats_sent", 0))

    def describe(self) -> str:
        return self.name
