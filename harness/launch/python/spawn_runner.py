"""Runs a per-rank trainer script under torch.multiprocessing.spawn, as the
spawn stack runs every Python scenario (docs/LAUNCHERS.md, "spawn").

    python spawn_runner.py --nprocs N [--port P] SCRIPT [ARGS...]
    python spawn_runner.py --nprocs N [--port P] -m MODULE [ARGS...]

mp.spawn runs a function, not a script. This is the pattern users write
around their training function (the robust-script pattern): the parent sets
the rendezvous address and calls spawn(..., join=True); each child gets the
environment torchrun would give it (RANK, LOCAL_RANK, WORLD_SIZE, ...), runs
the trainer in try/finally and destroys its process group on the way out.
Whatever the trainer raises reaches the parent through spawn itself
(ProcessRaisedException, ProcessExitedException), as it would in the user's
own program: that report is the stack's, and is judged like torchrun's.
"""
import os
import sys

from run_trainer import run_as_main, split_trainer


def _usage(message):
    sys.stderr.write("spawn_runner: %s\nusage: spawn_runner.py --nprocs N [--port P] (SCRIPT | -m MODULE) [ARGS...]\n"
                     % message)
    sys.exit(2)


def _parse(argv):
    nprocs, port, i = None, None, 0
    while i < len(argv) and argv[i].startswith("--"):
        flag = argv[i]
        if flag not in ("--nprocs", "--port") or i + 1 >= len(argv):
            _usage("unknown option or missing value: %s" % flag)
        try:
            value = int(argv[i + 1])
        except ValueError:
            _usage("%s %r: expected a whole number" % (flag, argv[i + 1]))
        if flag == "--nprocs":
            nprocs = value
        else:
            port = value
        i += 2
    if nprocs is None or nprocs < 1:
        _usage("--nprocs N (N >= 1) is required")
    module, target, args = split_trainer(argv[i:], _usage)
    return nprocs, port, module, target, args


def _rank_environment(local_rank, world):
    """What torchrun --standalone --nproc-per-node=WORLD gives each rank."""
    os.environ.update({
        "RANK": str(local_rank),
        "LOCAL_RANK": str(local_rank),
        "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(world),
        "GROUP_RANK": "0",
        "GROUP_WORLD_SIZE": "1",
        "ROLE_RANK": str(local_rank),
        "ROLE_WORLD_SIZE": str(world),
        "ROLE_NAME": "default",
    })


def run_rank(local_rank, world, module, target, args):
    """The spawned function: one rank of the job."""
    _rank_environment(local_rank, world)
    try:
        run_as_main(module, target, args)
    finally:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()


def main():
    nprocs, port, module, target, args = _parse(sys.argv[1:])
    if not module and not os.path.isfile(target):
        _usage("no such trainer script: %s" % target)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if port is not None:
        os.environ["MASTER_PORT"] = str(port)
    elif "MASTER_PORT" not in os.environ:
        import socket
        with socket.socket() as s:  # free now, for the children's store
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
    import torch.multiprocessing as mp
    mp.spawn(run_rank, args=(nprocs, module, target, args), nprocs=nprocs, join=True)


if __name__ == "__main__":
    main()
