"""A DDP model with BatchNorm built with broadcast_buffers=False (to save
a broadcast per step): every rank keeps its own running statistics from its
own data, so the replicas' buffers differ, and what rank 0 checkpoints is
rank 0's alone."""
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit, not this trainer's fault


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
    model = DDP(net, broadcast_buffers=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    for _ in range(4):
        x = torch.randn(16, 4, generator=g) + rank  # each rank's data has its own mean
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    gloo_exit.settle(model)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
