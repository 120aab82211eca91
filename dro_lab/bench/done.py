"""``done-step``: one adversarial-training iteration, DONE against PGD-AT.

PGD-AT (Madry et al.), DONE-PGD and DONE-PGD with CID's implicit term on a digits-sized problem
(``DigitsCNN`` on 1×8×8, batch 64, ε = 0.1), the three alternating round by round.
"""

from __future__ import annotations

import statistics

import torch
import torch.nn.functional as F

from ..models import DigitsCNN
from ..strategies.adversarial import AdversarialTrainingStrategy, DONEStrategy
from .timing import fmt_t, paired_ratio, paired_times

#: done-step configurations: key -> label.
DONE_CONFIGS = {"at": "PGD-AT (Madry)", "done": "DONE-PGD", "done_implicit": "DONE-PGD + implicit term"}


def _done_runs(*, batch_size: int, steps: int, eps: float, device: torch.device, seed: int) -> dict:
    """key -> (network, strategy after ``setup``, SGD): every network starts from the same initialisation."""
    torch.manual_seed(seed)
    init = DigitsCNN().state_dict()
    makers = {
        "at": lambda: AdversarialTrainingStrategy(eps, steps=steps),
        "done": lambda: DONEStrategy(eps, r=0.5, steps=steps),
        "done_implicit": lambda: DONEStrategy(eps, r=0.5, steps=steps, implicit=True),
    }
    runs = {}
    for key, make in makers.items():
        net = DigitsCNN().to(device)
        net.load_state_dict(init)
        strat = make()
        strat.setup(batch_size, device=device, generator=torch.Generator().manual_seed(seed))
        runs[key] = (net, strat, torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9))
    return runs


def bench_done_step(
    *,
    batch_size: int = 64,
    steps: int = 5,
    eps: float = 0.1,
    rounds: int = 50,
    device: torch.device,
    budget_s: float = 20.0,
    seed: int = 0,
) -> dict:
    """One adversarial-training iteration: PGD-AT against DONE, without and with CID's implicit term.

    A digits analogue of the DONE paper's set-up: :class:`~dro_lab.models.DigitsCNN` on 1×8×8 inputs in
    [0, 1], batch ``batch_size``, PGD-``steps`` (sign, random start, ε = ``eps``), SGD. One iteration = the
    strategy's attack (``transform``), forward, weighted reduction (``reduce``), the strategy's ``backward`` (as
    in :func:`dro_lab.fit`: DONE + implicit back-propagates into the parameters only), optimizer step; the three
    alternate round by round (:func:`paired_times`). Ratios: median of the per-round ratios to AT.
    """
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(batch_size, 1, 8, 8, generator=gen).to(device)
    y = torch.randint(0, 10, (batch_size,), generator=gen).to(device)
    runs = _done_runs(batch_size=batch_size, steps=steps, eps=eps, device=device, seed=seed)

    def step(key):
        net, strat, opt = runs[key]
        net.train()
        [(xa, ya, _)] = strat.transform(x, y, indices=None, groups=None, model=net)
        opt.zero_grad(set_to_none=True)
        losses = F.cross_entropy(net(xa), ya, reduction="none")
        strat.backward(strat.reduce(losses, indices=None, groups=None), losses=losses, groups=None)  # as fit does
        opt.step()

    times, n = paired_times({k: (lambda k=k: step(k)) for k in runs}, device, rounds, budget_s)
    out = {
        "benchmark": "done-step",
        "batch_size": batch_size,
        "pgd_steps": steps,
        "eps": eps,
        "rounds": n,
        "threads": torch.get_num_threads(),
        "model": "DigitsCNN (1×8×8, 9.8k parameters)",
        "configs": {},
    }
    for key in runs:
        out["configs"][key] = {
            "label": DONE_CONFIGS[key],
            "step_s": statistics.median(times[key]),
            "paired_ratio_vs_at": paired_ratio(times[key], times["at"]),
        }
    return out


#: The done-step table's head (Markdown): :func:`format_done_step` writes its row.
DONE_HEAD = "| method | iteration (median) | / PGD-AT (paired) |\n|---|---:|---:|"


def format_done_step(r: dict) -> str:
    """The done-step table's rows, one per method."""
    return "\n".join(
        f"| {c['label']} | {fmt_t(c['step_s'])} | {c['paired_ratio_vs_at']:.2f}× |" for c in r["configs"].values()
    )
