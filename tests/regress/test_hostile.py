"""Every verb of scripts/regress on corrupted inputs: one line on stderr, exit 2, never a traceback.

The corpus is tests/regress/data/corrupt (make_corrupt.py writes it): partial results files with
wrong-typed fields, bytes that are not UTF-8, nesting 10,000 deep, numbers JSON has not or that
arithmetic cannot take, names holding newlines and terminal escapes; and suite files likewise. A
robustness run found merge printing tracebacks (exit 1) on several of them, and on an --plot file
name matplotlib cannot write.
"""
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
REGRESS = REPO / "scripts" / "regress"
CORRUPT = HERE / "data" / "corrupt"
BASE = HERE / "data" / "base.json"
GOOD_SUITE = REPO / "results" / "suite.json"
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def regress(*args):
    return subprocess.run([PYTHON, str(REGRESS), *map(str, args)], capture_output=True, text=True, errors="replace",
                          timeout=120)


class OneLineExit2(unittest.TestCase):
    def assert_refused(self, proc, what):
        lines = proc.stderr.splitlines()
        self.assertEqual(proc.returncode, 2, f"{what}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
        self.assertNotIn("Traceback", proc.stderr, what)
        self.assertEqual(len(lines), 1, f"{what}: {len(lines)} lines\n{proc.stderr[:2000]}")
        self.assertLessEqual(len(lines[0]), 1100, what)
        self.assertNotIn("\x1b", proc.stderr, what)
        self.assertTrue(lines[0].startswith("regress"), lines[0])


class TestCorruptParts(OneLineExit2):
    def test_the_corpus_is_there(self):
        self.assertGreaterEqual(len(list((CORRUPT / "parts").glob("*.json"))), 30)
        self.assertGreaterEqual(len(list((CORRUPT / "suites").glob("*.json"))), 8)

    def test_the_good_parts_merge(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc = regress("merge", CORRUPT / "part-1.json", CORRUPT / "part-2.json", "-o", Path(tmp) / "m.json")
            self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_merge_refuses_each_corrupt_part(self):
        with tempfile.TemporaryDirectory() as tmp:
            for part in sorted((CORRUPT / "parts").glob("*.json")):
                with self.subTest(part=part.name):
                    proc = regress("merge", CORRUPT / "part-1.json", part, "-o", Path(tmp) / "m.json")
                    self.assert_refused(proc, f"merge {part.name}")

    def test_compare_refuses_each_corrupt_file_as_base_or_new(self):
        for part in sorted((CORRUPT / "parts").glob("*.json")):
            if part.stem in ("index-string", "index-bool", "shard-cases-numbers"):
                continue  # compare does not read the shard object: valid results otherwise
            with self.subTest(part=part.name):
                self.assert_refused(regress("compare", BASE, part), f"compare BASE {part.name}")
                self.assert_refused(regress("compare", part, BASE), f"compare {part.name} BASE")

    def test_run_refuses_a_corrupt_shard_baseline(self):
        with tempfile.TemporaryDirectory() as tmp:  # no tools there: a baseline read fine fails on them
            for name in ("not-utf8", "nested-10000", "nan", "int-5000-digits", "cut-short"):
                with self.subTest(baseline=name):
                    proc = regress("run", "--shard", "1/2", "--baseline", CORRUPT / "parts" / f"{name}.json",
                                   "--build", tmp, "-o", Path(tmp) / "r.json")
                    self.assert_refused(proc, f"run --baseline {name}")

    def test_run_and_update_refuse_each_corrupt_suite(self):
        with tempfile.TemporaryDirectory() as tmp:
            for suite in sorted((CORRUPT / "suites").glob("*.json")):
                with self.subTest(suite=suite.name):
                    self.assert_refused(regress("run", "--suite", suite, "--build", tmp, "-o", Path(tmp) / "r.json"),
                                        f"run --suite {suite.name}")
                    self.assert_refused(regress("update", "--suite", suite, "--build", tmp, "--baseline",
                                                Path(tmp) / "b.json"), f"update --suite {suite.name}")

    def test_names_are_quoted_short_and_escaped(self):
        proc = regress("merge", CORRUPT / "part-1.json", CORRUPT / "parts" / "newline-in-name.json", "-o", "/dev/null")
        self.assert_refused(proc, "newline")
        self.assertIn("case\\nINFO: all cases passed\\x1b[2J", proc.stderr)
        proc = regress("merge", CORRUPT / "part-1.json", CORRUPT / "parts" / "long-name.json", "-o", "/dev/null")
        self.assert_refused(proc, "long name")
        self.assertIn("c" * 60 + "...", proc.stderr)


class TestOutputsAndOptions(OneLineExit2):
    def test_unwritable_outputs(self):
        good = (CORRUPT / "part-1.json", CORRUPT / "part-2.json")
        with tempfile.TemporaryDirectory() as tmp:
            for out in (tmp, CORRUPT / "part-1.json" / "x.json", "/proc/version"):
                with self.subTest(out=str(out)):
                    self.assert_refused(regress("merge", *good, "-o", out), f"merge -o {out}")
                    self.assert_refused(regress("compare", BASE, BASE, "-o", out), f"compare -o {out}")

    def test_a_plot_name_matplotlib_cannot_write(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("no matplotlib")
        with tempfile.TemporaryDirectory() as tmp:
            proc = regress("compare", BASE, BASE, "--plot", Path(tmp) / "plot.txt")
            self.assert_refused(proc, "--plot plot.txt")
            self.assertIn(".png", proc.stderr)

    def test_bad_options_are_one_line_with_the_range(self):
        for args, text in ((("compare", BASE, BASE, "--time-threshold", "nan"), "nan is not a finite number (more than 1)"),
                           (("compare", BASE, BASE, "--time-threshold", "1"), "1 is too small (more than 1)"),
                           (("run", "--load-wait", "inf"), "inf is not a finite number"),
                           (("run", "--load-retries", "-1"), "-1 is too small (at least 0)"),
                           (("run", "--shard", "0/2"), "K must be 1..N"),
                           (("frobnicate",), "invalid choice"),
                           (("compare", BASE), "required")):
            with self.subTest(args=args):
                proc = regress(*args)
                self.assert_refused(proc, " ".join(map(str, args)))
                self.assertIn(text, proc.stderr)


class TestMessageHelpers(unittest.TestCase):
    def test_shown_and_one_line(self):
        sys.path.insert(0, str(REPO / "scripts"))
        from regress_lib.errors import one_line, shown
        self.assertEqual(shown("a\nb\x1b"), "a\\nb\\x1b")
        self.assertEqual(shown("x" * 61), "x" * 60 + "...")
        self.assertEqual(shown(5), "5")
        line = one_line("start " + "y" * 5000 + " the reason")
        self.assertLessEqual(len(line), 1100)
        self.assertTrue(line.startswith("start yyy") and line.endswith("y the reason"), line[-40:])


if __name__ == "__main__":
    unittest.main()
