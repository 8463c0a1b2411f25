"""A distributed job whose ranks hand off through the c10d store, as users
write one: nothing in it knows faultline. Rank 0 prepares the weights (or
finds them cached) and is to announce them with store.set("weights_ready");
the other ranks wait for that key with store.get before they load them. The
bug: rank 0 announces only when it had to download, so with a warm cache it
goes straight on to the barrier, and the others wait in the store for a key
nobody will set (until the store's own timeout, 300 s here).

Gloo on CPU; the launcher sets the rank environment.
"""
import datetime
import os
import tempfile

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d


def prepare_weights(path, store):
    if not os.path.exists(path):
        torch.save({"w": torch.randn(16)}, path)  # "download"
        store.set("weights_ready", path)  # only here: a warm cache never announces


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    rank = dist.get_rank()
    store = distributed_c10d._get_default_store()
    cache = os.path.join(tempfile.gettempdir(), "store-handshake-weights-%d.pt" % os.getpid())
    if rank == 0:
        torch.save({"w": torch.zeros(16)}, cache)  # warm from an earlier run
        prepare_weights(cache, store)
    else:
        path = store.get("weights_ready").decode()
        torch.load(path)
    dist.barrier()
    if rank == 0:
        os.unlink(cache)
        print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
