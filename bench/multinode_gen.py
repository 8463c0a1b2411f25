#!/usr/bin/python3
"""Writes a synthetic multi-node run directory for the `multinode-scale`
section of bench/run (docs/PERFORMANCE.md): NODES nodes x RANKS ranks, laid
out as docs/MULTINODE.md and CONTRACT.md section 6 say, one node lost.

    bench/multinode_gen.py OUT [--nodes 512] [--ranks-per-node 8] [--steps 20] [--lost 137]

Per rank: ranks/R/events.jsonl (start, pg_init, STEPS steps each with an
all-reduce), ranks/R/stderr (every rank of the other nodes ends with Gloo's
real "Connection closed by peer" traceback, as torch 2.13 prints it).
supervisor.json: every rank's pid, start and exit (the lost node's ranks
SIGKILLed within 50 ms, the others exiting 1 after it). Per node:
nodes/NAME/agent-PID.jsonl (agent_start, rank_start per rank, rank_exit,
child_exit, survivors, agent_exit); the lost node's agent stops after its
rank_start lines and its nodes/NAME/supervisor.jsonl holds the node_loss
fault. Also a minimal report.json, so that `faultline explain` reads it.
"""
import argparse
import json
import os

T0 = 1_800_000_000_000_000_000
MS = 1_000_000

