"""Which of the shim's patches applied in this process: `instrument` events.

A patch that does not fit the torch it meets (a function moved, a signature
changed) leaves part of the trainer unobserved. The diagnosis must know that
"no event" means "nobody looked" there, so every patch is tried through
attempt(), which records the outcome, and each outcome becomes one event:

    {"ev":"instrument","patch":"dist.all_reduce","applied":true,"torch":"2.13.0"}
    {"ev":"instrument","patch":"optim.step","applied":false,"error":"AttributeError: ...","torch":"2.13.0"}

Patches run when torch imports a module, which may be before this process
is a rank (a torch.multiprocessing.spawn child is made one later): outcomes
are kept and written once the recorder exists, then as they come. A patch
that applied but whose bookkeeping fails while the trainer runs is reported
once more, applied false, its error prefixed "at run time: ".

The shim's names for its patches (docs/BLACKBOX.md lists them) are part of
the events contract; the harness groups them by what they observe.
"""
import _thread
import os
import sys

from . import _state

_MAX_ERROR = 300

# _thread, not threading: the package is imported by every Python process
# that has the shim on its path, and threading costs an import there.
_lock = _thread.allocate_lock()
_outcomes = {}    # patch name -> None (applied) or the error text, in the order tried
_sent = set()     # names whose current outcome is written
_broken = set()   # names already reported broken at run time


def _after_fork_in_child():
    global _lock
    _lock = _thread.allocate_lock()  # another thread may have held it at the fork


os.register_at_fork(after_in_child=_after_fork_in_child)


def torch_version():
    """torch.__version__ once torch is (being) imported; never imports it."""
    torch = sys.modules.get("torch")
    version = getattr(torch, "__version__", None) if torch is not None else None
    return str(version) if version is not None else None


def error_text(exc):
    text = "%s: %s" % (type(exc).__name__, exc)
    return text if len(text) <= _MAX_ERROR else text[:_MAX_ERROR - 3] + "..."


def _note(name, error):
    with _lock:
        _outcomes[name] = error
        _sent.discard(name)
    flush()


def flush():
    """Writes the outcomes not yet written, once this process is a rank."""
    rec = _state.recorder
    if rec is None:
        return
    with _lock:
        todo = [(n, e) for n, e in _outcomes.items() if n not in _sent]
        _sent.update(n for n, _ in todo)
    version = torch_version()
    for name, error in todo:
        fields = {"patch": name, "applied": error is None}
        if error is not None:
            fields["error"] = error
        if version is not None:
            fields["torch"] = version
        rec.emit("instrument", **fields)


def failed(name, exc):
    pass_through(exc)
    try:
        _note(name, error_text(exc))
    except Exception:  # noqa: BLE001
        pass


def attempt(name, patch, *args):
    """Runs patch(*args) as the patch `name`; records whether it applied. Never raises."""
    try:
        patch(*args)
    except Exception as e:  # noqa: BLE001  recorded: that part of the trainer is not observed
        _note(name, error_text(e))
        return False
    _note(name, None)
    return True


def failed_as_a_whole(labels, exc):
    """Patch modules that could not be set up at all: each label failed."""
    for label in labels:
        _note(label, error_text(exc))


def _handler_codes():
    """The code objects of the Python signal handlers installed now."""
    import signal

    codes = set()
    for signum in signal.valid_signals():
        try:
            handler = signal.getsignal(signum)
        except (ValueError, OSError):
            continue
        code = getattr(getattr(handler, "__func__", handler), "__code__", None)
        if code is not None:
            codes.add(code)
    return codes


def pass_through(exc):
    """Raises exc again if it is not the shim's own: a Python signal handler
    raised it while the shim's code ran (a DataLoader's SIGCHLD handler
    raising "worker is killed by signal", a trainer's SIGALRM timeout). Such
    an exception lands in whatever frame the main thread is in; swallowed
    there it would be lost, and the trainer would fail later and otherwise.
    Every place the shim catches an exception around its own bookkeeping
    calls this first. An exception that is the shim's returns."""
    tb = exc.__traceback__
    if tb is None:
        return
    codes = _handler_codes()
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            raise exc
        tb = tb.tb_next


def broke(name, exc):
    """A patch that applied failed while the trainer ran: said once per patch.
    An exception a signal handler raised is not a failure of the patch: it
    goes on to the trainer (pass_through)."""
    pass_through(exc)
    if name in _broken:
        return
    _broken.add(name)
    try:
        _note(name, "at run time: " + error_text(exc))
    except Exception:  # noqa: BLE001
        pass


def outcomes():
    """{name: None or error}: for tests and the curious."""
    with _lock:
        return dict(_outcomes)
