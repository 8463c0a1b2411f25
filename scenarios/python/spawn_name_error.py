"""The "robust script" pattern: torch.multiprocessing.spawn(train, nprocs=N)
with setup/cleanup and destroy_process_group in `finally`; rank 1 executes
`b = c` at step 3. The parent re-raises it as ProcessRaisedException."""
import os
import sys

import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_common as ddp  # noqa: E402

FAULT_RANK = int(os.environ.get("FAULT_RANK", "1"))
FAULT_STEP = int(os.environ.get("FAULT_STEP", "3"))


def train(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    ddp.setup(rank, world)
    try:
        model, loader, opt = ddp.make_model_and_data(rank, world)
        for step, (xb, yb) in enumerate(loader):
            if rank == FAULT_RANK and step == FAULT_STEP:
                b = c  # noqa: F821  the one-line bug
            ddp.mean_loss(ddp.train_step(model, opt, xb, yb))
    finally:
        ddp.cleanup()


if __name__ == "__main__":
    world = int(os.environ.get("WORLD_SIZE", "2"))
    mp.spawn(train, args=(world,), nprocs=world, join=True)
