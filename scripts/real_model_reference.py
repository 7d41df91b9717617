#!/usr/bin/env python3
"""Exact (float64) logits of a real GGUF model file, for judging backends against exact arithmetic.

    python=$(scripts/python-env)
    "$python" scripts/real_model_reference.py --model "$(scripts/models)" \
        --tokens tests/data/text/declaration-of-independence.gemma3.tokens.json --out /tmp/ref.npy [--f32]
    "$python" scripts/real_model_reference.py --self-check      # against the committed tiny-gemma3 fixture

Reads the model's hyperparameters from the file's metadata, dequantizes every tensor to float64 with
llama.cpp's `gguf` package, and runs the float64 numpy forward pass of scripts/arch_fixtures.py
(written from the Hugging Face transformers definitions; imported, not copied) on the tokens at
positions 0 .. n-1 of an empty cache (n_kv = number of tokens, no zero prefix). Writes the logits of
every position as a .npy of shape (tokens, vocab): float64, or float32 with --f32. The quantized
weights are taken as exactly the values their blocks decode to, so the only difference between this
and a backend is the backend's arithmetic.

TOKENS is a comma-separated list of ids (2,818,5279) or a file holding a JSON array of ints or one int
per line. A token outside the vocabulary, or an empty or unreadable token list, is reported in one line
on stderr with exit status 2.

Architectures: gemma3 (see ARCHITECTURES; another llama-family architecture needs a function that
maps its metadata onto arch_fixtures' hyperparameter dict, and whatever forward() lacks for it).
Memory: the weights are held once as float64 (270M parameters: 2.2 GB, 1.3 GB of it the 262144 x 640
embedding, which is also the tied output matrix) plus the float64 logits (600 tokens x 262144: 1.3 GB).

--self-check builds the hyperparameters of tests/data/models/arch/tiny-gemma3.gguf from its metadata the
same way and recomputes each of its committed references (n_kv 7 is this script's own code path; the
n_kv 12 one has a zero-prefixed cache, the l1 one stops after the first layer), printing the largest
difference relative to the largest logit; it fails above 1e-12. (It is about 1e-14, not 0: the eps
here is the float32 the file holds, 1e-6 rounded, where the fixture generator used 1e-6 itself.)
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import arch_fixtures as A  # noqa: E402  (forward, from_file, read_gguf: the float64 reference itself)

import gguf  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROG = "real_model_reference"


class Unsupported(Exception):
    """The file is of an architecture or variant this script does not compute."""


def field(reader, key, default=None):
    """A metadata value (scalar or string), or default when the file has no such key."""
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def llama_family_config(reader, arch):
    """The hyperparameters every llama-family file states the same way, in arch_fixtures' terms."""
    def need(key):
        value = field(reader, f"{arch}.{key}")
        if value is None:
            raise Unsupported(f"no {arch}.{key} in the file")
        return value

    n_embd, n_head = int(need("embedding_length")), int(need("attention.head_count"))
    head_dim = int(field(reader, f"{arch}.attention.key_length", n_embd // n_head))
    if int(field(reader, f"{arch}.attention.value_length", head_dim)) != head_dim:
        raise Unsupported("value_length differs from key_length")
    embd = next((t for t in reader.tensors if t.name == "token_embd.weight"), None)
    if embd is None:
        raise Unsupported("no token_embd.weight in the file")
    return dict(
        arch=arch, n_embd=n_embd, n_head=n_head, n_head_kv=int(field(reader, f"{arch}.attention.head_count_kv", n_head)),
        head_dim=head_dim, n_ff=int(need("feed_forward_length")), n_layers=int(need("block_count")),
        n_vocab=int(embd.shape[1]),   # gguf lists shapes innermost first: (n_embd, n_vocab)
        eps=float(need("attention.layer_norm_rms_epsilon")),   # the float32 the file holds, as llama.cpp uses it
        freq_base=field(reader, f"{arch}.rope.freq_base"),      # None: llama.cpp's default 10000
        tied=not any(t.name == "output.weight" for t in reader.tensors))


def rope_linear_scale(reader, arch):
    """The factor of linear rope scaling, 1.0 when the file asks for none."""
    kind = field(reader, f"{arch}.rope.scaling.type", "none")
    factor = float(field(reader, f"{arch}.rope.scaling.factor", 1.0))
    if kind == "none" or factor in (0.0, 1.0):
        return 1.0
    if kind != "linear":
        raise Unsupported(f"{arch}.rope.scaling.type '{kind}' (only linear is implemented)")
    return factor


def gemma3_config(reader):
    """llama.cpp's reading of a gemma3 file (llama-model.cpp, LLM_ARCH_GEMMA3), which matches
    transformers' Gemma3TextConfig: embeddings x sqrt(n_embd) and (1 + w) RMS norms (gemma=True),
    per-head q/k norms, GELU-tanh gated FFN, post-attention and post-FFN norms; with a sliding
    window, layers il % 6 < 5 slide and rope with base 10000 unscaled, the others are global with
    rope.freq_base and the file's rope scaling; queries scaled by 1/sqrt(head_dim) (forward()
    divides by sqrt(head_dim)); no attention soft-cap, a final soft-cap only if the file has one."""
    m = llama_family_config(reader, "gemma3")
    if m["n_layers"] == 62:
        # llama.cpp's LLM_TYPE_27B scales queries by 1/sqrt(n_embd / n_head), not 1/sqrt(head_dim).
        raise Unsupported("gemma3 27B: its query scale 1/sqrt(n_embd/n_head) is not implemented")
    window = int(field(reader, "gemma3.attention.sliding_window", 0))
    if "gemma3.attention.sliding_window_pattern" in reader.fields:
        # llama.cpp knows this key; forward() has only the fixed period (sliding(): il % 6 < 5).
        raise Unsupported("gemma3.attention.sliding_window_pattern (only the period 6 is implemented)")
    m.update(gemma=True, qk_norm=True, act="gelu_tanh",
             freq_base_swa=float(field(reader, "gemma3.rope.freq_base_swa", 10000.0)),
             linear_scale=rope_linear_scale(reader, "gemma3"))
    if m["freq_base"] is None:
        m["freq_base"] = 10000.0
    if window > 0:
        m.update(swa_window=window, swa_period=6)
    else:
        # forward() picks the local rope base for sliding layers; without a window every layer is global.
        m.update(swa_period=1)
    softcap = float(field(reader, "gemma3.final_logit_softcapping", 0.0))
    if softcap > 0.0:
        m["final_softcap"] = softcap
    return m


# general.architecture -> function(reader) -> arch_fixtures hyperparameter dict
ARCHITECTURES = {"gemma3": gemma3_config}


def read_config(reader):
    arch = field(reader, "general.architecture")
    if arch not in ARCHITECTURES:
        raise Unsupported(f"architecture '{arch}' (supported: {', '.join(ARCHITECTURES)})")
    return ARCHITECTURES[arch](reader)


def load_model(path, reader=None):
    """(hyperparameters, float64 weights in the checkpoint's layout); `reader`: the file opened."""
    tensors, reader = A.read_gguf(path, reader)   # every tensor dequantized to float64, once
    m = read_config(reader)
    weights = A.from_file(m, tensors)         # Gemma's stored (1 + w) norms back to w; the rest shared
    del tensors
    return m, weights


def reference_logits(m, weights, tokens, n_kv=None, n_layers=None):
    """Logits [T, vocab]. Defaults: positions 0 .. T-1 (n_kv = T) through every layer."""
    return A.forward(m, weights, list(tokens), n_kv or len(tokens), n_layers or m["n_layers"])


def parse_tokens(spec):
    """Token ids from 'a,b,c' or from a file (JSON array, or one id per line). Raises ValueError."""
    # Digits and commas only: a list (a long one is no valid file name). Anything else: a file.
    as_list = bool(spec.strip()) and all(c.isdigit() or c in ", -" for c in spec)
    path = Path(spec)
    if not spec.strip():
        raise ValueError("--tokens is empty")
    if not as_list:
        if not path.is_file():
            raise ValueError(f"--tokens {spec}: no such file, and not a comma-separated list of token ids")
        text = path.read_text().strip()
        if not text:
            raise ValueError(f"token file {spec} is empty")
        if text.startswith("["):
            try:
                values = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"token file {spec} is not a JSON array: {e}") from None
            if not isinstance(values, list) or not all(type(v) is int for v in values):
                raise ValueError(f"token file {spec} must hold a JSON array of integers")
            if not values:
                raise ValueError(f"token file {spec} holds an empty array")
            return values
        items, where = [line.strip() for line in text.splitlines()], f"token file {spec}"
        items = [s for s in items if s]
    else:
        items, where = [s.strip() for s in spec.split(",")], "--tokens"
    out = []
    for s in items:
        try:
            out.append(int(s))
        except ValueError:
            raise ValueError(f"{where}: '{s}' is not an integer token id") from None
    return out


def self_check():
    """Recomputes tiny-gemma3's committed references through read_config/load_model/reference_logits."""
    folder = ROOT / "tests/data/models/arch"
    manifest = json.loads((folder / "manifest.json").read_text())
    entry = manifest["models"]["tiny-gemma3"]
    m, w = load_model(folder / entry["file"])
    worst = 0.0
    for ref in entry["references"]:
        want = np.load(folder / ref["logits"])
        got = reference_logits(m, w, manifest["tokens"], ref["n_kv"], ref["n_layers"] or None)
        err = float(np.abs(got - want).max() / np.abs(want).max())
        worst = max(worst, err)
        print(f"{PROG}: tiny-gemma3 {ref['logits']} (n_layers {ref['n_layers']}, n_kv {ref['n_kv']}): "
              f"max |diff| / max |logit| = {err:.3g}", file=sys.stderr)
    if worst > 1e-12:
        sys.exit(f"{PROG}: self-check failed ({worst:.3g} > 1e-12)")
    print(f"{PROG}: self-check passed", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="GGUF file")
    parser.add_argument("--tokens", help="comma-separated ids, or a file (JSON array or one id per line)")
    parser.add_argument("--out", help="output .npy (tokens, vocab)")
    parser.add_argument("--f32", action="store_true", help="write float32 instead of float64")
    parser.add_argument("--self-check", action="store_true", help="check against the tiny-gemma3 fixture")
    args = parser.parse_args()
    if args.self_check:
        self_check()
        return
    if args.model is None or args.tokens is None or args.out is None:
        parser.error("--model, --tokens and --out are required")

    def fail(message):
        print(f"{PROG}: {message}", file=sys.stderr)
        sys.exit(2)

    start = time.perf_counter()
    try:
        tokens = parse_tokens(args.tokens)
    except (ValueError, OSError, UnicodeDecodeError) as e:
        fail(str(e))
    # Check the configuration and the tokens before the slow part (dequantizing every tensor).
    try:
        reader = gguf.GGUFReader(args.model)
        m = read_config(reader)
    except Unsupported as e:
        fail(f"{args.model}: unsupported: {e}")
    except (OSError, ValueError) as e:     # missing file, or not a GGUF file
        fail(f"cannot read {args.model}: {e}")
    bad = [t for t in tokens if not 0 <= t < m["n_vocab"]]
    if bad:
        fail(f"token {bad[0]} is outside the vocabulary (0 .. {m['n_vocab'] - 1})")

    m, weights = load_model(args.model, reader)
    loaded = time.perf_counter()
    logits = reference_logits(m, weights, tokens)
    del weights
    done = time.perf_counter()
    np.save(args.out, logits.astype(np.float32) if args.f32 else logits)
    print(f"{PROG}: {m['arch']} {m['n_layers']} layers, {len(tokens)} tokens -> {args.out} "
          f"({logits.shape[0]} x {logits.shape[1]}, {'float32' if args.f32 else 'float64'}); "
          f"load {loaded - start:.1f} s, forward {done - loaded:.1f} s, total {time.perf_counter() - start:.1f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
