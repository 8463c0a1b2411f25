"""Two ranks train; each step's loss is all-reduced in the background
(async_op=True) while the next step runs, and read one step later. The last
step's sync is never read: train() returns with its handle and tensor
dropped. Rank 0 writes a checkpoint before that last sync, so rank 1's is
still waiting for it when rank 1 destroys its process group and its DDP
model goes.

On torch 1.13 rank 1 never exits: the DDP Reducer's last reference to the
Gloo process group is dropped with the GIL held, and ~ProcessGroupGloo waits
for its worker, which needs the GIL to free the tensor of the sync it just
finished (the only reference left to that Python object is the work's).
Nothing here knows about faultline."""
import os
import sys
import time
import zlib
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def save_checkpoint(model, path):
    """The state, and a compressed copy of a data cache beside it: about
    1.5 s of CPU."""
    torch.save(model.module.state_dict(), path)
    cache = os.urandom(1 << 20)
    with open(path + ".cache.z", "wb") as f:
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            f.write(zlib.compress(cache, 9))
    os.remove(path + ".cache.z")


def train(model, opt, rank, steps, ckpt):
    pending = None
    for step in range(steps):
        torch.manual_seed(step * 10 + rank)
        x = torch.randn(16, 6)
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        if pending is not None:
            buf, handle = pending
            handle.wait()
            if rank == 0:
                print("step %d: loss %.4f" % (step - 1, buf.item() / dist.get_world_size()), flush=True)
        if rank == 0 and step == steps - 1:
            save_checkpoint(model, ckpt)
        buf = loss.detach().reshape(1)
        pending = buf, dist.all_reduce(buf, async_op=True)
    # the last step's sync is left running: nothing reads it


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Linear(6, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ckpt = os.path.join(os.environ.get("TMPDIR", "/tmp"), "unwaited_sync_%d.pt" % os.getpid())
    train(model, opt, rank, 6, ckpt)
    if rank == 0:
        os.remove(ckpt)
    dist.destroy_process_group()
    print("rank %d done" % rank, flush=True)


if __name__ == "__main__":
    main()
    sys.exit(0)
