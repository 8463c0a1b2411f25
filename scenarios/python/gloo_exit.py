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

These trainers are about their own faults, not that one: each hands the
tensors and modules it ran collectives on to settle() before it exits, which
waits (releasing the GIL) until no Gloo worker holds them.
"""
import time

import torch


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
    the buffers of modules, or iterables of them). A no-op where torch has no
    Tensor._use_count (1.x), which also has no such abort."""
    deadline = time.monotonic() + timeout_s
    for t in _tensors(things):
        if not hasattr(t, "_use_count"):
            return
        while t._use_count() > 1 and time.monotonic() < deadline:
            time.sleep(0.001)  # releases the GIL: the worker thread needs it
