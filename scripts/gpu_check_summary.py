"""The summary of a scripts/gpu-check run, written after every step: pass/fail per step and the figures.

    python3 scripts/gpu_check_summary.py --work WORK --summary-dir DIR [--out OUT] [--running STEP]
                                         [--progress-only] [--final]

WORK is the check's folder: run.tsv (command, start, deadline, device), plan.txt (the steps in order),
steps.tsv (one line per step ended: name, exit, seconds, log or reason), finished.tsv (written at the
end), commit.txt (the build's record of its commit, cmake/build_info.cmake), version.txt (a tool's
--version), tree.tsv (files that differ from --prepare's record, on a tree without .git),
nvidia-smi.csv, devices.json (the tools' --list-devices), the logs and the raw reports.
The summary goes to DIR/gpu-<device model>.json and WORK/summary.json; with --out also
OUT/summary.json, OUT/progress.txt (a few lines a person reads first) and OUT/gpu-check-logs.tar.gz
(WORK packed, large logs cut to their head and tail), each replaced whole. --progress-only writes
progress.txt alone (a step is starting). Besides the raw reports the summary derives the figures the
GPU issue asks for, each against a reference measured in the same run: element-wise and copy
bandwidth as a fraction of cudaMemcpy device-to-device, mul_mat time against cuBLAS alone on the
same shape, and per-op device time against the CPU. Exit 0 when every planned step ran and passed.
"""
import argparse
import io
import json
import os
import re
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

BANDWIDTH_TARGET = 0.6  # of the device-to-device memcpy rate
VS_GGML_OP_TARGET = 0.9     # each op case's time against ggml-cuda's (ggml's time over xbackend's)
VS_GGML_MODEL_TARGET = 1.0  # each model test's tokens per second against llama-bench's
DECODE_TARGET = 0.8         # a decoded token's weight bytes per second, of the memcpy rate
GEMM_TARGET = 0.9       # of cuBLAS's rate on the same shape
STREAM_TARGET = 1.25    # of memcpy's time for the same bytes (the CPU's one-token products, issue 36)
LOG_LIMIT = 4 << 20     # bytes of one file in the logs archive; larger ones keep their head and tail
PASSED = ("0", "skipped")


def load_json(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def read_tsv(path):
    """{key: value} of a two-column file; {} when it is missing."""
    try:
        return dict(line.split("\t", 1) for line in Path(path).read_text().splitlines() if "\t" in line)
    except OSError:
        return {}


def tail(path, lines=15):
    try:
        return Path(path).read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def read_steps(work):
    steps = []
    try:
        lines = (work / "steps.tsv").read_text().splitlines()
    except OSError:
        return steps
    for line in lines:
        parts = line.split("\t", 3)
        if len(parts) < 4:
            continue
        name, rc, seconds, log = parts
        steps.append({"step": name, "exit": rc, "seconds": int(seconds) if seconds.isdigit() else 0, "log": log})
    return steps


def ok(step):
    return step["exit"] == "0"


def status_of(step):
    rc = step["exit"]
    if rc == "0":
        return "passed"
    if rc in ("skipped", "not-started", "interrupted", "pending", "running"):
        return rc
    if rc == "deadline":
        return "cut by the deadline"
    return "out of time" if rc in ("124", "137") else "failed"


def describe_step(step, report=None, extra=None):
    entry = {"ok": ok(step), "status": status_of(step), "exit": step["exit"], "seconds": step["seconds"]}
    if entry["status"] in ("failed", "out of time", "interrupted", "cut by the deadline"):
        entry["log_tail"] = tail(step["log"])
    if step["exit"] in ("skipped", "not-started", "pending"):
        entry["reason"] = step["log"]
    if extra:
        entry.update(extra)
    if report is not None:
        entry["report"] = report
    return entry


def ctest_summary(path):
    """Test counts from a JUnit-style report, or from every shard-*.xml in a folder of them."""
    files = sorted(path.glob("shard-*.xml")) if path.is_dir() else [path]
    cases = []
    for f in files:
        try:
            cases.extend(ET.parse(f).getroot().iter("testcase"))
        except (OSError, ET.ParseError):
            continue
    if not cases:
        return {}
    passed, failed, skipped = [], [], []
    for case in cases:
        name = case.get("name", "")
        suite = case.get("classname", "")
        if suite and not name.startswith(suite):  # GoogleTest's reports name the suite apart (ctest's do not)
            name = f"{suite}.{name}"
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
        "end_to_end": end_to_end_summary(report),
    }


