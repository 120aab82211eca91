"""``is-run``: the wall time of one importance-sampled training run against plain SGD and a scoring baseline.

The analogue of the paper's Table 1 (Lahire 2023: 2.0–2.4×): 100 synthetic 1×28×28 images, 2
classes, ``SmallCNN``, batch 5, 300 SGD steps (lr 0.01, momentum 0.5) through :func:`dro_lab.fit`,
with exact p^GN refreshed every step and p^{1/2}, against ``ERM()`` (plain SGD, nothing scored),
``ImportanceSamplingStrategy("uniform")`` (p = u: the same run as ERM) and two baselines that draw ERM's
uniform batches but also make a scoring pass over the whole training set before every step
(:class:`ScoredUniformStrategy`): forward-only losses (an evaluating uniform run) and p^GN's own
per-sample gradient norms.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Iterator

import torch
from torch import Tensor

from ..data.datasets import ArrayDataset
from ..engine.loop import fit
from ..engine.strategy import Strategy
from ..models import SmallCNN
from ..strategies.basic import ERM
from ..strategies.sampling import ImportanceSamplingStrategy
from .timing import fmt_t, paired_ratio, sync

#: is-run configurations: key -> label.
IS_RUN_CONFIGS = {
    "erm": "ERM(): plain SGD, nothing scored",
    "uniform": 'ImportanceSamplingStrategy("uniform"): p = u, nothing scored',
    "uniform_eval": "uniform + a forward pass (losses) over all n before every step",
    "uniform_gn": "uniform + p^GN's scoring pass (per-sample gradient norms of all n) before every step",
    "grad_norm": 'ImportanceSamplingStrategy("grad_norm", alpha=1.0): p^GN',
    "sqrt": 'ImportanceSamplingStrategy("grad_norm", alpha=0.5): p^{1/2}',
}

#: The two references every configuration's ratio is taken against: plain SGD and the evaluating baseline.
IS_RUN_REFERENCES = ("erm", "uniform_eval")


class ScoredUniformStrategy(Strategy):
    """A benchmark baseline: ERM's batches and mean loss, after a scoring pass over the whole training set before
    every step whose scores are thrown away.

    ``scheme="loss"``: a forward pass of all ``n`` examples (what ``ImportanceSamplingStrategy("uniform")`` made
    before every step until it stopped scoring, and what a uniform run that evaluates the training set every
    step costs); ``scheme="grad_norm"``: the per-sample gradient norms p^GN computes (forward and backward).
    The run is ERM's, step for step; only its time differs.
    """

    def __init__(self, scheme: str = "loss"):
        self.scorer = ImportanceSamplingStrategy(scheme, alpha=1.0)
        self.name = f"uniform+{scheme}-pass"

    def setup(self, n: int, **context) -> None:
        super().setup(n, **context)
        self.scorer.setup(n, **context)  # its sampler has its own generator: fit's draws stay ERM's

    def batches(self, epoch: int, batch_size: int) -> Iterator[Tensor]:
        for idx in super().batches(epoch, batch_size):
            self.scorer.all_scores()
            yield idx


def _is_strategy(key: str) -> Strategy:
    if key == "erm":
        return ERM()
    if key == "uniform":
        return ImportanceSamplingStrategy("uniform")
    if key in ("uniform_eval", "uniform_gn"):
        return ScoredUniformStrategy("loss" if key == "uniform_eval" else "grad_norm")
    return ImportanceSamplingStrategy("grad_norm", alpha=1.0 if key == "grad_norm" else 0.5)


def _round_robin_runs(one_run, configs: list[str], runs: int) -> tuple[dict[str, list[float]], dict[str, int]]:
    """``runs`` rounds of one run per configuration, the order rotating (and reversed every other round)."""
    times = {k: [] for k in configs}
    done_steps = {}
    for r in range(runs):
        order = configs[r % len(configs) :] + configs[: r % len(configs)]
        for key in order[::-1] if r % 2 else order:
            t, s = one_run(key)
            times[key].append(t)
            done_steps[key] = s
    return times, done_steps


def _config_row(key: str, times: dict[str, list[float]], steps: int, epochs: int) -> dict:
    """One configuration's median run, its cost per epoch and per step, and its ratios to the references that ran."""
    med = {k: statistics.median(v) for k, v in times.items()}
    row = {
        "label": IS_RUN_CONFIGS[key],
        "run_s": med[key],
        "fastest_s": min(times[key]),
        "times_s": times[key],
        "steps": steps,
        "epoch_s": med[key] / epochs,
        "step_ms": 1e3 * med[key] / steps,
    }
    for ref in IS_RUN_REFERENCES:
        if ref in times:
            row[f"ratio_vs_{ref}"] = med[key] / med[ref]
            row[f"paired_ratio_vs_{ref}"] = paired_ratio(times[key], times[ref])
            row[f"fastest_ratio_vs_{ref}"] = min(times[key]) / min(times[ref])
    return row


