"""The shim's fault specs (FAULTLINE_FAULT) and where each fault strikes,
without torch: parsing and its errors, ranks, the step / collective / op /
time points, the fault event, and the exception a fault raises.

Run: python3 tests/probe/shim_faults_test.py (ctest: shim_faults)."""
import json
import os
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness", "probe", "python"))

from faultline_shim import _events, _faults, _state  # noqa: E402


class Parse(unittest.TestCase):
    def test_every_key(self):
        (f,) = _faults.parse("hung_collective:rank=0,2:collective=5:arg=skip")
        self.assertEqual((f.kind, f.ranks, f.collective, f.arg, f.step), ("hung_collective", {0, 2}, 5, "skip", None))
        (g,) = _faults.parse("sigkill:op=allreduce:nth=3")
        self.assertEqual((g.op, g.nth, g.ranks), ("allreduce", 3, None))
        (h,) = _faults.parse("exit:after=2.5:arg=7")
        self.assertEqual((h.after, h.arg), (2.5, "7"))

    def test_defaults(self):
        (f,) = _faults.parse("collective_mismatch")
        self.assertEqual((f.step, f.arg, f.ranks), (1, "size", None))
        self.assertEqual(f.point(), "step 1")

    def test_several(self):
        self.assertEqual([f.kind for f in _faults.parse("sigkill:rank=1; straggler:rank=0:arg=50;")],
                         ["sigkill", "straggler"])

    def test_errors_name_the_part(self):
        for spec, words in [("nosuch:rank=1", "kind 'nosuch'"), ("sigkill:rank=x", "rank=x"),
                            ("sigkill:step=0", "step=0: expected an integer >= 1"),
                            ("sigkill:step=2:collective=3", "one point"), ("sigkill:nth=2", "give op=OP"),
                            ("hung_collective:arg=nap", "expected sleep or skip"), ("exit:arg=x", "integer"),
                            ("sigkill:when=3", "unknown key 'when'"), ("sigkill:rank", "KEY=VALUE"),
                            ("sigkill:attempt=-1", "attempt=-1: expected an integer >= 0")]:
            with self.assertRaises(ValueError) as cm:
                _faults.parse(spec)
            self.assertIn(words, str(cm.exception), spec)


class Strike(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "1", "events.jsonl")
        _state.recorder = _events.Recorder(1, self.path)

    def tearDown(self):
        _state.recorder = None
        _faults.armed = []
        os.environ.pop("FAULTLINE_FAULT", None)
        self.dir.cleanup()

    def arm(self, spec, rank=1):
        os.environ["FAULTLINE_FAULT"] = spec
        _faults.arm(rank)

    def faults(self):
        with open(self.path) as f:
            return [e for e in map(json.loads, f) if e["ev"] == "fault"]

    def test_other_ranks_are_not_armed(self):
        self.arm("sigkill:rank=0,2", rank=1)
        self.assertEqual(_faults.armed, [])

    def test_a_fault_for_one_attempt_is_armed_in_that_attempt_only(self):
        # torchrun gives each worker its restart count: 0, then 1 after a restart.
        try:
            for count, armed in [(None, True), ("0", True), ("1", False)]:
                if count is None:
                    os.environ.pop("TORCHELASTIC_RESTART_COUNT", None)
                else:
                    os.environ["TORCHELASTIC_RESTART_COUNT"] = count
                self.arm("exception:rank=1:step=3:attempt=0")
                self.assertEqual(len(_faults.armed), 1 if armed else 0, count)
                self.assertEqual(_faults.armed[0].attempt if armed else 0, 0)
            self.arm("exception:rank=1:step=3")  # no attempt: every one, the restart's too
            self.assertEqual(len(_faults.armed), 1)
            # torch 2.x restarts a node's healthy workers for another node's
            # restart with the count unchanged: the rank's earlier process,
            # gone, says this is its second attempt.
            os.environ["TORCHELASTIC_RESTART_COUNT"] = "0"
            _state.earlier_processes = 1
            self.arm("exception:rank=1:step=3:attempt=0")
            self.assertEqual(_faults.armed, [])
            self.arm("exception:rank=1:step=3:attempt=1")
            self.assertEqual(len(_faults.armed), 1)
        finally:
            os.environ.pop("TORCHELASTIC_RESTART_COUNT", None)
            _state.earlier_processes = 0

    def test_exception_at_its_step_with_its_type_and_event(self):
        self.arm("exception:rank=1:step=3:arg=ValueError")
        _faults.at_step(1)
        _faults.at_step(2)
        with self.assertRaises(ValueError) as cm:
            _faults.at_step(3)
        self.assertIn("step 3", str(cm.exception))
        (ev,) = self.faults()
        self.assertEqual((ev["kind"], ev["point"], ev["source"], ev["rule"]),
                         ("exception", "step 3", "shim", "exception:rank=1:step=3:arg=ValueError"))
        _faults.at_step(4)  # struck once

    def test_default_exception_reads_as_the_seeds_name_error(self):
        self.arm("exception")
        with self.assertRaises(NameError):
            _faults.at_step(1)

    def test_hung_collective_armed_by_step_waits_for_the_next_collective(self):
        self.arm("hung_collective:step=2:arg=skip")
        self.assertIsNone(_faults.at_collective("allreduce", 0))
        _faults.at_step(2)
        self.assertEqual(self.faults(), [])
        self.assertEqual(_faults.at_collective("allreduce", 1), "skip")
        self.assertIsNone(_faults.at_collective("allreduce", 2))

    def test_collective_point_is_the_seq(self):
        self.arm("collective_mismatch:collective=4:arg=op")
        self.assertEqual([_faults.at_collective("allreduce", s) for s in range(6)], [None] * 4 + ["op", None])
        self.assertEqual(self.faults()[0]["point"], "collective #4")

    def test_op_point_counts_that_op(self):
        self.arm("collective_mismatch:op=broadcast:nth=2")
        got = [_faults.at_collective(op, s) for s, op in enumerate(["allreduce", "broadcast", "allreduce", "broadcast"])]
        self.assertEqual(got, [None, None, None, "size"])

    def test_after_makes_the_next_point_strike(self):
        self.arm("exception:after=0.01:arg=KeyError")
        done = threading.Event()
        threading.Timer(0.05, done.set).start()
        done.wait()
        with self.assertRaises(KeyError):
            _faults.at_collective("barrier", 0)

    def test_straggler_sleeps_every_step_from_its_point(self):
        self.arm("straggler:step=2:arg=1")
        _faults.at_step(1)
        self.assertEqual(_faults._straggle_ms, 0)
        _faults.at_step(2)
        _faults.at_step(3)
        self.assertEqual(_faults._straggle_ms, 1)
        self.assertEqual(len(self.faults()), 1)
        _faults._straggle_ms = 0


if __name__ == "__main__":
    unittest.main()
