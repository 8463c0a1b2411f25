"""Bugs in an accelerate user's own loop, one per --bug, on one rank
(--bug-rank, default 1) at one batch (--bug-batch, default 3):

  name_error        the loop uses a name it never defined (the seed's `b = c`)
  shape             a batch cut to the wrong width reaches the first layer
  worker            a DataLoader worker of that rank fails to decode a record
  rank0_validation  the main process alone checks a batch through the
                    prepared (DDP-wrapped) model: its forward broadcasts the
                    BatchNorm buffers on rank 0 only. The broadcasts are all
                    the same size, so Gloo pairs rank 0's extra one with the
                    others' next: a silent desync, every rank exits 0 (no
                    scenario yet: faultline does not report it)

Run as `accelerate launch --multi_gpu --num_processes 3 accelerate_bugs.py
--bug name_error`. CPU, Gloo.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit; before any backward(), whose state it tracks
from records import Records  # noqa: E402  encoded records, corrupt from one on (--bug worker)



def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--bug", choices=["name_error", "shape", "worker", "rank0_validation"], required=True)
    p.add_argument("--bug-rank", type=int, default=1)
    p.add_argument("--bug-batch", type=int, default=3)
    args = p.parse_args()

    accelerator = Accelerator(cpu=True)
    set_seed(0)
    rank = accelerator.process_index
    bad = args.bug_batch * 8 if args.bug == "worker" and rank == args.bug_rank else None
    data = DataLoader(Records(512, bad), batch_size=8, num_workers=1 if args.bug == "worker" else 0)
    model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model, opt, data = accelerator.prepare(model, opt, data)

    for i, (x, y) in enumerate(data):
        if i == args.steps:
            break
        if args.bug == "name_error" and rank == args.bug_rank and i == args.bug_batch:
            b = c  # noqa: F821,F841
        if args.bug == "shape" and rank == args.bug_rank and i == args.bug_batch:
            x = x[:, :12]  # the crop meant for the other dataset
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        opt.step()
        if args.bug == "rank0_validation" and i == args.bug_batch and accelerator.is_main_process:
            with torch.no_grad():
                model(x)  # only the main process gets here
    gloo_exit.settle(model)
    accelerator.end_training()


if __name__ == "__main__":
    main()
