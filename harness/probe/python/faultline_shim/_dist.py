"""torch.distributed collectives as collective_begin / collective_end events.

Each wrapped function keeps its signature, return value and exceptions; the
wrapper only numbers the call (seq: in call order on the default group,
which is the same on every rank of a correct program, a group of every rank
counted with it; another subgroup's calls count in group_seq) and writes one
line before and one after. A collective that raises gets no collective_end: it never
completed, and a rank blocked in it until a timeout must still read as
waiting there; the exception is written as collective_raised, for the
trainer may catch it and go on. async_op=True calls end when their Work completes (a thread
of the shim's polls it: _GlooWaiter; on other backends, its future).

Point-to-point send/recv involve two ranks, not the group, so they carry the
peer and no seq (numbering them would shift every later collective's seq on
the ranks that took part). isend/irecv are not recorded: Gloo's send/recv
Work has no future to say when they end.
"""
import functools
import inspect
import itertools
import os
import sys
import threading
import time

from . import _errors, _faults, _instrument, _metrics, _site, _state

# name -> (op, the parameter whose tensor(s) give numel and dtype, peer parameter)
_COLLECTIVES = {
    "all_reduce": ("allreduce", "tensor", None),
    "all_reduce_coalesced": ("allreduce_coalesced", "tensors", None),
    "broadcast": ("broadcast", "tensor", None),
    "reduce": ("reduce", "tensor", None),
    "all_gather": ("allgather", "tensor", None),
    "all_gather_into_tensor": ("allgather", "input_tensor", None),
    "_all_gather_base": ("allgather", "input_tensor", None),
    "gather": ("gather", "tensor", None),
    "scatter": ("scatter", "tensor", None),
    "reduce_scatter": ("reduce_scatter", "output", None),
    "reduce_scatter_tensor": ("reduce_scatter", "input", None),
    "_reduce_scatter_base": ("reduce_scatter", "input", None),
    "all_to_all": ("alltoall", "input_tensor_list", None),
    "all_to_all_single": ("alltoall", "input", None),
    "barrier": ("barrier", None, None),
    "send": ("send", "tensor", "dst"),
    "recv": ("recv", "tensor", "src"),
}

_c10d = None            # torch.distributed.distributed_c10d, once patched
_local = threading.local()  # .busy: inside a wrapped call (nested calls are not recorded again)
_counters = {}          # group key -> itertools.count
_groups = {}            # id(group) -> (key, ',"group":"0,2"', group) for groups other than the default


def _initialized():
    return _c10d is not None and _c10d.GroupMember.WORLD is not None


def _group_key(group):
    """(key, extra fields) for a group argument; None when this rank is not in it.

    A group of every rank of the world (DeepSpeed's data-parallel group, a
    `new_group()` without ranks) is numbered with the default group, key 0,
    its label kept: every rank is in both, so a single-threaded trainer calls
    their collectives in one order on every rank (an order that differs
    deadlocks), and one sequence describes them. Other subgroups have a
    count of their own."""
    if group is None or group is _c10d.GroupMember.WORLD:
        return 0, ""
    if group is _c10d.GroupMember.NON_GROUP_MEMBER:
        return None, ""
    known = _groups.get(id(group))
    if known is None:
        try:
            ranks = sorted(_c10d._pg_group_ranks[group].keys())
            extra = ',"group":"%s"' % ",".join(str(r) for r in ranks)
            key = 0 if ranks == list(range(_c10d.get_world_size())) else id(group)
        except Exception as e:  # noqa: BLE001
            _instrument.pass_through(e)
            key, extra = id(group), ',"group":"%x"' % id(group)
        # The group is kept alive with its entry: an id is reused once its object is gone.
        known = _groups[id(group)] = (key, extra, group)
    return known[0], known[1]


def next_seq(key):
    counter = _counters.get(key)
    if counter is None:
        counter = _counters.setdefault(key, itertools.count())
    return next(counter)


def numbered(key, extra):
    """(seq, extra) for a call on group `key`. The hang and mismatch analysis
    reads one sequence per rank, so only the default group's calls carry
    `seq`; a subgroup's carry their own count as `group_seq` (ranks in
    different subgroups would otherwise pair calls that have nothing to do
    with each other)."""
    n = next_seq(key)
    if key == 0:
        return n, extra
    return None, extra + ',"group_seq":%d' % n


