"""Rank 1 (or `--fault-rank R`) executes `b = c` at step 3: a NameError mid-training; its peers die
later in the next collective ("Connection closed by peer")."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_common as ddp  # noqa: E402

FAULT_RANK = ddp.fault_rank()
FAULT_STEP = int(os.environ.get("FAULT_STEP", "3"))


def main():
    rank, world = ddp.setup()
    model, loader, opt = ddp.make_model_and_data(rank, world)
    for step, (xb, yb) in enumerate(loader):
        if rank == FAULT_RANK and step == FAULT_STEP:
            b = c  # noqa: F821  the one-line bug
        ddp.mean_loss(ddp.train_step(model, opt, xb, yb))
    ddp.cleanup()


if __name__ == "__main__":
    if os.environ.get("USE_RECORD"):  # torchelastic's error-file decorator
        from torch.distributed.elastic.multiprocessing.errors import record
        main = record(main)
    main()
