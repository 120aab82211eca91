"""``gils-T``: GI-LS seconds per epoch against its number of ascent steps T, and plain label smoothing.

The GI-LS digits set-up (``DigitsCNN``, 208 synthetic 1×8×8 images, batch 32) trained through :func:`dro_lab.fit`.
"""

from __future__ import annotations

import statistics

import torch

from ..data.datasets import ArrayDataset
from ..engine.loop import fit
from ..models import DigitsCNN
from ..strategies.smoothing import GILSStrategy, LabelSmoothingStrategy
from .timing import fmt_t


def bench_gils_epoch(
    T_values=(0, 1, 5, 10, 15),
    *,
    n: int = 208,
    batch_size: int = 32,
    epochs: int = 3,
    device: torch.device,
    seed: int = 0,
) -> dict:
    """Seconds per training epoch of GI-LS against its number of ascent steps T (and plain LS).

    The GI-LS digits set-up: :class:`~dro_lab.models.DigitsCNN` on ``n`` synthetic 1×8×8 images in [0, 1] (the
    MT-Defect training size), 5 classes, batch ``batch_size``, SGD through :func:`dro_lab.fit`, α = 0.3,
    γ = 10⁻³, η = 2 (the cost of a step does not depend on η); the median over ``epochs`` epochs after one warm-up
    epoch. Per drawn batch GI-LS runs T ascent steps, then two SGD steps (generated batch, original batch) for
    T ≥ 1; at T = 0 there is no shift and it takes one LS step, so T = 0 costs what plain LS costs.
    ``ratio_to_T0``: the cost relative to GI-LS with T = 0 (= LS); ``ratio_to_ls``: relative to one LS step.
    """
    gen = torch.Generator().manual_seed(seed)
    train = ArrayDataset(torch.rand(n, 1, 8, 8, generator=gen), torch.randint(0, 5, (n,), generator=gen), num_classes=5)

    def per_epoch(strategy) -> float:
        torch.manual_seed(seed)
        hist = fit(
            DigitsCNN(num_classes=5),
            train,
            strategy=strategy,
            epochs=epochs + 1,
            batch_size=batch_size,
            lr=0.01,
            device=device,
            seed=seed,
            progress=False,
        )
        return statistics.median(hist["seconds"][1:])

    ls = per_epoch(LabelSmoothingStrategy(0.3))
    rows = [{"T": int(t), "epoch_s": per_epoch(GILSStrategy(0.3, gamma=1e-3, eta=2.0, steps=int(t)))} for t in T_values]
    t0 = next((r["epoch_s"] for r in rows if r["T"] == 0), None)
    for r in rows:
        r["ratio_to_T0"] = r["epoch_s"] / t0 if t0 else None
        r["ratio_to_ls"] = r["epoch_s"] / ls
    return {
        "benchmark": "gils-T",
        "n": n,
        "batch_size": batch_size,
        "epochs": epochs,
        "ls_epoch_s": ls,
        "model": "DigitsCNN (1×8×8, 5 classes)",
        "rows": rows,
    }


#: The gils-T table's head (Markdown): :func:`format_gils_epoch` writes its rows.
GILS_HEAD = "| T | seconds / epoch | / GI-LS T = 0 | / LS |\n|---:|---:|---:|---:|"


def format_gils_epoch(r: dict) -> str:
    """The gils-T table's rows, one per T."""
    lines = []
    for x in r["rows"]:
        to_t0 = "—" if x["ratio_to_T0"] is None else f"{x['ratio_to_T0']:.2f}×"
        lines.append(f"| {x['T']} | {fmt_t(x['epoch_s'])} | {to_t0} | {x['ratio_to_ls']:.2f}× |")
    return "\n".join(lines)
