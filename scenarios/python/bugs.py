"""Bugs in a plain torch.distributed DDP loop, one per --bug, on one rank
(--bug-rank, default 1) at one batch (--bug-batch, default 3): the same bugs
as frameworks/*_bugs.py, in the loop users write without a framework.

  name_error  the loop uses a name it never defined (the seed's `b = c`)
  shape       a batch cut to the wrong width reaches the first layer
  worker      a DataLoader worker of that rank fails to decode a record

Run under any launcher that sets RANK and WORLD_SIZE (torchrun, srun with
faultline's agent, mp.spawn through a runner). CPU, Gloo.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_common as ddp  # noqa: E402
from records import Records  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--bug", choices=["name_error", "shape", "worker"], required=True)
    p.add_argument("--bug-rank", type=int, default=1)
    p.add_argument("--bug-batch", type=int, default=3)
    args = p.parse_args()

    rank, world = ddp.setup()
    bad = args.bug_batch * 8 if args.bug == "worker" and rank == args.bug_rank else None
    records = Records(512, bad)
    sampler = DistributedSampler(records, num_replicas=world, rank=rank, seed=0)
    data = DataLoader(records, batch_size=8, sampler=sampler, num_workers=1 if args.bug == "worker" else 0)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    for i, (x, y) in enumerate(data):
        if i == args.steps:
            break
        if args.bug == "name_error" and rank == args.bug_rank and i == args.bug_batch:
            b = c  # noqa: F821,F841
        if args.bug == "shape" and rank == args.bug_rank and i == args.bug_batch:
            x = x[:, :12]  # the crop meant for the other dataset
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        ddp.mean_loss(loss)
    ddp.cleanup(model)


if __name__ == "__main__":
    main()
