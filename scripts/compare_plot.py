#!/usr/bin/python3
"""Draws backend-compare's verdict: each node's NMSE (log scale) in graph order against its per-op
tolerance and its end-to-end budget, introduced nodes marked, the outputs and the node where the
error starts growing named, and the model's layers along the axis.

    scripts/compare_plot.py REPORT.json OUT.png|OUT.svg [--title TEXT]
    backend-compare ... --plot OUT.png            (the tool calls this script with its JSON report)
    scripts/compare_plot.py --check               exit 0 when matplotlib imports, 3 when it does not

Errors are one line on stderr ("compare_plot: ..."); exit 2 for a bad report or an unwritable file,
3 without matplotlib (Debian: apt-get install python3-matplotlib).
"""
import argparse
import json
import math
import sys

sys.dont_write_bytecode = True  # no __pycache__ in scripts/
NO_MATPLOTLIB = 3


class PlotError(Exception):
    pass


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    return plt


def _number(value):
    """A figure of the report; NaN and infinities are written as strings there."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def load_report(path):
    try:
        with open(path) as f:
            report = json.load(f)
    except OSError as e:
        raise PlotError(f"{path}: cannot read the report: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise PlotError(f"{path}: not JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(report, dict) or not isinstance(report.get("nodes"), list):
        raise PlotError(f"{path}: not a backend-compare JSON report (no 'nodes' list; run it with --format json)")
    return report


def _floor(nodes):
    """Where exact matches (NMSE 0) are drawn: a decade under the smallest figure shown."""
    figures = [v for n in nodes for v in (_number(n.get("nmse")), _number(n.get("tolerance")), _number(n.get("budget")))
               if v is not None and v > 0 and math.isfinite(v)]
    return min(figures) / 10.0 if figures else 1e-20


def _layer_ticks(ax, nodes):
    """A line where each layer starts, labelled L<k>; node positions when there are no layers."""
    starts = []
    last = None
    for x, n in enumerate(nodes):
        layer = n.get("layer")
        if layer is not None and layer != last:  # nodes of no layer (the output norm) do not start one
            starts.append((x, layer))
            last = layer
    if not starts:
        ax.set_xlabel("node (graph order)")
        return
    for x, _ in starts:
        ax.axvline(x - 0.5, color="0.85", linewidth=0.8, zorder=0)
    step = max(1, len(starts) // 40)  # at most ~40 labels
    ax.set_xticks([x for x, _ in starts[::step]])
    ax.set_xticklabels([f"L{layer}" for _, layer in starts[::step]], fontsize=7)
    ax.set_xlabel("layer (nodes in graph order)")


def _series(nodes, key, floor):
    return [max(_number(n.get(key)) or 0.0, floor) if _number(n.get(key)) is not None else math.nan for n in nodes]


def _mark(ax, nodes, xs, ys, pick, **style):
    chosen = [(x, y) for x, y, n in zip(xs, ys, nodes) if pick(n)]
    if chosen:
        ax.scatter([c[0] for c in chosen], [c[1] for c in chosen], **style)


def _annotate(ax, xs, ys, index_of, index, text, color):
    if index is None or index not in index_of:
        return
    i = index_of[index]
    # The text below the node, towards the middle of the axes, so that it stays inside them.
    left_half = xs[i] < len(xs) / 2
    ax.annotate(text, (xs[i], ys[i]), xytext=(30 if left_half else -30, -30), textcoords="offset points",
                ha="left" if left_half else "right", fontsize=8, color=color,
                arrowprops={"arrowstyle": "->", "color": color})


def plot(report, path, title=None):
    plt = _pyplot()
    if plt is None:
        raise PlotError("needs matplotlib (Debian: apt-get install python3-matplotlib)")
    nodes = report["nodes"]
    if not nodes:
        raise PlotError("the report has no nodes")
    floor = _floor(nodes)
    xs = list(range(len(nodes)))
    nmse = [_number(n.get("nmse")) for n in nodes]
    ys = [floor if v is None or v <= 0 else (v if math.isfinite(v) else math.nan) for v in nmse]
    index_of = {n["index"]: i for i, n in enumerate(nodes)}

    fig, ax = plt.subplots(figsize=(min(40.0, max(9.0, len(nodes) / 12.0)), 5.0))
    ax.plot(xs, _series(nodes, "tolerance", floor), drawstyle="steps-mid", color="0.45", linestyle="--",
            linewidth=1, label="per-op tolerance")
    if any("budget" in n for n in nodes):
        ax.plot(xs, _series(nodes, "budget", floor), drawstyle="steps-mid", color="tab:green", linewidth=1,
                label="end-to-end budget (margin x the reference's own error)")
    compared = lambda n: "nmse" in n
    _mark(ax, nodes, xs, ys, lambda n: compared(n) and n.get("ok") and (_number(n["nmse"]) or 0) > 0, s=10,
          color="tab:blue", label="within tolerance")
    _mark(ax, nodes, xs, ys, lambda n: compared(n) and (_number(n["nmse"]) or 0) == 0, s=8, color="0.7",
          label="exact (drawn at the floor)")
    _mark(ax, nodes, xs, ys, lambda n: compared(n) and not n.get("ok") and n.get("origin") == "inherited", s=14,
          color="tab:orange", label="out of tolerance, inherited")
    _mark(ax, nodes, xs, ys, lambda n: compared(n) and not n.get("ok") and n.get("origin") != "inherited", s=90,
          marker="X", color="red", zorder=5, label="introduced")
    _mark(ax, nodes, xs, [floor] * len(nodes), lambda n: "skipped" in n, s=12, marker="|", color="tab:purple",
          label="skipped")
    e2e = report.get("end_to_end") or {}
    outputs = {o["index"]: o for o in e2e.get("outputs", [])}
    _mark(ax, nodes, xs, ys, lambda n: n["index"] in outputs, s=120, marker="*", facecolors="none",
          edgecolors="black", zorder=6, label="output")
    growth = e2e.get("growth_node")
    if growth and not e2e.get("ok", True):
        _annotate(ax, xs, ys, index_of, growth["index"], f"error grows here: #{growth['index']} {growth['name']}", "red")
    elif report.get("first_divergent") is not None:
        node = nodes[index_of[report["first_divergent"]]] if report["first_divergent"] in index_of else None
        if node:
            _annotate(ax, xs, ys, index_of, node["index"], f"first divergent: #{node['index']} {node['name']}", "red")
    ax.set_yscale("log")
    ax.set_ylabel("NMSE against the reference (log)")
    ax.set_xlim(-1, len(nodes))
    _layer_ticks(ax, nodes)
    backends = report.get("backends") or ["?", "?"]
    failed = report.get("first_divergent") is not None or e2e.get("ok") is False
    verdict = "FAIL" if failed else "pass"
    ax.set_title((title or f"{backends[1]} against {backends[0]}") + f"\n{verdict}: {report.get('failed', 0)} nodes out "
                 f"of tolerance ({report.get('introduced', 0)} introduced)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0))
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100)
    except (OSError, ValueError) as e:
        raise PlotError(f"{path}: cannot write the plot: {getattr(e, 'strerror', None) or e}") from None
    finally:
        plt.close(fig)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("report", nargs="?", help="backend-compare's JSON report (--format json)")
    p.add_argument("out", nargs="?", help="the picture: .png or .svg")
    p.add_argument("--title", help="the plot's title (default: the backends)")
    p.add_argument("--check", action="store_true", help="exit 0 when matplotlib imports, 3 when it does not")
    args = p.parse_args(argv)
    if args.check:
        return 0 if _pyplot() is not None else NO_MATPLOTLIB
    if not args.report or not args.out:
        p.error("give REPORT.json and OUT.png (or OUT.svg)")
    if not args.out.endswith((".png", ".svg")):
        print(f"compare_plot: {args.out}: the file must end in .png or .svg", file=sys.stderr)
        return 2
    try:
        if _pyplot() is None:
            print("compare_plot: needs matplotlib (Debian: apt-get install python3-matplotlib)", file=sys.stderr)
            return NO_MATPLOTLIB
        plot(load_report(args.report), args.out, args.title)
    except PlotError as e:
        print(f"compare_plot: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
