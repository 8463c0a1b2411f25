"""faultline's builtin launcher and every installed torchrun (benchlib.torchruns:
Debian's 1.13, the venvs' 2.x) on the same ranks, one repetition after the
other, in the same order each time: crash detection and teardown on the hostile
fixture (tests/fixtures/hostile/hostile.c), a hung collective of the reference
trainer, launch of 8 trivial ranks, and supervision CPU with 64 idle ranks.

Ranks stamp CLOCK_REALTIME into $FAULTLINE_RUN_DIR/stamp-R-{exit,term} just
before they exit or when SIGTERM reaches them, so latencies run from the moment
the failing rank really exited, for every launcher alike. "Reaped" is when a
rank's /proc entry disappeared, polled every millisecond by the same poller
for every launcher (faultline's own record, supervisor.json, is kept beside it).

Each section's result has "faultline", one key per torchrun ("torchrun@2.13",
"torchrun@1.13"; the launch section also "started_torchrun@2.13", ...) and
"torchruns": what each of them is (torch version, program, monitor interval,
grace before SIGKILL, which reference trainer it ran), as used.
"""
import json
import os
import re
import random
import time

from benchlib.procs import Watched, children, stamp, schedstat_ns


def since(t_ns, t0_ns):
    """Milliseconds from t0_ns to t_ns; None when either is unknown (a stamp
    missing: that repetition failed, and shows as a gap, not as a crash)."""
    return None if t_ns is None or t0_ns is None else (t_ns - t0_ns) / 1e6


def _load(path):
    with open(path) as f:
        return json.load(f)


def _torchruns(t, trainer=False):
    """What each torchrun of this section is, for the results."""
    return {tr.name: tr.as_dict(t.build if trainer else None) for tr in t.torchruns}


def _fl_rank_pids(run_dir):
    return {r["pid"] for r in _load(os.path.join(run_dir, "supervisor.json"))["ranks"]}


def crash_delays(t, reps, seed=1):
    """When rank 1 fails in each repetition: 0.5 s, plus a random part as long
    as the longest monitor interval. A launcher that polls sees a failure at a
    random phase of its poll, as in real jobs; a fixed delay would fall at the
    same phase every time (a 0.5 s delay under a 0.1 s poll lands just after a
    tick, and torchrun 2.13 looked 10x faster than its median). The same delay
    serves faultline and every torchrun in one repetition."""
    longest = max([tr.info.get("monitor_interval_s") or 0 for tr in t.torchruns] + [0.1])
    rng = random.Random(seed)
    return [0.5 + rng.uniform(0, longest) for _ in range(reps)]


def crash(t, reps):
    """4 ranks; rank 1 exits 1 after a delay (crash_delays), the others end on SIGTERM (cooperative)."""
    out = {"faultline": [], **{tr.name: [] for tr in t.torchruns}, "torchruns": _torchruns(t)}
    out["delays_s"] = crash_delays(t, reps)
    for i in range(reps):
        argv = [t.hostile, "delay=%.4f" % out["delays_s"][i], "1=stamp-exit:1", "*=stamp-term:60"]
        d = t.work(f"fl-crash-{i}")
        w = Watched([t.faultline, "exec", "--nproc", "4", "--grace", "3", "-o", d, "--"] + argv, reap_poll=True,
                    sample_every=None, slow_every=None)
        w.wait(timeout=120)
        sup = _load(os.path.join(d, "supervisor.json"))
        t0 = stamp(d, 1, "exit")
        r1 = [r for r in sup["ranks"] if r["rank"] == 1][0]
        terms = [x for x in (stamp(d, r, "term") for r in (0, 2, 3)) if x]
        pids = {r["pid"] for r in sup["ranks"]}
        reaped = [ns for pid, ns in w.reaped_ns.items() if pid in pids]
        out["faultline"].append({
            "detect_ms": since(r1["exit_ns"], t0),
            "term_delivered_ms": since(min(terms), t0) if terms else None,
            "all_reaped_ms": since(max(reaped), t0) if len(reaped) == 4 else None,
            "all_reaped_record_ms": since(max(r["exit_ns"] or 0 for r in sup["ranks"]), t0),
            "launcher_returned_ms": since(w.t_end_ns, t0),
        })
        for tr in t.torchruns:
            d = t.work(f"tr-crash-{tr.tag}-{i}")
            w = Watched(tr.cmd(4, os.path.join(d, "logs"), argv), env=dict(os.environ, FAULTLINE_RUN_DIR=d),
                        reap_poll=True, sample_every=None, slow_every=None)
            w.wait(timeout=120)
            t0 = stamp(d, 1, "exit")
            terms = [x for x in (stamp(d, r, "term") for r in (0, 2, 3)) if x]
            reaped = list(w.reaped_ns.values())
            out[tr.name].append({
                "detect_ms": None,  # torchrun has no observable "noticed" moment before it signals
                "term_delivered_ms": since(min(terms), t0) if terms else None,
                "all_reaped_ms": since(max(reaped), t0) if len(reaped) == 4 else None,
                "launcher_returned_ms": since(w.t_end_ns, t0),
                "exit_code": w.returncode,
            })
    return out


