"""``hws-step`` and ``hws-draw``: the cost of hardness-weighted sampling (Fidon et al.) next to plain SGD.

* ``hws-step`` — the training-step overhead: one model (``DigitsCNN(image_size=28)``, or ``--hws-model``),
  n = 60 000 synthetic 1×28×28 images, batch 128, SGD, stepped alternately with uniform batches and with
  :class:`~dro_lab.HardnessWeightedSampler` in its DRO phase: the ratio of the median step times, and the
  sampler's own share of the step.
* ``hws-draw`` — one sampler step (draw b = 128, write b losses back) for n = 10³…10⁷ in each draw mode
  (and ``"auto"``), against the authors' approach (:func:`official_draw` / :func:`official_update`: numpy
  ``choice`` from the floored distribution, a Python loop writing the history), and each mode's memory.

The ``official_*`` functions re-implement the authors' published sampler as this benchmark's
baseline; the tests check that they sample the library's distribution and write the same history.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from ..models import make_model
from ..samplers.hardness import HardnessWeightedSampler
from .timing import endless, fmt_bytes, fmt_t, quartiles, sync, time_call

#: Models for 1×28×28 inputs and 10 classes (hws-step and also-step): key -> label.
HWS_MODELS = {"digits_cnn": "DigitsCNN(image_size=28)", "small_cnn": "SmallCNN(image_size=28)"}


# --------------------------------------------------------------------------- the authors' approach


def official_probabilities(weights: torch.Tensor, beta: float) -> np.ndarray:
    """The authors' sampling distribution: ``log_softmax(β·w).exp()`` of a CPU tensor, in numpy,
    floored at ``1e-4 / n`` and renormalised (their ``WeightedSampler.draw_samples``)."""
    n = weights.numel()
    eps = 0.0001 / n
    p = F.log_softmax(beta * weights, dim=0).exp().numpy()
    p[p <= eps] = eps
    p /= p.sum()
    return p


def official_draw(
    weights: torch.Tensor, beta: float, batch_size: int, rng: np.random.RandomState, replace: bool = False
) -> list[int]:
    """The authors' draw: numpy ``choice`` from :func:`official_probabilities` (``replace=False``, as their
    code does; ``replace=True`` draws i.i.d., which is what Algorithm 1 and dro_lab do)."""
    p = official_probabilities(weights, beta)
    return rng.choice(weights.numel(), batch_size, p=p, replace=replace).tolist()


def official_update(weights: torch.Tensor, indices, losses: torch.Tensor, momentum: float = 0.0) -> None:
    """The authors' history update: a Python loop over the batch, ``w[i] = m·w[i] + (1 − m)·ℓ``, on the host."""
    losses = losses.detach().cpu()  # the fresh losses come from the model's device
    for i, new in zip(indices, losses):
        weights[i] = momentum * weights[i] + (1.0 - momentum) * new


# --------------------------------------------------------------------------- hws-step


def _train_step(model, opt, x, y, idx):
    losses = F.cross_entropy(model(x[idx]), y[idx], reduction="none")
    opt.zero_grad(set_to_none=True)
    losses.mean().backward()
    opt.step()
    return losses.detach()


def _sampler_state_bytes(sampler: HardnessWeightedSampler) -> int:
    """History (float32) + last-update iterations (int32, the ages) + per-epoch draw counts (int32), and with
    ``draw="tree"`` the float64 sum tree (its stored levels, the top level and the top's cumsum)."""
    tensors = [sampler.history, sampler.last_update, sampler._counts, *sampler._tree.tensors()]
    return sum(t.element_size() * t.numel() for t in tensors)


