#!/usr/bin/python3
"""Overhead of libfaultline_preload.so, the LD_PRELOAD interposer.

    bench/preload_overhead.py BUILD_DIR [--reps 5] [--steps 300] [--json OUT.json]

Two measurements, each with the library off and on:

1. Step time of a small DDP trainer: 2 ranks, Gloo on CPU, one intra-op
   thread each, launched directly (no harness in between). Every step trains
   an MLP through DDP, all-reduces the loss, appends a line to a log file, and
   every 25th step saves a checkpoint with torch.save into a file opened for
   writing: the calls the interposer wraps (write, open) all run. A run's
   figures are rank 0's median step after a warm-up, in wall-clock time and
   in the process's CPU time (all threads: less disturbed by other load on
   the machine); the table gives the median over reps. Configurations:
     none      no LD_PRELOAD
     preload   LD_PRELOAD, recording file_open events (what the harness sets up)
     armed     as preload, plus FAULTLINE_INJECT rules for write, open and
               connect that never match: every write and open takes the slow
               path (rank, fstat, /proc/self/fd lookup, glob) and fails nothing
   Configurations are interleaved rep by rep, so machine load drifts into all
   of them alike.

2. Cost per call (BUILD_DIR/bench/preload_micro_bench, Google Benchmark):
   write(2) to /dev/null, pwrite(2) to a regular file, open(2)+close(2) for
   writing and for reading, under: plain, preload without a rank (a launcher
   agent), preload recording (a rank), armed. Rounds interleave the
   configurations; the figure is the least CPU time per call of all
   repetitions (the one least disturbed by other load).

The same file is the rank program (it runs as one when BENCH_RANK_MAIN is set).
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

PYTHON = "/usr/bin/python3"  # the interpreter with torch
WARMUP = 20
ARMED = "write:ENOSPC:path=/nonexistent/*;open:EACCES:path=/nonexistent/*;connect:ECONNREFUSED:addr=*:1"


def rank_main():
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    steps = int(os.environ["BENCH_STEPS"])
    work = os.environ["BENCH_WORK"]
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1)))
    g = torch.Generator().manual_seed(1)
    batch = 64
    x = torch.randn((steps + WARMUP) * batch * world, 64, generator=g)
    data = TensorDataset(x, x.sum(dim=1, keepdim=True))
    loader = DataLoader(data, batch_size=batch, sampler=DistributedSampler(data, num_replicas=world, rank=rank))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    log = open(os.path.join(work, "train-%d.log" % rank), "w", buffering=1)  # line-buffered: one write a step
    times, cpu = [], []
    t, c = time.perf_counter_ns(), time.process_time_ns()
    for step, (xb, yb) in enumerate(loader):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        loss = loss.detach()
        dist.all_reduce(loss)
        log.write("step %d loss %.6f\n" % (step, loss.item()))
        if step % 25 == 0:
            with open(os.path.join(work, "ckpt-%d.pt" % rank), "wb") as f:
                torch.save(model.module.state_dict(), f)
        now, now_cpu = time.perf_counter_ns(), time.process_time_ns()
        times.append(now - t)
        cpu.append(now_cpu - c)
        t, c = now, now_cpu
    log.close()
    dist.destroy_process_group()
    if rank == 0:
        with open(os.environ["BENCH_OUT"], "w") as f:
            json.dump({"median_us": statistics.median(times[WARMUP:]) / 1e3,
                       "cpu_us": statistics.median(cpu[WARMUP:]) / 1e3, "steps": len(times) - WARMUP}, f)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env():
    env = dict(os.environ)
    for k in list(env):
        if k in ("LD_PRELOAD", "PYTHONPATH", "RANK") or k.startswith("FAULTLINE_"):
            del env[k]
    return env


def instrument(env, config, preload, run_dir, rank):
    """What the harness gives a rank (CONTRACT.md section 2), so the library records for real."""
    if config == "none":
        return env
    env["LD_PRELOAD"] = preload
    if rank is not None:
        env["FAULTLINE_RUN_DIR"] = run_dir
        env["FAULTLINE_EVENTS"] = os.path.join(run_dir, "ranks", str(rank), "events.jsonl")
        os.makedirs(os.path.dirname(env["FAULTLINE_EVENTS"]), exist_ok=True)
    if config == "armed":
        env["FAULTLINE_INJECT"] = ARMED
    return env


def step_run(config, steps, preload, scratch):
    run_dir = tempfile.mkdtemp(dir=scratch)
    out = os.path.join(run_dir, "result.json")
    port = str(free_port())
    procs = []
    for rank in range(2):
        env = instrument(clean_env(), config, preload, run_dir, rank)
        env.update(RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                   OMP_NUM_THREADS="1", BENCH_RANK_MAIN="1", BENCH_STEPS=str(steps), BENCH_OUT=out,
                   BENCH_WORK=run_dir)
        procs.append(subprocess.Popen([PYTHON, os.path.abspath(__file__)], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE))
    errors = [p.communicate()[1] for p in procs]
    if any(p.returncode for p in procs):
        sys.exit(f"{config}: a rank failed:\n" + "\n".join(e.decode(errors="replace") for e in errors))
    with open(out) as f:
        result = json.load(f)
    events = 0
    for rank in range(2):
        path = os.path.join(run_dir, "ranks", str(rank), "events.jsonl")
        if os.path.exists(path):
            with open(path) as f:
                events += sum(1 for _ in f)
    result["events"] = events
    shutil.rmtree(run_dir, ignore_errors=True)
    return result


def micro_run(config, micro, preload, scratch):
    """One run of the micro benchmark: every repetition's CPU time per call (ns), by benchmark."""
    run_dir = tempfile.mkdtemp(dir=scratch)
    rank = None if config == "no rank" else 0
    env = instrument(clean_env(), "preload" if config == "no rank" else config, preload, run_dir, rank)
    if rank is not None and config != "none":
        env["RANK"] = "0"
    env["BENCH_DIR"] = run_dir
    res = subprocess.run([micro, "--benchmark_format=json", "--benchmark_repetitions=5", "--benchmark_min_time=0.1"],
                         env=env, capture_output=True, text=True, check=True)
    shutil.rmtree(run_dir, ignore_errors=True)
    out = {}
    for b in json.loads(res.stdout)["benchmarks"]:
        if b.get("run_type") == "iteration":
            out.setdefault(b["run_name"], []).append(b["cpu_time"])
    return out


