"""Tests of scripts/regress compare: flags, exit codes, calibration, gates, formats, usage errors.

data/base.json is a baseline; data/doctored.json is the same with one split more, one NMSE over
tolerance and one timing 2x slower (calibration unchanged), which must give exactly those flags.
"""
import copy
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
REGRESS = REPO / "scripts" / "regress"
BASE = HERE / "data" / "base.json"
DOCTORED = HERE / "data" / "doctored.json"

sys.path.insert(0, str(REPO / "scripts"))
from regress_lib.compare import compare  # noqa: E402


def load(path):
    return json.loads(Path(path).read_text())


def flags(comparison):
    """The flagged rows as (case, category, metric, flag) tuples, for exact comparison."""
    return {(r.case, r.category, r.metric, r.flag) for r in comparison.rows if r.flag}


def regress(*args):
    """Runs scripts/regress with this interpreter (the one that has, or lacks, matplotlib)."""
    return subprocess.run([sys.executable, str(REGRESS), *map(str, args)], capture_output=True, text=True)


EXPECTED_DOCTORED_FLAGS = {
    ("split-case", "deterministic", "n_splits", "changed"),
    ("split-case", "numerics", "nmse mul_mat (tol 5e-04)", "over tolerance"),
    ("timing-case", "timing", "min_ms", "slower"),
}


class TestCompareFlags(unittest.TestCase):
    def test_unchanged_results_give_no_flags(self):
        self.assertEqual(flags(compare(load(BASE), load(BASE))), set())

    def test_doctored_results_give_exactly_three_flags(self):
        self.assertEqual(flags(compare(load(BASE), load(DOCTORED))), EXPECTED_DOCTORED_FLAGS)

    def test_skipped_gpu_case_is_a_note_not_a_flag(self):
        notes = compare(load(BASE), load(BASE)).notes
        self.assertTrue(any(n.startswith("gpu-case: skipped") for n in notes), notes)

    def test_ops_skipped_on_both_sides_have_no_row(self):
        metrics = {r.metric for r in compare(load(BASE), load(BASE)).rows}
        self.assertFalse(any("rope" in m for m in metrics), metrics)

    def test_any_change_of_a_deterministic_figure_is_flagged(self):
        new = load(BASE)
        new["cases"]["split-case"]["graph"]["buffer_bytes"]["SIM0"] -= 64  # smaller is a change too
        new["cases"]["split-case"]["graph"]["copies_by_pair"]["SIM1->CPU"] = {"copies": 1, "bytes": 4}
        self.assertEqual(flags(compare(load(BASE), new)), {
            ("split-case", "deterministic", "buffer_bytes.SIM0", "changed"),
            ("split-case", "deterministic", "copies_by_pair.SIM1->CPU.copies", "changed"),
            ("split-case", "deterministic", "copies_by_pair.SIM1->CPU.bytes", "changed"),
        })

    def test_nmse_growth_within_tolerance_is_not_flagged(self):
        new = load(BASE)
        new["cases"]["split-case"]["numerics"]["mul_mat"]["worst_nmse"] = 4e-4  # 400x, under 5e-4
        self.assertEqual(flags(compare(load(BASE), new)), set())

    def test_a_failed_node_is_flagged_even_without_a_finite_nmse(self):
        new = load(BASE)
        new["cases"]["split-case"]["numerics"]["rms_norm"].update({"worst_nmse": None, "n_fail": 1})
        self.assertEqual(flags(compare(load(BASE), new)),
                         {("split-case", "numerics", "nmse rms_norm (tol 1e-07)", "over tolerance")})

    def test_a_case_that_fails_to_run_is_flagged(self):
        new = load(BASE)
        new["cases"]["timing-case"] = {"status": "error", "note": "graph-run exited 2: boom"}
        comparison = compare(load(BASE), new, gates=())
        self.assertEqual(flags(comparison), {("timing-case", "case", "status", "error")})
        self.assertEqual(len(comparison.regressions), 1, "errors are gated whatever --gate says")

    def test_a_new_case_that_fails_is_flagged_without_a_baseline(self):
        new = load(BASE)
        new["cases"]["new-case"] = {"status": "error", "note": "device BLAS not present"}
        self.assertEqual(flags(compare(load(BASE), new)), {("new-case", "case", "status", "error")})

    def test_a_case_without_baseline_is_a_note(self):
        new = load(BASE)
        new["cases"]["new-case"] = copy.deepcopy(new["cases"]["timing-case"])
        comparison = compare(load(BASE), new)
        self.assertEqual(flags(comparison), set())
        self.assertTrue(any(n.startswith("new-case: not in the baseline") for n in comparison.notes))