def term_ignoring(t, reps, grace_s=1):
    """2 ranks; rank 1 exits 1, rank 0 ignores SIGTERM: faultline ends it after
    --grace; each torchrun after its own default grace before SIGKILL (30 s in
    1.13 and 2.13: a worker failure reaches LocalElasticAgent._shutdown(),
    which --shutdown-timeout does not; recorded per torchrun)."""
    argv = [t.hostile, "delay=0.3", "1=stamp-exit:1", "*=ignore-term:60"]
    out = {"faultline": [], **{tr.name: [] for tr in t.torchruns}, "grace_s": grace_s, "torchruns": _torchruns(t)}
    for i in range(reps):
        d = t.work(f"fl-term-{i}")
        w = Watched([t.faultline, "exec", "--nproc", "2", "--grace", str(grace_s), "-o", d, "--"] + argv,
                    reap_poll=True, sample_every=None, slow_every=None)
        w.wait(timeout=120)
        t0 = stamp(d, 1, "exit")
        pids = _fl_rank_pids(d)
        reaped = [ns for pid, ns in w.reaped_ns.items() if pid in pids]
        sup = _load(os.path.join(d, "supervisor.json"))
        out["faultline"].append({
            "all_reaped_ms": since(max(reaped), t0) if len(reaped) == 2 else None,
            "all_reaped_record_ms": since(max(r["exit_ns"] or 0 for r in sup["ranks"]), t0),
        })
        if t.skip_slow_torchrun:
            continue
        for tr in t.torchruns:
            d = t.work(f"tr-term-{tr.tag}-{i}")
            w = Watched(tr.cmd(2, os.path.join(d, "logs"), argv), env=dict(os.environ, FAULTLINE_RUN_DIR=d),
                        reap_poll=True, sample_every=None, slow_every=None)
            w.wait(timeout=180)
            t0 = stamp(d, 1, "exit")
            reaped = list(w.reaped_ns.values())
            out[tr.name].append({"all_reaped_ms": since(max(reaped), t0) if len(reaped) == 2 else None,
                                 "exit_code": w.returncode})
    return out


def rank_error(run_dir):
    """The first rank's `error` event under RUN_DIR/ranks ("rank 0: std::system_error: Broken pipe"), else the
    last line of a torchrun rank log that has one, else None: why a run gave no figure."""
    ranks = os.path.join(run_dir, "ranks")
    for r in sorted(os.listdir(ranks), key=lambda x: (len(x), x)) if os.path.isdir(ranks) else []:
        try:
            with open(os.path.join(ranks, r, "events.jsonl")) as f:
                for line in f:
                    if '"error"' not in line:
                        continue
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    if e.get("ev") == "error":
                        return f"rank {r}: {e.get('type') or e.get('kind')}: {e.get('message')}"
        except OSError:
            continue
    for root, _, files in sorted(os.walk(os.path.join(run_dir, "logs"))):
        for name in files:
            try:
                with open(os.path.join(root, name), errors="replace") as f:
                    lines = [x.strip() for x in f.read().splitlines()[-20:] if x.strip()]
            except OSError:
                continue
            if lines:
                return f"{os.path.relpath(os.path.join(root, name), run_dir)}: {lines[-1][:200]}"
    return None