def measure_steps(args, preload, scratch):
    configs = ["none", "preload", "armed"]
    runs = {c: [] for c in configs}
    for rep in range(args.reps):
        # The order rotates rep by rep, so no configuration always runs first.
        for config in configs[rep % 3:] + configs[:rep % 3]:
            r = step_run(config, args.steps, preload, scratch)
            runs[config].append(r)
            print(f"rep {rep + 1}/{args.reps} {config:8s} median step {r['median_us']:8.1f} us, "
                  f"cpu {r['cpu_us']:8.1f} us ({r['events']} event lines)", file=sys.stderr)
    base = statistics.median(r["median_us"] for r in runs["none"])
    base_cpu = statistics.median(r["cpu_us"] for r in runs["none"])
    print(f"\nStep time: 2 ranks (Gloo, CPU, 1 thread each), {args.steps} timed steps a run, "
          f"median over {args.reps} reps\n")
    print("| LD_PRELOAD | step, wall (us) | overhead | step, CPU (us) | overhead | wall per run (us) |")
    print("| --- | --- | --- | --- | --- | --- |")
    out = {}
    for config in configs:
        values = [r["median_us"] for r in runs[config]]
        m = statistics.median(values)
        m_cpu = statistics.median(r["cpu_us"] for r in runs[config])
        over = 100.0 * (m - base) / base
        over_cpu = 100.0 * (m_cpu - base_cpu) / base_cpu
        out[config] = {"median_us": m, "overhead_pct": over, "cpu_us": m_cpu, "cpu_overhead_pct": over_cpu,
                       "runs_us": values}
        dash = config == "none"
        print(f"| {config} | {m:.1f} | {'-' if dash else f'{over:+.2f}%'} | {m_cpu:.1f} | "
              f"{'-' if dash else f'{over_cpu:+.2f}%'} | {', '.join(f'{v:.0f}' for v in values)} |")
    # Same-rep ratios cancel slow drifts in machine load; their spread says
    # how much of a difference this machine can resolve at all.
    for config in configs[1:]:
        ratios = sorted(b["median_us"] / a["median_us"] for a, b in zip(runs["none"], runs[config]))
        out[config]["paired_ratios"] = ratios
        print(f"\n{config} / none, same rep: median {statistics.median(ratios):.3f}, "
              f"range {ratios[0]:.3f} .. {ratios[-1]:.3f}")
    return out


def measure_calls(args, micro, preload, scratch):
    configs = ["none", "no rank", "preload", "armed"]
    # Interleaved rounds; the least time of all repetitions is the cost with
    # the least interference from the rest of the machine.
    samples = {c: {} for c in configs}
    for rnd in range(args.reps):
        for config in configs[rnd % 4:] + configs[:rnd % 4]:
            for name, values in micro_run(config, micro, preload, scratch).items():
                samples[config].setdefault(name, []).extend(values)
    costs = {c: {n: min(v) for n, v in by_name.items()} for c, by_name in samples.items()}
    print(f"\nCost per call (ns of CPU time, least of {args.reps} x 5 repetitions)\n")
    print("| call | " + " | ".join(configs) + " |")
    print("| --- |" + " --- |" * len(configs))
    for n in costs["none"]:
        cells = [f"{costs[c][n]:.0f}" if c == "none" else f"{costs[c][n]:.0f} ({costs[c][n] - costs['none'][n]:+.0f})"
                 for c in configs]
        print(f"| {n.replace('BM_', '')} | " + " | ".join(cells) + " |")
    return costs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--only", choices=["steps", "calls"], help="run one of the two measurements")
    ap.add_argument("--json")
    args = ap.parse_args()
    preload = os.path.abspath(os.path.join(args.build_dir, "harness/probe/preload/libfaultline_preload.so"))
    micro = os.path.abspath(os.path.join(args.build_dir, "bench/preload_micro_bench"))
    if not os.path.exists(preload):
        sys.exit(f"no {preload}: build the fl_preload target first")
    scratch = tempfile.mkdtemp(prefix="fl-preload-bench-")
    summary = {"steps": args.steps, "reps": args.reps}
    try:
        if args.only != "calls":
            summary["step"] = measure_steps(args, preload, scratch)
        if args.only != "steps":
            if os.path.exists(micro):
                summary["call_ns"] = measure_calls(args, micro, preload, scratch)
            else:
                print(f"\n(no {micro}: build the preload_micro_bench target for the per-call figures)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    if os.environ.get("BENCH_RANK_MAIN"):
        rank_main()
    else:
        main()