def bench_is_run(
    *,
    n: int = 100,
    steps: int = 300,
    batch_size: int = 5,
    lr: float = 0.01,
    momentum: float = 0.5,
    runs: int = 3,
    configs=tuple(IS_RUN_CONFIGS),
    device: torch.device,
    seed: int = 0,
) -> dict:
    """Wall time of one importance-sampled training run against plain SGD and a scoring baseline (Table 1's analogue).

    The paper's set-up (Lahire 2023, §4 / App. F): ``n`` = 100 training images 1×28×28 with 2
    classes — here synthetic (standard-normal pixels, random labels: the cost does not depend on
    the images) — :class:`~dro_lab.models.SmallCNN`, batch 5, ``steps`` = 300 SGD steps (lr 0.01,
    momentum 0.5), through :func:`dro_lab.fit` (no evaluation, no progress bar). Configurations
    (:data:`IS_RUN_CONFIGS`): ``erm`` (:class:`~dro_lab.ERM`, plain SGD), ``uniform``
    (``ImportanceSamplingStrategy("uniform")``, the same run), ``uniform_eval`` and ``uniform_gn``
    (:class:`ScoredUniformStrategy`: ERM plus a pass of forward-only losses, or of p^GN's per-sample
    gradient norms, over all ``n`` before every step), ``grad_norm`` (exact p^GN, ``alpha=1.0``, all
    ``n`` scores refreshed before every step) and ``sqrt`` (p^{1/2}, ``alpha=0.5``). Each run starts
    from the same initialisation; the runs go round-robin (config order rotating between rounds) so
    that the load of a shared machine hits all alike. ``ratio_vs_erm`` / ``ratio_vs_uniform_eval``:
    ratio of medians; ``paired_ratio_*``: median of the per-round ratios; ``fastest_ratio_*``: ratio of
    the fastest runs (the least disturbed by other jobs on a shared machine). ``threads``: torch's CPU
    threads during the runs.
    """
    steps_per_epoch = math.ceil(n / batch_size)
    epochs = max(1, math.ceil(steps / steps_per_epoch))
    gen = torch.Generator().manual_seed(seed)
    train = ArrayDataset(
        torch.randn(n, 1, 28, 28, generator=gen), torch.randint(0, 2, (n,), generator=gen), num_classes=2
    )
    torch.manual_seed(seed)
    init = SmallCNN(num_classes=2, in_channels=1, image_size=28).state_dict()
    kw = {"batch_size": batch_size, "lr": lr, "momentum": momentum, "device": device, "seed": seed, "progress": False}

    def one_run(key):
        model = SmallCNN(num_classes=2, in_channels=1, image_size=28)
        model.load_state_dict(init)
        sync(device)
        t0 = time.perf_counter()
        hist = fit(model, train, strategy=_is_strategy(key), epochs=epochs, optimizer="sgd", **kw)
        sync(device)
        return time.perf_counter() - t0, sum(hist["steps"])

    configs = list(configs)
    for key in configs:  # warm-up (imports, first-call costs), short
        fit(SmallCNN(num_classes=2), train, strategy=_is_strategy(key), epochs=1, **kw)
    times, done_steps = _round_robin_runs(one_run, configs, runs)
    return {
        "benchmark": "is-run",
        "n": n,
        "steps": steps,
        "epochs": epochs,
        "batch_size": batch_size,
        "lr": lr,
        "momentum": momentum,
        "runs": runs,
        "threads": torch.get_num_threads(),
        "model": "SmallCNN(2 classes)",
        "data": "synthetic 1×28×28, random labels",
        "configs": {key: _config_row(key, times, done_steps[key], epochs) for key in configs},
    }


#: The is-run table's head (Markdown): :func:`format_is_run` writes its rows.
IS_RUN_HEAD = (
    "| strategy | run (median) | per epoch | per step | runs (s) | / ERM (paired) | / uniform + eval (paired) |\n"
    "|---|---:|---:|---:|---|---:|---:|"
)


def format_is_run(r: dict) -> list[str]:
    """The is-run table's rows, one per configuration."""
    lines = []
    for c in r["configs"].values():

        def ratio(ref, c=c):
            if f"ratio_vs_{ref}" not in c:
                return "—"
            return f"{c[f'ratio_vs_{ref}']:.2f}× ({c[f'paired_ratio_vs_{ref}']:.2f}×)"

        lines.append(
            f"| {c['label']} | {fmt_t(c['run_s'])} | {fmt_t(c['epoch_s'])} | {c['step_ms']:.3g} ms "
            f"| {', '.join(f'{t:.2f}' for t in c['times_s'])} | {ratio('erm')} | {ratio('uniform_eval')} |"
        )
    return lines


def is_run_summary(r: dict) -> str | None:
    """One line: p^GN's cost as ratios to plain SGD and to the evaluating baseline (``None`` if either did not run)."""
    c = r["configs"]
    if not {"grad_norm", *IS_RUN_REFERENCES} <= set(c):
        return None
    gn = c["grad_norm"]
    return (
        f"p^GN costs {gn['paired_ratio_vs_erm']:.2f}× plain SGD (ERM) and {gn['paired_ratio_vs_uniform_eval']:.2f}× "
        f"a uniform run that evaluates all n = {r['n']} examples before every step (paired ratios; between the "
        f"fastest runs {gn['fastest_ratio_vs_erm']:.2f}× and {gn['fastest_ratio_vs_uniform_eval']:.2f}×; "
        f"torch threads: {r['threads']}; the paper's Table 1: 2.0–2.4×)"
    )