def end_to_end_summary(report):
    """The outputs against their end-to-end tolerance, and the node furthest into its budget: the
    figure backend-compare's margin (10) is set on, worth watching on every GPU."""
    e2e = report.get("end_to_end") or {}
    if not e2e.get("judged"):
        return None

    def ratio(n):
        try:
            return float(n["nmse"]) / float(n["budget"]) * e2e["margin"] if float(n["budget"]) > 0 else None
        except (KeyError, TypeError, ValueError):
            return None
    ratios = [(r, n) for n in report.get("nodes") or [] for r in [ratio(n)] if r is not None]
    worst = max(ratios, key=lambda rn: rn[0], default=None)
    return {"ok": e2e.get("ok"), "growth_node": e2e.get("growth_node"),
            "outputs": [{k: o.get(k) for k in ("name", "nmse", "reference_error", "tolerance", "ok")}
                        for o in e2e.get("outputs", [])][:20],
            # NMSE over the reference's own error (not over the budget): at most 1.7 on the H100 of
            # 2026-11; the margin is 10.
            "worst_own_error_ratio": None if worst is None else {"ratio": worst[0], "index": worst[1]["index"],
                                                                 "name": worst[1]["name"]}}


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
    kernels, below = {}, []
    for name, rate in rates.items():
        if name.startswith("BM_CudaOp/") and rate:
            key = name.removeprefix("BM_CudaOp/").removesuffix("/real_time")
            kernels[key] = {"GB_per_s": round(rate / 1e9, 1), "of_memcpy": round(rate / memcpy, 2)}
            if rate / memcpy < BANDWIDTH_TARGET:  # judged unrounded
                below.append(key)
    return {"memcpy_d2d_GB_per_s": round(memcpy / 1e9, 1), "target": BANDWIDTH_TARGET, "kernels": kernels,
            "below_target": sorted(below)}


def gemm_figures(bench):
    """BM_CudaMulMat/<type>/M:../N:../K:.. against BM_CublasGemm with the same arguments."""
    times = {b["name"].removesuffix("/real_time"): b.get("real_time") for b in bench or [] if not b.get("error")}
    shapes, below = {}, []
    for name, ours in times.items():
        if not name.startswith("BM_CudaMulMat/") or not ours:
            continue
        key = name.removeprefix("BM_CudaMulMat/")
        cublas = times.get("BM_CublasGemm/" + key)
        if cublas:
            shapes[key] = {"us": round(ours, 1), "cublas_us": round(cublas, 1), "of_cublas": round(cublas / ours, 2)}
            if cublas / ours < GEMM_TARGET:  # judged unrounded
                below.append(key)
    if not shapes:
        return None
    return {"target": GEMM_TARGET, "shapes": shapes, "below_target": sorted(below)}


def stream_figures(report):
    """cpu-stream: the CPU's one-token products of 1 GiB of weights, each pass timed against a memcpy of
    the same bytes straight after it (graph-bench BM_QuantMatVecVsMemcpy/<type>); issue 36's target is a
    median ratio of STREAM_TARGET or less."""
    if not isinstance(report, dict):
        return None
    types, above = {}, []
    for b in report.get("benchmarks", []):
        name = b.get("name", "")
        if not name.startswith("BM_QuantMatVecVsMemcpy/") or b.get("error_occurred") or "x_memcpy" not in b:
            continue
        t = name.split("/")[1]
        types[t] = {"GB_per_s": round(b.get("bytes_per_second", 0) / 1e9, 2), "x_memcpy": round(b["x_memcpy"], 2),
                    "x_memcpy_best": round(b.get("x_memcpy_best", b["x_memcpy"]), 2)}
        if b["x_memcpy"] > STREAM_TARGET:  # judged unrounded
            above.append(t)
    if not types:
        return None
    context = report.get("context", {})
    return {"cpus": context.get("num_cpus"), "target": STREAM_TARGET, "types": types, "above_target": sorted(above)}


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


