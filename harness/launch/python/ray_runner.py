"""Runs a Ray Train trainer on a local Ray cluster of its own, as the ray
stack runs every scenario (docs/LAUNCHERS.md, "ray").

    python ray_runner.py --port P --num-cpus N --temp-dir DIR --logs-to DIR SCRIPT [ARGS...]

This is how a Ray user runs a job on one machine: `ray start --head`, then
the driver script with RAY_ADDRESS set, whose `ray.init()` connects and whose
`TorchTrainer.fit()` runs the training function in a worker group of Ray
actors (the ranks). Then the cluster is stopped.

- The head runs with --block, so that every Ray process (GCS, raylet, and
  the workers the raylet starts) is a descendant of this one and dies with
  it. --node-ip-address 127.0.0.1 is asked for, but Ray 2.60 turns it into
  the host's address and listens on every interface.
- Its workers bind ports the kernel picks (--min-worker-port=0
  --max-worker-port=0), not ports of Ray's default range (10002-19999),
  which the raylet hands out as it believes them free: two clusters on one
  host (a suite's -j 2) were handed one port, and the second to bind it
  (the driver, once) failed to start ("No address added out of total 1
  resolved for '0.0.0.0:15984'").
- Its temporary directory is the run's own (--temp-dir): Ray's sockets,
  session files and logs. After the job its logs are copied to --logs-to
  and the directory is removed; one left behind is a teardown leak that the
  launcher's finish() names.
- The driver's exit status is this program's, and what the driver prints
  (Ray's TrainingFailedError / WorkerGroupError) is the stack's report.
- SIGTERM or SIGINT: passed on to the driver, then the cluster is stopped.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

_HEAD_READY_S = 60  # ray start on a loaded 2-core machine: about 5 s
_HEAD_STOP_S = 10   # its atexit stops every Ray process, SIGTERM then SIGKILL
_stopping = False


def _usage(message):
    sys.stderr.write("ray_runner: %s\nusage: ray_runner.py --port P --num-cpus N --temp-dir DIR --logs-to DIR "
                     "SCRIPT [ARGS...]\n" % message)
    sys.exit(2)


def _parse(argv):
    opts, i = {}, 0
    flags = ("--port", "--num-cpus", "--temp-dir", "--logs-to")
    while i < len(argv) and argv[i] in flags:
        if i + 1 >= len(argv):
            _usage("missing value: %s" % argv[i])
        opts[argv[i][2:].replace("-", "_")] = argv[i + 1]
        i += 2
    missing = [f for f in flags if f[2:].replace("-", "_") not in opts]
    if missing:
        _usage("missing %s" % ", ".join(missing))
    for key in ("port", "num_cpus"):
        if not opts[key].isdigit():
            _usage("--%s %r: expected a whole number" % (key.replace("_", "-"), opts[key]))
    if i >= len(argv):
        _usage("no driver command")
    return opts, argv[i:]


def _ray_program():
    here = os.path.join(os.path.dirname(sys.executable), "ray")
    if not os.path.exists(here):
        sys.stderr.write("ray_runner: no `ray` program beside %s: is ray[train] installed there?\n" % sys.executable)
        sys.exit(2)
    return here


def _listening(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _start_head(opts, env):
    cmd = [_ray_program(), "start", "--head", "--block", "--node-ip-address=127.0.0.1", "--port=" + opts["port"],
           "--num-cpus=" + opts["num_cpus"], "--num-gpus=0", "--temp-dir=" + opts["temp_dir"],
           "--include-dashboard=false", "--disable-usage-stats", "--min-worker-port=0", "--max-worker-port=0",
           # The object store is /dev/shm; Ray's default is 30% of memory.
           "--object-store-memory=100000000"]
    return subprocess.Popen(cmd, env=env)


def _wait_ready(head, port):
    deadline = time.monotonic() + _HEAD_READY_S
    while time.monotonic() < deadline and not _stopping:
        if head.poll() is not None:
            sys.stderr.write("ray_runner: `ray start --head` exited with status %d before its cluster was up\n"
                             % head.returncode)
            return False
        if _listening(port):
            return True
        time.sleep(0.1)
    if not _stopping:
        sys.stderr.write("ray_runner: the Ray head was not listening on 127.0.0.1:%d after %d s\n" % (port, _HEAD_READY_S))
    return False


def _stop_head(head):
    """SIGINT is Ctrl-C: `ray start --block` leaves its wait loop and its atexit
    hook stops every process of the node (SIGTERM, then SIGKILL)."""
    if head.poll() is not None:
        return
    head.send_signal(signal.SIGINT)
    try:
        head.wait(_HEAD_STOP_S)
    except subprocess.TimeoutExpired:
        sys.stderr.write("ray_runner: `ray start --head` did not stop within %d s of SIGINT; SIGKILL\n" % _HEAD_STOP_S)
        head.kill()
        head.wait()


def _keep_logs(temp_dir, logs_to):
    """The session's logs (every worker's output, the raylet's, the GCS's) into
    the run directory, then the temporary directory removed."""
    logs = os.path.join(temp_dir, "session_latest", "logs")
    try:
        if os.path.isdir(logs):
            shutil.copytree(logs, logs_to, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.sock"))
    except (OSError, shutil.Error) as e:
        sys.stderr.write("ray_runner: could not keep Ray's logs: %s\n" % e)
    shutil.rmtree(temp_dir, ignore_errors=True)


def main():
    opts, driver_cmd = _parse(sys.argv[1:])
    port = int(opts["port"])
    env = dict(os.environ)
    env["RAY_ADDRESS"] = "127.0.0.1:%d" % port
    env.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # A cluster for this job alone: no token (Ray turns token authentication
    # on whenever ~/.ray/auth_token exists).
    env.setdefault("RAY_AUTH_MODE", "disabled")
    os.makedirs(opts["temp_dir"], exist_ok=True)

    driver = None

    def on_signal(signum, _frame):
        global _stopping
        _stopping = True
        if driver is not None and driver.poll() is None:
            driver.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    head = _start_head(opts, env)
    status = 1
    try:
        if _wait_ready(head, port):
            driver = subprocess.Popen(driver_cmd, env=env)
            if _stopping:  # the signal came while it was being started
                driver.send_signal(signal.SIGTERM)
            status = driver.wait()  # retried across the signal handler (PEP 475)
            status = status if status >= 0 else 128 - status
    finally:
        t = time.monotonic()
        _stop_head(head)
        _keep_logs(opts["temp_dir"], opts["logs_to"])
        sys.stderr.write("ray_runner: the driver exited with status %d; the cluster stopped in %.1f s\n"
                         % (status, time.monotonic() - t))
    sys.exit(status)


if __name__ == "__main__":
    main()
