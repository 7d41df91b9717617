#!/usr/bin/env python3
"""Writes tests/regress/data/corrupt/: two good partial results files (part-1.json, part-2.json, the
shards of data/base.json) and files broken in each way a hand edit, a cut-short copy or a hostile
user can break them. test_hostile.py runs every regress verb on each: one line on stderr, exit 2.

    python3 tests/regress/make_corrupt.py

parts/   partial results files (merge's input; compare's too): wrong-typed fields, not UTF-8, nested
         too deep, numbers JSON has not (NaN, 1e999) or arithmetic cannot take (400 digits), names
         with newlines and terminal escapes;
suites/  suite files (run's and update's input) with wrong-typed fields.
"""
import copy
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE = json.loads((HERE / "data" / "base.json").read_text())
NAMES = list(BASE["cases"])
OUT = HERE / "data" / "corrupt"


def part(index, cases):
    d = copy.deepcopy(BASE)
    d["cases"] = {k: BASE["cases"][k] for k in cases}
    d["shard"] = {"index": index, "count": 2, "cases": cases, "suite_cases": NAMES, "suite_hash": "sha256:test"}
    return d


GOOD = {1: part(1, NAMES[:1]), 2: part(2, NAMES[1:])}


def edited(edit):
    d = copy.deepcopy(GOOD[2])
    edit(d)
    return json.dumps(d)


def case(d):
    return d["cases"][NAMES[1]]


def setter(path, value):
    """An edit that sets d[path[0]][path[1]]... to VALUE ("@case" is shard 2's first case)."""
    def edit(d):
        node = d
        for key in path[:-1]:
            node = case(d) if key == "@case" else node[key]
        node[path[-1]] = value
    return edit


def renamed(name):
    """Shard 2's first case under another name, everywhere the file names it."""
    def edit(d):
        d["cases"] = {name if k == NAMES[1] else k: v for k, v in d["cases"].items()}
        d["cases"][name]["status"] = "broken"  # and invalid, so that a message quotes the name
        for key in ("cases", "suite_cases"):
            d["shard"][key] = [name if k == NAMES[1] else k for k in d["shard"][key]]
    return edit


PARTS = {
    "machine-string": edited(setter(["machine"], "a string")),
    "commit-number": edited(setter(["machine", "commit"], 5)),
    "dirty-string": edited(setter(["machine", "dirty"], "yes")),
    "machine-nested": edited(setter(["machine", "cpu_model"], {"x": [1]})),
    "wall-string": edited(setter(["wall_s"], "slow")),
    "index-string": edited(setter(["shard", "index"], "2")),
    "index-bool": edited(setter(["shard", "index"], True)),
    "shard-cases-numbers": edited(setter(["shard", "cases"], [1, 2])),
    "cases-list": edited(setter(["cases"], [])),
    "status-list": edited(setter(["@case", "status"], ["ok"])),
    "note-number": edited(setter(["@case", "note"], 3)),
    "graph-list-value": edited(setter(["@case", "graph"], {"n_nodes": [1, 2]})),
    "graph-string": edited(setter(["@case", "graph"], "many")),
    "min-ms-string": edited(setter(["@case", "timing", "min_ms"], "3")),
    "min-ms-400-digits": edited(setter(["@case", "timing", "min_ms"], 10**400)),
    "reps-float": edited(setter(["@case", "timing", "reps"], 2.5)),
    "load-list": edited(setter(["@case", "timing", "load"], [1])),
    "load-others-string": edited(setter(["@case", "timing", "load"], {"others_before": "two"})),
    "numerics-string": edited(setter(["@case", "numerics"], {"mul_mat": {"worst_nmse": "x"}})),
    "calibration-list": edited(setter(["calibration"], [1, 2])),
    "calibration-zero": edited(setter(["calibration"], {"memcpy_ms": 0})),
    "devices-number": edited(setter(["devices"], 4)),
    "newline-in-name": edited(renamed("case\nINFO: all cases passed\x1b[2J")),
    "long-name": edited(renamed("c" * 5000)),
    "top-level-list": "[]",
    "empty": "",
    "cut-short": json.dumps(GOOD[2])[:200],
    "nan": json.dumps(GOOD[2]).replace('"wall_s": ', '"wall_s": NaN, "was": '),
    "infinity-literal": json.dumps(GOOD[2]).replace('"wall_s": ', '"wall_s": 1e999, "was": '),
    "int-5000-digits": '{"format": ' + "9" * 5000 + "}",
    "nested-10000": "[" * 10000 + "]" * 10000,
    "not-utf8": b'{"format": "xbackend-regress/1", "cases": {"\xff\xfe": {}}}',
}

SUITE = {"threads": 2, "calibration": {"benchmarks": {"memcpy_ms": "BM_Memcpy/16777216/real_time"}},
         "cases": [{"name": "a", "config": "configs/default.json", "backends": ["CPU"]}]}


def suite(edit):
    d = copy.deepcopy(SUITE)
    edit(d)
    return json.dumps(d)


SUITES = {
    "threads-bool": suite(lambda d: d.update(threads=True)),
    "reps-string": suite(lambda d: d.update(reps="10")),
    "benchmark-number": suite(lambda d: d["calibration"]["benchmarks"].update(memcpy_ms=5)),
    "min-time-string": suite(lambda d: d["calibration"].update(min_time="fast")),
    "repetitions-huge": suite(lambda d: d["calibration"].update(repetitions=10**9)),
    "needs-gpu-string": suite(lambda d: d["cases"][0].update(needs_gpu="yes")),
    "duplicate-name-newline": suite(lambda d: d.update(cases=[dict(d["cases"][0], name="x\ny\x1b[2J")] * 2)),
    "not-utf8": b'{"cases": [{"name": "\xff"}]}',
    "nested-10000": "[" * 10000 + "]" * 10000,
}


def write(folder, files):
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        path = folder / f"{name}.json"
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape"))


def main():
    write(OUT, {f"part-{i}": json.dumps(d) for i, d in GOOD.items()})
    write(OUT / "parts", PARTS)
    write(OUT / "suites", SUITES)
    print(f"make_corrupt: wrote 2 good parts, {len(PARTS)} corrupt parts and {len(SUITES)} corrupt suites to {OUT}")


if __name__ == "__main__":
    main()
