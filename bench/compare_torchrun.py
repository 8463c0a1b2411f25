#!/usr/bin/env python3
"""Side-by-side timings of faultline's builtin launcher and /usr/bin/torchrun
on the same hostile fixture ranks, in one run on one machine.

Usage: bench/compare_torchrun.py BUILD_DIR [--reps N] [--json OUT.json]

Ranks stamp CLOCK_REALTIME into $FAULTLINE_RUN_DIR/stamp-R-{exit,term}
(tests/fixtures/hostile), so every figure is measured from the moment the
failing rank really exited, not from a launcher's own log line.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

def stamp(d, rank, what):
    try:
        with open(os.path.join(d, f"stamp-{rank}-{what}")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None

def ms(ns):
    return None if ns is None else ns / 1e6

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

def torchrun_cmd(nproc, logdir, argv):
    return ["/usr/bin/torchrun", "--no_python", f"--nproc_per_node={nproc}", "--redirects", "2", "--tee", "2",
            "--log_dir", logdir] + argv

def crash(fl, hostile, reps, work):
    """Rank 1 of 4 exits 1; the others end on SIGTERM (cooperative)."""
    argv = [hostile, "delay=0.5", "1=stamp-exit:1", "*=stamp-term:60"]
    out = {"faultline": [], "torchrun": []}
    for i in range(reps):
        d = os.path.join(work, f"fl-crash-{i}")
        subprocess.run([fl, "exec", "--nproc", "4", "--grace", "3", "-o", d, "--"] + argv,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t_done = time.time_ns()
        sup = json.load(open(os.path.join(d, "supervisor.json")))
        t0 = stamp(d, 1, "exit")
        r1 = [r for r in sup["ranks"] if r["rank"] == 1][0]
        terms = [stamp(d, r, "term") for r in (0, 2, 3)]
        exits = [r["exit_ns"] for r in sup["ranks"] if r["exit_ns"]]
        out["faultline"].append({
            "detect_ms": ms(r1["exit_ns"] - t0),
            "term_delivered_ms": ms(min(t for t in terms if t) - t0) if any(terms) else None,
            "all_reaped_ms": ms(max(exits) - t0),
            "launcher_returned_ms": ms(t_done - t0),
        })
        d = os.path.join(work, f"tr-crash-{i}")
        os.makedirs(d)
        env = dict(os.environ, FAULTLINE_RUN_DIR=d)
        subprocess.run(torchrun_cmd(4, os.path.join(d, "logs"), argv), env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t_done = time.time_ns()
        t0 = stamp(d, 1, "exit")
        terms = [stamp(d, r, "term") for r in (0, 2, 3)]
        out["torchrun"].append({
            "detect_ms": None,  # torchrun has no observable "noticed" moment before it signals
            "term_delivered_ms": ms(min(t for t in terms if t) - t0) if any(terms) else None,
            "all_reaped_ms": None,
            "launcher_returned_ms": ms(t_done - t0),
        })
    return out

def term_ignoring(fl, hostile, reps, work):
    """Rank 1 exits 1; rank 0 ignores SIGTERM: bounded by --grace 1."""
    argv = [hostile, "delay=0.3", "1=stamp-exit:1", "*=ignore-term:60"]
    res = []
    for i in range(reps):
        d = os.path.join(work, f"fl-term-{i}")
        subprocess.run([fl, "exec", "--nproc", "2", "--grace", "1", "-o", d, "--"] + argv,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sup = json.load(open(os.path.join(d, "supervisor.json")))
        t0 = stamp(d, 1, "exit")
        exits = [r["exit_ns"] for r in sup["ranks"] if r["exit_ns"]]
        res.append({"all_reaped_ms": ms(max(exits) - t0)})
    return res

def launch(fl, reps, work):
    """8 ranks of /bin/true, process start to launcher exit."""
    res = {"floor": [], "faultline": [], "torchrun": []}
    for i in range(reps):
        t = time.monotonic_ns()
        pids = [os.posix_spawn("/bin/true", ["/bin/true"], os.environ) for _ in range(8)]
        for p in pids:
            os.waitpid(p, 0)
        res["floor"].append(ms(time.monotonic_ns() - t))
        d = os.path.join(work, f"fl-launch-{i}")
        t = time.monotonic_ns()
        subprocess.run([fl, "exec", "--nproc", "8", "-o", d, "--", "/bin/true"], stdout=subprocess.DEVNULL)
        res["faultline"].append(ms(time.monotonic_ns() - t))
        d = os.path.join(work, f"tr-launch-{i}")
        t = time.monotonic_ns()
        subprocess.run(torchrun_cmd(8, d, ["/bin/true"]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        res["torchrun"].append(ms(time.monotonic_ns() - t))
    return res

def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def idle_cpu(fl, hostile, work, nranks=64, start_s=8.0, window_s=10.0):
    """Supervisor CPU while nranks ranks sleep: % of one core over the window."""
    res = {}
    for name in ("faultline", "torchrun"):
        d = os.path.join(work, f"{name}-idle")
        os.makedirs(d, exist_ok=True)
        argv = [hostile, f"*=sleep:{start_s + window_s + 2}"]
        if name == "faultline":
            cmd = [fl, "exec", "--nproc", str(nranks), "-o", d, "--"] + argv
        else:
            cmd = torchrun_cmd(nranks, os.path.join(d, "logs"), argv)
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=dict(os.environ, FAULTLINE_RUN_DIR=d))
        time.sleep(start_s)
        c0, t0 = cpu_seconds(p.pid), time.monotonic()
        time.sleep(window_s)
        c1, t1 = cpu_seconds(p.pid), time.monotonic()
        p.wait()
        res[name] = 100.0 * (c1 - c0) / (t1 - t0)
    return res

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    fl = os.path.join(a.build_dir, "harness/cli/faultline")
    hostile = os.path.join(a.build_dir, "tests/supervise/fl_hostile")
    work = tempfile.mkdtemp(prefix="fl-bench-")
    try:
        r = {"reps": a.reps, "nproc": os.cpu_count(), "load_before": os.getloadavg()[0]}
        r["crash"] = crash(fl, hostile, a.reps, work)
        r["term_ignoring"] = term_ignoring(fl, hostile, a.reps, work)
        r["launch8"] = launch(fl, a.reps, work)
        r["idle64_cpu_pct"] = idle_cpu(fl, hostile, work)
        r["load_after"] = os.getloadavg()[0]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c = r["crash"]
    def col(who, key):
        return med([x[key] for x in c[who]])
    rows = [
        ("crash detection (rank exit -> supervisor noticed), ms", col("faultline", "detect_ms"), None),
        ("first failure -> SIGTERM reaches peers, ms", col("faultline", "term_delivered_ms"), col("torchrun", "term_delivered_ms")),
        ("first failure -> all ranks reaped, cooperative, ms", col("faultline", "all_reaped_ms"), None),
        ("first failure -> launcher returned, ms", col("faultline", "launcher_returned_ms"), col("torchrun", "launcher_returned_ms")),
        ("first failure -> all reaped, SIGTERM-ignoring rank, grace 1 s, ms", med([x["all_reaped_ms"] for x in r["term_ignoring"]]), None),
        ("launch+reap 8 ranks of /bin/true, ms (floor: posix_spawn x8 = %.1f)" % med(r["launch8"]["floor"]),
         med(r["launch8"]["faultline"]), med(r["launch8"]["torchrun"])),
        ("supervisor CPU, 64 idle ranks, % of a core", r["idle64_cpu_pct"]["faultline"], r["idle64_cpu_pct"]["torchrun"]),
    ]
    print(f"medians over {a.reps} repetitions; load average {r['load_before']:.2f} -> {r['load_after']:.2f}")
    print("| measure | faultline | torchrun | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for name, f, t in rows:
        fs = "-" if f is None else f"{f:.2f}"
        ts = "-" if t is None else f"{t:.2f}"
        ratio = "-" if (f is None or t is None or f == 0) else f"{t / f:.1f}x"
        print(f"| {name} | {fs} | {ts} | {ratio} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=2)

if __name__ == "__main__":
    main()
