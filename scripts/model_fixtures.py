#!/usr/bin/env python3
"""Writes tiny llama.cpp model files and their reference logits into tests/data/models/, so that
the gguf model builder is checked against an independent implementation. The tests read the
committed files and need no network.

    python3 -m pip install gguf numpy    # llama.cpp's own GGUF package; versions go into the manifest
    python3 scripts/model_fixtures.py [--out tests/data/models]

Each model is made the way llama.cpp's converter makes one from a Hugging Face checkpoint: random
weights in the checkpoint's layout ([out, in] matrices, rotate-half rope), written with the `gguf`
package under llama.cpp's tensor names and metadata keys, Q and K permuted for llama.cpp's
normal-mode rope in the `llama` architecture and left as they are in `qwen2` (neox rope). The
reference logits come from a float64 numpy forward pass over the checkpoint-layout weights (for
stored f16 and quantized weights: the values the file holds, dequantized by `gguf`), so they check
the layout conventions as well as the arithmetic.

Models (manifest.json lists them with their references):
  tiny-llama        f32, grouped-query attention (4 heads, 2 KV heads), untied output
  tiny-llama-tied   f16 matrices, 4 KV heads, output tied to token_embd, linear rope scaling x2
  tiny-qwen2        f32, q/k/v biases, neox rope, tied output, freq_base 1e6
  tiny-qwen2-f16    f16 matrices, biases, untied output
  tiny-llama3       f32, Llama 3.1/3.2 style: 4 heads sharing 1 KV head, freq_base 500000,
                    rope_freqs.weight (llama3 rope scaling factors), tied output
  tiny-llama-quant  n_embd 256 (k-quant blocks), every quantized type xbackend reads, mixed per
                    tensor and per layer as llama.cpp's Q4_K_M mixes them; k-quant blocks are
                    random (gguf cannot quantize them), legacy ones are gguf's quantization
  tiny-llama-q2_k, tiny-llama-q3_k_m, tiny-llama-iq4_xs
                    the same shape mixed as llama.cpp's Q2_K, Q3_K_M and IQ4_XS files are
  tiny-llama-iq     the same shape with the remaining formats (the IQ family, TQ1_0/TQ2_0, MXFP4)
                    spread over the tensors; formats gguf cannot quantize get random valid blocks
                    (written after bad/ with their own generator, so the files above stay as they were)
References: every layer with the cache exactly the batch; the first layer only; and for
tiny-llama a cache longer than the batch (the batch at its end, earlier entries zero).
bad/: a minimal model broken in each way a file can be (see BAD_FILES).
Every model file has tokenizer.ggml.model "none" and <arch>.vocab_size, so that llama.cpp loads it;
scripts/llamacpp-reference adds llama.cpp's own logits and a "llamacpp" entry per model to the
manifest, which this script keeps while the model file is unchanged (its sha256).

    python3 scripts/model_fixtures.py --big /tmp/big.gguf [--big-layers 8]

writes instead one large llama-layout f16 model with random weights and no reference (8 layers of
n_embd 2048, n_ff 5632, vocabulary 32000: 1.08 GB), for measuring the loader's memory (results/).

    python3 scripts/model_fixtures.py --big /tmp/llama3-8b.gguf --big-model llama3-8b-q4_k_m [--big-layers 32]

writes a Llama-3-8B-shaped model as llama.cpp's Q4_K_M mixes it (32 layers, n_embd 4096, 32 heads and 8
KV heads of 128, n_ff 14336, vocabulary 128256; q4_K matrices, q6_K for output.weight and for attn_v
and ffn_down in the layers llama.cpp gives more bits: 4.9 GB) from random valid blocks, for timing
against llama.cpp (scripts/llama-bench-side-by-side). Blocks come from one random pool per type, rolled
per tensor, so the file is written at disk speed. The same for Llama 3.2 1B's shape (16 layers, n_embd
2048, 32/8 heads of 64, n_ff 8192, tied output) and for other mixes: `--big-model
{llama3-8b,llama3.2-1b}-{q4_k_m,q8_0,q6_k,f16,bf16}` (scripts/llama-bench-side-by-side writes them
into its cache). `--big-model qwen3moe-30b-a3b-q4_k_m` writes a
Qwen3-30B-A3B-shaped mixture of experts the same way (48 layers of 128 experts of 768, 8 per
token; 17 GB at full depth, so give --big-layers for a part of it).

    python3 scripts/model_fixtures.py --describe real.gguf > tests/data/models/shapes/NAME.json
    python3 scripts/model_fixtures.py --big /tmp/x.gguf --like tests/data/models/shapes/NAME.json [--big-layers N]

--describe prints a real file's shape without its weights (every metadata value but the
tokenizer's, whose vocabulary is kept as a size; each tensor's name, shape and type); --like writes
a file of that shape from random valid blocks (types q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K, q6_K,
f16, bf16, f32),
which llama.cpp and xbackend load and time as the real one: for a machine the real file cannot be
carried to (tests/data/models/shapes/gemma-3-270m-q4_k_m.json: Gemma 3 270M, for the GPU lease).
"""
import argparse
import hashlib
import importlib.metadata
import json
import sys
from pathlib import Path

import numpy as np

try:
    import gguf
    from gguf import quants
except ImportError:
    sys.exit("model_fixtures: needs the gguf package (python3 -m pip install gguf numpy)")
from gguf_block_scales import Q2_K_DMIN_AT, put_f16_scale

T = gguf.GGMLQuantizationType
TOKENS = [1, 17, 255, 42, 3, 200, 99]  # odd count; valid for every vocabulary below

