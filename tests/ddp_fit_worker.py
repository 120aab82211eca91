"""Train one small model per strategy with :func:`dro_lab.fit`, under torchrun (DDP, gloo) or in one process.

Used by tests/lab/engine/test_ddp_fit.py::

    torchrun --standalone --nproc_per_node 2 tests/ddp_fit_worker.py OUT 8     # 2 ranks × b = 8
    python tests/ddp_fit_worker.py OUT 16                                      # 1 process, b = 16

Each rank saves ``OUT.rank<r>``: per strategy the final parameters, the History records (without
``seconds``) and the strategy's state (the HWS loss history, the IS scores, ALSO's π). The last entry
drives :class:`dro_lab.ALSO` directly in a user's own DDP loop (``distributed="auto"``): each rank hands
``weighted_loss`` its slice, π's gradient and the batch size are all-reduced (the optimizer's own path,
which ``fit`` does not use).
"""

from __future__ import annotations

import sys

import _ddp  # tests/_ddp.py: the script's folder is on sys.path
import torch
import torch.distributed as dist
import torch.nn.functional as F

from dro_lab import (
    ALSO,
    ERM,
    ArrayDataset,
    CompressedWorkersStrategy,
    GroupDROStrategy,
    HardnessWeightedStrategy,
    ImportanceSamplingStrategy,
    RobustLossStrategy,
    fit,
)

N, D, EPOCHS = 89, 5, 3  # 89: the last batch of an epoch splits unevenly over 2 ranks (5 + 4)


def _data(n: int, seed: int) -> ArrayDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, D, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0.3).long()
    return ArrayDataset(x, y, groups=(x[:, 2] > 0).long())


def _model() -> torch.nn.Module:
    """Rank 0 (and one process) starts from seed 1; other ranks from another init, which DDP must overwrite."""
    rank = dist.get_rank() if dist.is_initialized() else 0
    torch.manual_seed(1 if rank == 0 else 100 + rank)
    return torch.nn.Sequential(torch.nn.Linear(D, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))


def _params(model) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def _records(hist) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in hist.records]


def _own_loop_also(batch_size: int) -> dict:
    """ALSO in a user's own DDP loop (no fit): each rank's slice of one seeded global permutation."""
    train = _data(N, 0)
    world_size = dist.get_world_size() if dist.is_initialized() else 1
    rank = dist.get_rank() if dist.is_initialized() else 0
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(D, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    net = torch.nn.parallel.DistributedDataParallel(model) if world_size > 1 else model
    opt = ALSO(net.parameters(), n_groups=2, lr=0.05, pi_lr=0.5, tau=0.1)
    gen = torch.Generator().manual_seed(3)
    B = batch_size * world_size
    for _ in range(EPOCHS):
        perm = torch.randperm(N, generator=gen)
        for start in range(0, N, B):
            idx = torch.tensor_split(perm[start : start + B], world_size)[rank]
            x, y, _, groups = train.batch(idx)
            opt.zero_grad()
            opt.weighted_loss(F.cross_entropy(net(x), y, reduction="none"), groups).backward()
            opt.step()
    return {"params": _params(model), "pi": opt.pi.clone()}


def main(out: str, batch_size: int) -> None:
    distributed = _ddp.start()
    train, test = _data(N, 0), _data(40, 1)
    strategies = {
        "erm": ERM(),
        "kl": RobustLossStrategy("kl", beta=2.0),
        "hws": HardnessWeightedStrategy(beta=5.0),
        "is": ImportanceSamplingStrategy("loss", refresh_every=None),
        "also": GroupDROStrategy("also", grouping="class", pi_lr=0.5, tau=0.1),
    }
    result = {"world_size": dist.get_world_size() if distributed else 1}
    for name, strategy in strategies.items():
        model = _model()
        hist = fit(
            model,
            train,
            test=test,
            strategy=strategy,
            epochs=EPOCHS,
            batch_size=batch_size,
            lr=0.05 if name == "also" else 0.3,
            device="cpu",
            seed=7,
            progress=False,
        )
        entry = {"params": _params(model), "records": _records(hist), "world_size": hist.world_size}
        if name == "hws":
            entry["table"] = strategy.sampler.history.clone()
        if name == "is":
            entry["table"] = strategy.sampler.scores.clone()
        if name == "also":
            entry["pi"] = strategy.optimizer.pi.clone()
        result[name] = entry
    result["own_loop_also"] = _own_loop_also(batch_size)
    try:  # simulated Perm-K workers bypass DDP's reducer: fit must refuse them under DDP (and run them alone)
        fit(
            _model(),
            train,
            strategy=CompressedWorkersStrategy(ERM(), 2),
            epochs=1,
            batch_size=batch_size,
            device="cpu",
            progress=False,
        )
        result["perm_k"] = "ran"
    except ValueError as exc:
        result["perm_k"] = str(exc)
    _ddp.finish(result, out, distributed)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
