"""--plot: one bar group per case, one bar per kind of metric, heights the new/base ratios (a timing's
divided by the machine factor: the ratio the verdict reads).

Each bar shows the metric of its kind that moved most in that case (a flagged one first), so a
reviewer sees at a glance which cases changed and how; the table has every metric.
"""
import math
from pathlib import Path

from .compare import GATES as KINDS
from .errors import UsageError

COLORS = {"deterministic": "tab:blue", "numerics": "tab:green", "timing": "tab:orange"}
BAR_WIDTH = 0.8 / len(KINDS)


def _import_pyplot():
    # Imported here, not at the top: run and compare must work on machines without matplotlib.
    try:
        import matplotlib
    except ImportError:
        raise UsageError("--plot needs matplotlib (Debian: apt-get install python3-matplotlib)") from None
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    return plt


def _distance(row):
    r = row.judged_ratio
    return abs(math.log(r)) if r and r > 0 else 0.0


def representative_rows(cmp):
    """{case: {kind: row}}: per case and kind, the flagged row that moved most, else the row that moved most."""
    chosen = {}
    for row in cmp.rows:
        if row.category not in KINDS:
            continue
        by_kind = chosen.setdefault(row.case, {})
        best = by_kind.get(row.category)
        if best is None or (bool(row.flag), _distance(row)) > (bool(best.flag), _distance(best)):
            by_kind[row.category] = row
    return chosen


def _draw_kind(ax, k, kind, cases, chosen):
    """The bars of one kind of metric, one per case, offset within each case's group."""
    offset = (k - (len(KINDS) - 1) / 2) * BAR_WIDTH
    rows = [chosen[c].get(kind) for c in cases]
    # Bars grow from 1.0 (no change) to the ratio, up or down, so that on the log axis a 10% move and
    # a 1000x one both show. A metric with no ratio (a base of 0) is drawn hatched from 1 to 2 when
    # flagged, so that it still shows.
    def top(r):
        if r is None:
            return 1.0
        return r.judged_ratio if r.judged_ratio is not None else (2.0 if r.flag else 1.0)
    heights = [top(r) - 1.0 for r in rows]
    bars = ax.bar([i + offset for i in range(len(cases))], heights, BAR_WIDTH, bottom=1.0, label=kind,
                  color=COLORS[kind])
    for bar, row in zip(bars, rows):
        if row is None:
            continue
        if row.flag:
            bar.set_edgecolor("red")
            bar.set_linewidth(2)
        if row.judged_ratio is None:
            bar.set_hatch("//")
        if row.under_load:
            bar.set_alpha(0.4)
        label = ("!" if row.flag else "") + ("n/a" if row.judged_ratio is None else "")
        if label:
            ax.annotate(label, (bar.get_x() + bar.get_width() / 2, max(top(row), 1.0)), ha="center", va="bottom",
                        color="red", fontsize=8)


def plot(cmp, path):
    plt = _import_pyplot()
    formats = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    suffix = Path(path).suffix.lstrip(".").lower()
    if suffix not in formats:
        raise UsageError(f"--plot {path}: the file name must end in a picture format matplotlib writes "
                         f"(.{', .'.join(sorted(formats))})")
    chosen = representative_rows(cmp)
    cases = list(chosen)
    fig, ax = plt.subplots(figsize=(max(7.0, 1.2 * len(cases) + 3), 4.5))
    for k, kind in enumerate(KINDS):
        _draw_kind(ax, k, kind, cases, chosen)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(cmp.threshold, color="red", linewidth=0.8, linestyle="--", label=f"timing threshold {cmp.threshold:g}")
    # Ratios span decades (an NMSE can move 1000x while a timing moves 10%): a log axis keeps every
    # bar visible.
    ax.set_yscale("log")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("new / base, log scale (timing: / machine factor)")
    # Two short lines: one long line was cut at the figure's edge once the legend took its place.
    ax.set_title(f"regress compare: {len(cmp.regressions)} flagged regression(s)\n"
                 "red edge = flagged, hatched = no ratio (base 0), pale = timed under load", fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, not over them
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100)
    except OSError as e:
        raise UsageError(f"{path}: cannot write the plot: {e.strerror or e}") from None
    finally:
        plt.close(fig)
