"""Rank 1 (or `--fault-rank R`) skips the explicit loss all-reduce of step 3 and then waits forever;
the other ranks block in that all-reduce until the Gloo timeout (5 s, or
`--pg-timeout S`: longer than the harness's hang timeout, the harness finds
the hang first and asks every rank for its stack)."""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_common as ddp  # noqa: E402

FAULT_RANK = ddp.fault_rank()
FAULT_STEP = int(os.environ.get("FAULT_STEP", "3"))


def pg_timeout():
    if "--pg-timeout" in sys.argv:
        return int(sys.argv[sys.argv.index("--pg-timeout") + 1])
    return int(os.environ.get("PG_TIMEOUT_S", "5"))


def main():
    rank, world = ddp.setup(timeout_s=pg_timeout())
    model, loader, opt = ddp.make_model_and_data(rank, world)
    for step, (xb, yb) in enumerate(loader):
        loss = ddp.train_step(model, opt, xb, yb)
        if rank == FAULT_RANK and step == FAULT_STEP:
            threading.Event().wait()  # never enters this step's loss all-reduce
        ddp.mean_loss(loss)
    ddp.cleanup()


if __name__ == "__main__":
    main()
