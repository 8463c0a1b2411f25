"""Uncaught exceptions as `error` events and torchelastic error files.

The hooks wrap whatever sys.excepthook and threading.excepthook were when
the shim started (Debian's apport hook, a user's sitecustomize) and always
call them afterwards, so output and exit status stay what they were.
"""
import json
import os
import sys
import threading
import time
import traceback

from . import _instrument, _state


def _frames(tb):
    return traceback.extract_tb(tb) if tb is not None else []


def _user_frame(frames):
    """The innermost frame of the user's code, else the innermost frame."""
    for f in reversed(frames):
        if not _state.is_library_file(f.filename) and f.lineno:
            return f
    return frames[-1] if frames else None


# The formatted exception goes into the event whole, but not without bound
# (a recursion error prints thousands of frames): its head holds the first
# cause, its tail the exception that propagated.
_MAX_TRACEBACK = 64 * 1024


def _formatted(etype, value, tb):
    text = "".join(traceback.format_exception(etype, value, tb))
    if len(text) > _MAX_TRACEBACK:
        text = text[: _MAX_TRACEBACK * 3 // 4] + "\n...\n" + text[-_MAX_TRACEBACK // 4 :]
    return text


def _stack(frames):
    # Innermost first, as native backtraces are: "function (file:line)".
    return ["%s (%s:%d)" % (f.name, f.filename, f.lineno or 0) for f in reversed(frames)]


def _fields(etype, value, tb):
    """An exception as an event's fields: kind, type, message, the user's
    innermost frame, the stack and the formatted traceback."""
    frames = _frames(tb)
    where = _user_frame(frames)
    return {
        "kind": "python_exception",
        "type": etype.__name__,
        "message": str(value) if value is not None else "",
        "file": where.filename if where else "",
        "line": (where.lineno or 0) if where else 0,
        "stack": _stack(frames),
        "traceback": _formatted(etype, value, tb),
    }


def record(etype, value, tb, thread=None, error_file=True, system_exit=False):
    """Writes the error event (and, for a fatal one, the error file). A
    SystemExit is the process's exit status, not an error, unless
    `system_exit`: something caught it before the process could exit with
    it (Ray Train's worker), and then one with a failing status is recorded."""
    rec = _state.recorder
    if rec is None or etype is None:
        return
    if issubclass(etype, SystemExit) and (not system_exit or getattr(value, "code", None) in (None, 0)):
        return
    fields = _fields(etype, value, tb)
    if thread is not None:
        fields["thread"] = thread
    rec.emit("error", **fields)
    if error_file:
        _write_error_file(rec, etype, value, tb)


def record_raised(ev, value, site, **extra):
    """An exception on its way to the trainer's code, which may catch it and
    go on, and then nothing else says it happened (Lightning's per-step
    _broadcast_sigterm_tensor catches every Exception around its broadcast):
    `collective_raised`, one out of a collective (its Work failed, or a
    signal handler raised in it), `site` the frame that called it;
    `signal_raised`, one torch's DataLoader SIGCHLD handler raised ("worker
    is killed by signal"), `site` the frame it interrupted. Never raises but
    what a signal handler raises while it runs."""
    rec = _state.recorder
    if rec is None:
        return
    try:
        fields = dict(_fields(type(value), value, value.__traceback__), site=site)
        fields.update((k, v) for k, v in extra.items() if v is not None)
        rec.emit(ev, **fields)
    except Exception as e:  # noqa: BLE001
        _instrument.pass_through(e)


def frame_site(frame):
    return "%s:%d" % (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ""


def _write_error_file(rec, etype, value, tb):
    """torchelastic's format (ErrorHandler.record_exception, the same in torch 1.13 and 2.x), unless
    the trainer's own @record already wrote the file."""
    path = os.environ.get("TORCHELASTIC_ERROR_FILE") or os.path.join(rec.rank_dir, "error.json")
    if os.path.exists(path):
        return
    data = {
        "message": {
            "message": "%s: %s" % (etype.__name__, value),
            "extraInfo": {
                "py_callstack": "".join(traceback.format_exception(etype, value, tb)),
                "timestamp": str(int(time.time())),
            },
        }
    }
    # Whole or not at all: torchelastic's agent reads the file as soon as the
    # rank has exited, and a rank killed while writing it (the agent's own
    # SIGTERM, right after a peer failed) left it empty; json.load then
    # crashed the agent instead of letting it restart the ranks (CI,
    # resume-skips-optimizer on torchrun@2.13).
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        with open(tmp, "w") as fp:
            json.dump(data, fp)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def install():
    previous = sys.excepthook

    def excepthook(etype, value, tb):
        try:
            record(etype, value, tb)
        except Exception as e:  # noqa: BLE001
            _instrument.broke("errors.excepthook", e)
        previous(etype, value, tb)

    sys.excepthook = excepthook

    previous_thread = threading.excepthook

    def thread_excepthook(args):
        try:
            # A thread's exception does not end the process: an event, no error file.
            name = args.thread.name if args.thread is not None else ""
            record(args.exc_type, args.exc_value, args.exc_traceback, thread=name, error_file=False)
        except Exception as e:  # noqa: BLE001
            _instrument.broke("errors.excepthook", e)
        previous_thread(args)

    threading.excepthook = thread_excepthook


def record_current(error_file=True):
    """The exception being handled right now (torch.multiprocessing.spawn's
    child catches the trainer's exception itself and never reaches the hook)."""
    try:
        etype, value, tb = sys.exc_info()
        record(etype, value, tb, error_file=error_file)
    except Exception:  # noqa: BLE001
        pass
