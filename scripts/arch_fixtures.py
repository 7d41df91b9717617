#!/usr/bin/env python3
"""Writes tiny llama.cpp model files of the architectures beyond llama/qwen2 and their reference
logits into tests/data/models/arch/, so that the gguf model builder's newer graphs are checked
against an independent implementation. The tests read the committed files and need no network.

    python3 -m pip install gguf numpy    # llama.cpp's own GGUF package; versions go into the manifest
    python3 scripts/arch_fixtures.py [--out tests/data/models/arch] [--check-only]

The conventions are scripts/model_fixtures.py's (whose helpers this script imports): the same seven
tokens; each reference is the logits (tokens, vocab) of the batch at the end of an n_kv cache whose
earlier entries are zero (zero keys and values, attended to like any other entry unless a mask says
otherwise), at positions n_kv - 7 .. n_kv - 1; n_layers 0 runs every layer, 1 only the first (then
the output norm and head). Each model is made the way llama.cpp's converter makes one from a Hugging
Face checkpoint: random weights in the checkpoint's layout, transformed as the converter transforms
them (Gemma's norm weights + 1, llama's Q/K permutation, gpt-oss's interleaved gate_up split and
transposes), written with the `gguf` package under llama.cpp's tensor names and metadata keys. The
file is then read back with gguf's reader, dequantized, and transformed back to the checkpoint
layout; the float64 numpy forward pass runs on those values and is written from the transformers
definitions (modeling_qwen3, _gemma2, _gemma3, _phi3, _mixtral, _qwen3_moe, _gpt_oss), so the
references check the layout conventions as well as the arithmetic.

Models (manifest.json lists them with their references; README.md here says more):
  tiny-qwen3          f32; per-head RMS q/k norms before neox rope; head dim 24 from
                      qwen3.attention.key_length (n_embd/n_head is 16); GQA 4/2; tied output
  tiny-gemma2         f32; embeddings x sqrt(n_embd); norms stored as HF weight + 1; GELU-tanh gated
                      FFN; post-attention and post-FFN norms; attention soft-cap 5 and final soft-cap
                      3; sliding window 4 on even layers; query scale 1/sqrt(head dim 24); tied;
                      no rope.freq_base key (the converter writes none: llama.cpp's default 10000)
  tiny-gemma3         f16 matrices, 6 layers; gemma2 without soft-caps, with (+1) q/k norms; layers
                      il % 6 < 5 slide (window 4) and rope with base 10000 unscaled, layer 5 is global
                      with base 1e6 and linear scaling x8
  tiny-phi3           f32; fused attn_qkv, ffn_up holding [gate; up]; neox rope with LongRoPE
                      factors (rope_factors_short/long.weight) and rope.scaling.attn_factor; original
                      context 8, so n_kv 7 uses the short factors and n_kv 12 the long ones; untied
  tiny-mixtral        f32, architecture llama with 4 experts, 2 used; Q/K permuted for normal rope;
                      softmax routing, top-2, renormalised, SwiGLU experts; untied
  tiny-qwen3moe       f16 matrices (router f32 as the converter keeps it); qwen3 attention, 4
                      experts of expert_feed_forward_length 32 (feed_forward_length 96 is unused),
                      top-2 of the softmax, renormalised (norm_topk_prob); untied
  tiny-qwen3moe-q8_0  the same with the expert tensors in q8_0 (gguf's quantizer; the reference
                      uses the dequantized values)
  tiny-gpt-oss        f16 matrices, f32 norms, biases, sinks and router; q/k/v/o biases; attention
                      sinks; sliding window 4 on even layers; head dim 24; router with bias, top-2 of
                      the raw logits then softmax over the two; expert biases; HF's interleaved
                      gate_up split into gate/up as the converter does; clamped SwiGLU (limit 7,
                      alpha 1.702; some gates exceed 7); plain neox rope (rope.scaling.type none)
References: every layer with n_kv 7; the first layer only; and for the sliding-window and
rope-factor models (gemma2, gemma3, phi3, gpt-oss) every layer with n_kv 12.

Sliding window: llama.cpp's rule (llama_hparams::is_masked_swa, LLAMA_SWA_TYPE_STANDARD): a query at
position p1 does not see a key at p0 when p1 - p0 >= n_swa; it sees the n_swa positions p1 - n_swa + 1
.. p1. transformers' sliding-window masks (kv_idx > q_idx - sliding_window) agree.

MoE routing: selections are made on float64 scores; the generator redraws a model's weights (next
seed) until every token's k-th and (k+1)-th router logits differ by at least 0.05 in every
reference, so a float32 or q8_0 run selects the same experts.

Self-check (always run; --check-only runs it without writing): every reference is recomputed by a
second, independently written formulation (token by token through a growing cache, complex-number
rope, per-expert loops) and must agree to 1e-12; references must differ between models and between
n_kv values; and the features each model exists for must change its logits when switched off
(soft-caps, windows, sinks, long factors, the global layer's scaling, the clamp, the q/k norms).

scripts/arch_fixtures_hf_check.py (optional; needs torch and transformers) runs transformers' own
model classes on the committed files' weights: every reference agrees to 3e-7 relative (transformers
computes norms and rope tables in float32), where a wrong convention would be off by 0.05 or more.
"""
import argparse
import copy
import importlib.metadata
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_fixtures import TOKENS, llama_writer, permute_for_normal_rope, rms_norm, rope_rotate_half  # noqa: E402

try:
    import gguf
    from gguf import quants
except ImportError:
    sys.exit("arch_fixtures: needs the gguf package (python3 -m pip install gguf numpy)")

T = gguf.GGMLQuantizationType
GENERATOR = "scripts/arch_fixtures.py"
ROUTER_MARGIN = 0.05

