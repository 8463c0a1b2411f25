"""Two ranks train a small DDP model; every 3 steps the trainer saves a
checkpoint, but only on rank 0 (`if rank == 0:`), through a helper that
calls dist.barrier() inside. Rank 0 waits in the barrier, rank 1 goes on to
the next step's gradient all-reduce: the two ranks pair different
collectives, and with two ranks there is no majority to say who is wrong."""
import os
import sys
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checkpointing import save_checkpoint  # noqa: E402


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    out = os.environ.get("FAULTLINE_RUN_DIR") or tempfile.mkdtemp()
    g = torch.Generator().manual_seed(100 + rank)
    for step in range(1, 10):
        x = torch.randn(32, 4, generator=g)
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 3 == 0:
            if rank == 0:
                save_checkpoint(model, os.path.join(out, "ckpt-%d.pt" % step))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
