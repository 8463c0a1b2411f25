"""A DDP job whose rank 1 prepares its data shard (a few seconds of work)
and then finds its node-local configuration missing and exits with status
1, while rank 0 has gone straight into init_process_group and waits there
for rank 1: a rendezvous failure."""
import hashlib
import os
import sys
import time
from datetime import timedelta

import torch.distributed as dist


def prepare_shard(rank, seconds=3.0):
    """Hashes the shard's records, as a tokenizer pass over a file would, for
    `seconds` whatever the machine's speed: long enough for rank 0 to be in
    init_process_group by the time this rank gives up (a spawn child of torch
    1.13 takes about 2 s to start; with a fixed count of records, rank 1 ended
    before rank 0 had run a line, and the job had no rendezvous to fail)."""
    h = hashlib.sha256()
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        for _ in range(10_000):
            h.update(b"record %d of shard %d" % (i, rank))
            i += 1
    return h.hexdigest()


def main():
    rank = int(os.environ["RANK"])
    if rank != 0:
        prepare_shard(rank)
        if not os.path.exists("/etc/node-local-training.yaml"):
            print("node config /etc/node-local-training.yaml missing", file=sys.stderr, flush=True)
            sys.exit(1)
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
