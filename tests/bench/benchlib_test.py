"""bench/run's judging half on hand-written results, no processes: per-torchrun
columns and ratios (newest first), the goals as met / missed / not decided,
the load warning, and old result files (one "torchrun" key) read as 1.13."""
import importlib.machinery
import importlib.util
import json
import os
import sys
import tempfile
import unittest

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE, "bench"))

from benchlib import side_by_side, table, torchruns  # noqa: E402


def load_bench_run():
    loader = importlib.machinery.SourceFileLoader("bench_run", os.path.join(SOURCE, "bench", "run"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("bench_run", loader))
    loader.exec_module(module)
    return module


INFO = {"torchrun@2.13": {"torch": "2.13.0+cpu", "program": "/opt/faultline/torch-2.13/bin/torchrun",
                          "monitor_interval_s": 0.1, "sigterm_grace_s": 30},
        "torchrun@1.13": {"torch": "1.13.0a0", "program": "/usr/bin/torchrun", "monitor_interval_s": 5,
                          "sigterm_grace_s": 30}}


def crash(fl_ms, tr213_ms, tr113_ms=4500.0):
    rep = lambda ms: {"detect_ms": None, "term_delivered_ms": ms, "all_reaped_ms": ms, "launcher_returned_ms": ms}
    return {"faultline": [dict(rep(fl_ms), detect_ms=0.5)], "torchrun@1.13": [rep(tr113_ms)],
            "torchrun@2.13": [rep(tr213_ms)], "torchruns": INFO}


def run_info(load):
    return {"when": "2026-12-01 21:00 UTC", "load_before": load, "load_after": load, "seconds": 1, "reps": 1,
            "commit": "abc"}


class Names(unittest.TestCase):
    def test_series_of_debian_and_wheel_versions(self):
        self.assertEqual(torchruns.series("1.13.0a0"), "1.13")
        self.assertEqual(torchruns.series("2.13.0+cpu"), "2.13")

    def test_newest_first_and_the_lead_is_the_newest_2x(self):
        sec = {"faultline": [], "torchrun@1.13": [], "torchrun@2.9": [], "torchrun@2.13": [], "torchruns": {}}
        self.assertEqual(table.torchrun_names(sec), ["torchrun@2.13", "torchrun@2.9", "torchrun@1.13"])
        self.assertEqual(table.lead_torchrun(table.torchrun_names(sec)), "torchrun@2.13")
        self.assertIsNone(table.lead_torchrun(["torchrun@1.13"]))


class Table(unittest.TestCase):
    def test_one_column_and_ratio_per_torchrun_2_13_first(self):
        rows = table.result_rows({"crash": crash(5.0, 60.0)})
        md = table.results_md(rows)
        head = md.splitlines()[0]
        self.assertLess(head.index("torchrun@2.13"), head.index("torchrun@1.13"))
        reaped = [x for x in rows if x.measure.startswith("first failure -> all ranks reaped")][0]
        self.assertAlmostEqual(reaped.ratio("torchrun@2.13"), 12.0)
        self.assertAlmostEqual(reaped.ratio("torchrun@1.13"), 900.0)
        d = reaped.as_dict()
        self.assertEqual(d["torchrun@2.13"], 60.0)
        self.assertAlmostEqual(d["ratio"]["torchrun@2.13"], 12.0)
        self.assertIn("0.1 s (torchrun@2.13)", rows[0].note)

    def test_a_torchrun_without_a_figure_says_why(self):
        c = {"faultline": [{"report_ms": 5400.0, "detected_ms": 5000.0, "root_cause": ["hung_collective", 1]}],
             "torchrun@2.13": [{"ended_ms": None, "exit_code": 1, "error": "rank 0: std::system_error: Broken pipe"}],
             "torchrun@1.13": [{"ended_ms": 14000.0, "exit_code": 1}], "collective_timeout_s": 10,
             "hang_timeout_s": 5, "world": 3,
             "torchruns": {"torchrun@2.13": dict(INFO["torchrun@2.13"], trainer="/b/faultline-trainer",
                                                 trainer_caveat="faultline-trainer-torch2.13 not built"),
                           "torchrun@1.13": dict(INFO["torchrun@1.13"], trainer="/b/faultline-trainer")}}
        row = table.result_rows({"hang": c})[0]
        self.assertIsNone(row.tr["torchrun@2.13"])
        self.assertIn("torchrun@2.13 gave no figure: rank 0: std::system_error: Broken pipe", row.note)
        self.assertIn("faultline-trainer-torch2.13 not built", row.note)

    def test_a_torchrun_suite_with_failures_is_no_figure(self):
        c = {"builtin": {"wall_s": [60.0], "counts": {"pass": 30}},
             "torchrun@2.13": {"wall_s": [40.0], "counts": {"pass": 10, "fail": 20}},
             "torchrun@1.13": {"wall_s": [130.0], "counts": {"pass": 31}}}
        row = table.result_rows({"suite": c})[0]
        self.assertNotIn("torchrun@2.13", row.tr)
        self.assertEqual(row.tr["torchrun@1.13"], 130.0)
        self.assertIn("no figure: 20 failed", row.note)


class Goals(unittest.TestCase):
    def by_section(self, r, runs=None):
        return {g["section"]: g for g in table.goals(r, runs)}

    def test_a_tenth_of_torchrun_2_13_met_and_missed(self):
        self.assertTrue(self.by_section({"crash": crash(5.0, 60.0)})["crash"]["met"])
        missed = self.by_section({"crash": crash(8.0, 60.0)})["crash"]
        self.assertFalse(missed["met"])
        self.assertEqual(missed["bound"], 6.0)

    def test_without_a_2x_torchrun_the_first_goal_is_not_decided(self):
        c = crash(5.0, 60.0)
        del c["torchrun@2.13"]
        g = self.by_section({"crash": c})["crash"]
        self.assertIsNone(g["met"])
        self.assertIn("no torchrun 2.x", g["why"])

    def test_term_idle_launch(self):
        r = {"term_ignoring": {"faultline": [{"all_reaped_ms": 1150.0}], "grace_s": 1},
             "idle": {"faultline": [0.0, 2.0, 2.0]},
             "launch": {"started_faultline": [30.0], "started_floor": [24.0]}}
        g = self.by_section(r)
        self.assertFalse(g["term"]["met"])  # 1150 > 1000 + 100
        self.assertFalse(g["idle"]["met"])  # median 2.0: "< 2 %" misses
        self.assertTrue(g["launch"]["met"])  # 30 <= 1.5 x 24
        self.assertIsNone(self.by_section({})["launch"]["met"])

    def test_a_goal_measured_under_load_says_so(self):
        g = self.by_section({"crash": crash(5.0, 60.0)}, {"crash": run_info(3.5)})["crash"]
        self.assertEqual(g["under_load"], 3.5)
        self.assertIn("figures taken under load", table.goals_md([g]))


def adaptive(adaptive_ms, fixed_ms):
    rep = lambda ms, a: {"detected_ms": ms, "report_ms": None if ms is None else ms + 900.0, "adaptive": a,
                         "root_cause": ["hung_collective", 1]}
    return {"adaptive": [rep(adaptive_ms, True)], "fixed": [rep(fixed_ms, False)], "world": 3, "step_ms": 50,
            "fault_step": 40, "hang_timeout_s": 10}


class Adaptive(unittest.TestCase):
    def test_rows_side_by_side_and_the_one_second_goal(self):
        rows = table.result_rows({"adaptive": adaptive(640.0, 10050.0)})
        self.assertEqual([r.fl for r in rows], [640.0, 10050.0])
        self.assertIn("met", rows[0].goal_text())
        self.assertEqual(rows[1].goal_text(), "")
        self.assertIn("by the adaptive trigger in 1", rows[0].note)
        g = {x["section"]: x for x in table.goals({"adaptive": adaptive(1200.0, 10050.0)})}["adaptive"]
        self.assertFalse(g["met"])
        self.assertIn("fixed --hang-timeout 10 alone 10050 ms", g["detail"])
        self.assertIsNone({x["section"]: x for x in table.goals({})}["adaptive"]["met"])

    def test_a_repetition_read_from_its_run_directory(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "ranks", "1"))
            with open(os.path.join(d, "ranks", "1", "events.jsonl"), "w") as f:
                f.write('{"t":1000000000,"rank":1,"pid":2,"ev":"step_begin","step":40}\n')
                f.write('{"t":2000000000,"rank":1,"pid":2,"ev":"fault","kind":"hung_collective","step":40}\n')
            with open(os.path.join(d, "report.json"), "w") as f:
                json.dump({"root_cause": {"kind": "hung_collective", "rank": 1}}, f)
            with open(os.path.join(d, "supervisor.json"), "w") as f:
                json.dump({"trigger": {"t_ns": 2_700_000_000, "detail": "adaptive: ranks 0,2 waited 612 ms"}}, f)
            row = side_by_side.adaptive_row(d, 3_500_000_000)
            self.assertEqual(row["detected_ms"], 700.0)
            self.assertEqual(row["report_ms"], 1500.0)
            self.assertTrue(row["adaptive"])
            self.assertNotIn("error", row)
            with open(os.path.join(d, "report.json"), "w") as f:
                json.dump({"root_cause": {"kind": "timeout", "rank": None}}, f)
            self.assertIsNone(side_by_side.adaptive_row(d, 3_500_000_000)["detected_ms"])

    def test_the_section_is_one_of_bench_run(self):
        self.assertIn("adaptive", load_bench_run().SECTIONS)


