"""Scripted faults for an unmodified trainer, struck from inside the rank.

FAULTLINE_FAULT holds one or more specs separated by ';', in the reference
trainer's vocabulary (CONTRACT.md section 5, docs/SCENARIOS.md):

    KIND[:rank=R[,R...]|all][:step=N | :collective=K | :op=OP[:nth=N] | :after=T][:arg=X]

The point where a fault strikes is given in the trainer's own terms:
  step=N        when step N begins (steps count from 1: the N-th DDP forward
                of a training iteration, as the step events say)
  collective=K  at collective #K on the default group: the one whose events
                carry seq K, counted from 0 as the diagnosis names them
                (DDP's construction makes two, its gradient all-reduce one
                a backward pass)
  op=OP[:nth=N] at the N-th call (from 1, default 1) of op OP (allreduce,
                broadcast, allgather, barrier, ...: the events' op names)
  after=T       T seconds after the rank started (signals, exit: at once;
                the other kinds at the next step or collective after it)
Without a point, step=1. Without rank, every rank.

Kinds (what the rank does at the point):
  exception              raise arg (a builtin or dotted exception type, default NameError)
  exit                   exit with code arg (default 1), no clean-up, as os._exit
  sigkill, segfault, abort, sigterm, sigstop
                         that signal to the rank itself
  hung_collective        arg=sleep (default): never enter the collective;
                         arg=skip: leave it out and go on
  collective_mismatch    arg=size (default): the collective with one more
                         element; arg=op: another collective in its place
  straggler              sleep arg ms (default 200) in every step from the point
  seed_mismatch          perturb the model's parameters before DDP wraps it
  unsharded_data         the DistributedSampler hands out every index (as if absent);
                         a sharding batch sampler (accelerate's BatchSamplerShard)
                         every batch of the one it wraps

Every fault is announced by a `fault` event (kind, step, point, source
"shim") before it strikes, so the truth is in the run directory beside
what the stack did. A spec that does not parse is an `instrument` event
(patch "faults", not applied) and nothing is struck: the harness validates
specs before a run, so this is only reached by a hand-set variable.
"""
import builtins
import os
import signal
import sys
import threading
import time

from . import _instrument, _state

_KINDS = {
    "exception", "exit", "sigkill", "segfault", "abort", "sigterm", "sigstop", "hung_collective",
    "collective_mismatch", "straggler", "seed_mismatch", "unsharded_data",
}
_SIGNALS = {"sigkill": "SIGKILL", "segfault": "SIGSEGV", "abort": "SIGABRT", "sigterm": "SIGTERM", "sigstop": "SIGSTOP"}
_ARGS = {"hung_collective": ("sleep", "skip"), "collective_mismatch": ("size", "op")}
# Kinds that strike at a collective call (armed by a step or a time point,
# they wait for the next collective).
_AT_COLLECTIVE = {"hung_collective", "collective_mismatch"}


class Fault:
    __slots__ = ("kind", "ranks", "step", "collective", "op", "nth", "after", "arg", "by", "spec", "fired", "due",
                 "calls", "attempt")

    def __init__(self, spec):
        self.spec = spec
        self.kind = None
        self.ranks = None  # None: every rank
        self.step = None
        self.collective = None
        self.op = None
        self.nth = 1
        self.after = None
        self.arg = ""
        self.by = "trainer"  # "supervisor": the harness strikes it from outside, not the shim
        self.attempt = None  # the launcher's attempt it strikes in (0: the first); None: every one
        self.fired = False
        self.due = False   # its step or time came: strike at the next collective
        self.calls = 0     # matching collective calls seen

    def point(self):
        if self.op is not None:
            return "%s call %d" % (self.op, self.nth)
        if self.collective is not None:
            return "collective #%d" % self.collective
        if self.after is not None:
            return "%g s after start" % self.after
        return "step %d" % self.step


def _count(key, value, least):
    if not value.isdigit() or int(value) < least:
        raise ValueError("%s=%s: expected an integer >= %d" % (key, value, least))
    return int(value)


def parse(text):
    """The faults of a FAULTLINE_FAULT value; ValueError naming the bad part."""
    faults = []
    for spec in filter(None, (s.strip() for s in text.split(";"))):
        parts = spec.split(":")
        f = Fault(spec)
        f.kind = parts[0]
        if f.kind not in _KINDS:
            raise ValueError("%s: kind '%s' is not one the shim strikes, expected one of %s"
                             % (spec, f.kind, ", ".join(sorted(_KINDS))))
        for part in parts[1:]:
            key, eq, value = part.partition("=")
            if not eq:
                raise ValueError("%s: '%s' is not KEY=VALUE" % (spec, part))
            if key == "rank":
                if value in ("all", "*"):
                    f.ranks = None
                else:
                    try:
                        f.ranks = {int(r) for r in value.split(",")}
                    except ValueError:
                        raise ValueError("%s: rank=%s: expected R, R,R... or all" % (spec, value)) from None
            elif key == "step":
                f.step = _count(key, value, 1)
            elif key == "collective":
                f.collective = _count(key, value, 0)
            elif key == "op":
                f.op = value
            elif key == "nth":
                f.nth = _count(key, value, 1)
            elif key == "after":
                try:
                    f.after = float(value)
                except ValueError:
                    raise ValueError("%s: after=%s: expected seconds" % (spec, value)) from None
            elif key == "arg":
                f.arg = value
            elif key == "attempt":
                f.attempt = _count(key, value, 0)
            elif key == "by":
                if value not in ("trainer", "supervisor"):
                    raise ValueError("%s: by=%s: expected trainer or supervisor" % (spec, value))
                f.by = value
            else:
                raise ValueError("%s: unknown key '%s', expected rank, step, collective, op, nth, after, attempt, arg or by"
                                 % (spec, key))
        if sum(x is not None for x in (f.step, f.collective, f.op, f.after)) > 1:
            raise ValueError("%s: give one point: step, collective, op or after" % spec)
        if f.nth != 1 and f.op is None:
            raise ValueError("%s: nth counts the calls of an op: give op=OP" % spec)
        if f.step is None and f.collective is None and f.op is None and f.after is None:
            f.step = 1
        if f.kind in _ARGS:
            f.arg = f.arg or _ARGS[f.kind][0]
            if f.arg not in _ARGS[f.kind]:
                raise ValueError("%s: arg=%s: expected %s" % (spec, f.arg, " or ".join(_ARGS[f.kind])))
        if f.kind in ("exit", "straggler") and f.arg and not f.arg.lstrip("-").isdigit():
            raise ValueError("%s: arg=%s: expected an integer" % (spec, f.arg))
        faults.append(f)
    return faults


