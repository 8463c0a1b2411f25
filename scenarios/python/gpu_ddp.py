"""A small DDP trainer on CUDA, with the GPU failures people actually hit,
chosen by --bug (each on --bug-rank, default 1, at --bug-step, default 3):

  none            a correct job: one GPU per rank (torch.cuda.set_device(LOCAL_RANK)), NCCL
  no_set_device   the classic: no torch.cuda.set_device(local_rank), every rank's
                  tensors on cuda:0; NCCL refuses ("Duplicate GPU detected") or hangs
  oom             one rank allocates far past the device's memory: torch.OutOfMemoryError
  device_assert   one rank indexes out of range inside a kernel; the device-side
                  assert surfaces later, at an unrelated synchronising call, as a
                  sticky "CUDA error: device-side assert triggered"
  hang            one rank never enters the step's explicit all-reduce; the peers
                  wait in NCCL until faultline (or the NCCL watchdog) ends it

--backend gloo keeps the collectives on the CPU (tensors copied there), so
several ranks can share one GPU for the faults that need no NCCL.
"""
import argparse
import os
import threading
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bug", default="none", choices=["none", "no_set_device", "oom", "device_assert", "hang"])
    p.add_argument("--bug-rank", type=int, default=1)
    p.add_argument("--bug-step", type=int, default=3)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--backend", default="nccl")
    p.add_argument("--pg-timeout", type=int, default=600)
    args = p.parse_args()

    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    shared_gpu = args.backend != "nccl"  # gloo: every rank may use cuda:0
    device = torch.device("cuda", 0 if (args.bug == "no_set_device" or shared_gpu) else local_rank)
    if args.bug != "no_set_device":
        torch.cuda.set_device(device)
    dist.init_process_group(args.backend, timeout=timedelta(seconds=args.pg_timeout))
    world = dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1)).to(device)
    ddp = DDP(model, device_ids=None if shared_gpu else [device.index])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    table = torch.randn(16, 64, device=device)

    for step in range(1, args.steps + 1):
        mine = rank == args.bug_rank and step == args.bug_step
        x = torch.randn(32, 64, device=device)
        if mine and args.bug == "oom":
            free, total = torch.cuda.mem_get_info(device)
            torch.empty(int(total * 4), dtype=torch.uint8, device=device)
        if mine and args.bug == "device_assert":
            # Asynchronous: the kernel's assert fires on the device; the host
            # learns of it at the next synchronising call below.
            x = x + table[torch.full((32,), 10_000, device=device)]
        opt.zero_grad()
        loss = nn.functional.mse_loss(ddp(x), x.sum(dim=1, keepdim=True))
        loss.backward()
        opt.step()
        total_loss = loss.detach().reshape(1)
        if shared_gpu:
            total_loss = total_loss.cpu()
        if mine and args.bug == "hang":
            threading.Event().wait()  # never enters this step's all-reduce
        dist.all_reduce(total_loss)
        if rank == 0:
            print("step %d loss %.4f" % (step, total_loss.item() / world), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
