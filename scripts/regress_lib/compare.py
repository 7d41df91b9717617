"""Compares two results files metric by metric and decides which differences are regressions.

Three kinds of metric, each a gate that can be switched on or off:
  deterministic  node and split counts, copies and copy bytes per backend pair, compute buffer
                 bytes: any change is flagged (update the baseline in the same change when it is meant);
  numerics       backend-compare's worst NMSE per op: flagged when over the op's tolerance, or when
                 any node of the op failed;
  timing         the fastest compute of a case's reps: flagged when its ratio, divided by the machine
                 factor (the change in the calibration measured in the same runs), is over the
                 threshold; reported only, never gated, when either run timed the case under load
                 (load.py: other work filled the CPUs, even after retries).
A case that fails to run (a tool error, a device missing that is not a GPU) is always flagged.

Every row's `ratio` is new / base as measured. Timing rows also carry `machine`, the machine factor,
and `corrected`, ratio / machine: the figure the verdict compares with the threshold.
"""
import math
from dataclasses import dataclass, field

from .load import busy_text

GATES = ("deterministic", "numerics", "timing")


@dataclass
class Row:
    case: str
    category: str          # one of GATES, or "case" for a case that failed to run
    metric: str
    base: object
    new: object
    ratio: float = None    # new / base, as measured
    flag: str = ""
    gated: bool = True
    note: str = ""
    machine: float = None    # timings: the machine factor (how much slower the new run's machine was)
    corrected: float = None  # timings: ratio / machine, which the threshold judges
    under_load: bool = False  # timings: either run timed the case under load, so it is never gated

    @property
    def judged_ratio(self):
        """The ratio the verdict reads: corrected for timings, else the plain ratio."""
        return self.corrected if self.corrected is not None else self.ratio


def changed(row):
    """Whether a row shows a difference worth reading: flagged, a ratio other than 1, or unequal values."""
    if row.flag:
        return True
    if row.ratio is not None:
        return abs(row.ratio - 1.0) > 1e-12
    return row.base != row.new


@dataclass
class Comparison:
    rows: list
    notes: list
    threshold: float
    gates: tuple
    calibration_factor: float
    base_calibration: dict = None
    new_calibration: dict = None
    base_machine: dict = field(default_factory=dict)
    new_machine: dict = field(default_factory=dict)

    @property
    def regressions(self):
        return [r for r in self.rows if r.flag and r.gated]


def ratio(base, new):
    if base == new:
        return 1.0
    if isinstance(base, (int, float)) and isinstance(new, (int, float)) and base != 0:
        return new / base
    return None


def calibration_factor(base_cal, new_cal):
    """How much slower the new run's machine was: the geometric mean of new/base over the calibration kernels."""
    keys = sorted(set(base_cal or {}) & set(new_cal or {}))
    if not keys:
        return None
    return math.exp(sum(math.log(new_cal[k] / base_cal[k]) for k in keys) / len(keys))


def _flatten(figures, prefix=""):
    """{"buffer_bytes": {"CPU": 1}} -> {"buffer_bytes.CPU": 1}, keeping the order of the file."""
    flat = {}
    for key, value in figures.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _union(a, b):
    return list(dict.fromkeys([*a, *b]))


def deterministic_rows(name, base, new):
    b, n = _flatten(base.get("graph", {})), _flatten(new.get("graph", {}))
    return [Row(name, "deterministic", m, b.get(m), n.get(m), ratio(b.get(m), n.get(m)),
                "" if b.get(m) == n.get(m) else "changed") for m in _union(b, n)]


def _over_tolerance(op):
    worst, tol = op.get("worst_nmse"), op.get("tolerance")
    return op.get("n_fail", 0) > 0 or (worst is not None and tol is not None and worst > tol)


