#!/usr/bin/env python3
"""Writes the quantization fixtures of tests/data/quant/ with the `gguf` package (llama.cpp's own
Python implementation of ggml's block formats), so that xbackend's quantize and dequantize are
checked against an independent reference. The tests read the committed files and need no network.

    python3 -m pip install gguf numpy    # the versions used are recorded in each file's metadata
    python3 scripts/quant_fixtures.py [--out tests/data/quant]

One GGUF file per type, <type>.gguf (q4_0.gguf, q4_K.gguf, ...), holding:
  - legacy types (q4_0, q4_1, q5_0, q5_1, q8_0), which gguf can quantize:
      input      f32 [rows, n]   data to quantize: random normal rows and rows with zeros, a single
                                 outlier, constants, tiny and huge magnitudes, one sign only
      quantized  <type> [rows, n]  gguf's quantize(input): compared byte for byte
      dequantized f32 [rows, n]  gguf's dequantize(quantized): compared bit for bit
  - tq1_0, tq2_0 and mxfp4, which gguf can quantize too: as the legacy types
  - the other formats (q2_K .. q6_K, the IQ family, nvfp4), which gguf can only dequantize:
      quantized  <type> [rows, n]  random blocks (finite f16 scales, zero and subnormal ones among them)
      dequantized f32 [rows, n]  gguf's dequantize(quantized): compared bit for bit
Row lengths are multiples of the type's block size, several blocks long.

And iq_grids.gguf: the IQ formats' codebooks as gguf decodes them (grid.<type>, f32 [entries, 8 or
4]) and the sign table (ksigns, f32 [128]), against which lib/core/iq_grids.hpp is checked.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

try:
    import gguf
    from gguf import quants
except ImportError:
    sys.exit("quant_fixtures: needs the gguf package (python3 -m pip install gguf numpy)")
from gguf_block_scales import HAS_F16_SCALE, Q2_K_DMIN_AT, put_f16_scale

T = gguf.GGMLQuantizationType
LEGACY = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0]
K_QUANTS = [T.Q4_K, T.Q5_K, T.Q6_K]
# Added later: written after the types above so that their files stay byte for byte the same.
REFERENCE_QUANTIZED = [T.TQ1_0, T.TQ2_0, T.MXFP4]
DEQUANTIZE_ONLY = [T.Q2_K, T.Q3_K, T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ3_XXS, T.IQ3_S, T.IQ1_S, T.IQ1_M,
                   T.IQ4_NL, T.IQ4_XS, T.NVFP4]
GRID_TYPES = [T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ3_XXS, T.IQ3_S, T.IQ1_S]


def ggml_name(qtype):
    """ggml's (and xbackend's) name of a type: q4_0, q4_K, iq2_xxs."""
    name = qtype.name.lower()
    return name[:-2] + "_K" if name.endswith("_k") else name


def legacy_rows(n, rng):
    """Rows that exercise the quantizers' corner cases, then random normal rows."""
    rows = [
        np.zeros(n),                                   # all zero: scale 0
        np.full(n, 0.75),                              # constant
        np.where(np.arange(n) == n // 3, 50.0, 0.01),  # one outlier per row
        rng.uniform(1e-30, 1e-28, n),                  # tiny: scales underflow f16
        rng.uniform(-6e4, 6e4, n),                     # huge: scales near f16's limit
        -np.abs(rng.standard_normal(n)),               # negative only
        np.abs(rng.standard_normal(n)) + 3.0,          # positive, away from zero (q4_1/q5_1 min)
        np.tile([1.0, -1.0], n // 2) * 7.0,            # alternating extremes
    ]
    rows += [rng.standard_normal(n) * s for s in (0.02, 1.0, 30.0)]
    rows += [rng.standard_t(2, n)]                     # heavy tails
    return np.stack(rows).astype(np.float32)


def random_f16(rng, count, lo=-3.0, hi=3.0):
    """Finite f16 values, with zeros and subnormals among them, as raw bits."""
    v = rng.uniform(lo, hi, count).astype(np.float16)
    v[::7] = 0.0
    v[3::11] = np.float16(3e-6)  # subnormal in f16
    return v.view(np.uint16)


def random_k_blocks(qtype, n_blocks, rng):
    """Random blocks of a k-quant type with sane f16 super-block scales."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    if qtype in (T.Q4_K, T.Q5_K):
        # d and dmin are the first two f16 fields of the block.
        raw[:, 0:2] = random_f16(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
        raw[:, 2:4] = random_f16(rng, n_blocks, 0.0, 2.0).view(np.uint8).reshape(n_blocks, 2)
    elif qtype == T.Q6_K:
        # d is the last f16 field of the block.
        raw[:, size - 2:size] = random_f16(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    return raw


def random_blocks(qtype, n_blocks, rng):
    """Random blocks of the newer formats: every quant, index and sign pattern, finite scales."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    if qtype in HAS_F16_SCALE:
        put_f16_scale(raw, qtype, random_f16(rng, n_blocks))
    if qtype == T.Q2_K:
        at = Q2_K_DMIN_AT
        raw[:, at:at + 2] = random_f16(rng, n_blocks, 0.0, 2.0).view(np.uint8).reshape(n_blocks, 2)
    # nvfp4: every e4m3 scale byte is finite.
    return raw


def grid_tensors():
    """The IQ codebooks and the sign table as the gguf package decodes them."""
    tensors = []
    for qtype in GRID_TYPES:
        cls = quants._type_traits[qtype]
        cls.init_grid()
        grid = np.asarray(cls.grid, dtype=np.float32).reshape(cls.grid_shape)
        tensors.append((f"grid.{ggml_name(qtype)}", np.ascontiguousarray(grid), None))
    ksigns = np.frombuffer(quants.IQ2_XXS.ksigns, dtype=np.uint8).astype(np.float32)
    tensors.append(("ksigns", ksigns, None))
    return tensors


def write(path, qtype, tensors):
    w = gguf.GGUFWriter(str(path), arch="xbackend-fixture")
    w.add_string("xbackend.fixture.generator", "scripts/quant_fixtures.py")
    w.add_string("xbackend.fixture.gguf_version", getattr(gguf, "__version__", "unknown"))
    w.add_string("xbackend.fixture.numpy_version", np.__version__)
    w.add_string("xbackend.fixture.type", ggml_name(qtype))
    for name, array, raw_dtype in tensors:
        w.add_tensor(name, array, raw_dtype=raw_dtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_quantized_by_gguf(out, qtype, rng):
    """<type>.gguf for a type gguf quantizes: corner-case and random rows, gguf's blocks and values."""
    block, _ = gguf.GGML_QUANT_SIZES[qtype]
    x = legacy_rows(block * 5, rng)  # 5 blocks: an odd number of blocks per row
    q = quants.quantize(x, qtype)
    d = quants.dequantize(q, qtype).astype(np.float32)
    write(out / f"{ggml_name(qtype)}.gguf", qtype,
          [("input", x, None), ("quantized", q, qtype), ("dequantized", d, None)])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "tests" / "data" / "quant"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261123)
    for qtype in LEGACY:
        write_quantized_by_gguf(out, qtype, rng)
    for qtype in K_QUANTS:
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        rows, blocks_per_row = 6, 3
        q = random_k_blocks(qtype, rows * blocks_per_row, rng).reshape(rows, blocks_per_row * size)
        d = quants.dequantize(q, qtype).astype(np.float32)
        if not np.isfinite(d).all():
            sys.exit(f"quant_fixtures: {qtype.name} dequantized to non-finite values; change the scales")
        write(out / f"{ggml_name(qtype)}.gguf", qtype, [("quantized", q, qtype), ("dequantized", d, None)])
    for qtype in REFERENCE_QUANTIZED:
        write_quantized_by_gguf(out, qtype, rng)
    for qtype in DEQUANTIZE_ONLY:
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        rows = 6
        blocks_per_row = 3 if block == 256 else 5
        q = random_blocks(qtype, rows * blocks_per_row, rng).reshape(rows, blocks_per_row * size)
        d = quants.dequantize(q, qtype).astype(np.float32)
        if not np.isfinite(d).all():
            sys.exit(f"quant_fixtures: {qtype.name} dequantized to non-finite values; change the scales")
        write(out / f"{ggml_name(qtype)}.gguf", qtype, [("quantized", q, qtype), ("dequantized", d, None)])
    write(out / "iq_grids.gguf", T.IQ2_XXS, grid_tensors())
    count = len(LEGACY) + len(K_QUANTS) + len(REFERENCE_QUANTIZED) + len(DEQUANTIZE_ONLY) + 1
    print(f"quant_fixtures: wrote {count} files to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
