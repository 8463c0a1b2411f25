"""A DDP trainer that checkpoints and resumes, as a user writes one.

Every K steps rank 0 saves the model, the optimizer (SGD with momentum) and
the step, atomically: to a temporary file in the same directory, fsync'd,
then renamed over the last one; every rank waits at a barrier until it is
there. At start every rank loads the last checkpoint, when there is one,
before DDP wraps the model, and goes on from the step after it. The batches
are a function of the step (a seeded generator per step and rank), so a
resumed job trains on what it would have trained on without the failure:
on CPU with Gloo its final parameters equal a fault-free run's, bit for bit.

  --skip-optimizer   resume the model only, not the optimizer's momentum:
                     a common bug; the job finishes, with other parameters.
  --no-atomic        torch.save straight over the last checkpoint, as many
                     trainers do: a save cut short leaves no checkpoint whole.

Checkpoints go to --ckpt-dir, else $CHECKPOINT_DIR, else
$FAULTLINE_RUN_DIR/trainer/checkpoints (each faultline run starts with it
empty), else ./checkpoints. Nothing in it knows faultline.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import gloo_exit  # torch 2.x's abort at exit; before any backward(), whose state it tracks

CKPT = "last.pt"


def checkpoint_dir(arg):
    if arg:
        return arg
    if os.environ.get("CHECKPOINT_DIR"):
        return os.environ["CHECKPOINT_DIR"]
    if os.environ.get("FAULTLINE_RUN_DIR"):
        return os.path.join(os.environ["FAULTLINE_RUN_DIR"], "trainer", "checkpoints")
    return "checkpoints"


def batch(step, rank, n=16):
    g = torch.Generator().manual_seed(100003 * step + rank)
    x = torch.randn(n, 16, generator=g)
    return x, x[:, :1] * 0.5 - x[:, 1:2] + 0.1 * torch.randn(n, 1, generator=g)


def save(path, model, opt, step, atomic=True):
    state = {"step": step, "model": model.state_dict(), "optimizer": opt.state_dict()}
    if not atomic:
        torch.save(state, path)
        return
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--ckpt-every", type=int, default=10)
    p.add_argument("--ckpt-dir", default="")
    p.add_argument("--skip-optimizer", action="store_true")
    p.add_argument("--no-atomic", action="store_true")
    args = p.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)

    ckpt_dir = checkpoint_dir(args.ckpt_dir)
    path = os.path.join(ckpt_dir, CKPT)
    start = 0
    if os.path.exists(path):
        state = torch.load(path, map_location="cpu")
        model.load_state_dict(state["model"])
        if not args.skip_optimizer:
            opt.load_state_dict(state["optimizer"])
        start = state["step"]
        print("rank %d: resumed from step %d (%s)" % (rank, start, path), flush=True)
    elif rank == 0:
        os.makedirs(ckpt_dir, exist_ok=True)
    if start >= args.steps:
        print("rank %d: nothing to do, the checkpoint is at step %d" % (rank, start), flush=True)

    ddp = DDP(model)
    loss_fn = nn.MSELoss()
    for step in range(start + 1, args.steps + 1):
        x, y = batch(step, rank)
        opt.zero_grad()
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        if step % args.ckpt_every == 0:
            if rank == 0:
                save(path, model, opt, step, atomic=not args.no_atomic)
            dist.barrier()
    if rank == 0 and start < args.steps:
        print("done: step %d, loss %.6f" % (args.steps, loss.item()), flush=True)
    gloo_exit.settle(ddp)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
