"""Rank 1 skips the explicit loss all-reduce of step 3 and then waits forever;
the other ranks block in that all-reduce until the Gloo timeout (5 s)."""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
import ddp_common as ddp  # noqa: E402

FAULT_RANK = int(os.environ.get("FAULT_RANK", "1"))
FAULT_STEP = int(os.environ.get("FAULT_STEP", "3"))


def main():
    rank, world = ddp.setup(timeout_s=int(os.environ.get("PG_TIMEOUT_S", "5")))
    model, loader, opt = ddp.make_model_and_data(rank, world)
    seq = 0
    for step, (xb, yb) in enumerate(loader):
        ddp.event(rank, "step_begin", step=step, epoch=0)
        loss = ddp.train_step(model, opt, xb, yb).detach()
        if rank == FAULT_RANK and step == FAULT_STEP:
            ddp.event(rank, "fault", kind="hung_collective", step=step)
            threading.Event().wait()  # never enters allreduce #seq
        ddp.allreduce(rank, loss, seq)
        seq += 1
        ddp.event(rank, "step_end", step=step, epoch=0)
    ddp.cleanup(rank)


if __name__ == "__main__":
    main()
