"""Runs xbackend's command-line tools from a build folder and reads their JSON output."""
import json
import subprocess
from pathlib import Path

from .errors import UsageError

TOOLS = ("graph-run", "sched-profile", "backend-compare", "graph-bench")
TIMEOUT_S = 300


class ToolError(Exception):
    """A tool failed on one case: recorded as that case's error, the suite goes on."""


def tool_warnings(stderr):
    """The lines of a tool's stderr that are warnings ("TOOL: warning: ...")."""
    return [line.strip() for line in stderr.splitlines() if ": warning: " in line]


class Tools:
    def __init__(self, build_dir, repo_root):
        self.apps = Path(build_dir) / "apps"
        self.repo_root = Path(repo_root)
        missing = [t for t in TOOLS if not (self.apps / t).is_file()]
        if missing:
            raise UsageError(f"{self.apps}: {', '.join(missing)} not built (run scripts/build, or pass --build DIR)")

    def run_json(self, tool, args, ok_codes=(0,), warnings=None):
        """TOOL's parsed JSON output; ok_codes lists exit codes that still mean "a valid report".

        WARNINGS, a list, receives the warnings the tool printed on stderr ("graph-run: warning: 1 other
        task is running ..."), which the gate's log repeats: the tools' stderr is not shown otherwise.
        """
        cmd = [str(self.apps / tool), *args]
        try:
            # The tools resolve config paths against the working folder: run them from the repository root.
            proc = subprocess.run(cmd, cwd=self.repo_root, capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ToolError(f"{tool} ran over {TIMEOUT_S} s") from None
        if warnings is not None:
            warnings += tool_warnings(proc.stderr)
        if proc.returncode not in ok_codes:
            last = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            raise ToolError(f"{tool} exited {proc.returncode}: {last[0]}")
        try:
            return proc.returncode, json.loads(proc.stdout)
        except json.JSONDecodeError as e:
            raise ToolError(f"{tool} wrote no valid JSON ({e.msg})") from None

    def device_names(self):
        _, devices = self.run_json("graph-run", ["--list-devices", "--format", "json"])
        return [d["name"] for d in devices]