def describe_tensor(t):
    """(numel, dtype) of a tensor or a list of tensors; (0, "") for anything else."""
    try:
        if isinstance(t, (list, tuple)):
            if not t:
                return 0, ""
            return sum(x.numel() for x in t), str(t[0].dtype).replace("torch.", "")
        return t.numel(), str(t.dtype).replace("torch.", "")
    except Exception as e:  # noqa: BLE001
        _instrument.pass_through(e)
        return 0, ""


def is_gloo(group):
    try:
        return str(_c10d.get_backend(group)) == "gloo"
    except Exception as e:  # noqa: BLE001
        _instrument.pass_through(e)
        return False


class _GlooWaiter:
    """Watches async Gloo Works on a thread of the shim's own.

    A Python callback on a Gloo future (Future.then) runs on a Gloo worker
    thread and needs the GIL there, also to be destroyed; a trainer whose
    last reference to the process group goes away while it holds the GIL
    (DDP's Reducer at exit) joins that worker and deadlocks (the kind of hang
    pytorch/pytorch#56297 is). So the shim never puts Python on Gloo's
    threads: this daemon thread polls the Works it watches and writes
    collective_end for each that completed without an error.

    - It polls (is_completed(), which keeps the GIL, then a 1-ms sleep)
      rather than block in Work.wait(). A daemon thread blocked in wait()
      whose Work completes while the interpreter finalizes takes the GIL
      back inside pybind's gil_scoped_release, a noexcept destructor, and
      the rank aborts ("terminate called without an active exception"): an
      abort of faultline's own making.
    - It holds no Work once the rank destroys its process group (release(),
      from destroy_process_group). A Work held here keeps its collective's
      tensors alive past the group's destruction, which changes what the
      rank does then: torch 1.13 deadlocks where a Gloo worker frees the
      last reference to such a tensor while ~ProcessGroupGloo waits for it
      (diagnosis-unwaited-sync-teardown), and with the shim holding it, it
      did not."""

    POLL_S = 0.001

    def __init__(self):
        self._lock = threading.Lock()
        self._watched = []  # [(work, on_done, on_abandoned)], only ever referenced under the lock
        self._wake = threading.Event()
        self._holding = False  # the thread may hold Works outside the list (checking them)
        self._thread = threading.Thread(target=self._run, name="faultline-shim-waiter", daemon=True)
        self._thread.start()

    def watch(self, work, on_done, on_abandoned):
        with self._lock:
            self._watched.append((work, on_done, on_abandoned))
        self._wake.set()

    def release(self, timeout_s=0.5):
        """End every watched Work: those that completed as such, the others
        as abandoned (the rank destroyed its group while they ran: it waits
        in them no more), and return once the thread holds none."""
        with self._lock:
            watched, self._watched = self._watched, []
        # One look at each: a Work completing in between is ended either way.
        completed = [_is_completed(w[0]) for w in watched]
        _end_completed([w for w, c in zip(watched, completed) if c])
        for w, c in zip(watched, completed):
            if not c:
                _call(w[2])
        watched = w = None
        deadline = time.monotonic() + timeout_s
        while self._holding and time.monotonic() < deadline:
            time.sleep(self.POLL_S)

    def _completed(self):
        """The watched Works that completed, taken out of the list."""
        with self._lock:
            self._holding = True
            done = [w for w in self._watched if _is_completed(w[0])]
            if done:
                self._watched = [w for w in self._watched if not any(w is d for d in done)]
            busy = bool(self._watched)
        return done, busy

    def _run(self):
        while True:
            done, busy = self._completed()
            _end_completed(done)
            done = None
            self._holding = False
            if busy:
                time.sleep(self.POLL_S)
            else:
                self._wake.wait()
                self._wake.clear()


def _end_completed(done):
    """on_done() for each completed (work, on_done, _) that did not fail."""
    for work, on_done, _ in done:
        try:
            work.wait()  # completed: returns at once, or raises its error
        except Exception:  # noqa: BLE001  failed: it never ended
            continue
        _call(on_done)


def _call(callback):
    try:
        callback()
    except Exception:  # noqa: BLE001  an event the rank could not write
        pass


