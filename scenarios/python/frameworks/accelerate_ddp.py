"""An accelerate training loop as its users write one: an Accelerator,
prepare() on the model, optimizer and DataLoader (DDP and a distributed
sampler underneath), accelerator.backward(loss), and the epoch's mean loss
gathered with accelerator.reduce. Nothing in it knows faultline.

Run as `accelerate launch --multi_gpu --num_processes 3 accelerate_ddp.py
--steps 8` (torchrun underneath); CPU, Gloo.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit; before any backward(), whose state it tracks


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--batch", type=int, default=8)
    args = p.parse_args()

    accelerator = Accelerator(cpu=True)
    set_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(512, 16, generator=g)
    data = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=args.batch, shuffle=True)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model, opt, data = accelerator.prepare(model, opt, data)

    step = 0
    while step < args.steps:
        total = torch.zeros(1)
        for xb, yb in data:
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            accelerator.backward(loss)
            opt.step()
            total += loss.detach()
            step += 1
            if step >= args.steps:
                break
        mean = accelerator.reduce(total, reduction="mean")
        accelerator.print("step %d loss %.4f" % (step, mean.item()))
    gloo_exit.settle(model, mean)
    accelerator.end_training()


if __name__ == "__main__":
    main()
