"""A Ray Train job as its users write one: a training function run by
TorchTrainer on a worker group (ScalingConfig(num_workers=N), Gloo on CPU),
the model wrapped by ray.train.torch.prepare_model (DDP), the data sharded
by ray.train.torch.prepare_data_loader (a DistributedSampler), and the metrics
(and, with --ckpt-every, checkpoints) handed to ray.train.report. Nothing in
it knows faultline.

    python ray_ddp.py --num-workers 2 --steps 8 [--max-failures K] [--ckpt-every K]

The driver connects to the cluster RAY_ADDRESS names (ray.init()), or starts
one of its own without it. The sampler's order is a function of the epoch,
so a job resumed from a checkpoint trains on what a fault-free one did.
With --ckpt-every K, rank 0 reports a checkpoint (model, optimizer, step)
every K steps, as Ray Train's guide does, and every rank starts from
ray.train.get_checkpoint(): after a worker group restart
(FailureConfig(max_failures=K)) that is the last one reported, and the
epoch's batches already trained on are skipped. Each epoch (and the last
step) ends with the loss all-reduced.

Ray keeps the run's results under --storage-path, else
$FAULTLINE_RUN_DIR/trainer/ray_results, else ./ray_results.
"""
import argparse
import os
import tempfile
import time

import ray
import ray.train
import ray.train.torch
import torch
import torch.distributed as dist
import torch.nn as nn
from ray.train import Checkpoint, FailureConfig, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer
from torch.utils.data import DataLoader, TensorDataset

CKPT = "state.pt"


def dataset(n=512):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 16, generator=g)
    return TensorDataset(x, x[:, :1] * 0.5 - x[:, 1:2] + 0.1 * torch.randn(n, 1, generator=g))


def train_func(config):
    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    start = 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as d:
            state = torch.load(os.path.join(d, CKPT), map_location="cpu")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["step"]
        print("rank %d: resumed from step %d" % (rank, start), flush=True)
    ddp = ray.train.torch.prepare_model(model)
    # Ray Train puts a DistributedSampler (shuffled, seed 0) in the loader.
    loader = ray.train.torch.prepare_data_loader(DataLoader(dataset(), batch_size=config["batch"], shuffle=True))
    loss_fn = nn.MSELoss()
    every = config["ckpt_every"]
    step, epoch, skip = start, start // len(loader), start % len(loader)
    while step < config["steps"]:
        if world > 1:
            loader.sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(loader):
            if i < skip:
                continue  # what the checkpoint already trained on
            opt.zero_grad()
            loss = loss_fn(ddp(x), y)
            loss.backward()
            opt.step()
            step += 1
            if config["step_ms"]:
                time.sleep(config["step_ms"] / 1000.0)  # a real model's step takes that long
            if every and step % every == 0:
                with tempfile.TemporaryDirectory() as d:
                    saved = None
                    if rank == 0:
                        torch.save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict()},
                                   os.path.join(d, CKPT))
                        saved = Checkpoint.from_directory(d)
                    ray.train.report({"step": step, "loss": loss.item()}, checkpoint=saved)
            if step >= config["steps"]:
                break
        skip = 0
        epoch += 1
        total = loss.detach().clone()
        dist.all_reduce(total)
    if rank == 0:
        print("done: step %d, loss %.6f" % (step, total.item() / world), flush=True)
    ray.train.report({"step": step, "loss": total.item() / world})


def fit(train_loop, config, num_workers, max_failures, storage_path=""):
    """TorchTrainer.fit() of `train_loop` on `num_workers` CPU workers, Ray
    restarting the worker group up to `max_failures` times; its results under
    `storage_path`, else $FAULTLINE_RUN_DIR/trainer/ray_results, else
    ./ray_results. The drivers here (this one, ray_bugs.py) start so."""
    if not storage_path:
        run_dir = os.environ.get("FAULTLINE_RUN_DIR")
        storage_path = os.path.join(run_dir, "trainer", "ray_results") if run_dir else os.path.abspath("ray_results")
    trainer = TorchTrainer(
        train_loop,
        train_loop_config=config,
        scaling_config=ScalingConfig(num_workers=num_workers, use_gpu=False),
        run_config=RunConfig(storage_path=storage_path, failure_config=FailureConfig(max_failures=max_failures)),
    )
    return trainer.fit()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--step-ms", type=int, default=0)
    p.add_argument("--ckpt-every", type=int, default=0)
    p.add_argument("--max-failures", type=int, default=0)
    p.add_argument("--storage-path", default="")
    args = p.parse_args()

    result = fit(train_func, {"steps": args.steps, "batch": args.batch, "step_ms": args.step_ms,
                              "ckpt_every": args.ckpt_every}, args.num_workers, args.max_failures, args.storage_path)
    print("result: %s" % (result.metrics,), flush=True)


if __name__ == "__main__":
    main()
