"""The rank's event writer: CONTRACT.md section 3, one JSON object a line.

Each line goes out in one os.write on an O_APPEND descriptor, so lines from
several threads (the shim's Gloo waiter writes collective_end, a trainer's
threads raise) and from forked children never interleave. A write that
fails is dropped: losing an event must never change the trainer.
"""
import json
import os
import time


class Recorder:
    def __init__(self, rank, events_path):
        self.rank = rank
        self.events_path = events_path
        self.rank_dir = os.path.dirname(events_path)
        os.makedirs(self.rank_dir, exist_ok=True)
        self._fd = os.open(events_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._pid = os.getpid()
        # Forked children (DataLoader workers) share the descriptor; their own
        # lines must carry their own pid.
        os.register_at_fork(after_in_child=self._refresh_pid)

    def _refresh_pid(self):
        self._pid = os.getpid()

    def _write(self, line):
        self._write_bytes(line.encode("utf-8", "replace"))

    def _write_bytes(self, data):
        try:
            n = os.write(self._fd, data)
            while 0 < n < len(data):  # a regular file takes it whole unless the disk is full
                data = data[n:]
                n = os.write(self._fd, data)
        except OSError:
            pass

    def emit(self, ev, **fields):
        """Any event; fields are JSON-encoded as given."""
        head = '{"t":%d,"rank":%d,"pid":%d,"ev":"%s"' % (time.time_ns(), self.rank, self._pid, ev)
        if fields:
            head += "," + json.dumps(fields, separators=(",", ":"), ensure_ascii=True, default=str)[1:]
        else:
            head += "}"
        self._write(head + "\n")

    def emit_json(self, ev, fields):
        """An event whose fields are already JSON: `fields` is ',"k":v,...'
        (the metric sinks' per-value path, _metrics)."""
        self._write('{"t":%d,"rank":%d,"pid":%d,"ev":"%s"%s}\n' % (time.time_ns(), self.rank, self._pid, ev, fields))

    def store(self, ev, op, key, extra=""):
        """store_begin / store_end: a blocking c10d store call (get, wait) and
        its key; `extra` is the call site's fields (_site.fields())."""
        head = '{"t":%d,"rank":%d,"pid":%d,"ev":"%s","op":"%s"' % (time.time_ns(), self.rank, self._pid, ev, op)
        if key is not None:
            head += ',"key":' + json.dumps(key, ensure_ascii=True)
        self._write(head + extra + "}\n")

    def collective(self, ev, op, seq, numel, dtype, extra=""):
        """collective_begin / collective_end, formatted by hand and written
        inline: this is the per-call path (the write(2) is most of its ~3 us)."""
        seq_field = ',"seq":%d' % seq if seq is not None else ""
        data = ('{"t":%d,"rank":%d,"pid":%d,"ev":"%s","op":"%s"%s,"numel":%d,"dtype":"%s"%s}\n'
                % (time.time_ns(), self.rank, self._pid, ev, op, seq_field, numel, dtype, extra)).encode()
        try:
            n = os.write(self._fd, data)
        except OSError:
            return
        if n < len(data):
            self._write_bytes(data[n:])
