"""The torchruns bench/run measures faultline against: Debian's /usr/bin/torchrun
and each venv's, found by faultline's own rule (every
$FAULTLINE_OPT/torch-*/bin/python, default /opt/faultline, or the interpreters
in FAULTLINE_PYTHONS, ':'-separated, instead). Each is named torchrun@SERIES by
its torch version and carries the defaults a user of it gets, read from its own
torch.distributed (the monitor interval, the grace before SIGKILL), because the
comparison is with torchrun as people run it, not as we could tune it."""
import glob
import json
import os
import re
import subprocess

from benchlib.procs import free_port

DEBIAN_PYTHON = "/usr/bin/python3"
DEBIAN_TORCHRUN = "/usr/bin/torchrun"

# Runs inside each interpreter: its torch version and torchrun's defaults.
# A worker failure ends in LocalElasticAgent._stop_workers() -> _shutdown(),
# which passes no timeout: the grace before SIGKILL is _shutdown's default
# (2.x) or, where _shutdown takes none (1.13), PContext.close()'s.
# --shutdown-timeout (2.x) reaches only a shutdown on a signal to the agent.
_PROBE = r"""
import inspect, json, os, sys
import torch
from torch.distributed import run
from torch.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent
from torch.distributed.elastic.multiprocessing.api import PContext

def default(fn, name):
    p = inspect.signature(fn).parameters.get(name)
    return None if p is None or p.default is inspect.Parameter.empty else p.default

d = {a.dest: a.default for a in run.get_args_parser()._actions}
grace = default(LocalElasticAgent._shutdown, "timeout")
out = {"torch": torch.__version__, "python": sys.executable,
       "monitor_interval_s": d.get("monitor_interval"), "start_method": d.get("start_method"),
       "sigterm_grace_s": grace if grace is not None else default(PContext.close, "timeout"),
       "grace_from": "LocalElasticAgent._shutdown" if grace is not None else "PContext.close"}
if "shutdown_timeout" in d:
    s = d["shutdown_timeout"]
    out["shutdown_timeout_s"] = s if s is not None else int(os.environ.get("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "30"))
print(json.dumps(out))
"""


def series(version):
    """'2.13.0+cpu' -> '2.13'; '1.13.0a0' -> '1.13'."""
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else (version or "unknown")


def version_key(name):
    """Sort key for stack names: torchrun@2.13 before torchrun@1.13 (newest leads)."""
    m = re.search(r"@(\d+)\.(\d+)", name)
    return (-int(m.group(1)), -int(m.group(2)), name) if m else (0, 0, name)


class Torchrun:
    """One installed torchrun: how to start it, its version and defaults."""

    def __init__(self, python, program, info, error=None):
        self.python = python
        self.program = program  # argv prefix: [.../torchrun] or [python, -m, torch.distributed.run]
        self.info = info
        self.error = error
        self.torch = info.get("torch")
        self.series = series(self.torch)
        self.name = f"torchrun@{self.series}" if self.torch else f"torchrun@unknown:{python}"

    @property
    def tag(self):
        """The name as a file name (run directories): torchrun-2.13."""
        return re.sub(r"[^\w.+-]", "-", self.name)

    @property
    def works(self):
        return self.error is None

    def cmd(self, nproc, log_dir, argv):
        """The same flags for every version: --redirects 2 --tee 2 (Debian's 1.13
        crashes in option parsing on Python 3.11 with its defaults; 2.x's
        defaults work, but the conditions stay the same), per-rank logs in
        log_dir, a free port (concurrent jobs collide on 29500); the monitor
        interval and the SIGKILL grace are each version's defaults."""
        return [*self.program, "--no_python", f"--nproc_per_node={nproc}", "--redirects", "2", "--tee", "2",
                "--log_dir", log_dir, "--master_port", str(free_port())] + list(argv)

    def trainer(self, build_dir):
        """The reference trainer built against this torch's LibTorch
        (faultline-trainer-torch<series>) where it exists, else the default
        one (Debian's LibTorch)."""
        d = os.path.join(build_dir, "reference-trainer")
        own = os.path.join(d, f"faultline-trainer-torch{self.series}")
        return own if os.access(own, os.X_OK) else os.path.join(d, "faultline-trainer")

    def trainer_caveat(self, build_dir):
        """Why the reference trainer may not run under this torchrun, or None:
        the default build links Debian's LibTorch, whose TCPStore client
        cannot talk to a newer torchrun's agent store (rank 0 ends on
        "Broken pipe" under torchrun 2.13)."""
        if os.path.basename(self.trainer(build_dir)) != "faultline-trainer" or self.python == DEBIAN_PYTHON:
            return None
        return (f"faultline-trainer-torch{self.series} not built: ran faultline-trainer, "
                f"built against Debian's LibTorch, not torch {self.torch}'s")

    def as_dict(self, build_dir=None):
        out = {"stack": self.name, "torch": self.torch, "program": " ".join(self.program), "python": self.python,
               "works": self.works, **{k: v for k, v in self.info.items() if k not in ("torch", "python")}}
        if self.error:
            out["error"] = self.error
        if build_dir:
            out["trainer"] = self.trainer(build_dir)
            caveat = self.trainer_caveat(build_dir)
            if caveat:
                out["trainer_caveat"] = caveat
        return out


