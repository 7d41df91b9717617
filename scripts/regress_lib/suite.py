"""The regression suite (results/suite.json): its cases and the run settings they share."""
from collections import Counter
from dataclasses import dataclass, field

from .errors import UsageError, shown
from .jsonfile import load_json

# What a case can record, and the tool that measures it.
RECORDS = {
    "graph": "sched-profile --dry-run: nodes, splits, copies and bytes per backend pair, buffer sizes",
    "timing": "graph-run: fastest and median compute time",
    "numerics": "backend-compare: worst NMSE per op against its tolerance",
}


@dataclass
class Case:
    name: str
    config: str
    backends: list
    record: list
    compare: list = None      # [reference, target] for backend-compare
    args: list = field(default_factory=list)
    needs_gpu: bool = False
    reps: int = 10
    warmup: int = 2


@dataclass
class Calibration:
    benchmarks: dict          # result key -> graph-bench benchmark name
    min_time: float = 0.2
    repetitions: int = 3


@dataclass
class Suite:
    path: str
    threads: int
    calibration: Calibration
    cases: list


def _require(cond, path, where, message):
    if not cond:
        raise UsageError(f"{path}: {where}: {message}")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str_list(value, length=None):
    return (isinstance(value, list) and all(isinstance(v, str) and v for v in value)
            and (length is None or len(value) == length))


def _parse_case(path, i, raw, defaults):
    where = f"/cases/{i}"
    _require(isinstance(raw, dict), path, where, "a case is an object")
    for key in ("name", "config"):
        _require(isinstance(raw.get(key), str) and raw[key], path, f"{where}/{key}", "a non-empty string is required")
    _require(_is_str_list(raw.get("backends")) and raw["backends"], path, f"{where}/backends",
             "a non-empty list of device names is required, e.g. [\"SIM0\", \"CPU\"]")
    record = raw.get("record", ["graph", "timing"])
    _require(_is_str_list(record) and set(record) <= set(RECORDS), path, f"{where}/record",
             f"a list of {', '.join(RECORDS)}")
    compare = raw.get("compare")
    _require(compare is None or _is_str_list(compare, 2), path, f"{where}/compare",
             "a [reference, target] pair of device names")
    _require(("numerics" not in record) or compare, path, f"{where}/compare",
             "recording numerics needs a compare pair")
    args = raw.get("args", [])
    _require(_is_str_list(args), path, f"{where}/args", "a list of tool arguments")
    for key in ("reps", "warmup"):
        value = raw.get(key, defaults[key])
        _require(_is_int(value) and value >= (1 if key == "reps" else 0), path, f"{where}/{key}",
                 "a non-negative integer (reps at least 1)")
    _require(isinstance(raw.get("needs_gpu", False), bool), path, f"{where}/needs_gpu", "true or false")
    _require(isinstance(raw.get("description", ""), str), path, f"{where}/description", "a string")
    known = {"name", "description", "config", "backends", "record", "compare", "args", "needs_gpu", "reps", "warmup"}
    unknown = sorted(set(raw) - known)
    _require(not unknown, path, where, f"unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return Case(name=raw["name"], config=raw["config"], backends=raw["backends"], record=record, compare=compare,
                args=args, needs_gpu=bool(raw.get("needs_gpu", False)), reps=raw.get("reps", defaults["reps"]),
                warmup=raw.get("warmup", defaults["warmup"]))


def load_suite(path):
    raw = load_json(path, "suite")
    _require(isinstance(raw, dict) and isinstance(raw.get("cases"), list), path, "/cases",
             "a list of cases is required")
    threads = raw.get("threads", 2)
    _require(_is_int(threads) and threads >= 1, path, "/threads", "a positive integer")
    defaults = {"reps": raw.get("reps", 10), "warmup": raw.get("warmup", 2)}
    for key, least in (("reps", 1), ("warmup", 0)):
        _require(_is_int(defaults[key]) and defaults[key] >= least, path, f"/{key}", f"an integer of at least {least}")
    cases = [_parse_case(path, i, c, defaults) for i, c in enumerate(raw["cases"])]
    names = [c.name for c in cases]
    dup = sorted(n for n, count in Counter(names).items() if count > 1)
    _require(not dup, path, "/cases", f"duplicate case name(s): {', '.join(shown(n) for n in dup)}")
    cal = raw.get("calibration", {})
    _require(isinstance(cal, dict) and isinstance(cal.get("benchmarks"), dict) and cal["benchmarks"], path,
             "/calibration/benchmarks",
             "an object naming graph-bench benchmarks, e.g. {\"memcpy_ms\": \"BM_Memcpy/16777216/real_time\"}")
    _require(all(isinstance(k, str) and isinstance(v, str) and v for k, v in cal["benchmarks"].items()), path,
             "/calibration/benchmarks", "benchmark names (strings) by result key")
    min_time, repetitions = cal.get("min_time", 0.2), cal.get("repetitions", 3)
    _require(isinstance(min_time, (int, float)) and not isinstance(min_time, bool) and 0 < min_time <= 60, path,
             "/calibration/min_time", "seconds, more than 0 and at most 60")
    _require(_is_int(repetitions) and 1 <= repetitions <= 100, path, "/calibration/repetitions", "an integer, 1 to 100")
    calibration = Calibration(benchmarks=cal["benchmarks"], min_time=min_time, repetitions=repetitions)
    return Suite(path=str(path), threads=threads, calibration=calibration, cases=cases)
