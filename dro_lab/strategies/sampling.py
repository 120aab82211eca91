"""Methods whose batches come from a table sampler: hardness-weighted sampling and importance sampling."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch import Tensor

from .._validation import check_int
from ..data.datasets import fetch_batch, labels_of
from ..engine.strategy import Strategy
from ..losses import per_sample_cross_entropy
from ..metrics import dataset_losses
from ..pergrad.ghost import per_sample_grad_norms
from ..pergrad.last_layer import logit_grad_norms
from ..samplers.hardness import HardnessWeightedSampler
from ..samplers.importance import ImportanceSampler

__all__ = ["HardnessWeightedStrategy", "ImportanceSamplingStrategy"]


class _SamplerStrategy(Strategy):
    """A strategy whose batches come from a table sampler (HWS, IS): the sampler is created at the first
    :func:`fit` and kept by later calls on the same data (so a second ``fit`` continues the run), its
    generator is seeded from ``fit``'s seed, and its state is the strategy's state."""

    sampler_cls: type = HardnessWeightedSampler
    sampler = None
    _saved: dict | None = None

    def _attach(self, refresh_fn: Callable[[], Tensor] | None) -> None:
        """The sampler of this run (set up by :meth:`setup`): kept from an earlier fit on the same data, else new."""
        n, device = self.n, self.device
        if self.sampler is not None and self.sampler.n == n and self.sampler.device == device:
            self.sampler.refresh_fn = refresh_fn  # a later fit: keep the table, continue
            return
        # world_size=1 even under DDP: fit hands the strategy the global batch (every rank draws the same one
        # and takes its slice, then observes the all-gathered losses), so the sampler is the single-process one.
        self.sampler = self.sampler_cls(
            n,
            self.batch_size or 64,
            device=device,
            refresh_fn=refresh_fn,
            world_size=1,
            rank=0,
            generator=torch.Generator(device=device).manual_seed(self.generator.initial_seed()),
            **self.options,
        )
        if self._saved is not None:
            self.sampler.load_state_dict(self._saved)
            self._saved = None

    def batches(self, epoch: int, batch_size: int) -> Iterator[Tensor]:
        self.sampler.batch_size = batch_size
        return self.sampler.batches()

    def resume_batches(self, epoch: int, batch_size: int, consumed: int) -> Iterator[Tensor]:
        # the sampler's state holds its epoch position: its batches() continues the epoch, except when the
        # epoch's last batch was drawn (the interrupted iterator would have closed the epoch on its next step)
        self.sampler.batch_size = batch_size
        if self.sampler.position >= len(self.sampler):
            self.sampler._end_of_epoch()
            return iter(())
        return self.sampler.batches()

    def state_dict(self) -> dict:
        return {"sampler": None if self.sampler is None else self.sampler.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if self.sampler is None:
            self._saved = state["sampler"]  # applied when fit sets the sampler up
        else:
            self.sampler.load_state_dict(state["sampler"])

    def describe(self) -> str:
        return self.name


class HardnessWeightedStrategy(_SamplerStrategy):
    r"""SGD with hardness-weighted sampling (Fidon et al., Algorithm 1) through the engine.

    Batches come from a :class:`dro_lab.HardnessWeightedSampler`; the loss is the plain batch mean (the
    sampling does the weighting) and the batch's losses go back into the history after the step.

    Args:
        beta, divergence: as in the sampler (KL by default, the paper's).
        exact_history: the paper's Theorem B.1 variant: the whole history is recomputed before
            every draw (a full forward pass per iteration; small data only).
        refresh_every: beyond the paper: recompute the whole history every ``k`` iterations.
        warm_start, prob_floor, importance_weights, history_momentum: the sampler's options
            (all but ``warm_start`` beyond the paper; off by default).

    The sampler is created at the first :func:`fit` and kept by later calls on the same data (no second
    warm start). Seeded from ``fit``'s seed, its warm-start epoch is ERM's first epoch.

    Example:
        >>> strategy = HardnessWeightedStrategy(beta=1.0)
        >>> history = fit(LogisticRegression(2, 2), make_minority_blobs(100)[0], strategy=strategy, progress=False)
        >>> strategy.sampler.phase  # after the warm-start epoch: batches drawn from q
        'dro'
    """

    def __init__(
        self,
        beta: float = 10.0,
        divergence: str = "kl",
        *,
        exact_history: bool = False,
        refresh_every: int | None = None,
        warm_start: bool = True,
        prob_floor: float = 0.0,
        importance_weights: bool = False,
        history_momentum: float = 0.0,
    ):
        if exact_history and refresh_every not in (None, 1):
            raise ValueError(f"exact_history=True refreshes every iteration; got refresh_every={refresh_every}")
        self.options = dict(
            beta=beta,
            divergence=divergence,
            warm_start=warm_start,
            prob_floor=prob_floor,
            importance_weights=importance_weights,
            history_momentum=history_momentum,
            refresh_every=1 if exact_history else refresh_every,
        )
        # Validate now (a clear error at construction, not at the first fit): a throw-away sampler.
        HardnessWeightedSampler(
            1,
            1,
            device="cpu",
            generator=torch.Generator(),
            refresh_fn=(lambda: None) if self.options["refresh_every"] else None,
            **self.options,
        )
        beyond = [k for k in ("prob_floor", "importance_weights", "history_momentum") if self.options[k]]
        mode = "exact" if exact_history else (f"refresh{refresh_every}" if refresh_every else "")
        tags = ",".join([f"β={float(beta):g}", *([mode] if mode else []), *beyond])
        self.name = f"hws-{divergence}({tags})"

    def setup(self, n: int, **context) -> None:
        super().setup(n, **context)
        refresh_fn = None
        if self.options["refresh_every"]:
            model, train, loss_fn = self.model, self.train, self.loss_fn
            if model is None or train is None:
                raise ValueError("exact_history / refresh_every need the model and training set (run through fit)")
            refresh_fn = lambda: dataset_losses(model, train, loss_fn=loss_fn)  # noqa: E731
        self._attach(refresh_fn)

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        if self.sampler.use_importance_weights:
            return (self.sampler.importance_weights(indices, losses.detach()) * losses).mean()
        return losses.mean()

    def observe(self, indices: Tensor, losses: Tensor) -> None:
        self.sampler.update(indices, losses)

    def epoch_stats(self) -> dict:
        """The sampler's :meth:`~dro_lab.HardnessWeightedSampler.stats` (``sampler_ess`` …) and
        ``sampler_class_mass``: q's total mass on each class of the training set."""
        stats = {f"sampler_{k}": v for k, v in self.sampler.stats().items() if k not in ("phase", "epoch", "step")}
        if self.train is not None:  # on the host, in float64 (which MPS lacks): one copy of q per epoch
            y = labels_of(self.train).cpu()
            mass = torch.zeros(getattr(self.train, "num_classes", None) or int(y.max()) + 1, dtype=torch.float64)
            stats["sampler_class_mass"] = mass.index_add_(0, y, self.sampler.probabilities().cpu().double()).tolist()
        return stats


class ImportanceSamplingStrategy(_SamplerStrategy):
    r"""Importance-sampled SGD (Lahire 2023) through the engine: draw from ``p``, weight by ``1/(N p_i)``.

    Batches come from a :class:`dro_lab.ImportanceSampler`; the loss is the weighted mean
    :math:`\frac1b\sum_k w_{i_k}\ell_{i_k}` with the weights of the draw, an unbiased estimate of the
    ERM gradient (``weight_exponent=1``, no clipping; the paper's eq. 2).

    Where the scores come from (``scheme``):

    * ``"grad_norm"`` — exact per-sample gradient norms (:func:`dro_lab.per_sample_grad_norms`);
    * ``"loss"`` — the per-sample losses;
    * ``"last_layer"`` — the logit-gradient norm of Katharopoulos & Fleuret, forward only
      (:func:`dro_lab.logit_grad_norms`; for cross-entropy);
    * ``"uniform"`` — none.

    Args:
        scheme: ``"grad_norm"``, ``"loss"``, ``"last_layer"`` or ``"uniform"`` (above).
        alpha, power, weight_exponent, clip_weights: the sampler's (``clip_weights`` biases the estimator).
        refresh_every: ``1`` (the default, the paper's set-up): all ``N`` scores recomputed before every
            draw, O(N) per step; ``None``: a stale table that each batch's scores update after the step;
            ``k``: that, and all ``N`` rescored before every ``k``-th draw.
        score_batch_size: the batch of the rescoring passes.

    **Uniform p** (``scheme="uniform"`` or ``alpha=0``, :attr:`uniform`): every weight is 1 and nothing is
    scored; the batches are ERM's (a shuffled epoch from ``fit``'s generator), so with the same seed and
    initial model the run is :class:`dro_lab.ERM`'s, step for step: the fair baseline of the paper's Table 1.
    """

    sampler_cls = ImportanceSampler

    def __init__(
        self,
        scheme: str = "grad_norm",
        *,
        alpha: float = 0.5,
        power: float = 1.0,
        weight_exponent: float = 1.0,
        clip_weights: float | None = None,
        refresh_every: int | None = 1,
        score_batch_size: int = 256,
    ):
        self.options = dict(
            scheme=scheme,
            alpha=alpha,
            power=power,
            weight_exponent=weight_exponent,
            clip_weights=clip_weights,
            refresh_every=refresh_every,
        )
        # validate now: a throw-away sampler
        check = ImportanceSampler(
            1,
            1,
            device="cpu",
            generator=torch.Generator(),
            refresh_fn=(lambda: None) if refresh_every else None,
            scores_init=None,
            **self.options,
        )
        self.score_batch_size = check_int(score_batch_size, "score_batch_size")
        #: True when p = u (the uniform scheme, or α = 0): ERM's batches, weights 1, nothing scored.
        self.uniform = check.scheme == "uniform" or check.alpha == 0.0
        # p = u gives w = 1^e = 1, clipped to min(1, c)
        self._uniform_weight = min(1.0, check.clip_weights) if check.clip_weights is not None else 1.0
        tags = (
            [f"α={float(alpha):g}"]
            + ([f"power={power:g}"] if power != 1 else [])
            + ([f"w^{weight_exponent:g}"] if weight_exponent != 1 else [])
            + (["clipped"] if clip_weights else [])
            + (
                [f"refresh{refresh_every}"]
                if refresh_every not in (None, 1)
                else ["stale"]
                if refresh_every is None
                else []
            )
        )
        self.name = f"is-{scheme}({','.join(tags)})"

    def _scores(self, x: Tensor, y: Tensor) -> Tensor:
        scheme = self.options["scheme"]
        if scheme == "grad_norm":
            return per_sample_grad_norms(self.model, self.loss_fn, x, y)
        with torch.no_grad():
            logits = self.model(x.to(self.device))
            if scheme == "last_layer":  # forward only: ‖softmax(z) − e_y‖, the cross-entropy logit gradient
                return logit_grad_norms(logits, y.to(self.device))
            return self.loss_fn(logits, y.to(self.device))

    def all_scores(self) -> Tensor:
        """The scheme's scores of every training example at the current parameters, in index order.

        The pass a refresh makes: ``N`` examples through the model in chunks of ``score_batch_size``
        (forward and backward for ``"grad_norm"``, forward only otherwise). ``"uniform"`` has no scores:
        all ones, no pass. Needs :meth:`setup` (run through :func:`dro_lab.fit`).
        """
        if self.options["scheme"] == "uniform":
            return torch.ones(self.n, dtype=torch.float32, device=self.device)
        out = []
        for start in range(0, self.n, self.score_batch_size):
            x, y, _, _ = fetch_batch(self.train, torch.arange(start, min(start + self.score_batch_size, self.n)))
            out.append(self._scores(x, y).detach().float())
        return torch.cat(out)

    def setup(self, n: int, **context) -> None:
        super().setup(n, **context)
        self.loss_fn = self.loss_fn or per_sample_cross_entropy
        if self.uniform:  # p = u: ERM's batches from fit's generator, no sampler, no scores
            self.sampler = None
            self._saved = None
            return
        if self.model is None or self.train is None:
            raise ValueError("ImportanceSamplingStrategy needs the model and the training set (run it through fit)")
        self._attach(self.all_scores if self.options["refresh_every"] else None)

    def batches(self, epoch: int, batch_size: int) -> Iterator[Tensor]:
        if self.uniform:
            return Strategy.batches(self, epoch, batch_size)
        return super().batches(epoch, batch_size)

    def resume_batches(self, epoch: int, batch_size: int, consumed: int) -> Iterator[Tensor] | None:
        if self.uniform:  # ERM's epoch: fit replays its draws
            return None
        return super().resume_batches(epoch, batch_size, consumed)

    def load_state_dict(self, state: dict) -> None:
        if self.uniform and state["sampler"] is not None:
            raise ValueError(
                "this state holds an importance sampler's table, but this strategy samples uniformly "
                f"({self.name}: p = u) and keeps none; load it into a strategy with the saved options"
            )
        super().load_state_dict(state)

    def reduce(self, losses: Tensor, *, indices: Tensor, groups: Tensor | None) -> Tensor:
        if self.uniform:
            return losses.mean() if self._uniform_weight == 1.0 else (self._uniform_weight * losses).mean()
        return (self.sampler.weights(indices).to(losses.dtype) * losses).mean()

    def observe(self, indices: Tensor, losses: Tensor) -> None:
        if self.uniform or self.options["refresh_every"] == 1:  # the next draw rescores everything
            return
        if self.options["scheme"] == "loss":
            self.sampler.update(indices, losses)
        else:
            x, y, _, _ = fetch_batch(self.train, indices)
            self.sampler.update(indices, self._scores(x, y))

    def epoch_stats(self) -> dict:
        if self.uniform:  # the sampler's statistics of p = u, in closed form
            return {
                "sampler_alpha": float(self.options["alpha"]),
                "sampler_p_min": 1.0 / self.n,
                "sampler_p_max": 1.0 / self.n,
                "sampler_max_weight": self._uniform_weight,
                "sampler_ess": float(self.n),
                "sampler_variance_ratio": 1.0,
            }
        return {f"sampler_{k}": v for k, v in self.sampler.stats().items() if isinstance(v, (int, float))}