def version_file(python):
    """torch's version as torch/version.py of this interpreter's install says,
    read without importing torch (Debian's: /usr/lib/python3/dist-packages);
    None where there is none. Names a torchrun whose torch does not import."""
    if os.path.realpath(python) == os.path.realpath(DEBIAN_PYTHON):
        paths = ["/usr/lib/python3/dist-packages/torch/version.py"]
    else:
        prefix = os.path.dirname(os.path.dirname(python))
        paths = sorted(glob.glob(os.path.join(prefix, "lib", "python3*", "site-packages", "torch", "version.py")))
    for path in paths:
        try:
            with open(path) as f:
                m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", f.read(), re.M)
        except OSError:
            continue
        if m:
            return m.group(1)
    return None


def _start_probe(python):
    try:
        return subprocess.Popen([python, "-c", _PROBE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        return e


def _finish_probe(python, p):
    """(info, None), or ({"torch": version.py's}, why it does not work)."""
    fallback = {"torch": version_file(python)}
    if isinstance(p, OSError):
        return fallback, f"{python}: {p}"
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return fallback, f"{python}: the probe (import torch.distributed.run) took over 120 s"
    if p.returncode != 0:
        last = (err.strip().splitlines() or [""])[-1]
        return fallback, f"{python} exited {p.returncode}: {last}"
    try:
        return json.loads(out.strip().splitlines()[-1]), None
    except (ValueError, IndexError):
        return fallback, f"{python}: no JSON from the probe: {out[-200:]!r}"


def _interpreters():
    """(python, torchrun program) pairs by faultline's rule, Debian's first."""
    pairs = []
    if os.access(DEBIAN_TORCHRUN, os.X_OK):
        pairs.append((DEBIAN_PYTHON, [DEBIAN_TORCHRUN]))
    env = os.environ.get("FAULTLINE_PYTHONS", "")
    if env:
        pythons = [p for p in env.split(":") if p]
    else:
        opt = os.environ.get("FAULTLINE_OPT", "/opt/faultline")
        pythons = sorted(glob.glob(os.path.join(opt, "torch-*", "bin", "python")))
    for py in pythons:
        tr = os.path.join(os.path.dirname(py), "torchrun")
        if os.path.realpath(py) == os.path.realpath(DEBIAN_PYTHON):
            continue  # Debian's, already in
        pairs.append((py, [tr] if os.access(tr, os.X_OK) else [py, "-m", "torch.distributed.run"]))
    return pairs


def discover(only=None):
    """Every installed torchrun, newest first; `only` (names) keeps some.
    One that does not work (its torch does not import) is kept, with its
    error, so the results say it was left out and why."""
    pairs = _interpreters()
    # One probe per interpreter, all at once: each imports torch (seconds).
    started = [(python, program, _start_probe(python)) for python, program in pairs]
    found = []
    for python, program, p in started:
        info, error = _finish_probe(python, p)
        found.append(Torchrun(python, program, info, error))
    names = {}
    for t in found:
        # Two installs of one series (a venv beside Debian's, say) keep apart by full version.
        if t.name in names:
            t.name = f"torchrun@{t.torch}"
        names[t.name] = t
    found.sort(key=lambda t: version_key(t.name))
    if only:
        missing = [n for n in only if n not in names]
        if missing:
            raise LookupError(f"no {', '.join(missing)} installed; found {', '.join(t.name for t in found) or 'none'}")
        found = [t for t in found if t.name in only]
    return found
