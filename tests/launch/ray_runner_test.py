"""ray_runner.py's cluster on a host where another program holds the ports of
Ray's default worker range (10002-19999), as a second Ray cluster of a
suite's -j 2 holds some: its workers bind ports the kernel picks, so the job
runs.

With the default range the raylet hands its workers ports of that range
that it believes free, and a worker handed one another program took first
fails to start ("No address added out of total 1 resolved for
'0.0.0.0:15984'", the driver of one of two clusters once). Here every port
of the range is held, so a cluster that used it could not start its driver.

    ray_runner_test.py RAY_PYTHON

RAY_PYTHON is the interpreter of a venv with ray[train]; the test is skipped
(exit 77) where it is missing.
"""
import os
import resource
import socket
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "..", "..", "harness", "launch", "python", "ray_runner.py")
RAY_PYTHON = sys.argv[1] if len(sys.argv) > 1 else ""
HELD = range(10002, 20000)  # Ray's default worker range

DRIVER = """
import ray
ray.init()

@ray.remote
def square(x):
    return x * x

print("sum of squares:", sum(ray.get([square.remote(i) for i in range(6)])), flush=True)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RayRunnerPorts(unittest.TestCase):
    def test_a_job_runs_while_another_program_holds_rays_default_worker_ports(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = len(HELD) + 512
        if soft < want:
            if hard != resource.RLIM_INFINITY and hard < want:
                self.skipTest("the open-file limit (%d) cannot hold %d ports" % (hard, len(HELD)))
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        held = []
        for port in HELD:
            s = socket.socket()
            try:
                s.bind(("0.0.0.0", port))
                s.listen()
                held.append(s)
            except OSError:
                s.close()  # someone else holds it already: as good
        self.assertGreater(len(held), len(HELD) * 9 // 10, "could not hold Ray's default worker ports")
        try:
            with tempfile.TemporaryDirectory() as tmp:
                driver = os.path.join(tmp, "driver.py")
                with open(driver, "w") as f:
                    f.write(DRIVER)
                cmd = [RAY_PYTHON, RUNNER, "--port", str(free_port()), "--num-cpus", "2",
                       "--temp-dir", os.path.join(tmp, "ray"), "--logs-to", os.path.join(tmp, "logs"),
                       RAY_PYTHON, driver]
                # The runner and Ray inherit none of the held sockets (Python's are not inheritable).
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        finally:
            for s in held:
                s.close()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr[-4000:])
        self.assertIn("sum of squares: 55", r.stdout, r.stderr[-4000:])


if __name__ == "__main__":
    if not RAY_PYTHON or not os.access(RAY_PYTHON, os.X_OK):
        print("skipped: no Ray interpreter (%r): ci/deps installs ray[train] in /opt/faultline/frameworks-ray-2.13"
              % RAY_PYTHON)
        sys.exit(77)
    unittest.main(argv=sys.argv[:1])
