"""faultline's Python shim: sees inside unmodified Python trainers.

Armed when the harness gave the process a place for events
(FAULTLINE_EVENTS or FAULTLINE_EVENTS_DIR, CONTRACT.md section 2). Active in
a process that is a rank: RANK is set (and its parent is not a Python
process of the same rank: DataLoader workers and other helpers a rank starts
inherit RANK but are not ranks), or it is process i of
torch.multiprocessing.spawn, or, without RANK, it calls init_process_group
with a rank (Lightning's ranks, _late_rank.py). An active shim writes the rank's events:
start, pg_init / pg_destroy, collective_begin / collective_end, step_begin /
step_end, samples, fingerprint, metric_log, error (docs/BLACKBOX.md says what each means
and where it comes from), dumps every thread's stack into ranks/R/stacks.txt
on SIGUSR1, and writes the torchelastic error file of an uncaught exception.
Each patch says whether it applied (`instrument` events, _instrument.py), so
that the harness can tell "did not happen" from "was not observed".

Everything torch-related is patched when torch imports it, never by
importing torch here. Nothing in the shim may change what the trainer does:
every patch passes arguments, results and exceptions through, and every
failure inside the shim is swallowed (and reported as an instrument event).
"""
import os

from . import _imports, _instrument, _state

_stacks_file = None  # kept open: faulthandler writes to its descriptor
_crash_file = None  # the same, for a fatal signal's dump


def _parse_rank(text):
    if text is None or not text.isdigit():
        return None
    return int(text)


