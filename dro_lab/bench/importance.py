"""``is-run``: the wall time of one importance-sampled training run against uniform.

The analogue of the paper's Table 1 (Lahire 2023: 2.0–2.4×): 100 synthetic 1×28×28 images, 2
classes, ``SmallCNN``, batch 5, 300 SGD steps (lr 0.01, momentum 0.5) through :func:`dro_lab.fit`,
with exact p^GN refreshed every step, p^{1/2}, ``ImportanceSamplingStrategy("uniform")`` and ``ERM()``.
"""

from __future__ import annotations

import math
import statistics
import time

import torch

from ..data.datasets import ArrayDataset
from ..engine.loop import fit
from ..models import SmallCNN
from ..strategies.basic import ERM
from ..strategies.sampling import ImportanceSamplingStrategy
from .timing import fmt_t, paired_ratio, sync

#: is-run configurations: key -> label.
IS_RUN_CONFIGS = {
    "erm": "ERM() (uniform, shuffled)",
    "uniform": 'ImportanceSamplingStrategy("uniform")',
    "grad_norm": 'ImportanceSamplingStrategy("grad_norm", alpha=1.0): p^GN',
    "sqrt": 'ImportanceSamplingStrategy("grad_norm", alpha=0.5): p^{1/2}',
}


def _is_strategy(key: str):
    if key == "erm":
        return ERM()
    if key == "uniform":
        return ImportanceSamplingStrategy("uniform")
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


def _config_row(key: str, times: dict[str, list[float]], steps: int) -> dict:
    """One configuration's median run, per-step cost and ratios to uniform IS and to ERM (where they ran)."""
    med = {k: statistics.median(v) for k, v in times.items()}
    row = {
        "label": IS_RUN_CONFIGS[key],
        "run_s": med[key],
        "times_s": times[key],
        "steps": steps,
        "step_ms": 1e3 * med[key] / steps,
    }
    for ref in ("uniform", "erm"):
        if ref in times:
            row[f"ratio_vs_{ref}"] = med[key] / med[ref]
            row[f"paired_ratio_vs_{ref}"] = paired_ratio(times[key], times[ref])
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
    """Wall time of one importance-sampled training run against uniform (the paper's Table 1 analogue).

    The paper's set-up (Lahire 2023, §4 / App. F): ``n`` = 100 training images 1×28×28 with 2
    classes — here synthetic (standard-normal pixels, random labels: the cost does not depend on
    the images) — :class:`~dro_lab.models.SmallCNN`, batch 5, ``steps`` = 300 SGD steps (lr 0.01,
    momentum 0.5), through :func:`dro_lab.fit` (no evaluation, no progress bar). Configurations:
    ``erm`` (:class:`~dro_lab.ERM`), ``uniform`` (``ImportanceSamplingStrategy("uniform")``),
    ``grad_norm`` (exact p^GN, ``alpha=1.0``, all ``n`` scores refreshed before every step) and
    ``sqrt`` (p^{1/2}, ``alpha=0.5``). Each run starts from the same initialisation; the runs go
    round-robin (config order rotating between rounds) so that the load of a shared machine hits
    all alike. ``ratio_vs_uniform`` / ``ratio_vs_erm``: ratio of medians; ``paired_ratio_*``:
    median of the per-round ratios.
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
        "model": "SmallCNN(2 classes)",
        "data": "synthetic 1×28×28, random labels",
        "configs": {key: _config_row(key, times, done_steps[key]) for key in configs},
    }


IS_RUN_HEAD = (
    "| strategy | run (median) | per step | runs (s) | / uniform IS (paired) | / ERM (paired) |\n"
    "|---|---:|---:|---|---:|---:|"
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
            f"| {c['label']} | {fmt_t(c['run_s'])} | {c['step_ms']:.3g} ms "
            f"| {', '.join(f'{t:.2f}' for t in c['times_s'])} | {ratio('uniform')} | {ratio('erm')} |"
        )
    return lines
