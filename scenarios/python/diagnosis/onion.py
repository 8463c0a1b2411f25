"""Errors inside errors, and earlier failures that cause later ones.

A small real DDP job over Gloo on CPU (a tiny MLP, a DistributedSampler, the
gradients all-reduced by DDP) whose rank `--fault-rank R` (default 1) fails at
step `--fault-step S` (default 3) in the way `--shape` names. Every shape is
written the way real trainers fail, and nothing here knows about faultline:

  raise_from        a KeyError re-raised as RuntimeError `from` it
  context           a ValueError whose handler fails in turn (implicit context)
  dataloader        a DataLoader worker raises (itself chained: UnicodeDecodeError
                    -> ValueError); the main process re-raises it with
                    "Original Traceback" in the message
  c10               a C++ c10::Error (a shape mismatch in a matmul) surfacing as
                    RuntimeError, with TORCH_SHOW_CPP_STACKTRACES=1 as users set
                    it to debug: "Exception raised from ... at FILE:LINE"
  thread_queue      a prefetch thread dies (ValueError); the main thread then
                    times out on its queue (queue.Empty)
  thread_result     a metrics thread dies (ZeroDivisionError); the main thread
                    then misses its result (KeyError)
  worker_kill       a DataLoader worker is killed by SIGKILL; the main process
                    raises "DataLoader worker (pid N) is killed by signal"
  worker_segv       a DataLoader worker segfaults (a NULL read through ctypes)
  logged_then_fail  a handled error is logged with its traceback at step 1 (the
                    job goes on); the real bug (a NameError) comes at the fault step
  user_package      the error is raised inside the user's own package, installed
                    in a site-packages directory (shardkit, beside this file)
"""
import argparse
import ctypes
import logging
import os
import queue
import signal
import site
import sys
import threading

import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset, DistributedSampler  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import ddp_common as ddp  # noqa: E402

site.addsitedir(os.path.join(HERE, "userenv", "lib", "python3", "site-packages"))
import shardkit  # noqa: E402  the user's own package, "pip-installed"

BATCH = 16


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--shape", required=True)
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-step", type=int, default=3)
    p.add_argument("--steps", type=int, default=6)
    return p.parse_known_args()[0]


class Records(Dataset):
    """Synthetic (x, y) records; on the faulty rank one record is poisoned."""

    def __init__(self, base, poison=None, how=None):
        self.base, self.poison, self.how = base, poison, how

    def __len__(self):
        return len(self.base)

    def __getitem__(self, idx):
        if idx == self.poison:
            if self.how == "raise":
                return self.decode(idx, b"\xff\xfe record")
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.how == "segv":
                ctypes.string_at(0)
        return self.base[idx]

    def decode(self, idx, raw):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError("record %d is corrupt" % idx) from e


def read_config(cfg, key):
    try:
        return cfg[key]
    except KeyError as e:
        raise RuntimeError("config has no %r for this step" % key) from e


def parse_schedule(text):
    try:
        return float(text)
    except ValueError:
        return text.to_float()  # the fallback itself is broken


class Prefetcher(threading.Thread):
    """Computes a per-step value in the background; the main thread waits for it."""

    def __init__(self, fail_at, how):
        super().__init__(name="prefetch", daemon=True)
        self.fail_at, self.how = fail_at, how
        self.todo, self.done, self.results = queue.Queue(), queue.Queue(), {}

    def run(self):
        while True:
            step = self.todo.get()
            if step is None:
                return
            if step == self.fail_at and self.how == "queue":
                raise ValueError("checksum mismatch in shard %d" % step)
            if step == self.fail_at and self.how == "result":
                elapsed = 0.0
                self.results[step] = BATCH / elapsed
            self.results[step] = float(step)
            self.done.put(step)

    def value(self, step):
        self.todo.put(step)
        if self.how == "queue":
            return self.done.get(timeout=3)
        try:
            self.done.get(timeout=3)
        except queue.Empty:
            pass  # a late value is tolerated; a missing one is not
        return self.results[step]


def train(rank, world, args):
    faulty = rank == args.fault_rank
    model = ddp.make_model(0)
    base = ddp.make_dataset()
    sampler = DistributedSampler(base, num_replicas=world, rank=rank, seed=0)
    poison = list(sampler)[args.fault_step * BATCH] if faulty else None
    how = {"dataloader": "raise", "worker_kill": "kill", "worker_segv": "segv"}.get(args.shape)
    workers = 2 if how else 0
    loader = DataLoader(Records(base, poison, how), batch_size=BATCH, sampler=sampler, num_workers=workers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    prefetch = None
    if args.shape in ("thread_queue", "thread_result"):
        prefetch = Prefetcher(args.fault_step if faulty else -1, args.shape.split("_")[1])
        prefetch.start()
    for step, (xb, yb) in enumerate(loader):
        if step >= args.steps:
            break
        if prefetch is not None:
            prefetch.value(step)
        if step == 1 and faulty and args.shape == "logged_then_fail":
            try:
                read_config({"lr": 0.01}, "warmup")
            except RuntimeError:
                logging.exception("no warmup configured, going on without it")
        if step == args.fault_step and faulty:
            strike(args.shape, xb)
        ddp.mean_loss(ddp.train_step(model, opt, xb, yb))
    if prefetch is not None:
        prefetch.todo.put(None)


def strike(shape, xb):
    if shape == "raise_from":
        read_config({"lr": 0.01}, "warmup")
    elif shape == "context":
        parse_schedule("fast")
    elif shape == "c10":
        head = torch.nn.Linear(16, 4)
        head(xb)
    elif shape == "logged_then_fail":
        b = c  # noqa: F821
    elif shape == "user_package":
        shardkit.load_shard("shard-%d" % len(xb), xb)


def run_rank(rank, world, args):
    ddp.setup(rank, world)
    try:
        train(rank, world, args)
    finally:
        ddp.cleanup()


def main():
    args = parse_args()
    run_rank(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)


if __name__ == "__main__":
    main()
