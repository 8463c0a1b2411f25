"""A DDP job whose rank 1 prepares its data shard (a few seconds of work)
and then finds its node-local configuration missing and exits with status
1, while rank 0 has gone straight into init_process_group and waits there
for rank 1: a rendezvous failure."""
import hashlib
import os
import sys
from datetime import timedelta

import torch.distributed as dist


def prepare_shard(rank):
    """Hashes the shard's records, as a tokenizer pass over a file would."""
    h = hashlib.sha256()
    for i in range(1_500_000):
        h.update(b"record %d of shard %d" % (i, rank))
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
