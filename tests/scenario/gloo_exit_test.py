"""The fixtures' guard against torch 2.x's abort at exit
(scenarios/python/gloo_exit.py, docs/TORCH2.md): settle() returns only once
no Gloo worker holds what a backward stashed in torch's thread-local state,
and every collective called from Python keeps its tensors (torch 1.13's
shutdown hang).

Run: /opt/faultline/torch-2.13/bin/python3 tests/scenario/gloo_exit_test.py
(ctest: gloo_exit/VERSION; the tests of the stashed state skip, saying
why, where torch has no _stash_obj_in_tls)."""
import ast
import os
import sys
import tempfile
import threading
import time
import unittest

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scenarios", "python")
sys.path.insert(0, FIXTURES)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import gloo_exit  # noqa: E402

HAS_STASH = hasattr(torch._C, "_stash_obj_in_tls")


@unittest.skipUnless(HAS_STASH, f"torch {torch.__version__} has no _stash_obj_in_tls (1.x: no such abort)")
class SettleWaitsForStashedState(unittest.TestCase):
    def setUp(self):
        gloo_exit._stashed.clear()

    def test_a_copy_held_elsewhere_is_waited_for(self):
        # Another thread holds a copy of the stashed object, as a Gloo
        # worker's finished work holds the thread-local state; settle()
        # returns after that thread let go, not before.
        obj = object()
        torch._C._stash_obj_in_tls("faultline_test", obj)
        torch._C._remove_obj_from_tls("faultline_test")
        held = [obj]
        del obj
        dropped = threading.Event()

        def worker():
            time.sleep(0.05)  # the worker is still busy when settle() starts
            held.clear()
            dropped.set()

        t = threading.Thread(target=worker)
        t.start()
        gloo_exit.settle(timeout_s=30)
        self.assertTrue(dropped.is_set(), "settle() returned while another thread held the stashed object")
        self.assertEqual(gloo_exit._stashed, [])
        t.join()

    def test_released_objects_are_not_kept(self):
        for i in range(100):
            torch._C._stash_obj_in_tls("faultline_test", object())
            torch._C._remove_obj_from_tls("faultline_test")
        self.assertLessEqual(len(gloo_exit._stashed), 1)

    def test_a_ddp_backward_is_settled(self):
        # The real thing: a one-rank Gloo DDP's backward stashes a Context and
        # its Reducer's all-reduce captures it.
        from torch.nn.parallel import DistributedDataParallel as DDP

        with tempfile.NamedTemporaryFile() as store:
            dist.init_process_group("gloo", init_method=f"file://{store.name}", rank=0, world_size=1)
            try:
                model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8)))
                for _ in range(3):
                    model(torch.randn(16, 4)).sum().backward()
                self.assertTrue(gloo_exit._stashed, "backward stashed nothing: torch changed, gloo_exit needs a look")
                gloo_exit.settle(model, timeout_s=30)
                self.assertEqual(gloo_exit._stashed, [])
            finally:
                dist.destroy_process_group()


class CollectivesKeepTheirTensors(unittest.TestCase):
    """torch 1.13's face of the same race is a hang: a Gloo worker freeing
    the last reference to a tensor whose Python object is gone takes the
    GIL, while the main thread destroys the process group and waits for that
    worker (metrics-torchmetrics on spawn@1.13). Every collective called from
    Python keeps its tensors, so the worker's reference is never the last."""

    def test_a_gathered_tensor_outlives_the_callers_references(self):
        import weakref

        with tempfile.TemporaryDirectory() as tmp:
            dist.init_process_group("gloo", init_method=f"file://{tmp}/store", rank=0, world_size=1)
            try:
                # torchmetrics' gather, as it calls it: the module's attribute.
                out = [torch.zeros(3)]
                dist.all_gather(out, torch.arange(3.0))
                self.assertEqual(out[0].tolist(), [0.0, 1.0, 2.0])
                gathered = weakref.ref(out[0])
                del out
                self.assertIsNotNone(gathered(), "the gathered tensor died with the caller's list")
                # Internal callers use distributed_c10d's name.
                dist.all_gather_object([None], {"step": 3})
                sent = torch.ones(2)
                dist.distributed_c10d.broadcast(sent, src=0)
                self.assertTrue(any(t is sent for call in gloo_exit._kept for t in call))
            finally:
                dist.destroy_process_group()

    def test_the_wrapper_is_no_call_site(self):
        # The shim names a collective's call site by the innermost frame
        # outside library code; the wrapper's frame must not be it (a file in
        # angle brackets is library code to the shim and the diagnosis).
        for fn in (dist.all_reduce, dist.distributed_c10d.all_gather):
            self.assertTrue(getattr(fn, "__gloo_exit__", False))
            self.assertEqual(fn.__code__.co_filename, "<gloo_exit>")

    def test_only_the_latest_calls_are_kept(self):
        with tempfile.TemporaryDirectory() as tmp:
            dist.init_process_group("gloo", init_method=f"file://{tmp}/store", rank=0, world_size=1)
            try:
                for _ in range(200):
                    dist.all_reduce(torch.ones(1))
                self.assertEqual(len(gloo_exit._kept), gloo_exit._kept.maxlen)
            finally:
                dist.destroy_process_group()


class FixturesTrackFromTheStart(unittest.TestCase):
    """settle() waits only for the state it saw stashed: a fixture that
    imports gloo_exit after its training loop (rhythm.py did, in main())
    tracks none of its backwards' state and aborts at exit now and then
    (adaptive-eight-ranks on torchrun@2.13, CI)."""

    def test_every_settling_fixture_imports_it_at_module_level(self):
        settling = []
        for dirpath, _, names in os.walk(FIXTURES):
            for name in names:
                path = os.path.join(dirpath, name)
                if not name.endswith(".py") or name == "gloo_exit.py":
                    continue
                with open(path) as f:
                    text = f.read()
                if "gloo_exit.settle" not in text:
                    continue
                settling.append(name)
                tree = ast.parse(text, path)
                top = [n for n in tree.body if isinstance(n, ast.Import) and any(a.name == "gloo_exit" for a in n.names)]
                nested = [
                    n.lineno
                    for f in tree.body
                    if isinstance(f, (ast.FunctionDef, ast.ClassDef))
                    for n in ast.walk(f)
                    if isinstance(n, ast.Import) and any(a.name == "gloo_exit" for a in n.names)
                ]
                with self.subTest(fixture=os.path.relpath(path, FIXTURES)):
                    self.assertTrue(top, "gloo_exit is not imported at module level")
                    self.assertEqual(nested, [], "gloo_exit is imported inside a function, after backwards ran")
        self.assertIn("rhythm.py", settling)


if __name__ == "__main__":
    unittest.main()
