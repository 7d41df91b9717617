#!/usr/bin/env python3
"""The exact (float64) forward of a GGUF model with the activations of its quantized matrix products
rounded the way a ggml-style CPU backend rounds them: how much of a backend's error comes from that.

    python=$(scripts/python-env)
    "$python" scripts/emulate_activation_rounding.py --model "$(scripts/models)" --tokens TOKENS \
        --scheme ggml --out /tmp/ggml.npy                                # one run, no jitter
    "$python" scripts/emulate_activation_rounding.py --model "$(scripts/models)" --tokens TOKENS \
        --scheme ggml,q8_0-all,none --jitter 1e-7 --seed 1,2,3,4 --plain ggml,none \
        --out-dir /tmp/emul/B --exact /tmp/gemma-ref/B.exact.npy [--f32] [--summary /tmp/emul/B.json]

Loads the model once (scripts/real_model_reference.py's load_model: every tensor dequantized to
float64) and runs scripts/arch_fixtures.py's forward() (imported, not copied) once per requested run.
The only change to that forward: each quantized weight matrix W is handed to forward() inside a
wrapper, so that `h @ W.T` becomes `round(h) @ W.T`, where round() quantizes and dequantizes the
activations h the way the scheme says for W's type (the products themselves stay float64, exact).
Both llama.cpp's CPU backend and xbackend's CPU backend round the K values of each activation row
in blocks before a product with quantized weights:
  q8_0  (blocks of 32; ggml's vec_dot_type of q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl mxfp4 -- q4_1/q5_1 use
        q8_1, whose quants are the same): d = amax/127, q = round(x/d) half away from zero, clamped to
        [-127, 127], value = q * fp16(d) (the scale is stored as float16);
  q8_K  (blocks of 256; the k-quants q2_K..q6_K and the other 256-block formats): iscale = 127/amax
        (float32), q = round(x*iscale) half to even (ggml's nearest_int) clamped to [-127, 127],
        value = q * float32(1/iscale).
f32 weights: no rounding. Weight types are read per tensor from the file (in Gemma 3 270M Q4_K_M:
q5_0 attn_q/attn_k/ffn_gate/ffn_up; attn_v q5_0 or q8_0 and ffn_down q4_K or q6_K depending on the
layer; q4_K attn_output; q8_0 token_embd, which is also the tied output head).

Schemes (--scheme, comma-separated; "legacy" = the 32-block types, "k-quant" = the 256-block ones):
  ggml               legacy: q8_0, k-quant: q8_K   (what llama.cpp's and xbackend's CPU do)
  q8_0-all           legacy: q8_0, k-quant: q8_0   (finer, 32-value blocks for the k-quants too)
  exact-kquants      legacy: q8_0, k-quant: none
  exact-legacy       legacy: none, k-quant: q8_K
  q8_0-kquants-only  legacy: none, k-quant: q8_0
  q8_16-all          legacy and k-quant: 8-bit blocks of 16 values, float32 steps
  none               no rounding: reproduces real_model_reference.py's logits (checked with --exact)
  SCHEME:ROLE[+ROLE] SCHEME's rounding for the products of these roles only, none elsewhere; roles:
                     attn_q attn_k attn_v attn_output ffn_gate ffn_up ffn_down output (the head).
--jitter EPS --seed S multiplies the token embeddings by (1 + EPS * N(0,1)) elementwise (numpy's
default_rng(S)) before the first layer: a perturbation of float32-rounding size that draws another
realization of which activations round which way, as summation order does in a real backend, so the
spread of the error can be estimated. --seed takes a list: every --scheme runs once per seed.
--plain SCHEMES adds jitter-free runs of those schemes to the same process.

Output: one .npy of logits (tokens, vocab) per run, float64 (float32 with --f32): --out FILE for a
single run, or --out-dir DIR with files named SCHEME.npy (jitter-free) or SCHEME.jEPS.sSEED.npy.
With --exact EXACT.npy each run is also measured against the exact logits (scripts/logit_accuracy.py's
measures: NMSE, worst position, argmax agreement), a table per scheme is printed at the end (each
realization, mean, standard deviation, min..max), and --summary writes all of it as JSON, with the
relative size of the rounding noise each role's activations received (sum (round(h) - h)^2 / sum h^2).
A jitter-free `none` run must match EXACT to NMSE < 1e-20, or the script exits with status 1.
Memory: the float64 weights (2.2 GB for Gemma 3 270M), the exact logits and one run's logits
(792 tokens x 262144: 1.7 GB each), plus the forward's intermediates. Time: a run is the reference
forward plus a few seconds of rounding.
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_model_reference as R  # noqa: E402  (load_model, reference_logits, parse_tokens)
import logit_accuracy  # noqa: E402  (measures)

PROG = "emulate_activation_rounding"

LEGACY = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "IQ4_NL", "MXFP4"}              # activations: q8_0 (q8_1)
KQUANT = {"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S",
          "IQ1_S", "IQ1_M", "IQ4_XS", "TQ1_0", "TQ2_0"}                              # activations: q8_K
ROLES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down", "output")


def round_q8_0(x):
    """ggml's q8_0 quantization of each 32-value block of the last axis, dequantized (float64)."""
    rows, k = x.shape
    if k % 32:
        raise ValueError(f"q8_0 needs a multiple of 32 values per row, not {k}")
    b = x.reshape(rows, k // 32, 32)
    amax = np.abs(b).max(axis=2, keepdims=True)
    d = amax / 127.0
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(d > 0, b / d, 0.0)
    q = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), -127, 127)   # roundf: half away from zero
    d16 = d.astype(np.float32).astype(np.float16)                    # GGML_FP32_TO_FP16(d)
    if not np.isfinite(d16).all():
        raise FloatingPointError("a q8_0 block scale overflows float16")
    return (q * d16.astype(np.float64)).reshape(rows, k)


