"""Merging the partial results of `regress run --shard K/N` into the results file of an unsharded run.

The merged file has the schema `run` writes without --shard, so compare reads it unchanged:
  cases        every part's cases, in the suite's order;
  machine, devices, calibration, calibration_runs
               those of shard 1 (the lowest index given), as if the whole suite had run there: compare
               scales all timings by that one calibration. machine.dirty is true when any part's was;
  wall_s       the slowest part's (the wall time of the shards run side by side);
  shards       per part, in index order: its index, cases, wall_s, machine, devices and calibrations,
               so that nothing a part recorded is lost.
Parts that cannot make one run are refused (UsageError: exit 2, one line naming the files).
"""
from .errors import UsageError, shown
from .results import load_results

_NAMED = 5  # cases named in a message before "and N more"


def _names(names):
    names = list(names)
    listed = ", ".join(shown(n) for n in names[:_NAMED])
    return listed + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_name_list(value):
    return isinstance(value, list) and all(isinstance(v, str) for v in value) and len(set(value)) == len(value)


def _shard_problem(shard, cases):
    """What is wrong with a part's "shard" object, or None."""
    if not isinstance(shard, dict):
        return "no \"shard\" object"
    index, count = shard.get("index"), shard.get("count")
    if not (_is_int(index) and _is_int(count) and 1 <= index <= count):
        return "/shard/index and /shard/count must be integers with 1 <= index <= count"
    if not (_is_name_list(shard.get("cases")) and _is_name_list(shard.get("suite_cases"))
            and isinstance(shard.get("suite_hash"), str)):
        return "/shard needs cases and suite_cases (lists of distinct names) and suite_hash"
    if set(shard["cases"]) != set(cases):
        return "/shard/cases does not list the same cases as /cases"
    stray = [c for c in shard["cases"] if c not in set(shard["suite_cases"])]
    if stray:
        return f"/shard/cases names cases not in /shard/suite_cases: {_names(stray)}"
    return None


def load_part(path):
    """A partial results file; a UsageError when PATH is not one."""
    data = load_results(path)
    problem = _shard_problem(data.get("shard"), data["cases"])
    if problem:
        raise UsageError(f"{path}: not a partial results file ({problem}); write parts with scripts/regress run "
                         f"--shard K/N")
    return data


def _commit(data):
    return (data.get("machine") or {}).get("commit") or "unknown"


# What every part must share, and how to say that two parts do not.
_SAME = (
    (_commit, lambda a, b: f"come from different commits ({shown(a, 12)} vs {shown(b, 12)})"),
    (lambda d: d["shard"]["suite_hash"], lambda a, b: f"ran different suite files ({shown(a, 19)} vs {shown(b, 19)})"),
    (lambda d: d["shard"]["suite_cases"], lambda a, b: "ran different lists of cases (another --filter?)"),
    (lambda d: d["shard"]["count"], lambda a, b: f"are shards of different splits (of {a} vs of {b})"),
)


def _check_parts(parts):
    """Refuses parts that do not add up to one run: PARTS is [(path, data)] sorted by shard index."""
    first_path, first = parts[0]
    for path, data in parts[1:]:
        for key, problem in _SAME:
            if key(data) != key(first):
                raise UsageError(f"merge: {first_path} and {path} {problem(key(first), key(data))}")
    owner = {}    # shard index -> path
    where = {}    # case -> path of the part that ran it
    for path, data in parts:
        index = data["shard"]["index"]
        if index in owner:
            raise UsageError(f"merge: {owner[index]} and {path} are both shard {index} of {data['shard']['count']}")
        owner[index] = path
        for case in data["shard"]["cases"]:
            if case in where:
                both = [c for c in data["shard"]["cases"] if where.get(c) == where[case]]
                raise UsageError(f"merge: {where[case]} and {path} both ran {_names(both)} (shards of different "
                                 f"assignments: another --baseline?)")
            where[case] = path
    missing = [c for c in first["shard"]["suite_cases"] if c not in where]
    if missing:
        count = first["shard"]["count"]
        absent = [str(i) for i in range(1, count + 1) if i not in owner]
        why = (f"shard(s) {', '.join(absent)} of {count} not given" if absent
               else "every shard given, but split differently: another --baseline?")
        raise UsageError(f"merge: no part ran {_names(missing)} (parts: {', '.join(map(str, owner.values()))}; {why})")


def _any_dirty(parts):
    """machine.dirty of the merged run: true when any part's was, unknown (None) when any is unknown."""
    flags = [(d.get("machine") or {}).get("dirty") for _, d in parts]
    return True if True in flags else (None if None in flags else False)


def merge_parts(parts):
    """One results file from PARTS, [(path, data)] as load_part returns them, in any order."""
    if not parts:
        raise UsageError("merge: no parts given")
    parts = sorted(parts, key=lambda p: (p[1]["shard"]["index"], str(p[0])))
    _check_parts(parts)
    first = parts[0][1]
    ran = {name: case for _, data in parts for name, case in data["cases"].items()}
    merged = {k: v for k, v in first.items() if k != "shard"}  # the schema and key order of an unsharded run
    if isinstance(merged.get("machine"), dict):
        merged["machine"] = {**merged["machine"], "dirty": _any_dirty(parts)}
    merged["cases"] = {name: ran[name] for name in first["shard"]["suite_cases"]}
    merged["wall_s"] = max((d.get("wall_s") or 0 for _, d in parts), default=0)
    merged["shards"] = [{"index": d["shard"]["index"], "cases": d["shard"]["cases"], "wall_s": d.get("wall_s"),
                         "machine": d.get("machine"), "devices": d.get("devices"),
                         "calibration": d.get("calibration"), "calibration_runs": d.get("calibration_runs")}
                        for _, d in parts]
    return merged
