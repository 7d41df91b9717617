"""Runs the suite's cases with the tools' JSON output and assembles one results file."""
import math
import time

from . import calibration
from .machine import machine_info
from .tools import ToolError

FORMAT = "xbackend-regress/1"

# The deterministic figures of sched-profile's JSON report (--dry-run: split and allocate, no compute).
GRAPH_KEYS = ("n_nodes", "n_splits", "n_copies", "copy_bytes", "copies_by_pair", "buffer_bytes")


PLACED = "placed"  # compare: [reference, "placed"] checks the config as placed (backend-compare --placed)

def _graph_figures(profile):
    missing = [k for k in GRAPH_KEYS if k not in profile]
    if missing:
        raise ToolError(f"sched-profile's JSON lacks {', '.join(missing)}")
    return {k: profile[k] for k in GRAPH_KEYS}


def _finite_nmse(value):
    """A node's NMSE, or None when not finite: the tool writes NaN and Inf as strings ("nan", "inf")."""
    try:
        nmse = float(value)
    except (TypeError, ValueError):
        return None
    return nmse if math.isfinite(nmse) else None


def _numerics(report):
    """backend-compare's per-node results folded per op: worst NMSE, its tolerance, failures, skips.

    A non-finite NMSE (JSON cannot hold it) is left out of the worst; its node is failed, so n_fail counts it.
    """
    ops = {}
    for node in report["nodes"]:
        op = ops.setdefault(node["op"], {"worst_nmse": None, "tolerance": None, "n_nodes": 0, "n_fail": 0,
                                         "n_skipped": 0})
        op["n_nodes"] += 1
        if "skipped" in node:
            op["n_skipped"] += 1
            continue
        if not node["ok"]:
            op["n_fail"] += 1
        nmse = _finite_nmse(node["nmse"])
        if nmse is not None and (op["worst_nmse"] is None or nmse > op["worst_nmse"]):
            op["worst_nmse"] = nmse
        if op["tolerance"] is None or node["tolerance"] < op["tolerance"]:
            op["tolerance"] = node["tolerance"]
    return ops


def run_case(tools, case, threads, devices):
    """The results entry of one case; a tool failure becomes status "error" with its message."""
    wanted = list(dict.fromkeys(case.backends + [d for d in (case.compare or []) if d != PLACED]))
    absent = [d for d in wanted if d not in devices]
    if absent:
        note = f"device {', '.join(absent)} not present (present: {', '.join(devices)})"
        return {"status": "skipped" if case.needs_gpu else "error", "note": note}
    common = ["-c", case.config, "-t", str(threads), *case.args, "--format", "json"]
    entry = {"status": "ok", "config": case.config, "backends": case.backends}
    try:
        if "graph" in case.record:
            _, profile = tools.run_json("sched-profile", ["-b", ",".join(case.backends), "--dry-run", *common])
            entry["graph"] = _graph_figures(profile)
        if "timing" in case.record:
            _, report = tools.run_json("graph-run", ["-b", ",".join(case.backends), "--warmup", str(case.warmup),
                                                     "-r", str(case.reps), *common])
            run = report["runs"][0]  # one config, one backend set, one thread count: one run
            entry["timing"] = {"median_ms": run["time_ms"]["median"], "min_ms": run["time_ms"]["min"],
                               "reps": run["reps"]}
        if "numerics" in case.record:
            # Exit 1 means "a node is out of tolerance": a valid report, which compare then flags.
            # [REFERENCE, "placed"]: the config as placed (its split, through the scheduler) against the reference.
            pair = ["-b", case.compare[0], "--placed"] if case.compare[1] == PLACED else ["-b", ",".join(case.compare)]
            _, report = tools.run_json("backend-compare", [*pair, *common], ok_codes=(0, 1))
            entry["compare"] = case.compare
            entry["numerics"] = _numerics(report)
    except ToolError as e:
        return {"status": "error", "note": str(e)}
    except (KeyError, TypeError, ValueError) as e:
        # The tools' JSON changed shape: say which field, do not crash the whole run.
        return {"status": "error", "note": f"unexpected JSON from a tool ({type(e).__name__}: {e})"}
    return entry


def _calibrate(tools, suite, when, log):
    try:
        figures = calibration.measure(tools, suite.calibration)
    except ToolError as e:
        log(f"calibration {when} the cases failed ({e})")
        return None
    log(f"calibration {when} the cases: " + ", ".join(f"{k} {v:.3f}" for k, v in figures.items()))
    return figures


def _fastest_calibration(runs):
    """Per kernel the fastest of the calibration runs that succeeded; None when none did."""
    runs = [r for r in runs if r]
    if not runs:
        return None
    return {k: min(r[k] for r in runs) for k in runs[0]}


def run_suite(suite, tools, build_dir, repo_root, log):
    """Calibration, every case in order, calibration again; LOG(line) reports progress.

    Calibrating before and after the cases, and keeping the fastest, makes a burst of other work on
    a shared machine (CI) during one calibration matter less.
    """
    start = time.monotonic()
    devices = tools.device_names()
    log(f"devices: {', '.join(devices)}")
    before = _calibrate(tools, suite, "before", log)
    cases = {}
    for i, case in enumerate(suite.cases, 1):
        t0 = time.monotonic()
        entry = run_case(tools, case, suite.threads, devices)
        # The case's wall time, all tools together: `run --shard` balances the shards by it.
        entry["elapsed_s"] = round(time.monotonic() - t0, 3)
        cases[case.name] = entry
        note = entry.get("note", "")
        log(f"[{i}/{len(suite.cases)}] {case.name}: {entry['status']}{': ' + note if note else ''} "
            f"({entry['elapsed_s']:.1f} s)")
    after = _calibrate(tools, suite, "after", log)
    return {
        "format": FORMAT,
        "suite": suite.path,
        "machine": machine_info(build_dir, repo_root),
        "devices": devices,
        "threads": suite.threads,
        "calibration": _fastest_calibration([before, after]),
        "calibration_runs": {"before": before, "after": after},
        "cases": cases,
        "wall_s": round(time.monotonic() - start, 1),
    }