def _is_completed(work):
    try:
        return work.is_completed()
    except Exception:  # noqa: BLE001  a Work that cannot say: treat it as done (wait() tells how)
        return True


_waiter = None
_waiter_lock = threading.Lock()


def _forget_waiter():
    """In a forked child: the waiter's thread did not come along, and the lock may be held."""
    global _waiter, _waiter_lock
    _waiter = None
    _waiter_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_waiter)


def _gloo_waiter():
    global _waiter
    with _waiter_lock:
        if _waiter is None:
            _waiter = _GlooWaiter()
    return _waiter


def end_when_done(rec, work, group, op, seq, numel, dtype, extra):
    """collective_end once an async Work completes (never if it fails).
    False when there is no way to see it complete."""

    def end():
        rec.collective("collective_end", op, seq, numel, dtype, extra)

    if is_gloo(group):
        def abandoned():
            rec.collective("collective_end", op, seq, numel, dtype, extra + ',"abandoned":true')

        _gloo_waiter().watch(work, end, abandoned)
        return True
    # NCCL and others complete the future when the work is enqueued, on the
    # calling thread: the callback runs right here (CUDA-stream semantics).
    try:
        fut = work.get_future()
    except Exception as e:  # noqa: BLE001
        _instrument.pass_through(e)
        return False

    def done(f):
        try:
            f.wait()
        except Exception:  # noqa: BLE001
            return None
        end()
        return None

    fut.then(done)
    return True


class _SkippedWork:
    """What an async collective left out by a fault returns: done at once."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True

    def get_future(self):
        import torch

        f = torch.futures.Future()
        f.set_result(None)
        return f


def mismatched(variant, op, group, seq, numel, dtype, extra):
    """collective_mismatch: in place of this rank's call `op` at `seq`, the
    same op with one element more (variant "size") or another op (variant
    "op"), recorded as what it is, so the peers' calls at `seq` differ."""
    import torch

    rec = _state.recorder
    dt = getattr(torch, dtype, torch.float32) if dtype else torch.float32
    if variant == "size":
        new_op, t = op, torch.zeros(numel + 1, dtype=dt)
    else:
        new_op, t = ("broadcast" if op != "broadcast" else "allreduce"), torch.zeros(max(numel, 1), dtype=dt)
    rec.collective("collective_begin", new_op, seq, t.numel(), str(t.dtype).replace("torch.", ""),
                   extra + _site.fields())
    _local.busy = True
    try:
        if new_op == "broadcast":
            _c10d.broadcast(t, src=0 if group is None else _c10d.get_global_rank(group, 0), group=group)
        else:
            # all_gather and the rest become an all-reduce of one more element
            _c10d.all_reduce(t, group=group)
    finally:
        _local.busy = False
    rec.collective("collective_end", new_op, seq, t.numel(), str(t.dtype).replace("torch.", ""), extra)


