"""Tests of `regress run --shard K/N` and `regress merge`: the assignment, the partial files, the merge's refusals.

No C++ build is needed: FakeTools stands in for the tools with deterministic JSON, so that a
sharded run and an unsharded one must give the same figures.
"""
import copy
import hashlib
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
REGRESS = REPO / "scripts" / "regress"
SUITE = REPO / "results" / "suite.json"
BASELINE = REPO / "results" / "regress" / "baseline.json"
# ctest runs the gate with Debian's python3, as its shebang does; elsewhere this interpreter.
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

sys.path.insert(0, str(REPO / "scripts"))
from regress_lib.compare import compare  # noqa: E402
from regress_lib.errors import UsageError  # noqa: E402
from regress_lib.merge import load_part, merge_parts  # noqa: E402
from regress_lib.run import run_suite  # noqa: E402
from regress_lib.shard import assign_shards, case_weights, parse_shard_spec, select_shard  # noqa: E402
from regress_lib.suite import load_suite  # noqa: E402


def regress(*args):
    return subprocess.run([PYTHON, str(REGRESS), *map(str, args)], capture_output=True, text=True)


def names(n):
    return [f"case-{i:02d}" for i in range(n)]


def loads(shards, weights):
    return [sum(weights[c] for c in shard) for shard in shards]


def optimal_makespan(case_names, weights, n):
    """The heaviest shard of the best split, by trying every split (small inputs only)."""
    best = float("inf")
    for owners in itertools.product(range(n), repeat=len(case_names)):
        per_shard = [0.0] * n
        for name, owner in zip(case_names, owners):
            per_shard[owner] += weights[name]
        best = min(best, max(per_shard))
    return best


class TestShardSpec(unittest.TestCase):
    def test_k_of_n_counts_from_1(self):
        self.assertEqual(parse_shard_spec("1/4"), (1, 4))
        self.assertEqual(parse_shard_spec("4/4"), (4, 4))
        self.assertEqual(parse_shard_spec("1/1"), (1, 1))

    def test_bad_specs_are_usage_errors(self):
        for spec in ("0/4", "5/4", "1/0", "4", "a/b", "-1/4", "1/4/2", ""):
            with self.subTest(spec=spec), self.assertRaisesRegex(UsageError, "--shard"):
                parse_shard_spec(spec)


class TestAssignShards(unittest.TestCase):
    SUITES = {"empty": [], "one": ["only"], "three": names(3), "eleven": names(11), "twenty": names(20),
              "committed": [c.name for c in load_suite(SUITE).cases]}

    def test_every_case_in_exactly_one_shard_for_1_to_7_shards(self):
        for (label, cases), n in itertools.product(self.SUITES.items(), range(1, 8)):
            with self.subTest(suite=label, n=n):
                shards = assign_shards(cases, {c: 1.0 for c in cases}, n)
                self.assertEqual(len(shards), n)
                flat = [c for s in shards for c in s]
                self.assertEqual(sorted(flat), sorted(cases))
                self.assertEqual(len(flat), len(set(flat)))

    def test_deterministic_whatever_the_order_of_names_and_weights(self):
        rng = random.Random(20)
        for (label, cases), n in itertools.product(self.SUITES.items(), range(1, 8)):
            weights = {c: float(rng.choice([0.5, 1.0, 3.0, 7.25])) for c in cases}  # ties on purpose
            expected = assign_shards(cases, weights, n)
            for _ in range(3):
                shuffled = rng.sample(cases, len(cases))
                reordered = {c: weights[c] for c in rng.sample(cases, len(cases))}
                with self.subTest(suite=label, n=n):
                    self.assertEqual(assign_shards(shuffled, reordered, n), expected)

    def test_equal_weights_give_shard_sizes_within_one(self):
        for (label, cases), n in itertools.product(self.SUITES.items(), range(1, 8)):
            with self.subTest(suite=label, n=n):
                sizes = [len(s) for s in assign_shards(cases, {c: 1.0 for c in cases}, n)]
                self.assertLessEqual(max(sizes) - min(sizes), 1)

    def test_more_shards_than_cases_leaves_the_last_shards_empty(self):
        self.assertEqual(assign_shards(["b", "a", "c"], {}, 5), [["a"], ["b"], ["c"], [], []])

    def test_longest_processing_time_rule(self):
        # The textbook case where LPT is not optimal (9 is): the rule, not a search, decides.
        weights = {"a": 5, "b": 4, "c": 3, "d": 3, "e": 3}
        self.assertEqual(assign_shards(list(weights), weights, 2), [["a", "d"], ["b", "c", "e"]])

    def test_heaviest_shard_within_the_lpt_bound(self):
        rng = random.Random(7)
        for trial, n in itertools.product(range(12), range(1, 5)):
            cases = names(rng.randint(1, 8))
            weights = {c: rng.uniform(0.01, 10.0) for c in cases}
            heaviest = max(loads(assign_shards(cases, weights, n), weights))
            best = optimal_makespan(cases, weights, n)
            with self.subTest(trial=trial, n=n):
                self.assertLessEqual(heaviest, (4 / 3 - 1 / (3 * n)) * best + 1e-9)

    def test_heaviest_shard_within_the_list_scheduling_bound_on_larger_suites(self):
        rng = random.Random(11)
        for n in range(1, 8):
            cases = names(40)
            weights = {c: rng.expovariate(1.0) for c in cases}
            heaviest = max(loads(assign_shards(cases, weights, n), weights))
            total, largest = sum(weights.values()), max(weights.values())
            with self.subTest(n=n):
                self.assertLessEqual(heaviest, total / n + (1 - 1 / n) * largest + 1e-9)


