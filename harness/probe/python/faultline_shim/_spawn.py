"""torch.multiprocessing.spawn's children: no RANK in their environment, but
the process index they are started with is the rank in every trainer that
calls spawn(train, nprocs=N) and train(rank, ...).

The child runs torch.multiprocessing.spawn._wrap(fn, i, args, error_queue),
found by name when it unpickles its target; the shim replaces _wrap (in the
parent too, where it is what gets pickled, by the same name) with one that
makes process i rank i before running the original. _wrap catches the
trainer's exception itself and hands the traceback to the parent through
error_queue, so the exception never reaches sys.excepthook: the queue's put()
is where the shim records it, with the exception still being handled.
"""
import functools
import os

from . import _errors, _state


class _RecordingErrorQueue:
    def __init__(self, queue):
        self._queue = queue

    def put(self, obj, *args, **kwargs):
        _errors.record_current()
        return self._queue.put(obj, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._queue, name)


def patch(module, activate):
    """torch.multiprocessing.spawn; `activate(rank)` makes this process a rank."""
    orig = getattr(module, "_wrap", None)
    if orig is None or hasattr(orig, "__faultline_wrapped__"):
        return

    @functools.wraps(orig)  # same __module__ and __qualname__: pickled by reference as before
    def _wrap(fn, i, args, error_queue):
        if _state.recorder is None and "RANK" not in os.environ:
            try:
                activate(int(i))
                if _state.recorder is not None:
                    # The LD_PRELOAD interposer's rank for a process without RANK
                    # (docs/BLACKBOX.md): this process, and what it forks or runs.
                    os.environ["FAULTLINE_RANK"] = str(int(i))
            except Exception:  # noqa: BLE001
                pass
        if _state.recorder is not None:
            error_queue = _RecordingErrorQueue(error_queue)
        return orig(fn, i, args, error_queue)

    _wrap.__faultline_wrapped__ = orig
    module._wrap = _wrap