class _StepRig:
    """One model, SGD, an in-memory synthetic data set and a sampler: a training step with either batch source."""

    def __init__(self, *, n: int, batch_size: int, beta: float, lr: float, model: str, device: torch.device, seed: int):
        torch.manual_seed(seed)
        self.model_name, self.n, self.b, self.lr, self.device = model, n, batch_size, lr, device
        self.model = make_model(model, in_shape=(1, 28, 28), num_classes=10).to(device)
        self.model.train()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr)
        self.gen = torch.Generator(device=device).manual_seed(seed)
        self.x = torch.randn(n, 1, 28, 28, generator=self.gen, device=device)
        self.y = torch.randint(0, 10, (n,), generator=self.gen, device=device)
        # The history starts at synthetic losses around ln 10, the untrained model's.
        history0 = (math.log(10) + 0.25 * torch.randn(n, generator=torch.Generator().manual_seed(seed + 1))).clamp_min(
            0
        )
        self.sampler = HardnessWeightedSampler(
            n,
            batch_size,
            beta=beta,
            warm_start=False,
            history_init=history0,
            device=device,
            draw="multinomial",  # the parts timed alone are softmax and multinomial (auto's pick below 2¹⁶)
            generator=torch.Generator(device=device).manual_seed(seed + 2),
        )
        self.uniform_batches = endless(self._permutation)
        self.hws_batches = endless(self.sampler.batches)
        self.segments = []  # (draw, update) seconds inside each HWS step: exact on a CPU, where every op is synchronous

    def _permutation(self):
        perm = torch.randperm(self.n, generator=self.gen, device=self.device)
        for start in range(0, self.n - self.b + 1, self.b):  # full batches only: every step the same size
            yield perm[start : start + self.b]

    def train_step(self, idx: torch.Tensor) -> torch.Tensor:
        return _train_step(self.model, self.opt, self.x, self.y, idx)

    def uniform_step(self) -> None:
        self.train_step(next(self.uniform_batches))

    def hws_step(self) -> None:
        t0 = time.perf_counter()
        idx = next(self.hws_batches)
        t1 = time.perf_counter()
        losses = self.train_step(idx)
        t2 = time.perf_counter()
        self.sampler.update(idx, losses)
        self.segments.append((t1 - t0, time.perf_counter() - t2))

    def timed(self, step: Callable[[], None]) -> float:
        t0 = time.perf_counter()
        step()
        sync(self.device)
        return time.perf_counter() - t0


def _alternate(rig: _StepRig, steps: int, block: int) -> tuple[list[float], list[float]]:
    """``steps`` timed steps of each mode in blocks of ``block``, ABBA order: (uniform times, HWS times)."""
    uni_times, hws_times = [], []
    flip = False
    while len(uni_times) < steps:
        k = min(block, steps - len(uni_times))
        if flip:  # ABBA: every other block runs HWS first, so neither mode always follows the other
            hws_times += [rig.timed(rig.hws_step) for _ in range(k)]
        uni_times += [rig.timed(rig.uniform_step) for _ in range(k)]
        if not flip:
            hws_times += [rig.timed(rig.hws_step) for _ in range(k)]
        flip = not flip
    return uni_times, hws_times


def _sampler_alone(rig: _StepRig, steps: int, repeats: int, budget_s: float) -> dict:
    """The sampler's own costs on the rig's state, synchronised: draw, update, softmax, multinomial, gather."""
    sampler, device = rig.sampler, rig.device
    # A draw needs the previous batch's update first (max_pending=0).
    fresh = rig.train_step(next(rig.uniform_batches))  # b real losses, written back at every draw
    draw_times, update_times = [], []
    for _ in range(max(steps, 20)):
        t0 = time.perf_counter()
        idx = next(rig.hws_batches)
        sync(device)
        t1 = time.perf_counter()
        sampler.update(idx, fresh)
        sync(device)
        draw_times.append(t1 - t0)
        update_times.append(time.perf_counter() - t1)

    def softmax():
        sampler.beta = sampler.beta  # assigning β invalidates the cached q, as an update does
        sampler.probabilities()

    softmax_s = time_call(softmax, device, repeats, budget_s)
    q = sampler.probabilities()
    multinomial_s = time_call(
        lambda: torch.multinomial(q, rig.b, replacement=True, generator=sampler.generator), device, repeats, budget_s
    )
    idx = next(rig.hws_batches)
    gather_s = time_call(lambda: (rig.x[idx], rig.y[idx]), device, repeats, budget_s)
    sampler.update(idx, fresh)
    return {
        "draw_s": statistics.median(draw_times),
        "update_s": statistics.median(update_times),
        "softmax_s": softmax_s,
        "multinomial_s": multinomial_s,
        "gather_s": gather_s,
    }


