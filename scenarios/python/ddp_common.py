"""Shared pieces of the small torch.distributed DDP trainers in this folder.

Each trainer is a plain, real DDP job over Gloo on CPU: a tiny MLP, a
DistributedSampler over a synthetic dataset, gradients all-reduced by DDP,
the mean loss all-reduced explicitly. Nothing here knows about faultline:
what the reports say about these trainers comes from faultline's Python
shim (harness/probe/python) and the LD_PRELOAD interposer, as it would for
any user's trainer.
"""
import collections
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gloo_exit  # noqa: E402


def fault_rank(default=1):
    """The rank a trainer's fault strikes: `--fault-rank R` on its command
    line (a scenario's `args`), else FAULT_RANK, else `default`."""
    if "--fault-rank" in sys.argv:
        return int(sys.argv[sys.argv.index("--fault-rank") + 1])
    return int(os.environ.get("FAULT_RANK", str(default)))


# How long the ranks may take to meet at init_process_group, whatever the
# collectives' timeout. A launcher that starts its ranks one after another
# has them join seconds apart: Lightning's script is rank 0, imports
# everything, then starts ranks 1..N-1, which import it all again while rank
# 0 already waits in the rendezvous (3 s on an idle 2-core machine, 9.5 to
# 10 s with three such runs at once). init_process_group's timeout bounds
# that wait too, so a 5-s collective timeout failed the rendezvous instead of
# the collective. Twice the worst measured, and well under the 60-s deadline
# of multinode-agent-kill-rendezvous, whose DeepSpeed ranks on n1 must give
# up in this rendezvous (54 s in all with 30 s here, at load 6).
RENDEZVOUS_TIMEOUT_S = 20


def setup(rank=None, world_size=None, timeout_s=10):
    """init_process_group over Gloo; its collectives time out after
    `timeout_s`, so hangs end in seconds. The ranks meet with at least
    RENDEZVOUS_TIMEOUT_S where torch can set the group's timeout after it
    is made (2.x: _set_pg_timeout); torch 1.13 cannot, and its launchers
    here start every rank at once."""
    if rank is None:
        rank = int(os.environ["RANK"])
        world_size = int(os.environ["WORLD_SIZE"])
    set_timeout = getattr(dist.distributed_c10d, "_set_pg_timeout", None)
    join_s = max(timeout_s, RENDEZVOUS_TIMEOUT_S) if set_timeout else timeout_s
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=timedelta(seconds=join_s))
    if join_s != timeout_s:
        set_timeout(timedelta(seconds=timeout_s))
    return rank, world_size


def cleanup(*held):
    """destroy_process_group; on a rank that ends without an exception, first
    lets Gloo's threads let go of the recent all-reduced tensors and of
    `held` (tensors, modules: gloo_exit.settle), so torch 2.x does not abort
    it at exit. A rank that is failing goes straight on: its fault is the
    point."""
    if dist.is_initialized():
        if sys.exc_info()[0] is None:
            gloo_exit.settle(_recent, held)
        dist.destroy_process_group()


def make_dataset():
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(256, 8, generator=g)
    y = x.sum(dim=1, keepdim=True)
    return TensorDataset(x, y)


def make_model(seed=0):
    torch.manual_seed(seed)
    return DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))


def make_model_and_data(rank, world_size, seed=0):
    model = make_model(seed)
    data = make_dataset()
    sampler = DistributedSampler(data, num_replicas=world_size, rank=rank, seed=seed)
    loader = DataLoader(data, batch_size=16, sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    return model, loader, opt


def train_step(model, opt, xb, yb):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(xb), yb)
    loss.backward()  # DDP all-reduces the gradients here
    opt.step()
    return loss


# The last all-reduced losses, which cleanup() hands to gloo_exit.settle()
# (torch 2.x: it waits until no Gloo worker holds them). Keeping them alive
# against torch 1.13's teardown hang is gloo_exit's own wrapping of the
# collectives now, for every call (docs/TORCH2.md).
_recent = collections.deque(maxlen=4)


def mean_loss(loss):
    """The loss averaged over ranks: an explicit all-reduce each step."""
    loss = loss.detach().clone()
    dist.all_reduce(loss)
    _recent.append(loss)
    return loss / dist.get_world_size()
