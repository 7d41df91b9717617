#!/usr/bin/env python3
"""How far each graph node of one or more computations is from exact arithmetic, node by node.

    node_errors.py --exact EXACT.gguf --candidate LABEL=NODES.gguf [--candidate LABEL=NODES.gguf ...]
                   [--layers 0,1,17] [--ratio A/B] [--markdown | --json]

EXACT.gguf holds the exact (float64, stored as f32) value of every node, named as in llama.cpp's graph
("attn_norm-0", "Qcur-0", "kq-0", ..., "result_output"), as xbackend writes them: where several
successive nodes carry one name, the earlier ones are "name (op)" and the last one the plain name. A
candidate is another file of the same kind (xbackend's nodes on some device: matched by name) or one
written by scripts/llamacpp_logits.cpp --nodes (llama.cpp's nodes, recognised by its "llamacpp.node_ops"
metadata: matched as below). Run it with the project's venv python (scripts/python-env).

For every node of EXACT.gguf that at least one candidate has, in EXACT.gguf's order, it prints the NMSE
sum((x - ref)^2) / sum(ref^2) (float64) of each candidate against the exact values, and the ratio of two
candidates' NMSEs (by default xbackend/llama.cpp when those labels are given, else first/second; --ratio
A/B picks two labels). Only elements where the exact value is finite count (a candidate that is not
finite there gives inf). --layers keeps the nodes of those layers (and the nodes of no layer).

Shapes: the two files' ggml shapes [ne0, ne1, ...] are compared with trailing 1s dropped. Equal shapes
compare element by element. Equal element counts whose shapes split or merge the same dimensions (one's
running products ne0, ne0*ne1, ... all among the other's: [1024, 12] against [256, 4, 12]) are the same
layout and are reshaped. Where llama.cpp's cache is padded (it holds 256 cells, of which this batch's
tokens fill the first n in order, the rest masked) its attention and cache nodes (kq, kq_soft_max, the
K and V cache views) have 256 where the exact node has n along one dimension: the leading n are
compared ("[:n]" in the match column; for kq_soft_max the dropped part must be 0). Anything else is
reported as "shape differs".

Matching a llama.cpp file (its nodes are kept under their names, earlier ones of a repeated name as
"name#k", with each node's op and its sources' names as metadata):
  - "name (op)": the llama.cpp node of that name (plain or #k) with that op; else the node that is
    src[0] of llama.cpp's plain "name" where it has that op (llama.cpp calls an rms_norm "norm-L" and
    its weight product "attn_norm-L"; xbackend calls them "attn_norm-L (rms_norm)" and "attn_norm-L").
  - a plain name: llama.cpp's plain name, unless the exact file also has "name (op)" with op the one
    llama.cpp's node has (then xbackend's plain node comes later: "Qcur-L" is xbackend's scaled Q,
    llama.cpp's "Qcur-L" the rope before the scale): then the one node computed from it (its only
    consumer that is not a view).
  - renamed nodes (llama.cpp's names for Gemma 3, checked by op): inp_embd = src[0] of inp_scaled;
    ffn_inp-L = sa_out-L; kqv_merged_cont-L = kqv_out-L (a cont); __fattn__-L = src[0] of kqv_out-L (a
    flash_attn_ext); attn_out-L = the mul_mat computed from kqv_out-L; "k_cache_view-L (copy of Kcur-L)"
    = the K cache as attention reads it (src[0] of kq-L, or src[1] of the flash_attn_ext);
    "v_cache_view-L (copy of Vcur-L)" = src[2] of the flash_attn_ext (without flash attention llama.cpp
    stores V transposed: that one is matched as "v-L (cont)" = src[0] of kqv-L, cells first).
The match column names the llama.cpp node wherever it is not the exact file's name.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass, field

import gguf
import numpy as np


@dataclass
class NodeFile:
    path: str
    order: list[str]
    tensors: dict[str, object]  # name -> gguf ReaderTensor (read lazily)
    llama: bool = False
    ops: dict[str, str] = field(default_factory=dict)
    srcs: dict[str, list[str]] = field(default_factory=dict)
    consumers: dict[str, list[str]] = field(default_factory=dict)
    by_base: dict[str, list[str]] = field(default_factory=dict)  # "name" -> ["name#0", ..., "name"]

    def shape(self, name: str) -> list[int]:
        return strip_ones([int(x) for x in self.tensors[name].shape])

    def values(self, name: str) -> np.ndarray:
        """The node's values in ggml order, flattened, as float64."""
        return np.asarray(self.tensors[name].data, dtype=np.float64).reshape(-1)


