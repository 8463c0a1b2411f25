"""A plain PyTorch DDP classifier that evaluates every epoch, each rank on
its own shard of the validation set (a DistributedSampler), and has rank 0
write the accuracy where people write it (--sink):

  tensorboard   torch.utils.tensorboard's SummaryWriter.add_scalar
  wandb         wandb.log, in an offline run (WANDB_MODE=offline, no network)

--sync says whether the counts meet first:

  none          rank 0 logs (correct / total).item() of its own shard: the
                seed's unsynchronised metric
  all_reduce    every rank all-reduces correct and total first, then rank 0
                logs the job's accuracy
  rank0_full    rank 0 alone evaluates the whole validation set (a plain
                DataLoader, no sampler) and logs it: the job's accuracy, no
                collective needed
  torchmetrics  a torchmetrics MulticlassAccuracy, updated per batch on every
                rank; compute() gathers every rank's state (its default
                sync_on_compute=True), and rank 0 logs the job's accuracy
  torchmetrics_local
                the same Metric built with sync_on_compute=False: compute()
                is each rank's own shard's, and rank 0 logs its own
  rank_local    each rank logs its own shard's accuracy on purpose, under its
                own name (val/acc_rank1) in a writer of its own

Run as `torchrun --nproc_per_node 2 metric_sinks.py --sink tensorboard
--sync none` (or any launcher that sets RANK and WORLD_SIZE); CPU, Gloo.
"""
import argparse
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit; before any backward(), whose state it tracks


def dataset(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    y = ((x[:, 0] + 0.8 * torch.randn(n, generator=g)) > 0).long()  # noisy: shards score differently
    return TensorDataset(x, y)


def accuracy_metric(sync):
    import torchmetrics

    return torchmetrics.classification.MulticlassAccuracy(num_classes=2, sync_on_compute=(sync == "torchmetrics"))


def evaluate(model, val, sync, metric=None):
    model.eval()
    if metric is not None:
        with torch.no_grad():
            for xb, yb in val:
                metric.update(model(xb).argmax(dim=1), yb)
        acc = metric.compute().item()  # every rank: with sync_on_compute, a collective
        metric.reset()
        model.train()
        return acc
    correct = torch.zeros(())
    total = torch.zeros(())
    with torch.no_grad():
        for xb, yb in val:
            correct += (model(xb).argmax(dim=1) == yb).sum()
            total += yb.numel()
    if sync == "all_reduce":
        dist.all_reduce(correct)
        dist.all_reduce(total)
        # The Gloo worker may still hold them (torch 2.x's abort at exit, gloo_exit.py):
        # CI saw it once on this trainer, whose settle() before exiting knew only the model.
        gloo_exit.settle(correct, total)
    model.train()
    return (correct / total).item()


class Sink:
    def __init__(self, kind, logs):
        self.kind = kind
        if kind == "tensorboard":
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir=logs)
        else:
            import wandb

            self.run = wandb.init(project="faultline-metrics", dir=logs, mode="offline")

    def log(self, name, value, step):
        if self.kind == "tensorboard":
            self.writer.add_scalar(name, value, step)
        else:
            import wandb

            wandb.log({name: value}, step=step)

    def close(self):
        if self.kind == "tensorboard":
            self.writer.close()
        else:
            self.run.finish()


def train_and_log(model, opt, train, val, rank, args):
    """args.epochs of 4 steps each, then evaluate and log as --sink and
    --sync say: `model` the DDP-wrapped one, `train` and `val` their loaders
    (each rank's shard, but for rank0_full's whole validation set)."""
    metric = accuracy_metric(args.sync) if args.sync.startswith("torchmetrics") else None
    rank_local = args.sync == "rank_local"
    name = "val/acc_rank%d" % rank if rank_local else "val/acc"
    acc = None
    with tempfile.TemporaryDirectory() as logs:
        sink = Sink(args.sink, os.path.join(logs, "rank%d" % rank)) if rank == 0 or rank_local else None
        for epoch in range(args.epochs):
            if hasattr(train.sampler, "set_epoch"):
                train.sampler.set_epoch(epoch)
            for i, (xb, yb) in enumerate(train):
                if i == 4:
                    break
                opt.zero_grad()
                nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
            if args.sync == "rank0_full":
                acc = evaluate(model.module, val, args.sync) if rank == 0 else None
            else:
                acc = evaluate(model, val, args.sync, metric)
            if sink is not None:
                sink.log(name, acc, epoch)
                print("epoch %d: %s %.4f" % (epoch, name, acc), flush=True)
        if sink is not None:
            sink.close()
    return acc


def parser():
    p = argparse.ArgumentParser()
    p.add_argument("--sink", default="tensorboard", choices=["tensorboard", "wandb"])
    p.add_argument("--sync", default="none",
                   choices=["none", "all_reduce", "rank0_full", "torchmetrics", "torchmetrics_local", "rank_local"])
    p.add_argument("--epochs", type=int, default=2)
    return p


def main():
    args = parser().parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    train_set, val_set = dataset(256, 1), dataset(96, 2)
    train = DataLoader(train_set, batch_size=8, sampler=DistributedSampler(train_set))
    if args.sync == "rank0_full":
        val = DataLoader(val_set, batch_size=8)  # every sample, on the one rank that evaluates
    else:
        val = DataLoader(val_set, batch_size=8, sampler=DistributedSampler(val_set, shuffle=False))
    train_and_log(model, opt, train, val, rank, args)
    gloo_exit.settle(model)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