def _fault_t(events_path):
    """t of the first `fault` event: the moment the laggard stopped taking part."""
    try:
        with open(events_path) as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("ev") == "fault":
                    return e["t"]
    except OSError:
        pass
    return None


def hang(t, reps, world=3, collective_timeout_s=10, hang_timeout_s=5):
    """Reference trainer, rank 1 never enters the step-3 gradient all-reduce.
    Both launchers run the trainer with the same --collective-timeout (Gloo's
    timeout in the waiting peers). faultline: from the fault to `faultline exec`
    returning with a report whose root cause names rank 1 (hang timeout
    `hang_timeout_s`, native stacks of the stuck ranks included). torchrun: from
    the fault to torchrun returning (the peers' Gloo timeout, then its monitor).
    Each torchrun runs the trainer built against its own LibTorch where there
    is one (faultline-trainer-torch<series>), recorded in "torchruns"."""
    args = ["--steps", "10", "--hidden", "16", "--collective-timeout", str(collective_timeout_s),
            "--fault", "hung_collective", "--fault-rank", "1", "--fault-step", "3"]
    out = {"faultline": [], **{tr.name: [] for tr in t.torchruns}, "collective_timeout_s": collective_timeout_s,
           "hang_timeout_s": hang_timeout_s, "world": world, "faultline_trainer": t.trainer,
           "torchruns": _torchruns(t, trainer=True)}
    for i in range(reps):
        d = t.work(f"fl-hang-{i}")
        w = Watched([t.faultline, "exec", "--nproc", str(world), "--hang-timeout", str(hang_timeout_s),
                     "--deadline", "120", "-o", d, "--", t.trainer] + args, sample_every=None, slow_every=None)
        w.wait(timeout=180)
        t0 = _fault_t(os.path.join(d, "ranks", "1", "events.jsonl"))
        report = _load(os.path.join(d, "report.json"))
        rc = report.get("root_cause") or {}
        named = rc.get("kind") == "hung_collective" and rc.get("rank") == 1
        trigger_ns = _load(os.path.join(d, "supervisor.json")).get("trigger", {}).get("t_ns")
        out["faultline"].append({
            "report_ms": since(w.t_end_ns, t0) if named else None,
            "detected_ms": since(trigger_ns, t0) if named else None,
            # The native dumps (eu-stack, else gdb) get 5 s for the stuck ranks' stacks.
            "gdb_cut_off": any("cut off" in e.get("what", "") for e in report.get("timeline", [])),
            "stack_tool": _stack_tool(report),
            "root_cause": [rc.get("kind"), rc.get("rank")]})
        for tr in t.torchruns:
            d = t.work(f"tr-hang-{tr.tag}-{i}")
            env = dict(os.environ, FAULTLINE_RUN_DIR=d, FAULTLINE_EVENTS_DIR=os.path.join(d, "ranks"))
            w = Watched(tr.cmd(world, os.path.join(d, "logs"), [tr.trainer(t.build)] + args), env=env,
                        sample_every=None, slow_every=None)
            w.wait(timeout=180)
            t0 = _fault_t(os.path.join(d, "ranks", "1", "events.jsonl"))
            rep = {"ended_ms": since(w.t_end_ns, t0), "exit_code": w.returncode}
            if t0 is None:
                rep["error"] = rank_error(d) or "rank 1 never reached its fault"
            out[tr.name].append(rep)
    return out


def _stack_tool(report):
    """Which dumper took the stuck ranks' stacks: "stack dumps: eu-stack of 3 rank(s)" (older runs:
    "eu-stack stack dumps of 3 rank(s)")."""
    for e in report.get("timeline", []):
        what = e.get("what", "")
        for w in ("eu-stack", "gdb", "py-spy"):
            if what.startswith(w + " stack dumps") or (what.startswith("stack dumps: ") and w + " of" in what):
                return w
    return None


