"""metric_sinks.py's classifier as a Ray Train user writes it: the training
function TorchTrainer runs on each worker, the model through
ray.train.torch.prepare_model (DDP), the training and validation loaders
through prepare_data_loader (each rank's shard: a DistributedSampler), and
the accuracy written where people write it from a worker (rank 0's, or
every rank's under its own name), with metric_sinks.py's --sink and --sync:

    python ray_metrics.py --num-workers 2 --sink tensorboard --sync none

--sync rank0_full leaves the validation loader unprepared: rank 0 evaluates
the whole set. Each worker hands its last accuracy to ray.train.report.
CPU, Gloo.
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
    import metric_sinks

    args = argparse.Namespace(**config)
    rank = ray.train.get_context().get_world_rank()
    torch.manual_seed(0)
    model = ray.train.torch.prepare_model(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    train = ray.train.torch.prepare_data_loader(DataLoader(metric_sinks.dataset(256, 1), batch_size=8, shuffle=True))
    val = DataLoader(metric_sinks.dataset(96, 2), batch_size=8)
    if args.sync != "rank0_full":
        val = ray.train.torch.prepare_data_loader(val)
    acc = metric_sinks.train_and_log(model, opt, train, val, rank, args)
    ray.train.report({"val_acc": acc if acc is not None else float("nan")})


def main():
    sys.path.insert(0, PYTHON_DIR)
    import metric_sinks

    p = metric_sinks.parser()
    p.add_argument("--num-workers", type=int, default=2)
    args = p.parse_args()
    fit(train_func, {"sink": args.sink, "sync": args.sync, "epochs": args.epochs}, args.num_workers, 0)


if __name__ == "__main__":
    main()
