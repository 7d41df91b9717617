"""Runs the suite's cases with the tools' JSON output and assembles one results file."""
import math
import time

from . import calibration
from .load import LoadPolicy, busy_text, load_record, plural
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


def _run_tool(tools, case, tool, args, warnings, log, ok_codes=(0,)):
    """TOOL's JSON for CASE; the warnings it printed are added to WARNINGS and logged as they come."""
    seen = len(warnings)
    result = tools.run_json(tool, args, ok_codes=ok_codes, warnings=warnings)
    for warning in warnings[seen:]:
        log(f"{case.name}: {warning}")
    return result


def _timed_once(tools, case, common, threads, policy, warnings, log):
    """One graph-run of the case: its timing figures and the load check of that run (load.py)."""
    _, report = _run_tool(tools, case, "graph-run", ["-b", ",".join(case.backends), "--warmup", str(case.warmup),
                                                     "-r", str(case.reps), *common], warnings, log)
    run = report["runs"][0]  # one config, one backend set, one thread count: one run
    after = policy.sample() if policy.sample else None
    load = load_record(run.get("others_running"), after, run.get("threads", threads), policy.cpu_count())
    return {"median_ms": run["time_ms"]["median"], "min_ms": run["time_ms"]["min"], "reps": run["reps"], "load": load}


def _timing(tools, case, common, threads, policy, warnings, log):
    """The case's timing: timed again while under load, at most policy.retries times (load.py).

    The first timing taken without load is kept; when there is none, the fastest, marked under_load.
    """
    attempts = []
    while True:
        attempts.append(_timed_once(tools, case, common, threads, policy, warnings, log))
        load = attempts[-1]["load"]
        if not load["busy"] or len(attempts) > policy.retries:
            break
        log(f"{case.name}: timed while {busy_text(load)}; timing again in {policy.wait_s:g} s "
            f"(retry {len(attempts)} of {policy.retries})")
        time.sleep(policy.wait_s)
    quiet = [t for t in attempts if not t["load"]["busy"]]
    kept = quiet[0] if quiet else min(attempts, key=lambda t: t["min_ms"])
    return {**kept, "attempts": len(attempts), "under_load": not quiet}


def run_case(tools, case, threads, devices, policy=None, log=lambda line: None):
    """The results entry of one case; a tool failure becomes status "error" with its message.

    The tools' warnings (a busy machine) are logged as they come and kept in the entry's "warnings".
    """
    policy = policy or LoadPolicy()
    wanted = list(dict.fromkeys(case.backends + [d for d in (case.compare or []) if d != PLACED]))
    absent = [d for d in wanted if d not in devices]
    if absent:
        note = f"device {', '.join(absent)} not present (present: {', '.join(devices)})"
        return {"status": "skipped" if case.needs_gpu else "error", "note": note}
    common = ["-c", case.config, "-t", str(threads), *case.args, "--format", "json"]
    entry = {"status": "ok", "config": case.config, "backends": case.backends}
    warnings = []
    try:
        if "graph" in case.record:
            _, profile = _run_tool(tools, case, "sched-profile", ["-b", ",".join(case.backends), "--dry-run", *common],
                                   warnings, log)
            entry["graph"] = _graph_figures(profile)
        if "timing" in case.record:
            entry["timing"] = _timing(tools, case, common, threads, policy, warnings, log)
        if "numerics" in case.record:
            # Exit 1 means "a node is out of tolerance": a valid report, which compare then flags.
            # [REFERENCE, "placed"]: the config as placed (its split, through the scheduler) against the reference.
            pair = ["-b", case.compare[0], "--placed"] if case.compare[1] == PLACED else ["-b", ",".join(case.compare)]
            _, report = _run_tool(tools, case, "backend-compare", [*pair, *common], warnings, log, ok_codes=(0, 1))
            entry["compare"] = case.compare
            entry["numerics"] = _numerics(report)
    except ToolError as e:
        entry = {"status": "error", "note": str(e)}
    except (KeyError, TypeError, ValueError) as e:
        # The tools' JSON changed shape: say which field, do not crash the whole run.
        entry = {"status": "error", "note": f"unexpected JSON from a tool ({type(e).__name__}: {e})"}
    if warnings:
        entry["warnings"] = list(dict.fromkeys(warnings))  # each once, however many runs printed it
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


def _case_line(entry):
    """What the log says of a finished case after its name: status, note, load, wall time."""
    text = entry["status"] + (f": {entry['note']}" if entry.get("note") else "")
    timing = entry.get("timing", {})
    if timing.get("under_load"):
        text += f", timed under load ({timing['attempts']} timings, the last while {busy_text(timing['load'])})"
    elif timing.get("attempts", 1) > 1:
        text += f", timed without load on retry {timing['attempts'] - 1}"
    return f"{text} ({entry['elapsed_s']:.1f} s)"


def _log_machine_load(suite, policy, log):
    """A warning before the cases when other work already fills the CPUs the suite's threads need."""
    others = policy.sample() if policy.sample else None
    if others is not None:
        load = load_record(others, None, suite.threads, policy.cpu_count())
        if load["busy"]:
            log(f"warning: {plural(others, 'other task is', 'other tasks are')} running on this machine's "
                f"{load['cpus']} CPUs (the suite times {plural(suite.threads, 'thread', 'threads')}): a case timed "
                f"under load is timed again, up to {plural(policy.retries, 'time', 'times')}, then marked")


def _log_under_load(cases, policy, log):
    """The closing warning naming the cases whose timings stayed under load."""
    marked = [name for name, c in cases.items() if c.get("timing", {}).get("under_load")]
    timed = [name for name, c in cases.items() if "timing" in c]
    if marked:
        log(f"warning: {len(marked)} of {len(timed)} timed cases stayed under load after up to "
            f"{plural(policy.retries, 'retry', 'retries')} ({', '.join(marked)}): marked \"under_load\" in the "
            f"results; compare reports their timings without gating them")


def run_suite(suite, tools, build_dir, repo_root, log, policy=None):
    """Calibration, every case in order, calibration again; LOG(line) reports progress.

    Calibrating before and after the cases, and keeping the fastest, makes a burst of other work on
    a shared machine (CI) during one calibration matter less. POLICY (load.py) says how a case timed
    under load is timed again; without one, only graph-run's own sample is checked.
    """
    policy = policy or LoadPolicy()
    start = time.monotonic()
    devices = tools.device_names()
    log(f"devices: {', '.join(devices)}")
    _log_machine_load(suite, policy, log)
    before = _calibrate(tools, suite, "before", log)
    cases = {}
    for i, case in enumerate(suite.cases, 1):
        t0 = time.monotonic()
        entry = run_case(tools, case, suite.threads, devices, policy, log)
        # The case's wall time, all tools together: `run --shard` balances the shards by it.
        entry["elapsed_s"] = round(time.monotonic() - t0, 3)
        cases[case.name] = entry
        log(f"[{i}/{len(suite.cases)}] {case.name}: {_case_line(entry)}")
    _log_under_load(cases, policy, log)
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