def _hws_step_result(
    rig: _StepRig, uni_times: list[float], hws_times: list[float], alone: dict, *, beta: float, steps: int, warmup: int
) -> dict:
    uq1, uni, uq3 = quartiles(uni_times)
    hq1, hws, hq3 = quartiles(hws_times)
    draw_s, update_s = alone["draw_s"], alone["update_s"]
    # On CUDA the segments would time kernel launches (and update's host read would absorb the step), so only a CPU
    # reports them; the isolated draw / update timings are synchronised everywhere.
    on_cpu = rig.device.type == "cpu"
    in_draw = statistics.median(d for d, _ in rig.segments) if on_cpu else None
    in_update = statistics.median(u for _, u in rig.segments) if on_cpu else None
    return {
        "benchmark": "hws_step",
        "model": HWS_MODELS[rig.model_name],
        "parameters": sum(p.numel() for p in rig.model.parameters()),
        "input_shape": [1, 28, 28],
        "data": "synthetic in-memory (randn images, random labels)",
        "optimizer": f"SGD(lr={rig.lr:g})",
        "n": rig.n,
        "batch_size": rig.b,
        "beta": beta,
        "divergence": "kl",
        "steps": steps,
        "warmup": warmup,
        "uniform_step_s": uni,
        "uniform_step_iqr_s": [uq1, uq3],
        "hws_step_s": hws,
        "hws_step_iqr_s": [hq1, hq3],
        "ratio": hws / uni,
        "paired_ratio": statistics.median(h / u for h, u in zip(hws_times, uni_times)),
        # Interquartile range over median: above ~0.25 the machine's load moved during the run.
        "spread": max((uq3 - uq1) / uni, (hq3 - hq1) / hws),
        **alone,
        "draw_pct": 100 * draw_s / hws,
        "update_pct": 100 * update_s / hws,
        "sampler_pct": 100 * (draw_s + update_s) / hws,
        "sampler_pct_of_uniform_step": 100 * (draw_s + update_s) / uni,
        "in_step_draw_s": in_draw,
        "in_step_update_s": in_update,
        "in_step_sampler_pct": None if in_draw is None else 100 * (in_draw + in_update) / hws,
        "sampler_state_bytes": _sampler_state_bytes(rig.sampler),
    }


def bench_hws_step(
    *,
    n: int = 60_000,
    batch_size: int = 128,
    beta: float = 10.0,
    steps: int = 100,
    warmup: int = 10,
    block: int = 1,
    lr: float = 0.01,
    model: str = "digits_cnn",
    device: torch.device,
    repeats: int = 5,
    budget_s: float = 20.0,
    seed: int = 0,
) -> dict:
    """Median time of a training step with uniform batches and with hardness-weighted sampling.

    Both modes step one model for 1×28×28 inputs (``model``: ``"digits_cnn"``, the HWS experiment's
    model class, or ``"small_cnn"``, the model of its gpu preset) with SGD (lr 0.01, no momentum:
    the paper's optimiser) on the same in-memory synthetic data, on ``device``, alternating (blocks of
    ``block`` steps, default 1, in ABBA order) so that drifts of a shared machine hit both alike.
    ``ratio`` is the ratio of the two medians; ``paired_ratio`` the median of the ratios of
    neighbouring steps (more robust when the machine's load drifts). Uniform: slices of a
    ``randperm`` (full batches). HWS: ``sampler.batches()`` in the DRO phase (no warm start; the
    history starts at synthetic losses around ln 10, the untrained model's), gather,
    forward/backward/step, ``sampler.update``. Each step is timed on its own (synchronised).
    On a CPU the draw and the update are also timed inside each HWS step (``in_step_*``: cold
    caches after the backward pass, as in training). The sampler's cost is then timed alone on the
    same state (synchronised, any device): draw (q recomputed because the history changed,
    multinomial, counts), update, and the softmax and multinomial parts.
    """
    if model not in HWS_MODELS:
        raise ValueError(f"model must be one of {sorted(HWS_MODELS)}, got {model!r}")
    if n < batch_size:
        raise ValueError(f"hws-step needs n ≥ batch_size, got n={n}, batch_size={batch_size}")
    rig = _StepRig(n=n, batch_size=batch_size, beta=beta, lr=lr, model=model, device=device, seed=seed)
    for _ in range(warmup):
        rig.uniform_step()
        rig.hws_step()
    sync(device)
    rig.segments.clear()
    uni_times, hws_times = _alternate(rig, steps, block)
    alone = _sampler_alone(rig, steps, repeats, budget_s)
    return _hws_step_result(rig, uni_times, hws_times, alone, beta=beta, steps=steps, warmup=warmup)


#: The hws-step table's head (Markdown): :func:`format_hws_step` writes its row.
HWS_STEP_HEAD = (
    "| model, data | n | batch | uniform step | HWS step | HWS / uniform (paired) "
    "| sampler inside the HWS step: draw + update (share) "
    "| sampler alone: softmax, multinomial, update |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|"
)


