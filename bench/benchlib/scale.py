"""The reference trainer at growing world sizes: what the harness costs (its
own CPU time and peak RSS, not the ranks'), how long start-up and the whole run
take, what the ranks take from the machine's memory, and whether a fault in
one rank of 64 is still diagnosed right (root cause on that rank, every other
rank collateral or ended by the teardown, teardown clean)."""
import json
import os

from benchlib.procs import Watched
from benchlib.side_by_side import rank_error
from benchlib.stages import explain_time

# A tiny model and a few steps: start-up and rendezvous dominate, as they do
# for the harness's per-rank work.
# Ten steps, so that the straggler check (slow in 3 steps of 4) has enough of
# them on an oversubscribed machine.
TRAINER_ARGS = ["--steps", "10", "--hidden", "16", "--batch-size", "8", "--fingerprint-every", "0"]
# 64 LibTorch processes on 2 cores need more than the default 3 s to exit
# after SIGTERM (each unmaps ~150 MB while the others still run).
GRACE_S = 10


def _pg_init_times(ranks_dir, world, t0_ns):
    """Seconds from the launcher's start to the first and the last rank's pg_init."""
    ts = []
    for r in range(world):
        try:
            with open(os.path.join(ranks_dir, str(r), "events.jsonl")) as f:
                for line in f:
                    if '"pg_init"' in line:
                        ts.append(json.loads(line)["t"])
                        break
        except (OSError, ValueError):
            pass
    if not ts:
        return None, None, 0
    return (min(ts) - t0_ns) / 1e9, (max(ts) - t0_ns) / 1e9, len(ts)


def _usage(w):
    return {
        "wall_s": w.wall_s,
        "harness_cpu_s": w.cpu_s,
        "harness_cpu_pct": None if w.cpu_s is None else 100.0 * w.cpu_s / w.wall_s,
        "harness_peak_rss_mib": w.peak_rss_kib / 1024,
        "ranks_peak_rss_sum_mib": w.peak_children_rss_kib / 1024,
        "ranks_peak_pss_sum_mib": w.peak_children_pss_kib / 1024,
        "machine_mem_used_peak_mib": (w.mem_available_before_kib - w.min_mem_available_kib) / 1024,
        "exit_code": w.returncode,
        "timed_out": w.timed_out,
    }


def faultline_run(t, world, name, fault=(), deadline_s=600, explain_reps=3):
    d = t.work(name)
    w = Watched([t.faultline, "exec", "--nproc", str(world), "--deadline", str(deadline_s), "--grace", str(GRACE_S),
                 "-o", d, "--", t.trainer, *TRAINER_ARGS, *fault], pss_every=2.0)
    w.wait(timeout=deadline_s + 120)
    out = _usage(w)
    first, last, n = _pg_init_times(os.path.join(d, "ranks"), world, w.t_start_ns)
    out.update({"first_pg_init_s": first, "all_pg_init_s": last, "ranks_with_pg_init": n, "run_dir": d})
    try:
        with open(os.path.join(d, "report.json")) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        out["error"] = f"no report.json: {e}"
        return out
    rc = report.get("root_cause") or {}
    roles = {}
    for r in report.get("ranks", []):
        roles[r["role"]] = roles.get(r["role"], 0) + 1
    out.update({
        "verdict": report.get("verdict"),
        "teardown_clean": report.get("teardown", {}).get("clean"),
        "teardown_ms": report.get("teardown", {}).get("duration_ms"),
        "root_cause": {"kind": rc.get("kind"), "rank": rc.get("rank"), "summary": rc.get("summary")} if rc else None,
        "roles": roles,
        "ranks_in_report": len(report.get("ranks", [])),
        "explain_ms": explain_time(t.faultline, d, explain_reps),
    })
    return out


def torchrun_run(t, tr, world, name, timeout_s=900):
    """One torchrun, its own trainer build where there is one (recorded)."""
    d = t.work(name)
    env = dict(os.environ, FAULTLINE_RUN_DIR=d, FAULTLINE_EVENTS_DIR=os.path.join(d, "ranks"))
    trainer = tr.trainer(t.build)
    w = Watched(tr.cmd(world, os.path.join(d, "logs"), [trainer, *TRAINER_ARGS]), env=env, pss_every=2.0)
    w.wait(timeout=timeout_s)
    out = _usage(w)
    out["trainer"] = trainer
    first, last, n = _pg_init_times(os.path.join(d, "ranks"), world, w.t_start_ns)
    out.update({"first_pg_init_s": first, "all_pg_init_s": last, "ranks_with_pg_init": n})
    if w.returncode != 0:
        out["error"] = rank_error(d)
    return out


def fault_ok(run, world, rank):
    """The diagnosis a fault in `rank` must get: it is the root cause, no other
    rank is, every rank is in the report, and the teardown was clean."""
    rc = run.get("root_cause") or {}
    roles = run.get("roles", {})
    return (rc.get("rank") == rank and roles.get("root_cause", 0) == 1 and run.get("ranks_in_report") == world
            and roles.get("root_cause", 0) + roles.get("collateral", 0) + roles.get("killed_by_teardown", 0) == world
            and run.get("teardown_clean") is True)


def scale(t, sizes, torchrun_sizes, fault_world=64, fault_rank=37):
    """faultline at every size in `sizes`, each torchrun at `torchrun_sizes`
    ("faultline": {n: run}, "torchrun@2.13": {n: run}, ...)."""
    out = {"sizes": sizes, "trainer_args": TRAINER_ARGS, "faultline": {}, "faultline_trainer": t.trainer,
           **{tr.name: {} for tr in t.torchruns},
           "torchruns": {tr.name: tr.as_dict(t.build) for tr in t.torchruns}}
    for n in sizes:
        out["faultline"][n] = faultline_run(t, n, f"scale-fl-{n}")
        for tr in t.torchruns:
            if n in torchrun_sizes:
                out[tr.name][n] = torchrun_run(t, tr, n, f"scale-tr-{tr.tag}-{n}")
    if not fault_world:
        return out
    fault = ["--fault", "cpp_exception", "--fault-rank", str(fault_rank), "--fault-step", "2"]
    run = faultline_run(t, fault_world, f"scale-fault-{fault_world}", fault)
    run["fault"] = fault
    run["world"] = fault_world
    run["diagnosed_right"] = fault_ok(run, fault_world, fault_rank)
    out["fault"] = run
    return out
