"""A DDP trainer that validates on rank 0 only, as users write one
(pytorch/pytorch#54059): nothing in it knows faultline. Every other epoch
rank 0 runs the validation batch through the DDP-wrapped model, in eval mode
but without torch.no_grad(): DDP's forward then broadcasts the BatchNorm
buffers, a collective the other ranks never make. Then every rank meets at
the epoch's barrier: rank 0's broadcast is paired with the others' barrier,
and the job hangs or fails in a mismatch.

The decision is made once, far from the call (`do_eval`), so nothing at the
call says it depends on the rank: only the call site (a line no other rank
ever reaches, while rank 0 reached the barrier's line in the epoch before)
tells whose collective is the extra one.

Gloo on CPU; the launcher sets the rank environment.
"""
import argparse
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model, x, y):
    model.eval()
    loss = nn.functional.mse_loss(model(x), y)  # no torch.no_grad(): DDP syncs buffers here
    model.train()
    return loss.item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--steps", type=int, default=5)
    args = p.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(100 + rank)
    val_x, val_y = torch.randn(8, 16), torch.randn(8, 1)
    do_eval = rank == 0  # the main process reports the validation loss
    for epoch in range(args.epochs):
        for _ in range(args.steps):
            x = torch.randn(8, 16, generator=gen)
            opt.zero_grad()
            nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True)).backward()
            opt.step()
        if do_eval and epoch % 2 == 1:
            print("epoch %d validation loss %.4f" % (epoch, evaluate(model, val_x, val_y)), flush=True)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