def commit_info(work):
    """What ran: the build's record (cmake/build_info.cmake), a tool's --version, and on a tree without
    .git whether its files are still those --prepare recorded."""
    record = {}
    try:
        for line in (work / "commit.txt").read_text().splitlines():
            key, _, value = line.partition("=")
            record[key] = value
    except OSError:
        pass
    info = {"commit": record.get("commit") or None, "dirty": record.get("dirty") == "true",
            "diff_sha256": record.get("diff_sha256") or None, "source": record.get("source") or None}
    try:
        info["tool_version"] = (work / "version.txt").read_text().strip() or None
    except OSError:
        info["tool_version"] = None
    try:
        lines = (work / "tree.tsv").read_text().splitlines()
        checked = next((int(v) for k, _, v in (x.partition("\t") for x in lines) if k == "checked"), 0)
        differ = [v for k, _, v in (x.partition("\t") for x in lines) if k == "differ"]
        info["tree_check"] = {"files_checked": checked, "differ": differ[:100],
                              "matches_commit_txt": not differ}
    except OSError:
        pass
    return info


def device_info(work, device):
    devices = load_json(work / "devices.json")
    devices = devices if isinstance(devices, list) else []
    listed = next((d for d in devices if isinstance(d, dict) and d.get("name") == device), None)
    info = {"name": device, "model": None, "registry": listed, "all_devices": devices}
    try:
        fields = [f.strip() for f in (work / "nvidia-smi.csv").read_text().splitlines()[0].split(",")]
        info["nvidia_smi"] = dict(zip(("name", "driver", "memory", "compute_cap"), fields))
        info["model"] = fields[0] or None
    except (OSError, IndexError):
        pass
    if not info["model"] and listed:
        # "NVIDIA H100 80GB HBM3 (compute 9.0, 132 SMs)": the model is what precedes the parenthesis.
        info["model"] = str(listed.get("description", "")).split(" (compute")[0] or None
    return info


def with_planned(work, steps, final, end_reason, running):
    """steps.tsv's records, plus a line for each planned step that has none: running, pending, or at
    the end not-started (the deadline or a signal stopped the run first)."""
    try:
        plan = [s for s in (work / "plan.txt").read_text().splitlines() if s]
    except OSError:
        plan = []
    done = {s["step"] for s in steps}
    for name in plan:
        if name in done:
            continue
        if name == running:
            steps.append({"step": name, "exit": "running", "seconds": 0, "log": ""})
        elif final:
            steps.append({"step": name, "exit": "not-started", "seconds": 0, "log": f"not started: {end_reason}"})
        else:
            steps.append({"step": name, "exit": "pending", "seconds": 0, "log": "not reached yet"})
    return steps, plan


def vs_ggml_targets(ops, model):
    """The side by side against ggml-cuda judged on the unrounded figures: the op cases under 0.9x
    ggml's speed, the model tests under 1.0x llama-bench's (the decode without the CUDA graph replay
    is a diagnostic, not judged), and the decodes reading weights at under 0.8 of memcpy's rate."""
    out = {"op_target": VS_GGML_OP_TARGET, "model_target": VS_GGML_MODEL_TARGET, "decode_target": DECODE_TARGET}
    if ops:
        judged = [c for c in ops.get("cases", []) if c.get("vs_ggml") is not None]
        out["ops_judged"] = len(judged)
        out["ops_below"] = sorted(c["case"] for c in judged if c["vs_ggml"] < VS_GGML_OP_TARGET)
    if model:
        rows = [r for r in model.get("rows", []) if "(graphs=0)" not in r.get("test", "")]
        judged = [r for r in rows if r.get("ratio") is not None]
        out["model_tests_judged"] = len(judged)
        out["model_tests_below"] = sorted(f"{r['model']} {r['test']}" for r in judged if r["ratio"] < VS_GGML_MODEL_TARGET)
        out["decodes_below"] = sorted(f"{r['model']} {r['test']}" for r in rows
                                      if r.get("of_read_bandwidth") is not None and r["of_read_bandwidth"] < DECODE_TARGET)
    return out