def round_q8_K(x):
    """ggml's q8_K quantization of each 256-value block of the last axis, dequantized (float64)."""
    rows, k = x.shape
    if k % 256:
        raise ValueError(f"q8_K needs a multiple of 256 values per row, not {k}")
    b = x.reshape(rows, k // 256, 256)
    amax = np.abs(b).max(axis=2, keepdims=True).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        iscale = np.where(amax > 0, np.float32(127.0) / amax, np.float32(0.0)).astype(np.float32)
        d = np.where(amax > 0, np.float32(1.0) / iscale, np.float32(0.0)).astype(np.float32)
    q = np.clip(np.rint(b * iscale.astype(np.float64)), -127, 127)   # nearest_int: half to even
    return (q * d.astype(np.float64)).reshape(rows, k)


def round_q8_16(x):
    """8-bit blocks of 16 values with a float32 step (amax/127, round half away from zero): the finest
    activations the CPU's tile kernels could take at no cost (their steps go by 16 values)."""
    rows, k = x.shape
    if k % 16:
        raise ValueError(f"q8_16 needs a multiple of 16 values per row, not {k}")
    b = x.reshape(rows, k // 16, 16)
    d = (np.abs(b).max(axis=2, keepdims=True) / 127.0).astype(np.float32).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(d > 0, b / d, 0.0)
    q = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), -127, 127)
    return (q * d).reshape(rows, k)


ROUNDERS = {"q8_0": round_q8_0, "q8_K": round_q8_K, "q8_16": round_q8_16, None: None}

# scheme -> (rounding of the legacy (32-block) products, rounding of the k-quant products)
SCHEMES = {
    "ggml": ("q8_0", "q8_K"),
    "q8_0-all": ("q8_0", "q8_0"),
    "exact-kquants": ("q8_0", None),
    "exact-legacy": (None, "q8_K"),
    "q8_0-kquants-only": (None, "q8_0"),
    "q8_16-all": ("q8_16", "q8_16"),
    "none": (None, None),
}


def parse_scheme(name):
    """(legacy rounding, k-quant rounding, roles or None for all). Raises ValueError."""
    base, _, roles = name.partition(":")
    if base not in SCHEMES:
        raise ValueError(f"unknown scheme '{base}' (known: {', '.join(SCHEMES)}, or SCHEME:ROLE[+ROLE])")
    chosen = None
    if roles:
        chosen = set(roles.split("+"))
        bad = chosen - set(ROLES)
        if bad:
            raise ValueError(f"scheme '{name}': unknown role(s) {', '.join(sorted(bad))} (roles: {', '.join(ROLES)})")
    return SCHEMES[base] + (chosen,)


def role_of(key):
    """blk.3.attn_q -> attn_q; token_embd / output -> output (the head's product)."""
    return "output" if key in ("token_embd", "output") else key.split(".")[-1]


