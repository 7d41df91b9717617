"""The summary of a scripts/gpu-check run: pass/fail per step and the figures, as results/gpu-<model>.json.

    python3 scripts/gpu_check_summary.py WORK DEVICE MODEL DEVICES_JSON COMMAND OUT_DIR

WORK is the check's folder (steps.tsv, logs and raw reports), DEVICE the checked device (CUDA0), MODEL its
name from nvidia-smi (may be empty), DEVICES_JSON the tools' `--list-devices --format json`, COMMAND the
command line, OUT_DIR where gpu-<model>.json goes. XB_COMMIT names the commit checked (else `git rev-parse`).
Besides the raw reports it derives the figures the GPU issue asks for, each against a reference measured
in the same run: element-wise and copy bandwidth as a fraction of cudaMemcpy device-to-device, mul_mat
time against cuBLAS alone on the same shape, and per-op GPU time against the CPU. Exit 0 when every step
passed.
"""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

BANDWIDTH_TARGET = 0.6  # of the device-to-device memcpy rate
GEMM_TARGET = 0.9       # of cuBLAS's rate on the same shape


def load_json(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def tail(path, lines=15):
    try:
        return Path(path).read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def read_steps(work):
    steps = []
    for line in (work / "steps.tsv").read_text().splitlines():
        name, rc, seconds, log = line.split("\t", 3)
        steps.append({"step": name, "exit": rc, "seconds": int(seconds) if seconds.isdigit() else 0, "log": log})
    return steps


def ok(step):
    return step["exit"] == "0"


def describe_step(step, report=None, extra=None):
    entry = {"ok": ok(step), "exit": step["exit"], "seconds": step["seconds"]}
    if not ok(step) and step["exit"] != "skipped":
        entry["log_tail"] = tail(step["log"])
    if step["exit"] == "skipped":
        entry["skipped"] = step["log"]
    if extra:
        entry.update(extra)
    if report is not None:
        entry["report"] = report
    return entry


def ctest_summary(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    passed, failed, skipped = [], [], []
    for case in root.iter("testcase"):
        name = case.get("name", "")
        if case.find("failure") is not None or case.get("status") == "fail":
            failed.append(name)
        elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
            skipped.append(name)
        else:
            passed.append(name)
    return {"passed": len(passed), "failed": len(failed), "skipped": len(skipped), "failed_tests": failed[:200],
            "skipped_tests": skipped[:200]}


def compare_summary(report):
    if not isinstance(report, dict):
        return None
    nodes = report.get("nodes") or []
    worst = max(nodes, key=lambda n: (n.get("nmse") or 0.0) / max(n.get("tolerance") or 1e-30, 1e-30), default=None)
    return {k: report.get(k) for k in ("backends", "compared", "skipped", "passed", "failed", "introduced", "inherited",
                                         "first_divergent")} | {
        "worst_node": None if worst is None else {k: worst.get(k) for k in ("index", "name", "op", "nmse", "tolerance")},
        "failed_nodes": [{k: n.get(k) for k in ("index", "name", "op", "shape", "nmse", "max_abs", "tolerance", "origin")}
                         for n in nodes if not n.get("ok", True)][:50],
    }


def run_summary(report):
    if not isinstance(report, dict):
        return None
    runs = report.get("runs")
    if isinstance(runs, list) and runs and isinstance(runs[0], dict):
        report = runs[0]  # graph-run writes a list of runs; gpu-check asks for one
    return {k: report.get(k) for k in ("backends", "n_nodes", "n_splits", "time_ms", "tokens_per_s", "gflops",
                                       "copy_bytes")}


def bench_summary(report):
    if not isinstance(report, dict):
        return None
    out = []
    for b in report.get("benchmarks", []):
        entry = {"name": b.get("name"), "real_time": b.get("real_time"), "time_unit": b.get("time_unit")}
        for key in ("GFLOPS", "bytes_per_second"):
            if key in b:
                entry[key] = b[key]
        if b.get("error_occurred"):
            entry["error"] = b.get("error_message")
        out.append(entry)
    return out


def bandwidth_figures(bench):
    """BM_CudaOp/<op>/<type> bytes per second against BM_CudaMemcpyD2D of the same run."""
    rates = {b["name"]: b.get("bytes_per_second") for b in bench or [] if not b.get("error")}
    memcpy = next((r for n, r in rates.items() if n.startswith("BM_CudaMemcpyD2D")), None)
    if not memcpy:
        return None
    kernels = {}
    for name, rate in rates.items():
        if name.startswith("BM_CudaOp/") and rate:
            key = name.removeprefix("BM_CudaOp/").removesuffix("/real_time")
            kernels[key] = {"GB_per_s": round(rate / 1e9, 1), "of_memcpy": round(rate / memcpy, 2)}
    return {"memcpy_d2d_GB_per_s": round(memcpy / 1e9, 1), "target": BANDWIDTH_TARGET, "kernels": kernels,
            "below_target": sorted(k for k, v in kernels.items() if v["of_memcpy"] < BANDWIDTH_TARGET)}


def gemm_figures(bench):
    """BM_CudaMulMat/<type>/M:../N:../K:.. against BM_CublasGemm with the same arguments."""
    times = {b["name"].removesuffix("/real_time"): b.get("real_time") for b in bench or [] if not b.get("error")}
    shapes = {}
    for name, ours in times.items():
        if not name.startswith("BM_CudaMulMat/") or not ours:
            continue
        key = name.removeprefix("BM_CudaMulMat/")
        cublas = times.get("BM_CublasGemm/" + key)
        if cublas:
            shapes[key] = {"us": round(ours, 1), "cublas_us": round(cublas, 1), "of_cublas": round(cublas / ours, 2)}
    if not shapes:
        return None
    return {"target": GEMM_TARGET, "shapes": shapes,
            "below_target": sorted(k for k, v in shapes.items() if v["of_cublas"] < GEMM_TARGET)}


def op_speedups(perf, device):
    """op-check perf: each case's time on the device and on the CPU."""
    if not isinstance(perf, dict):
        return None
    by_case = {}
    for r in perf.get("results", []):
        if "us_per_run" in r:
            by_case.setdefault(r["case"], {})[r["backend"]] = r["us_per_run"]
    out = {}
    for case, t in by_case.items():
        if device in t and "CPU" in t:
            out[case] = {"us": round(t[device], 1), "cpu_us": round(t["CPU"], 1),
                         "speedup": round(t["CPU"] / t[device], 1)}
    return out


def current_commit():
    if os.environ.get("XB_COMMIT"):
        return os.environ["XB_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip() or None
    except OSError:
        return None


def main(argv):
    work, device, model, command_line, out_dir = Path(argv[1]), argv[2], argv[3].strip(), argv[5], Path(argv[6])
    try:
        devices = json.loads(argv[4])
    except ValueError:
        devices = []
    if not isinstance(devices, list):
        devices = []
    listed = next((d for d in devices if isinstance(d, dict) and d.get("name") == device), None)
    if not model and listed:
        # "NVIDIA H100 80GB HBM3 (compute 9.0, 132 SMs)": the model is what precedes the parenthesis.
        model = str(listed.get("description", "")).split(" (compute")[0]

    steps = read_steps(work)
    summary = {
        "device": {"name": device, "model": model or None, "registry": listed, "all_devices": devices},
        # When the steps ran: the step list's last change (a summary may be written again later).
        "date": datetime.fromtimestamp((work / "steps.tsv").stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": command_line.strip(),
        "commit": current_commit(),
    }
    compare, profiles, runs = {}, {}, {}
    for step in steps:
        name = step["step"]
        if name == "build":
            summary["build"] = describe_step(step)
        elif name == "preflight":
            summary["preflight"] = {"ok": ok(step), "detail": step["log"]}
        elif name in ("ctest-host", "ctest-gpu"):
            summary[name.replace("-", "_")] = describe_step(step, extra=ctest_summary(work / f"{name}.xml"))
        elif name.startswith("sanitize"):
            summary.setdefault("compute_sanitizer", {})[name.split("-", 1)[-1]] = describe_step(step)
        elif name in ("opcheck", "opcheck-test", "opcheck-perf"):
            key = {"opcheck": "op_check", "opcheck-test": "op_check_test", "opcheck-perf": "op_check_perf"}[name]
            report = load_json(work / f"{name}.json") if name != "opcheck" else None
            summary[key] = describe_step(step, report)
            if name == "opcheck-perf":
                summary["op_speedup_over_cpu"] = op_speedups(report, device)
        elif name.startswith("compare:"):
            config = name.split(":", 1)[1]
            compare[config] = describe_step(step, compare_summary(load_json(work / f"compare-{config}.json")))
        elif name.startswith("profile:") or name.startswith("profile-sweep:"):
            kind, config = name.split(":", 1)
            profiles[f"{config}{'' if kind == 'profile' else ' (sweep)'}"] = describe_step(
                step, load_json(work / f"{kind}-{config}.json"))
        elif name.startswith("run-gpu:") or name.startswith("run-cpu:"):
            kind, config = name.split(":", 1)
            runs.setdefault(config, {})[kind.split("-")[1]] = describe_step(
                step, run_summary(load_json(work / f"{kind}-{config}.json")))
        elif name == "bench":
            bench = bench_summary(load_json(work / "bench.json"))
            summary["graph_bench"] = describe_step(step, bench)
            summary["bandwidth_vs_memcpy"] = bandwidth_figures(bench)
            summary["mul_mat_vs_cublas"] = gemm_figures(bench)
    if compare:
        summary["backend_compare"] = compare
    if profiles:
        summary["sched_profile"] = profiles
    if runs:
        for both in runs.values():
            gpu = (both.get("gpu") or {}).get("report") or {}
            cpu = (both.get("cpu") or {}).get("report") or {}
            g_ms = (gpu.get("time_ms") or {}).get("median")
            c_ms = (cpu.get("time_ms") or {}).get("median")
            if g_ms and c_ms:
                both["speedup_over_cpu"] = round(c_ms / g_ms, 2)
        summary["graph_run"] = runs

    failed = [s["step"] for s in steps if s["exit"] not in ("0", "skipped")]
    summary["ok"] = not failed
    summary["failed_steps"] = failed

    label = re.sub(r"[^a-z0-9]+", "-", (model or device).lower()).strip("-") or "unknown"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"gpu-{label}.json"
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"gpu-check: {'all steps passed' if not failed else 'FAILED: ' + ', '.join(failed)}; summary in {out}",
          file=sys.stderr)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
