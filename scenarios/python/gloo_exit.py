"""Let torch's Gloo worker threads let go of a rank's tensors before it exits.

torch 2.x (seen on 2.13, not on 1.13) aborts a Gloo rank at exit now and then:
"terminate called without an active exception", SIGABRT, after the rank's
work is done. A Gloo worker thread drops its reference to a finished
collective's tensors a little after the caller is woken; a tensor with a
Python object then needs the GIL on that thread, and if the interpreter is
already finalizing Python ends the thread inside a noexcept destructor. DDP
keeps the process group (and its worker threads) alive past
destroy_process_group, so the threads are still there at finalization
(pytorch/pytorch#190489 has a plain repro without DDP). Right after a
synchronous all_reduce, `tensor._use_count()` is above 1 in about a third of
the calls on this machine until the worker lets go.

The tensors are not the only such objects. Every backward() stashes a
contextvars.Context in the autograd thread-local state (torch.autograd.graph
._engine_run_backward), and the work of each all-reduce DDP's Reducer starts
during that backward captures the thread-local state, Context included. The
caller removes the Context from its own thread-local state when backward
returns, so the Gloo worker's copy is the last one: destroying that finished
work decrefs the Context on the worker thread, needing the GIL, and aborts
the same way at finalization (a gdb backtrace on this machine:
~AsyncAllreduceWork -> ~ThreadLocalState -> SafePyObject decref -> take_gil
-> pthread_exit, in pt_gloo_runloop, while the main thread runs Py_Finalize).

torch 1.13 has the same race, and there it hangs instead (spawn@1.13,
metrics-torchmetrics, about 1 run in 15). The worker that drops the last
reference to a finished collective's tensor whose Python object is gone
(torchmetrics' gathered states, say) takes the GIL to free that object. If
the main thread meanwhile destroys the process group (DDP's Reducer letting
go of it when the model goes, GIL held), it waits on that worker for good.
eu-stack of such a rank: the main thread in ~Reducer -> ~ProcessGroupGloo ->
pthread_mutex_lock; a Gloo worker in runLoop -> ~TensorImpl ->
destroy_pyobj_if_needed -> PyEval_AcquireThread.

These trainers are about their own faults, not that one:
- every tensor handed to a torch.distributed collective from Python is kept
  (those of the last 64 calls, to the end of the process), so no worker
  holds the last reference to a Python tensor, and none needs the GIL to
  let go;
- each trainer hands the tensors and modules it ran collectives on to
  settle() before it exits, which waits (releasing the GIL) until no Gloo
  worker holds them, nor any Context a backward stashed (2.x).
"""
import collections
import functools
import sys
import time

import torch

_stashed = []  # every Context torch stashed for a backward, until settle() sees it released


def _track_stashed_contexts():
    """Keep a reference to each object torch stashes in its thread-local state
    (torch 2.x; 1.x has no _stash_obj_in_tls): settle() waits until the only
    references left are its own, i.e. no work holds a copy of that state."""
    stash = getattr(torch._C, "_stash_obj_in_tls", None)
    if stash is None or getattr(stash, "__gloo_exit__", False):
        return

    def tracking(key, obj):
        while _stashed and sys.getrefcount(_stashed[0]) <= 2:
            del _stashed[0]  # released already: nothing to wait for
        _stashed.append(obj)
        return stash(key, obj)

    tracking.__gloo_exit__ = True
    torch._C._stash_obj_in_tls = tracking


_track_stashed_contexts()

# The tensors of the latest collectives called from Python. A Gloo worker
# holds a call's tensors for a moment after the caller is woken; with one
# reference kept here the worker's is never the last.
_kept = collections.deque(maxlen=64)

_COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "_all_gather_base", "broadcast", "reduce",
    "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base", "gather", "scatter",
    "all_to_all", "all_to_all_single", "send", "recv", "isend", "irecv",
)


def _collective_tensors(values):
    for v in values:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _collective_tensors(v)


# The wrapper is compiled as "<gloo_exit>": a file name in angle brackets is
# library code to faultline (the shim's call sites, the diagnosis's
# locations), as torch's own frames are. Written here as a plain def, its
# frame would be the innermost frame outside torch of every collective, and
# each call site would read gloo_exit.py instead of the trainer's line.
_KEEPING_SOURCE = """
def keeping(collective, keep, tensors, wraps):
    @wraps(collective)
    def call(*args, **kwargs):
        keep(list(tensors(list(args) + list(kwargs.values()))))
        return collective(*args, **kwargs)

    call.__gloo_exit__ = True
    return call
"""
_namespace = {}
exec(compile(_KEEPING_SOURCE, "<gloo_exit>", "exec"), _namespace)


def _keeping(collective):
    return _namespace["keeping"](collective, _kept.append, _collective_tensors, functools.wraps)


def _keep_collective_tensors():
    """Wrap torch.distributed's collectives, where the module and its
    distributed_c10d name the same function (internal callers, such as
    all_gather_object, use the latter), so each call keeps its tensors."""
    if not torch.distributed.is_available():
        return
    import torch.distributed.distributed_c10d as c10d

    for name in _COLLECTIVES:
        fn = getattr(c10d, name, None)
        if fn is None or getattr(fn, "__gloo_exit__", False):
            continue
        wrapped = _keeping(fn)
        setattr(c10d, name, wrapped)
        if getattr(torch.distributed, name, None) is fn:
            setattr(torch.distributed, name, wrapped)


_keep_collective_tensors()


def _tensors(things):
    for t in things:
        if isinstance(t, torch.nn.Module):
            # DDP broadcasts the buffers each forward; the parameters stay
            # held by its Reducer for good and are never settled.
            yield from t.buffers()
        elif isinstance(t, torch.Tensor):
            yield t
        elif t is not None:
            yield from _tensors(t)


def settle(*things, timeout_s=2.0):
    """Wait until no thread but the caller's holds these tensors (tensors,
    the buffers of modules, or iterables of them), nor any state a backward
    stashed. A no-op where torch has no Tensor._use_count (1.x), which also
    has no such abort."""
    deadline = time.monotonic() + timeout_s
    # References to a stashed object: _stashed's and getrefcount's argument.
    while _stashed and time.monotonic() < deadline:
        if sys.getrefcount(_stashed[-1]) <= 2:
            _stashed.pop()
        else:
            time.sleep(0.001)  # releases the GIL: the worker thread needs it
    for t in _tensors(things):
        if not hasattr(t, "_use_count"):
            return
        while t._use_count() > 1 and time.monotonic() < deadline:
            time.sleep(0.001)  # releases the GIL: the worker thread needs it