class Products:
    """What one run's wrapped products record: products per role and rounding-noise energies."""

    def __init__(self, legacy, kquant, roles):
        self.legacy, self.kquant, self.roles = legacy, kquant, roles
        self.count = {}
        self.noise = {}     # role -> [sum (round(h) - h)^2, sum h^2]

    def rounding(self, role, qtype):
        if self.roles is not None and role not in self.roles:
            return None
        if qtype == "F32":
            return None
        if qtype in LEGACY:
            return self.legacy
        if qtype in KQUANT:
            return self.kquant
        raise ValueError(f"weight type {qtype} ({role}): which activation rounding ggml uses is not modelled here")

    def apply(self, role, qtype, h):
        self.count[role] = self.count.get(role, 0) + 1
        kind = self.rounding(role, qtype)
        if kind is None:
            return h
        shape = h.shape
        flat = np.ascontiguousarray(h).reshape(-1, shape[-1])
        r = ROUNDERS[kind](flat)
        acc = self.noise.setdefault(role, [0.0, 0.0])
        acc[0] += float(((r - flat) ** 2).sum())
        acc[1] += float((flat ** 2).sum())
        return r.reshape(shape)


class _Transposed:
    """W.T of a wrapped matrix: `h @ W.T` rounds h first."""
    __array_ufunc__ = None      # ndarray.__matmul__ defers to __rmatmul__ below

    def __init__(self, owner):
        self.owner = owner

    def __rmatmul__(self, h):
        o = self.owner
        return o.products.apply(o.role, o.qtype, h) @ o.a.T


class RoundedMatrix:
    """A weight matrix handed to forward(): its products round their activations; indexing it
    (the embedding lookup) returns its rows, multiplied by the jitter when one is set."""
    __array_ufunc__ = None

    def __init__(self, a, role, qtype, products, jitter=None):
        self.a, self.role, self.qtype, self.products, self.jitter = a, role, qtype, products, jitter

    @property
    def T(self):
        return _Transposed(self)

    @property
    def shape(self):
        return self.a.shape

    def __getitem__(self, index):
        rows = self.a[index]
        if self.jitter is not None:
            eps, seed = self.jitter
            rows = rows * (1.0 + eps * np.random.default_rng(seed).standard_normal(rows.shape))
        return rows


def tensor_types(path):
    """{weights key (no .weight): type name} of the file's tensors."""
    import gguf
    reader = gguf.GGUFReader(str(path))
    out = {}
    for t in reader.tensors:
        key = t.name[: -len(".weight")] if t.name.endswith(".weight") else t.name
        out[key] = t.tensor_type.name
    return out


def run_once(m, weights, types, tokens, scheme, eps, seed):
    legacy, kquant, roles = parse_scheme(scheme)
    products = Products(legacy, kquant, roles)
    wrapped = dict(weights)
    for key, a in weights.items():
        if a.ndim == 2 and key in types and (key.startswith("blk.") or key in ("token_embd", "output")):
            jitter = (eps, seed) if key == "token_embd" and eps else None
            wrapped[key] = RoundedMatrix(a, role_of(key), types[key], products, jitter)
    if "token_embd" not in wrapped or not isinstance(wrapped["token_embd"], RoundedMatrix):
        raise RuntimeError("no token_embd matrix to wrap")
    logits = R.reference_logits(m, wrapped, tokens)
    # Every product of a dense llama-family layer went through a wrapper: a changed forward() would show here.
    expected = {r: m["n_layers"] for r in ROLES if r != "output"}
    expected["output"] = 1
    if products.count != expected:
        raise RuntimeError(f"wrapped products {products.count}, expected {expected}: forward() changed?")
    return logits, products


def out_name(scheme, eps, seed):
    base = scheme.replace(":", "@")
    return f"{base}.npy" if not eps else f"{base}.j{eps:g}.s{seed}.npy"


