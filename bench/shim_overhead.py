#!/usr/bin/python3
"""Step-time overhead of faultline's black-box instruments on a small DDP
trainer: 2 ranks, Gloo on CPU, one intra-op thread each, launched directly
(no harness in between) with and without the Python shim, the LD_PRELOAD
interposer, and both, plus the cost of one recorded collective call; and
the cost of one metric handed to a sink ("metrics": loss.item() then
SummaryWriter.add_scalar, the shim's metric provenance and metric_log); and
the shim with scripted faults armed that never fire ("armed": a fault at a
step and one at the N-th call of an op, both past the run's end, so every
step and collective goes through the fault checks), against the shim alone.

    bench/shim_overhead.py BUILD_DIR [--reps 5] [--steps 300] [--configs none,shim,armed] [--json OUT.json]

Each rank trains an MLP through DDP with a DistributedSampler DataLoader and
an explicit loss all-reduce per step (so every instrumented path runs: two
collectives, step events, the sampler) and times every step after a warm-up
with time.perf_counter_ns() (wall) and time.process_time_ns() (the CPU
the rank's process used, all threads: what the instruments add, less
exposed to other load on the machine); a run's figure is rank 0's median
step. "call" is one process on a 1-rank Gloo group timing all_reduce of one
element: the instruments' cost per collective, with no peer to wait for.
Configurations are interleaved rep by rep, so machine load drifts into all
of them alike; the table shows the median over reps and the overhead
against the uninstrumented runs. Two model sizes: "tiny" (a ~1 ms step, the
worst case for a per-call cost) and "small" (a ~10 ms step).

The same file is the rank program (it runs as one when RANK is set).
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

PYTHON = os.environ.get("BENCH_PYTHON", "/usr/bin/python3")  # the interpreter with torch
# Armed, never fired: checked at every step and every all_reduce call.
ARMED_FAULTS = "sigkill:rank=0:step=999999999;exit:rank=0,1:op=allreduce:nth=999999999"

SIZES = {"tiny": (32, 64, 32), "small": (64, 256, 64)}  # (features, hidden, batch)
# One process, A/B per call: "call" (one all_reduce), "metrics" (one logged value).
IN_PROCESS = ("call", "metrics")


def rank_main():
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    features, hidden, batch = SIZES[os.environ["BENCH_SIZE"]]
    steps, warmup = int(os.environ["BENCH_STEPS"]), 20
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                              nn.Linear(hidden, 1)))
    g = torch.Generator().manual_seed(1)
    n = (steps + warmup) * batch * world
    x = torch.randn(n, features, generator=g)
    data = TensorDataset(x, x.sum(dim=1, keepdim=True))
    loader = DataLoader(data, batch_size=batch, sampler=DistributedSampler(data, num_replicas=world, rank=rank))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    wall, cpu = [], []
    t, c = time.perf_counter_ns(), time.process_time_ns()
    for xb, yb in loader:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        loss = loss.detach()
        dist.all_reduce(loss)
        now, cnow = time.perf_counter_ns(), time.process_time_ns()
        wall.append(now - t)
        cpu.append(cnow - c)
        t, c = now, cnow
    dist.destroy_process_group()
    if rank == 0:
        with open(os.environ["BENCH_OUT"], "w") as f:
            json.dump({"median_us": statistics.median(wall[warmup:]) / 1e3,
                       "cpu_us": statistics.median(cpu[warmup:]) / 1e3, "steps": len(wall) - warmup}, f)
    # Measured and written: leave without the interpreter's finalization,
    # where torch 2.x's Gloo worker threads now and then abort a rank
    # ("terminate called without an active exception", scenarios/python/
    # gloo_exit.py), with or without the shim: a failed run of the bench
    # that says nothing about what it measures.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def micro_main():
    """One process, world size 1: the cost of one all_reduce call (no peer to
    wait for). With the shim, blocks of calls through the wrapper alternate
    with blocks through the unwrapped function in the same process, so the
    difference (the shim's cost per recorded collective: the wrapper and two
    event lines) is not swamped by machine load that comes and goes."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    t = torch.zeros(1)
    wrapped = dist.all_reduce
    plain = getattr(wrapped, "__faultline_wrapped__", wrapped)
    n = max(200, int(os.environ["BENCH_STEPS"]) * 5)

    def block(fn):
        c = time.process_time_ns()
        for _ in range(n):
            fn(t)
        return (time.process_time_ns() - c) / n / 1e3

    for _ in range(200):
        wrapped(t)
    pairs = [(block(wrapped), block(plain)) for _ in range(21)]
    dist.destroy_process_group()
    with open(os.environ["BENCH_OUT"], "w") as f:
        json.dump({"median_us": statistics.median(w for w, _ in pairs), "cpu_us": statistics.median(w for w, _ in pairs),
                   "added_us": statistics.median(w - p for w, p in pairs), "steps": n * 21}, f)


