"""Data-parallel training with dro_lab.fit under torchrun (DDP: gloo on CPU, NCCL on GPU).

    torchrun --standalone --nproc_per_node 2 examples/ddp_fit.py                 # 2 processes
    torchrun --standalone --nproc_per_node 2 examples/ddp_fit.py --strategy also
    python examples/ddp_fit.py                                                    # 1 process, same code

``--batch-size`` is per process: the global batch is ``nproc × batch_size``, and the run equals one
process with that batch (``python examples/ddp_fit.py --batch-size 64`` matches the first command).
Only rank 0 prints. Set ``OMP_NUM_THREADS`` (torchrun sets 1) to share the cores between the ranks.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist

from dro_lab import (ERM, GroupDROStrategy, HardnessWeightedStrategy, ImportanceSamplingStrategy,
                     RobustLossStrategy, fit, load_digits, seed_everything)
from dro_lab.models import MLP

STRATEGIES = {
    "erm": lambda: ERM(),
    "kl": lambda: RobustLossStrategy("kl", beta=5.0),
    "hws": lambda: HardnessWeightedStrategy(beta=5.0),
    "is": lambda: ImportanceSamplingStrategy("loss", refresh_every=None),
    "also": lambda: GroupDROStrategy("also", grouping="class", pi_lr=0.1, tau=0.1),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", choices=sorted(STRATEGIES), default="hws")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32, help="per process")
    parser.add_argument("--lr", type=float, default=None, help="default 0.1 (SGD); 0.01 for also (Adam)")
    args = parser.parse_args()

    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group(backend)
    rank = dist.get_rank() if dist.is_initialized() else 0

    seed_everything(0)  # the same initialisation everywhere (DDP broadcasts rank 0's anyway)
    train, test = load_digits(flatten=True)  # bundled with scikit-learn: no download
    model = MLP(train.x.shape[1], train.num_classes, hidden=(64,))
    hist = fit(model, train, test=test, strategy=STRATEGIES[args.strategy](), epochs=args.epochs,
               batch_size=args.batch_size, seed=0,
               lr=args.lr or (0.01 if args.strategy == "also" else 0.1), progress=False,
               callback=(lambda e, r: print(f"epoch {e}: loss {r['train_loss']:.4f}  test acc "
                                            f"{r['test_accuracy']:.3f}  worst class "
                                            f"{r['test_worst_class_accuracy']:.3f}", flush=True))
               if rank == 0 else None)
    if rank == 0:
        print(f"{hist.strategy} on {hist.world_size} process(es), global batch "
              f"{hist.world_size * args.batch_size}, device {hist.device}")
    if dist.is_initialized():
        dist.barrier()  # every rank done before the process group goes
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
