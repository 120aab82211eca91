"""Timing and table helpers shared by every benchmark of ``dro-lab bench``.

Times are medians over repeats after a warm-up, and CUDA timings are synchronised. Where a
benchmark compares methods, :func:`paired_times` runs them alternately so that the load of a
shared machine hits all of them alike, and :func:`paired_ratio` takes the median of per-round
ratios. The ``_fmt_*`` helpers format the cells of the printed Markdown tables.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable, Iterator

import numpy as np
import torch


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine_info(device: torch.device) -> dict:
    """Versions, threads, CPU and device of this run (the ``machine`` entry of the JSON)."""
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "device": str(device),
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
        info["cudnn_benchmark"] = bool(torch.backends.cudnn.benchmark)
    return info


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_call(fn: Callable[[], object], device: torch.device, repeats: int, budget_s: float) -> float:
    """Median seconds of ``fn`` over up to ``repeats`` runs (fewer if ``budget_s`` runs out), after a warm-up."""
    fn()
    sync(device)
    times = []
    start_all = time.perf_counter()
    # At least `repeats` runs; fast cases keep going for 0.2 s so their median is not one noisy sample.
    while len(times) < repeats or (time.perf_counter() - start_all < 0.2 and len(times) < 1000):
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start_all > budget_s:
            break
    return statistics.median(times)


def quartiles(times: list[float]) -> tuple[float, float, float]:
    """(q1, median, q3) of a list of timings."""
    if len(times) < 2:
        return times[0], times[0], times[0]
    q1, med, q3 = statistics.quantiles(times, n=4, method="inclusive")
    return q1, med, q3


def endless(make: Callable[[], Iterator]) -> Iterator:
    """Chain ``make()``'s epochs for ever (a sampler's ``batches()`` ends at the end of an epoch)."""
    while True:
        yield from make()


def paired_times(
    fns: dict[str, Callable[[], object]], device: torch.device, rounds: int, budget_s: float, min_rounds: int = 2
) -> tuple[dict[str, list[float]], int]:
    """Time each of ``fns`` once per round, the order rotating between rounds (so load drifts hit all alike).

    One warm-up call each, then at least ``min_rounds`` and up to ``rounds`` rounds (fewer once
    ``budget_s`` is spent). Returns the per-method lists of seconds (aligned by round) and the round count.
    """
    names = list(fns)
    for name in names:
        fns[name]()
    sync(device)
    times = {name: [] for name in names}
    start = time.perf_counter()
    r = 0
    while r < max(rounds, min_rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        if r % 2:
            order = order[::-1]
        for name in order:
            sync(device)
            t0 = time.perf_counter()
            fns[name]()
            sync(device)
            times[name].append(time.perf_counter() - t0)
        r += 1
        if r >= min_rounds and time.perf_counter() - start > budget_s:
            break
    return times, r


def paired_ratio(num: list[float], den: list[float]) -> float:
    """Median of the per-round ratios ``num / den`` (robust to a shared machine's load drifts)."""
    return statistics.median(a / b for a, b in zip(num, den))


def fmt_s(s: float | None) -> str:
    """A duration in ms or s (the weights table)."""
    if s is None:
        return "—"
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def fmt_t(s: float | None) -> str:
    """A duration in µs, ms or s (the HWS tables: a sampler step spans µs to s)."""
    if s is None:
        return "—"
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def fmt_bytes(b: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b} B"