def strip_ones(shape: list[int]) -> list[int]:
    shape = list(shape)
    while len(shape) > 1 and shape[-1] == 1:
        shape.pop()
    return shape


def field_strings(reader: gguf.GGUFReader, key: str) -> list[str] | None:
    f = reader.fields.get(key)
    return None if f is None else [str(x) for x in f.contents()]


def load(path: str) -> NodeFile:
    reader = gguf.GGUFReader(path)
    order = [t.name for t in reader.tensors]
    nf = NodeFile(path, order, {t.name: t for t in reader.tensors})
    ops = field_strings(reader, "llamacpp.node_ops")
    if ops is not None:
        nf.llama = True
        nf.ops = dict(zip(order, ops))
        src_lists = [field_strings(reader, f"llamacpp.node_src{s}") or [""] * len(order) for s in range(3)]
        for i, name in enumerate(order):
            nf.srcs[name] = [src_lists[s][i] for s in range(3)]
            for s in range(3):
                if src_lists[s][i]:
                    nf.consumers.setdefault(src_lists[s][i], []).append(name)
            nf.by_base.setdefault(name.split("#")[0] if re.search(r"#\d+$", name) else name, []).append(name)
    return nf


SUFFIX = re.compile(r"^(.*) \(([^()]*)\)$")
VIEW_OPS = {"VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE"}


@dataclass
class Match:
    name: str
    kv_padded: bool = False  # may hold 256 padded cache cells where the exact node has n


def resolve_llama(exact: NodeFile, cand: NodeFile, name: str) -> Match | None:
    """The llama.cpp node that computes exact's node `name` (see the module's description)."""
    ops, srcs = cand.ops, cand.srcs

    def op(n: str) -> str:
        return ops.get(n, "")

    def src(n: str, s: int) -> str:
        return srcs.get(n, ["", "", ""])[s]

    m = SUFFIX.match(name)
    base, suffix = (m.group(1), m.group(2)) if m else (name, None)
    layer = re.search(r"-(\d+)$", base)
    L = layer.group(1) if layer else None

    # Renamed nodes.
    if suffix is None and base == "inp_embd" and src("inp_scaled", 0):
        return Match(src("inp_scaled", 0))
    if L is not None and suffix is None:
        if base == f"ffn_inp-{L}" and op(f"sa_out-{L}") == "ADD":
            return Match(f"sa_out-{L}")
        if base == f"kqv_merged_cont-{L}" and op(f"kqv_out-{L}") == "CONT":
            return Match(f"kqv_out-{L}")
        if base == f"__fattn__-{L}" and op(src(f"kqv_out-{L}", 0)) == "FLASH_ATTN_EXT":
            return Match(src(f"kqv_out-{L}", 0))
        if base == f"attn_out-{L}":
            mm = [c for c in cand.consumers.get(f"kqv_out-{L}", []) if op(c) == "MUL_MAT"]
            return Match(mm[0]) if len(mm) == 1 else None
        if base in (f"kq-{L}", f"kq_soft_max-{L}") and base in ops:
            return Match(base, kv_padded=True)
    fattn = None
    if L is not None:
        f = src(f"kqv_out-{L}", 0)
        fattn = f if op(f) == "FLASH_ATTN_EXT" else None
    if L is not None and suffix == f"copy of Kcur-{L}" and base == f"k_cache_view-{L}":
        k = src(f"kq-{L}", 0) if f"kq-{L}" in ops else (src(fattn, 1) if fattn else "")
        return Match(k, kv_padded=True) if k else None
    if L is not None and suffix == f"copy of Vcur-{L}" and base == f"v_cache_view-{L}":
        return Match(src(fattn, 2), kv_padded=True) if fattn and src(fattn, 2) else None
    if L is not None and suffix == "cont" and base == f"v-{L}":
        return Match(src(f"kqv-{L}", 0), kv_padded=True) if src(f"kqv-{L}", 0) else None

    if suffix is not None:
        want = suffix.upper()
        same = [n for n in cand.by_base.get(base, []) if op(n) == want]
        if len(same) == 1:
            return Match(same[0])
        if base in ops and op(src(base, 0)) == want:
            return Match(src(base, 0))
        return None

    if base not in ops:
        return None
    if f"{base} ({op(base).lower()})" in exact.tensors:
        # xbackend's plain node is a later one: the single non-view node computed from llama.cpp's.
        after = [c for c in cand.consumers.get(base, []) if op(c) not in VIEW_OPS]
        return Match(after[0]) if len(after) == 1 else None
    return Match(base)


