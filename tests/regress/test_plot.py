"""--plot draws a PNG with matplotlib; skipped where matplotlib is not installed (scripts/setup installs it)."""
import importlib.util
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REGRESS = HERE.parent.parent / "scripts" / "regress"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@unittest.skipIf(importlib.util.find_spec("matplotlib") is None, "matplotlib is not installed (python3-matplotlib)")
class TestPlot(unittest.TestCase):
    def test_plot_writes_a_png_and_keeps_the_exit_code(self):
        with tempfile.TemporaryDirectory() as tmp:
            png = Path(tmp) / "compare.png"
            proc = subprocess.run([sys.executable, str(REGRESS), "compare", str(HERE / "data" / "base.json"),
                                   str(HERE / "data" / "doctored.json"), "--plot", str(png)],
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertEqual(png.read_bytes()[:8], PNG_MAGIC)

    def test_unwritable_plot_path_is_a_usage_error(self):
        proc = subprocess.run([sys.executable, str(REGRESS), "compare", str(HERE / "data" / "base.json"),
                               str(HERE / "data" / "base.json"), "--plot", "/nonexistent-dir/x.png"],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)


if __name__ == "__main__":
    unittest.main()
