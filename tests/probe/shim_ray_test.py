"""The shim in Ray Train's workers, on a stand-in of Ray's thread runner (no
Ray needed): the training function's exception, which Ray Train catches in
the worker's training thread, is recorded; a training function that returns
says so (`work_end`); a worker that is no rank yet becomes the rank
Ray Train's backend named in RANK as its training function starts; a restarted worker group's process counts the
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
from faultline_shim import _data, _events, _ray, _state  # noqa: E402


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
        self.activated = []
        _ray.patch(self.module, self.activate)

    def activate(self, rank, world_size):
        self.activated.append((rank, world_size))

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

    def test_a_failing_system_exit_is_recorded_as_ray_catches_it(self):
        def train_func():
            raise SystemExit(3)  # the process never exits with 3 under Ray
        self.module.ThreadRunner().run(train_func)
        errors = [e for e in self.events() if e["ev"] == "error"]
        self.assertEqual([(e["type"], e["message"]) for e in errors], [("SystemExit", "3")])

    def test_a_clean_system_exit_is_no_error(self):
        def train_func():
            raise SystemExit(0)
        self.module.ThreadRunner().run(train_func)
        self.assertFalse([e for e in self.events() if e["ev"] == "error"])

    def test_a_training_function_that_returns_says_its_work_is_done(self):
        def train_func():
            return 42
        runner = self.module.ThreadRunner()
        runner.run(train_func)
        self.assertEqual(runner.ret, 42)
        self.assertEqual([e["ev"] for e in self.events()], ["work_end"])

    def test_what_the_loader_drew_is_said_before_the_work_end(self):
        # Ray ends the worker with ray.kill, so no atexit says it later.
        drawn = _data._Recording(iter([[3, 1], [2, 0]]), 0, "RandomSampler")
        _data._pending = drawn
        try:
            next(drawn)  # a pass left unfinished (the trainer stopped at its last step)
            self.module.ThreadRunner().run(lambda: None)
        finally:
            _data._pending = None
        evs = self.events()
        self.assertEqual([e["ev"] for e in evs], ["samples", "work_end"])
        self.assertEqual(evs[0]["indices"], [3, 1])

    def test_patched_once(self):
        _ray.patch(self.module, self.activate)
        runner = self.module.ThreadRunner()
        runner.run(lambda: None)
        self.assertEqual([e["ev"] for e in self.events()], ["work_end"])

    def test_nothing_is_recorded_in_a_process_that_is_no_rank(self):
        _state.recorder = None
        saved = {k: os.environ.pop(k) for k in ("RANK", "WORLD_SIZE") if k in os.environ}
        try:
            runner = self.module.ThreadRunner()
            runner.run(lambda: None)
        finally:
            os.environ.update(saved)
        self.assertEqual(self.events(), [])
        self.assertEqual(self.activated, [])

    def test_a_worker_becomes_the_rank_its_environment_names_as_the_function_starts(self):
        # A training function that makes its own process group (ray_script.py
        # runs a plain script so) can fail before it joins one: the rank is
        # named from RANK, which Ray Train's backend set before the function.
        _state.recorder = None
        saved = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE")}
        os.environ.update({"RANK": "2", "WORLD_SIZE": "3"})
        try:
            runner = self.module.ThreadRunner()
            runner.run(lambda: None)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.assertEqual(self.activated, [(2, 3)])

    def test_a_rank_already_named_is_not_named_again(self):
        os.environ["RANK"] = "0"
        try:
            self.module.ThreadRunner().run(lambda: None)
        finally:
            os.environ.pop("RANK")
        self.assertEqual(self.activated, [])


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
