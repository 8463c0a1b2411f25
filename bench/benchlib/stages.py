"""Measures of single stages and of the whole catalog: diagnosis of a large
run (bench/diagnose_bench), the Google Benchmark micro-benchmarks, and the full
CPU conformance suite on the builtin stack and on the torchrun stack with each
installed torchrun."""
import json
import os
import re
import statistics
import subprocess
import time


def google_benchmark(binary, reps, bench_filter=None, env=None):
    """Runs a Google Benchmark binary with `reps` repetitions; returns
    {name: {"median": real time, "unit": ..., "items_per_second": ..., ...}}."""
    cmd = [binary, f"--benchmark_repetitions={reps}", "--benchmark_format=json",
           "--benchmark_report_aggregates_only=false"]
    if bench_filter:
        cmd.append(f"--benchmark_filter={bench_filter}")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{binary} exited {p.returncode}: {p.stderr[-2000:]}")
    data = json.loads(p.stdout)
    runs = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            if b.get("error_occurred"):
                raise RuntimeError(f"{b['name']}: {b.get('error_message')}")
            continue
        name = b.get("run_name", b["name"])
        runs.setdefault(name, []).append(b)
    out = {}
    for name, bs in runs.items():
        out[name] = {
            "median": statistics.median(b["real_time"] for b in bs),
            # CPU time of the benchmark process: the robust figure on a loaded machine.
            "cpu_median": statistics.median(b["cpu_time"] for b in bs),
            "unit": bs[0]["time_unit"],
            "reps": len(bs),
        }
        for counter in ("items_per_second", "bytes_per_second"):
            if counter in bs[0]:
                out[name][counter] = statistics.median(b[counter] for b in bs)
        if bs[0].get("label"):
            out[name]["label"] = bs[0]["label"]
    return out


def explain_time(faultline, run_dir, reps):
    """`faultline explain RUN_DIR --json` (diagnosis again from the files), wall ms per rep."""
    times = []
    for _ in range(reps):
        t0 = time.monotonic()
        p = subprocess.run([faultline, "explain", run_dir, "--json"], capture_output=True)
        times.append((time.monotonic() - t0) * 1e3)
        if p.returncode not in (0, 1):
            raise RuntimeError(f"faultline explain {run_dir} exited {p.returncode}: {p.stderr[-2000:]!r}")
    return times


def suite(t, stack, jobs=2, tr=None):
    """`faultline suite scenarios --stack STACK -j JOBS`: wall s and verdict
    counts. With `tr` (a benchlib.torchruns.Torchrun), the torchrun stack runs
    that torchrun, its interpreter and its trainer build (FAULTLINE_TORCHRUN,
    FAULTLINE_PYTHON, FAULTLINE_TRAINER)."""
    env = dict(os.environ)
    if tr is not None:
        env.update(FAULTLINE_TORCHRUN=tr.program[0], FAULTLINE_PYTHON=tr.python, FAULTLINE_TRAINER=tr.trainer(t.build))
    out_dir = t.work(f"suite-{stack}" + (f"-{tr.tag}" if tr else ""))
    t0 = time.monotonic()
    p = subprocess.run([t.faultline, "suite", os.path.join(t.source, "scenarios"), "--stack", stack,
                        "-j", str(jobs), "-o", out_dir], capture_output=True, text=True, cwd=t.source, env=env)
    wall = time.monotonic() - t0
    counts = {}
    for line in p.stdout.splitlines():
        if " wall " in line or line.startswith("pass:") or re.match(r"^\w+: \d+", line):
            for verdict, n in re.findall(r"(\w+): (\d+)", line):
                counts[verdict] = int(n)
    return {"wall_s": wall, "exit_code": p.returncode, "counts": counts}
