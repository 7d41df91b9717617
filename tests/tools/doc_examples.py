#!/usr/bin/env python3
"""Runs every example command of the README and of each tool's --help, and checks it does what its
text says: exit 0, or exit 1 where the example injects a fault (fault_node=) that the text says is
caught, and the files it names written.

    doc_examples.py REPO BUILD_DIR

Commands run in a scratch folder that links the repository's configs/, tests/ and build/, so that
the files they write (DOT, plots, traces) stay out of the tree. Names a user supplies (model.gguf, moe.gguf, hybrid.gguf,
before.json, after.json) are the test's own: a fixture model file and two saved runs. Commands that
CI runs itself as its regression gate (scripts/regress) and the whole suite (scripts/test) are not
run again; the check that .ci/run runs the README's regress commands stands for them.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

REPO, BUILD = (os.path.abspath(a) for a in sys.argv[1:3])
TOOLS = ("backend-compare", "graph-run", "sched-profile", "op-check")
failures = []


def readme_commands():
    """Lines of the README's sh blocks, and its inline `scripts/compare ...` examples."""
    text = open(os.path.join(REPO, "README.md")).read()
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line and not line.startswith("#"):
                commands.append(line)
    commands += re.findall(r"`(scripts/compare [^`]+)`", text)
    return commands


def help_commands(tool):
    """The example lines of `tool --help` (continuation lines joined), without their comments."""
    out = subprocess.run([os.path.join(BUILD, "apps", tool), "--help"], capture_output=True, text=True).stdout
    tail = out[out.find("Example"):] if "Example" in out else ""
    commands, pending = [], ""
    for line in tail.splitlines():
        line = re.sub(r"^Examples?:", "", line).strip()
        if pending:
            line, pending = pending + " " + line, ""
        if line.endswith("\\"):
            pending = line[:-1].strip()
            continue
        if line.startswith(tool + " "):
            commands.append(re.split(r"\s{3,}", line)[0])
    return commands


# Names a README block assigns from a script (`M=$(scripts/models)`): their values, or None where the
# script has nothing to give (the real model not installed: the commands that use it are skipped).
assigned = {}


def assign(command):
    """Handles `NAME=$(scripts/models)`; True when the line was such an assignment."""
    m = re.fullmatch(r"(\w+)=\$\((scripts/models)\)", command)
    if not m:
        return False
    p = subprocess.run([os.path.join(REPO, m.group(2)), "--where"], capture_output=True, text=True)
    assigned[m.group(1)] = p.stdout.strip() if p.returncode == 0 else None
    return True


def run(command, cwd, expect_files=()):
    if assign(command):
        return
    for name, value in assigned.items():
        if "$" + name in command:
            if value is None:
                print(f"  skipped (no {name}: scripts/models has not installed it)  {command}", flush=True)
                return
            command = command.replace("$" + name, shlex.quote(value))
    args = shlex.split(command)
    if args[0] in ("scripts/test",) or args[0].startswith("scripts/regress"):
        return  # CI's own steps (see the docstring)
    if args[0] == "scripts/compare":  # setup and build, then backend-compare: the build is here already
        args = [os.path.join(BUILD, "apps", "backend-compare")] + args[1:]
    elif args[0] in TOOLS:
        args[0] = os.path.join(BUILD, "apps", args[0])
    elif args[0].startswith("build/apps/"):
        args[0] = os.path.join(BUILD, "apps", os.path.basename(args[0]))
    if any(a == "--mode" for a in args) and "perf" in args:
        args += ["--perf-time", "0.01"]  # the example's point is that it runs, not its timings
    if os.path.basename(args[0]) == "graph-run" and "--compare" not in args:
        # One timed compute: set -r (or add it) rather than repeat it.
        args = [a for i, a in enumerate(args) if a != "-r" and (i == 0 or args[i - 1] != "-r")] + ["-r", "1"]
    expected = 1 if any("fault_node=" in a for a in args) else 0
    start = time.monotonic()
    p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    print(f"{time.monotonic() - start:6.1f} s  {command}", flush=True)
    if p.returncode != expected:
        failures.append(f"{command}: exit {p.returncode}, expected {expected}\n{p.stderr[-2000:]}")
        return
    for f in expect_files:
        if not os.path.isfile(os.path.join(cwd, f)) or os.path.getsize(os.path.join(cwd, f)) == 0:
            failures.append(f"{command}: wrote no {f}")


def files_named(command):
    return [a for a in shlex.split(command) if re.search(r"\.(dot|png|svg|trace\.json)$", a)]


with tempfile.TemporaryDirectory() as scratch:
    for name in ("configs", "tests"):
        os.symlink(os.path.join(REPO, name), os.path.join(scratch, name))
    os.makedirs(os.path.join(scratch, "build"))
    os.symlink(os.path.join(BUILD, "apps"), os.path.join(scratch, "build", "apps"))
    # The names the --help examples leave to the user.
    os.symlink(os.path.join(REPO, "tests", "data", "models", "tiny-llama-quant.gguf"), os.path.join(scratch, "model.gguf"))
    os.symlink(os.path.join(REPO, "tests", "data", "models", "arch", "tiny-qwen3moe.gguf"), os.path.join(scratch, "moe.gguf"))
    os.symlink(os.path.join(REPO, "tests", "data", "models", "arch", "tiny-qwen35.gguf"), os.path.join(scratch, "hybrid.gguf"))
    graph_run = os.path.join(BUILD, "apps", "graph-run")
    for name in ("before.json", "after.json"):
        subprocess.run([graph_run, "-c", "configs/default.json", "-r", "1", "--format", "json", "-o", name], cwd=scratch,
                       check=True, capture_output=True)

    commands = readme_commands()
    for tool in TOOLS:
        found = help_commands(tool)
        if not found:
            failures.append(f"{tool} --help has no examples")
        commands += found
    for command in commands:
        run(command, scratch, files_named(command))

ci = open(os.path.join(REPO, ".ci", "run")).read()
for command in readme_commands():
    if command.startswith("scripts/regress") and command.split(" -o ")[0] not in ci:
        failures.append(f"README's '{command}' is not what .ci/run runs")

print(f"doc_examples: {len(commands)} example commands")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
