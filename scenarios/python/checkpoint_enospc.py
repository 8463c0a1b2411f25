"""A plain torch DDP trainer that checkpoints: a small MLP over Gloo on CPU,
and every rank saves its model and optimizer state every SAVE_EVERY steps the
careful way (temporary file, fsync, rename). It knows nothing of faultline:
the fault comes from outside, for example

    FAULTLINE_INJECT="write:ENOSPC:rank=1:after=1:path=*/checkpoints/*"

under libfaultline_preload.so, and rank 1's second checkpoint write fails
with OSError ENOSPC while rank 0 goes on into the next all-reduce.

Checkpoints go to $CHECKPOINT_DIR, else $FAULTLINE_RUN_DIR/checkpoints (the
run's output directory), else a fresh temporary directory.
"""
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import ddp_common as ddp  # its init_process_group (a rendezvous that late ranks still make)
import gloo_exit  # torch 2.x's abort at exit; before any backward(), whose state it tracks

STEPS = int(os.environ.get("STEPS", "8"))
SAVE_EVERY = int(os.environ.get("SAVE_EVERY", "2"))


def checkpoint_dir(rank):
    base = os.environ.get("CHECKPOINT_DIR")
    if not base and os.environ.get("FAULTLINE_RUN_DIR"):
        base = os.path.join(os.environ["FAULTLINE_RUN_DIR"], "checkpoints")
    if not base:
        base = tempfile.mkdtemp(prefix="ddp-checkpoints-")
    path = os.path.join(base, "rank%d" % rank)
    os.makedirs(path, exist_ok=True)
    return path


def save_checkpoint(path, state):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    ddp.setup(rank, world)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(512, 8, generator=g)
    y = x.sum(dim=1, keepdim=True)
    data = TensorDataset(x, y)
    loader = DataLoader(data, batch_size=16, sampler=DistributedSampler(data, num_replicas=world, rank=rank))
    out = checkpoint_dir(rank)
    for step, (xb, yb) in enumerate(loader, start=1):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()  # DDP all-reduces the gradients here
        opt.step()
        if step % SAVE_EVERY == 0:
            state = {"step": step, "model": model.module.state_dict(), "optimizer": opt.state_dict()}
            save_checkpoint(os.path.join(out, "step%d.pt" % step), state)
        if step == STEPS:
            break
    gloo_exit.settle(model)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
