"""The gate on a busy machine: what `ratio` means, cases timed under load, the tools' warnings in the log.

A shared machine once gave 5 SLOWER timings with a raw ratio of 72 and a machine factor of 1.98:
other work had taken the CPUs from the suite's threads. These tests pin down what the gate does
instead: the table's ratio is new/base as measured and the machine factor has its own column; a
case timed under load is timed again a bounded number of times, then marked, and compare reports
its timing without gating it; the tools' busy-machine warnings reach the regress log.
"""
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
REGRESS = REPO / "scripts" / "regress"
BASE = HERE / "data" / "base.json"

sys.path.insert(0, str(REPO / "scripts"))
from regress_lib.compare import compare  # noqa: E402
from regress_lib.load import LoadPolicy, load_record  # noqa: E402
from regress_lib.report import to_json, to_markdown  # noqa: E402
from regress_lib.run import run_case  # noqa: E402
from regress_lib.suite import Case  # noqa: E402

BUSY_WARNING = ("graph-run: warning: 3 other tasks are running on this machine's 2 CPUs: timings with 2 threads "
                "will contend with them (try -t 1)")


def load(path):
    return json.loads(Path(path).read_text())


def timing_row(comparison, case="timing-case"):
    return next(r for r in comparison.rows if r.case == case and r.category == "timing")


def the_busy_machine():
    """BASE against a run 72x slower on a machine whose calibration moved 1.98x (the issue's figures)."""
    new = load(BASE)
    new["cases"]["timing-case"]["timing"]["min_ms"] *= 72
    new["calibration"] = {k: v * 1.98 for k, v in new["calibration"].items()}
    return new


class TestRatioColumns(unittest.TestCase):
    def test_ratio_is_new_over_base_and_the_machine_factor_has_its_own_column(self):
        row = timing_row(compare(load(BASE), the_busy_machine()))
        self.assertAlmostEqual(row.ratio, 72.0)
        self.assertAlmostEqual(row.machine, 1.98)
        self.assertAlmostEqual(row.corrected, 72.0 / 1.98)
        self.assertEqual(row.flag, "slower")  # the verdict reads ratio / machine: 36.4 > 1.25
        self.assertIn("36.36 after the machine factor, threshold 1.25", row.note)

    def test_the_table_shows_ratio_machine_and_their_quotient(self):
        text = to_markdown(compare(load(BASE), the_busy_machine()), "base.json", "new.json")
        self.assertIn("| case | metric | base | new | ratio | machine | ratio / machine | flag |", text)
        self.assertIn("| timing-case | min_ms | 44 | 3.17e+03 | 72.00 | 1.98 | 36.36 | SLOWER: ", text)
        self.assertIn("machine factor 1.98 (the machine column", text)
        # Rows that are no timing have no machine factor.
        self.assertIn("| timing-case | n_splits | 1 | 1 | 1.00 | - | - |  |", text)

    def test_json_rows_carry_the_three_figures(self):
        rows = json.loads(to_json(compare(load(BASE), the_busy_machine()), "b", "n"))["rows"]
        timing = next(r for r in rows if r["case"] == "timing-case" and r["category"] == "timing")
        self.assertAlmostEqual(timing["ratio"], 72.0)
        self.assertAlmostEqual(timing["machine"], 1.98)
        self.assertAlmostEqual(timing["corrected"], 72.0 / 1.98)

    def test_no_calibration_leaves_the_machine_column_empty(self):
        new = load(BASE)
        new["calibration"] = None
        new["cases"]["timing-case"]["timing"]["min_ms"] *= 2
        row = timing_row(compare(load(BASE), new))
        self.assertIsNone(row.machine)
        self.assertAlmostEqual(row.ratio, 2.0)
        self.assertAlmostEqual(row.corrected, 2.0)


class TestUnderLoadInCompare(unittest.TestCase):
    def marked(self, side):
        data = the_busy_machine() if side == "new" else load(BASE)
        data["cases"]["timing-case"]["timing"].update({
            "under_load": True, "attempts": 3,
            "load": load_record(3, 2, 2, 2)})
        return data

    def test_a_slower_timing_under_load_is_reported_not_gated(self):
        comparison = compare(load(BASE), self.marked("new"))
        row = timing_row(comparison)
        self.assertEqual((row.flag, row.gated, row.under_load), ("under load", False, True))
        self.assertIn("new timed under load (3 other tasks ran beside 2 threads on 2 CPUs, 3 timings)", row.note)
        self.assertEqual(comparison.regressions, [])
        self.assertTrue(any(n.startswith("timed under load") and "timing-case" in n for n in comparison.notes))

    def test_a_base_timed_under_load_is_not_gated_either(self):
        new = load(BASE)
        new["cases"]["timing-case"]["timing"]["min_ms"] *= 2
        row = timing_row(compare(self.marked("base"), new))
        self.assertEqual((row.flag, row.gated), ("under load", False))
        self.assertIn("base timed under load", row.note)

    def test_the_table_says_reported_only(self):
        text = to_markdown(compare(load(BASE), self.marked("new")), "b", "n")
        self.assertIn("under load (reported only): 36.36 after the machine factor", text)
        self.assertIn("Result: no regressions; reported only: 1 (under load).", text)

    def test_the_same_slowdown_without_the_mark_still_fails(self):
        self.assertEqual(len(compare(load(BASE), the_busy_machine()).regressions), 1)