# Hyperparameters, in the checkpoint's terms. head_dim: the per-head size (written as
# attention.key_length/value_length where the converter writes them: `key_length`).
MODELS = {
    "tiny-qwen3": dict(
        arch="qwen3", n_embd=64, n_head=4, n_head_kv=2, head_dim=24, key_length=True, n_ff=48, n_vocab=256,
        n_layers=2, eps=1e-6, freq_base=1e6, tied=True, matrix_type=T.F32, weights="f32", qk_norm=True),
    "tiny-gemma2": dict(
        arch="gemma2", n_embd=64, n_head=4, n_head_kv=2, head_dim=24, key_length=True, n_ff=48, n_vocab=256,
        n_layers=2, eps=1e-6, freq_base=None, tied=True, matrix_type=T.F32, weights="f32", gemma=True,
        act="gelu_tanh", attn_softcap=5.0, final_softcap=3.0, swa_window=4, swa_period=2, q_scale=2.5,
        embd_std=0.25),
    "tiny-gemma3": dict(
        arch="gemma3", n_embd=64, n_head=2, n_head_kv=1, head_dim=32, key_length=True, n_ff=48, n_vocab=256,
        n_layers=6, eps=1e-6, freq_base=1e6, freq_base_swa=10000.0, linear_scale=8.0, tied=True,
        matrix_type=T.F16, weights="f16", gemma=True, qk_norm=True, act="gelu_tanh", swa_window=4,
        swa_period=6, embd_std=0.25),
    "tiny-phi3": dict(
        arch="phi3", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, n_ff=48, n_vocab=256, n_layers=2,
        eps=1e-5, freq_base=10000.0, tied=False, matrix_type=T.F32, weights="f32", fused_qkv=True,
        fused_up=True, longrope=True, context=32, orig_context=8),
    "tiny-mixtral": dict(
        arch="llama", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, n_ff=16, n_vocab=256, n_layers=2,
        eps=1e-5, freq_base=1e6, tied=False, matrix_type=T.F32, weights="f32", normal_rope=True,
        moe="softmax", n_expert=4, n_expert_used=2),
    "tiny-qwen3moe": dict(
        arch="qwen3moe", n_embd=64, n_head=4, n_head_kv=2, head_dim=24, key_length=True, n_ff=96, n_ff_exp=32,
        n_vocab=256, n_layers=2, eps=1e-6, freq_base=1e6, tied=False, matrix_type=T.F16, weights="f16",
        qk_norm=True, moe="softmax", n_expert=4, n_expert_used=2),
    "tiny-qwen3moe-q8_0": dict(
        arch="qwen3moe", n_embd=64, n_head=4, n_head_kv=2, head_dim=24, key_length=True, n_ff=96, n_ff_exp=32,
        n_vocab=256, n_layers=2, eps=1e-6, freq_base=1e6, tied=False, matrix_type=T.F16, expert_type=T.Q8_0,
        weights="quant", qk_norm=True, moe="softmax", n_expert=4, n_expert_used=2),
    "tiny-gpt-oss": dict(
        arch="gpt-oss", n_embd=64, n_head=4, n_head_kv=2, head_dim=24, key_length=True, n_ff=32, n_ff_exp=32,
        n_vocab=256, n_layers=2, eps=1e-5, freq_base=150000.0, rope_scaling_none=True, tied=False,
        matrix_type=T.F16, weights="f16", attn_bias=True, sinks=True, swa_window=4, swa_period=2,
        moe="oai", n_expert=4, n_expert_used=2, oai_alpha=1.702, oai_limit=7.0),
}
LONG_CACHE = ("tiny-gemma2", "tiny-gemma3", "tiny-phi3", "tiny-gpt-oss")
SEEDS = {name: 7100 + 100 * i for i, name in enumerate(MODELS)}
SEEDS["tiny-qwen3moe-q8_0"] = SEEDS["tiny-qwen3moe"]  # the same checkpoint, stored differently


# --- checkpoint-layout weights -----------------------------------------------------------------
# Keys are llama.cpp's tensor names without ".weight"/".bias" (a "_bias" suffix for biases), except
# gpt-oss's experts, which keep HF's fused layout (gate_up_proj, down_proj) until the converter step.

def near_one(rng, n):
    """Norm scales near 1, exact in float32 (so that Gemma's 1 + w is exact both ways)."""
    return rng.uniform(0.8, 1.2, n).astype(np.float32).astype(np.float64)


