"""torch's Flight Recorder on request (docs/DIAGNOSIS.md, "Flight Recorder").

NCCL's watchdog writes the recorder's dump on a timeout, and on a write to
its dump pipe; Gloo's recorder (torch 2.x records Gloo's collectives too) has
neither. So the shim keeps a daemon thread waiting on
FAULTLINE_FLIGHT_RECORDER_DIR/shim_R.pipe: when the teardown writes to it,
the thread writes torch's own JSON dump to rank_R.json beside NCCL's. It runs
while the main thread is blocked inside a collective, which is when the dump
matters. Nothing is imported from torch here: the dump is taken only when
the trainer has imported torch.distributed. The thread always answers: where
there is nothing to dump (torch.distributed not imported, torch 1.13 has no
recorder) it writes an empty dump whose "faultline_no_dump" says why.
"""
import os
import sys
import threading


def arm(rank):
    directory = os.environ.get("FAULTLINE_FLIGHT_RECORDER_DIR")
    if not directory or not os.path.isdir(directory):
        return
    pipe = os.path.join(directory, "shim_%d.pipe" % rank)
    try:
        os.unlink(pipe)
    except FileNotFoundError:
        pass
    os.mkfifo(pipe, 0o600)
    thread = threading.Thread(target=_serve, args=(rank, directory, pipe), name="faultline-flight-recorder", daemon=True)
    thread.start()


def _serve(rank, directory, pipe):
    while True:
        try:
            with open(pipe, "rb") as f:  # blocks until the teardown opens it for writing
                f.read(1)
        except OSError:
            return
        try:
            _dump(rank, directory)
        except Exception:  # noqa: BLE001  the shim never changes what the trainer does
            pass


def _dump(rank, directory):
    """Always answers, so that the teardown need not wait for a dump that
    will not come: torch's dump, or an empty one that says why there is none."""
    c10d = sys.modules.get("torch._C._distributed_c10d")
    dump_json = getattr(c10d, "_dump_fr_trace_json", None)
    if c10d is None:
        data = _none("torch.distributed is not imported")
    elif dump_json is None:
        data = _none("this torch has no Flight Recorder")
    else:
        data = dump_json(True, False)  # includeCollectives, onlyActive
    if isinstance(data, str):
        data = data.encode()
    final = os.path.join(directory, "rank_%d.json" % rank)
    tmp = final + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, final)


def _none(why):
    import json

    return json.dumps({"version": "", "entries": [], "faultline_no_dump": why})
