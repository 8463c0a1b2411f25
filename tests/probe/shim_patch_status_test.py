"""The shim's patch status (instrument events) on stand-in modules, no torch:
outcomes kept until the process is a rank, a failed patch's error, a patch
that breaks at run time, torch 2.x's and 1.13's optimizer hooks.

Run: python3 tests/probe/shim_patch_status_test.py (ctest: shim_patch_status)."""
import json
import os
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness", "probe", "python"))

from faultline_shim import _events, _imports, _instrument, _state, _steps  # noqa: E402


def fresh():
    _instrument._outcomes.clear()
    _instrument._sent.clear()
    _instrument._broken.clear()


class PatchStatus(unittest.TestCase):
    def setUp(self):
        fresh()
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "0", "events.jsonl")
        _state.recorder = None
        sys.modules["torch"] = types.SimpleNamespace(__version__="9.9.0")

    def tearDown(self):
        _state.recorder = None
        sys.modules.pop("torch", None)
        self.dir.cleanup()

    def activate(self):
        _state.recorder = _events.Recorder(0, self.path)
        _instrument.flush()

    def events(self):
        with open(self.path) as f:
            return [json.loads(line) for line in f if '"instrument"' in line]

    def test_outcomes_before_the_rank_exists_are_written_when_it_does(self):
        _instrument.attempt("spawn.wrap", lambda: None)
        self.assertFalse(os.path.exists(self.path))
        self.activate()
        _instrument.attempt("dist.barrier", lambda: None)
        evs = self.events()
        self.assertEqual([(e["patch"], e["applied"], e["torch"]) for e in evs],
                         [("spawn.wrap", True, "9.9.0"), ("dist.barrier", True, "9.9.0")])
        _instrument.flush()
        self.assertEqual(len(self.events()), 2)  # once each

    def test_a_failed_patch_carries_its_error(self):
        self.activate()

        def patch():
            raise AttributeError("module 'torch.distributed.distributed_c10d' has no attribute 'all_reduce'")

        self.assertFalse(_instrument.attempt("dist.all_reduce", patch))
        (e,) = self.events()
        self.assertEqual(e["ev"], "instrument")
        self.assertIs(e["applied"], False)
        self.assertEqual(e["error"], "AttributeError: module 'torch.distributed.distributed_c10d' has no attribute 'all_reduce'")

    def test_breaking_at_run_time_is_said_once(self):
        self.activate()
        _instrument.attempt("ddp.forward", lambda: None)
        for _ in range(3):
            _instrument.broke("ddp.forward", KeyError("require_backward_grad_sync"))
        evs = self.events()
        self.assertEqual(len(evs), 2)
        self.assertIs(evs[1]["applied"], False)
        self.assertEqual(evs[1]["error"], "at run time: KeyError: 'require_backward_grad_sync'")

    def test_a_patch_that_fails_as_a_whole_is_recorded_under_its_label(self):
        self.activate()
        module = types.ModuleType("fake_mod_for_label")
        sys.modules[module.__name__] = module
        try:
            _imports.when_imported(module.__name__, lambda m: m.missing_attribute, "ddp")
        finally:
            del sys.modules[module.__name__]
        (e,) = self.events()
        self.assertEqual((e["patch"], e["applied"]), ("ddp", False))
        self.assertTrue(e["error"].startswith("AttributeError: "))

    def test_optimizer_step_on_either_torch_and_on_neither(self):
        self.activate()
        for hook in ("_patch_step_function", "_hook_for_profile"):
            calls = []

            def profile_hook(self, calls=calls):
                calls.append("hook")

            Optimizer = type("Optimizer", (), {hook: profile_hook})
            SGD = type("SGD", (Optimizer,), {"step": lambda self: calls.append("step")})
            _steps.patch(types.SimpleNamespace(Optimizer=Optimizer))
            opt = SGD()
            getattr(opt, hook)()  # what Optimizer.__init__ does
            opt.step()
            self.assertEqual(calls, ["hook", "step"])
            self.assertTrue(hasattr(SGD.__dict__["step"], "__faultline_wrapped__"), hook)
        _steps.patch(types.SimpleNamespace(Optimizer=type("Optimizer", (), {})))
        last = self.events()[-1]
        self.assertEqual((last["patch"], last["applied"]), ("optim.step", False))
        self.assertIn("_patch_step_function", last["error"])

    def test_long_errors_are_cut(self):
        self.activate()
        _instrument.failed("dist.recv", ValueError("x" * 1000))
        (e,) = self.events()
        self.assertEqual(len(e["error"]), 300)
        self.assertTrue(e["error"].endswith("..."))


class SignalHandlerExceptions(unittest.TestCase):
    """An exception a Python signal handler raises while the shim's own code
    runs is the trainer's (torch's DataLoader raises "worker is killed by
    signal" from its SIGCHLD handler): the shim passes it on, and swallows
    only its own."""

    def setUp(self):
        fresh()
        import signal

        def handler(signum, frame):
            raise RuntimeError("DataLoader worker (pid 42) is killed by signal: Killed.")

        self.previous = signal.signal(signal.SIGUSR2, handler)

    def tearDown(self):
        import signal

        signal.signal(signal.SIGUSR2, self.previous)

    def test_a_signal_handlers_exception_leaves_the_shims_bookkeeping(self):
        import signal

        from faultline_shim import _dist

        class Struck:
            dtype = "torch.float32"

            def numel(self):
                os.kill(os.getpid(), signal.SIGUSR2)  # the handler runs at the next bytecode, in here
                return sum(range(1000))

        with self.assertRaisesRegex(RuntimeError, "is killed by signal"):
            _dist.describe_tensor(Struck())

    def test_the_shims_own_error_is_still_swallowed(self):
        from faultline_shim import _dist

        class Odd:
            def numel(self):
                raise TypeError("not a tensor")

        self.assertEqual(_dist.describe_tensor(Odd()), (0, ""))

    def test_broke_passes_a_signal_handlers_exception_on_and_records_nothing(self):
        import signal

        try:
            os.kill(os.getpid(), signal.SIGUSR2)
            sum(range(1000))
        except RuntimeError as e:
            caught = e
        with self.assertRaises(RuntimeError):
            _instrument.broke("data.dataloader", caught)
        self.assertNotIn("data.dataloader", _instrument._broken)