def _wrap(orig, op, tensor_param, peer_param, name):
    # torch 2.x decorates these with c10d_logger's _exception_logger /
    # _time_logger (functools.wraps): the signature is the function's own.
    params = list(inspect.signature(orig).parameters)
    t_idx = params.index(tensor_param) if tensor_param else None
    g_idx = params.index("group")
    a_idx = params.index("async_op") if "async_op" in params else None
    p_idx = params.index(peer_param) if peer_param else None

    def arg(args, kwargs, idx, name, default=None):
        if idx is not None and idx < len(args):
            return args[idx]
        return kwargs.get(name, default)

    @functools.wraps(orig)
    def wrapper(*args, **kwargs):
        rec = _state.recorder
        if rec is None or getattr(_local, "busy", False) or not _initialized():
            return orig(*args, **kwargs)
        try:
            key, extra = _group_key(arg(args, kwargs, g_idx, "group"))
            if key is None:  # not a member: the call does nothing
                return orig(*args, **kwargs)
            numel, dtype = describe_tensor(arg(args, kwargs, t_idx, tensor_param)) if tensor_param else (0, "")
            is_async = bool(arg(args, kwargs, a_idx, "async_op", False)) if a_idx is not None else False
            if peer_param:
                seq = None
                peer = arg(args, kwargs, p_idx, peer_param)
                extra += ',"peer":%d' % peer if isinstance(peer, int) else ""
            else:
                seq, extra = numbered(key, extra)
        except Exception as e:  # noqa: BLE001
            _instrument.broke(name, e)
            return orig(*args, **kwargs)
        group = arg(args, kwargs, g_idx, "group")
        if seq is not None and _faults.armed:
            action = _faults.at_collective(op, seq)  # may raise, exit, stop or sleep: the fault
            if action == "skip":
                return _SkippedWork() if is_async else None
            if action is not None:
                mismatched(action, op, group, seq, numel, dtype, extra)
                return _SkippedWork() if is_async else None
        if not is_async:
            rec.collective("collective_begin", op, seq, numel, dtype, extra + _site.fields())
        _local.busy = True
        try:
            result = orig(*args, **kwargs)
        except Exception as e:
            _errors.record_raised("collective_raised", e, _errors.frame_site(sys._getframe(1)), op=op, seq=seq)
            raise
        finally:
            _local.busy = False
        # What it wrote (its first argument) now holds the job's value.
        _metrics.after_collective(op, arg(args, kwargs, 0, params[0]))
        if not is_async:
            rec.collective("collective_end", op, seq, numel, dtype, extra)
        elif result is not None:
            # Recorded only when its end can be seen too: an open collective_begin means "waiting".
            try:
                rec.collective("collective_begin", op, seq, numel, dtype, extra + _site.fields())
                if not end_when_done(rec, result, group, op, seq, numel, dtype, extra):
                    rec.collective("collective_end", op, seq, numel, dtype, extra + ',"unobserved":true')
            except Exception as e:  # noqa: BLE001
                _instrument.broke(name, e)
        return result

    wrapper.__faultline_wrapped__ = orig
    return wrapper


def _wrap_plain(orig, op, tensors_at, name):
    """The C++ functions DDP calls through torch.distributed's namespace:
    _broadcast_coalesced(group, tensors, ...) and
    _verify_params_across_processes(group, tensors, ...). Synchronous."""

    @functools.wraps(orig)
    def wrapper(*args, **kwargs):
        rec = _state.recorder
        if rec is None or getattr(_local, "busy", False) or not _initialized() or len(args) <= tensors_at:
            return orig(*args, **kwargs)
        try:
            key, extra = _group_key(args[0])
            if key is None:
                return orig(*args, **kwargs)
            numel, dtype = describe_tensor(args[tensors_at])
            seq, extra = numbered(key, extra)
        except Exception as e:  # noqa: BLE001
            _instrument.broke(name, e)
            return orig(*args, **kwargs)
        if key == 0 and _faults.armed:
            action = _faults.at_collective(op, seq)  # may raise, exit, stop or sleep: the fault
            if action is not None:
                if action != "skip":
                    mismatched(action, "allreduce", None, seq, numel, dtype, extra)
                return None
        rec.collective("collective_begin", op, seq, numel, dtype, extra + _site.fields())
        _local.busy = True
        try:
            result = orig(*args, **kwargs)
        finally:
            _local.busy = False
        rec.collective("collective_end", op, seq, numel, dtype, extra)
        return result

    wrapper.__faultline_wrapped__ = orig
    return wrapper


def _wrap_init(orig):
    @functools.wraps(orig)
    def init_process_group(*args, **kwargs):
        rec = _state.recorder
        if rec is not None:
            # This rank is joining: a peer that exits before this is why it waits.
            rec.emit("pg_init_begin")
        result = orig(*args, **kwargs)
        rec = _state.recorder
        if rec is not None:
            try:
                rec.emit("pg_init", backend=str(_c10d.get_backend()))
            except Exception as e:  # noqa: BLE001
                _instrument.broke("dist.init_process_group", e)
        return result

    init_process_group.__faultline_wrapped__ = orig
    return init_process_group


def _wrap_destroy(orig):
    @functools.wraps(orig)
    def destroy_process_group(group=None):
        rec = _state.recorder
        backend = None
        if rec is not None and group is None and _initialized():
            try:
                backend = str(_c10d.get_backend())
            except Exception as e:  # noqa: BLE001
                _instrument.broke("dist.destroy_process_group", e)
                backend = None
        if group is None and _waiter is not None:
            _waiter.release()
        result = orig(group)
        if backend is not None:
            rec.emit("pg_destroy", backend=backend)
            # Subgroups died with it and their ids may come back; the default
            # group keeps counting, so no seq is used twice in one events file.
            for key in [k for k in _counters if k != 0]:
                del _counters[key]
            _groups.clear()
        return result

    destroy_process_group.__faultline_wrapped__ = orig
    return destroy_process_group