def ggml_summary(work):
    return {k: load_json(work / f"{k}.json") for k in ("ggml-ops", "ggml-model") if (work / f"{k}.json").exists()}


def build_summary(work, steps, run, finished, device):
    summary = {
        "device": device_info(work, device),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": run.get("command", "").strip(),
        "commit": commit_info(work),
    }
    started = int(run.get("started", "0") or 0)
    ended = int(finished.get("ended", "0") or 0) or int(time.time())
    summary["timing"] = {"deadline_s": int(run.get("deadline", "0") or 0), "total_s": ended - started if started else None,
                         "finished": bool(finished), "end": finished.get("reason"),
                         "steps": [{"step": s["step"], "status": status_of(s), "seconds": s["seconds"]} for s in steps]}
    compare, models, profiles, runs = {}, {}, {}, {}
    for step in steps:
        name = step["step"]
        if name in ("build", "ggml-build"):
            summary[name.replace("-", "_")] = describe_step(step)
        elif name == "preflight":
            summary["preflight"] = {"ok": ok(step), "detail": step["log"]}
        elif name in ("ctest-host", "ctest-gpu"):
            report = work / name if (work / name).is_dir() else work / f"{name}.xml"
            summary[name.replace("-", "_")] = describe_step(step, extra=ctest_summary(report))
        elif name.startswith("sanitize"):
            summary.setdefault("compute_sanitizer", {})[name.split("-", 1)[-1]] = describe_step(step)
        elif name in ("opcheck-test", "opcheck-perf"):
            report = load_json(work / f"{name}.json")
            summary[name.replace("opcheck", "op_check").replace("-", "_")] = describe_step(step, report)
            if name == "opcheck-perf":
                summary["op_speedup_over_cpu"] = op_speedups(report, device)
        elif name.startswith("compare:"):
            config = name.split(":", 1)[1]
            compare[config] = describe_step(step, compare_summary(load_json(work / f"compare-{config}.json")))
        elif name.startswith("model:"):
            model = name.split(":", 1)[1]
            models[model] = describe_step(step, compare_summary(load_json(work / f"model-{model}.json")))
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
        elif name == "cpu-stream":
            summary["cpu_stream_vs_memcpy"] = describe_step(step, stream_figures(load_json(work / "cpu-stream.json")))
        elif name in ("ggml-ops", "ggml-model"):
            summary.setdefault("vs_ggml_cuda", {})[name.removeprefix("ggml-")] = describe_step(
                step, load_json(work / f"{name}.json"))
            summary["vs_ggml_cuda"]["targets"] = vs_ggml_targets(load_json(work / "ggml-ops.json"),
                                                                 load_json(work / "ggml-model.json"))
    if compare:
        summary["backend_compare"] = compare
    if models:
        summary["architecture_fixtures"] = models
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

    failed = [s["step"] for s in steps if status_of(s) in ("failed", "out of time")]
    summary["interrupted"] = [s["step"] for s in steps if s["exit"] == "interrupted"]
    not_run = [s["step"] for s in steps if s["exit"] in ("not-started", "pending", "running", "deadline", "interrupted")]
    summary["ok"] = not failed and not not_run
    summary["failed_steps"] = failed
    summary["cut_by_deadline"] = [s["step"] for s in steps if s["exit"] == "deadline"]
    summary["not_started"] = [s["step"] for s in steps if s["exit"] == "not-started"]
    return summary


