"""The shim's watcher of async Gloo collectives (_dist._GlooWaiter), without
torch, on stand-in Works: it writes collective_end for each that completes,
never blocks in wait() (a daemon thread blocked there aborts the rank if its
Work completes while the interpreter finalizes), and holds no Work once the
rank destroys its process group (release()): one it held would keep that
collective's tensors alive past the group, and change what the rank does
then (torch 1.13's teardown deadlock, diagnosis-unwaited-sync-teardown).

Run: python3 tests/probe/shim_waiter_test.py (ctest: shim_waiter)."""
import gc
import os
import sys
import threading
import time
import unittest
import weakref

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness", "probe", "python"))

from faultline_shim import _dist  # noqa: E402


class Work:
    """A stand-in c10d Work: completes when told to, fails if told so, and
    wait() on an incomplete one blocks (the test fails if the waiter ever
    calls it before completion)."""

    def __init__(self, fails=False):
        self._done = threading.Event()
        self.fails = fails
        self.waited_early = False

    def complete(self):
        self._done.set()

    def is_completed(self):
        return self._done.is_set()

    def wait(self):
        if not self._done.is_set():
            self.waited_early = True
            self._done.wait()
        if self.fails:
            raise RuntimeError("Connection closed by peer")
        return True


def until(cond, timeout_s=10.0):
    end = time.monotonic() + timeout_s
    while not cond() and time.monotonic() < end:
        time.sleep(0.001)
    return cond()


class Waiter(unittest.TestCase):
    def setUp(self):
        self.waiter = _dist._GlooWaiter()
        self.ended, self.abandoned = [], []

    def watch(self, name, work):
        self.waiter.watch(work, lambda: self.ended.append(name), lambda: self.abandoned.append(name))

    def test_a_completed_work_ends_and_a_failed_one_does_not(self):
        ok, bad = Work(), Work(fails=True)
        self.watch("ok", ok)
        self.watch("bad", bad)
        ok.complete()
        bad.complete()
        self.assertTrue(until(lambda: self.ended == ["ok"] and not self.waiter._watched))
        self.assertEqual(self.abandoned, [])
        self.assertFalse(ok.waited_early or bad.waited_early)

    def test_it_never_blocks_in_wait_on_a_running_work(self):
        running = Work()
        self.watch("running", running)
        time.sleep(0.05)  # many polls of a Work that is still running
        self.assertFalse(running.waited_early, "the waiter blocked in wait() on a running Work")
        running.complete()
        self.assertTrue(until(lambda: self.ended == ["running"]))

    def test_release_ends_the_completed_abandons_the_running_and_keeps_none(self):
        running, completed = Work(), Work()
        self.watch("running", running)
        self.watch("completed", completed)
        time.sleep(0.01)  # the thread is polling them
        completed.complete()  # the thread or release() ends it, once
        gone = weakref.ref(running)
        self.waiter.release()
        self.assertEqual(self.ended, ["completed"])
        self.assertEqual(self.abandoned, ["running"])
        del running
        gc.collect()
        self.assertIsNone(gone(), "the waiter still holds a Work after release()")
        # Watching goes on for the next group's collectives.
        later = Work()
        self.watch("later", later)
        later.complete()
        self.assertTrue(until(lambda: "later" in self.ended))


if __name__ == "__main__":
    unittest.main()
