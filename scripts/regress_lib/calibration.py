"""The machine's speed, measured in the same run as the suite, so that timings compare as ratios.

The calibration kernels (memcpy bandwidth, an OpenBLAS sgemm, both from graph-bench) do not run
xbackend's own code: a regression in xbackend slows the cases but not the calibration, while a
slower or busier machine slows both.
"""
import os
import re

from .tools import ToolError

_MS_PER_UNIT = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def _fastest_ms(benchmarks, name):
    """The fastest repetition of benchmark NAME in milliseconds: on a shared machine other work only
    ever adds time, so the minimum is the figure least disturbed by it."""
    runs = [b for b in benchmarks if b.get("run_name", b["name"]) == name and b.get("run_type", "iteration") ==
            "iteration" and "error_message" not in b]
    if not runs:
        return None
    return min(b["real_time"] * _MS_PER_UNIT[b["time_unit"]] for b in runs)


def resolve_name(name, cpus=None):
    """A suite's benchmark name with {cpus} replaced by this machine's CPU count: graph-bench names its
    read-bandwidth probe by thread count (BM_ReadBandwidth/threads:N), and the calibration reads with
    all of them, as many as the machine the suite runs on has."""
    return name.replace("{cpus}", str(cpus if cpus is not None else (os.cpu_count() or 1)))


def measure(tools, calibration):
    """{key: milliseconds} for each benchmark the suite names; raises ToolError when one is missing."""
    names = {key: resolve_name(name) for key, name in calibration.benchmarks.items()}
    pattern = "^(" + "|".join(re.escape(n) for n in names.values()) + ")$"
    _, out = tools.run_json("graph-bench", [f"--benchmark_filter={pattern}", "--benchmark_format=json",
                                            f"--benchmark_min_time={calibration.min_time}",
                                            f"--benchmark_repetitions={calibration.repetitions}"])
    figures = {}
    for key, name in names.items():
        ms = _fastest_ms(out.get("benchmarks", []), name)
        if ms is None:
            raise ToolError(f"graph-bench has no benchmark {name} (see graph-bench --benchmark_list_tests)")
        figures[key] = round(ms, 6)
    return figures
