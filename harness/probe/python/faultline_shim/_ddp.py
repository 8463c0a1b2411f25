"""DistributedDataParallel: the parameter fingerprint before DDP's broadcast,
and DDP's gradient all-reduce as one collective per backward pass.

Fingerprint: DDP's constructor broadcasts rank 0's parameters, which hides a
seed mismatch from then on; the shim hashes the module's parameters as they
come in (blake2b-64 over each parameter's bytes, in parameters() order), the
`fingerprint` event with what=params, step=0.

After the constructor the shim hashes them again (at=ddp_ready: DDP's
broadcast made them equal, or it did not), and then at the 1st, 2nd, 4th,
8th, ... optimizer step (at=optimizer_step, step = that count): replicas
that were equal and then differ trained on gradients that were not
all-reduced (a model used outside its DDP wrapper, a manual gradient path).
A DDP built with broadcast_buffers=False has its buffers hashed at the same
points (what=buffers): they drift apart with every rank's own data. Each
hash reads every parameter once, at a number of steps that grows as the log
of the run's length.

Gradient all-reduce: DDP's Reducer all-reduces the gradient buckets from
C++, during backward(), out of Python's sight. The shim does not reach into
it (a communication hook would change what DDP runs: a Python hook's
tensors carry Python objects that Gloo's threads then release, which can
deadlock a trainer at exit, and its errors read differently). It brackets
the backward pass instead: after a DDP forward that asked for gradient sync
(autograd on, not under no_sync()), the next torch.autograd.backward is
recorded as one allreduce on DDP's process group, numel = the gradients'
elements, begun when backward starts and ended when it returns. A rank that
never calls backward, or waits in it for a peer that died or never came,
reads as such; the time inside it counts as collective time, so a straggler
slow in its backward compute is not told from one waiting for its peers.
"""
import ctypes
import functools
import hashlib
import os
import threading
import weakref

from . import _dist, _faults, _instrument, _site, _state, _steps

_pending = threading.local()  # .sync: (op fields) of the gradient sync the next backward does
_grads = weakref.WeakKeyDictionary()  # DDP module -> (numel, dtype) of its gradients


def _param_bytes(p):
    t = p.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    n = t.numel() * t.element_size()
    return ctypes.string_at(t.data_ptr(), n) if n else b""


def fingerprint(module, tensors="parameters"):
    h = hashlib.blake2b(digest_size=8)
    for p in getattr(module, tensors)():
        h.update(_param_bytes(p))
    return h.hexdigest()


_wrapped = []          # weakrefs to every DDP module, in construction order
_optimizer_steps = 0   # optimizer step() calls so far


def _emit_fingerprints(rec, at, step, modules):
    """params (and buffers, of modules that do not broadcast them) of `modules` as one hash each."""
    inner = [m.module for m in modules]
    h = hashlib.blake2b(digest_size=8)
    for m in inner:
        h.update(fingerprint(m).encode())
    rec.emit("fingerprint", what="params", step=step, hash=h.hexdigest(), at=at)
    own = [m.module for m in modules if not getattr(m, "broadcast_buffers", True) and any(True for _ in m.module.buffers())]
    if own:
        b = hashlib.blake2b(digest_size=8)
        for m in own:
            b.update(fingerprint(m, "buffers").encode())
        rec.emit("fingerprint", what="buffers", step=step, hash=b.hexdigest(), at=at)


# FAULTLINE_FINGERPRINT_EVERY_STEP=1 (a run whose launcher may restart it):
# every step's, so that a restarted attempt's starting parameters name the
# step it resumed from (docs/DIAGNOSIS.md, "Attempts and recovery").
_every_step = os.environ.get("FAULTLINE_FINGERPRINT_EVERY_STEP") == "1"


def on_optimizer_step():
    """At the 1st, 2nd, 4th, ... optimizer step (or every one): the replicas' fingerprints."""
    global _optimizer_steps
    _optimizer_steps += 1
    n = _optimizer_steps
    rec = _state.recorder
    if rec is None or (n & (n - 1) and not _every_step):
        return
    modules = [m for m in (w() for w in _wrapped) if m is not None]
    if modules:
        _emit_fingerprints(rec, "optimizer_step", n, modules)


def _expect_sync(ddp):
    """After a DDP forward: the next backward all-reduces this module's gradients."""
    import torch

    if not torch.is_grad_enabled() or not ddp.require_backward_grad_sync:
        return
    grads = _grads.get(ddp)
    if grads is None:
        grads = _grads[ddp] = _dist.describe_tensor([p for p in ddp.module.parameters() if p.requires_grad])
    numel, dtype = grads
    key, extra = _dist._group_key(ddp.process_group)
    if key is None:
        return
    _pending.sync = (key, numel, dtype, extra)


