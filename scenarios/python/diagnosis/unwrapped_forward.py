"""DDP wraps the model, but the training loop calls the inner module
(`model.module(x)`, the way code written for one GPU does after the wrap
was added): DDP never sees a forward, no gradient is all-reduced, and each
rank's replica drifts with its own data. Training runs and ends cleanly."""
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
    model = DDP(nn.Sequential(nn.Linear(5, 5), nn.ReLU(), nn.Linear(5, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    for _ in range(6):
        x = torch.randn(8, 5, generator=g)
        opt.zero_grad()
        model.module(x).pow(2).mean().backward()  # the bug: around DDP
        opt.step()
    gloo_exit.settle(model)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
