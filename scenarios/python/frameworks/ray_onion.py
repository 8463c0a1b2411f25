"""onion.py's failures (errors inside errors, earlier failures that cause
later ones) in a Ray Train user's training function: worker rank
--fault-rank R (default 1) fails at batch --fault-step S (default 3) in the
way --shape names, through onion.py's own pieces (its records, prefetch
thread, config reader, schedule parser and strike()), so each error's
innermost frame is the one the plain trainer's row names.

    python ray_onion.py --num-workers 2 --shape dataloader

The model goes through ray.train.torch.prepare_model (DDP); the loader keeps
the DistributedSampler it was given (prepare_data_loader adds none then). A
worker's exception ends fit() with TrainingFailedError. CPU, Gloo.
"""
import argparse
import logging
import os
import sys

import ray.train
import ray.train.torch
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, DistributedSampler

from ray_ddp import fit  # the driver's TorchTrainer, beside this script

PYTHON_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def train_func(config):
    # On a Ray worker, which does not start in this folder.
    sys.path[:0] = [PYTHON_DIR, os.path.join(PYTHON_DIR, "diagnosis")]
    import ddp_common
    import onion

    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    shape, step_at = config["shape"], config["fault_step"]
    faulty = rank == config["fault_rank"]
    base = ddp_common.make_dataset()
    sampler = DistributedSampler(base, num_replicas=world, rank=rank, seed=0)
    how = {"dataloader": "raise", "worker_kill": "kill", "worker_segv": "segv"}.get(shape)
    poison = list(sampler)[step_at * onion.BATCH] if how and faulty else None
    data = ray.train.torch.prepare_data_loader(
        DataLoader(onion.Records(base, poison, how), batch_size=onion.BATCH, sampler=sampler,
                   num_workers=2 if how else 0))
    torch.manual_seed(0)
    model = ray.train.torch.prepare_model(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    prefetch = None
    if shape in ("thread_queue", "thread_result"):
        prefetch = onion.Prefetcher(step_at if faulty else -1, shape.split("_")[1])
        prefetch.start()
    for step, (xb, yb) in enumerate(data):
        if step >= config["steps"]:
            break
        if prefetch is not None:
            prefetch.value(step)
        if step == 1 and faulty and shape == "logged_then_fail":
            try:
                onion.read_config({"lr": 0.01}, "warmup")
            except RuntimeError:
                logging.exception("no warmup configured, going on without it")
        if step == step_at and faulty:
            onion.strike(shape, xb)
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
    if prefetch is not None:
        prefetch.todo.put(None)
    ray.train.report({"loss": loss.item()})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--shape", required=True)
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-step", type=int, default=3)
    p.add_argument("--steps", type=int, default=6)
    args = p.parse_args()
    config = {"shape": args.shape, "fault_rank": args.fault_rank, "fault_step": args.fault_step, "steps": args.steps}
    fit(train_func, config, args.num_workers, 0)


if __name__ == "__main__":
    main()
