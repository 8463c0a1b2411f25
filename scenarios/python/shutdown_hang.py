"""Every rank finishes its last step and destroys the process group, but rank 1
never exits: a non-daemon thread it started blocks the interpreter's shutdown
(the deterministic cousin of the ProcessGroupGloo destructor / GIL deadlock,
pytorch/pytorch#56297)."""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_common as ddp  # noqa: E402

FAULT_RANK = int(os.environ.get("FAULT_RANK", "1"))


def main():
    rank, world = ddp.setup()
    if rank == FAULT_RANK:
        threading.Thread(target=threading.Event().wait, name="stuck-worker").start()  # non-daemon
    model, loader, opt = ddp.make_model_and_data(rank, world)
    for step, (xb, yb) in enumerate(loader):
        if step == 6:
            break
        ddp.mean_loss(ddp.train_step(model, opt, xb, yb))
    ddp.cleanup()


if __name__ == "__main__":
    main()