class ScriptedTools:
    """graph-run's JSON with `others_running` taken in turn from OTHERS, and a warning when busy."""

    def __init__(self, others, min_ms):
        self.others, self.min_ms, self.calls = list(others), list(min_ms), 0

    def run_json(self, tool, args, ok_codes=(0,), warnings=None):
        assert tool == "graph-run", tool
        i = self.calls
        self.calls += 1
        if warnings is not None and self.others[i] > 0:
            warnings.append(BUSY_WARNING)
        return 0, {"runs": [{"time_ms": {"median": self.min_ms[i] + 0.1, "min": self.min_ms[i]}, "reps": 5,
                             "threads": 2, "others_running": self.others[i]}]}


CASE = Case(name="decoder-cpu", config="configs/default.json", backends=["CPU"], record=["timing"], reps=5)


class TestTimedAgainUnderLoad(unittest.TestCase):
    def run_case(self, tools, retries=2, sample=None):
        lines = []
        policy = LoadPolicy(retries=retries, wait_s=0, sample=sample, cpus=2)
        entry = run_case(tools, CASE, 2, ["CPU"], policy, lines.append)
        return entry, lines

    def test_a_quiet_machine_times_once(self):
        tools = ScriptedTools([0], [1.0])
        entry, lines = self.run_case(tools)
        self.assertEqual(tools.calls, 1)
        self.assertEqual((entry["timing"]["attempts"], entry["timing"]["under_load"]), (1, False))
        self.assertEqual(entry["timing"]["load"], {"others_before": 0, "others_after": None, "threads": 2,
                                                   "cpus": 2, "busy": False})
        self.assertNotIn("warnings", entry)
        self.assertEqual(lines, [])

    def test_the_first_timing_without_load_is_kept(self):
        tools = ScriptedTools([1, 0, 0], [9.0, 1.0, 0.5])
        entry, lines = self.run_case(tools)
        self.assertEqual(tools.calls, 2)
        timing = entry["timing"]
        self.assertEqual((timing["min_ms"], timing["attempts"], timing["under_load"]), (1.0, 2, False))
        self.assertEqual(lines, [f"decoder-cpu: {BUSY_WARNING}",
                                 "decoder-cpu: timed while 1 other task ran beside 2 threads on 2 CPUs; "
                                 "timing again in 0 s (retry 1 of 2)"])
        self.assertEqual(entry["warnings"], [BUSY_WARNING])

    def test_retries_are_bounded_then_the_fastest_is_kept_and_marked(self):
        tools = ScriptedTools([2, 3, 2, 0], [5.0, 3.0, 4.0, 1.0])
        entry, lines = self.run_case(tools, retries=2)
        self.assertEqual(tools.calls, 3, "1 timing and 2 retries, then stop")
        timing = entry["timing"]
        self.assertEqual((timing["min_ms"], timing["attempts"], timing["under_load"]), (3.0, 3, True))
        self.assertTrue(timing["load"]["busy"])
        # Each timing's warning as it came, then the retry it caused; no retry after the last.
        self.assertEqual([line.split(": ")[1] for line in lines],
                         ["graph-run", "timed while 2 other tasks ran beside 2 threads on 2 CPUs; timing again in 0 s "
                          "(retry 1 of 2)", "graph-run", "timed while 3 other tasks ran beside 2 threads on 2 CPUs; "
                          "timing again in 0 s (retry 2 of 2)", "graph-run"])
        self.assertEqual(entry["warnings"], [BUSY_WARNING], "a warning repeated by each timing is kept once")

    def test_no_retries_marks_at_once(self):
        tools = ScriptedTools([2], [5.0])
        entry, _ = self.run_case(tools, retries=0)
        self.assertEqual((tools.calls, entry["timing"]["under_load"]), (1, True))

    def test_load_after_graph_run_counts_too(self):
        # graph-run saw a quiet machine; other work started during its computes.
        tools = ScriptedTools([0, 0], [5.0, 1.0])
        samples = iter([1, 0])
        entry, _ = self.run_case(tools, sample=lambda: next(samples))
        self.assertEqual(tools.calls, 2)
        self.assertEqual(entry["timing"]["load"]["others_after"], 0)
        self.assertEqual(entry["timing"]["min_ms"], 1.0)

    def test_fewer_threads_fit_beside_the_others(self):
        self.assertFalse(load_record(1, 1, 1, 2)["busy"])
        self.assertTrue(load_record(1, 1, 2, 2)["busy"])
        self.assertFalse(load_record(None, None, 2, 2)["busy"], "nothing known: not marked")