class TestCaseWeights(unittest.TestCase):
    def write(self, tmp, cases):
        path = Path(tmp) / "baseline.json"
        path.write_text(json.dumps({"format": "xbackend-regress/1", "cases": cases}))
        return path

    def test_elapsed_time_then_median_then_1(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = self.write(tmp, {"timed": {"status": "ok", "elapsed_s": 4.5, "timing": {"median_ms": 2.0}},
                                    "old": {"status": "ok", "timing": {"median_ms": 2.0}},
                                    "untimed": {"status": "ok"}})
            self.assertEqual(case_weights(["timed", "old", "untimed", "absent"], path),
                             {"timed": 4.5, "old": 2.0, "untimed": 1.0, "absent": 1.0})

    def test_missing_baseline_gives_equal_weights(self):
        self.assertEqual(case_weights(["a", "b"], HERE / "data" / "no-such.json"), {"a": 1.0, "b": 1.0})

    def test_invalid_baseline_is_a_usage_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bad.json"
            path.write_text("{")
            with self.assertRaisesRegex(UsageError, "not valid JSON"):
                case_weights(["a"], path)

    def test_the_committed_baseline_weighs_every_case(self):
        if not BASELINE.exists():
            self.skipTest(f"{BASELINE} not written yet")
        cases = [c.name for c in load_suite(SUITE).cases]
        weights = case_weights(cases, BASELINE)
        self.assertEqual(set(weights), set(cases))
        self.assertTrue(all(w >= 0 for w in weights.values()), weights)


class FakeTools:
    """The tools' JSON, made up from their arguments: the same case gives the same figures in any run."""

    def __init__(self, devices=("CPU", "BLAS", "SIM0", "SIM1")):
        self.devices = list(devices)

    @staticmethod
    def _seed(args):
        return int(hashlib.sha256(" ".join(args).encode()).hexdigest()[:8], 16)

    def run_json(self, tool, args, ok_codes=(0,), warnings=None):
        s = self._seed(args)
        if tool == "graph-bench":
            names = args[0].split("=", 1)[1].strip("^$()").replace("\\", "").split("|")
            return 0, {"benchmarks": [{"name": n, "real_time": 1.5, "time_unit": "ms"} for n in names]}
        if tool == "sched-profile":
            return 0, {"n_nodes": s % 100, "n_splits": s % 7, "n_copies": s % 5, "copy_bytes": s % 4096,
                       "copies_by_pair": {"CPU->SIM0": {"copies": s % 5, "bytes": s % 4096}},
                       "buffer_bytes": {"CPU": s % 65536}}
        if tool == "graph-run":
            return 0, {"runs": [{"time_ms": {"median": 1.0 + s % 10, "min": 0.5 + s % 10}, "reps": 5}]}
        if tool == "backend-compare":
            return 0, {"nodes": [{"op": "mul_mat", "nmse": (s % 97) * 1e-9, "tolerance": 5e-4, "ok": True}]}
        raise AssertionError(f"unexpected tool {tool}")

    def device_names(self):
        return self.devices


def fake_run(suite, build_dir):
    return run_suite(suite, FakeTools(), build_dir, REPO, lambda line: None)


def without_elapsed(cases):
    """Per-case figures without the wall time, which differs between any two runs."""
    return {name: {k: v for k, v in case.items() if k != "elapsed_s"} for name, case in cases.items()}


class ShardedFakeRuns(unittest.TestCase):
    """A full fake run of the committed suite and its N partial runs, written to files."""
    N = 3

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = Path(cls.tmp.name)
        cls.suite = load_suite(SUITE)
        cls.full = fake_run(cls.suite, cls.dir)
        cls.full_path = cls.dir / "full.json"
        cls.full_path.write_text(json.dumps(cls.full))
        weights = case_weights([c.name for c in cls.suite.cases], BASELINE)
        cls.parts = []
        for k in range(1, cls.N + 1):
            part_suite, block = select_shard(cls.suite, k, cls.N, weights)
            results = fake_run(part_suite, cls.dir)
            results["shard"] = block
            path = cls.dir / f"part-{k}.json"
            path.write_text(json.dumps(results))
            cls.parts.append((path, results))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()


class TestPartialResults(ShardedFakeRuns):
    def test_each_case_entry_records_its_wall_time(self):
        self.assertTrue(all(isinstance(c["elapsed_s"], float) for c in self.full["cases"].values()))

    def test_shard_object(self):
        suite_order = [c.name for c in self.suite.cases]
        digest = "sha256:" + hashlib.sha256(SUITE.read_bytes()).hexdigest()
        for k, (path, part) in enumerate(self.parts, 1):
            shard = part["shard"]
            self.assertEqual((shard["index"], shard["count"]), (k, self.N))
            self.assertEqual(shard["suite_cases"], suite_order)
            self.assertEqual(shard["suite_hash"], digest)
            self.assertEqual(shard["cases"], [c for c in suite_order if c in shard["cases"]], "suite order")
            self.assertEqual(list(part["cases"]), shard["cases"])
            self.assertEqual(part["machine"]["commit"], self.full["machine"]["commit"])
            self.assertIsNotNone(part["calibration"], "every shard calibrates")
            load_part(path)  # raises if the file is not a valid partial results file


class TestMerge(ShardedFakeRuns):
    def test_merge_in_any_order_equals_the_unsharded_run(self):
        for order in itertools.permutations(self.parts):
            merged = merge_parts(list(order))
            self.assertEqual(list(merged["cases"]), list(self.full["cases"]), "suite order")
            self.assertEqual(without_elapsed(merged["cases"]), without_elapsed(self.full["cases"]))
            self.assertEqual([k for k in merged if k != "shards"], list(self.full), "an unsharded run's schema")
            self.assertNotIn("shard", merged)
            self.assertEqual([s["index"] for s in merged["shards"]], list(range(1, self.N + 1)))
            self.assertEqual(merged["calibration"], self.parts[0][1]["calibration"], "shard 1's calibration")
            comparison = compare(self.full, merged)
            self.assertEqual([r for r in comparison.rows if r.flag], [])

    def test_merged_file_is_the_same_whatever_the_order_of_the_arguments(self):
        outputs = []
        for i, order in enumerate((self.parts, self.parts[::-1], self.parts[1:] + self.parts[:1])):
            out = self.dir / f"merged-{i}.json"
            proc = regress("merge", *[p for p, _ in order], "-o", out)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            outputs.append(out.read_bytes())
        self.assertEqual(len(set(outputs)), 1)

    def test_compare_reads_the_merged_file(self):
        out = self.dir / "merged.json"
        self.assertEqual(regress("merge", *[p for p, _ in self.parts], "-o", out).returncode, 0)
        proc = regress("compare", self.full_path, out, "--gate", "deterministic,numerics")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("Result: no regressions.", proc.stdout)

    def test_a_dirty_part_makes_the_merge_dirty(self):
        parts = copy.deepcopy(self.parts)
        for _, data in parts:
            data["machine"]["dirty"] = False
        parts[-1][1]["machine"]["dirty"] = True
        self.assertIs(merge_parts(parts)["machine"]["dirty"], True)


class TestMergeRefusals(ShardedFakeRuns):
    """Each way parts can fail to make one run: exit 2, one line naming the files, no traceback."""

    def write(self, name, data):
        path = self.dir / name
        path.write_text(json.dumps(data))
        return path

    def part(self, k):
        return copy.deepcopy(self.parts[k - 1][1])

    def assert_refused(self, paths, *texts):
        out = self.dir / f"{self._testMethodName}.merged.json"
        proc = regress("merge", *paths, "-o", out)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
        for text in texts:
            self.assertIn(str(text), proc.stderr)
        self.assertFalse(out.exists(), "a refused merge writes nothing")
        return proc.stderr

    def test_different_commits(self):
        other = self.part(2)
        other["machine"]["commit"] = "f" * 40
        bad = self.write("other-commit.json", other)
        self.assert_refused([self.parts[0][0], bad, self.parts[2][0]], "different commits", bad, self.parts[0][0])

    def test_different_suite_files(self):
        other = self.part(3)
        other["shard"]["suite_hash"] = "sha256:" + "0" * 64
        bad = self.write("other-suite.json", other)
        self.assert_refused([self.parts[0][0], self.parts[1][0], bad], "different suite files", bad)

    def test_different_case_lists(self):
        other = self.part(2)
        # A case of the suite that this part did not run, left out of its list (as another --filter would).
        dropped = next(c for c in reversed(other["shard"]["suite_cases"]) if c not in other["shard"]["cases"])
        other["shard"]["suite_cases"] = [c for c in other["shard"]["suite_cases"] if c != dropped]
        bad = self.write("other-filter.json", other)
        self.assert_refused([self.parts[0][0], bad, self.parts[2][0]], "different lists of cases", bad)

    def test_different_shard_counts(self):
        other = self.part(2)
        other["shard"]["count"] = 4
        bad = self.write("of-four.json", other)
        self.assert_refused([self.parts[0][0], bad, self.parts[2][0]], "different splits", bad)

    def test_a_case_in_two_parts(self):
        other = self.part(2)
        stolen = self.parts[0][1]["shard"]["cases"][0]
        other["shard"]["cases"].append(stolen)
        other["cases"][stolen] = self.parts[0][1]["cases"][stolen]
        bad = self.write("overlap.json", other)
        self.assert_refused([self.parts[0][0], bad, self.parts[2][0]], "both ran", stolen, bad, self.parts[0][0])

    def test_missing_cases_are_named(self):
        lost = self.parts[1][1]["shard"]["cases"]
        self.assertTrue(lost, "shard 2 has cases")
        stderr = self.assert_refused([self.parts[2][0], self.parts[0][0]], "no part ran", lost[0],
                                     "shard(s) 2 of 3 not given")
        self.assertIn(str(self.parts[0][0]), stderr)

    def test_a_duplicated_shard_index(self):
        again = self.write("part-1-again.json", self.part(1))
        self.assert_refused([self.parts[0][0], again, self.parts[1][0], self.parts[2][0]], "both shard 1", again)

    def test_a_full_results_file_is_not_a_part(self):
        self.assert_refused([self.full_path, self.parts[0][0]], "not a partial results file", self.full_path)

    def test_a_file_that_is_not_results(self):
        self.assert_refused([SUITE, self.parts[0][0]], "not a regress results file")

    def test_a_shard_object_that_disagrees_with_its_cases(self):
        other = self.part(1)
        other["shard"]["cases"] = other["shard"]["cases"][1:]
        bad = self.write("inconsistent.json", other)
        self.assert_refused([bad], "not a partial results file", bad)


class TestRunCommandLine(unittest.TestCase):
    def test_bad_shard_is_a_usage_error_before_any_tool_runs(self):
        for spec in ("0/3", "4/3", "two"):
            proc = regress("run", "--shard", spec, "--build", "/nonexistent", "-o", "/dev/null")
            with self.subTest(spec=spec):
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertIn(f"--shard {spec}", proc.stderr)
                self.assertNotIn("Traceback", proc.stderr)


if __name__ == "__main__":
    unittest.main()