def format_hws_step(r: dict) -> str:
    """The hws-step table's row."""
    if r.get("in_step_draw_s") is not None:
        inside = (
            f"{fmt_t(r['in_step_draw_s'] + r['in_step_update_s'])}: {fmt_t(r['in_step_draw_s'])} + "
            f"{fmt_t(r['in_step_update_s'])} ({r['in_step_sampler_pct']:.1f} %)"
        )
    else:
        inside = "— (not separable on CUDA)"
    return (
        f"| {r['model']}, {'×'.join(map(str, r['input_shape']))} | {r['n']:,} | {r['batch_size']} "
        f"| {fmt_t(r['uniform_step_s'])} | {fmt_t(r['hws_step_s'])} "
        f"| {r['ratio']:.3f}× ({r['paired_ratio']:.3f}×) | {inside} "
        f"| {fmt_t(r['softmax_s'])}, {fmt_t(r['multinomial_s'])}, {fmt_t(r['update_s'])} "
        f"({r['sampler_pct']:.1f} % with the draw's bookkeeping) |"
    )


# --------------------------------------------------------------------------- hws-draw


def _time_draw_mode(
    mode: str, history0, fresh_dev, *, b: int, beta: float, device, repeats: int, budget_s: float, seed: int
) -> tuple[float, HardnessWeightedSampler]:
    """One sampler step with ``draw=mode``: (median seconds, the sampler after the timing).

    The tree's one O(n) build happens in :func:`time_call`'s untimed warm-up call.
    """
    n = history0.numel()
    sampler = HardnessWeightedSampler(
        n,
        b,
        beta=beta,
        warm_start=False,
        history_init=history0.to(device),
        device=device,
        draw=mode,
        generator=torch.Generator(device=device).manual_seed(seed + n),
    )
    it = endless(sampler.batches)

    def ours():
        sampler.update(next(it), fresh_dev)

    return time_call(ours, device, repeats, budget_s), sampler


def _time_draw_modes(history0, fresh_dev, **kw) -> tuple[dict, dict, int, int]:
    """Both draw modes and ``"auto"``: (seconds per mode, state bytes per mode, q's bytes, tree rebuilds).

    ``state["auto_took"]`` is the mode auto picked. Each sampler is dropped before the next is built, so
    the device holds one at a time.
    """
    times, state = {}, {}
    for mode in ("multinomial", "tree", "auto"):
        times[mode], sampler = _time_draw_mode(mode, history0, fresh_dev, **kw)
        state[mode] = _sampler_state_bytes(sampler)
        if mode == "multinomial":
            q_bytes = sampler.probabilities().element_size() * history0.numel()
        elif mode == "tree":
            rebuilds = sampler.tree_rebuilds
        else:
            state["auto_took"] = sampler.draw_mode
        del sampler
    return times, state, q_bytes, rebuilds


def _baseline_skipped(n: int, b: int, last: tuple[int, float] | None, baseline_max_s: float) -> str | None:
    """Why the official baseline is not run at this n (``None``: run it); ``last`` is its last (n, seconds)."""
    predicted = None if last is None else last[1] * n / last[0]
    if n < b:
        return f"n < b: cannot draw {b} distinct indices"
    if predicted is not None and (predicted > baseline_max_s or last[1] > baseline_max_s):
        return f"predicted {predicted:.2g} s per step > {baseline_max_s:g} s"
    return None


def _time_official(history0, fresh_dev, *, b: int, beta: float, repeats: int, budget_s: float, seed: int) -> float:
    """One step of the authors' approach on a CPU float32 history: :func:`official_draw`, :func:`official_update`."""
    weights = history0.clone()
    rng = np.random.RandomState(seed)

    def theirs():
        official_update(weights, official_draw(weights, beta, b, rng), fresh_dev)

    return time_call(theirs, torch.device("cpu"), min(repeats, 3), budget_s)


def _draw_row(
    n: int, b: int, beta: float, times: dict, state: dict, q_bytes: int, rebuilds: int, history0: torch.Tensor
) -> dict:
    ours_s, tree_s = times["multinomial"], times["tree"]
    return {
        "benchmark": "hws_draw",
        "n": n,
        "batch_size": b,
        "beta": beta,
        "divergence": "kl",
        "ours_s": ours_s,
        "ours_mode": "with replacement (torch.multinomial), q recomputed every step",
        "tree_s": tree_s,
        "tree_mode": "with replacement (draw='tree': sum tree, O(b log n) per step)",
        "tree_over_ours": ours_s / tree_s,
        "tree_rebuilds": rebuilds,
        "auto_s": times["auto"],
        "auto_took": state["auto_took"],
        "baseline_s": None,
        "speedup": None,
        "tree_speedup": None,
        "auto_speedup": None,
        "baseline_skipped": None,
        "baseline_mode": "without replacement (numpy RandomState.choice, replace=False), host",
        "state_bytes": state["multinomial"],
        "tree_state_bytes": state["tree"],
        "q_bytes": q_bytes,
        "baseline_state_bytes": history0.element_size() * n,
    }


