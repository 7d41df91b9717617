#!/usr/bin/env python3
"""Writes tests/data/models/hostile/: small GGUF model files built to break the loader and the
messages (issue "Hostile inputs, round 2"), each with what the tools must answer. Python's standard
library only: the bytes are laid out by hand, since most of these files are ones no GGUF writer
would make (overlapping tensor data, wrapped offsets, control characters in names).

    python3 scripts/hostile_fixtures.py [--out tests/data/models/hostile]

manifest.json lists every file: what is wrong with it, the exit code graph-run and backend-compare
must give (2: refused with one line; 1: backend-compare's verdict; 0: runs) and a piece of text
their stderr must hold. tests/tools/gguf_models.sh checks them; the fuzz harnesses start from them.
The base is the minimal llama model of tests/data/models/bad/good.gguf (one layer, n_embd 8,
2 heads, n_ff 16, a vocabulary of 16), with deterministic weights.
"""
import argparse
import json
import math
import struct
from pathlib import Path

U8, U32, I32, F32, BOOL, STR, ARR, U64, I64 = 0, 4, 5, 6, 7, 8, 9, 10, 11
GGML_F32 = 0
ALIGN = 32
LONG = 10000  # characters of a long name: ten times the one-line limit of a message


def gguf_str(s):
    b = s.encode("utf-8", "surrogateescape") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def value_bytes(kind, value):
    if kind == STR:
        return gguf_str(value)
    if kind == ARR:
        elem, items = value
        return struct.pack("<IQ", elem, len(items)) + b"".join(value_bytes(elem, v) for v in items)
    fmt = {U8: "<B", U32: "<I", I32: "<i", F32: "<f", BOOL: "<B", U64: "<Q", I64: "<q"}[kind]
    return struct.pack(fmt, value)


def base_kvs():
    return [
        ("general.architecture", STR, "llama"),
        ("llama.block_count", U32, 1), ("llama.context_length", U32, 64),
        ("llama.embedding_length", U32, 8), ("llama.feed_forward_length", U32, 16),
        ("llama.attention.head_count", U32, 2), ("llama.attention.head_count_kv", U32, 2),
        ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5), ("llama.rope.freq_base", F32, 10000.0),
    ]


def base_tensors(n_vocab=16):
    """[name, dims (innermost first), values]: the minimal model's weights, small and deterministic."""
    shapes = [("token_embd.weight", [8, n_vocab]), ("output_norm.weight", [8]), ("output.weight", [8, n_vocab]),
              ("blk.0.attn_norm.weight", [8]), ("blk.0.attn_q.weight", [8, 8]), ("blk.0.attn_k.weight", [8, 8]),
              ("blk.0.attn_v.weight", [8, 8]), ("blk.0.attn_output.weight", [8, 8]),
              ("blk.0.ffn_norm.weight", [8]), ("blk.0.ffn_gate.weight", [8, 16]), ("blk.0.ffn_up.weight", [8, 16]),
              ("blk.0.ffn_down.weight", [16, 8])]
    out = []
    for i, (name, dims) in enumerate(shapes):
        n = math.prod(dims)
        norm = "norm" in name
        values = [1.0 if norm else 0.1 * math.sin(0.37 * (j + 1) * (i + 1)) for j in range(n)]
        out.append([name, dims, values])
    return out


