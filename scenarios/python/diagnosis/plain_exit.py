"""No torch.distributed at all: each rank of a job crunches numbers on its
own and rank 1 finds its input invalid and exits with status 3 at once,
while rank 0 keeps working. There is no process group, so there is no
rendezvous to fail: the report must say exit code, not rendezvous failure."""
import os
import sys
import time


def main():
    rank = int(os.environ.get("RANK", "0"))
    if rank == 1:
        print("rank 1: input shard is empty", file=sys.stderr, flush=True)
        sys.exit(3)
    deadline = time.monotonic() + 60
    total = 0
    while time.monotonic() < deadline:
        total += sum(i * i for i in range(10000))
    print(total)


if __name__ == "__main__":
    main()