class CaughtInACollective(unittest.TestCase):
    """An exception out of a collective is written as collective_raised, with
    where the call came from, and goes on to the trainer: a trainer that
    catches it (Lightning's per-step SIGTERM broadcast catches every
    Exception) leaves it the only record that it happened."""

    def setUp(self):
        import signal

        fresh()
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "1", "events.jsonl")
        _state.recorder = _events.Recorder(1, self.path)

        def handler(signum, frame):
            raise RuntimeError("DataLoader worker (pid 42) is killed by signal: Segmentation fault. ")

        self.previous = signal.signal(signal.SIGUSR2, handler)
        from faultline_shim import _dist

        self.dist = _dist
        self.saved = _dist._c10d
        world = object()
        _dist._c10d = types.SimpleNamespace(GroupMember=types.SimpleNamespace(WORLD=world, NON_GROUP_MEMBER=object()))
        _dist._counters.clear()

    def tearDown(self):
        import signal

        signal.signal(signal.SIGUSR2, self.previous)
        self.dist._c10d = self.saved
        self.dist._counters.clear()
        _state.recorder = None
        self.dir.cleanup()

    def events(self):
        with open(self.path) as f:
            return [json.loads(line) for line in f]

    def test_the_exception_is_recorded_with_its_caller_and_passed_on(self):
        import signal

        def broadcast(tensor, src, group=None, async_op=False):
            if tensor == "struck":
                os.kill(os.getpid(), signal.SIGUSR2)  # torch's SIGCHLD handler, in the call
                sum(range(1000))
            return None

        wrapped = self.dist._wrap(broadcast, "broadcast", "tensor", None, "dist.broadcast")

        def sigterm_broadcast():  # Lightning's _broadcast_sigterm_tensor
            try:
                wrapped("struck", src=0)
            except Exception:  # noqa: BLE001
                return "swallowed"

        self.assertEqual(sigterm_broadcast(), "swallowed")
        wrapped("fine", src=0)
        evs = [(e["ev"], e.get("op"), e.get("seq")) for e in self.events()]
        self.assertEqual(evs, [("collective_begin", "broadcast", 0), ("collective_raised", "broadcast", 0),
                               ("collective_begin", "broadcast", 1), ("collective_end", "broadcast", 1)])
        raised = self.events()[1]
        self.assertEqual(raised["type"], "RuntimeError")
        self.assertIn("is killed by signal", raised["message"])
        self.assertTrue(raised["site"].endswith("shim_patch_status_test.py:%d" % (sigterm_broadcast.__code__.co_firstlineno + 2)),
                        raised["site"])
        self.assertIn("RuntimeError: DataLoader worker (pid 42)", raised["traceback"])
        self.assertNotIn("dist.broadcast", _instrument._broken)


class WorkerDeathRaisedByTorchsHandler(unittest.TestCase):
    """torch's DataLoader SIGCHLD handler raises a worker's death wherever the
    main thread is: the shim writes it as signal_raised, with the frame it
    interrupted, and passes it on, so a trainer that catches it there is no
    longer the only one who knows."""

    def setUp(self):
        import signal

        fresh()
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "1", "events.jsonl")
        _state.recorder = _events.Recorder(1, self.path)

        def _error_if_any_worker_fails():
            raise RuntimeError("DataLoader worker (pid 42) is killed by signal: Segmentation fault. ")

        # torch.utils.data._utils.signal_handling, as _set_SIGCHLD_handler leaves it
        self.sh = types.SimpleNamespace(_error_if_any_worker_fails=_error_if_any_worker_fails)
        sh = self.sh

        def handler(signum, frame):
            sh._error_if_any_worker_fails()

        self.previous = signal.signal(signal.SIGUSR2, handler)

    def tearDown(self):
        import signal

        signal.signal(signal.SIGUSR2, self.previous)
        _state.recorder = None
        self.dir.cleanup()

    def test_the_death_is_recorded_where_it_landed_and_passed_on(self):
        import signal

        from faultline_shim import _data

        _data._patch_worker_death(self.sh)
        _data._patch_worker_death(self.sh)  # once
        self.assertIsNotNone(self.sh._error_if_any_worker_fails.__faultline_wrapped__)
        with self.assertRaisesRegex(RuntimeError, "is killed by signal"):
            os.kill(os.getpid(), signal.SIGUSR2)
            sum(range(1000))
        with open(self.path) as f:
            (e,) = [json.loads(line) for line in f]
        self.assertEqual(e["ev"], "signal_raised")
        self.assertEqual(e["type"], "RuntimeError")
        self.assertIn("shim_patch_status_test.py:", e["site"])
        self.assertNotIn("op", e)


if __name__ == "__main__":
    unittest.main()
