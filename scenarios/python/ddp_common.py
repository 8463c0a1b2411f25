"""Shared pieces of the small torch.distributed DDP trainers in this folder.

Each trainer is a real DDP job over Gloo on CPU: a tiny MLP, a
DistributedSampler over a synthetic dataset, gradients all-reduced by DDP.
When FAULTLINE_EVENTS or FAULTLINE_EVENTS_DIR is set, a few faultline events
(CONTRACT.md section 3) are written, one os.write() per line, so diagnosis
fixtures carry real event files too.
"""
import faulthandler
import json
import os
import signal
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

_fd = None
_rank = None


def _events_fd(rank):
    global _fd, _rank
    if _fd is None or _rank != rank:
        path = os.environ.get("FAULTLINE_EVENTS")
        if not path and os.environ.get("FAULTLINE_EVENTS_DIR"):
            path = os.path.join(os.environ["FAULTLINE_EVENTS_DIR"], str(rank), "events.jsonl")
        if not path:
            return None
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        _rank = rank
    return _fd


def event(rank, ev, **fields):
    fd = _events_fd(rank)
    if fd is None:
        return
    rec = {"t": time.time_ns(), "rank": rank, "pid": os.getpid(), "ev": ev}
    rec.update(fields)
    os.write(fd, (json.dumps(rec) + "\n").encode())


def _register_stack_dump(rank):
    """SIGUSR1 dumps every thread's Python stack (to ranks/R/stacks.txt when
    the events directory is known), as the faultline teardown asks for."""
    out = None
    if os.environ.get("FAULTLINE_EVENTS_DIR"):
        path = os.path.join(os.environ["FAULTLINE_EVENTS_DIR"], str(rank), "stacks.txt")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        out = open(path, "a")
    faulthandler.register(signal.SIGUSR1, file=out or __import__("sys").stderr, all_threads=True)
    globals()["_stacks_file"] = out  # keep it open for the handler


def setup(rank=None, world_size=None, timeout_s=10):
    """init_process_group over Gloo with a short timeout, so hangs end in seconds."""
    if rank is None:
        rank = int(os.environ["RANK"])
        world_size = int(os.environ["WORLD_SIZE"])
    _register_stack_dump(rank)
    event(rank, "start", world_size=world_size, backend="gloo", device="cpu")
    dist.init_process_group("gloo", rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=timeout_s))
    event(rank, "pg_init", backend="gloo")
    return rank, world_size


def cleanup(rank):
    if dist.is_initialized():
        dist.destroy_process_group()
        event(rank, "pg_destroy", backend="gloo")


def make_model_and_data(rank, world_size, seed=0):
    torch.manual_seed(seed)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(256, 8, generator=g)
    y = x.sum(dim=1, keepdim=True)
    sampler = DistributedSampler(TensorDataset(x, y), num_replicas=world_size, rank=rank, seed=seed)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    return model, loader, opt


def train_step(model, opt, xb, yb):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(xb), yb)
    loss.backward()  # DDP all-reduces the gradients here
    opt.step()
    return loss


def allreduce(rank, tensor, seq):
    """An explicit all-reduce, announced as collective_begin/end events."""
    event(rank, "collective_begin", op="allreduce", seq=seq, numel=tensor.numel(), dtype="float32")
    dist.all_reduce(tensor)
    event(rank, "collective_end", op="allreduce", seq=seq, numel=tensor.numel(), dtype="float32")
