"""Two ranks train; at the end the trainer waits for the others before
rank 0 writes its summary, but the wait is only on rank 0
(`if dist.get_rank() == 0:` around the barrier). Rank 1 finishes and exits;
rank 0 waits in a barrier nobody else enters."""
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit (rank 1 exits while rank 0 waits); before any backward()

def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    torch.manual_seed(0)
    model = DDP(nn.Linear(6, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(5):
        x = torch.randn(16, 6)
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    if dist.get_rank() == 0:
        dist.barrier()  # the bug: only rank 0 waits
        print("summary written", flush=True)
    gloo_exit.settle(model)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
