"""Loading a results file (from `regress run`, or a baseline) for comparison, with clear errors."""
from .errors import UsageError
from .jsonfile import load_json
from .run import FORMAT

CASE_STATUSES = ("ok", "skipped", "error")


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_case_figures(path, name, case):
    """The shapes compare relies on: figures are objects, timings and NMSEs numbers (or null)."""
    for key in ("graph", "numerics", "timing"):
        if not isinstance(case.get(key, {}), dict):
            raise UsageError(f"{path}: /cases/{name}/{key}: an object is required")
    timing = case.get("timing", {})
    for key in ("min_ms", "median_ms"):
        if key in timing and not _is_number(timing[key]):
            raise UsageError(f"{path}: /cases/{name}/timing/{key}: a number is required")
    # The load check (load.py), absent from files written before it.
    if not isinstance(timing.get("under_load", False), bool):
        raise UsageError(f"{path}: /cases/{name}/timing/under_load: true or false is required")
    if not isinstance(timing.get("load", {}), dict):
        raise UsageError(f"{path}: /cases/{name}/timing/load: an object is required")
    for op, figures in case.get("numerics", {}).items():
        if not isinstance(figures, dict) or not all(figures.get(k) is None or _is_number(figures[k])
                                                    for k in ("worst_nmse", "tolerance", "n_fail", "n_nodes")):
            raise UsageError(f"{path}: /cases/{name}/numerics/{op}: numbers (or null) are required")


def load_results(path):
    data = load_json(path, "results file")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(f"{path}: not a regress results file (expected \"format\": \"{FORMAT}\"; "
                         f"write one with scripts/regress run)")
    cases = data.get("cases")
    if not isinstance(cases, dict):
        raise UsageError(f"{path}: /cases: an object of cases by name is required")
    for name, case in cases.items():
        if not isinstance(case, dict) or case.get("status") not in CASE_STATUSES:
            raise UsageError(f"{path}: /cases/{name}/status: one of {', '.join(CASE_STATUSES)} is required")
        _check_case_figures(path, name, case)
    cal = data.get("calibration")
    if cal is not None and not (isinstance(cal, dict) and all(_is_number(v) and v > 0 for v in cal.values())):
        raise UsageError(f"{path}: /calibration: positive numbers (milliseconds) by name, or null")
    return data