def running_products(shape: list[int]) -> set[int]:
    out, p = set(), 1
    for d in shape:
        p *= d
        out.add(p)
    return out


def aligned(exact: NodeFile, name: str, cand: NodeFile, match: Match) -> tuple[np.ndarray | None, str]:
    """The candidate's node `match` as exact's node `name` (flat, ggml order), and a note; None with
    the reason where the shapes cannot be set side by side."""
    rs, cs = exact.shape(name), cand.shape(match.name)
    got = cand.values(match.name)
    note = ""
    if rs != cs:
        if math.prod(rs) == got.size and (running_products(rs) <= running_products(cs) or
                                     running_products(cs) <= running_products(rs)):
            note = "reshaped"
        elif match.kv_padded and len(rs) == len(cs):
            diff = [i for i in range(len(rs)) if rs[i] != cs[i]]
            if len(diff) != 1 or cs[diff[0]] < rs[diff[0]]:
                return None, f"shape differs {cs}"
            axis = diff[0]
            full = got.reshape(cs[::-1])  # numpy order: ggml axis `axis` is numpy axis len-1-axis
            np_axis = len(cs) - 1 - axis
            kept = np.take(full, range(rs[axis]), axis=np_axis)
            dropped = np.take(full, range(rs[axis], cs[axis]), axis=np_axis)
            if "soft_max" in name and dropped.size and np.abs(dropped).max() > 0:
                return None, f"padded cells not 0 (max {np.abs(dropped).max():.3g})"
            got = kept.reshape(-1)
            note = f"[:{rs[axis]}] of {cs}"
        else:
            return None, f"shape differs {cs}"
    return got, note


def compare(exact: NodeFile, name: str, cand: NodeFile, match: Match) -> tuple[float | None, str]:
    """(NMSE, note): NMSE None with a note when the shapes cannot be set side by side."""
    got, note = aligned(exact, name, cand, match)
    if got is None:
        return None, note
    ref = exact.values(name)
    finite = np.isfinite(ref)
    if not finite.all():
        note = (note + "; " if note else "") + f"{int((~finite).sum())} non-finite exact values skipped"
    r, g = ref[finite], got[finite]
    if not np.isfinite(g).all():
        return math.inf, note
    den = float((r * r).sum())
    num = float(((g - r) ** 2).sum())
    if den == 0.0:
        return (0.0 if num == 0.0 else math.inf), note
    return num / den, note