def adaptive_hang(t, reps, world=3, step_ms=50, fault_step=40, hang_timeout_s=10):
    """The adaptive hang detection against the fixed timeout alone, on a
    trainer with a steady rhythm (scenarios/python/diagnosis/rhythm.py: about
    `step_ms` of compute a step, DDP on Gloo, torch 2.x when installed). The
    shim strikes hung_collective on rank 1 at step `fault_step` (it never
    enters that step's gradient all-reduce) and writes a `fault` event; from
    its t to the supervisor's trigger is `detected_ms`, to `faultline exec`
    returning with a report whose root cause names rank 1 is `report_ms`.
    "adaptive": the defaults (10x the learned p99, floor 0.5 s) under
    --hang-timeout `hang_timeout_s`; "fixed": --hang-factor 0, the timeout alone."""
    trainer = os.path.join(t.source, "scenarios", "python", "diagnosis", "rhythm.py")
    python = _newest_python(t)
    args = ["--steps", str(fault_step + 40), "--step-ms", str(step_ms)]
    modes = {"adaptive": [], "fixed": ["--hang-factor", "0"]}
    out = {m: [] for m in modes}
    out.update({"world": world, "step_ms": step_ms, "fault_step": fault_step, "hang_timeout_s": hang_timeout_s,
                "python": python})
    for i in range(reps):
        for mode, extra in modes.items():
            d = t.work(f"adaptive-{mode}-{i}")
            w = Watched([t.faultline, "exec", "--nproc", str(world), "--hang-timeout", str(hang_timeout_s),
                         "--deadline", "180", "--fault", f"hung_collective:rank=1:step={fault_step}"] + extra +
                        ["-o", d, "--", python, trainer] + args, sample_every=None, slow_every=None)
            w.wait(timeout=240)
            out[mode].append(adaptive_row(d, w.t_end_ns))
    return out


def hang_defaults(t, reps, world=3, step_ms=50, fault_steps=(3, 100)):
    """Hangs named with the defaults only: `faultline exec` with no hang flag
    (the idle rule from the first collective on, the learned rule once there
    is a rhythm, under the fixed 300 s bound) on rhythm.py, `step_ms` of
    compute a step; the shim strikes hung_collective on rank 1 at step 3 (a
    handful of collectives: no rhythm yet) and at step 100 (hundreds: a
    rhythm learned). From the fault event to the supervisor's trigger naming
    rank 1. What torchrun and plain Gloo do is their timeout: nothing in them
    detects a hang, the job waits for the process group's timeout (torch's
    default_pg_timeout, read from the install: rhythm.py passes its own
    --pg-timeout 300)."""
    trainer = os.path.join(t.source, "scenarios", "python", "diagnosis", "rhythm.py")
    python = _newest_python(t)
    out = {"world": world, "step_ms": step_ms, "python": python, "fault_steps": list(fault_steps),
           "default_pg_timeout_s": _default_pg_timeout_s(python)}
    launchers = [("builtin", None)] + [(tr.name, tr) for tr in t.torchruns]
    out["launchers"] = [name for name, _ in launchers]
    for name, _ in launchers:
        for step in fault_steps:
            out[_hang_defaults_key(name, step)] = []
    for i in range(reps):
        for name, tr in launchers:
            for step in fault_steps:
                d = t.work("hang-defaults-%s-%d-%d" % (re.sub(r"[^\w.+-]", "-", name), step, i))
                argv = [trainer, "--steps", str(step + 10), "--step-ms", str(step_ms)]
                if tr is None:
                    how = ["--nproc", str(world), "--"] + [python] + argv
                else:  # under torchrun (its own python and torch), faultline observing from outside
                    how = ["--launcher", "external", "--"] + tr.cmd(world, os.path.join(d, "logs"), [tr.python] + argv)
                w = Watched([t.faultline, "exec", "--deadline", "400", "--fault", f"hung_collective:rank=1:step={step}",
                             "-o", d] + how, sample_every=None, slow_every=None)
                w.wait(timeout=420)
                out[_hang_defaults_key(name, step)].append(adaptive_row(d, w.t_end_ns))
    return out