def gguf_file(kvs, tensors, offsets=None, n_dims=None):
    """The file's bytes: tensors packed in order (aligned) unless `offsets` {name: offset} says
    otherwise; `n_dims` {name: count} overrides a tensor's dim count (trailing 1s written)."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, kind, value in kvs:
        head += gguf_str(key) + struct.pack("<I", kind) + value_bytes(kind, value)
    data = b""
    infos = b""
    for name, dims, values in tensors:
        while len(data) % ALIGN:
            data += b"\0"
        offset = (offsets or {}).get(name, len(data))
        dims = (list(dims) + [1] * 4)[:(n_dims or {}).get(name, len(dims))]
        infos += gguf_str(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", GGML_F32, offset)
        data += struct.pack(f"<{len(values)}f", *values)
    out = head + infos
    out += b"\0" * (-len(out) % ALIGN)
    return out + data


def with_kv(kvs, key, kind, value):
    """kvs with `key` set (replaced in place, or added at the end)."""
    out = [kv for kv in kvs if kv[0] != key]
    index = next((i for i, kv in enumerate(kvs) if kv[0] == key), len(out))
    out.insert(index, (key, kind, value))
    return out


def extra_tensor(name):
    tensors = base_tensors()
    tensors.append([name, [8], [0.0] * 8])
    return tensors


def nan_weights():
    tensors = base_tensors()
    for t in tensors:
        t[2] = [float("nan")] * len(t[2])
    return tensors


REFUSED = {"graph-run": 2, "backend-compare": 2, "sched-profile": 2}
RUNS = {"graph-run": 0, "backend-compare": 0, "sched-profile": 0}
NON_FINITE = {"graph-run": 0, "backend-compare": 1}


# name -> (what is wrong, the file's bytes, {tool: exit code}, text stderr must hold)
def cases():
    kvs, tensors = base_kvs(), base_tensors()
    names = [t[0] for t in tensors]
    return {
        "overlap-all-at-0": ("every tensor's data at offset 0 (a 1 MB file asked for GBs of weights this way)",
                             gguf_file(kvs, tensors, offsets={n: 0 for n in names}), REFUSED, "overlaps"),
        "overlap-partial": ("blk.0.attn_k.weight starts inside blk.0.attn_q.weight",
                            gguf_file(kvs, tensors, offsets={"blk.0.attn_k.weight": 1088 + 128}), REFUSED, "overlaps"),
        "offset-wraps": ("blk.0.ffn_down.weight at offset 2^64 - 32: offset + size wraps around 64 bits",
                         gguf_file(kvs, tensors, offsets={"blk.0.ffn_down.weight": 2**64 - 32}), REFUSED,
                         "past the end of the data section"),
        "long-tensor-name": (f"a tensor named with {LONG} characters (no role in the graph)",
                             gguf_file(kvs, extra_tensor("blk.0." + "x" * LONG)), REFUSED, "..."),
        "newline-tensor-name": ("a tensor whose name holds a newline and an escape sequence",
                                gguf_file(kvs, extra_tensor("blk.0.evil\nsecond line\x1b[31m")), REFUSED, "\\n"),
        "long-architecture": (f"general.architecture of {LONG} characters",
                              gguf_file(with_kv(kvs, "general.architecture", STR, "a" * LONG), tensors), REFUSED,
                              "is not supported"),
        "newline-architecture": ("general.architecture 'llama\\nINFO: all good'",
                                 gguf_file(with_kv(kvs, "general.architecture", STR, "llama\nINFO: all good"), tensors),
                                 REFUSED, "\\n"),
        "long-key-twice": (f"a metadata key of {LONG} characters, given twice",
                           gguf_file(kvs + [("k" * LONG, U32, 1), ("k" * LONG, U32, 2)], tensors), REFUSED,
                           "appears twice"),
        "u64-above-int64": ("llama.block_count is the u64 2^64 - 1",
                            gguf_file(with_kv(kvs, "llama.block_count", U64, 2**64 - 1), tensors), REFUSED,
                            "is 18446744073709551615, expected 1 to 1024"),
        "rope-scaling-yarn": ("llama.rope.scaling.type is yarn with no rope.scaling.factor",
                              gguf_file(kvs + [("llama.rope.scaling.type", STR, "yarn")], tensors), REFUSED,
                              "offset "),
        "nan-weights": ("every weight is NaN: a well-formed file whose logits are all NaN",
                        gguf_file(kvs, nan_weights()), NON_FINITE, "NaN"),
        "vocab-1-row": ("a vocabulary of one token: token_embd.weight and output.weight [8, 1], two dims",
                        gguf_file(kvs, base_tensors(n_vocab=1)), RUNS, ""),
        "vocab-1-row-1-dim": ("a vocabulary of one token stored with one dim, as xbackend's writer does",
                              gguf_file(kvs, base_tensors(n_vocab=1),
                                        n_dims={"token_embd.weight": 1, "output.weight": 1}), RUNS, ""),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "tests/data/models/hostile"))
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    manifest = {}
    for name, (what, data, exit_codes, text) in cases().items():
        (out / f"{name}.gguf").write_bytes(data)
        manifest[name] = {"what": what, "exit": exit_codes, "stderr_has": text}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"hostile_fixtures: wrote {len(manifest)} files to {out}")


if __name__ == "__main__":
    main()
