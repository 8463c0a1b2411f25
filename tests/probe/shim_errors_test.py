"""The shim's error events and its library policy, without torch: the event
carries the exception as Python prints it (chain, thread), and the location
is the innermost frame of user code by the same policy as the harness's
harness/diagnose/library_paths.cc (docs/DIAGNOSIS.md section 8).

Run: python3 tests/probe/shim_errors_test.py (ctest: shim_errors)."""
import importlib
import json
import os
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness", "probe", "python"))

from faultline_shim import _errors, _events, _state  # noqa: E402


class LibraryPolicy(unittest.TestCase):
    def test_torch_and_its_dependencies_are_library(self):
        for p in ["/usr/lib/python3/dist-packages/torch/nn/modules/module.py",
                  "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",
                  "/opt/venv/lib/python3.11/site-packages/sympy/core/expr.py",
                  "/opt/venv/lib/python3.11/site-packages/typing_extensions.py",
                  "/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py",
                  "/usr/lib/python3.11/multiprocessing/process.py",
                  "<frozen importlib._bootstrap>", ""]:
            self.assertTrue(_state.is_library_file(p), p)

    def test_user_packages_are_the_users(self):
        for p in ["/home/u/.local/lib/python3.11/site-packages/shardkit/reader.py",
                  "/opt/venv/lib/python3.11/site-packages/numpy/core/fromnumeric.py",
                  "/usr/lib/python3/dist-packages/mytrainer/loop.py",
                  "/work/project/third_party/aten/model.py",
                  "/work/project/train.py"]:
            self.assertFalse(_state.is_library_file(p), p)

    def test_the_shim_is_library(self):
        self.assertTrue(_state.is_library_file(os.path.join(_state.SHIM_DIR, "_dist.py")))

    def test_extra_prefixes_from_the_environment(self):
        os.environ["FAULTLINE_LIBRARY_PATHS"] = "/opt/vendor:/srv/lib/"
        try:
            importlib.reload(_state)
            self.assertTrue(_state.is_library_file("/opt/vendor/x.py"))
            self.assertTrue(_state.is_library_file("/srv/lib/y/z.py"))
            self.assertFalse(_state.is_library_file("/opt/vendorlib/x.py"))
        finally:
            del os.environ["FAULTLINE_LIBRARY_PATHS"]
            importlib.reload(_state)


CRASHER = """
import ctypes, sys
sys.path.insert(0, sys.argv[1])
import faultline_shim
faultline_shim._register_crash_dump(sys.argv[2])

def read_record():
    return ctypes.string_at(0)  # a native crash, as in an extension

read_record()
"""


class CrashDump(unittest.TestCase):
    """A fatal signal: every thread's Python stack into crash_stacks.txt, the
    one that took it "Current thread" (docs/CONTRACT.md, the run directory)."""

    def run_crasher(self, env):
        import subprocess
        out = tempfile.mkdtemp()
        shim = os.path.dirname(os.path.dirname(os.path.abspath(_state.__file__)))
        p = subprocess.run([sys.executable, "-c", CRASHER, shim, out], env=env, capture_output=True, text=True)
        return p, os.path.join(out, "crash_stacks.txt")

    def test_the_thread_that_took_the_signal_and_its_place(self):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONFAULTHANDLER"}
        p, path = self.run_crasher(env)
        self.assertEqual(p.returncode, -11, p.stderr)  # the signal goes on: the process still dies of it
        with open(path) as f:
            dump = f.read()
        self.assertIn("Fatal Python error: Segmentation fault", dump)
        current = dump[dump.index("Current thread"):]
        self.assertIn('File "<string>", line 8 in read_record', current)

    def test_a_faulthandler_the_process_enabled_itself_is_left_be(self):
        p, path = self.run_crasher(dict(os.environ, PYTHONFAULTHANDLER="1"))
        self.assertEqual(p.returncode, -11, p.stderr)
        self.assertFalse(os.path.exists(path))
        self.assertIn("Fatal Python error: Segmentation fault", p.stderr)


class ErrorEvent(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "events.jsonl")
        _state.recorder = _events.Recorder(0, self.path)

    def tearDown(self):
        _state.recorder = None

    def events(self):
        with open(self.path) as f:
            return [json.loads(line) for line in f if '"error"' in line]

    def test_the_error_file_appears_whole(self):
        # torchelastic's agent reads it the moment the rank is gone: written
        # under another name and renamed, so a rank killed as it writes leaves
        # no half file at the path (CI: torchrun 2.13's agent crashed in
        # json.load on an empty one instead of restarting the ranks).
        path = os.path.join(self.dir, "error.json")
        os.environ["TORCHELASTIC_ERROR_FILE"] = path
        opened = []
        real_open = open

        def spying_open(name, *args, **kwargs):
            opened.append(name)
            return real_open(name, *args, **kwargs)

        _errors.open = spying_open  # the module's open; builtins stay untouched
        try:
            try:
                raise ValueError("bad shard")
            except ValueError:
                _errors.record(*sys.exc_info())
        finally:
            del _errors.open
            del os.environ["TORCHELASTIC_ERROR_FILE"]
        self.assertNotIn(path, opened)  # never opened for writing under its own name
        with open(path) as f:
            self.assertEqual(json.load(f)["message"]["message"], "ValueError: bad shard")
        self.assertEqual(sorted(os.listdir(self.dir)), ["error.json", "events.jsonl"])  # no temporary left

    def test_chained_exception_carries_its_whole_traceback(self):
        try:
            try:
                {}["lr"]
            except KeyError as e:
                raise RuntimeError("bad config") from e
        except RuntimeError:
            _errors.record(*sys.exc_info(), error_file=False)
        (ev,) = self.events()
        self.assertEqual((ev["type"], ev["message"]), ("RuntimeError", "bad config"))
        tb = ev["traceback"]
        self.assertIn("KeyError: 'lr'", tb)
        self.assertIn("The above exception was the direct cause of the following exception:", tb)
        self.assertTrue(tb.rstrip().endswith("RuntimeError: bad config"))

    def test_thread_exception_names_the_thread(self):
        old = threading.excepthook
        _errors.install()
        try:
            t = threading.Thread(target=lambda: 1 / 0, name="prefetch")
            t.start()
            t.join()
        finally:
            threading.excepthook = old
            sys.excepthook = sys.__excepthook__
        (ev,) = self.events()
        self.assertEqual((ev["type"], ev["thread"]), ("ZeroDivisionError", "prefetch"))
        self.assertIn("ZeroDivisionError: division by zero", ev["traceback"])

    def test_a_huge_traceback_keeps_its_head_and_tail(self):
        text = _errors._formatted(ValueError, ValueError("x" * 200000), None)
        self.assertLessEqual(len(text), _errors._MAX_TRACEBACK + 16)
        self.assertTrue(text.startswith("ValueError: xxx"))
        self.assertIn("\n...\n", text)


if __name__ == "__main__":
    unittest.main()
