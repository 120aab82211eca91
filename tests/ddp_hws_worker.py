"""Train a small model with HardnessWeightedSampler, under torchrun (DDP, gloo) or in one process.

Used by tests/lab/samplers/test_samplers_ddp.py; also the smallest example of the sampler under DDP::

    torchrun --standalone --nproc_per_node 2 tests/ddp_hws_worker.py OUT.pt 8     # 2 ranks × b = 8
    python tests/ddp_hws_worker.py OUT.pt 16                                    # 1 process, b = 16

Every rank holds the same history and generator, so all draw the same global batch of
world_size × b indices and each takes its slice; update() all-gathers every rank's losses.
"""

from __future__ import annotations

import sys

import _ddp  # tests/_ddp.py: the script's folder is on sys.path
import torch
import torch.nn.functional as F

from dro_lab import HardnessWeightedSampler


def main(out: str, batch_size: int, epochs: int = 3, n: int = 96) -> None:
    distributed = _ddp.start()
    data_gen = torch.Generator().manual_seed(0)
    x = torch.randn(n, 5, generator=data_gen)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0.3).long()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    net = torch.nn.parallel.DistributedDataParallel(model) if distributed else model
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    sampler = HardnessWeightedSampler(
        n, batch_size, beta=5.0, device="cpu", generator=torch.Generator().manual_seed(123)
    )
    drawn = []
    for _ in range(epochs):
        for idx in sampler.batches():
            losses = F.cross_entropy(net(x[idx]), y[idx], reduction="none")
            opt.zero_grad()
            losses.mean().backward()  # DDP averages the ranks' means: the global-batch mean
            opt.step()
            sampler.update(idx, losses.detach())
            drawn.append(idx.clone())
    result = {
        "params": [p.detach().clone() for p in model.parameters()],
        "history": sampler.history.clone(),
        "drawn": drawn,
        "world_size": sampler.world_size,
        "epochs": sampler.epoch,
    }
    _ddp.finish(result, out, distributed)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