class Render(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bench = load_bench_run()

    def results(self, sections, runs):
        return {"machine": {"cpus": 2, "mem_total_mib": 1, "kernel": "k", "commit": "abc", "when": "now"},
                "sections": sections, "runs": runs}

    def test_load_above_one_warns_per_section(self):
        md, _, _ = self.bench.render(self.results({"crash": crash(5.0, 60.0)}, {"crash": run_info(1.4)}))
        self.assertIn("Warning: figures taken under load** in `crash`", md)
        md, _, _ = self.bench.render(self.results({"crash": crash(5.0, 60.0)}, {"crash": run_info(0.4)}))
        self.assertNotIn("figures taken under load", md)

    def test_an_old_result_file_reads_as_torchrun_1_13(self):
        old = self.results({
            "crash": {"faultline": crash(5.0, 1)["faultline"], "torchrun": crash(5.0, 1)["torchrun@1.13"]},
            "launch": {"floor": [20.0], "faultline": [40.0], "torchrun": [6000.0], "started_floor": [24.0],
                       "started_faultline": [44.0], "started_torchrun": [1500.0]}},
            {"crash": run_info(0.5), "launch": run_info(0.5)})
        new = self.bench.upgrade(old)
        self.assertIn("torchrun@1.13", new["sections"]["crash"])
        self.assertNotIn("torchrun", new["sections"]["crash"])
        self.assertEqual(new["sections"]["launch"]["started_torchrun@1.13"], [1500.0])
        md, rows, _ = self.bench.render(new)
        self.assertIn("| torchrun@1.13 | ratio 1.13 |", md)
        self.assertNotIn("torchrun@2.13", md)
        self.assertIn("recorded as \"torchrun\"", md)


if __name__ == "__main__":
    unittest.main()