def make_weights(m, rng):
    e, hd, v = m["n_embd"], m["head_dim"], m["n_vocab"]
    q, kv = m["n_head"] * hd, m["n_head_kv"] * hd
    gemma = m.get("gemma", False)
    norm = (lambda n: near_one(rng, n) - 1.0) if gemma else (lambda n: near_one(rng, n))  # HF's weight

    w = {"token_embd": rng.standard_normal((v, e)) * m.get("embd_std", 0.5), "output_norm": norm(e)}
    if not m["tied"]:
        w["output"] = rng.standard_normal((v, e)) / np.sqrt(e)
    if m.get("longrope"):
        # Phi-3's factors: near 1 for the fast pairs, growing for the slow ones (long), milder (short).
        ramp = np.linspace(0.0, 1.0, hd // 2)
        w["rope_factors_short"] = (1.0 + 0.5 * ramp ** 2 + rng.uniform(0, 0.05, hd // 2)).astype(np.float32).astype(np.float64)
        w["rope_factors_long"] = (1.0 + 15.0 * ramp ** 2 + rng.uniform(0, 0.5, hd // 2)).astype(np.float32).astype(np.float64)
    for il in range(m["n_layers"]):
        p = f"blk.{il}."
        w[p + "attn_norm"] = norm(e)
        wq = rng.standard_normal((q, e)) / np.sqrt(e) * m.get("q_scale", 1.0)
        wk = rng.standard_normal((kv, e)) / np.sqrt(e)
        wv = rng.standard_normal((kv, e)) / np.sqrt(e)
        if m.get("fused_qkv"):
            w[p + "attn_qkv"] = np.concatenate([wq, wk, wv])
        else:
            w[p + "attn_q"], w[p + "attn_k"], w[p + "attn_v"] = wq, wk, wv
        if m.get("attn_bias"):
            w[p + "attn_q_bias"] = rng.standard_normal(q) * 0.2
            w[p + "attn_k_bias"] = rng.standard_normal(kv) * 0.2
            w[p + "attn_v_bias"] = rng.standard_normal(kv) * 0.2
            w[p + "attn_output_bias"] = rng.standard_normal(e) * 0.1
        if m.get("qk_norm"):
            w[p + "attn_q_norm"] = norm(hd)
            w[p + "attn_k_norm"] = norm(hd)
        if m.get("sinks"):
            w[p + "attn_sinks"] = rng.standard_normal(m["n_head"]) * 1.5
        w[p + "attn_output"] = rng.standard_normal((e, q)) / np.sqrt(q)
        if gemma:
            w[p + "post_attention_norm"] = norm(e)
            w[p + "post_ffw_norm"] = norm(e)
        # gpt-oss's pre-FFN norm is HF's post_attention_layernorm: llama.cpp's post_attention_norm.
        w[p + ("post_attention_norm" if m["arch"] == "gpt-oss" else "ffn_norm")] = norm(e)
        if "moe" in m:
            ne, f = m["n_expert"], m.get("n_ff_exp", m["n_ff"])
            w[p + "ffn_gate_inp"] = rng.standard_normal((ne, e)) / np.sqrt(e) * 2.0
            if m["moe"] == "oai":
                w[p + "ffn_gate_inp_bias"] = rng.standard_normal(ne) * 0.3
                # HF GptOssExperts: gate_up_proj [E, n_embd, 2 n_ff] (gate, up interleaved), down [E, n_ff, n_embd].
                w[p + "gate_up_proj"] = rng.standard_normal((ne, e, 2 * f)) * 0.6
                w[p + "gate_up_proj_bias"] = rng.standard_normal((ne, 2 * f)) * 0.5
                w[p + "down_proj"] = rng.standard_normal((ne, f, e)) * 0.02
                w[p + "down_proj_bias"] = rng.standard_normal((ne, e)) * 0.1
            else:
                w[p + "ffn_gate_exps"] = rng.standard_normal((ne, f, e)) / np.sqrt(e)
                w[p + "ffn_up_exps"] = rng.standard_normal((ne, f, e)) / np.sqrt(e)
                w[p + "ffn_down_exps"] = rng.standard_normal((ne, e, f)) / np.sqrt(f)
        else:
            f = m["n_ff"]
            if m.get("fused_up"):
                w[p + "ffn_up"] = rng.standard_normal((2 * f, e)) / np.sqrt(e)  # [gate; up], HF gate_up_proj
            else:
                w[p + "ffn_gate"] = rng.standard_normal((f, e)) / np.sqrt(e)
                w[p + "ffn_up"] = rng.standard_normal((f, e)) / np.sqrt(e)
            w[p + "ffn_down"] = rng.standard_normal((e, f)) / np.sqrt(f)
    return w


# --- the converter's step: checkpoint -> file, and back ----------------------------------------

def tensor_name(key):
    if key.endswith("_bias"):
        return key[: -len("_bias")] + ".bias"
    return key + ".weight"


def to_file(m, w):
    """Checkpoint-layout weights -> {gguf tensor name: float64 array in the file's numpy layout}."""
    out = {}
    for key, a in w.items():
        role = key.split(".")[-1]
        if m.get("gemma") and role.endswith("norm"):
            a = a + 1.0                                     # Gemma's RMSNorm multiplies by (1 + w)
        if m.get("normal_rope") and role in ("attn_q", "attn_k"):
            a = permute_for_normal_rope(a, m["n_head"] if role == "attn_q" else m["n_head_kv"])
        if role == "gate_up_proj":                          # [E, n_embd, 2f] -> gate, up [E, f, n_embd]
            p = key[: -len(role)]
            t = np.swapaxes(a, 1, 2)
            out[p + "ffn_gate_exps.weight"], out[p + "ffn_up_exps.weight"] = t[:, ::2, :], t[:, 1::2, :]
            continue
        if role == "gate_up_proj_bias":
            p = key[: -len(role)]
            out[p + "ffn_gate_exps.bias"], out[p + "ffn_up_exps.bias"] = a[:, ::2], a[:, 1::2]
            continue
        if role == "down_proj":                             # [E, f, n_embd] -> [E, n_embd, f]
            out[key[: -len(role)] + "ffn_down_exps.weight"] = np.swapaxes(a, 1, 2)
            continue
        if role == "down_proj_bias":
            out[key[: -len(role)] + "ffn_down_exps.bias"] = a
            continue
        out[tensor_name(key)] = a
    return out


def from_file(m, tensors):
    """The file's tensors (float64, numpy layout) -> checkpoint-layout weights (to_file undone)."""
    w = {}
    for name, a in tensors.items():
        key = name[: -len(".weight")] if name.endswith(".weight") else name[: -len(".bias")] + "_bias"
        role = key.split(".")[-1]
        if m.get("gemma") and role.endswith("norm"):
            a = a - 1.0
        if m.get("normal_rope") and role in ("attn_q", "attn_k"):
            heads = m["n_head"] if role == "attn_q" else m["n_head_kv"]
            hd = a.shape[0] // heads
            a = a.reshape(heads, hd // 2, 2, -1).swapaxes(1, 2).reshape(a.shape)
        w[key] = a
    if m.get("moe") == "oai":
        for il in range(m["n_layers"]):
            p = f"blk.{il}."
            g, u = w.pop(p + "ffn_gate_exps"), w.pop(p + "ffn_up_exps")
            gu = np.empty((g.shape[0], 2 * g.shape[1], g.shape[2]))
            gu[:, ::2], gu[:, 1::2] = g, u
            w[p + "gate_up_proj"] = np.swapaxes(gu, 1, 2)
            gb, ub = w.pop(p + "ffn_gate_exps_bias"), w.pop(p + "ffn_up_exps_bias")
            gub = np.empty((gb.shape[0], 2 * gb.shape[1]))
            gub[:, ::2], gub[:, 1::2] = gb, ub
            w[p + "gate_up_proj_bias"] = gub
            w[p + "down_proj"] = np.swapaxes(w.pop(p + "ffn_down_exps"), 1, 2)
            w[p + "down_proj_bias"] = w.pop(p + "ffn_down_exps_bias")
    return w


def file_type(m, name, ndim):
    """The type the converter gives a tensor: f32 for 1-D tensors, norms, biases and the router."""
    if ndim <= 1 or name.endswith("_norm.weight") or not name.endswith(".weight") or ".ffn_gate_inp." in name:
        return T.F32
    if "_exps." in name and "expert_type" in m:
        return m["expert_type"]
    return m["matrix_type"]


def attn_factor(m):
    """Phi-3 LongRoPE's scale of cos and sin, as the converter computes it (rope.scaling.attn_factor)."""
    scale = m["context"] / m["orig_context"]
    return math.sqrt(1 + math.log(scale) / math.log(m["orig_context"])) if scale > 1.0 else 1.0


def write_gguf(path, name, m, file_tensors):
    """Writes the model as llama.cpp's converter would (metadata keys per architecture)."""
    arch = m["arch"]
    writer = llama_writer(path, name, m, context=m.get("context", 2048))  # name, sizes, heads, rms eps
    if m.get("key_length"):
        writer.add_key_length(m["head_dim"])
        writer.add_value_length(m["head_dim"])
    if m.get("freq_base") is not None:
        writer.add_rope_freq_base(m["freq_base"])
    if arch in ("llama", "phi3"):
        writer.add_rope_dimension_count(m["head_dim"])   # LlamaModel and Phi3MiniModel write it
    if "freq_base_swa" in m:
        writer.add_rope_freq_base_swa(m["freq_base_swa"])
    if "linear_scale" in m:
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(m["linear_scale"])
    if "rope_scaling_raw" in m:                           # a type llama.cpp does not know (bad files)
        writer.add_string(f"{arch}.rope.scaling.type", m["rope_scaling_raw"])
    if m.get("rope_scaling_none"):
        writer.add_rope_scaling_type(gguf.RopeScalingType.NONE)
    if m.get("longrope"):
        writer.add_rope_scaling_orig_ctx_len(m["orig_context"])
        writer.add_rope_scaling_attn_factors(attn_factor(m))
        writer.add_sliding_window(0)                      # Phi3MiniModel always writes it; 0: none
    if "swa_window" in m:
        writer.add_sliding_window(m["swa_window"])
    if "attn_softcap" in m:
        writer.add_attn_logit_softcapping(m["attn_softcap"])
    if "final_softcap" in m:
        writer.add_final_logit_softcapping(m["final_softcap"])
    if "moe" in m:
        writer.add_expert_count(m["n_expert"])
        writer.add_expert_used_count(m["n_expert_used"])
        if "n_ff_exp" in m:
            writer.add_expert_feed_forward_length(m["n_ff_exp"])
    writer.add_string("xbackend.fixture.generator", GENERATOR)
    for tname, a in file_tensors.items():
        qtype = file_type(m, tname, a.ndim)
        if qtype == T.F32:
            writer.add_tensor(tname, a.astype(np.float32))
        elif qtype == T.F16:
            writer.add_tensor(tname, a.astype(np.float16))
        else:
            writer.add_tensor(tname, quants.quantize(a.astype(np.float32), qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def read_gguf(path):
    """{tensor name: float64 values the file holds, numpy layout} and the metadata fields."""
    reader = gguf.GGUFReader(str(path))
    tensors = {}
    for t in reader.tensors:
        tensors[t.name] = quants.dequantize(np.array(t.data), t.tensor_type).astype(np.float64)
    return tensors, reader


def read_scalar(reader, key):
    field = reader.fields[key]
    return field.parts[field.data[0]][0].item()


# --- the float64 reference (batched) -------------------------------------------------------------

def sliding(m, il):
    """llama.cpp's set_swa_pattern(period): layer il slides when il % period < period - 1."""
    period = m.get("swa_period")
    return bool(period) and il % period < period - 1


def rope_params(m, w, il, n_kv):
    """(base, position scale, per-pair angle divisors, cos/sin scale) of layer il."""
    base = m["freq_base"] if m.get("freq_base") is not None else 10000.0  # llama.cpp's default
    scale, factors, mscale = 1.0, 1.0, 1.0
    if m["arch"] == "gemma3":
        if sliding(m, il):
            base = m["freq_base_swa"]                       # HF rope_local_base_freq, no scaling
        else:
            scale = 1.0 / m["linear_scale"]
    if m.get("longrope"):
        # llama.cpp: long factors when the context exceeds the original context (here n_kv).
        factors = w["rope_factors_long"] if n_kv > m["orig_context"] else w["rope_factors_short"]
        mscale = m["attn_factor_held"]
    return base, scale, factors, mscale


def norm(m, x, weight):
    return rms_norm(x, 1.0 + weight if m.get("gemma") else weight, m["eps"])


def act(m, g):
    if m.get("act") == "gelu_tanh":
        return 0.5 * g * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (g + 0.044715 * g ** 3)))
    return g / (1.0 + np.exp(-g))


def attention(m, w, il, h, pos, n_kv):
    t = h.shape[0]
    nh, nkv, hd = m["n_head"], m["n_head_kv"], m["head_dim"]
    p = f"blk.{il}."
    if m.get("fused_qkv"):
        qkv = h @ w[p + "attn_qkv"].T
        q, k, v = np.split(qkv, [nh * hd, nh * hd + nkv * hd], axis=1)
    else:
        q, k, v = h @ w[p + "attn_q"].T, h @ w[p + "attn_k"].T, h @ w[p + "attn_v"].T
    if m.get("attn_bias"):
        q, k, v = q + w[p + "attn_q_bias"], k + w[p + "attn_k_bias"], v + w[p + "attn_v_bias"]
    q, k, v = q.reshape(t, nh, hd), k.reshape(t, nkv, hd), v.reshape(t, nkv, hd)
    if m.get("qk_norm"):
        q, k = norm(m, q, w[p + "attn_q_norm"]), norm(m, k, w[p + "attn_k_norm"])
    base, scale, factors, mscale = rope_params(m, w, il, n_kv)
    q = rope_rotate_half(q, pos, base, scale, factors) * mscale
    k = rope_rotate_half(k, pos, base, scale, factors) * mscale
    prefix = n_kv - t
    k = np.concatenate([np.zeros((prefix, nkv, hd)), k])
    v = np.concatenate([np.zeros((prefix, nkv, hd)), v])
    qpos, kpos = pos[:, None], np.arange(n_kv)[None, :]
    allowed = kpos <= qpos
    if sliding(m, il) and m.get("swa_window"):
        allowed &= (qpos - kpos) < m["swa_window"]      # llama.cpp masks p1 - p0 >= n_swa
    group = nh // nkv
    kh, vh = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)   # [n_kv, nh, hd]
    s = np.einsum("thd,shd->hts", q, kh) / np.sqrt(hd)   # query_pre_attn_scalar = head_dim
    if m.get("attn_softcap"):
        s = m["attn_softcap"] * np.tanh(s / m["attn_softcap"])
    s = np.where(allowed[None], s, -np.inf)
    top = s.max(axis=2, keepdims=True)
    if m.get("sinks"):
        sink = w[p + "attn_sinks"][:, None, None]
        top = np.maximum(top, sink)
        e = np.exp(s - top)
        denom = e.sum(axis=2, keepdims=True) + np.exp(sink - top)
    else:
        e = np.exp(s - top)
        denom = e.sum(axis=2, keepdims=True)
    out = np.einsum("hts,shd->thd", e / denom, vh).reshape(t, nh * hd) @ w[p + "attn_output"].T
    if m.get("attn_bias"):
        out = out + w[p + "attn_output_bias"]
    return out


def route(m, logits):
    """(chosen experts [T, k], their weights [T, k], k-th minus (k+1)-th logit [T])."""
    k = m["n_expert_used"]
    order = np.argsort(-logits, axis=1, kind="stable")
    chosen = order[:, :k]
    gap = np.take_along_axis(logits, order[:, k - 1:k], 1)[:, 0] - np.take_along_axis(logits, order[:, k:k + 1], 1)[:, 0]
    sel = np.take_along_axis(logits, chosen, 1)
    if m["moe"] == "oai":                                 # softmax over the k chosen logits
        wts = np.exp(sel - sel.max(axis=1, keepdims=True))
        wts /= wts.sum(axis=1, keepdims=True)
    else:                                                 # softmax over all, renormalised over k
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        wts = np.take_along_axis(probs, chosen, 1)
        wts /= wts.sum(axis=1, keepdims=True)
    return chosen, wts, gap


def moe(m, w, il, h, stats):
    p = f"blk.{il}."
    logits = h @ w[p + "ffn_gate_inp"].T
    if m["moe"] == "oai":
        logits = logits + w[p + "ffn_gate_inp_bias"]
    chosen, wts, gap = route(m, logits)
    stats["router_gap"] = min(stats.get("router_gap", np.inf), float(gap.min()))
    dense = np.zeros((h.shape[0], m["n_expert"]))
    np.put_along_axis(dense, chosen, wts, 1)
    out = np.zeros_like(h)
    for ex in range(m["n_expert"]):
        if m["moe"] == "oai":
            gu = h @ w[p + "gate_up_proj"][ex] + w[p + "gate_up_proj_bias"][ex]
            g, u = gu[:, ::2], gu[:, 1::2]
            stats["gate_over_limit"] = stats.get("gate_over_limit", 0) + int(((g > m["oai_limit"]) & (dense[:, ex:ex + 1] > 0)).sum())
            lim = m["oai_limit"]
            g = np.minimum(g, lim)
            u = np.clip(u, -lim, lim)
            y = (g / (1.0 + np.exp(-m["oai_alpha"] * g))) * (u + 1.0)
            y = y @ w[p + "down_proj"][ex] + w[p + "down_proj_bias"][ex]
        else:
            g, u = h @ w[p + "ffn_gate_exps"][ex].T, h @ w[p + "ffn_up_exps"][ex].T
            y = (g / (1.0 + np.exp(-g)) * u) @ w[p + "ffn_down_exps"][ex].T
        out += dense[:, ex:ex + 1] * y
    return out


def ffn(m, w, il, h, stats):
    if "moe" in m:
        return moe(m, w, il, h, stats)
    p = f"blk.{il}."
    if m.get("fused_up"):
        g, u = np.split(h @ w[p + "ffn_up"].T, 2, axis=1)     # HF Phi3MLP: gate first, up second
    else:
        g, u = h @ w[p + "ffn_gate"].T, h @ w[p + "ffn_up"].T
    return (act(m, g) * u) @ w[p + "ffn_down"].T


def forward(m, w, tokens, n_kv, n_layers, stats=None):
    """Logits [T, vocab] of the batch at the end of an n_kv cache whose earlier entries are zero."""
    stats = {} if stats is None else stats
    t = len(tokens)
    pos = np.arange(n_kv - t, n_kv, dtype=np.float64)
    x = w["token_embd"][tokens]
    if m.get("gemma"):
        x = x * np.sqrt(m["n_embd"])
    pre_ffn = "post_attention_norm" if m["arch"] == "gpt-oss" else "ffn_norm"
    for il in range(n_layers):
        p = f"blk.{il}."
        a = attention(m, w, il, norm(m, x, w[p + "attn_norm"]), pos, n_kv)
        if m.get("gemma"):
            a = norm(m, a, w[p + "post_attention_norm"])
        x = x + a
        f = ffn(m, w, il, norm(m, x, w[p + pre_ffn]), stats)
        if m.get("gemma"):
            f = norm(m, f, w[p + "post_ffw_norm"])
        x = x + f
    x = norm(m, x, w["output_norm"])
    logits = x @ w["output" if "output" in w else "token_embd"].T
    if m.get("final_softcap"):
        logits = m["final_softcap"] * np.tanh(logits / m["final_softcap"])
    return logits


# --- a second formulation: token by token through a growing cache --------------------------------

def forward_incremental(m, w, tokens, n_kv, n_layers):
    """The same logits computed as a decoder would: one token at a time, each layer's keys and
    values appended to a cache (n_kv - T zero entries first), rope as complex rotation, softmax as
    a log-sum-exp over the visible entries, experts looped per token. Written independently of
    forward() to cross-check it."""
    nh, nkv, hd, e = m["n_head"], m["n_head_kv"], m["head_dim"], m["n_embd"]
    half = hd // 2
    gemma = m.get("gemma", False)

    def rms(vec, weight):
        scale = (1.0 + weight) if gemma else weight
        return vec * scale / math.sqrt(float(np.dot(vec, vec)) / vec.size + m["eps"])

    def rotate(vec, position, il):
        base = m.get("freq_base") or 10000.0
        pos_scale, divisors, amp = 1.0, np.ones(half), 1.0
        if m["arch"] == "gemma3":
            if sliding(m, il):
                base = m["freq_base_swa"]
            else:
                pos_scale = 1.0 / m["linear_scale"]
        if m.get("longrope"):
            divisors = w["rope_factors_long"] if n_kv > m["orig_context"] else w["rope_factors_short"]
            amp = m["attn_factor_held"]
        angles = np.array([position * pos_scale / (base ** (2.0 * i / hd)) / divisors[i] for i in range(half)])
        z = (vec[:half] + 1j * vec[half:]) * np.exp(1j * angles) * amp
        return np.concatenate([z.real, z.imag])

    def activation(g):
        if m.get("act") == "gelu_tanh":
            return 0.5 * g * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (g + 0.044715 * g * g * g)))
        return g / (1.0 + math.exp(-g))

    prefix = n_kv - len(tokens)
    cache = [[(np.zeros((nkv, hd)), np.zeros((nkv, hd)))] * prefix for _ in range(n_layers)]
    rows = []
    for i, tok in enumerate(tokens):
        position = prefix + i
        x = w["token_embd"][tok].copy()
        if gemma:
            x *= math.sqrt(e)
        for il in range(n_layers):
            p = f"blk.{il}."
            h = rms(x, w[p + "attn_norm"])
            if m.get("fused_qkv"):
                wq, wk, wv = np.split(w[p + "attn_qkv"], [nh * hd, nh * hd + nkv * hd])
            else:
                wq, wk, wv = w[p + "attn_q"], w[p + "attn_k"], w[p + "attn_v"]
            qv, kv_, vv = wq @ h, wk @ h, wv @ h
            if m.get("attn_bias"):
                qv, kv_, vv = qv + w[p + "attn_q_bias"], kv_ + w[p + "attn_k_bias"], vv + w[p + "attn_v_bias"]
            heads_q, heads_k, heads_v = [], [], []
            for hh in range(nh):
                vec = qv[hh * hd:(hh + 1) * hd]
                if m.get("qk_norm"):
                    vec = rms(vec, w[p + "attn_q_norm"])
                heads_q.append(rotate(vec, position, il))
            for hh in range(nkv):
                vec = kv_[hh * hd:(hh + 1) * hd]
                if m.get("qk_norm"):
                    vec = rms(vec, w[p + "attn_k_norm"])
                heads_k.append(rotate(vec, position, il))
                heads_v.append(vv[hh * hd:(hh + 1) * hd])
            cache[il].append((np.array(heads_k), np.array(heads_v)))
            attn = np.zeros(nh * hd)
            for hh in range(nh):
                kvh = hh * nkv // nh
                scores, values = [], []
                for j, (ck, cv) in enumerate(cache[il]):
                    if sliding(m, il) and m.get("swa_window") and position - j >= m["swa_window"]:
                        continue
                    sc = float(np.dot(heads_q[hh], ck[kvh])) / math.sqrt(hd)
                    if m.get("attn_softcap"):
                        sc = m["attn_softcap"] * math.tanh(sc / m["attn_softcap"])
                    scores.append(sc)
                    values.append(cv[kvh])
                all_scores = scores + ([float(w[p + "attn_sinks"][hh])] if m.get("sinks") else [])
                top = max(all_scores)
                lse = top + math.log(sum(math.exp(sc - top) for sc in all_scores))
                attn[hh * hd:(hh + 1) * hd] = sum(math.exp(sc - lse) * val for sc, val in zip(scores, values))
            a = w[p + "attn_output"] @ attn
            if m.get("attn_bias"):
                a = a + w[p + "attn_output_bias"]
            if gemma:
                a = rms(a, w[p + "post_attention_norm"])
            x = x + a
            h = rms(x, w[p + ("post_attention_norm" if m["arch"] == "gpt-oss" else "ffn_norm")])
            if "moe" in m:
                logits = w[p + "ffn_gate_inp"] @ h
                if m["moe"] == "oai":
                    logits = logits + w[p + "ffn_gate_inp_bias"]
                ranked = sorted(range(m["n_expert"]), key=lambda ex: -logits[ex])[:m["n_expert_used"]]
                if m["moe"] == "oai":
                    z = [math.exp(logits[ex] - logits[ranked[0]]) for ex in ranked]
                else:
                    allz = [math.exp(lv - max(logits)) for lv in logits]
                    z = [allz[ex] / sum(allz) for ex in ranked]
                gates = [zz / sum(z) for zz in z]
                f = np.zeros(e)
                for ex, gw in zip(ranked, gates):
                    if m["moe"] == "oai":
                        gu = w[p + "gate_up_proj"][ex].T @ h + w[p + "gate_up_proj_bias"][ex]
                        lim, alpha = m["oai_limit"], m["oai_alpha"]
                        y = np.array([min(gu[2 * j], lim) / (1.0 + math.exp(-alpha * min(gu[2 * j], lim)))
                                      * (min(max(gu[2 * j + 1], -lim), lim) + 1.0) for j in range(gu.size // 2)])
                        f += gw * (w[p + "down_proj"][ex].T @ y + w[p + "down_proj_bias"][ex])
                    else:
                        g, u = w[p + "ffn_gate_exps"][ex] @ h, w[p + "ffn_up_exps"][ex] @ h
                        f += gw * (w[p + "ffn_down_exps"][ex] @ (np.array([activation(gg) for gg in g]) * u))
            else:
                if m.get("fused_up"):
                    gu = w[p + "ffn_up"] @ h
                    g, u = gu[:m["n_ff"]], gu[m["n_ff"]:]
                else:
                    g, u = w[p + "ffn_gate"] @ h, w[p + "ffn_up"] @ h
                f = w[p + "ffn_down"] @ (np.array([activation(gg) for gg in g]) * u)
            if gemma:
                f = rms(f, w[p + "post_ffw_norm"])
            x = x + f
        x = rms(x, w["output_norm"])
        out = (w["output"] if "output" in w else w["token_embd"]) @ x
        if m.get("final_softcap"):
            out = np.array([m["final_softcap"] * math.tanh(o / m["final_softcap"]) for o in out])
        rows.append(out)
    return np.array(rows)


# --- building, checking, writing ---------------------------------------------------------------

def cases(name, m):
    t = len(TOKENS)
    return [(0, t), (1, t)] + ([(0, t + 5)] if name in LONG_CACHE else [])


def reference_file(name, n_layers, n_kv):
    t = len(TOKENS)
    return f"{name}.logits" + (f"-l{n_layers}" if n_layers else "") + (f"-kv{n_kv}" if n_kv != t else "") + ".npy"


def build(name, m, path):
    """Writes the model (redrawing MoE weights until the routing has margins); returns the held
    checkpoint-layout weights and {(n_layers, n_kv): logits}."""
    for attempt in range(50):
        rng = np.random.default_rng(SEEDS[name] + attempt)
        w = make_weights(m, rng)
        write_gguf(path, name, m, to_file(m, w))
        tensors, reader = read_gguf(path)
        held = from_file(m, tensors)
        assert held.keys() == w.keys(), f"{name}: {sorted(held.keys() ^ w.keys())}"
        for key, a in w.items():  # the round trip through the file: float32, f16 or q8_0 rounding only
            tol = (1e-6 if file_type(m, tensor_name(key), a.ndim) == T.F32 else 0.02) * np.abs(a).max()
            assert held[key].shape == a.shape and np.abs(held[key] - a).max() <= tol, f"{name}: {key}"
        if m.get("longrope"):
            m["attn_factor_held"] = float(read_scalar(reader, f"{m['arch']}.rope.scaling.attn_factor"))
        stats, refs = {}, {}
        for n_layers, n_kv in cases(name, m):
            refs[(n_layers, n_kv)] = forward(m, held, TOKENS, n_kv, n_layers or m["n_layers"], stats)
        if "moe" not in m or stats["router_gap"] >= ROUTER_MARGIN:
            return held, refs, stats, attempt
    raise RuntimeError(f"{name}: no seed gave router margins of {ROUTER_MARGIN}")


def variant(m, **changes):
    out = copy.deepcopy(m)
    for k, v in changes.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


# name -> (base model, what is wrong). Small variants of the fixtures, each broken in one way a file
# of these architectures can be; the C++ tests hold the expected messages.
BAD_FILES = {
    "moe-missing-expert": ("tiny-qwen3moe", "no blk.0.ffn_up_exps.weight"),
    "moe-used-above-count": ("tiny-qwen3moe", "qwen3moe.expert_used_count 5 with expert_count 4"),
    "moe-expert-shape": ("tiny-qwen3moe", "blk.0.ffn_gate_exps.weight holds 3 experts of 4"),
    "swa-window-0": ("tiny-gemma2", "gemma2.attention.sliding_window 0"),
    "rope-scaling-unknown": ("tiny-qwen3", "qwen3.rope.scaling.type is 'dynamic'"),
}
BAD_SIZES = dict(n_embd=32, head_dim=8, n_ff=16, n_vocab=32, n_layers=1)


def write_bad_files(out):
    out.mkdir(parents=True, exist_ok=True)
    changes = {
        "moe-used-above-count": dict(n_expert_used=5),
        "swa-window-0": dict(swa_window=0),
        "rope-scaling-unknown": dict(rope_scaling_raw="dynamic"),
    }
    edits = {
        "moe-missing-expert": lambda t: t.pop("blk.0.ffn_up_exps.weight"),
        "moe-expert-shape": lambda t: t.update({"blk.0.ffn_gate_exps.weight": t["blk.0.ffn_gate_exps.weight"][:3]}),
    }
    for name, (base, _) in BAD_FILES.items():
        m = variant(MODELS[base], **BAD_SIZES, **changes.get(name, {}))
        if "n_ff_exp" in m:
            m["n_ff_exp"] = 8
        tensors = to_file(m, make_weights(m, np.random.default_rng(1)))
        if name in edits:
            edits[name](tensors)
        write_gguf(out / f"{name}.gguf", name, m, tensors)


def self_check(models):
    """models: name -> (m, held, refs, stats). Raises AssertionError on any failure."""
    t = len(TOKENS)
    for name, (m, held, refs, stats) in models.items():
        for (n_layers, n_kv), logits in refs.items():
            other = forward_incremental(m, held, TOKENS, n_kv, n_layers or m["n_layers"])
            err = np.abs(other - logits).max()
            assert err <= 1e-12 * max(1.0, np.abs(logits).max()), f"{name} l{n_layers} kv{n_kv}: {err:.3g}"
            assert np.isfinite(logits).all() and 0.3 < np.abs(logits).std() < 30, f"{name}: logits scale"
        full = refs[(0, t)]
        assert np.abs(full - refs[(1, t)]).max() > 0.1, f"{name}: one layer equals all"
        if (0, t + 5) in refs:
            assert np.abs(full - refs[(0, t + 5)]).max() > 0.1, f"{name}: n_kv 12 equals n_kv 7"

        def changed(label, mm, ww=held, n_kv=t, threshold=0.05):
            alt = forward(mm, ww, TOKENS, n_kv, mm["n_layers"])
            diff = np.abs(alt - refs[(0, n_kv)]).max()
            assert diff > threshold, f"{name}: {label} does not change the logits ({diff:.3g})"
            return diff

        if m.get("qk_norm"):
            changed("the q/k norms", variant(m, qk_norm=None))
        if m.get("attn_softcap"):
            changed("the attention soft-cap", variant(m, attn_softcap=None))
        if m.get("final_softcap"):
            changed("the final soft-cap", variant(m, final_softcap=None))
        if m.get("swa_window"):
            for n_kv in {t, t + 5} & {k[1] for k in refs}:
                changed(f"the sliding window (n_kv {n_kv})", variant(m, swa_window=None), n_kv=n_kv)
        if m["arch"] == "gemma3":
            changed("the global layer's linear scaling", variant(m, linear_scale=1.0), n_kv=t + 5, threshold=0.01)
            changed("the local layers' base", variant(m, freq_base_swa=1e6), n_kv=t + 5)
        if m.get("sinks"):
            nosink = dict(held)
            for il in range(m["n_layers"]):
                nosink[f"blk.{il}.attn_sinks"] = np.full(m["n_head"], -1e30)
            changed("the attention sinks", m, ww=nosink)
        if m.get("longrope"):
            assert m["attn_factor_held"] > 1.1
            short = dict(held, rope_factors_long=held["rope_factors_short"])
            changed("the long factors (n_kv 12)", m, ww=short, n_kv=t + 5)
            changed("the attention factor", variant(m, attn_factor_held=1.0))
        if m.get("moe") == "oai":
            assert stats["gate_over_limit"] > 0, f"{name}: no gate exceeds the clamp"
            changed("the clamp", variant(m, oai_limit=1e9))
        if "moe" in m:
            changed("top-k routing", variant(m, n_expert_used=m["n_expert"] - 1))
    names = list(models)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ra, rb = models[a][2][(0, t)], models[b][2][(0, t)]
            # the q8_0 variant holds the same checkpoint: near its f16 twin, but not equal to it
            least = 1e-4 if SEEDS[a] == SEEDS[b] else 0.1
            assert np.abs(ra - rb).max() > least, f"{a} and {b} have the same reference"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--out", default=str(root / "tests" / "data" / "models" / "arch"))
    parser.add_argument("--check-only", action="store_true", help="build in a temporary folder and self-check")
    args = parser.parse_args()
    if args.check_only:
        import tempfile
        out = Path(tempfile.mkdtemp(prefix="arch_fixtures."))
    else:
        out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"generator": GENERATOR, "gguf_version": importlib.metadata.version("gguf"),
                "numpy_version": np.__version__, "tokens": TOKENS, "models": {}}
    built = {}
    for name, spec in MODELS.items():
        m = copy.deepcopy(spec)
        held, refs, stats, attempt = build(name, m, out / f"{name}.gguf")
        built[name] = (m, held, refs, stats)
        entries = []
        for (n_layers, n_kv), logits in refs.items():
            file = reference_file(name, n_layers, n_kv)
            np.save(out / file, logits)
            entries.append({"n_layers": n_layers, "n_kv": n_kv, "logits": file})
        manifest["models"][name] = {"file": f"{name}.gguf", "weights": m["weights"], "architecture": m["arch"],
                                    "references": entries}
        size = (out / f"{name}.gguf").stat().st_size
        extra = "".join(f", {k} {v:.3g}" for k, v in sorted(stats.items()))
        print(f"arch_fixtures: {name}: {size / 1024:.0f} KiB, seed +{attempt}{extra}", file=sys.stderr)
    self_check(built)
    print("arch_fixtures: self-check passed", file=sys.stderr)
    if not args.check_only:
        write_bad_files(out / "bad")
        manifest["bad_files"] = {name: what for name, (_, what) in BAD_FILES.items()}
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        print(f"arch_fixtures: wrote {len(MODELS)} models to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
