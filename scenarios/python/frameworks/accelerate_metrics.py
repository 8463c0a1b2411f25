"""An accelerate classifier that evaluates every epoch and logs its
validation accuracy with accelerator.log, on every rank as accelerate's
examples do (the trackers write on the main process), into TensorBoard
(log_with="tensorboard"). --eval says how the accuracy is computed:

  local               each rank's accuracy on its own share of the
                      validation set (the prepared DataLoader shards it):
                      the seed's unsynchronised metric
  gather_for_metrics  predictions and labels gathered with
                      accelerator.gather_for_metrics first, as accelerate's
                      docs say
  reduce              correct and total counts summed with accelerator.reduce

Run as `accelerate launch --multi_gpu --num_processes 3 accelerate_metrics.py
--eval local`; CPU, Gloo.
"""
import argparse
import os
import sys
import tempfile

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit; before any backward(), whose state it tracks


def data(n, seed, shuffle):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    y = ((x[:, 0] + 0.8 * torch.randn(n, generator=g)) > 0).long()  # noisy: shards score differently
    return DataLoader(TensorDataset(x, y), batch_size=8, shuffle=shuffle)


def evaluate(accelerator, model, val, how):
    model.eval()
    correct = torch.zeros(())
    total = torch.zeros(())
    with torch.no_grad():
        for xb, yb in val:
            pred = model(xb).argmax(dim=1)
            if how == "gather_for_metrics":
                pred, yb = accelerator.gather_for_metrics((pred, yb))
            correct += (pred == yb).sum()
            total += yb.numel()
    if how == "reduce":
        correct = accelerator.reduce(correct, reduction="sum")
        total = accelerator.reduce(total, reduction="sum")
    model.train()
    return (correct / total).item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--eval", default="local", choices=["local", "gather_for_metrics", "reduce"])
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as logs:
        accelerator = Accelerator(cpu=True, log_with="tensorboard", project_dir=logs)
        accelerator.init_trackers("metrics")
        set_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        model, opt, train, val = accelerator.prepare(model, opt, data(256, 1, True), data(96, 2, False))
        for epoch in range(args.epochs):
            for i, (xb, yb) in enumerate(train):
                if i == 4:
                    break
                opt.zero_grad()
                accelerator.backward(nn.functional.cross_entropy(model(xb), yb))
                opt.step()
            acc = evaluate(accelerator, model, val, args.eval)
            accelerator.log({"val_acc": acc}, step=epoch)
            accelerator.print("epoch %d: val_acc %.4f" % (epoch, acc))
        gloo_exit.settle(model)
        accelerator.end_training()


if __name__ == "__main__":
    main()
