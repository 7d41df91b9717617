"""Splitting the suite into N balanced, deterministic shards (`regress run --shard K/N`).

Every shard of one split must compute the same assignment on its own, on another machine: the
assignment depends only on the case names, their weights and N, never on dict or file order.
"""
import dataclasses
import hashlib
import math
import re
from pathlib import Path

from .errors import UsageError
from .jsonfile import load_json

_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def parse_shard_spec(text):
    """(K, N) from "K/N", K 1-based as in GitHub matrices, Slurm arrays (--array=1-N) and GitLab's CI_NODE_INDEX."""
    m = _SPEC.fullmatch(text or "")
    if not m:
        raise UsageError(f"--shard {text}: expected K/N, e.g. --shard 2/4 (the 2nd of 4 shards; K counts from 1)")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= k <= n:
        raise UsageError(f"--shard {text}: K must be 1..N and N at least 1 (K counts from 1; "
                         f"from a 0-based index i pass $((i+1))/N)")
    return k, n


def _case_weight(entry):
    """A case's recorded run time: its wall time if the run recorded one, else its median compute time, else 1."""
    if not isinstance(entry, dict):
        return 1.0
    timing = entry.get("timing")
    for value in (entry.get("elapsed_s"), timing.get("median_ms") if isinstance(timing, dict) else None):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
            return float(value)
    return 1.0


def case_weights(case_names, baseline_path):
    """{name: weight} from the results file BASELINE_PATH: 1.0 for every case when there is no such file, and for
    each case it lacks. A file that exists but is not valid JSON is a usage error (it would be one for compare too)."""
    if baseline_path is None or not Path(baseline_path).exists():
        return {name: 1.0 for name in case_names}
    baseline = load_json(baseline_path, "baseline")
    cases = baseline.get("cases") if isinstance(baseline, dict) else None
    cases = cases if isinstance(cases, dict) else {}
    return {name: _case_weight(cases.get(name)) for name in case_names}


def assign_shards(case_names, weights, n):
    """The cases split into N lists by the longest-processing-time rule: heaviest case first (ties by name),
    each to the currently lightest shard (ties to the lowest index). Each list is sorted by name.

    LPT keeps the heaviest shard within 4/3 of the best possible split, and needs no search.
    """
    if n < 1:
        raise ValueError(f"assign_shards: n must be at least 1, got {n}")
    loads = [0.0] * n
    shards = [[] for _ in range(n)]
    for name in sorted(set(case_names), key=lambda c: (-weights.get(c, 1.0), c)):
        lightest = min(range(n), key=lambda i: (loads[i], i))
        shards[lightest].append(name)
        loads[lightest] += weights.get(name, 1.0)
    return [sorted(s) for s in shards]


def suite_hash(path):
    """The sha256 of the suite file's bytes: parts of one merge must have run the same suite."""
    with open(path, "rb") as f:
        return "sha256:" + hashlib.sha256(f.read()).hexdigest()


def select_shard(suite, k, n, weights):
    """The suite with only the K-th of N shards' cases (in suite order), and the "shard" object of its results.

    suite_cases keeps the (filtered) suite's order rather than sorting it, so that `merge` can put the
    cases back in the order an unsharded run writes them.
    """
    mine = set(assign_shards([c.name for c in suite.cases], weights, n)[k - 1])
    cases = [c for c in suite.cases if c.name in mine]
    block = {"index": k, "count": n, "cases": [c.name for c in cases], "suite_cases": [c.name for c in suite.cases],
             "suite_hash": suite_hash(suite.path)}
    return dataclasses.replace(suite, cases=cases), block
