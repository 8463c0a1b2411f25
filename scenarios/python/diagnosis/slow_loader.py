"""A DDP trainer whose input pipeline is slow on one rank, as a user writes
one: nothing in it knows faultline. Its DataLoader (2 worker processes)
reads each sample from storage; on --slow-rank the read of one batch takes
--slow-s seconds (a cold network file system, a throttled bucket), while the
other ranks wait for it in the next gradient all-reduce. Nothing hangs: the
run ends cleanly once the batch arrives.

Gloo on CPU; the launcher sets the rank environment.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit; before any backward(), whose state it tracks


class Storage(Dataset):
    """Samples read from storage; one read is slow on the slow rank."""

    def __init__(self, n, slow, slow_index, slow_s):
        self.n, self.slow, self.slow_index, self.slow_s = n, slow, slow_index, slow_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.slow and i == self.slow_index:
            time.sleep(self.slow_s)  # the storage answers late: nothing to compute meanwhile
        g = torch.Generator().manual_seed(i)
        x = torch.randn(16, generator=g)
        return x, x.sum().reshape(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--slow-rank", type=int, default=1)
    p.add_argument("--slow-s", type=float, default=3)
    p.add_argument("--slow-step", type=int, default=4)
    args = p.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    batch = 8
    n = batch * world * (args.steps + 1)
    sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=False)
    # The slow sample: the first of this rank's batch number --slow-step.
    slow_index = list(iter(sampler))[(args.slow_step - 1) * batch]
    data = Storage(n, rank == args.slow_rank, slow_index, args.slow_s)
    loader = DataLoader(data, batch_size=batch, sampler=sampler, num_workers=2, prefetch_factor=1)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.MSELoss()
    step = 0
    for x, y in loader:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        step += 1
        if step >= args.steps:
            break
    total = loss.detach().reshape(1).clone()
    dist.all_reduce(total)
    if rank == 0:
        print("done: %d steps, loss %.4f" % (step, total.item() / world), flush=True)
    gloo_exit.settle(model, total)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