def bench_hws_draw(
    sizes,
    *,
    batch_size: int = 128,
    beta: float = 10.0,
    device: torch.device,
    repeats: int,
    budget_s: float,
    baseline_max_s: float = 1.0,
    seed: int = 0,
    on_row: Callable[[dict], None] | None = None,
) -> list[dict]:
    """One sampler step (q from the changed history, draw b, write b losses back) against the authors' approach.

    Ours, three columns: ``next(sampler.batches())`` then ``sampler.update`` on ``device``, with
    ``draw="multinomial"`` (softmax, multinomial with replacement, scatter: O(n) per step), with
    ``draw="tree"`` (the sum tree: b descents and b leaf-to-top rewrites, O(b log n) per step; its one
    O(n) build happens in the untimed warm-up call) and with the default ``draw="auto"`` (its own
    sampler, timed the same way; ``auto_took`` says which mode it picked). Baseline: :func:`official_draw`
    (without replacement, as their code) and :func:`official_update` on a CPU float32 history, whatever
    ``device`` is. The synthetic history is
    uniform on [0, 3) (β = 10 puts most mass on the top few per cent), the written losses a fixed
    batch from the same range. The baseline runs while its step is predicted (linearly in n from
    the last measured one) to stay under ``baseline_max_s``; larger n are marked skipped.
    """
    gen = torch.Generator().manual_seed(seed)
    b = batch_size
    rows, last = [], None  # last: (n, seconds) of the baseline's last measured step
    for n in sizes:
        history0 = torch.rand(n, generator=gen) * 3
        fresh = torch.rand(b, generator=gen) * 3
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device)
            before = torch.cuda.memory_allocated(device)
        fresh_dev = fresh.to(device)
        measured = _time_draw_modes(
            history0, fresh_dev, b=b, beta=beta, device=device, repeats=repeats, budget_s=budget_s, seed=seed
        )
        row = _draw_row(n, b, beta, *measured, history0)
        if device.type == "cuda":
            row["cuda_peak_bytes"] = torch.cuda.max_memory_allocated(device) - before
        row["baseline_skipped"] = _baseline_skipped(n, b, last, baseline_max_s)
        if row["baseline_skipped"] is None:
            theirs_s = _time_official(
                history0, fresh_dev, b=b, beta=beta, repeats=repeats, budget_s=budget_s, seed=seed
            )
            row.update(
                baseline_s=theirs_s,
                speedup=theirs_s / row["ours_s"],
                tree_speedup=theirs_s / row["tree_s"],
                auto_speedup=theirs_s / row["auto_s"],
            )
            last = (n, theirs_s)
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


#: The hws-draw table's head (Markdown): :func:`format_hws_draw` writes its rows.
HWS_DRAW_HEAD = (
    "| n | dro_lab sampler, draw='multinomial' (device; O(n); with replacement) "
    "| official approach (host numpy; without replacement) | speed-up "
    "| dro_lab, draw='tree' (O(b log n); with replacement) | speed-up "
    "| dro_lab, draw='auto' (the default: the mode it took) | speed-up "
    "| state: multinomial (history + ages + counts) | state: tree (+ float64 sum tree) |\n"
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def format_hws_draw(r: dict) -> str:
    """One row of the hws-draw table."""
    base = fmt_t(r["baseline_s"]) if r["baseline_s"] is not None else f"skipped: {r['baseline_skipped']}"

    def speed(x):
        return f"{x:.3g}×" if x else "—"

    return (
        f"| {r['n']:.0e} | {fmt_t(r['ours_s'])} | {base} | {speed(r['speedup'])} "
        f"| {fmt_t(r['tree_s'])} | {speed(r['tree_speedup'])} "
        f"| {fmt_t(r['auto_s'])} ({r['auto_took']}) | {speed(r['auto_speedup'])} "
        f"| {fmt_bytes(r['state_bytes'])} | {fmt_bytes(r['tree_state_bytes'])} |"
    )
