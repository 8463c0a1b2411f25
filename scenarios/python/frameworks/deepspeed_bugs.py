"""Bugs in a DeepSpeed user's own loop, one per --bug, on one rank
(--bug-rank, default 1; rank0_checkpoint: rank 0) at one batch (--bug-batch,
default 3):

  name_error        the loop uses a name it never defined (the seed's `b = c`)
  shape             a batch cut to the wrong width reaches the first layer
  worker            a DataLoader worker of that rank fails to decode a record
  rank0_checkpoint  only rank 0 calls engine.save_checkpoint, which every
                    rank must call: rank 0 waits in its barrier while the
                    others go on to the next step's gradient all-reduce

The loop builds its own DataLoader with a DistributedSampler (as many
DeepSpeed users do, to choose its workers) and hands the model and a client
optimizer to deepspeed.initialize. Run as `deepspeed --num_gpus 3
deepspeed_bugs.py --bug name_error`. CPU, Gloo.
"""
import argparse
import os
import sys
import tempfile

import deepspeed
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit; before any backward(), whose state it tracks
from records import Records  # noqa: E402  encoded records, corrupt from one on (--bug worker)



def main():
    p = argparse.ArgumentParser()
    p.add_argument("--local_rank", type=int, default=-1, help="set by the deepspeed launcher")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--bug", choices=["name_error", "shape", "worker", "rank0_checkpoint"], required=True)
    p.add_argument("--bug-rank", type=int, default=None)
    p.add_argument("--bug-batch", type=int, default=3)
    p = deepspeed.add_config_arguments(p)
    args = p.parse_args()
    bug_rank = args.bug_rank if args.bug_rank is not None else (0 if args.bug == "rank0_checkpoint" else 1)

    deepspeed.init_distributed(dist_backend="gloo")
    torch.manual_seed(0)
    rank = int(os.environ["RANK"])
    bad = args.bug_batch * 8 if args.bug == "worker" and rank == bug_rank else None
    records = Records(512, bad)
    data = DataLoader(records, batch_size=8, sampler=DistributedSampler(records),
                      num_workers=1 if args.bug == "worker" else 0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    engine, _, _, _ = deepspeed.initialize(args=args, model=model, optimizer=opt,
                                           config={"train_micro_batch_size_per_gpu": 8, "steps_per_print": 1000})
    ckpt = tempfile.mkdtemp(prefix="ds-ckpt-")

    for i, (x, y) in enumerate(data):
        if i == args.steps:
            break
        if args.bug == "name_error" and rank == bug_rank and i == args.bug_batch:
            b = c  # noqa: F821,F841
        if args.bug == "shape" and rank == bug_rank and i == args.bug_batch:
            x = x[:, :12]  # the crop meant for the other dataset
        loss = nn.functional.mse_loss(engine(x), y)
        engine.backward(loss)
        engine.step()
        if args.bug == "rank0_checkpoint" and i == args.bug_batch and engine.global_rank == 0:
            engine.save_checkpoint(ckpt)  # every rank must call it
    gloo_exit.settle(engine)


if __name__ == "__main__":
    main()
