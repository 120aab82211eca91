"""``also-step``: ALSO's training step against Adam's for c groups.

The ALSO paper (App. C.1) says the π update is negligible next to the model's step; this times one
step of Adam, of ALSO (optimistic) and of ALSO (descent–ascent) round-robin for c = 10, 10⁴, 10⁶ groups,
then ALSO's parts alone: forward + backward, the θ update and the π update.
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F

from ..models import make_model
from ..optim.also import ALSO
from .hws import HWS_MODELS
from .timing import fmt_bytes, fmt_t, paired_ratio, paired_times, sync

#: also-step configurations: key -> label.
ALSO_CONFIGS = {
    "adam": "Adam (mean loss)",
    "also": "ALSO (optimistic, α = 1)",
    "also_da": "ALSO (descent–ascent, α = 0)",
}


def _optimizers(model: str, init: dict, c: int, device: torch.device) -> tuple[dict, dict]:
    """One network per configuration, all from ``init``, and its optimizer: (nets, optimizers)."""
    nets, opts = {}, {}
    for key in ALSO_CONFIGS:
        nets[key] = make_model(model, in_shape=(1, 28, 28), num_classes=10).to(device)
        nets[key].load_state_dict(init)
        nets[key].train()
        params = nets[key].parameters()
        opts[key] = (
            torch.optim.Adam(params, lr=1e-3)
            if key == "adam"
            else ALSO(params, n_groups=c, lr=1e-3, pi_lr=1e-3, tau=1e-2, alpha=1.0 if key == "also" else 0.0)
        )
    return nets, opts


def _also_parts(net, opt, x, y, g, *, rounds: int, device: torch.device) -> dict[str, float]:
    """ALSO's step in parts, each timed alone on the same state: forward+backward, θ update, π update (medians)."""
    parts = {"fwd_bwd": [], "theta": [], "pi": []}
    for _ in range(max(3, min(rounds, 20))):
        sync(device)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        opt.weighted_loss(F.cross_entropy(net(x), y, reduction="none"), g).backward()
        sync(device)
        t1 = time.perf_counter()
        with torch.no_grad():
            opt._adam(opt._optimistic(opt._grads()))
        sync(device)
        t2 = time.perf_counter()
        with torch.no_grad():
            g_pi = opt._take_pi_grad()
            opt._pi_update(g_pi + opt.alpha * (g_pi - (opt.prev_pi_grad if opt.prev_pi_grad is not None else g_pi)))
        sync(device)
        t3 = time.perf_counter()
        for k, v in zip(parts, (t1 - t0, t2 - t1, t3 - t2)):
            parts[k].append(v)
    return {f"part_{k}_s": statistics.median(v) for k, v in parts.items()}


def _also_row(c: int, batch_size: int, model: str, rounds: int, times: dict, parts: dict) -> dict:
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "groups": c,
        "batch_size": batch_size,
        "model": HWS_MODELS[model],
        "rounds": rounds,
        **{f"{k}_s": med[k] for k in ALSO_CONFIGS},
        "also_over_adam": med["also"] / med["adam"],
        "paired_also_over_adam": paired_ratio(times["also"], times["adam"]),
        "also_da_over_adam": med["also_da"] / med["adam"],
        "paired_also_da_over_adam": paired_ratio(times["also_da"], times["adam"]),
        **parts,
        "pi_state_bytes": 3 * 8 * c,
    }


def bench_also_step(
    groups=(10, 10_000, 1_000_000),
    *,
    batch_size: int = 128,
    model: str = "digits_cnn",
    steps: int = 50,
    device: torch.device,
    budget_s: float = 20.0,
    seed: int = 0,
) -> list[dict]:
    r"""ALSO's step against Adam's for c groups (the paper's appendix C.1: "the π update is negligible").

    One model for 1×28×28 inputs (``model`` as in hws-step), a fixed synthetic batch of
    ``batch_size`` with random group ids in ``[0, c)``, one step = forward, backward, optimizer step.
    Adam steps the mean loss; ALSO (optimistic, and descent–ascent) steps ``weighted_loss``. The
    three go round-robin, order rotating (:func:`paired_times`), ``steps`` rounds or ``budget_s``.
    ALSO's step is then split into forward+backward (with ``weighted_loss``), the θ update
    (Adam with optimism) and the π update (scatter-add + softmax prox over c), each timed alone.
    ``pi_state_bytes``: the O(c) tensors ALSO keeps (log π, log π̂, the previous π-gradient).
    """
    if model not in HWS_MODELS:
        raise ValueError(f"model must be one of {sorted(HWS_MODELS)}, got {model!r}")
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch_size, 1, 28, 28, generator=gen).to(device)
    y = torch.randint(0, 10, (batch_size,), generator=gen).to(device)
    torch.manual_seed(seed)
    init = make_model(model, in_shape=(1, 28, 28), num_classes=10).state_dict()
    rows = []
    for c in groups:
        g = torch.randint(0, c, (batch_size,), generator=gen).to(device)
        nets, opts = _optimizers(model, init, c, device)

        def step(key):
            net, opt = nets[key], opts[key]
            opt.zero_grad(set_to_none=True)
            losses = F.cross_entropy(net(x), y, reduction="none")
            (losses.mean() if key == "adam" else opt.weighted_loss(losses, g)).backward()
            opt.step()

        times, rounds = paired_times({k: (lambda k=k: step(k)) for k in ALSO_CONFIGS}, device, steps, budget_s)
        parts = _also_parts(nets["also"], opts["also"], x, y, g, rounds=rounds, device=device)
        rows.append(_also_row(c, batch_size, model, rounds, times, parts))
    return rows


#: The also-step table's head (Markdown): :func:`format_also_step` writes its rows.
ALSO_HEAD = (
    "| groups c | Adam step | ALSO step | ALSO / Adam (paired) | ALSO α=0 / Adam (paired) "
    "| ALSO: fwd+bwd | θ update | π update | π state |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def format_also_step(r: dict) -> str:
    """One row of the also-step table."""
    return (
        f"| {r['groups']:,} | {fmt_t(r['adam_s'])} | {fmt_t(r['also_s'])} "
        f"| {r['also_over_adam']:.2f}× ({r['paired_also_over_adam']:.2f}×) "
        f"| {r['also_da_over_adam']:.2f}× ({r['paired_also_da_over_adam']:.2f}×) | {fmt_t(r['part_fwd_bwd_s'])} "
        f"| {fmt_t(r['part_theta_s'])} | {fmt_t(r['part_pi_s'])} | {fmt_bytes(r['pi_state_bytes'])} |"
    )
