"""Loading a results file (from `regress run`, or a baseline) for comparison, with clear errors.

Every field that compare, merge and the reports read is checked here for its type, so that a file
edited by hand, cut short or made up gives one line naming the field (exit 2), never a traceback."""
import math

from .errors import UsageError, shown
from .jsonfile import load_json
from .run import FORMAT

CASE_STATUSES = ("ok", "skipped", "error")


def _is_number(v):
    """A JSON number that arithmetic can take: not a bool, and finite as a float (an integer of 400 digits is not)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def _is_scalar(v):
    return v is None or isinstance(v, (str, bool)) or _is_number(v)


def _check(cond, path, where, message):
    if not cond:
        raise UsageError(f"{path}: {where}: {message}")


def _check_figures(path, where, figures):
    """sched-profile's figures: numbers (or strings, booleans, null) by name, in objects nested to any depth."""
    _check(isinstance(figures, dict), path, where, "an object is required")
    for key, value in figures.items():
        if isinstance(value, dict):
            _check_figures(path, f"{where}/{shown(key)}", value)
        else:
            _check(_is_scalar(value), path, f"{where}/{shown(key)}", "a number, string, boolean or null is required")


def _check_timing(path, where, timing):
    _check(isinstance(timing, dict), path, where, "an object is required")
    for key in ("min_ms", "median_ms"):
        _check(key not in timing or _is_number(timing[key]), path, f"{where}/{key}", "a number is required")
    for key in ("reps", "attempts"):
        _check(key not in timing or (isinstance(timing[key], int) and not isinstance(timing[key], bool)), path,
               f"{where}/{key}", "an integer is required")
    # The load check (load.py), absent from files written before it.
    _check(isinstance(timing.get("under_load", False), bool), path, f"{where}/under_load", "true or false is required")
    load = timing.get("load", {})
    _check(isinstance(load, dict) and all(_is_scalar(v) for v in load.values()), path, f"{where}/load",
           "an object of numbers is required")
    for key in ("others_before", "others_after"):
        _check(load.get(key) is None or _is_number(load[key]), path, f"{where}/load/{key}", "a number or null is required")


def _check_case(path, name, case):
    where = f"/cases/{shown(name)}"
    _check(isinstance(case, dict) and case.get("status") in CASE_STATUSES, path, f"{where}/status",
           f"one of {', '.join(CASE_STATUSES)} is required")
    _check(isinstance(case.get("note", ""), str), path, f"{where}/note", "a string is required")
    _check_figures(path, f"{where}/graph", case.get("graph", {}))
    _check_timing(path, f"{where}/timing", case.get("timing", {}))
    numerics = case.get("numerics", {})
    _check(isinstance(numerics, dict), path, f"{where}/numerics", "an object is required")
    for op, figures in numerics.items():
        _check(isinstance(figures, dict) and all(figures.get(k) is None or _is_number(figures[k])
                                                 for k in ("worst_nmse", "tolerance", "n_fail", "n_nodes")),
               path, f"{where}/numerics/{shown(op)}", "numbers (or null) are required")


def _check_machine(path, machine):
    _check(isinstance(machine, dict) and all(_is_scalar(v) for v in machine.values()), path, "/machine",
           "an object of strings and numbers is required")
    _check(machine.get("commit") is None or isinstance(machine["commit"], str), path, "/machine/commit",
           "a string is required")
    _check(machine.get("dirty") is None or isinstance(machine["dirty"], bool), path, "/machine/dirty",
           "true, false or null is required")


def load_results(path):
    data = load_json(path, "results file")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(f"{path}: not a regress results file (expected \"format\": \"{FORMAT}\"; "
                         f"write one with scripts/regress run)")
    cases = data.get("cases")
    _check(isinstance(cases, dict), path, "/cases", "an object of cases by name is required")
    for name, case in cases.items():
        _check_case(path, name, case)
    if data.get("machine") is not None:
        _check_machine(path, data["machine"])
    _check(data.get("wall_s") is None or _is_number(data["wall_s"]), path, "/wall_s", "a number or null is required")
    cal = data.get("calibration")
    _check(cal is None or (isinstance(cal, dict) and all(_is_number(v) and v > 0 for v in cal.values())), path,
           "/calibration", "positive numbers (milliseconds) by name, or null")
    runs = data.get("calibration_runs")
    _check(runs is None or isinstance(runs, dict), path, "/calibration_runs", "an object or null is required")
    devices = data.get("devices")
    _check(devices is None or (isinstance(devices, list) and all(isinstance(d, str) for d in devices)), path,
           "/devices", "a list of device names is required")
    return data
