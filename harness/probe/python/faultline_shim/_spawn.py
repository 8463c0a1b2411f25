"""torch.multiprocessing.spawn's children: no RANK in their environment, but
the process index they are started with is the rank in every trainer that
calls spawn(train, nprocs=N) and train(rank, ...).

The child runs torch.multiprocessing.spawn._wrap(fn, i, args, error_queue)
(torch 1.x; torch 2.x passes an error file's path instead of the queue),
found by name when it unpickles its target; the shim replaces _wrap (in the
parent too, where it is what gets pickled, by the same name) with one that
makes process i rank i before running the original. _wrap catches the
trainer's exception itself and hands the traceback to the parent through
error_queue (or the error file), so the exception never reaches
sys.excepthook: the queue's put() is where the shim records it, with the
exception still being handled; with an error file, a wrapper around fn.
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


def _recording(fn):
    """fn, recording the exception it raises (torch 2.x's _wrap then pickles
    the traceback into its error file); one more frame in that traceback."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt:
            raise
        except Exception:
            _errors.record_current()
            raise

    return run


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
            if hasattr(error_queue, "put"):
                error_queue = _RecordingErrorQueue(error_queue)
            else:
                # torch 2.x hands _wrap an error file's path, not a queue.
                fn = _recording(fn)
        return orig(fn, i, args, error_queue)

    _wrap.__faultline_wrapped__ = orig
    module._wrap = _wrap