def _hang_defaults_key(launcher, step):
    """hang_defaults' entry of one launcher at one fault step: "step3" (builtin; older files have only
    these), "torchrun@2.13 step3"."""
    return f"step{step}" if launcher == "builtin" else f"{launcher} step{step}"


def _default_pg_timeout_s(python):
    """torch's default process-group timeout in seconds, as that interpreter's torch has it; None if unreadable."""
    import subprocess
    try:
        r = subprocess.run([python, "-c", "from torch.distributed.constants import default_pg_timeout as t; "
                                          "print(t.total_seconds())"], capture_output=True, text=True, timeout=120)
        return float(r.stdout.strip())
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def adaptive_row(run_dir, t_end_ns):
    """One repetition of adaptive_hang, from its run directory: latencies from
    the fault event, whether the report named rank 1, what the trigger said."""
    t0 = _fault_t(os.path.join(run_dir, "ranks", "1", "events.jsonl"))
    try:
        report = _load(os.path.join(run_dir, "report.json"))
        trigger = _load(os.path.join(run_dir, "supervisor.json")).get("trigger", {})
    except (OSError, ValueError) as e:
        return {"error": str(e)}
    rc = report.get("root_cause") or {}
    named = rc.get("kind") == "hung_collective" and rc.get("rank") == 1
    row = {"detected_ms": since(trigger.get("t_ns"), t0) if named else None,
           "report_ms": since(t_end_ns, t0) if named else None,
           "adaptive": trigger.get("detail", "").startswith("adaptive:"),
           "trigger": trigger.get("detail", ""), "root_cause": [rc.get("kind"), rc.get("rank")]}
    if t0 is None:
        row["error"] = "rank 1 never reached its fault"
    return row


def _newest_python(t):
    """The interpreter of the newest torch the bench found (a venv's 2.x), else Debian's."""
    pythons = [tr.python for tr in t.torchruns if getattr(tr, "python", None)]
    return pythons[0] if pythons else "/usr/bin/python3"


def _last_stamp_ms(run_dir, nproc, t0_ns):
    """Milliseconds from t0_ns (CLOCK_REALTIME) to the last of nproc ranks'
    stamp-R-exit files (fl_hostile stamp-exit: the rank is running); None when
    a rank left none."""
    stamps = []
    for r in range(nproc):
        try:
            with open(os.path.join(run_dir, f"stamp-{r}-exit")) as f:
                stamps.append(int(f.read().strip()))
        except (OSError, ValueError):
            return None
    return since(max(stamps), t0_ns)


