"""A DeepSpeed training loop as its users write one: `deepspeed.initialize`
on the model, a client optimizer and the training data (DeepSpeed makes the
DataLoader and its DistributedSampler), then engine(x),
engine.backward(loss) and engine.step(). ZeRO stage 0, fp32: the engine
all-reduces the gradients itself, in Python, through deepspeed.comm. The
epoch's mean loss is all-reduced at the end. Nothing in it knows faultline.

Run as `deepspeed --num_gpus 3 deepspeed_ddp.py --steps 8`: on a machine
without GPUs DeepSpeed takes its CPU accelerator, and --num_gpus is the
number of processes. The launcher passes --local_rank=N to each.
"""
import argparse
import os
import sys

import deepspeed
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import TensorDataset

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit; before any backward(), whose state it tracks

DS_CONFIG = {
    "train_micro_batch_size_per_gpu": 8,
    "gradient_accumulation_steps": 1,
    "steps_per_print": 1000,
    "zero_optimization": {"stage": 0},
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--local_rank", type=int, default=-1, help="set by the deepspeed launcher")
    p.add_argument("--steps", type=int, default=8)
    p = deepspeed.add_config_arguments(p)
    args = p.parse_args()

    deepspeed.init_distributed(dist_backend="gloo")
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(512, 16, generator=g)
    data = TensorDataset(x, x.sum(dim=1, keepdim=True))
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    engine, _, loader, _ = deepspeed.initialize(args=args, model=model, optimizer=opt, training_data=data,
                                                config=DS_CONFIG)

    total = torch.zeros(1)
    step = 0
    while step < args.steps:
        for xb, yb in loader:
            loss = nn.functional.mse_loss(engine(xb), yb)
            engine.backward(loss)
            engine.step()
            total += loss.detach()
            step += 1
            if step >= args.steps:
                break
    dist.all_reduce(total)
    if engine.global_rank == 0:
        print("step %d mean loss %.4f" % (step, total.item() / step / dist.get_world_size()), flush=True)
    gloo_exit.settle(engine, total)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