def metrics_main():
    """One process, world size 1: the cost of handing one metric to a sink,
    the way a training loop logs its loss every step: v = loss.item(), then
    SummaryWriter.add_scalar(name, v, step). With the shim, blocks through
    the wrappers (.item()'s provenance, add_scalar's metric_log event)
    alternate with blocks through the unwrapped functions, as in "call"."""
    import torch
    from torch.utils.tensorboard import SummaryWriter

    torch.set_num_threads(1)
    logs = tempfile.mkdtemp(prefix="fl-bench-tb-")
    writer = SummaryWriter(log_dir=logs, max_queue=1 << 20, flush_secs=3600)
    t = torch.tensor(0.5)
    item_w, add_w = torch.Tensor.item, SummaryWriter.add_scalar
    item_p = getattr(item_w, "__faultline_wrapped__", item_w)
    add_p = getattr(add_w, "__faultline_wrapped__", add_w)
    n = max(200, int(os.environ["BENCH_STEPS"]) * 5)

    def block(item, add):
        c = time.process_time_ns()
        for i in range(n):
            add(writer, "train/loss", item(t), i)
        return (time.process_time_ns() - c) / n / 1e3

    for _ in range(2):
        block(item_w, add_w)
    pairs = [(block(item_w, add_w), block(item_p, add_p)) for _ in range(21)]
    writer.close()
    shutil.rmtree(logs, ignore_errors=True)
    with open(os.environ["BENCH_OUT"], "w") as f:
        json.dump({"median_us": statistics.median(w for w, _ in pairs), "cpu_us": statistics.median(w for w, _ in pairs),
                   "added_us": statistics.median(w - p for w, p in pairs), "steps": n * 21}, f)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_once(config, size, steps, shim_dir, preload, work):
    events = tempfile.mkdtemp(dir=work)
    out = os.path.join(events, "result.json")
    port = str(free_port())
    procs = []
    world = 1 if size in IN_PROCESS else 2
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port, BENCH_SIZE=size, BENCH_STEPS=str(steps), BENCH_OUT=out, OMP_NUM_THREADS="1")
        for k in ("PYTHONPATH", "LD_PRELOAD", "FAULTLINE_EVENTS", "FAULTLINE_EVENTS_DIR", "FAULTLINE_RUN_DIR",
                  "FAULTLINE_FAULT"):
            env.pop(k, None)
        if config == "armed":
            env["FAULTLINE_FAULT"] = ARMED_FAULTS
        if config in ("shim", "both", "preload", "armed"):
            # What the harness gives a rank (CONTRACT.md section 2), so the instruments record for real.
            env["FAULTLINE_RUN_DIR"] = events
            env["FAULTLINE_EVENTS"] = os.path.join(events, "ranks", str(rank), "events.jsonl")
            os.makedirs(os.path.dirname(env["FAULTLINE_EVENTS"]), exist_ok=True)
        if config in ("shim", "both", "armed"):
            env["PYTHONPATH"] = shim_dir
        if config in ("preload", "both"):
            env["LD_PRELOAD"] = preload
        procs.append(subprocess.Popen([PYTHON, os.path.abspath(__file__)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    errors = [p.communicate()[1] for p in procs]
    if any(p.returncode for p in procs):
        sys.exit(f"{config}/{size}: a rank failed:\n" + "\n".join(e.decode(errors="replace") for e in errors))
    with open(out) as f:
        result = json.load(f)
    lines = 0
    for rank in range(world):
        path = os.path.join(events, "ranks", str(rank), "events.jsonl")
        if os.path.exists(path):
            with open(path) as f:
                lines += sum(1 for _ in f)
    result["event_lines"] = lines
    shutil.rmtree(events, ignore_errors=True)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--sizes", default="call,tiny,small")
    ap.add_argument("--configs", help="comma-separated, of none, shim, preload, both, armed (default: all but armed)")
    ap.add_argument("--json")
    args = ap.parse_args()
    shim_dir = os.path.join(args.build_dir, "harness/probe/python")
    preload = os.path.join(args.build_dir, "harness/probe/preload/libfaultline_preload.so")
    if not os.path.exists(os.path.join(shim_dir, "sitecustomize.py")):
        sys.exit(f"no shim in {shim_dir}: build the faultline target first")
    configs = ["none", "shim"] + (["preload", "both"] if os.path.exists(preload) else [])
    if len(configs) == 2:
        print(f"note: {preload} is not built; measuring the shim only", file=sys.stderr)
    if args.configs:
        configs = args.configs.split(",")
        if "none" not in configs:
            sys.exit("--configs: 'none' is the baseline, include it")
    results = {size: {c: [] for c in configs} for size in args.sizes.split(",")}
    work = tempfile.mkdtemp(prefix="fl-shim-bench-")
    try:
        for rep in range(args.reps):
            for size in results:
                for config in configs:
                    r = run_once(config, size, args.steps, shim_dir, preload, work)
                    results[size][config].append(r)
                    print(f"rep {rep + 1}/{args.reps} {size:5s} {config:7s} median wall {r['median_us']:9.1f} us "
                          f"cpu {r['cpu_us']:9.1f} us ({r['event_lines']} event lines)", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{args.steps} timed steps per run, 2 ranks (Gloo, CPU), median over {args.reps} reps;"
          f" 'call': one all_reduce on a 1-rank group, per call\n")
    print("| model | instruments | wall per step (us) | overhead | CPU per step (us) | overhead | events per step |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    summary = {}
    for size, by_config in results.items():
        base = {k: statistics.median(r[k] for r in by_config["none"]) for k in ("median_us", "cpu_us")}
        for config, runs in by_config.items():
            row = {k: statistics.median(r[k] for r in runs) for k in ("median_us", "cpu_us")}
            over = {k: 100.0 * (row[k] - base[k]) / base[k] for k in row}
            steps = runs[0]["steps"] + (0 if size in IN_PROCESS else 20)
            per_step = statistics.median(r["event_lines"] for r in runs) / (1 if size in IN_PROCESS else 2) / max(1, steps)
            summary.setdefault(size, {})[config] = {"wall_us": row["median_us"], "cpu_us": row["cpu_us"],
                                                    "wall_overhead_pct": over["median_us"],
                                                    "cpu_overhead_pct": over["cpu_us"],
                                                    "runs_wall_us": [r["median_us"] for r in runs],
                                                    "runs_cpu_us": [r["cpu_us"] for r in runs]}
            if size in IN_PROCESS and "added_us" in runs[0]:
                added = statistics.median(r["added_us"] for r in runs)
                summary[size][config]["added_us_per_call"] = added
                print(f"| {size} | {config} | {row['median_us']:.1f} | - | {row['cpu_us']:.1f} | "
                      f"{added:+.2f} us per call (A/B in-process) | {per_step:.1f} |")
                continue
            wall_over = "-" if config == "none" else "%+.1f%%" % over["median_us"]
            cpu_over = "-" if config == "none" else "%+.1f%%" % over["cpu_us"]
            print(f"| {size} | {config} | {row['median_us']:.1f} | {wall_over} | {row['cpu_us']:.1f} | {cpu_over} "
                  f"| {per_step:.1f} |")
    for size, by_config in summary.items():
        if "armed" in by_config and "shim" in by_config:
            shim, armed = by_config["shim"], by_config["armed"]
            armed["vs_shim_wall_pct"] = 100.0 * (armed["wall_us"] - shim["wall_us"]) / shim["wall_us"]
            armed["vs_shim_cpu_pct"] = 100.0 * (armed["cpu_us"] - shim["cpu_us"]) / shim["cpu_us"]
            print(f"armed faults against the shim alone, {size}: wall {armed['vs_shim_wall_pct']:+.1f}%, "
                  f"CPU {armed['vs_shim_cpu_pct']:+.1f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"steps": args.steps, "reps": args.reps, "results": summary}, f, indent=1)


if __name__ == "__main__":
    if os.environ.get("BENCH_SIZE") == "call":
        micro_main()
    elif os.environ.get("BENCH_SIZE") == "metrics":
        metrics_main()
    elif os.environ.get("RANK") is not None and os.environ.get("BENCH_SIZE"):
        rank_main()
    else:
        main()
