"""The call site of a collective (_site): the innermost frame outside the
library, its callers, and the rank condition that decides whether the line
runs, read with Python's own parser. No torch needed.

Run: python3 tests/probe/shim_site_test.py (ctest: shim_site)."""
import json
import os
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness", "probe", "python"))

from faultline_shim import _site  # noqa: E402

SOURCE = textwrap.dedent('''\
    import os
    rank = int(os.environ.get("RANK", "0"))

    def collective():
        return CALL()

    def save(model):
        if rank != 0:
            return
        collective()

    def step(self, args):
        if self.rank == 0:
            collective()
        elif args.verbose:
            collective()
        if args.local_rank in (0, -1):
            collective()
        for i in range(2):
            if i % 2 == 0:
                collective()
        while dist.get_rank() != 0:
            collective()
        x = collective() if is_main_process() else None
        if accelerator.is_local_main_process:
            collective()
        if step % 10 == 0:
            collective()
        if len(ranks) > 1:
            collective()
''')


class RankCondition(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.dir.name, "train.py")
        with open(cls.path, "w") as f:
            f.write(SOURCE)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def cond(self, line):
        return _site.rank_condition(self.path, line)

    def test_spellings(self):
        p = self.path
        self.assertEqual(self.cond(10), "%s:8: if rank != 0: return" % p)      # guard, then the call
        self.assertEqual(self.cond(14), "%s:13: if self.rank == 0" % p)
        self.assertEqual(self.cond(16), "%s:13: if self.rank == 0" % p)        # the elif is its else branch
        self.assertEqual(self.cond(18), "%s:17: if args.local_rank in (0, -1)" % p)
        self.assertEqual(self.cond(23), "%s:22: while dist.get_rank() != 0" % p)
        self.assertEqual(self.cond(24), "%s:24: if is_main_process()" % p)
        self.assertEqual(self.cond(26), "%s:25: if accelerator.is_local_main_process" % p)

    def test_not_rank_tests(self):
        self.assertEqual(self.cond(5), "")    # no condition at all
        self.assertEqual(self.cond(21), "")   # i % 2
        self.assertEqual(self.cond(28), "")   # step % 10
        self.assertEqual(self.cond(30), "")   # len(ranks): a list of ranks, not this rank

    def test_unreadable_source(self):
        self.assertEqual(_site.rank_condition("/no/such/file.py", 3), "")
        self.assertEqual(_site.rank_condition("<string>", 1), "")


class Fields(unittest.TestCase):
    def test_site_and_callers_from_the_stack(self):
        def collective():
            return json.loads("{" + _site.fields(1)[1:] + "}")

        def helper():
            return collective()

        got = helper()
        here = os.path.abspath(__file__)
        self.assertTrue(got["site"].startswith(here + ":"), got)
        self.assertEqual(len(got["callers"]), 3)
        self.assertTrue(all(c.startswith(here + ":") for c in got["callers"][:2]))
        self.assertNotIn("rank_cond", got)

    def test_cached_per_call_path(self):
        a = [_site.fields(1) for _ in range(3)]
        self.assertEqual(len(set(a)), 1)


if __name__ == "__main__":
    unittest.main()