# The faults aimed at this rank; empty: every hook is one attribute test.
armed = []
_straggle_ms = 0


def launch_attempt():
    """The launcher's attempt this process is: torchelastic's restart count
    (TORCHELASTIC_RESTART_COUNT, which torchrun gives each worker: 0, then 1
    after its first restart), or how many processes were this rank before
    this one and are gone (_state.earlier_processes), whichever is more.
    The count alone falls short: Ray Train's restarted worker groups say
    nothing of their attempt, and torch 2.x's agent restarts a node's healthy
    workers for another node's restart (a c10d rendezvous: "membership
    changes do not count as retries") with the count unchanged."""
    text = os.environ.get("TORCHELASTIC_RESTART_COUNT", "")
    return max(int(text) if text.isdigit() else 0, _state.earlier_processes)


def arm(rank):
    """Called when the process becomes rank `rank`."""
    global armed
    text = os.environ.get("FAULTLINE_FAULT", "")
    if not text:
        return
    attempt = launch_attempt()
    mine = [f for f in parse(text) if (f.ranks is None or rank in f.ranks) and f.by != "supervisor"
            and (f.attempt is None or f.attempt == attempt)]
    armed = mine
    for f in mine:
        if f.after is not None:
            t = threading.Timer(f.after, _time_came, (f,))
            t.daemon = True
            t.start()


def _announce(f, step=None):
    f.fired = True
    rec = _state.recorder
    if rec is not None:
        from . import _steps

        rec.emit("fault", kind=f.kind, step=step if step is not None else _steps.current_step(),
                 point=f.point(), source="shim", rule=f.spec)


def _exception_type(name):
    obj = getattr(builtins, name, None)
    if obj is None and "." in name:
        import importlib

        module, _, attr = name.rpartition(".")
        try:
            obj = getattr(importlib.import_module(module), attr, None)
        except ImportError:
            obj = None
    return obj if isinstance(obj, type) and issubclass(obj, BaseException) else RuntimeError


def _strike_process(f):
    """The kinds that end or stop the process, wherever the point is."""
    if f.kind == "exception":
        name = f.arg or "NameError"
        if name == "NameError":
            raise NameError("name 'faultline_injected' is not defined (faultline: injected at %s)" % f.point())
        raise _exception_type(name)("faultline: injected %s at %s" % (name, f.point()))
    if f.kind == "exit":
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(int(f.arg) if f.arg else 1)
    if f.kind in _SIGNALS:
        os.kill(os.getpid(), getattr(signal, _SIGNALS[f.kind]))


def _time_came(f):
    if f.fired:
        return
    if f.kind == "exit" or f.kind in _SIGNALS:
        _announce(f)
        _strike_process(f)
    else:
        f.due = True


def sleep_forever():
    while True:
        time.sleep(3600)


def at_step(step):
    """When step `step` begins (the step_begin event is out)."""
    global _straggle_ms
    for f in armed:
        if f.fired:
            continue
        if not (f.due or (f.step is not None and step >= f.step)):
            continue
        if f.kind in _AT_COLLECTIVE:
            f.due = True  # at this step's (next) collective
        elif f.kind == "straggler":
            _announce(f, step)
            _straggle_ms += int(f.arg) if f.arg else 200
        elif f.kind in ("seed_mismatch", "unsharded_data"):
            continue  # struck where DDP wraps the model / the sampler draws
        else:
            _announce(f, step)
            _strike_process(f)
    if _straggle_ms:
        time.sleep(_straggle_ms / 1000.0)


def at_collective(op, seq):
    """Before default-group collective `seq` (from 0, as the events number
    them); returns what to do instead of it (None: run it; "skip"; "size";
    "op"), or strikes here."""
    for f in armed:
        if f.fired or f.kind in ("straggler", "seed_mismatch", "unsharded_data"):
            continue
        if f.op is not None:
            if f.op != op:
                continue
            f.calls += 1
            if f.calls < f.nth:
                continue
        elif f.collective is not None:
            if seq < f.collective:
                continue
        elif not f.due:
            continue
        _announce(f)
        if f.kind == "hung_collective":
            if f.arg == "skip":
                return "skip"
            sleep_forever()
        if f.kind == "collective_mismatch":
            return f.arg
        _strike_process(f)
    return None


def perturb_before_ddp(module):
    """seed_mismatch: this rank's replica starts from other parameters."""
    for f in armed:
        if f.kind == "seed_mismatch" and not f.fired:
            import torch

            _announce(f)
            with torch.no_grad():
                for p in module.parameters():
                    p.add_(0.01)


def drops_sampler():
    """unsharded_data: the DistributedSampler is as good as absent."""
    for f in armed:
        if f.kind == "unsharded_data":
            if not f.fired:
                _announce(f)
            return True
    return False
