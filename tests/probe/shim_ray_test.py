"""The shim in Ray Train's workers, on a stand-in of Ray's thread runner (no
Ray needed): the training function's exception, which Ray Train catches in
the worker's training thread, is recorded; a training function that returns
says so (`work_end`); a restarted worker group's process counts the
processes that were its rank before it (its attempt).

Run: python3 tests/probe/shim_ray_test.py (ctest: shim_ray)."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness", "probe", "python"))

import faultline_shim  # noqa: E402
from faultline_shim import _events, _ray, _state  # noqa: E402


def stand_in_thread_runner():
    """ray/train/v2/_internal/execution/worker_group/thread_runner.py, its shape."""
    module = types.ModuleType("thread_runner")

    def construct_user_exception_with_traceback(e, exclude_frames=0):
        return ("wrapped", e)

    class ThreadRunner:
        def __init__(self):
            self.ret, self.exc = None, None

        def run(self, target):
            def _run_target():
                try:
                    self.ret = target()
                except BaseException as e:  # noqa: BLE001  as Ray Train does
                    self.exc = module.construct_user_exception_with_traceback(e, exclude_frames=3)

            t = threading.Thread(target=_run_target, name="TrainingThread(%s)" % target.__name__)
            t.start()
            t.join()

    module.construct_user_exception_with_traceback = construct_user_exception_with_traceback
    module.ThreadRunner = ThreadRunner
    return module


class RayWorker(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "events.jsonl")
        _state.recorder = _events.Recorder(1, self.path)
        self.module = stand_in_thread_runner()
        _ray.patch(self.module)

    def tearDown(self):
        _state.recorder = None

    def events(self, instrument=False):
        with open(self.path) as f:
            return [e for e in map(json.loads, f) if instrument or e["ev"] != "instrument"]

    def test_both_patches_say_they_applied(self):
        applied = {e["patch"]: e["applied"] for e in self.events(instrument=True)}
        self.assertEqual(applied, {"ray.train_fn": True, "ray.work_end": True})

    def test_the_training_functions_exception_is_recorded_and_passed_on(self):
        def train_func():
            b = c  # noqa: F821,F841  the seed's bug
        runner = self.module.ThreadRunner()
        runner.run(train_func)
        self.assertEqual(runner.exc[0], "wrapped")
        self.assertIsInstance(runner.exc[1], NameError)
        errors = [e for e in self.events() if e["ev"] == "error"]
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0]["type"], "NameError")
        self.assertEqual(errors[0]["file"], train_func.__code__.co_filename)  # the user's frame, as Python names it
        self.assertFalse([e for e in self.events() if e["ev"] == "work_end"])

    def test_a_training_function_that_returns_says_its_work_is_done(self):
        def train_func():
            return 42
        runner = self.module.ThreadRunner()
        runner.run(train_func)
        self.assertEqual(runner.ret, 42)
        self.assertEqual([e["ev"] for e in self.events()], ["work_end"])

    def test_patched_once(self):
        _ray.patch(self.module)
        runner = self.module.ThreadRunner()
        runner.run(lambda: None)
        self.assertEqual([e["ev"] for e in self.events()], ["work_end"])

    def test_nothing_is_recorded_in_a_process_that_is_no_rank(self):
        _state.recorder = None
        runner = self.module.ThreadRunner()
        runner.run(lambda: None)
        self.assertEqual(self.events(), [])


class EarlierProcesses(unittest.TestCase):
    def test_the_pids_of_the_ranks_earlier_start_events_that_are_gone(self):
        path = os.path.join(tempfile.mkdtemp(), "events.jsonl")
        self.assertEqual(faultline_shim._earlier_processes(path), 0)  # no file yet: the first
        gone = []
        for _ in range(2):
            p = subprocess.Popen(["/bin/true"])
            p.wait()
            gone.append(p.pid)
        live = subprocess.Popen(["/bin/sleep", "30"])
        try:
            with open(path, "w") as f:
                f.write('{"t":1,"rank":1,"pid":%d,"ev":"start","world_size":2}\n' % gone[0])
                f.write('{"t":2,"rank":1,"pid":%d,"ev":"step_end","step":1}\n' % gone[0])
                f.write('{"t":3,"rank":1,"pid":%d,"ev":"start","world_size":2,"attempt":1}\n' % gone[1])
                # A process of the rank that still runs is no earlier attempt.
                f.write('{"t":3,"rank":1,"pid":%d,"ev":"start","world_size":2}\n' % live.pid)
                f.write('{"t":4,"rank":1,"pid":%d,"ev":"start"}\n' % os.getpid())  # this process itself
            self.assertEqual(faultline_shim._earlier_processes(path), 2)
        finally:
            live.kill()
            live.wait()

    def test_a_process_the_rank_started_is_no_new_attempt(self):
        # A Python started by the rank through another program (`sh -c
        # "python eval.py"`, which _parent_is_same_rank does not see through)
        # carries the rank's RANK: with an earlier such process gone beside
        # its live rank (this test's parent, an ancestor), it is the rank's,
        # not a restart.
        path = os.path.join(tempfile.mkdtemp(), "events.jsonl")
        p = subprocess.Popen(["/bin/true"])
        p.wait()
        with open(path, "w") as f:
            f.write('{"t":1,"rank":1,"pid":%d,"ev":"start","world_size":2}\n' % os.getppid())
            f.write('{"t":2,"rank":1,"pid":%d,"ev":"start"}\n' % p.pid)
        self.assertIn(os.getppid(), faultline_shim._ancestors())
        self.assertEqual(faultline_shim._earlier_processes(path), 0)


if __name__ == "__main__":
    unittest.main()
