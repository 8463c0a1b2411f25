"""A small DDP-less distributed job, as a user writes one: nothing in it knows
faultline. Every rank joins the process group, then goes through a few
rounds of work, a barrier and an all-reduce. One rank can stop before one
point and never come back (time.sleep: a deadlock on a lock, input() on a
terminal nobody reads, a wait for a file that never appears all look alike
from outside: idle, no CPU, no I/O):

  --sleep-rank R --before init       rank R never calls init_process_group:
                                     its peers wait for it at the rendezvous
  --sleep-rank R --before barrier:N  rank R stops before its N-th barrier
                                     (from 1): its peers wait in it

Gloo on CPU; the launcher sets the rank environment.
"""
import argparse
import datetime
import time

import torch
import torch.distributed as dist


def stop_forever():
    while True:
        time.sleep(3600)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--sleep-rank", type=int, default=-1)
    p.add_argument("--before", default="")
    args = p.parse_args()
    import os

    rank = int(os.environ.get("RANK", "0"))
    if rank == args.sleep_rank and args.before == "init":
        stop_forever()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    rank = dist.get_rank()
    total = torch.zeros(1)
    for n in range(1, args.rounds + 1):
        total += torch.randn(64, 64).sum() * 0  # a round's work
        if rank == args.sleep_rank and args.before == "barrier:%d" % n:
            stop_forever()
        dist.barrier()
        dist.all_reduce(total)
    if rank == 0:
        print("done: %d rounds" % args.rounds, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
