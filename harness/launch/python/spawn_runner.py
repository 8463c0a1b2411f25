"""Runs a per-rank trainer script under torch.multiprocessing.spawn, as the
spawn stack runs every Python scenario (docs/LAUNCHERS.md, "spawn").

    python spawn_runner.py --nprocs N [--port P] [NODE FLAGS] SCRIPT [ARGS...]
    python spawn_runner.py --nprocs N [--port P] [NODE FLAGS] -m MODULE [ARGS...]

    NODE FLAGS: --nnodes M --node_rank K --master_addr ADDR  (one runner per node)

mp.spawn runs a function, not a script. This is the pattern users write
around their training function (the robust-script pattern): the parent sets
the rendezvous address and calls spawn(..., join=True); each child gets the
environment torchrun would give it (RANK, LOCAL_RANK, WORLD_SIZE, ...), runs
the trainer in try/finally and destroys its process group on the way out.
Whatever the trainer raises reaches the parent through spawn itself
(ProcessRaisedException, ProcessExitedException), as it would in the user's
own program: that report is the stack's, and is judged like torchrun's.

Across nodes, as users spread a spawn program over a cluster: the same
program on every node with its node's rank, N processes each, process i of
node K rank K*N+i, all meeting at node 0's address. The parent says so in
torchrun's names (GROUP_RANK, LOCAL_WORLD_SIZE) before it spawns, so a child
knows its rank from the moment it starts.
"""
import os
import sys

from run_trainer import check_node_place, parse_flags, run_as_main, split_trainer

_INT_FLAGS = ("--nprocs", "--port", "--nnodes", "--node_rank")


def _usage(message):
    sys.stderr.write("spawn_runner: %s\nusage: spawn_runner.py --nprocs N [--port P] [--nnodes M --node_rank K "
                     "--master_addr ADDR] (SCRIPT | -m MODULE) [ARGS...]\n" % message)
    sys.exit(2)


def _parse(argv):
    """The runner's flags, then the trainer."""
    opts, i = parse_flags(argv, _INT_FLAGS, ("--master_addr",), _usage)
    if opts.get("nprocs", 0) < 1:
        _usage("--nprocs N (N >= 1) is required")
    check_node_place(opts.get("nnodes", 1), opts.get("node_rank", 0), "--nnodes", _usage)
    module, target, args = split_trainer(argv[i:], _usage)
    return opts, module, target, args


def _rank_environment(local_rank, nprocs):
    """What torchrun --nnodes=M --node_rank=K --nproc-per-node=N gives each rank
    (M 1 and K 0 on one node: torchrun --standalone)."""
    node, nodes = int(os.environ["GROUP_RANK"]), int(os.environ["GROUP_WORLD_SIZE"])
    rank, world = node * nprocs + local_rank, nodes * nprocs
    os.environ.update({
        "RANK": str(rank),
        "LOCAL_RANK": str(local_rank),
        "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(nprocs),
        "ROLE_RANK": str(rank),
        "ROLE_WORLD_SIZE": str(world),
        "ROLE_NAME": "default",
    })


def run_rank(local_rank, nprocs, module, target, args):
    """The spawned function: one rank of the job."""
    _rank_environment(local_rank, nprocs)
    try:
        run_as_main(module, target, args)
    finally:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()


def main():
    opts, module, target, args = _parse(sys.argv[1:])
    if not module and not os.path.isfile(target):
        _usage("no such trainer script: %s" % target)
    nprocs = opts["nprocs"]
    os.environ.update({"GROUP_RANK": str(opts.get("node_rank", 0)), "GROUP_WORLD_SIZE": str(opts.get("nnodes", 1)),
                       "LOCAL_WORLD_SIZE": str(nprocs)})
    if "master_addr" in opts:
        os.environ["MASTER_ADDR"] = opts["master_addr"]
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if "port" in opts:
        os.environ["MASTER_PORT"] = str(opts["port"])
    elif "MASTER_PORT" not in os.environ:
        import socket
        with socket.socket() as s:  # free now, for the children's store
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
    import torch.multiprocessing as mp
    mp.spawn(run_rank, args=(nprocs, module, target, args), nprocs=nprocs, join=True)


if __name__ == "__main__":
    main()
