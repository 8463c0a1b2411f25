"""What bench/run reads about processes: stamps the fixture ranks write, CPU
time and peak memory of one process (its own, never its children's), the
children a launcher has, and a poller that notes when each of them is reaped.

CPU: /proc/PID/task/*/schedstat (nanoseconds on the CPU, per thread) while the
process lives; at its exit the process is waited for with WNOWAIT, so its
/proc/PID/stat (utime+stime of the whole thread group, clock ticks) can still
be read before it is reaped. wait4()'s rusage is no use here: it includes
every descendant the process reaped, i.e. all the ranks.
"""
import os
import socket
import subprocess
import threading
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def stamp(run_dir, rank, what):
    """CLOCK_REALTIME ns that the hostile fixture wrote to stamp-RANK-WHAT, or None."""
    try:
        with open(os.path.join(run_dir, f"stamp-{rank}-{what}")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def schedstat_ns(pid):
    """Nanoseconds the process's live threads have been on a CPU; None when gone."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    except OSError:
        return None
    return total


def stat_cpu_s(pid):
    """utime+stime of the thread group (not its children), seconds; None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def status_kib(pid, key):
    """A "KEY: N kB" line of /proc/PID/status (VmHWM, VmRSS), or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def children(pid):
    """Direct children of every thread of pid."""
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out += [int(p) for p in f.read().split()]
            except (OSError, ValueError):
                pass
    except OSError:
        pass
    return out


def pss_kib(pid):
    """Proportional set size (shared pages split between their users): summed
    over processes it is the memory they really take. None when gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def mem_available_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


class Watched:
    """Runs a command and watches it until it exits: its own CPU time, its peak
    RSS (every `sample_every` s), the sum of its children's RSS and the
    machine's lowest MemAvailable (every `slow_every` s), the sum of its
    children's PSS (every `pss_every` s: smaps_rollup is costly), and, with reap_poll,
    the moment each child disappears from /proc (reaped), polled every
    millisecond. None for an interval turns that sampling off."""

    def __init__(self, cmd, env=None, sample_every=0.02, slow_every=0.5, pss_every=None, reap_poll=False, cwd=None,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        self.cmd = cmd
        self.t_start_ns = time.time_ns()
        self.t_start = time.monotonic()
        self.proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=stdout, stderr=stderr)
        self.peak_rss_kib = 0
        self.peak_children_rss_kib = 0
        self.peak_children_pss_kib = 0
        self.mem_available_before_kib = mem_available_kib()
        self.min_mem_available_kib = self.mem_available_before_kib
        self.reaped_ns = {}  # child pid -> time it was seen gone
        self._seen = set()
        self._stop = threading.Event()
        self._sample_every = sample_every
        self._slow_every = slow_every
        self._pss_every = pss_every
        self._reap_poll = reap_poll
        intervals = [x for x in (0.001 if reap_poll else None, sample_every, slow_every, pss_every) if x]
        self._interval = min(intervals) if intervals else None
        self._thread = threading.Thread(target=self._watch, daemon=True)
        if self._interval:
            self._thread.start()

    def _watch(self):
        pid = self.proc.pid
        last_sample = last_slow = last_pss = 0.0
        while True:
            now = time.monotonic()
            if self._reap_poll:
                for c in children(pid):
                    self._seen.add(c)
                for c in self._seen - self.reaped_ns.keys():
                    if not os.path.exists(f"/proc/{c}"):
                        self.reaped_ns[c] = time.time_ns()
            if self._sample_every and now - last_sample >= self._sample_every:
                last_sample = now
                hwm = status_kib(pid, "VmHWM")
                if hwm:
                    self.peak_rss_kib = max(self.peak_rss_kib, hwm)
            if self._slow_every and now - last_slow >= self._slow_every:
                last_slow = now
                rss = sum(status_kib(c, "VmRSS") or 0 for c in children(pid))
                self.peak_children_rss_kib = max(self.peak_children_rss_kib, rss)
                self.min_mem_available_kib = min(self.min_mem_available_kib, mem_available_kib())
            if self._pss_every and now - last_pss >= self._pss_every:
                last_pss = now
                pss = sum(pss_kib(c) or 0 for c in children(pid))
                self.peak_children_pss_kib = max(self.peak_children_pss_kib, pss)
            if self._stop.wait(self._interval):
                return

    def wait(self, timeout=None):
        """Waits for the exit without reaping, reads the final CPU time, reaps.
        A command still running after `timeout` s is killed (and marked so)."""
        pid = self.proc.pid
        self.timed_out = False
        killer = None
        if timeout is not None:
            def kill():
                self.timed_out = True
                self.proc.kill()
            killer = threading.Timer(timeout, kill)
            killer.start()
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        self.t_end = time.monotonic()
        self.t_end_ns = time.time_ns()
        if killer:
            killer.cancel()
        self.cpu_s = stat_cpu_s(pid)  # a zombie still shows its thread group's times
        # ...and its main thread's nanoseconds on a CPU (all of it, for a single-threaded process).
        try:
            with open(f"/proc/{pid}/schedstat") as f:
                self.main_thread_cpu_ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            self.main_thread_cpu_ns = None
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        # Children the poller saw that are gone now but that it did not time.
        for c in self._seen - self.reaped_ns.keys():
            if not os.path.exists(f"/proc/{c}"):
                self.reaped_ns[c] = self.t_end_ns
        self.returncode = self.proc.wait()
        return self.returncode

    @property
    def wall_s(self):
        return self.t_end - self.t_start