FAKE_TOOL = textwrap.dedent('''\
    #!{python}
    # A stand-in for one of the tools, for `regress run`: always a busy machine, busier than any real
    # one (50 others), so that the gate's own sample after each timing never changes the figures.
    import json, sys
    tool = sys.argv[0].rsplit("/", 1)[-1]
    args = sys.argv[1:]
    if tool == "graph-run" and "--list-devices" in args:
        print(json.dumps([{{"name": "CPU"}}]))
    elif tool == "graph-run":
        print("{warning}", file=sys.stderr)
        print(json.dumps({{"runs": [{{"time_ms": {{"median": 2.0, "min": 1.5}}, "reps": 3, "threads": 2,
                                     "others_running": 50}}]}}))
    elif tool == "sched-profile":
        print(json.dumps({{"n_nodes": 3, "n_splits": 1, "n_copies": 0, "copy_bytes": 0, "copies_by_pair": {{}},
                          "buffer_bytes": {{"CPU": 64}}}}))
    elif tool == "graph-bench":
        names = args[0].split("=", 1)[1].strip("^$()").replace("\\\\", "").split("|")
        print(json.dumps({{"benchmarks": [{{"name": n, "real_time": 1.0, "time_unit": "ms"}} for n in names]}}))
    else:
        sys.exit(f"{{tool}}: unexpected")
''')


class TestRunLog(unittest.TestCase):
    """`regress run` end to end over stand-in tools on a machine that stays busy."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        tmp = Path(cls.tmp.name)
        apps = tmp / "build" / "apps"
        apps.mkdir(parents=True)
        for tool in ("graph-run", "sched-profile", "backend-compare", "graph-bench"):
            path = apps / tool
            path.write_text(FAKE_TOOL.format(python=sys.executable, warning=BUSY_WARNING))
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
        suite = {"threads": 2, "reps": 3, "calibration": {"benchmarks": {"memcpy_ms": "BM_Memcpy"}},
                 "cases": [{"name": "busy-case", "config": "configs/default.json", "backends": ["CPU"],
                            "record": ["graph", "timing"]}]}
        (tmp / "suite.json").write_text(json.dumps(suite))
        cls.out = tmp / "run.json"
        cls.proc = subprocess.run([sys.executable, str(REGRESS), "run", "--build", str(tmp / "build"), "--suite",
                                   str(tmp / "suite.json"), "-o", str(cls.out), "--load-retries", "1",
                                   "--load-wait", "0"], capture_output=True, text=True,
                                  env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_run_succeeds(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)

    def test_the_tools_warning_reaches_the_log(self):
        self.assertIn(f"regress: busy-case: {BUSY_WARNING}\n", self.proc.stderr)

    def test_the_log_says_the_case_was_timed_again_then_marked(self):
        log = self.proc.stderr
        self.assertIn("regress: busy-case: timed while 50 other tasks ran beside 2 threads on ", log)
        self.assertIn("; timing again in 0 s (retry 1 of 1)", log)
        self.assertIn("regress: [1/1] busy-case: ok, timed under load (2 timings, the last while 50 other tasks ran",
                      log)
        self.assertIn("regress: warning: 1 of 1 timed cases stayed under load after up to 1 retry (busy-case): "
                      "marked \"under_load\"", log)

    def test_the_run_file_records_the_load_check(self):
        timing = load(self.out)["cases"]["busy-case"]["timing"]
        self.assertEqual((timing["attempts"], timing["under_load"]), (2, True))
        self.assertEqual({k: timing["load"][k] for k in ("others_before", "threads", "busy")},
                         {"others_before": 50, "threads": 2, "busy": True})
        self.assertEqual(load(self.out)["cases"]["busy-case"]["warnings"], [BUSY_WARNING])

    def test_compare_reports_the_marked_case_without_failing(self):
        new = load(self.out)
        new["cases"]["busy-case"]["timing"]["min_ms"] *= 100
        slow = Path(self.tmp.name) / "slow.json"
        slow.write_text(json.dumps(new))
        proc = subprocess.run([sys.executable, str(REGRESS), "compare", str(self.out), str(slow), "--gate", "timing"],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("under load (reported only)", proc.stdout)

    def test_bad_load_options_are_usage_errors(self):
        proc = subprocess.run([sys.executable, str(REGRESS), "run", "--load-retries", "-1"], capture_output=True,
                              text=True)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("-1 is too small (at least 0)", proc.stderr)


if __name__ == "__main__":
    unittest.main()
