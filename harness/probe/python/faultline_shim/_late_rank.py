"""Ranks that only init_process_group names: a process started without RANK
that joins a process group with an explicit rank.

PyTorch Lightning's launcher is the user's own script: that process is rank
0, and it re-runs the script for ranks 1..N-1 with LOCAL_RANK, NODE_RANK and
WORLD_SIZE but no RANK; each then calls
torch.distributed.init_process_group(backend, rank=R, world_size=N). Other
launchers of that kind (a job that computes its ranks from SLURM_PROCID or
OMPI_COMM_WORLD_RANK itself) do the same. The shim wraps
init_process_group in every armed process that is not yet a rank; the call
makes it rank R before it joins (so its pg_init_begin is recorded), or,
where the rank comes from the store or the environment only, right after.
The supervisor then finds the rank by the `start` event's pid.
"""
import functools
import os

from . import _instrument, _state

_POSITIONAL_RANK = 4  # init_process_group(backend, init_method, timeout, world_size, rank, ...)
_POSITIONAL_WORLD = 3


def _int_arg(args, kwargs, name, index):
    value = kwargs.get(name, args[index] if len(args) > index else None)
    try:
        value = int(value)
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _wrap(module, orig, activate):
    @functools.wraps(orig)
    def init_process_group(*args, **kwargs):
        if _state.recorder is not None:
            return orig(*args, **kwargs)
        world = _int_arg(args, kwargs, "world_size", _POSITIONAL_WORLD)
        rank = _int_arg(args, kwargs, "rank", _POSITIONAL_RANK)
        if rank is not None:
            try:
                activate(rank, world)
            except Exception as e:  # noqa: BLE001
                _instrument.broke("rank.init_process_group", e)
            current = getattr(module, "init_process_group", None)
            if _state.recorder is not None and current is not init_process_group and current is not None:
                # The shim's own wrapper (patched just now) records the join
                # and calls this one again, which then calls the original.
                return current(*args, **kwargs)
            return orig(*args, **kwargs)
        result = orig(*args, **kwargs)
        try:
            activate(module.get_rank(), module.get_world_size())
            if _state.recorder is not None:
                _state.recorder.emit("pg_init", backend=str(module.get_backend()))
        except Exception as e:  # noqa: BLE001
            _instrument.broke("rank.init_process_group", e)
        return result

    init_process_group.__faultline_late_rank__ = orig
    return init_process_group


def _patch(module, activate):
    orig = module.init_process_group
    if hasattr(orig, "__faultline_late_rank__") or hasattr(orig, "__faultline_wrapped__"):
        return
    module.init_process_group = _wrap(module, orig, activate)
    dist = __import__("sys").modules.get("torch.distributed")
    if dist is not None and getattr(dist, "init_process_group", None) is orig:
        dist.init_process_group = module.init_process_group


def patch(module, activate):
    """torch.distributed.distributed_c10d in a process without RANK;
    `activate(rank, world_size)` makes this process a rank."""
    _instrument.attempt("rank.init_process_group", _patch, module, activate)


def name_for_interposer(rank):
    """The LD_PRELOAD interposer reads FAULTLINE_RANK (docs/BLACKBOX.md)."""
    os.environ["FAULTLINE_RANK"] = str(int(rank))