def _parent_is_same_rank(rank):
    """A Python parent carrying the same RANK: this is its helper, not a rank."""
    ppid = os.getppid()
    try:
        exe = os.path.basename(os.readlink("/proc/%d/exe" % ppid))
        if not exe.startswith("python"):
            return False
        with open("/proc/%d/environ" % ppid, "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return False
    return ("RANK=%d" % rank).encode() in env


def _events_path(rank, spawned):
    if not spawned and os.environ.get("FAULTLINE_EVENTS"):
        return os.environ["FAULTLINE_EVENTS"]
    events_dir = os.environ.get("FAULTLINE_EVENTS_DIR")
    if not events_dir:
        return None
    return os.path.join(events_dir, str(rank), "events.jsonl")


def _earlier_processes(events_path):
    """The processes that were this rank before in this run and are gone: the
    pids of the `start` events already in its events file (the file is the
    run's own) whose process no longer runs. One that still runs is no
    earlier attempt, and a process started by one of the rank's is no new
    attempt: it counts none. (A Python child of the rank is no rank at all,
    _parent_is_same_rank; this is for one started through another program,
    `sh -c "python eval.py"`, with the rank's RANK.)"""
    pids = set()
    try:
        with open(events_path, "rb") as f:
            for line in f:
                if b'"ev":"start"' in line:
                    head = line.split(b'"pid":', 1)
                    if len(head) == 2:
                        pids.add(head[1].split(b",", 1)[0])
    except OSError:
        return 0
    pids.discard(str(os.getpid()).encode())
    started = {int(p) for p in pids if p.isdigit()}
    if started & _ancestors():
        return 0
    return sum(1 for p in started if not _alive(p))


def _ancestors():
    """The pids above this process, its parent first (from /proc)."""
    out = set()
    pid = os.getppid()
    for _ in range(64):
        if pid <= 1 or pid in out:
            break
        out.add(pid)
        try:
            with open("/proc/%d/stat" % pid, "rb") as f:
                stat = f.read()
            pid = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _register_stack_dump(rank_dir):
    """SIGUSR1 -> every thread's Python stack into ranks/R/stacks.txt: the
    teardown's stack request, which it sends only where a handler is installed."""
    global _stacks_file
    import faulthandler
    import signal

    _stacks_file = open(os.path.join(rank_dir, "stacks.txt"), "a")
    faulthandler.register(signal.SIGUSR1, file=_stacks_file, all_threads=True)


def _register_crash_dump(rank_dir):
    """A fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) -> every
    thread's Python stack, the one that took it marked "Current thread", into
    ranks/R/crash_stacks.txt: where the rank's code was when an extension
    crashed, which the signal alone does not say. faulthandler then passes
    the signal on to the handler before it (the interposer's record, then the
    process's death). Not where the trainer (or PYTHONFAULTHANDLER) enabled
    faulthandler already: its dump goes where it asked."""
    global _crash_file
    import faulthandler

    if faulthandler.is_enabled():
        return
    _crash_file = open(os.path.join(rank_dir, "crash_stacks.txt"), "a")
    faulthandler.enable(file=_crash_file, all_threads=True)


def _patch_torch():
    from . import _data, _ddp, _deepspeed, _dist, _steps

    # The labels name a patch that failed as a whole (its parts name themselves).
    _imports.when_imported("torch.distributed.distributed_c10d", _dist.patch_c10d, "dist")
    _imports.when_imported("torch.distributed", _dist.patch_dist, "dist")
    _imports.when_imported("torch.autograd", _ddp.patch_autograd, "ddp.grad_allreduce")
    _imports.when_imported("torch.nn.parallel.distributed", _ddp.patch, "ddp")
    _imports.when_imported("torch.optim.optimizer", _steps.patch, "optim.step")
    _imports.when_imported("torch.utils.data.distributed", _data.patch_distributed_sampler, "data.distributed_sampler")
    _imports.when_imported("torch.utils.data.dataloader", _data.patch_dataloader, "data.dataloader")
    # Only if the trainer imports DeepSpeed: its engine's forward and broadcast.
    _imports.when_imported("deepspeed.runtime.engine", _deepspeed.patch, "deepspeed.engine")


def activate(rank, spawned=False, world_size=None):
    """Makes this process rank `rank`: events, stack dumps, hooks, patches."""
    if _state.recorder is not None:
        return
    path = _events_path(rank, spawned)
    if path is None:
        return
    from . import _errors, _events, _flight

    _state.earlier_processes = _earlier_processes(path)
    rec = _events.Recorder(rank, path)
    _state.recorder = rec
    fields = {}
    world = world_size if world_size is not None else _parse_rank(os.environ.get("WORLD_SIZE"))
    if world is not None and not spawned:
        fields["world_size"] = world
    from ._faults import launch_attempt

    if launch_attempt() > 0:  # a restarted rank: its events follow its earlier attempts' in the same file
        fields["attempt"] = launch_attempt()
    import threading

    if threading.current_thread() is not threading.main_thread():
        # The rank's work runs in this thread (Ray Train's training thread),
        # beside others of the process that are never idle: the supervisor
        # reads this one's activity.
        fields["tid"] = threading.get_native_id()
    rec.emit("start", **fields)
    # What was patched before this process was a rank (spawn children).
    _instrument.flush()
    _instrument.attempt("stacks.sigusr1", _register_stack_dump, rec.rank_dir)
    _instrument.attempt("stacks.fatal_signal", _register_crash_dump, rec.rank_dir)
    _instrument.attempt("errors.excepthook", _errors.install)
    _instrument.attempt("flight_recorder.pipe", _flight.arm, rank)
    # A failure here (a module of the shim that does not import) is said as
    # every patch module failing as a whole, not swallowed: the findings they
    # feed are unchecked, and the faults below are still armed.
    try:
        _patch_torch()
    except Exception as e:  # noqa: BLE001
        _instrument.failed_as_a_whole(("dist", "ddp"), e)
    if os.environ.get("FAULTLINE_FAULT"):
        from . import _faults

        _instrument.attempt("faults", _faults.arm, rank)


def _activate_spawned(rank):
    activate(rank, spawned=True)


def became_rank(rank, world_size):
    """A process started without RANK is rank `rank` from now on: what
    init_process_group(rank=R) does for it (_late_rank.py), said earlier by
    whoever knows (faultline's Lightning runner, once Fabric has set the
    rank's environment up; Ray Train's training function, _ray.py)."""
    from . import _late_rank

    activate(rank, world_size=world_size)
    if _state.recorder is not None:
        _late_rank.name_for_interposer(rank)


def boot():
    """Called by sitecustomize at start-up."""
    if not os.environ.get("FAULTLINE_EVENTS") and not os.environ.get("FAULTLINE_EVENTS_DIR"):
        return
    from . import _metrics, _spawn

    # Any Python process of the run may start torch.multiprocessing.spawn children.
    _imports.when_imported("torch.multiprocessing.spawn", lambda m: _spawn.patch(m, _activate_spawned), "spawn.wrap")
    # The metric sinks' classes, patched as they are imported, rank or not yet.
    _metrics.install(_imports.when_imported)
    # Ray Train's workers catch the training function's exception themselves.
    from . import _ray

    _imports.when_imported("ray.train.v2._internal.execution.worker_group.thread_runner",
                           lambda m: _ray.patch(m, became_rank), "ray.train_fn")
    rank = _parse_rank(os.environ.get("RANK"))
    if rank is None:
        # Maybe a rank that init_process_group names (Lightning's: _late_rank).
        from . import _late_rank

        _imports.when_imported("torch.distributed.distributed_c10d",
                               lambda m: _late_rank.patch(m, became_rank), "rank.init_process_group")
        return
    if _parent_is_same_rank(rank):
        return
    activate(rank)


__all__ = ["activate", "became_rank", "boot"]