def launch8(t, reps, nproc=8):
    """Launch overhead at nproc ranks, two ways. Started: from the launcher's
    process start to the last of nproc fl_hostile ranks running (each stamps
    CLOCK_REALTIME and exits); its floor is the same nproc ranks posix_spawn'd
    straight from this script. Whole: nproc ranks of /bin/true, process start
    to launcher exit (faultline: diagnosis and the five report files
    included); its floor is posix_spawn x nproc + waitpid."""
    keys = ["floor", "faultline", "faultline_cpu", "faultline_no_instrument", "started_floor", "started_faultline",
            "started_faultline_no_instrument"]
    keys += [k for tr in t.torchruns for k in (tr.name, "started_" + tr.name)]
    out = {k: [] for k in keys}
    out["nproc"] = nproc
    out["torchruns"] = _torchruns(t)
    stamp = [t.hostile, "*=stamp-exit:0"]
    for i in range(reps):
        t0 = time.monotonic_ns()
        pids = [os.posix_spawn("/bin/true", ["/bin/true"], os.environ) for _ in range(nproc)]
        for p in pids:
            os.waitpid(p, 0)
        out["floor"].append(since(time.monotonic_ns(), t0))
        d = t.work(f"floor-started-{i}")
        t0 = time.time_ns()
        pids = [os.posix_spawn(t.hostile, stamp, dict(os.environ, RANK=str(r), FAULTLINE_RUN_DIR=d))
                for r in range(nproc)]
        for p in pids:
            os.waitpid(p, 0)
        out["started_floor"].append(_last_stamp_ms(d, nproc, t0))
        d = t.work(f"fl-launch-{i}")
        w = Watched([t.faultline, "exec", "--nproc", str(nproc), "-o", d, "--", "/bin/true"], sample_every=None,
                    slow_every=None)
        w.wait(timeout=60)
        out["faultline"].append(w.wall_s * 1e3)
        out["faultline_cpu"].append(None if w.main_thread_cpu_ns is None else w.main_thread_cpu_ns / 1e6)
        # Without the black-box instruments (LD_PRELOAD interposer, Python shim) in every rank.
        w = Watched([t.faultline, "exec", "--no-instrument", "--nproc", str(nproc), "-o", d, "--", "/bin/true"],
                    sample_every=None, slow_every=None)
        w.wait(timeout=60)
        out["faultline_no_instrument"].append(w.wall_s * 1e3)
        for key, extra in (("started_faultline", []), ("started_faultline_no_instrument", ["--no-instrument"])):
            d = t.work(f"fl-started-{i}")
            w = Watched([t.faultline, "exec", *extra, "--nproc", str(nproc), "-o", d, "--", *stamp],
                        sample_every=None, slow_every=None)
            w.wait(timeout=60)
            out[key].append(_last_stamp_ms(d, nproc, w.t_start_ns))
        for tr in t.torchruns:
            d = t.work(f"tr-launch-{tr.tag}-{i}")
            w = Watched(tr.cmd(nproc, d, ["/bin/true"]), sample_every=None, slow_every=None)
            w.wait(timeout=120)
            out[tr.name].append(w.wall_s * 1e3)
            d = t.work(f"tr-started-{tr.tag}-{i}")
            w = Watched(tr.cmd(nproc, os.path.join(d, "logs"), stamp), env=dict(os.environ, FAULTLINE_RUN_DIR=d),
                        sample_every=None, slow_every=None)
            w.wait(timeout=120)
            out["started_" + tr.name].append(_last_stamp_ms(d, nproc, w.t_start_ns))
    return out


def idle_cpu(t, reps, nranks=64, settle_s=2.0, window_s=2.0, start_limit_s=120):
    """Launcher CPU (all its threads, nanoseconds from schedstat) while nranks
    ranks sleep, in `reps` consecutive windows once every rank has started and
    `settle_s` more have passed: % of one core per window."""
    out = {"nranks": nranks, "torchruns": _torchruns(t)}
    for name, tr in [("faultline", None)] + [(tr.name, tr) for tr in t.torchruns]:
        d = t.work(f"{name.replace('@', '-')}-idle")
        # The ranks sleep until the windows are over, however long start-up took.
        argv = [t.hostile, f"*=sleep:{start_limit_s + settle_s + reps * window_s}"]
        if tr is None:
            cmd = [t.faultline, "exec", "--nproc", str(nranks), "-o", d, "--"] + argv
        else:
            cmd = tr.cmd(nranks, os.path.join(d, "logs"), argv)
        w = Watched(cmd, env=dict(os.environ, FAULTLINE_RUN_DIR=d), sample_every=None, slow_every=None)
        deadline = time.monotonic() + start_limit_s
        while len([c for c in children(w.proc.pid) if _is_hostile(c)]) < nranks and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(settle_s)
        windows = []
        for _ in range(reps):
            c0, t0 = schedstat_ns(w.proc.pid), time.monotonic_ns()
            time.sleep(window_s)
            c1, t1 = schedstat_ns(w.proc.pid), time.monotonic_ns()
            if c0 is not None and c1 is not None:
                windows.append(100.0 * (c1 - c0) / (t1 - t0))
        # The windows are measured: end the sleeping ranks instead of waiting them out.
        w.proc.terminate()
        w.wait(timeout=120)
        out[name] = windows
    return out


def _is_hostile(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() == "fl_hostile"
    except OSError:
        return False
