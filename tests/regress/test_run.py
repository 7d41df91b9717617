"""Tests of what `regress run` makes of the tools' JSON, and of the committed suite and baseline."""
import json
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from regress_lib.calibration import resolve_name  # noqa: E402
from regress_lib.errors import UsageError  # noqa: E402
from regress_lib.results import load_results  # noqa: E402
from regress_lib.run import _graph_figures, _numerics  # noqa: E402
from regress_lib.suite import load_suite  # noqa: E402
from regress_lib.tools import ToolError  # noqa: E402

SUITE = REPO / "results" / "suite.json"
BASELINE = REPO / "results" / "regress" / "baseline.json"


class TestToolOutput(unittest.TestCase):
    def test_numerics_folds_nodes_per_op(self):
        report = {"nodes": [
            {"index": 3, "op": "mul_mat", "nmse": 1e-9, "tolerance": 5e-4, "ok": True},
            {"index": 7, "op": "mul_mat", "nmse": 2e-8, "tolerance": 5e-4, "ok": True},
            {"index": 9, "op": "rope", "skipped": "SIM0 does not support rope"},
            {"index": 11, "op": "add", "nmse": "nan", "tolerance": 1e-7, "ok": False},
        ]}
        self.assertEqual(_numerics(report), {
            "mul_mat": {"worst_nmse": 2e-8, "tolerance": 5e-4, "n_nodes": 2, "n_fail": 0, "n_skipped": 0},
            "rope": {"worst_nmse": None, "tolerance": None, "n_nodes": 1, "n_fail": 0, "n_skipped": 1},
            "add": {"worst_nmse": None, "tolerance": 1e-7, "n_nodes": 1, "n_fail": 1, "n_skipped": 0},
        })

    def test_graph_figures_need_every_deterministic_field(self):
        with self.assertRaises(ToolError):
            _graph_figures({"n_nodes": 1, "n_splits": 1})


class TestCommittedFiles(unittest.TestCase):
    def test_calibration_names_are_benchmarks_graph_bench_registers(self):
        # graph-bench's read probe is named by thread count since 2026-12-07; a name it no longer
        # registers leaves every run uncalibrated (only a note in the gate's output).
        sources = (REPO / "apps" / "graph-bench").glob("*.cpp")
        registered = "".join(p.read_text() for p in sources)
        for key, name in load_suite(SUITE).calibration.benchmarks.items():
            resolved = resolve_name(name, cpus=2)
            self.assertNotIn("{", resolved, key)
            base = resolved.split("/")[0]
            self.assertIn(f"({base})", registered.replace("BENCHMARK(", "(").replace("BENCHMARK_CAPTURE(", "("), key)
            if base == "BM_ReadBandwidth":
                self.assertEqual(resolved, "BM_ReadBandwidth/threads:2/real_time", key)
    def test_suite_loads(self):
        suite = load_suite(SUITE)
        self.assertTrue(any(c.needs_gpu for c in suite.cases), "the suite has CUDA cases")

    def test_baseline_has_every_case_that_needs_no_gpu(self):
        # A case added to the suite without `scripts/regress update` would go unchecked.
        if not BASELINE.exists():
            self.skipTest(f"{BASELINE} not written yet")
        baseline = load_results(BASELINE)
        for case in load_suite(SUITE).cases:
            if not case.needs_gpu:
                self.assertEqual(baseline["cases"].get(case.name, {}).get("status"), "ok", case.name)

    def test_bad_suite_is_a_usage_error_naming_the_field(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "suite.json"
            path.write_text(json.dumps({"calibration": {"benchmarks": {"x": "BM_X"}},
                                        "cases": [{"name": "a", "config": "c.json", "backends": ["CPU"],
                                                   "record": ["numerics"]}]}))
            with self.assertRaisesRegex(UsageError, "/cases/0/compare"):
                load_suite(path)


if __name__ == "__main__":
    unittest.main()