class TestTimingCalibration(unittest.TestCase):
    """Timings are judged as (new/base) / (calibration new/base), measured in the same runs."""

    def slowed(self, time_factor, calibration_factor):
        new = load(BASE)
        for case in new["cases"].values():
            if "timing" in case:
                case["timing"]["median_ms"] *= time_factor
                case["timing"]["min_ms"] *= time_factor
        new["calibration"] = {k: v * calibration_factor for k, v in new["calibration"].items()}
        return compare(load(BASE), new, threshold=1.25)

    def test_slower_machine_is_not_a_regression(self):
        comparison = self.slowed(2.0, 2.0)
        self.assertEqual(flags(comparison), set())
        self.assertAlmostEqual(comparison.calibration_factor, 2.0)
        timing = [r for r in comparison.rows if r.category == "timing"]
        # ratio is new/base as measured; the verdict reads it divided by the machine factor.
        self.assertTrue(all(abs(r.ratio - 2.0) < 1e-9 for r in timing))
        self.assertTrue(all(abs(r.machine - 2.0) < 1e-9 and abs(r.corrected - 1.0) < 1e-9 for r in timing))

    def test_slower_code_on_the_same_machine_is_flagged(self):
        self.assertEqual({f[3] for f in flags(self.slowed(1.3, 1.0))}, {"slower"})

    def test_faster_machine_exposes_a_hidden_slowdown(self):
        # Same raw time on a machine twice as fast: the code got 2x slower.
        self.assertEqual({f[3] for f in flags(self.slowed(1.0, 0.5))}, {"slower"})

    def test_within_threshold_is_not_flagged(self):
        self.assertEqual(flags(self.slowed(1.2, 1.0)), set())

    def test_missing_calibration_compares_raw_times_with_a_note(self):
        new = load(DOCTORED)
        new["calibration"] = None
        comparison = compare(load(BASE), new)
        self.assertEqual(flags(comparison), EXPECTED_DOCTORED_FLAGS)
        self.assertTrue(any("no calibration" in n for n in comparison.notes))


class TestCommandLine(unittest.TestCase):
    def test_unchanged_exits_0(self):
        proc = regress("compare", BASE, BASE)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("| case | metric | base | new | ratio | machine | ratio / machine | flag |", proc.stdout)
        self.assertIn("Result: no regressions.", proc.stdout)

    def test_doctored_exits_1_with_three_flags(self):
        proc = regress("compare", BASE, DOCTORED)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        for flag in ("CHANGED", "OVER TOLERANCE", "SLOWER"):
            self.assertEqual(proc.stdout.count(flag), 1, flag)

    def test_json_format_lists_the_flags(self):
        proc = regress("compare", BASE, DOCTORED, "--format", "json")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        report = json.loads(proc.stdout)
        self.assertEqual(report["regressions"], 3)
        self.assertEqual({(r["case"], r["category"], r["metric"], r["flag"]) for r in report["rows"] if r["flag"]},
                         EXPECTED_DOCTORED_FLAGS)

    def test_timing_outside_the_gate_is_reported_but_does_not_fail(self):
        new = load(BASE)
        new["cases"]["timing-case"]["timing"]["min_ms"] *= 2
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "slow.json"
            path.write_text(json.dumps(new))
            proc = regress("compare", BASE, path, "--gate", "deterministic,numerics")
            self.assertEqual(proc.returncode, 0, proc.stdout)
            self.assertIn("slower (reported only)", proc.stdout)
            self.assertEqual(regress("compare", BASE, path).returncode, 1)

    def test_doctored_still_fails_on_the_ci_gate(self):
        self.assertEqual(regress("compare", BASE, DOCTORED, "--gate", "deterministic,numerics").returncode, 1)

    def test_only_changed_lists_the_moved_metrics_and_keeps_the_exit_code(self):
        proc = regress("compare", BASE, DOCTORED, "--only-changed", "--format", "json")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        rows = json.loads(proc.stdout)["rows"]
        self.assertTrue(rows)
        self.assertTrue(all(r["flag"] or r["base"] != r["new"] or (r["ratio"] is not None and r["ratio"] != 1)
                            for r in rows), rows)
        self.assertEqual({(r["case"], r["category"], r["metric"], r["flag"]) for r in rows if r["flag"]},
                         EXPECTED_DOCTORED_FLAGS)
        full = json.loads(regress("compare", BASE, DOCTORED, "--format", "json").stdout)["rows"]
        self.assertLess(len(rows), len(full))
        same = regress("compare", BASE, BASE, "--only-changed")
        self.assertEqual(same.returncode, 0, same.stderr)
        self.assertNotIn("| n_splits |", same.stdout)

    def test_time_threshold_option(self):
        self.assertEqual(regress("compare", BASE, DOCTORED, "--gate", "timing", "--time-threshold", "2.5").returncode,
                         0)
        self.assertEqual(regress("compare", BASE, DOCTORED, "--gate", "timing", "--time-threshold", "1.5").returncode,
                         1)


class TestUsageErrors(unittest.TestCase):
    def assert_usage_error(self, proc, text):
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn(text, proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)

    def test_missing_file(self):
        self.assert_usage_error(regress("compare", BASE, HERE / "data" / "no-such.json"), "not found")

    def test_bad_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bad.json"
            path.write_text('{"format": "xbackend-regress/1", "cases": {')
            self.assert_usage_error(regress("compare", path, BASE), "not valid JSON")

    def test_not_a_results_file(self):
        self.assert_usage_error(regress("compare", REPO / "results" / "suite.json", BASE),
                                "not a regress results file")

    def test_bad_case_entry(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bad.json"
            path.write_text(json.dumps({"format": "xbackend-regress/1", "cases": {"x": {"status": "maybe"}}}))
            self.assert_usage_error(regress("compare", BASE, path), "/cases/x/status")

    def test_malformed_figures(self):
        new = load(BASE)
        new["cases"]["timing-case"]["timing"]["min_ms"] = "fast"
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bad.json"
            path.write_text(json.dumps(new))
            self.assert_usage_error(regress("compare", BASE, path), "/cases/timing-case/timing/min_ms")

    def test_unknown_gate(self):
        self.assert_usage_error(regress("compare", BASE, BASE, "--gate", "speed"), "--gate: unknown speed")

    def test_run_filter_that_matches_no_case(self):
        self.assert_usage_error(regress("run", "--filter", "no-such-case*", "-o", "/dev/null"),
                                "--filter no-such-case*: no case matches (cases: ")

    def test_missing_argument(self):
        self.assertEqual(regress("compare", BASE).returncode, 2)


if __name__ == "__main__":
    unittest.main()