def numerics_rows(name, base, new):
    b, n = base.get("numerics", {}), new.get("numerics", {})
    rows = []
    for op in _union(b, n):
        bo, no = b.get(op, {}), n.get(op, {})
        tol = no.get("tolerance", bo.get("tolerance"))
        metric = f"nmse {op}" + (f" (tol {tol:.0e})" if tol is not None else "")
        bv, nv = bo.get("worst_nmse"), no.get("worst_nmse")
        flag = "over tolerance" if no and _over_tolerance(no) else ""
        if bv is None and nv is None and not flag:
            continue  # the target skips this op on both sides: nothing to show
        note = f"{no['n_fail']} of {no['n_nodes']} nodes failed" if no.get("n_fail") else ""
        rows.append(Row(name, "numerics", metric, bv, nv, ratio(bv, nv), flag, note=note))
    return rows


def _load_note(base_timing, new_timing):
    """Which runs timed the case under load ("new timed while 2 other tasks ran ..."), or ""."""
    parts = []
    for side, t in (("base", base_timing), ("new", new_timing)):
        if t.get("under_load"):
            load = t.get("load") or {}
            parts.append(f"{side} timed under load ({busy_text(load)}, {t.get('attempts', 1)} timings)"
                         if load else f"{side} timed under load")
    return "; ".join(parts)


def timing_rows(name, base, new, factor, threshold):
    """The fastest compute of the reps (other work on a shared machine only ever adds time); ratio is
    new/base, and corrected, that ratio divided by the machine factor, is judged against THRESHOLD.
    The median is in the results files for reading."""
    b, n = base.get("timing", {}), new.get("timing", {})
    if "min_ms" not in b or "min_ms" not in n:
        return []
    raw = ratio(b["min_ms"], n["min_ms"])
    corrected = raw / (factor or 1.0) if raw is not None else None  # no calibration: unscaled, with a note
    load = _load_note(b, n)
    slower = corrected is not None and corrected > threshold
    flag = ("under load" if load else "slower") if slower else ""
    note = f"{corrected:.2f} after the machine factor, threshold {threshold:.2f}" if slower else ""
    note = "; ".join(x for x in (note, load) if x)
    return [Row(name, "timing", "min_ms", b["min_ms"], n["min_ms"], raw, flag, note=note, machine=factor,
                corrected=corrected, under_load=bool(load))]


def _case_rows(name, base, new, factor, threshold):
    """Rows of one case (BASE is None when the baseline lacks it), or notes when there is nothing to compare."""
    if new["status"] == "error":
        base_status = base["status"] if base else None
        return [Row(name, "case", "status", base_status, "error", None, "error", note=new.get("note", ""))], []
    if new["status"] == "skipped":
        return [], [f"{name}: skipped ({new.get('note', '')})"]
    if base is None:
        return [], [f"{name}: not in the baseline; run scripts/regress update to add it"]
    if base["status"] != "ok":
        return [], [f"{name}: no baseline figures (baseline status {base['status']}); run scripts/regress update"]
    rows = deterministic_rows(name, base, new) + numerics_rows(name, base, new)
    return rows + timing_rows(name, base, new, factor, threshold), []


def compare(base, new, threshold=1.25, gates=GATES):
    factor = calibration_factor(base.get("calibration"), new.get("calibration"))
    notes = []
    if factor is None:
        notes.append("no calibration common to both files: timing ratios are unscaled")
    rows = []
    for name in _union(base["cases"], new["cases"]):
        if name not in new["cases"]:
            notes.append(f"{name}: in the baseline, not in the new results (removed from the suite?)")
            continue
        case_rows, case_notes = _case_rows(name, base["cases"].get(name), new["cases"][name], factor,
                                           threshold)
        rows += case_rows
        notes += case_notes
    for row in rows:
        row.gated = row.category == "case" or (row.category in gates and not row.under_load)
    loaded = [r.case for r in rows if r.under_load]
    if loaded:
        notes.append(f"timed under load (other work filled the CPUs, even after retries): {', '.join(loaded)}; "
                     "their timings are reported, never gated: time them again on a quiet machine")
    return Comparison(rows=rows, notes=notes, threshold=threshold, gates=tuple(gates),
                      calibration_factor=factor, base_calibration=base.get("calibration"),
                      new_calibration=new.get("calibration"), base_machine=base.get("machine", {}),
                      new_machine=new.get("machine", {}))
