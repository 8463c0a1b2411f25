"""spawn_runner.py across nodes: two runners, one per "node" (both on this
host's loopback), each spawning two processes, make one job of four ranks,
process i of node K rank 2*K+i, every one meeting at node 0's address; and
the shim's rank for a spawned child is that rank from its first event.

    spawn_runner_test.py TORCH_PYTHON

TORCH_PYTHON is an interpreter with torch; the test is skipped (exit 77)
where it is missing. Bad node flags are a usage error (exit 2) naming them.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "..", "..", "harness", "launch", "python", "spawn_runner.py")
SHIM = os.path.join(HERE, "..", "..", "harness", "probe", "python")
TORCH_PYTHON = sys.argv[1] if len(sys.argv) > 1 else ""

TRAINER = """
import json, os, sys
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank())])
dist.all_reduce(t)
env = {k: os.environ[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK")}
env["sum"] = t.item()
env["pg_rank"] = dist.get_rank()
with open(os.path.join(sys.argv[1], "rank%s.json" % os.environ["RANK"]), "w") as f:
    json.dump(env, f)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SpawnRunnerAcrossNodes(unittest.TestCase):
    def test_two_runners_make_one_job_with_each_nodes_ranks(self):
        with tempfile.TemporaryDirectory() as out:
            script = os.path.join(out, "train.py")
            with open(script, "w") as f:
                f.write(TRAINER)
            port = str(free_port())
            env = dict(os.environ, GLOO_SOCKET_IFNAME="lo")
            nodes = [subprocess.Popen([TORCH_PYTHON, RUNNER, "--nprocs", "2", "--port", port, "--node_rank=%d" % k,
                                       "--master_addr=127.0.0.1", "--nnodes=2", script, out], env=env)
                     for k in range(2)]
            for p in nodes:
                self.assertEqual(p.wait(timeout=240), 0)
            for rank in range(4):
                with open(os.path.join(out, "rank%d.json" % rank)) as f:
                    got = json.load(f)
                self.assertEqual(got["pg_rank"], rank)
                self.assertEqual(got["LOCAL_RANK"], str(rank % 2))
                self.assertEqual(got["GROUP_RANK"], str(rank // 2))
                self.assertEqual((got["WORLD_SIZE"], got["LOCAL_WORLD_SIZE"]), ("4", "2"))
                self.assertEqual(got["sum"], 6.0)

    def test_a_node_rank_outside_the_nodes_is_a_usage_error(self):
        r = subprocess.run([TORCH_PYTHON, RUNNER, "--nprocs", "2", "--node_rank=2", "--nnodes=2", "t.py"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--node_rank 2 of --nnodes 2: expected 0 <= K < M", r.stderr)
        r = subprocess.run([TORCH_PYTHON, RUNNER, "--nprocs", "2", "--nodes=2", "t.py"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown option or missing value: --nodes=2", r.stderr)


class ShimSpawnRank(unittest.TestCase):
    def test_a_spawned_childs_rank_is_its_nodes_first_rank_plus_its_index(self):
        sys.path.insert(0, SHIM)
        from faultline_shim import _spawn
        old = {k: os.environ.pop(k, None) for k in ("GROUP_RANK", "LOCAL_WORLD_SIZE")}
        try:
            self.assertEqual(_spawn._rank_of(1), 1, "one node: the index")
            os.environ.update(GROUP_RANK="1", LOCAL_WORLD_SIZE="2")
            self.assertEqual([_spawn._rank_of(i) for i in range(2)], [2, 3])
            self.assertEqual(_spawn._rank_of(2), 2, "an index past the node's processes: the index, not a guess")
            os.environ["GROUP_RANK"] = "x"
            self.assertEqual(_spawn._rank_of(1), 1)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


if __name__ == "__main__":
    if not TORCH_PYTHON or not os.access(TORCH_PYTHON, os.X_OK):
        print("skipped: no torch interpreter at %r" % TORCH_PYTHON)
        sys.exit(77)
    unittest.main(argv=sys.argv[:1])
