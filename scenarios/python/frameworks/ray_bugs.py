"""Bugs in a Ray Train user's training function, one per --bug, on one rank
(--bug-rank, default 1) at one batch (--bug-batch, default 3): the same bugs
as the other *_bugs.py, in the function TorchTrainer runs on each worker.

  name_error  the loop uses a name it never defined (the seed's `b = c`)
  shape       a batch cut to the wrong width reaches the first layer
  worker      a DataLoader worker of that rank fails to decode a record

    python ray_bugs.py --num-workers 3 --bug name_error

The model goes through ray.train.torch.prepare_model (DDP), the loader
through prepare_data_loader (a DistributedSampler). A worker's exception
ends fit() with TrainingFailedError. CPU, Gloo.
"""
import argparse
import os
import sys

import ray.train
import ray.train.torch
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

from ray_ddp import fit  # the driver's TorchTrainer, beside this script

PYTHON_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def train_func(config):
    sys.path.insert(0, PYTHON_DIR)  # on a Ray worker, which does not start in this folder
    from records import Records

    rank = ray.train.get_context().get_world_rank()
    bug, bug_rank, bug_batch = config["bug"], config["bug_rank"], config["bug_batch"]
    bad = bug_batch * 8 if bug == "worker" and rank == bug_rank else None
    data = ray.train.torch.prepare_data_loader(
        DataLoader(Records(512, bad), batch_size=8, num_workers=1 if bug == "worker" else 0))
    torch.manual_seed(0)
    model = ray.train.torch.prepare_model(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for i, (x, y) in enumerate(data):
        if i == config["steps"]:
            break
        if bug == "name_error" and rank == bug_rank and i == bug_batch:
            b = c  # noqa: F821,F841
        if bug == "shape" and rank == bug_rank and i == bug_batch:
            x = x[:, :12]  # the crop meant for the other dataset
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    ray.train.report({"loss": loss.item()})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--bug", choices=["name_error", "shape", "worker"], required=True)
    p.add_argument("--bug-rank", type=int, default=1)
    p.add_argument("--bug-batch", type=int, default=3)
    p.add_argument("--max-failures", type=int, default=0)
    args = p.parse_args()

    fit(train_func, {"steps": args.steps, "bug": args.bug, "bug_rank": args.bug_rank, "bug_batch": args.bug_batch},
        args.num_workers, args.max_failures)


if __name__ == "__main__":
    main()