MODELS = {
    "tiny-llama": dict(arch="llama", n_embd=64, n_head=4, n_head_kv=2, n_ff=160, n_vocab=256, n_layers=2,
                       eps=1e-5, freq_base=10000.0, tied=False, bias=False, weights="f32"),
    "tiny-llama-tied": dict(arch="llama", n_embd=64, n_head=4, n_head_kv=4, n_ff=96, n_vocab=256, n_layers=2,
                            eps=1e-6, freq_base=10000.0, tied=True, bias=False, weights="f16", linear_scale=2.0),
    "tiny-qwen2": dict(arch="qwen2", n_embd=64, n_head=4, n_head_kv=2, n_ff=128, n_vocab=256, n_layers=2,
                       eps=1e-6, freq_base=1e6, tied=True, bias=True, weights="f32"),
    "tiny-qwen2-f16": dict(arch="qwen2", n_embd=64, n_head=4, n_head_kv=2, n_ff=128, n_vocab=256, n_layers=2,
                           eps=1e-6, freq_base=1e6, tied=False, bias=True, weights="f16"),
    "tiny-llama3": dict(arch="llama", n_embd=64, n_head=4, n_head_kv=1, n_ff=128, n_vocab=256, n_layers=2,
                        eps=1e-5, freq_base=500000.0, tied=True, bias=False, weights="f32", llama3_rope=True),
    "tiny-llama-quant": dict(arch="llama", n_embd=256, n_head=4, n_head_kv=2, n_ff=512, n_vocab=320, n_layers=2,
                             eps=1e-5, freq_base=10000.0, tied=False, bias=False, weights="quant"),
}

# tiny-llama-quant's type per tensor (layer 0, layer 1): every type the library reads.
QUANT_TYPES = {
    "token_embd": T.Q4_K, "output": T.Q6_K,
    "attn_q": (T.Q4_K, T.Q5_K), "attn_k": (T.Q8_0, T.Q4_0), "attn_v": (T.Q6_K, T.Q5_1),
    "attn_output": (T.Q5_K, T.Q4_K), "ffn_gate": (T.Q4_0, T.Q4_1), "ffn_up": (T.Q4_1, T.Q5_0),
    "ffn_down": (T.Q6_K, T.Q8_0),
}


# The llama.cpp mixes of the newer formats (llama_tensor_get_type for a 2-layer model with 2 KV
# groups), and a model spreading every other newer format over its tensors.
MIX_TYPES = {
    "tiny-llama-q2_k": {"token_embd": T.Q2_K, "output": T.Q6_K, "attn_q": T.Q2_K, "attn_k": T.Q2_K,
                        "attn_v": T.Q3_K, "attn_output": T.Q2_K, "ffn_gate": T.Q2_K, "ffn_up": T.Q2_K,
                        "ffn_down": T.Q3_K},
    "tiny-llama-q3_k_m": {"token_embd": T.Q3_K, "output": T.Q6_K, "attn_q": T.Q3_K, "attn_k": T.Q3_K,
                          "attn_v": T.Q5_K, "attn_output": T.Q4_K, "ffn_gate": T.Q3_K, "ffn_up": T.Q3_K,
                          "ffn_down": T.Q5_K},
    "tiny-llama-iq4_xs": {"token_embd": T.IQ4_XS, "output": T.Q6_K, "attn_q": T.IQ4_XS, "attn_k": T.IQ4_XS,
                          "attn_v": T.IQ4_XS, "attn_output": T.IQ4_XS, "ffn_gate": T.IQ4_XS, "ffn_up": T.IQ4_XS,
                          "ffn_down": T.IQ4_XS},
    "tiny-llama-iq": {"token_embd": T.IQ4_NL, "output": T.MXFP4, "attn_q": (T.IQ2_XXS, T.IQ2_XS),
                      "attn_k": (T.IQ2_S, T.IQ3_XXS), "attn_v": (T.IQ3_S, T.IQ1_S), "attn_output": (T.IQ1_M, T.TQ1_0),
                      "ffn_gate": (T.TQ2_0, T.IQ4_NL), "ffn_up": (T.MXFP4, T.IQ2_XXS), "ffn_down": (T.IQ3_S, T.IQ4_XS)},
}
MIX_MODELS = {name: dict(MODELS["tiny-llama-quant"], types=types) for name, types in MIX_TYPES.items()}
# Formats gguf can quantize (the rest are written as random valid blocks).
GGUF_QUANTIZES = (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.TQ1_0, T.TQ2_0, T.MXFP4)


def ggml_name(qtype):
    return qtype.name.lower().replace("_k", "_K")


# --- weights -------------------------------------------------------------------------------------

def k_quant_blocks(qtype, rows, cols, std, rng):
    """Random blocks of a k-quant type whose values have about `std` spread around zero."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    n = rows * (cols // block)
    raw = rng.integers(0, 256, (n, size), dtype=np.uint8)

    def set_f16(col, value):
        raw[:, col:col + 2] = np.full(n, value, dtype=np.float16).view(np.uint8).reshape(n, 2)

    # With d = 1 the values are sc*q - (dmin/d)*m; dmin/d centres them (q averages 7.5 or 15.5).
    centre = {T.Q4_K: 7.5, T.Q5_K: 15.5}.get(qtype)
    d_col = size - 2 if qtype == T.Q6_K else 0
    set_f16(d_col, 1.0)
    if centre is not None:
        set_f16(2, centre)
    unit = quants.dequantize(raw.reshape(rows, -1), qtype)
    scale = std / unit.std()
    set_f16(d_col, scale)
    if centre is not None:
        set_f16(2, centre * scale)
    return raw.reshape(rows, -1)


def format_blocks(qtype, rows, cols, std, rng):
    """Random valid blocks of a newer format (q2_K, q3_K, IQ) whose values have about `std` spread."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    n = rows * (cols // block)
    raw = rng.integers(0, 256, (n, size), dtype=np.uint8)

    def set_scale(value):
        put_f16_scale(raw, qtype, np.full(n, value, dtype=np.float16).view(np.uint16))
        if qtype == T.Q2_K:  # dmin = 1.5 d centres d*sc*q - dmin*m (q averages 1.5, sc and m 7.5)
            at = Q2_K_DMIN_AT
            raw[:, at:at + 2] = np.full(n, 1.5 * value, dtype=np.float16).view(np.uint8).reshape(n, 2)

    set_scale(1.0)
    unit = quants.dequantize(raw.reshape(rows, -1), qtype)
    set_scale(std / float(unit.std()))
    return raw.reshape(rows, -1)