def _replace(module, name, wrapper_for):
    """module.name = wrapper_for(module.name); raises when the target is not
    there or cannot be wrapped (the caller records it)."""
    orig = getattr(module, name)  # AttributeError names the module and the function
    if hasattr(orig, "__faultline_wrapped__"):
        return
    wrapped = wrapper_for(orig)
    setattr(module, name, wrapped)
    if getattr(module, name) is not wrapped:
        raise RuntimeError("%s.%s did not take the wrapper" % (module.__name__, name))


_C10D_PLAIN = ("init_process_group", "destroy_process_group")


def patch_c10d(module):
    """torch.distributed.distributed_c10d, right after it ran: torch.distributed
    re-exports these names next, so both namespaces get the wrappers."""
    global _c10d
    _c10d = module
    for name, (op, tensor_param, peer_param) in _COLLECTIVES.items():
        _instrument.attempt("dist." + name, _replace, module, name,
                            lambda orig, op=op, t=tensor_param, p=peer_param, n="dist." + name: _wrap(orig, op, t, p, n))
    _instrument.attempt("dist.init_process_group", _replace, module, "init_process_group", _wrap_init)
    _instrument.attempt("dist.destroy_process_group", _replace, module, "destroy_process_group", _wrap_destroy)
    # Anything that took the originals already (imported before us) gets them too.
    dist = sys.modules.get("torch.distributed")
    if dist is not None:
        _reexport(module, dist)


def _reexport(c10d, dist):
    """torch.distributed.X is c10d's wrapper wherever it was the original."""
    for name in list(_COLLECTIVES) + list(_C10D_PLAIN):
        wrapped = getattr(c10d, name, None)
        current = getattr(dist, name, None)
        if wrapped is not None and getattr(wrapped, "__faultline_wrapped__", None) is current:
            setattr(dist, name, wrapped)


def _store_key(args, kwargs):
    """The key a store call waits for: get's key, or wait's keys joined."""
    key = args[0] if args else kwargs.get("key", kwargs.get("keys"))
    if isinstance(key, (list, tuple)):
        key = ",".join(str(k) for k in key)
    return None if key is None else str(key)[:256]


def _wrap_store_op(orig, op):
    """A blocking store call (Store.get, Store.wait) as store_begin /
    store_end: a rank inside one waits for a key another rank sets (a barrier
    through the store, a handshake), not in a collective. store_end is
    written however it ends (a timeout raises, and callers retry)."""

    @functools.wraps(orig)
    def wrapper(self, *args, **kwargs):
        rec = _state.recorder
        if rec is None:
            return orig(self, *args, **kwargs)
        rec.store("store_begin", op, _store_key(args, kwargs), _site.fields())
        try:
            return orig(self, *args, **kwargs)
        finally:
            rec.store("store_end", op, None)

    wrapper.__faultline_wrapped__ = orig
    return wrapper


def _patch_store(module):
    """torch.distributed.Store (every store type inherits its methods):
    get and wait, the calls that block."""
    store = module.Store
    for name in ("get", "wait"):
        _replace(store, name, lambda orig, op=name: _wrap_store_op(orig, op))


def patch_dist(module):
    """torch.distributed: the re-exported collectives, and the C++ ones DDP's
    constructor and buffer sync call (_broadcast_coalesced, _verify_params_across_processes)."""
    if _c10d is not None:
        _reexport(_c10d, module)
    _instrument.attempt("dist._broadcast_coalesced", _replace, module, "_broadcast_coalesced",
                        lambda orig: _wrap_plain(orig, "broadcast", 1, "dist._broadcast_coalesced"))
    _instrument.attempt("dist.store", _patch_store, module)
    _instrument.attempt("dist._verify_params_across_processes", _replace, module, "_verify_params_across_processes",
                        lambda orig: _wrap_plain(orig, "verify_params", 1, "dist._verify_params_across_processes"))
