"""The Python fixtures' init_process_group (scenarios/python/ddp_common.py,
setup): the ranks may meet up to RENDEZVOUS_TIMEOUT_S apart whatever the
collectives' timeout, and a collective a peer never enters still times out
after `timeout_s`. Lightning's script starts ranks 1..N-1 only after it has
imported everything, and they join seconds after rank 0 (python-hang on
lightning@2.6 failed its rendezvous under CI's load with a 5-s timeout).

Run: /opt/faultline/torch-2.13/bin/python3 tests/scenario/ddp_setup_test.py
(ctest: ddp_setup/VERSION; skips at torch 1.13, which cannot set a group's
timeout after making it, saying so)."""
import os
import socket
import subprocess
import sys
import time
import unittest

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scenarios", "python")
sys.path.insert(0, FIXTURES)

import torch.distributed as dist  # noqa: E402

import ddp_common  # noqa: E402

RANK = """
import sys, time
sys.path.insert(0, sys.argv[1])
import torch, torch.distributed as dist
import ddp_common as ddp
rank, world = ddp.setup(timeout_s=2)
print("joined", flush=True)
t0 = time.monotonic()
if rank == 0:
    try:
        dist.all_reduce(torch.ones(1))
        print("all_reduce returned", flush=True)
    except Exception as e:
        print("timed out after %.1f s" % (time.monotonic() - t0), flush=True)
else:
    time.sleep(4)  # never enters rank 0's all-reduce
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipUnless(hasattr(dist.distributed_c10d, "_set_pg_timeout"),
                     "this torch cannot set a process group's timeout after making it (1.x): setup uses one timeout")
class SetupMeetsLateRanksAndStillTimesOutCollectives(unittest.TestCase):
    def test_a_rank_later_than_the_timeout_joins_and_a_skipped_collective_times_out(self):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE="2",
                   GLOO_SOCKET_IFNAME="lo")
        cmd = [sys.executable, "-c", RANK, FIXTURES]
        first = subprocess.Popen(cmd, env=dict(env, RANK="0"), stdout=subprocess.PIPE, text=True)
        time.sleep(3)  # rank 1 starts later than the collectives' timeout, as Lightning's children do
        second = subprocess.Popen(cmd, env=dict(env, RANK="1"), stdout=subprocess.PIPE, text=True)
        out0, _ = first.communicate(timeout=120)
        out1, _ = second.communicate(timeout=120)
        self.assertIn("joined", out1)
        lines = out0.split("\n")
        self.assertEqual(lines[0], "joined", out0)
        self.assertTrue(lines[1].startswith("timed out after "), out0)
        waited = float(lines[1].split()[3])
        self.assertLess(waited, ddp_common.RENDEZVOUS_TIMEOUT_S / 2, out0)


if __name__ == "__main__":
    unittest.main()
