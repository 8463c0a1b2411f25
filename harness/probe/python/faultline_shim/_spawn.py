"""torch.multiprocessing.spawn's children: no RANK in their environment, but
the process index they are started with is the rank in every trainer that
calls spawn(train, nprocs=N) and train(rank, ...) on one node. A program
spread over nodes that says where it is in torchrun's names (GROUP_RANK, its
node's rank, and LOCAL_WORLD_SIZE, its processes per node) before it spawns
makes process i of node K rank K*LOCAL_WORLD_SIZE+i (the spawn stack's runner
does: harness/launch/python/spawn_runner.py).

The child runs torch.multiprocessing.spawn._wrap(fn, i, args, ...), found by
name when it unpickles its target; the shim replaces _wrap (in the parent
too, where it is what gets pickled, by the same name) with one that makes
process i rank i before running the original. _wrap catches the trainer's
exception itself and hands the traceback to the parent, so the exception
never reaches sys.excepthook; the shim records it on the way:

- torch 1.13: _wrap(fn, i, args, error_queue) puts the traceback on a
  queue; the queue's put() is where the shim records it, with the exception
  still being handled.
- torch 2.x: _wrap(fn, i, args, error_file) pickles it into a file and calls
  sys.exit(1) from its except block; the SystemExit that comes out carries
  the trainer's exception as its __context__, and the file then exists.
"""
import functools
import inspect
import os

from . import _errors, _instrument, _state


class _RecordingErrorQueue:
    def __init__(self, queue):
        self._queue = queue

    def put(self, obj, *args, **kwargs):
        _errors.record_current()
        return self._queue.put(obj, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._queue, name)


def _record_from_exit(exit_exc, error_file):
    """2.x: _wrap exited after writing the traceback to error_file."""
    cause = exit_exc.__context__
    if not isinstance(cause, Exception):
        return
    try:
        if not os.path.getsize(error_file):
            return
    except (OSError, TypeError):
        return
    _errors.record(type(cause), cause, cause.__traceback__)


def _rank_of(i):
    """Process i's rank: i, or its node's first rank + i where the environment
    names the node (GROUP_RANK) and its processes (LOCAL_WORLD_SIZE)."""
    try:
        node, per_node = int(os.environ["GROUP_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
    except (KeyError, ValueError):
        return int(i)
    return node * per_node + int(i) if node >= 0 and per_node > int(i) else int(i)


def _patch_wrap(module, activate):
    orig = module._wrap
    if hasattr(orig, "__faultline_wrapped__"):
        return
    params = list(inspect.signature(orig).parameters)
    if params[:3] != ["fn", "i", "args"] or len(params) != 4 or params[3] not in ("error_queue", "error_file"):
        raise TypeError("torch.multiprocessing.spawn._wrap%s: expected (fn, i, args, error_queue|error_file)"
                        % inspect.signature(orig))
    by_file = params[3] == "error_file"

    @functools.wraps(orig)  # same __module__ and __qualname__: pickled by reference as before
    def _wrap(fn, i, args, error_channel):
        if _state.recorder is None and "RANK" not in os.environ:
            try:
                rank = _rank_of(i)
                activate(rank)
                if _state.recorder is not None:
                    # The LD_PRELOAD interposer's rank for a process without RANK
                    # (docs/BLACKBOX.md): this process, and what it forks or runs.
                    os.environ["FAULTLINE_RANK"] = str(rank)
            except Exception as e:  # noqa: BLE001
                _instrument.broke("spawn.wrap", e)
        if _state.recorder is None:
            return orig(fn, i, args, error_channel)
        if not by_file:
            return orig(fn, i, args, _RecordingErrorQueue(error_channel))
        try:
            return orig(fn, i, args, error_channel)
        except SystemExit as e:
            try:
                _record_from_exit(e, error_channel)
            except Exception as err:  # noqa: BLE001
                _instrument.broke("spawn.wrap", err)
            raise

    _wrap.__faultline_wrapped__ = orig
    module._wrap = _wrap


def patch(module, activate):
    """torch.multiprocessing.spawn; `activate(rank)` makes this process a rank."""
    _instrument.attempt("spawn.wrap", _patch_wrap, module, activate)
