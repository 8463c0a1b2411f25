"""A DDP trainer with a steady rhythm of short steps, as a user writes one:
nothing in it knows faultline. Each step computes for about --step-ms (the
input pipeline's work, outside autograd), then a forward, a backward (DDP's
gradient all-reduce) and an optimizer step; every --report-every steps the
loss is all-reduced. Gloo on CPU; the launcher sets the rank environment.

Its own flags make one rank misbehave the way real jobs do (no instrument
needed, so they work with and without faultline's shim):

  --stall-rank R --stall-step S     at step S rank R's prefetch waits forever
                                    for a batch that never comes: it never
                                    enters that step's all-reduce, its peers
                                    wait there (a hang)
  --spin                            ... and the stalled rank spins on the CPU
                                    instead of blocking (a busy laggard)
  --checkpoint-rank R --checkpoint-step S --checkpoint-s T
                                    after step S rank R writes a checkpoint
                                    for T seconds (fsync'd chunks) while its
                                    peers wait in the next all-reduce (slow,
                                    busy, no hang)
  --slow-start-rank R --slow-start-s T
                                    rank R downloads for T seconds (busy:
                                    bytes arriving) before DDP wraps the model:
                                    its peers wait in DDP's first broadcast
  --first-step-s T                  every rank's first step compiles for
                                    T + rank/2 seconds (busy: CPU), as a
                                    traced or compiled model does: the ranks
                                    done first wait for the last in the first
                                    gradient all-reduce
"""
import argparse
import os
import queue
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit; before any backward(), whose state it tracks


def args_of():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--step-ms", type=float, default=50)
    p.add_argument("--report-every", type=int, default=10)
    p.add_argument("--pg-timeout", type=float, default=300)
    p.add_argument("--stall-rank", type=int, default=-1)
    p.add_argument("--stall-step", type=int, default=30)
    p.add_argument("--spin", action="store_true")
    p.add_argument("--checkpoint-rank", type=int, default=-1)
    p.add_argument("--checkpoint-step", type=int, default=20)
    p.add_argument("--checkpoint-s", type=float, default=3)
    p.add_argument("--slow-start-rank", type=int, default=-1)
    p.add_argument("--slow-start-s", type=float, default=3)
    p.add_argument("--first-step-s", type=float, default=0)
    return p.parse_args()


class Prefetcher:
    """The input pipeline: a batch per step, made on the spot; a stalled one never arrives."""

    def __init__(self, args, rank):
        self.args, self.rank = args, rank
        self.gen = torch.Generator().manual_seed(1000 + rank)
        self.stalled = queue.Queue()

    def next_batch(self, step):
        if self.rank == self.args.stall_rank and step == self.args.stall_step:
            if self.args.spin:
                spin_forever()
            return self.stalled.get()  # the producer died: nothing ever comes
        x = torch.randn(32, 64, generator=self.gen)
        return x, x.sum(dim=1, keepdim=True)


def spin_forever():
    x = torch.randn(64, 64)
    while True:
        x = torch.tanh(x @ x)


def work(ms):
    """About `ms` of CPU, the step's compute outside autograd."""
    end = time.monotonic() + ms / 1000.0
    x = torch.randn(96, 96)
    while time.monotonic() < end:
        x = torch.tanh(x @ x)


def download_weights(seconds):
    """A slow download before training: 256 KiB arrives every 20 ms and is
    written to a local file, for `seconds`."""
    fd, path = tempfile.mkstemp(prefix="rhythm-weights-", suffix=".bin")
    try:
        with os.fdopen(fd, "wb") as f:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                if f.tell() > (64 << 20):
                    f.seek(0)
                f.write(os.urandom(256 << 10))
                f.flush()
                time.sleep(0.02)
    finally:
        os.unlink(path)


def write_checkpoint(model, seconds):
    """A slow checkpoint: the state, then fsync'd chunks for `seconds`."""
    fd, path = tempfile.mkstemp(prefix="rhythm-ckpt-", suffix=".pt")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(model.state_dict(), f)
            chunk = os.urandom(1 << 20)
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                if f.tell() > (64 << 20):
                    f.seek(0)
                f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
    finally:
        os.unlink(path)


def main():
    args = args_of()
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    if rank == args.slow_start_rank:
        download_weights(args.slow_start_s)  # a slow dataset or weights download before training starts
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.MSELoss()
    data = Prefetcher(args, rank)
    total = None
    for step in range(1, args.steps + 1):
        x, y = data.next_batch(step)
        work(args.step_ms)
        if step == 1 and args.first_step_s > 0:
            work(1000 * (args.first_step_s + rank / 2))  # the first step compiles; ranks finish it at their own pace
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if rank == args.checkpoint_rank and step == args.checkpoint_step:
            write_checkpoint(model, args.checkpoint_s)
        if step % args.report_every == 0:
            total = loss.detach().reshape(1).clone()
            dist.all_reduce(total)
            if rank == 0:
                print("step %d loss %.4f" % (step, total.item() / world), flush=True)
    gloo_exit.settle(model, total)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
