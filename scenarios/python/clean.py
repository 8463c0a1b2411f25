"""A clean DDP run: 8 steps, loss all-reduced, process group destroyed."""
import sys

import torch

sys.path.insert(0, __import__("os").path.dirname(__file__))
import ddp_common as ddp  # noqa: E402


def main():
    rank, world = ddp.setup()
    try:
        model, loader, opt = ddp.make_model_and_data(rank, world)
        seq = 0
        for step, (xb, yb) in enumerate(loader):
            if step == 8:
                break
            ddp.event(rank, "step_begin", step=step, epoch=0)
            loss = ddp.train_step(model, opt, xb, yb).detach()
            ddp.allreduce(rank, loss, seq)
            seq += 1
            ddp.event(rank, "step_end", step=step, epoch=0)
        if rank == 0:
            print(f"final loss {loss.item() / world:.4f}")
    finally:
        ddp.cleanup(rank)
    ddp.event(rank, "exit", code=0)


if __name__ == "__main__":
    main()