def _wrap_backward(orig):
    @functools.wraps(orig)
    def backward(*args, **kwargs):
        rec = _state.recorder
        sync = getattr(_pending, "sync", None)
        if rec is None or sync is None:
            return orig(*args, **kwargs)
        _pending.sync = None
        try:
            key, numel, dtype, extra = sync
            seq, extra = _dist.numbered(key, extra)
        except Exception as e:  # noqa: BLE001
            _instrument.broke("ddp.grad_allreduce", e)
            return orig(*args, **kwargs)
        if key == 0 and _faults.armed:
            action = _faults.at_collective("allreduce", seq)  # may raise, exit, stop or sleep: the fault
            if action == "skip":
                return None  # this rank's gradients never join the all-reduce
            if action is not None:
                return _dist.mismatched(action, "allreduce", None, seq, numel, dtype, extra)
        rec.collective("collective_begin", "allreduce", seq, numel, dtype, extra + _site.fields())
        result = orig(*args, **kwargs)  # raises: no collective_end (it never completed)
        rec.collective("collective_end", "allreduce", seq, numel, dtype, extra)
        return result

    backward.__faultline_wrapped__ = orig
    return backward


def _patch_backward(module):
    orig = module.backward
    if not hasattr(orig, "__faultline_wrapped__"):
        module.backward = _wrap_backward(orig)


def patch_autograd(module):
    """torch.autograd: Tensor.backward() calls torch.autograd.backward by name
    (1.13 and 2.x alike). With ddp.forward, DDP's gradient all-reduce."""
    _instrument.attempt("ddp.grad_allreduce", _patch_backward, module)


def before_broadcast(module):
    """Before a wrapper broadcasts rank 0's parameters over `module`'s (DDP's
    constructor, DeepSpeed's engine): seed_mismatch strikes, and the
    parameters as they came in are hashed (at=ddp_init)."""
    rec = _state.recorder
    if rec is None:
        return
    if _faults.armed:
        _faults.perturb_before_ddp(module)
    rec.emit("fingerprint", what="params", step=0, hash=fingerprint(module), at="ddp_init")


def after_broadcast(wrapper):
    """After it: `wrapper` (whose .module is the model) is hashed now
    (at=ddp_ready) and at the optimizer steps to come."""
    rec = _state.recorder
    if rec is None:
        return
    _wrapped.append(weakref.ref(wrapper))
    _emit_fingerprints(rec, "ddp_ready", 0, [wrapper])


def around_broadcast(orig, label, module_of):
    """`orig` (a method that broadcasts rank 0's parameters) bracketed by
    before_broadcast and after_broadcast; failures recorded under `label`."""

    @functools.wraps(orig)
    def wrapper(self, *args, **kwargs):
        try:
            before_broadcast(module_of(self, args, kwargs))
        except Exception as e:  # noqa: BLE001
            _instrument.broke(label, e)
        result = orig(self, *args, **kwargs)
        try:
            after_broadcast(self)
        except Exception as e:  # noqa: BLE001
            _instrument.broke(label, e)
        return result

    wrapper.__faultline_wrapped__ = orig
    return wrapper


def _patch_init(DDP):
    if not hasattr(DDP.__init__, "__faultline_wrapped__"):
        DDP.__init__ = around_broadcast(DDP.__init__, "ddp.fingerprint",
                                        lambda self, args, kwargs: args[0] if args else kwargs["module"])


def step_forward(orig_forward, label, after=None):
    """`orig_forward` (a wrapper's forward) made the start of a step: the
    step_begin event and the faults due at it come before it runs; after(self)
    once it returned. Failures are recorded under `label`."""

    @functools.wraps(orig_forward)
    def forward(self, *args, **kwargs):
        began = False
        if _state.recorder is not None:
            try:
                began = _steps.on_ddp_forward(self)
            except Exception as e:  # noqa: BLE001
                _instrument.broke(label, e)
        if began and _faults.armed:
            _faults.at_step(_steps.current_step())  # may raise, exit or stop here: the fault
        out = orig_forward(self, *args, **kwargs)
        if after is not None and _state.recorder is not None:
            try:
                after(self)
            except Exception as e:  # noqa: BLE001
                _instrument.broke(label, e)
        return out

    forward.__faultline_wrapped__ = orig_forward
    return forward


def _patch_forward(DDP):
    if not hasattr(DDP.forward, "__faultline_wrapped__"):
        DDP.forward = step_forward(DDP.forward, "ddp.forward", _expect_sync)


_steps.after_optimizer_step.append(on_optimizer_step)


def patch(module):
    """torch.nn.parallel.distributed, right after it ran: the fingerprint in
    DDP.__init__, the step start and the gradient sync to expect in DDP.forward."""
    DDP = module.DistributedDataParallel
    _instrument.attempt("ddp.fingerprint", _patch_init, DDP)
    _instrument.attempt("ddp.forward", _patch_forward, DDP)