def stored(name, w, hp, layer, rng):
    """(array to write, raw type, the values the file holds as float64) for weight matrix w."""
    kind = hp["weights"]
    if kind == "f32" or w.ndim == 1:
        a = w.astype(np.float32)
        return a, None, a.astype(np.float64)
    if kind == "f16":
        a = w.astype(np.float16)
        return a, None, a.astype(np.float64)
    role = name.split(".")[2] if name.startswith("blk.") else name
    qtype = hp.get("types", QUANT_TYPES)[role]
    if isinstance(qtype, tuple):
        qtype = qtype[layer]
    if qtype in (T.Q4_K, T.Q5_K, T.Q6_K):
        q = k_quant_blocks(qtype, w.shape[0], w.shape[1], float(w.std()), rng)
    elif qtype in GGUF_QUANTIZES:
        q = quants.quantize(w.astype(np.float32), qtype)
    else:
        q = format_blocks(qtype, w.shape[0], w.shape[1], float(w.std()), rng)
    return q, qtype, quants.dequantize(q, qtype).astype(np.float64)


def permute_for_normal_rope(w, n_heads):
    """llama.cpp's converter reorders each head's rows from (half, i) to (i, half), so that
    rotating adjacent pairs (ggml's normal rope) equals the checkpoint's rotate-half rope."""
    head = w.shape[0] // n_heads
    return w.reshape(n_heads, 2, head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_rope_factors(hp, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_context=64):
    """Llama 3.1's rope scaling as llama.cpp's converter stores it (rope_freqs.weight): per pair, the
    divisor of its angle: 1 for short wavelengths, `factor` for long ones, a blend between. The
    original context is tiny here so that the tiny head's 8 pairs cover all three cases."""
    d = hp["n_embd"] // hp["n_head"]
    freqs = hp["freq_base"] ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    wavelen = 2 * np.pi / freqs
    low_wavelen, high_wavelen = original_context / low_freq_factor, original_context / high_freq_factor
    smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    blend = 1.0 / ((1.0 - smooth) / factor + smooth)
    return np.where(wavelen < high_wavelen, 1.0, np.where(wavelen > low_wavelen, factor, blend))


def make_model(hp, rng):
    """Checkpoint-layout weights: name -> float64 array ([out, in] for matrices)."""
    e, hd = hp["n_embd"], hp["n_embd"] // hp["n_head"]
    q, kv, f, v = hp["n_head"] * hd, hp["n_head_kv"] * hd, hp["n_ff"], hp["n_vocab"]
    w = {"token_embd": rng.standard_normal((v, e)) * 0.5, "output_norm": rng.uniform(0.8, 1.2, e)}
    if not hp["tied"]:
        w["output"] = rng.standard_normal((v, e)) / np.sqrt(e)
    if hp.get("llama3_rope"):
        w["rope_freqs"] = llama3_rope_factors(hp)
    for il in range(hp["n_layers"]):
        p = f"blk.{il}."
        w[p + "attn_norm"] = rng.uniform(0.8, 1.2, e)
        w[p + "attn_q"] = rng.standard_normal((q, e)) / np.sqrt(e)
        w[p + "attn_k"] = rng.standard_normal((kv, e)) / np.sqrt(e)
        w[p + "attn_v"] = rng.standard_normal((kv, e)) / np.sqrt(e)
        if hp["bias"]:
            w[p + "attn_q_bias"] = rng.standard_normal(q) * 0.1
            w[p + "attn_k_bias"] = rng.standard_normal(kv) * 0.1
            w[p + "attn_v_bias"] = rng.standard_normal(kv) * 0.1
        w[p + "attn_output"] = rng.standard_normal((e, q)) / np.sqrt(q)
        w[p + "ffn_norm"] = rng.uniform(0.8, 1.2, e)
        w[p + "ffn_gate"] = rng.standard_normal((f, e)) / np.sqrt(e)
        w[p + "ffn_up"] = rng.standard_normal((f, e)) / np.sqrt(e)
        w[p + "ffn_down"] = rng.standard_normal((e, f)) / np.sqrt(f)
    return w


def gguf_name(key):
    """Checkpoint key -> llama.cpp tensor name."""
    if key.endswith("_bias"):
        return key[: -len("_bias")] + ".bias"
    return key + ".weight"


def llama_writer(path, name, hp, context=2048):
    """A GGUFWriter for hp's architecture with the name and the hyperparameters every model here has."""
    writer = gguf.GGUFWriter(str(path), arch=hp.get("arch", "llama"))
    writer.add_name(name)
    writer.add_block_count(hp["n_layers"])
    writer.add_context_length(context)
    writer.add_embedding_length(hp["n_embd"])
    writer.add_feed_forward_length(hp.get("feed_forward_length", hp["n_ff"]))   # one per layer: Nemotron-H
    writer.add_head_count(hp["n_head"])
    # One number, or one per layer where a hybrid's (LFM2's) recurrent layers have 0.
    writer.add_head_count_kv(hp.get("head_count_kv", hp["n_head_kv"]))
    if hp.get("plain_norm_eps"):      # NemotronHModel writes only layer_norm_epsilon (llama.cpp's RMS eps then)
        writer.add_layer_norm_eps(hp["eps"])
    else:
        writer.add_layer_norm_rms_eps(hp["eps"])
    # What llama.cpp needs to load a file without a tokenizer: the converter always writes a
    # tokenizer, and without one llama.cpp's loader requires tokenizer.ggml.model ("none" is
    # accepted: no vocabulary) and <arch>.vocab_size (the logits' width). xbackend reads neither.
    writer.add_tokenizer_model("none")
    writer.add_vocab_size(hp["n_vocab"])
    return writer


def write_model(path, name, hp, weights, rng):
    """Writes the GGUF file; returns the weights as the file holds them (float64, checkpoint
    layout: the permutation undone), which the reference computes with."""
    writer = llama_writer(path, name, hp)
    arch = hp["arch"]
    writer.add_rope_freq_base(hp["freq_base"])
    writer.add_rope_dimension_count(hp["n_embd"] // hp["n_head"])
    if "linear_scale" in hp:
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(hp["linear_scale"])
    writer.add_string("xbackend.fixture.generator", "scripts/model_fixtures.py")
    held = {}
    for key, w in weights.items():
        layer = int(key.split(".")[1]) if key.startswith("blk.") else 0
        out = w
        permuted = arch == "llama" and key.split(".")[-1] in ("attn_q", "attn_k")
        if permuted:
            heads = hp["n_head"] if key.endswith("attn_q") else hp["n_head_kv"]
            out = permute_for_normal_rope(w, heads)
        array, raw, values = stored(key, out, hp, layer, rng)
        if permuted:  # undo the permutation on the values the file holds
            heads = hp["n_head"] if key.endswith("attn_q") else hp["n_head_kv"]
            hd = values.shape[0] // heads
            values = values.reshape(heads, hd // 2, 2, -1).swapaxes(1, 2).reshape(values.shape)
        writer.add_tensor(gguf_name(key), array, raw_dtype=raw)
        held[key] = values
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return held


# --- the float64 reference ---------------------------------------------------------------------

def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope_rotate_half(x, pos, base, scale, factors):
    """x [T, heads, d]: the checkpoint's rope, pairs (i, i + d/2) rotated by
    pos * scale * base^(-2i/d) / factors[i]."""
    d = x.shape[-1]
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d) / factors
    ang = (pos[:, None] * scale) * inv[None, :]          # [T, d/2]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def forward(hp, w, tokens, n_kv, n_layers):
    """Logits [T, vocab] of the batch at the end of an n_kv cache whose earlier entries are zero."""
    t = len(tokens)
    prefix = n_kv - t
    hd = hp["n_embd"] // hp["n_head"]
    group = hp["n_head"] // hp["n_head_kv"]
    scale = 1.0 / hp.get("linear_scale", 1.0)
    pos = np.arange(prefix, n_kv, dtype=np.float64)
    factors = w.get("rope_freqs", 1.0)
    x = w["token_embd"][tokens]
    for il in range(n_layers):
        p = f"blk.{il}."
        h = rms_norm(x, w[p + "attn_norm"], hp["eps"])
        q, k, v = h @ w[p + "attn_q"].T, h @ w[p + "attn_k"].T, h @ w[p + "attn_v"].T
        if hp["bias"]:
            q, k, v = q + w[p + "attn_q_bias"], k + w[p + "attn_k_bias"], v + w[p + "attn_v_bias"]
        q = rope_rotate_half(q.reshape(t, hp["n_head"], hd), pos, hp["freq_base"], scale, factors)
        k = rope_rotate_half(k.reshape(t, hp["n_head_kv"], hd), pos, hp["freq_base"], scale, factors)
        v = v.reshape(t, hp["n_head_kv"], hd)
        k = np.concatenate([np.zeros((prefix, hp["n_head_kv"], hd)), k])
        v = np.concatenate([np.zeros((prefix, hp["n_head_kv"], hd)), v])
        allowed = np.arange(n_kv)[None, :] <= (prefix + np.arange(t))[:, None]  # [T, n_kv]
        out = np.empty((t, hp["n_head"], hd))
        for head in range(hp["n_head"]):
            s = q[:, head] @ k[:, head // group].T / np.sqrt(hd)
            s = np.where(allowed, s, -np.inf)
            s = np.exp(s - s.max(axis=1, keepdims=True))
            out[:, head] = (s / s.sum(axis=1, keepdims=True)) @ v[:, head // group]
        x = x + out.reshape(t, -1) @ w[p + "attn_output"].T
        h = rms_norm(x, w[p + "ffn_norm"], hp["eps"])
        g, u = h @ w[p + "ffn_gate"].T, h @ w[p + "ffn_up"].T
        x = x + (g / (1.0 + np.exp(-g)) * u) @ w[p + "ffn_down"].T
    x = rms_norm(x, w["output_norm"], hp["eps"])
    return x @ w["output" if "output" in w else "token_embd"].T


# --- bad files --------------------------------------------------------------------------------

BAD_HP = dict(arch="llama", n_embd=8, n_head=2, n_head_kv=2, n_ff=16, n_vocab=16, n_layers=1,
              eps=1e-5, freq_base=10000.0, tied=False, bias=False, weights="f32")

# name -> (what is wrong, how to break the minimal model). The C++ tests hold the expected messages.
BAD_FILES = {
    "truncated": "the file cut short after 200 bytes, in the metadata",
    "bad-magic": "the magic is GGUX",
    "bad-version": "GGUF version 7",
    "missing-tensor": "no blk.0.ffn_up.weight",
    "wrong-shape": "blk.0.attn_k.weight [8, 4] instead of [8, 8]",
    "wrong-type": "blk.0.attn_norm.weight stored f16 (norms must be f32)",
    "metadata-type": "llama.block_count is a string",
    "heads-do-not-divide": "llama.attention.head_count_kv 3 does not divide head_count 2",
    "unsupported-arch": "general.architecture is mamba",
    "extra-tensor": "a tensor with no role in the llama graph (blk.0.attn_output.bias)",
}


def write_minimal(path, rng, edit=None):
    """The minimal model, with `edit(kv, tensors)` applied to its metadata and tensors first."""
    hp = BAD_HP
    kv = {
        "general.architecture": ("str", hp["arch"]),
        "llama.block_count": ("u32", 1), "llama.context_length": ("u32", 64),
        "llama.embedding_length": ("u32", 8), "llama.feed_forward_length": ("u32", 16),
        "llama.attention.head_count": ("u32", 2), "llama.attention.head_count_kv": ("u32", 2),
        "llama.attention.layer_norm_rms_epsilon": ("f32", 1e-5), "llama.rope.freq_base": ("f32", 10000.0),
    }
    tensors = {gguf_name(k): v.astype(np.float32) for k, v in make_model(hp, rng).items()}
    if edit:
        edit(kv, tensors)
    arch = kv.pop("general.architecture")[1]
    writer = gguf.GGUFWriter(str(path), arch=arch)
    for key, (kind, value) in kv.items():
        {"str": writer.add_string, "u32": writer.add_uint32, "f32": writer.add_float32}[kind](key, value)
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write_bad_files(out, rng):
    out.mkdir(parents=True, exist_ok=True)
    edits = {
        "missing-tensor": lambda kv, t: t.pop("blk.0.ffn_up.weight"),
        "wrong-shape": lambda kv, t: t.update({"blk.0.attn_k.weight": t["blk.0.attn_k.weight"][:4]}),
        "wrong-type": lambda kv, t: t.update({"blk.0.attn_norm.weight": t["blk.0.attn_norm.weight"].astype(np.float16)}),
        "metadata-type": lambda kv, t: kv.update({"llama.block_count": ("str", "1")}),
        "heads-do-not-divide": lambda kv, t: kv.update({"llama.attention.head_count_kv": ("u32", 3)}),
        "unsupported-arch": lambda kv, t: kv.update({"general.architecture": ("str", "mamba")}),
        "extra-tensor": lambda kv, t: t.update({"blk.0.attn_output.bias": np.zeros(8, np.float32)}),
    }
    good = out / "good.gguf"
    write_minimal(good, np.random.default_rng(1))
    data = good.read_bytes()
    for name in BAD_FILES:
        path = out / f"{name}.gguf"
        if name == "truncated":
            path.write_bytes(data[:200])
        elif name == "bad-magic":
            path.write_bytes(b"GGUX" + data[4:])
        elif name == "bad-version":
            path.write_bytes(data[:4] + (7).to_bytes(4, "little") + data[8:])
        else:
            write_minimal(path, np.random.default_rng(1), edits[name])


def write_big(path, n_layers):
    """A TinyLlama-shaped f16 model, one tensor in memory at a time (gguf's writer streams them)."""
    hp = dict(arch="llama", n_embd=2048, n_head=16, n_head_kv=16, n_ff=5632, n_vocab=32000, n_layers=n_layers,
              eps=1e-5, freq_base=10000.0)
    rng = np.random.default_rng(1)
    e, f, v = hp["n_embd"], hp["n_ff"], hp["n_vocab"]
    shapes = {"token_embd.weight": (v, e), "output_norm.weight": (e,), "output.weight": (v, e)}
    for il in range(n_layers):
        p = f"blk.{il}."
        shapes.update({p + "attn_norm.weight": (e,), p + "attn_q.weight": (e, e), p + "attn_k.weight": (e, e),
                       p + "attn_v.weight": (e, e), p + "attn_output.weight": (e, e), p + "ffn_norm.weight": (e,),
                       p + "ffn_gate.weight": (f, e), p + "ffn_up.weight": (f, e), p + "ffn_down.weight": (e, f)})
    writer = llama_writer(path, "big-f16", hp)
    for name, shape in shapes.items():
        if len(shape) == 1:
            writer.add_tensor_info(name, shape, np.dtype(np.float32), shape[0] * 4)
        else:
            writer.add_tensor_info(name, shape, np.dtype(np.float16), shape[0] * shape[1] * 2)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for name, shape in shapes.items():
        if len(shape) == 1:
            writer.write_tensor_data(np.ones(shape, np.float32))
        else:
            writer.write_tensor_data((rng.standard_normal(shape, np.float32) / np.sqrt(shape[1])).astype(np.float16))
    writer.close()
    print(f"model_fixtures: wrote {path} ({Path(path).stat().st_size / 1e9:.2f} GB)", file=sys.stderr)


# Llama-3-8B's shape (Meta-Llama-3-8B's config.json) for --big-model llama3-8b-q4_k_m.
LLAMA3_8B = dict(n_embd=4096, n_head=32, n_head_kv=8, n_ff=14336, n_vocab=128256, n_layers=32, eps=1e-5,
                 freq_base=500000.0, context=8192)
POOL_BLOCKS = 1 << 18  # random blocks per type, reused (rolled) for every tensor of that type


def q4_k_m_type(role, layer, n_layers):
    """llama.cpp's Q4_K_M choice (llama_tensor_get_type): q6_K for output.weight, and for attn_v and
    ffn_down in the first and last eighth of the layers and every third layer between; q4_K else."""
    if role == "output":
        return T.Q6_K
    if role in ("attn_v", "ffn_down"):
        more_bits = layer < n_layers // 8 or layer >= 7 * n_layers // 8 or (layer - n_layers // 8) % 3 == 2
        return T.Q6_K if more_bits else T.Q4_K
    return T.Q4_K


# The formats with a second f16 field after d (bytes 2-3) and the multiple of d it gets so that values
# average zero: q4_K and q5_K compute d*sc*q - dmin*m (q averages 7.5 or 15.5, sc and m alike), q4_1
# and q5_1 compute d*q + m.
SECOND_SCALE = {T.Q4_K: 7.5, T.Q5_K: 15.5, T.Q4_1: -7.5, T.Q5_1: -15.5}


def block_pool(qtype, rng):
    """POOL_BLOCKS random blocks of qtype whose values have unit spread around zero."""
    _, size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, (POOL_BLOCKS, size), dtype=np.uint8)
    d_col = size - 2 if qtype == T.Q6_K else 0

    def set_f16(col, value):
        raw[:, col:col + 2] = np.full(POOL_BLOCKS, value, dtype=np.float16).view(np.uint8).reshape(-1, 2)

    centre = SECOND_SCALE.get(qtype)
    set_f16(d_col, 1.0)
    if centre is not None:
        set_f16(2, centre)
    sample = quants.dequantize(raw[:64].reshape(1, -1), qtype)
    scale = 1.0 / float(sample.std())
    set_f16(d_col, scale)
    if centre is not None:
        set_f16(2, centre * scale)
    return raw


FLOAT_POOL = 1 << 22  # random unit-normal values, reused (rolled) for every f16 / bf16 tensor


def float_values(shape, qtype, std, pool, rng):
    """`shape` values of spread `std` from the pool (rolled, repeated) as f32, f16, or bf16 bits."""
    values = np.resize(np.roll(pool, int(rng.integers(FLOAT_POOL))), shape) * np.float32(std)
    if qtype == T.F32:
        return values.astype(np.float32)
    if qtype == T.F16:
        return values.astype(np.float16)
    bits = values.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even


def write_random_blocks(writer, tensors, pools, rng):
    """Writes `tensors` (name -> (shape [..., rows, cols], type or None for f32 ones, std)) through
    `writer` (metadata already added): quantized ones from the type's block pool, rolled per tensor,
    their scales set for values of the given spread; f32 (T.F32), f16 and bf16 ones from a pool of
    normal values; constant f32 ones (type None) hold the value given in place of the spread (1 for
    norms)."""
    float_pool = rng.standard_normal(FLOAT_POOL, np.float32)
    for name, (shape, qtype, _) in tensors.items():
        if qtype in (None, T.F32):
            writer.add_tensor_info(name, shape, np.dtype(np.float32), int(np.prod(shape)) * 4)
        elif qtype in (T.F16, T.BF16):
            dtype = np.dtype(np.float16 if qtype == T.F16 else np.uint16)
            writer.add_tensor_info(name, shape, dtype, int(np.prod(shape)) * 2, raw_dtype=qtype)
        else:
            block, size = gguf.GGML_QUANT_SIZES[qtype]
            byte_shape = (*shape[:-1], shape[-1] // block * size)
            writer.add_tensor_info(name, byte_shape, np.dtype(np.uint8), int(np.prod(byte_shape)), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for name, (shape, qtype, std) in tensors.items():
        if qtype is None:
            writer.write_tensor_data(np.full(shape, std, np.float32))
            continue
        if qtype in (T.F32, T.F16, T.BF16):
            writer.write_tensor_data(float_values(shape, qtype, std, float_pool, rng))
            continue
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        n_blocks = int(np.prod(shape[:-1])) * (shape[-1] // block)
        pool = np.roll(pools[qtype], int(rng.integers(POOL_BLOCKS)), axis=0)
        data = np.resize(pool, (n_blocks, size))  # the pool repeated: memory speed, not the generator's
        d_col = size - 2 if qtype == T.Q6_K else 0
        scaled = (data[:, d_col:d_col + 2].copy().view(np.float16).astype(np.float32) * std).astype(np.float16)
        data[:, d_col:d_col + 2] = scaled.view(np.uint8)
        if qtype in SECOND_SCALE:
            dmin = (data[:, 2:4].copy().view(np.float16).astype(np.float32) * std).astype(np.float16)
            data[:, 2:4] = dmin.view(np.uint8)
        writer.write_tensor_data(data.reshape(*shape[:-1], -1))
    writer.close()


# Qwen3-30B-A3B's shape (its config.json) for --big-model qwen3moe-30b-a3b-q4_k_m: 128 experts of
# 768, 8 per token, 32 query heads and 4 KV heads of 128.
QWEN3_30B_A3B = dict(arch="qwen3moe", n_embd=2048, n_head=32, n_head_kv=4, head_dim=128, n_ff=6144, n_ff_exp=768,
                     n_expert=128, n_expert_used=8, n_vocab=151936, n_layers=48, eps=1e-6, freq_base=1e6, context=40960)


def write_qwen3moe_q4_k_m(path, n_layers):
    """A Qwen3-30B-A3B-shaped model as llama.cpp's Q4_K_M mixes it, from random valid blocks: the
    experts' products are what a MoE model's speed and memory are about."""
    hp = dict(QWEN3_30B_A3B, n_layers=n_layers)
    rng = np.random.default_rng(30)
    e, hd, v, x, fx = hp["n_embd"], hp["head_dim"], hp["n_vocab"], hp["n_expert"], hp["n_ff_exp"]
    q, kv = hp["n_head"] * hd, hp["n_head_kv"] * hd
    pools = {t: block_pool(t, rng) for t in (T.Q4_K, T.Q6_K)}
    tensors = {"token_embd.weight": ((v, e), T.Q4_K, 1.0), "output_norm.weight": ((e,), None, 1.0),
               "output.weight": ((v, e), q4_k_m_type("output", 0, n_layers), 1.0 / np.sqrt(e))}
    for il in range(n_layers):
        p = f"blk.{il}."
        for role, shape, fan_in in (("attn_q", (q, e), e), ("attn_k", (kv, e), e), ("attn_v", (kv, e), e),
                                    ("attn_output", (e, q), q)):
            tensors[p + role + ".weight"] = (shape, q4_k_m_type(role, il, n_layers), 1.0 / np.sqrt(fan_in))
        for role, shape, fan_in in (("ffn_gate_exps", (x, fx, e), e), ("ffn_up_exps", (x, fx, e), e),
                                    ("ffn_down_exps", (x, e, fx), fx)):
            qtype = q4_k_m_type("ffn_down" if role == "ffn_down_exps" else role, il, n_layers)
            tensors[p + role + ".weight"] = (shape, qtype, 1.0 / np.sqrt(fan_in))
        tensors[p + "ffn_gate_inp.weight"] = ((x, e), None, 1.0)
        for norm, n in (("attn_norm", e), ("ffn_norm", e), ("attn_q_norm", hd), ("attn_k_norm", hd)):
            tensors[p + norm + ".weight"] = ((n,), None, 1.0)
    writer = gguf.GGUFWriter(str(path), arch="qwen3moe")
    writer.add_name("qwen3moe-30b-a3b-shaped-q4_k_m-random")
    writer.add_block_count(n_layers)
    writer.add_context_length(hp["context"])
    writer.add_embedding_length(e)
    writer.add_feed_forward_length(hp["n_ff"])
    writer.add_expert_feed_forward_length(fx)
    writer.add_expert_count(x)
    writer.add_expert_used_count(hp["n_expert_used"])
    writer.add_head_count(hp["n_head"])
    # One number, or one per layer where a hybrid's (LFM2's) recurrent layers have 0.
    writer.add_head_count_kv(hp.get("head_count_kv", hp["n_head_kv"]))
    writer.add_key_length(hd)
    writer.add_value_length(hd)
    writer.add_layer_norm_rms_eps(hp["eps"])
    writer.add_rope_freq_base(hp["freq_base"])
    writer.add_file_type(15)  # LLAMA_FTYPE_MOSTLY_Q4_K_M
    writer.add_vocab_size(v)
    writer.add_tokenizer_model("none")
    writer.add_string("xbackend.fixture.generator", "scripts/model_fixtures.py --big-model qwen3moe-30b-a3b-q4_k_m")
    write_random_blocks(writer, tensors, pools, rng)
    print(f"model_fixtures: wrote {path} ({Path(path).stat().st_size / 1e9:.2f} GB, {n_layers} layers)", file=sys.stderr)


# Llama 3.2 1B's shape (its config.json): the output projection is the token embedding.
LLAMA32_1B = dict(n_embd=2048, n_head=32, n_head_kv=8, n_ff=8192, n_vocab=128256, n_layers=16, eps=1e-5,
                  freq_base=500000.0, context=131072, tied=True)
LLAMA_SHAPES = {"llama3-8b": LLAMA3_8B, "llama3.2-1b": LLAMA32_1B}
# The weight mixes of --big-model <shape>-<mix>: llama.cpp's ftype number, and each matrix's type.
LLAMA_MIXES = {
    "q4_k_m": (15, q4_k_m_type),
    "q8_0": (7, lambda role, layer, n: T.Q8_0),
    "q6_k": (18, lambda role, layer, n: T.Q6_K),
    "f16": (1, lambda role, layer, n: T.F16),
    "bf16": (32, lambda role, layer, n: T.BF16),
}
BIG_LLAMAS = [f"{shape}-{mix}" for shape in LLAMA_SHAPES for mix in LLAMA_MIXES]


def write_llama_shaped(path, model, n_layers):
    """A llama-architecture file of `model` (`<shape>-<mix>`, BIG_LLAMAS) from random values: the
    shape's sizes, the mix's types (a tied embedding takes the output's type, as llama.cpp gives it)."""
    shape_name, mix = model.rsplit("-", 1)
    hp = dict(LLAMA_SHAPES[shape_name], n_layers=n_layers)
    ftype, type_of = LLAMA_MIXES[mix]
    rng = np.random.default_rng(8)
    e, f, v = hp["n_embd"], hp["n_ff"], hp["n_vocab"]
    kv = hp["n_head_kv"] * (e // hp["n_head"])
    tied = hp.get("tied", False)
    embd_type = type_of("output", 0, n_layers) if tied else type_of("token_embd", 0, n_layers)
    # name -> (shape [rows, cols], type or None for f32 norms, std of the values)
    tensors = {"token_embd.weight": ((v, e), embd_type, 1.0), "output_norm.weight": ((e,), None, 1.0)}
    if not tied:
        tensors["output.weight"] = ((v, e), type_of("output", 0, n_layers), 1.0 / np.sqrt(e))
    for il in range(n_layers):
        p = f"blk.{il}."
        for role, shape, fan_in in (("attn_q", (e, e), e), ("attn_k", (kv, e), e), ("attn_v", (kv, e), e),
                                    ("attn_output", (e, e), e), ("ffn_gate", (f, e), e), ("ffn_up", (f, e), e),
                                    ("ffn_down", (e, f), f)):
            tensors[p + role + ".weight"] = (shape, type_of(role, il, n_layers), 1.0 / np.sqrt(fan_in))
        tensors[p + "attn_norm.weight"] = ((e,), None, 1.0)
        tensors[p + "ffn_norm.weight"] = ((e,), None, 1.0)
    block_types = {t for (_, t, _) in tensors.values() if t not in (None, T.F16, T.BF16)}
    pools = {t: block_pool(t, rng) for t in sorted(block_types)}
    writer = llama_writer(path, f"{model}-shaped-random", hp, hp["context"])
    writer.add_rope_freq_base(hp["freq_base"])
    writer.add_rope_dimension_count(e // hp["n_head"])
    writer.add_file_type(ftype)
    writer.add_string("xbackend.fixture.generator", f"scripts/model_fixtures.py --big-model {model}")
    write_random_blocks(writer, tensors, pools, rng)
    print(f"model_fixtures: wrote {path} ({Path(path).stat().st_size / 1e9:.2f} GB, {n_layers} layers)", file=sys.stderr)


# Block types whose random blocks block_pool makes valid (an f16 scale d at the start, or at the end
# for q6_K; a second scale beside d, SECOND_SCALE): the types llama.cpp's common mixes use.
LIKE_TYPES = {T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q4_K, T.Q5_K, T.Q6_K}


def describe(path):
    """The shape of a model file without its weights: every metadata value but the tokenizer's (the
    vocabulary is kept as its size), and every tensor's name, shape and type. `--like` writes a file
    of that shape from random valid blocks, so a model too large to carry somewhere can be made there."""
    reader = gguf.GGUFReader(str(path))
    arch = str(reader.fields["general.architecture"].contents())
    metadata = {}
    for key, field in reader.fields.items():
        if key.startswith(("GGUF.", "tokenizer.", "xbackend.")) or key == "general.architecture":
            continue
        kinds = [t.name for t in field.types]
        metadata[key] = {"type": kinds, "value": field.contents()}
    vocab = reader.fields.get("tokenizer.ggml.tokens")
    tensors = [{"name": t.name, "shape": [int(n) for n in t.shape], "type": t.tensor_type.name} for t in reader.tensors]
    return {"source": Path(path).name, "architecture": arch, "n_vocab": len(vocab.data) if vocab else None,
            "metadata": metadata, "tensors": tensors}


def write_like(path, spec_file, n_layers=None):
    """A file of the shape `spec_file` describes (describe()), from random valid blocks of each
    tensor's type; with n_layers, only the first n_layers layers."""
    spec = json.loads(Path(spec_file).read_text())
    arch = spec["architecture"]
    rng = np.random.default_rng(270)
    block_count = int(spec["metadata"][f"{arch}.block_count"]["value"])
    layers = min(n_layers or block_count, block_count)
    writer = gguf.GGUFWriter(str(path), arch=arch)
    for key, entry in spec["metadata"].items():
        value = layers if key == f"{arch}.block_count" else entry["value"]
        kinds = [getattr(gguf.GGUFValueType, k) for k in entry["type"]]
        if kinds[0] == gguf.GGUFValueType.ARRAY:
            writer.add_array(key, value)
        else:
            writer.add_key_value(key, value, kinds[0])
    writer.add_tokenizer_model("none")
    if spec.get("n_vocab"):
        writer.add_uint32(f"{arch}.vocab_size", spec["n_vocab"])
    writer.add_string("xbackend.fixture.generator", f"scripts/model_fixtures.py --like {Path(spec_file).name}")
    tensors = {}
    for t in spec["tensors"]:
        if t["name"].startswith("blk.") and int(t["name"].split(".")[1]) >= layers:
            continue
        qtype = getattr(T, t["type"])
        shape = tuple(reversed(t["shape"]))  # gguf lists the row length first; numpy's order is the reverse
        if qtype == T.F32 and "std" in t:
            tensors[t["name"]] = (shape, T.F32, float(t["std"]))  # random (a router: tokens routed apart)
        elif qtype == T.F32:
            # A constant: 1 (norms), or the spec's "value" (Mamba-2's ssm_a must be negative).
            tensors[t["name"]] = (shape, None, float(t.get("value", 1.0)))
        elif qtype in (T.F16, T.BF16) or qtype in LIKE_TYPES:
            tensors[t["name"]] = (shape, qtype, 1.0 / np.sqrt(shape[-1]))
        else:
            sys.exit(f"model_fixtures: --like: {t['name']} is {t['type']}, not one of the types written from "
                     f"random blocks ({', '.join(sorted(x.name for x in LIKE_TYPES))}, F16, BF16, F32)")
    pools = {q: block_pool(q, rng) for q in sorted({q for (_, q, _) in tensors.values() if q in LIKE_TYPES})}
    write_random_blocks(writer, tensors, pools, rng)
    print(f"model_fixtures: wrote {path} ({Path(path).stat().st_size / 1e9:.2f} GB, {layers} layers, "
          f"shaped like {spec['source']})", file=sys.stderr)


def keep_llamacpp_entries(out, manifest, tool):
    """Carries each model's "llamacpp" entry (llama.cpp's logits, written by scripts/llamacpp-reference)
    over from the manifest already in `out` while the model file is byte for byte the one llama.cpp
    ran (its sha256); a changed file loses the entry, and llama.cpp's logits need making again."""
    try:
        old = json.loads((out / "manifest.json").read_text())["models"]
    except (OSError, ValueError, KeyError):
        return
    stale = []
    for name, m in manifest["models"].items():
        entry = old.get(name, {}).get("llamacpp")
        if entry is None:
            continue
        if hashlib.sha256((out / m["file"]).read_bytes()).hexdigest() == entry.get("gguf_sha256"):
            m["llamacpp"] = entry
        else:
            stale.append(name)
            if entry.get("logits"):
                (out / entry["logits"]).unlink(missing_ok=True)
    if stale:
        print(f"{tool}: {', '.join(stale)} changed: llama.cpp's logits removed; run scripts/llamacpp-reference",
              file=sys.stderr)


def write_with_references(out, manifest, name, hp, rng):
    """Writes model `name` and its float64 reference logits, and enters them in the manifest."""
    held = write_model(out / f"{name}.gguf", name, hp, make_model(hp, rng), rng)
    t = len(TOKENS)
    cases = [(0, t), (1, t)] + ([(0, t + 5)] if name == "tiny-llama" else [])
    refs = []
    for n_layers, n_kv in cases:
        logits = forward(hp, held, TOKENS, n_kv, n_layers or hp["n_layers"])
        file = f"{name}.logits" + (f"-l{n_layers}" if n_layers else "") + (f"-kv{n_kv}" if n_kv != t else "") + ".npy"
        np.save(out / file, logits)
        refs.append({"n_layers": n_layers, "n_kv": n_kv, "logits": file})
    manifest["models"][name] = {"file": f"{name}.gguf", "weights": hp["weights"], "architecture": hp["arch"],
                                "references": refs}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "tests" / "data" / "models"))
    parser.add_argument("--big", help="write one large f16 model here instead (no reference)")
    parser.add_argument("--big-model", choices=["tinyllama-f16", "qwen3moe-30b-a3b-q4_k_m", *BIG_LLAMAS], default="tinyllama-f16",
                        help="the shape and types of --big (default: tinyllama-f16)")
    parser.add_argument("--big-layers", type=int, help="layers of --big (default: 8 for tinyllama-f16, the shape's own else)")
    parser.add_argument("--describe", metavar="GGUF", help="print the shape of a model file as JSON (for --like)")
    parser.add_argument("--like", metavar="JSON", help="--big gets the shape --describe wrote, from random blocks")
    args = parser.parse_args()
    if args.describe:
        print(json.dumps(describe(args.describe), indent=1, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))
        return
    if args.big and args.like:
        write_like(args.big, args.like, args.big_layers)
        return
    if args.big:
        if args.big_model in BIG_LLAMAS:
            shape = LLAMA_SHAPES[args.big_model.rsplit("-", 1)[0]]
            write_llama_shaped(args.big, args.big_model, args.big_layers or shape["n_layers"])
        elif args.big_model == "qwen3moe-30b-a3b-q4_k_m":
            write_qwen3moe_q4_k_m(args.big, args.big_layers or QWEN3_30B_A3B["n_layers"])
        else:
            write_big(args.big, args.big_layers or 8)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261123)
    manifest = {"generator": "scripts/model_fixtures.py", "gguf_version": importlib.metadata.version("gguf"),
                "numpy_version": np.__version__, "tokens": TOKENS, "models": {}}
    for name, hp in MODELS.items():
        write_with_references(out, manifest, name, hp, rng)
    write_bad_files(out / "bad", rng)
    mix_rng = np.random.default_rng(20261126)
    for name, hp in MIX_MODELS.items():
        write_with_references(out, manifest, name, hp, mix_rng)
    manifest["bad_files"] = BAD_FILES
    keep_llamacpp_entries(out, manifest, "model_fixtures")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"model_fixtures: wrote {len(MODELS) + len(MIX_MODELS)} models and {len(BAD_FILES)} bad files to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