TRACEBACK = """[rank{r}]: Traceback (most recent call last):
[rank{r}]:   File "/work/train.py", line 39, in <module>
[rank{r}]:     main()
[rank{r}]:   File "/work/train.py", line 31, in main
[rank{r}]:     loss.backward()
[rank{r}]:   File "/opt/faultline/torch-2.13/lib/python3.11/site-packages/torch/_tensor.py", line 647, in backward
[rank{r}]:     torch.autograd.backward(
[rank{r}]:   File "/opt/faultline/torch-2.13/lib/python3.11/site-packages/torch/autograd/graph.py", line 979, in _engine_run_backward
[rank{r}]:     return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass
[rank{r}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [10.1.{a}.{b}]:22421. This is typically caused by a remote worker crashing. Check the logs of the remote worker before reporting an error. GLHF!
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--nodes", type=int, default=512)
    ap.add_argument("--ranks-per-node", type=int, default=8)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--lost", type=int, default=137, help="index of the node that is lost (n<index+1>)")
    a = ap.parse_args()
    world = a.nodes * a.ranks_per_node
    lost_name = "n%d" % (a.lost + 1)
    fault_ns = T0 + (a.steps // 2) * 100 * MS + 5 * MS
    ranks = []
    for n in range(a.nodes):
        name = "n%d" % (n + 1)
        lost = n == a.lost
        agent_pid = 100000 + n
        node_dir = os.path.join(a.out, "nodes", name)
        os.makedirs(node_dir, exist_ok=True)
        host = "host-%s" % name
        lines = []

        def ev(t, event, **f):
            d = {"t_ns": t, "node": name, "host": host, "agent_pid": agent_pid, "event": event}
            d.update(f)
            lines.append(json.dumps(d, separators=(",", ":")))

        ev(T0, "agent_start", command=["torchrun", "--nnodes=%d" % a.nodes, "train.py"], link="eth0")
        for lr in range(a.ranks_per_node):
            r = n * a.ranks_per_node + lr
            pid = 200000 + r
            start = T0 + 10 * MS + r * 1000
            if lost:
                end, sig, code = fault_ns + lr * 5 * MS, "SIGKILL", None
            else:
                end, sig, code = fault_ns + 300 * MS + (r % 97) * MS, None, 1
            ranks.append({"rank": r, "pid": pid, "start_ns": start, "exit_ns": end, "signal": sig, "exit_code": code,
                          "killed_by_teardown": False})
            ev(start, "rank_start", rank=r, local_rank=lr, pid=pid)
            rd = os.path.join(a.out, "ranks", str(r))
            os.makedirs(rd, exist_ok=True)
            last = a.steps if not lost else a.steps // 2
            with open(os.path.join(rd, "events.jsonl"), "w") as f:
                t = start + 1000
                f.write('{"t":%d,"rank":%d,"pid":%d,"ev":"start","world_size":%d}\n' % (t, r, pid, world))
                f.write('{"t":%d,"rank":%d,"pid":%d,"ev":"pg_init","backend":"gloo","world_size":%d}\n' % (t + 10, r, pid, world))
                for s in range(1, last + 1):
                    b = T0 + s * 100 * MS
                    f.write('{"t":%d,"rank":%d,"pid":%d,"ev":"step_begin","step":%d}\n' % (b, r, pid, s))
                    f.write('{"t":%d,"rank":%d,"pid":%d,"ev":"collective_begin","op":"allreduce","seq":%d,"numel":4096,"dtype":"float32"}\n'
                            % (b + 10 * MS, r, pid, s))
                    if s < last or lost:
                        f.write('{"t":%d,"rank":%d,"pid":%d,"ev":"collective_end","op":"allreduce","seq":%d}\n'
                                % (b + 20 * MS, r, pid, s))
                        f.write('{"t":%d,"rank":%d,"pid":%d,"ev":"step_end","step":%d}\n' % (b + 30 * MS, r, pid, s))
            with open(os.path.join(rd, "stderr"), "w") as f:
                if not lost:
                    f.write(TRACEBACK.format(r=r, a=(a.lost + 1) // 256, b=(a.lost + 1) % 256))
        if not lost:
            for lr in range(a.ranks_per_node):
                k = ranks[n * a.ranks_per_node + lr]
                ev(k["exit_ns"], "rank_exit", rank=k["rank"], pid=k["pid"], gone=True)
            end = max(k["exit_ns"] for k in ranks[n * a.ranks_per_node:])
            ev(end + MS, "child_exit", pid=agent_pid + 1, exit_code=1)
            ev(end + 2 * MS, "survivors", processes=[])
            ev(end + 3 * MS, "agent_exit", exit_code=1)
        with open(os.path.join(node_dir, "agent-%d.jsonl" % agent_pid), "w") as f:
            f.write("\n".join(lines) + "\n")
        if lost:
            pids = [200000 + n * a.ranks_per_node + lr for lr in range(a.ranks_per_node)] + [agent_pid]
            with open(os.path.join(node_dir, "supervisor.jsonl"), "w") as f:
                f.write(json.dumps({"t_ns": fault_ns, "node": name, "event": "fault", "kind": "node_loss",
                                    "point": "step=%d" % (a.steps // 2), "rule": "node_loss:node=%s" % name,
                                    "source": "supervisor", "processes": pids}, separators=(",", ":")) + "\n")
    first = min(ranks, key=lambda k: k["exit_ns"])
    sup = {"schema": "faultline.supervisor/1", "command": ["torchrun", "train.py"], "launcher": "external",
           "world_size": world, "start_ns": T0, "end_ns": fault_ns + 2000 * MS, "interrupted": False,
           "ranks": ranks, "process_exits": [], "timeline": [], "notes": [],
           "trigger": {"kind": "rank_failure", "rank": first["rank"], "detail": "rank %d killed by SIGKILL" % first["rank"]},
           "teardown": {"clean": True, "duration_ms": 0, "escalation": "none", "survivors": [], "leaks": [],
                        "started_ns": 0, "signals": []}}
    with open(os.path.join(a.out, "supervisor.json"), "w") as f:
        json.dump(sup, f)
    report = {"schema": "faultline.report/1", "scenario": None,
              "stack": {"launcher": "torchrun-multinode", "command": ["torchrun", "train.py"], "world_size": world,
                        "torch": None},
              "ranks": [], "verdict": "diagnosed", "harness": {"version": "bench", "wall_ms": 0}}
    with open(os.path.join(a.out, "report.json"), "w") as f:
        json.dump(report, f)
    print(json.dumps({"out": a.out, "nodes": a.nodes, "ranks": world, "lost": lost_name}))


if __name__ == "__main__":
    main()