def node_layer(name: str) -> int | None:
    m = SUFFIX.match(name)
    base = m.group(1) if m else name
    layer = re.search(r"-(\d+)$", base)
    return int(layer.group(1)) if layer else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exact", required=True, help="the exact nodes (GGUF)")
    ap.add_argument("--candidate", action="append", required=True, metavar="LABEL=PATH",
                    help="a candidate's nodes (GGUF), repeatable")
    ap.add_argument("--layers", help="comma-separated layers to show (nodes of no layer are always shown)")
    ap.add_argument("--ratio", metavar="A/B", help="the two labels whose NMSE ratio to print")
    fmt = ap.add_mutually_exclusive_group()
    fmt.add_argument("--markdown", action="store_true", help="a markdown table")
    fmt.add_argument("--json", action="store_true", help="JSON")
    args = ap.parse_args()

    exact = load(args.exact)
    cands: list[tuple[str, NodeFile]] = []
    for spec in args.candidate:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            ap.error(f"--candidate wants LABEL=PATH, not {spec!r}")
        cands.append((label, load(path)))
    labels = [label for label, _ in cands]
    if len(set(labels)) != len(labels):
        ap.error("candidate labels must differ")

    ratio = None
    if args.ratio:
        a, sep, b = args.ratio.partition("/")
        if not sep or a not in labels or b not in labels:
            ap.error(f"--ratio wants A/B with two candidate labels, not {args.ratio!r}")
        ratio = (a, b)
    elif "xbackend" in labels and "llama.cpp" in labels:
        ratio = ("xbackend", "llama.cpp")
    elif len(labels) >= 2:
        ratio = (labels[0], labels[1])
    layers = None if not args.layers else {int(x) for x in args.layers.split(",")}

    rows = []
    for name in exact.order:
        layer = node_layer(name)
        if layers is not None and layer is not None and layer not in layers:
            continue
        row = {"node": name, "shape": exact.shape(name), "nmse": {}, "match": {}, "note": {}}
        for label, cand in cands:
            if cand.llama:
                match = resolve_llama(exact, cand, name)
            else:
                match = Match(name) if name in cand.tensors else None
            if match is None or match.name not in cand.tensors:
                continue
            value, note = compare(exact, name, cand, match)
            row["nmse"][label] = value
            if match.name != name:
                row["match"][label] = match.name
            if note:
                row["note"][label] = note
        if not row["nmse"] and not row["note"]:
            continue
        if ratio:
            a, b = (row["nmse"].get(x) for x in ratio)
            row["ratio"] = (a / b if b else (math.inf if a else None)) if a is not None and b is not None else None
        rows.append(row)

    if args.json:
        def clean(x):  # JSON has no inf: write it as the string "inf"
            if isinstance(x, float) and math.isinf(x):
                return "inf"
            if isinstance(x, dict):
                return {k: clean(v) for k, v in x.items()}
            if isinstance(x, list):
                return [clean(v) for v in x]
            return x

        out = {"exact": args.exact, "candidates": {label: c.path for label, c in cands},
               "ratio": "/".join(ratio) if ratio else None, "nodes": clean(rows)}
        json.dump(out, sys.stdout, indent=1)
        print()
        return 0

    def num(x: float | None) -> str:
        return "-" if x is None else ("inf" if math.isinf(x) else f"{x:.3e}")

    def ratio_text(x: float | None) -> str:
        return "-" if x is None else ("inf" if math.isinf(x) else f"{x:.2f}")

    def match_text(row: dict) -> str:
        parts = []
        for label in labels:
            bits = [b for b in (row["match"].get(label), row["note"].get(label)) if b]
            if bits:
                parts.append(f"{label}: {' '.join(bits)}")
        return "; ".join(parts)

    head = ["node", "shape"] + [f"NMSE {label}" for label in labels]
    if ratio:
        head.append(f"{ratio[0]}/{ratio[1]}")
    head.append("match")
    table = []
    for row in rows:
        line = [row["node"], "x".join(map(str, row["shape"]))]
        for label in labels:
            value = row["nmse"].get(label)
            line.append(num(value) if value is not None else ("n/a" if label in row["nmse"] else "-"))
        if ratio:
            line.append(ratio_text(row.get("ratio")))
        line.append(match_text(row))
        table.append(line)

    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" if i < 2 or i == len(head) - 1 else "---:" for i in range(len(head))) + "|")
        for line in table:
            print("| " + " | ".join(x.replace("|", "\\|") for x in line) + " |")
    else:
        widths = [max(len(h), *(len(line[i]) for line in table)) if table else len(h) for i, h in enumerate(head)]
        print("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
        for line in table:
            print("  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
