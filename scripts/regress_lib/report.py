"""A comparison as a markdown table (like llama.cpp's compare-llama-bench) or as JSON.

Columns: base, new, ratio (new / base as measured), and for timings machine (the machine factor)
and ratio / machine (what the threshold judges); the flag with its note.
"""
import json
from dataclasses import asdict

from .compare import GATES


def fmt_value(v):
    if v is None:
        return "-"
    if isinstance(v, (bool, int, str)):
        return str(v)
    return f"{v:.3g}"


def fmt_ratio(r):
    if r is None:
        return "-"
    return f"{r:.2f}" if r < 100 else f"{r:.3g}"  # a NMSE from 1e-14 to 1e-3 is a ratio of 1e11


def _flag_text(row):
    """GATED FLAGS in capitals, others marked as reported only; the row's note after a colon."""
    if not row.flag:
        return ""
    text = row.flag.upper() if row.gated else f"{row.flag} (reported only)"
    return f"{text}: {row.note}" if row.note else text


def _machine_line(label, path, m):
    commit = (m.get("commit") or "unknown")[:10] + ("+dirty" if m.get("dirty") else "")
    return (f"{label}: {path}: {m.get('cpu_model', '?')} ({m.get('n_cpus', '?')} CPUs), {m.get('compiler', '?')} "
            f"{m.get('build_type', '?')}, commit {commit}, {m.get('date', '?')}")


def _calibration_line(cmp):
    if cmp.calibration_factor is None:
        return "Calibration: none common to both files; timing ratios are unscaled."
    parts = [f"{k} {cmp.base_calibration[k]:.3g} -> {cmp.new_calibration[k]:.3g}"
             for k in sorted(set(cmp.base_calibration) & set(cmp.new_calibration))]
    return (f"Calibration: {', '.join(parts)}; machine factor {cmp.calibration_factor:.2f} (the machine column: "
            f"a timing is flagged when ratio / machine is over {cmp.threshold:.2f}).")


def _summary(cmp):
    regressions = cmp.regressions
    reported = [r for r in cmp.rows if r.flag and not r.gated]
    text = "Result: no regressions" if not regressions else (
        f"Result: {len(regressions)} flagged regression(s): {', '.join(sorted({r.flag for r in regressions}))}")
    if reported:
        text += f"; reported only: {len(reported)} ({', '.join(sorted({r.flag for r in reported}))})"
    return text + "."


def to_markdown(cmp, base_path, new_path):
    ungated = [g for g in GATES if g not in cmp.gates]
    lines = [
        "- " + _machine_line("Base", base_path, cmp.base_machine),
        "- " + _machine_line("New", new_path, cmp.new_machine),
        "- " + _calibration_line(cmp),
        f"- Gated: {', '.join(cmp.gates) or 'none'}" + (f" (reported only: {', '.join(ungated)})" if ungated else "")
        + ".",
        "",
        "| case | metric | base | new | ratio | machine | ratio / machine | flag |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in cmp.rows:
        cells = [r.case, r.metric, fmt_value(r.base), fmt_value(r.new), fmt_ratio(r.ratio), fmt_ratio(r.machine),
                 fmt_ratio(r.corrected), _flag_text(r)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")  # a tool's message may hold a |
    if cmp.notes:
        lines += ["", "Notes:"] + [f"- {n}" for n in cmp.notes]
    lines += ["", _summary(cmp)]
    return "\n".join(lines) + "\n"


def to_json(cmp, base_path, new_path):
    data = {
        "base": {"file": str(base_path), "machine": cmp.base_machine, "calibration": cmp.base_calibration},
        "new": {"file": str(new_path), "machine": cmp.new_machine, "calibration": cmp.new_calibration},
        "calibration_factor": cmp.calibration_factor,
        "threshold": cmp.threshold,
        "gates": list(cmp.gates),
        "rows": [asdict(r) for r in cmp.rows],
        "notes": cmp.notes,
        "regressions": len(cmp.regressions),
    }
    return json.dumps(data, indent=2) + "\n"