def progress_text(run, finished, steps, commit, device, running):
    started = int(run.get("started", "0") or 0)
    now = int(finished.get("ended", "0") or 0) or int(time.time())
    deadline = run.get("deadline", "?")
    counts = {}
    for s in steps:
        counts[status_of(s)] = counts.get(status_of(s), 0) + 1
    head = (f"gpu-check {'finished (' + finished.get('reason', '') + ')' if finished else 'running'}: "
            f"{now - started if started else '?'} s of the {deadline} s deadline; commit "
            f"{(commit.get('commit') or 'unknown')[:12]}{' (dirty)' if commit.get('dirty') else ''}; device {device}")
    lines = [head, ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no step yet"]
    if running:
        lines.append(f"now running: {running}")
    for s in steps:
        if s["exit"] in ("pending", "running"):
            continue
        lines.append(f"  {s['step']:<40} {status_of(s):<12} {s['seconds']:>4} s"
                     + (f"  exit {s['exit']}" if status_of(s) in ("failed", "out of time") else ""))
    return "\n".join(lines) + "\n"


def replace_file(path, data):
    """Writes path whole or not at all (the GPU machine may be stopped at any moment)."""
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def pack_logs(work):
    """WORK as a gzipped tar in memory; files over LOG_LIMIT keep their first and last LOG_LIMIT/4 bytes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in sorted(work.rglob("*")):
            if not path.is_file() or path.name.startswith("."):
                continue
            name = str(Path(work.name) / path.relative_to(work))
            size = path.stat().st_size
            if size <= LOG_LIMIT:
                tar.add(path, arcname=name, recursive=False)
                continue
            with path.open("rb") as f:
                head = f.read(LOG_LIMIT // 4)
                f.seek(size - LOG_LIMIT // 4)
                data = head + f"\n[... {size - LOG_LIMIT // 2} bytes cut by gpu-check ...]\n".encode() + f.read()
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), int(path.stat().st_mtime)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--summary-dir", required=True, type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--running")
    ap.add_argument("--progress-only", action="store_true")
    ap.add_argument("--final", action="store_true")
    args = ap.parse_args(argv[1:])
    work = args.work
    run = read_tsv(work / "run.tsv")
    finished = read_tsv(work / "finished.tsv") if args.final else {}
    device = run.get("device", "CUDA0")
    steps, _ = with_planned(work, read_steps(work), args.final, finished.get("reason", ""), args.running)
    commit = commit_info(work)
    progress = progress_text(run, finished, steps, commit, device, args.running).encode()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        replace_file(args.out / "progress.txt", progress)
    if args.progress_only:
        return 0

    summary = build_summary(work, steps, run, finished, device)
    model = summary["device"]["model"]
    if run.get("host_only") == "1":
        model = f"simulated {device}" if device.startswith("SIM") else model
    label = re.sub(r"[^a-z0-9]+", "-", (model or device).lower()).strip("-") or "unknown"
    summary["results_file"] = f"results/gpu-{label}.json"
    text = (json.dumps(summary, indent=2) + "\n").encode()
    replace_file(work / "summary.json", text)
    if args.summary_dir.resolve() != work.resolve():
        args.summary_dir.mkdir(parents=True, exist_ok=True)
        replace_file(args.summary_dir / f"gpu-{label}.json", text)
    if args.out:
        replace_file(args.out / "summary.json", text)
        replace_file(args.out / "gpu-check-logs.tar.gz", pack_logs(work))
    if args.final:
        failed, cut, missing = summary["failed_steps"], summary["cut_by_deadline"], summary["not_started"]
        verdict = "all steps passed" if summary["ok"] else "; ".join(
            x for x in (failed and "FAILED: " + ", ".join(failed), cut and "cut by the deadline: " + ", ".join(cut),
                        summary["interrupted"] and "interrupted: " + ", ".join(summary["interrupted"]),
                        missing and f"{len(missing)} not started") if x)
        where = work / "summary.json" if args.summary_dir.resolve() == work.resolve() else args.summary_dir / f"gpu-{label}.json"
        print(f"gpu-check: {verdict}; summary in {where}"
              + (f" and {args.out}" if args.out else ""), file=sys.stderr)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