def int_list(spec):
    return [int(s) for s in spec.split(",") if s.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="GGUF file")
    parser.add_argument("--tokens", required=True, help="comma-separated ids, or a file (JSON array or one id per line)")
    parser.add_argument("--scheme", default="ggml", help="comma-separated schemes (see above)")
    parser.add_argument("--jitter", type=float, default=0.0, metavar="EPS", help="relative jitter of the embeddings")
    parser.add_argument("--seed", default="1", help="seed(s) of the jitter, comma-separated")
    parser.add_argument("--plain", default="", help="schemes to run once more without jitter")
    parser.add_argument("--out", help="output .npy (a single run)")
    parser.add_argument("--out-dir", help="folder for one .npy per run")
    parser.add_argument("--f32", action="store_true", help="write float32 logits instead of float64")
    parser.add_argument("--exact", help="exact logits .npy to measure each run against")
    parser.add_argument("--summary", help="JSON file of every run's measures (needs --exact for the NMSE)")
    args = parser.parse_args()

    def fail(message, status=2):
        print(f"{PROG}: {message}", file=sys.stderr)
        sys.exit(status)

    schemes = [s for s in args.scheme.split(",") if s]
    plain = [s for s in args.plain.split(",") if s]
    try:
        for s in schemes + plain:
            parse_scheme(s)
        seeds = int_list(args.seed) if args.jitter else [None]
        tokens = R.parse_tokens(args.tokens)
    except ValueError as e:
        fail(str(e))
    runs = [(s, args.jitter, seed) for s in schemes for seed in seeds] + [(s, 0.0, None) for s in plain]
    if args.out and len(runs) != 1:
        fail(f"--out takes a single run; these arguments ask for {len(runs)} (use --out-dir)")
    if not args.out and not args.out_dir and not args.exact:
        fail("nothing to write: give --out, --out-dir or --exact")
    if args.out_dir:
        Path(args.out_dir).mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    exact = None
    if args.exact:
        exact = np.load(args.exact).astype(np.float64, copy=False)
        if exact.shape[0] != len(tokens):
            fail(f"{args.exact} has {exact.shape[0]} positions, the tokens {len(tokens)}")
    m, weights = R.load_model(args.model)
    types = tensor_types(args.model)
    bad = [t for t in tokens if not 0 <= t < m["n_vocab"]]
    if bad:
        fail(f"token {bad[0]} is outside the vocabulary (0 .. {m['n_vocab'] - 1})")
    print(f"{PROG}: {m['arch']} {m['n_layers']} layers, {len(tokens)} tokens, {len(runs)} runs; "
          f"load {time.perf_counter() - start:.1f} s", file=sys.stderr)

    records, failed = [], False
    for scheme, eps, seed in runs:
        t0 = time.perf_counter()
        logits, products = run_once(m, weights, types, tokens, scheme, eps, seed)
        rec = dict(scheme=scheme, jitter=eps, seed=seed,
                   noise={r: a[0] / a[1] for r, a in sorted(products.noise.items())})
        path = args.out or (str(Path(args.out_dir) / out_name(scheme, eps, seed)) if args.out_dir else None)
        if path:
            np.save(path, logits.astype(np.float32) if args.f32 else logits)
            rec["file"] = path
        if exact is not None:
            rec.update(logit_accuracy.measures(exact, logits))
            if scheme == "none" and not eps and rec["nmse"] >= 1e-20:
                print(f"{PROG}: scheme none differs from {args.exact}: NMSE {rec['nmse']:.3g} >= 1e-20", file=sys.stderr)
                failed = True
        del logits
        records.append(rec)
        label = scheme + (f" jitter {eps:g} seed {seed}" if eps else "")
        measured = (f"nmse {rec['nmse']:.4e}, argmax {rec['argmax_agree']}/{rec['positions']}, "
                    if exact is not None else "")
        print(f"{PROG}: {label}: {measured}{time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)

    if exact is not None:
        print(f"exact: {args.exact} ({exact.shape[0]} positions x {exact.shape[1]})")
        print(f"{'scheme':<24s} {'jitter':>7s} {'nmse per run':<48s} {'mean':>10s} {'sd':>9s} {'argmax':>14s}")
        groups = {}
        for rec in records:
            groups.setdefault((rec["scheme"], rec["jitter"]), []).append(rec)
        for (scheme, eps), recs in groups.items():
            v = np.array([r["nmse"] for r in recs])
            sd = float(v.std(ddof=1)) if len(v) > 1 else math.nan
            agree = ",".join(str(r["argmax_agree"]) for r in recs)
            print(f"{scheme:<24s} {eps:7.0e} {' '.join(f'{x:.3e}' for x in v):<48s} {v.mean():10.3e} {sd:9.2e} "
                  f"{agree:>14s}/{recs[0]['positions']}")
    if args.summary:
        Path(args.summary).write_text(json.dumps(dict(model=args.model, tokens=len(tokens), exact=args.exact,
                                                      runs=records), indent=2))
    print(f"{PROG}: total {time.perf_counter() - start:.1f} s", file=sys.stderr)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
