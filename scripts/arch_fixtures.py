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
definitions (modeling_qwen3, _gemma2, _gemma3, _phi3, _mixtral, _qwen3_moe, _gpt_oss, and
DeepSeek-V3's modeling_deepseek / transformers' modeling_deepseek_v3, _lfm2, _granitemoehybrid,
_qwen3_5, _qwen3_next, _nemotron_h), so the references check the
layout conventions as well as the arithmetic.

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
  tiny-gpt-oss-mxfp4  tiny-gpt-oss with its experts in MXFP4, as gpt-oss ships (gguf's quantizer)
  tiny-gpt-oss        f16 matrices, f32 norms, biases, sinks and router; q/k/v/o biases; attention
                      sinks; sliding window 4 on even layers; head dim 24; router with bias, top-2 of
                      the raw logits then softmax over the two; expert biases; HF's interleaved
                      gate_up split into gate/up as the converter does; clamped SwiGLU (limit 7,
                      alpha 1.702; some gates exceed 7); plain neox rope (rope.scaling.type none)
  tiny-deepseek2      f16 matrices (router, selection bias and norms f32), 3 layers, DeepSeek-V3
                      layout: MLA (q_lora_rank 24, kv_lora_rank 32, qk_nope 16, qk_rope 8, v_head 12,
                      4 heads; kv_b_proj split into attn_k_b (transposed) and attn_v_b as the converter
                      does); normal rope on the rope part, base 10000, no scaling; layer 0 dense
                      SwiGLU, layers 1-2 MoE: 8 experts, 2 used, sigmoid scores, exp_probs_b selection
                      bias, 4 groups of 2 with 2 used (group score: sum of its top-2), weights
                      normalised then x 2.5, one shared expert; untied
  tiny-lfm2           f32, LFM2: layers conv, conv, attention, conv (head_count_kv [0, 0, 2, 0]);
                      gated short convolutions of 3 inputs (in_proj to B, C, x; B x convolved causally
                      per channel; times C; out_proj), q/k layernorms, neox rope, SwiGLU, tied;
                      token_embd_norm as the final norm
  tiny-granitehybrid  f32, Granite 4.0-H: layers mamba, attention, mamba, mamba (head_count_kv [0, 2, 0, 0]);
                      Mamba-2 mixers (inner 128, 8 heads of 16, state 16, 1 group, convolution of 4:
                      in-projection to z, x, B, C, dt; causal conv + bias + silu; selective scan
                      with softplus(dt + bias) and A = -exp(A_log); D skip; times silu(z); RMS norm;
                      out-projection); no rope; Granite's embedding/attention/residual/logit
                      multipliers; 4 experts of 24, 2 used, beside a shared MLP of 32; tied
  tiny-granitehybrid-dense  f16 matrices; attention, mamba, mamba; normal rope (Bamba's
                      rope.scaling.finetuned true) on permuted Q/K; a dense SwiGLU; untied
  tiny-qwen35         f32, Qwen3.5: gated delta nets at layers 0-2, gated full attention at 3
                      (full_attention_interval 4); 2 key and 4 value heads of 16 (the V heads
                      reordered to ggml's tiled order as the converter does); convolution of 4;
                      partial rope (4 of 16); zero-centred norms (+1 in the file); tied
  tiny-qwen35moe      f16 matrices; tiny-qwen35's layers (attention at 1 and 3) with 4 experts of 16, 2
                      used, beside a shared expert of 24 gated by sigmoid(ffn_gate_inp_shexp . x); untied
  tiny-qwen3next      f32, Qwen3-Next: tiny-qwen35moe's layers from HF's fused in_proj_qkvz and
                      in_proj_ba (split into attn_qkv/attn_gate, ssm_ba kept whole, value heads left
                      grouped by key head, as the converter does); layer_types linear, linear, full,
                      linear (attention.recurrent_layers over full_attention_interval 4); plain neox
                      rope on 4 of 16; untied
  tiny-qwen3next-ssm-in  the same checkpoint in f16 as older converters wrote it: in_proj_qkvz whole
                      as ssm_in
  tiny-nemotron-h     f32, Nemotron-H: layers mamba, mlp, attention, mamba, mlp, each alone between
                      residual adds (per-layer head_count_kv and feed_forward_length mark them);
                      Mamba-2 of 8 heads of 16 in 2 groups (the gated norm per group), state 16,
                      convolution 4; attention without rope; relu² MLPs without a gate; only
                      layer_norm_epsilon written, as the converter does; untied
  tiny-nemotron-h-moe f16 matrices, Nemotron 3 Nano's layout: the MLP layers 8 ungated relu² experts
                      of 16 (2 used; sigmoid scores + selection bias, normalised, x 2.5) beside an
                      ungated shared expert of 24
  tiny-lfm2moe        f16 matrices, LFM2-MoE (LFM2-8B-A1B's layout): layers conv, attention, conv,
                      conv; layer 0 a dense SwiGLU (leading_dense_block_count 1), the others 8 SwiGLU
                      experts of 16, 2 used: sigmoid scores + expert_bias (exp_probs_b) choose, the
                      unbiased scores normalised (+1e-6 in transformers, none in llama.cpp) weigh
  tiny-deepseek2-yarn the same layout with DeepSeek-V3's YaRN: factor 4, original context 1024
                      (ramp 0, 1/3, 2/3, 1 over the 4 rope pairs), beta_fast 32, beta_slow 1,
                      mscale = mscale_all_dim = 1 (yarn_log_multiplier 0.1): softmax scale
                      x (1 + 0.1 ln 4)^2, cos/sin unscaled
References: every layer with n_kv 7; the first layer only; and for the sliding-window, rope-factor
and deepseek2 models (gemma2, gemma3, phi3, gpt-oss, deepseek2, deepseek2-yarn) every layer with
n_kv 12.

Every model file has tokenizer.ggml.model "none" and <arch>.vocab_size (llama_writer), so that
llama.cpp loads it; scripts/llamacpp-reference adds llama.cpp's own logits ("llamacpp" in the
manifest, kept while the model file is unchanged).

Sliding window: llama.cpp's rule (llama_hparams::is_masked_swa, LLAMA_SWA_TYPE_STANDARD): a query at
position p1 does not see a key at p0 when p1 - p0 >= n_swa; it sees the n_swa positions p1 - n_swa + 1
.. p1. transformers' sliding-window masks (kv_idx > q_idx - sliding_window) agree.

MoE routing: selections are made on float64 scores; the generator redraws a model's weights (next
seed) until every token's k-th and (k+1)-th router logits differ by at least 0.05 in every
reference, so a float32 or q8_0 run selects the same experts. DeepSeek's routing is on sigmoid
scores (which move at most 1/4 as much as the logits): choice scores 0.0125 apart at the k-th, group
scores 0.025 apart at the topk_group-th, and the k-th choice score above 0.0125.

Self-check (always run; --check-only runs it without writing): every reference is recomputed by a
second, independently written formulation (token by token through a growing cache, complex-number
rope, per-expert loops) and must agree to 1e-12; references must differ between models and between
n_kv values; and the features each model exists for must change its logits when switched off
(soft-caps, windows, sinks, long factors, the global layer's scaling, the clamp, the q/k norms;
deepseek2's groups, selection bias, shared expert, weight scale and normalisation, YaRN ramp and
YaRN attention scale). For deepseek2 the second formulation is llama.cpp's: the latent (MLA) cache
with q absorbed through attn_k_b and the output decompressed through attn_v_b, ggml's YaRN and
llama.cpp's attn_factor / kq_scale arithmetic from the file's keys; agreeing to 1e-12 with the HF
formulation shows how llama.cpp's numbers map onto HF's.

scripts/arch_fixtures_hf_check.py (optional; needs torch and transformers) runs transformers' own
model classes on the committed files' weights (all but the deepseek2 models, which it skips): every
reference agrees to 3e-7 relative (transformers computes norms and rope tables in float32), where a
wrong convention would be off by 0.05 or more.
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
from model_fixtures import TOKENS, keep_llamacpp_entries, llama_writer, permute_for_normal_rope, rms_norm, rope_rotate_half  # noqa: E402

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
    # DeepSeek-V3 layout (llama.cpp's deepseek2). n_head_kv 1 is what the converter writes (MLA read
    # as MQA over the latent); the checkpoint's num_key_value_heads is n_head and unused by MLA.
    # head_dim: qk_nope + qk_rope (the query/key head; v_head_dim is the value head). n_ff is the
    # dense layers' intermediate_size, n_ff_exp the routed and shared experts' moe_intermediate_size.
    "tiny-deepseek2": dict(
        arch="deepseek2", n_embd=64, n_head=4, n_head_kv=1, head_dim=24, n_ff=80, n_ff_exp=16, n_vocab=256,
        n_layers=3, n_dense_lead=1, eps=1e-6, freq_base=10000.0, tied=False, matrix_type=T.F16, weights="f16",
        q_lora_rank=24, kv_lora_rank=32, qk_nope=16, qk_rope=8, v_head=12,
        moe="deepseek", n_expert=8, n_expert_used=2, n_group=4, topk_group=2, n_shared=1,
        routed_scale=2.5, norm_topk=True, bias_std=0.1),
    "tiny-deepseek2-yarn": dict(
        arch="deepseek2", n_embd=64, n_head=4, n_head_kv=1, head_dim=24, n_ff=80, n_ff_exp=16, n_vocab=256,
        n_layers=3, n_dense_lead=1, eps=1e-6, freq_base=10000.0, tied=False, matrix_type=T.F16, weights="f16",
        q_lora_rank=24, kv_lora_rank=32, qk_nope=16, qk_rope=8, v_head=12,
        moe="deepseek", n_expert=8, n_expert_used=2, n_group=4, topk_group=2, n_shared=1,
        routed_scale=2.5, norm_topk=True, bias_std=0.1,
        context=4096, yarn=dict(factor=4.0, orig_context=1024, beta_fast=32.0, beta_slow=1.0, mscale=1.0,
                                mscale_all_dim=1.0)),
    # Last, so that the seeds of the models above stay as they were.
    "tiny-gpt-oss-mxfp4": dict(
        arch="gpt-oss", n_embd=64, n_head=4, n_head_kv=2, head_dim=24, key_length=True, n_ff=32, n_ff_exp=32,
        n_vocab=256, n_layers=2, eps=1e-5, freq_base=150000.0, rope_scaling_none=True, tied=False,
        matrix_type=T.F16, expert_type=T.MXFP4, weights="quant", attn_bias=True, sinks=True, swa_window=4,
        swa_period=2, moe="oai", n_expert=4, n_expert_used=2, oai_alpha=1.702, oai_limit=7.0),
    # LFM2 (Lfm2ForCausalLM): layer_types conv, conv, full_attention, conv; conv_L_cache 3 (the
    # converter's shortconv.l_cache; head_count_kv 0 marks the conv layers); q/k layernorms; tied.
    "tiny-lfm2": dict(
        arch="lfm2", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, n_ff=48, n_vocab=256, n_layers=4, eps=1e-5,
        freq_base=1e6, tied=True, matrix_type=T.F32, weights="f32", qk_norm=True, conv_L=3,
        layer_types=("conv", "conv", "full_attention", "conv"), head_count_kv=[0, 0, 2, 0]),
    # Granite 4.0-H (GraniteMoeHybridForCausalLM): layer_types mamba, attention, mamba, mamba
    # (head_count_kv 0 marks the Mamba-2 layers); no rope (position_embedding_type nope: the
    # converter writes rope.scaling.finetuned false, and still permutes Q/K); Granite's multipliers;
    # 4 experts, 2 used, beside a shared MLP of its own width; one group (as every Granite 4.0-H:
    # transformers' gated norm is ungrouped, llama.cpp's per group); tied.
    "tiny-granitehybrid": dict(
        arch="granitehybrid", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, n_ff=24, n_vocab=256, n_layers=4,
        eps=1e-5, tied=True, matrix_type=T.F32, weights="f32", normal_rope=True, no_rope=True,
        layer_types=("mamba", "attention", "mamba", "mamba"), head_count_kv=[0, 2, 0, 0],
        d_inner=128, d_state=16, ssm_heads=8, ssm_groups=1, conv_K=4,
        embd_scale=4.0, embd_std=0.3, attn_scale=0.2, residual_scale=0.6, logit_scale=2.5,
        moe="softmax", n_expert=4, n_expert_used=2, n_ff_shared=32),
    # A dense Granite hybrid that ropes (Bamba's layout: rope.scaling.finetuned true, normal rope on
    # permuted Q/K), f16 matrices, attention first, 4 Mamba-2 heads of 32, untied.
    "tiny-granitehybrid-dense": dict(
        arch="granitehybrid", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, n_ff=48, n_vocab=256, n_layers=3,
        eps=1e-5, freq_base=10000.0, tied=False, matrix_type=T.F16, weights="f16", normal_rope=True,
        layer_types=("attention", "mamba", "mamba"), head_count_kv=[2, 0, 0],
        d_inner=128, d_state=8, ssm_heads=4, ssm_groups=1, conv_K=3,
        embd_scale=2.0, embd_std=0.25, attn_scale=0.3, residual_scale=0.8, logit_scale=1.5),
    # Qwen3.5 (Qwen3_5ForCausalLM): full_attention_interval 4 (layers 0-2 gated delta nets, 3 full
    # attention with a sigmoid output gate); 2 key heads and 4 value heads of 16 (the converter
    # reorders the V heads from grouped to tiled); convolution of 4; partial rope (4 of 16 dims,
    # sections [1, 1, 0, 0]); zero-centred norms (+1 in the file) but the gated one; tied.
    "tiny-qwen35": dict(
        arch="qwen35", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, key_length=True, n_ff=48, n_vocab=256,
        n_layers=4, eps=1e-6, freq_base=10000.0, tied=True, matrix_type=T.F32, weights="f32",
        rot_dims=4, attn_interval=4, lin_k_heads=2, lin_v_heads=4, lin_head=16, conv_K=4, chunk=4),
    # Qwen3.5-MoE (Qwen3_5MoeForCausalLM): tiny-qwen35's layers with 4 experts of 16 (2 used, softmax,
    # renormalised) beside a shared expert of 24 gated by sigmoid(shared_expert_gate); attention at
    # layers 1 and 3 (full_attention_interval 2); f16 matrices, the router and gates f32; untied.
    "tiny-qwen35moe": dict(
        arch="qwen35moe", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, key_length=True, n_ff=96, n_ff_exp=16,
        n_vocab=256, n_layers=4, eps=1e-6, freq_base=10000.0, tied=False, matrix_type=T.F16, weights="f16",
        rot_dims=4, attn_interval=2, lin_k_heads=2, lin_v_heads=4, lin_head=16, conv_K=4, chunk=4,
        moe="softmax", n_expert=4, n_expert_used=2, n_ff_shared=24),
    # Qwen3-Next (Qwen3NextForCausalLM): tiny-qwen35moe's layers from HF's fused in_proj_qkvz and
    # in_proj_ba (grouped per key head; the converter splits in_proj_qkvz into attn_qkv and attn_gate,
    # keeps in_proj_ba as ssm_ba and leaves the value heads grouped); layer_types linear, linear,
    # full, linear (attention.recurrent_layers, which overrides full_attention_interval 4); partial
    # neox rope without sections; f32; untied.
    "tiny-qwen3next": dict(
        arch="qwen3next", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, key_length=True, n_ff=96, n_ff_exp=16,
        n_vocab=256, n_layers=4, eps=1e-6, freq_base=10000.0, tied=False, matrix_type=T.F32, weights="f32",
        rot_dims=4, attn_interval=4, layer_types=("linear_attention", "linear_attention", "full_attention", "linear_attention"),
        lin_k_heads=2, lin_v_heads=4, lin_head=16, conv_K=4, chunk=4,
        moe="softmax", n_expert=4, n_expert_used=2, n_ff_shared=24),
    # The same checkpoint as older converters wrote it: in_proj_qkvz whole as ssm_in; f16 matrices.
    "tiny-qwen3next-ssm-in": dict(
        arch="qwen3next", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, key_length=True, n_ff=96, n_ff_exp=16,
        n_vocab=256, n_layers=4, eps=1e-6, freq_base=10000.0, tied=False, matrix_type=T.F16, weights="f16",
        rot_dims=4, attn_interval=4, layer_types=("linear_attention", "linear_attention", "full_attention", "linear_attention"),
        lin_k_heads=2, lin_v_heads=4, lin_head=16, conv_K=4, chunk=4, fused_ssm_in=True,
        moe="softmax", n_expert=4, n_expert_used=2, n_ff_shared=24),
    # Nemotron-H (NemotronHForCausalLM, hybrid_override_pattern "M-*M-"): Mamba-2, MLP, attention,
    # Mamba-2, MLP, each alone between residual adds; head_count_kv [0, 0, 2, 0, 0] and
    # feed_forward_length [0, 48, 0, 0, 48] mark them; 8 Mamba-2 heads of 16 in 2 groups (the
    # gated norm per group of 64), state 16, convolution 4 with a bias; attention without rope
    # (Q/K still permuted by the converter); relu² MLPs without a gate; untied.
    "tiny-nemotron-h": dict(
        arch="nemotron_h", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, key_length=True, n_ff=48, n_vocab=256, n_layers=5,
        eps=1e-5, tied=False, matrix_type=T.F32, weights="f32", normal_rope=True, no_rope=True,
        layer_types=("mamba", "mlp", "attention", "mamba", "mlp"), head_count_kv=[0, 0, 2, 0, 0],
        feed_forward_length=[0, 48, 0, 0, 48], d_inner=128, d_state=16, ssm_heads=8, ssm_groups=2, conv_K=4, embd_std=0.5,
        plain_norm_eps=True),
    # Nemotron 3 Nano (NemotronHForCausalLM with experts: nemotron_h_moe, pattern "ME*ME"): the MLP
    # layers are 8 experts of 16 (2 used), relu² without a gate, chosen by sigmoid scores plus
    # e_score_correction_bias (exp_probs_b), weights normalised and x 2.5, beside an ungated
    # shared expert of 24; one expert group; f16 matrices (router and bias f32).
    "tiny-nemotron-h-moe": dict(
        arch="nemotron_h_moe", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, key_length=True, n_ff=16, n_ff_exp=16,
        n_vocab=256, n_layers=5, eps=1e-5, tied=False, matrix_type=T.F16, weights="f16", normal_rope=True, no_rope=True,
        layer_types=("mamba", "mlp", "attention", "mamba", "mlp"), head_count_kv=[0, 0, 2, 0, 0],
        feed_forward_length=[0, 16, 0, 0, 16], d_inner=128, d_state=16, ssm_heads=8, ssm_groups=2, conv_K=4, embd_std=0.5,
        plain_norm_eps=True, moe="nemotron", n_expert=8, n_expert_used=2, n_ff_shared=24, n_group=1, topk_group=1,
        norm_topk=True, routed_scale=2.5, bias_std=0.1),
    # LFM2-MoE (Lfm2MoeForCausalLM, LFM2-8B-A1B's layout): tiny-lfm2's layers (conv, attention,
    # conv, conv), the first dense (num_dense_layers 1), the others 8 SwiGLU experts of 16 (2 used)
    # chosen by sigmoid scores plus expert_bias (exp_probs_b), weighted by the unbiased scores
    # normalised (transformers adds 1e-6 to their sum, llama.cpp does not; routed_scaling_factor 1);
    # f16 matrices (router and bias f32); tied.
    "tiny-lfm2moe": dict(
        arch="lfm2moe", n_embd=64, n_head=4, n_head_kv=2, head_dim=16, n_ff=48, n_ff_exp=16, n_vocab=256, n_layers=4,
        eps=1e-5, freq_base=1e6, tied=True, matrix_type=T.F16, weights="f16", qk_norm=True, conv_L=3,
        layer_types=("conv", "full_attention", "conv", "conv"), head_count_kv=[0, 2, 0, 0], n_dense_lead=1,
        moe="lfm2", n_expert=8, n_expert_used=2, n_group=1, topk_group=1, norm_topk=True, norm_eps=1e-6,
        routed_scale=1.0, bias_std=0.1),
}
Q35_ARCHS = ("qwen35", "qwen35moe", "qwen3next")
LONG_CACHE = ("tiny-gemma2", "tiny-gemma3", "tiny-phi3", "tiny-gpt-oss", "tiny-deepseek2", "tiny-deepseek2-yarn",
              "tiny-gpt-oss-mxfp4", "tiny-lfm2", "tiny-granitehybrid", "tiny-granitehybrid-dense", "tiny-qwen35", "tiny-qwen35moe",
              "tiny-qwen3next", "tiny-nemotron-h", "tiny-lfm2moe")
SEEDS = {name: 7100 + 100 * i for i, name in enumerate(MODELS)}
SEEDS["tiny-qwen3moe-q8_0"] = SEEDS["tiny-qwen3moe"]  # the same checkpoint, stored differently
SEEDS["tiny-gpt-oss-mxfp4"] = SEEDS["tiny-gpt-oss"]
SEEDS["tiny-qwen3next-ssm-in"] = SEEDS["tiny-qwen3next"]


# --- checkpoint-layout weights -----------------------------------------------------------------
# Keys are llama.cpp's tensor names without ".weight"/".bias" (a "_bias" suffix for biases), except
# gpt-oss's experts, which keep HF's fused layout (gate_up_proj, down_proj) until the converter step.

def near_one(rng, n):
    """Norm scales near 1, exact in float32 (so that Gemma's 1 + w is exact both ways)."""
    return rng.uniform(0.8, 1.2, n).astype(np.float32).astype(np.float64)


def make_weights(m, rng):
    if m["arch"] == "deepseek2":
        return ds_make_weights(m, rng)
    if m["arch"] in LFM2_ARCHS:
        return lfm2_make_weights(m, rng)
    if m["arch"] in GH_ARCHS:
        return gh_make_weights(m, rng)
    if m["arch"] in Q35_ARCHS:
        return q35_make_weights(m, rng)
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
    if m["arch"] in Q35_ARCHS:
        return q35_to_file(m, w)
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
        if role == "conv" and m["arch"] in LFM2_ARCHS:     # LFM2Model: conv.weight [e, 1, L] squeezed
            out[tensor_name(key)] = a[:, 0, :]
            continue
        if m["arch"] in GH_ARCHS and role in GH_MIXER_ROLES:   # Mamba2Model.modify_tensors
            p = key[: -len(role)]
            if role == "A_log":
                out[p + "ssm_a"] = -np.exp(a)[:, None]
            elif role == "D":
                out[p + "ssm_d"] = a[:, None]
            elif role == "ssm_conv1d":
                out[tensor_name(key)] = a[:, 0, :]
            else:                                            # ssm_norm: [d_inner] -> [n_group, d_inner / n_group]
                out[tensor_name(key)] = a.reshape(m["ssm_groups"], -1)
            continue
        if role == "attn_kv_b":                             # DeepseekV2Model: split, k_b transposed
            p, h, nope = key[: -len(role)], m["n_head"], m["qk_nope"]
            kv = a.reshape(h, nope + m["v_head"], a.shape[1])           # per head: [k_nope rows; v rows]
            out[p + "attn_k_b.weight"] = np.swapaxes(kv[:, :nope, :], 1, 2)   # (n_head, kv_lora_rank, qk_nope)
            out[p + "attn_v_b.weight"] = kv[:, nope:, :]                      # (n_head, v_head, kv_lora_rank)
            continue
        out[tensor_name(key)] = a
    return out


def from_file(m, tensors):
    """The file's tensors (float64, numpy layout) -> checkpoint-layout weights (to_file undone)."""
    if m["arch"] in Q35_ARCHS:
        return q35_from_file(m, tensors)
    w = {}
    for name, a in tensors.items():
        if name.endswith((".ssm_a", ".ssm_d")):               # no suffix, [n_head, 1]
            p = name[: -len("ssm_a")]
            if name.endswith(".ssm_a"):
                w[p + "A_log"] = np.log(-a[:, 0])
            else:
                w[p + "D"] = a[:, 0]
            continue
        key = name[: -len(".weight")] if name.endswith(".weight") else name[: -len(".bias")] + "_bias"
        role = key.split(".")[-1]
        if m["arch"] in GH_ARCHS and role == "ssm_conv1d":
            a = a[:, None, :]
        if m["arch"] in GH_ARCHS and role == "ssm_norm":
            a = a.reshape(-1)
        if m.get("gemma") and role.endswith("norm"):
            a = a - 1.0
        if role == "conv" and m["arch"] in LFM2_ARCHS:
            a = a[:, None, :]
        if m.get("normal_rope") and role in ("attn_q", "attn_k"):
            heads = m["n_head"] if role == "attn_q" else m["n_head_kv"]
            hd = a.shape[0] // heads
            a = a.reshape(heads, hd // 2, 2, -1).swapaxes(1, 2).reshape(a.shape)
        w[key] = a
    if m["arch"] == "deepseek2":
        for il in range(m["n_layers"]):
            p = f"blk.{il}."
            k_b, v_b = w.pop(p + "attn_k_b"), w.pop(p + "attn_v_b")
            kv = np.concatenate([np.swapaxes(k_b, 1, 2), v_b], axis=1)
            w[p + "attn_kv_b"] = kv.reshape(-1, kv.shape[2])
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
    # The converter keeps the convolutions' taps f32 too (SSM_CONV1D, SHORTCONV_CONV).
    if (ndim <= 1 or name.endswith("_norm.weight") or not name.endswith(".weight") or ".ffn_gate_inp" in name
            or ".ssm_conv1d." in name or ".shortconv.conv." in name):
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
    if arch == "deepseek2":
        ds_write_keys(writer, m)
    if arch in LFM2_ARCHS:
        writer.add_shortconv_l_cache(m["conv_L"])   # LFM2Model.set_gguf_parameters (head_count_kv: llama_writer)
    if arch == "lfm2moe":                           # LFM2MoeModel.set_gguf_parameters
        writer.add_leading_dense_block_count(m["n_dense_lead"])
        writer.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
    if arch in GH_ARCHS:
        gh_write_keys(writer, m)
    if arch in Q35_ARCHS:
        q35_write_keys(writer, m)
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
    if "moe" in m and arch != "deepseek2":
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


def read_gguf(path, reader=None):
    """{tensor name: float64 values the file holds, numpy layout} and the metadata fields. `reader`:
    the file already opened (gguf's reader parses every metadata array, a 262144-token vocabulary
    in about 20 s, so a caller that has one passes it)."""
    reader = reader or gguf.GGUFReader(str(path))
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
    if not m.get("no_rope"):
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
    # query_pre_attn_scalar = head_dim; Granite's attention_multiplier replaces 1/sqrt(head_dim).
    s = np.einsum("thd,shd->hts", q, kh)
    s = s * m["attn_scale"] if "attn_scale" in m else s / np.sqrt(hd)
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
    if m["arch"] == "deepseek2":
        return ds_forward(m, w, tokens, n_kv, n_layers, stats)
    if m["arch"] in LFM2_ARCHS:
        return lfm2_forward(m, w, tokens, n_kv, n_layers, stats)
    if m["arch"] in GH_ARCHS:
        return gh_forward(m, w, tokens, n_kv, n_layers, stats)
    if m["arch"] in Q35_ARCHS:
        return q35_forward(m, w, tokens, n_kv, n_layers, stats)
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
    if m["arch"] == "deepseek2":
        return ds_forward_incremental(m, w, tokens, n_kv, n_layers)
    if m["arch"] in LFM2_ARCHS:
        return lfm2_forward_incremental(m, w, tokens, n_kv, n_layers)
    if m["arch"] in GH_ARCHS:
        return gh_forward_incremental(m, w, tokens, n_kv, n_layers)
    if m["arch"] in Q35_ARCHS:
        return q35_forward_incremental(m, w, tokens, n_kv, n_layers)
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


# --- lfm2 (Liquid AI's LFM2, transformers' modeling_lfm2: gated short convolutions among attention
# layers). Checkpoint-layout keys are llama.cpp's names; shortconv.conv keeps HF's [n_embd, 1, L].
# The conv layers' state before the batch is zero (the inputs before it count as zero, as the
# cache's earlier entries do).

def lfm2_make_weights(m, rng):
    e, hd, v, f, L = m["n_embd"], m["head_dim"], m["n_vocab"], m["n_ff"], m["conv_L"]
    q, kv = m["n_head"] * hd, m["n_head_kv"] * hd
    w = {"token_embd": rng.standard_normal((v, e)) * 0.5, "token_embd_norm": near_one(rng, e)}
    for il, kind in enumerate(m["layer_types"]):
        p = f"blk.{il}."
        w[p + "attn_norm"] = near_one(rng, e)                          # operator_norm
        if kind == "conv":
            w[p + "shortconv.in_proj"] = rng.standard_normal((3 * e, e)) / np.sqrt(e) * 1.5
            w[p + "shortconv.conv"] = rng.standard_normal((e, 1, L)) * 0.8
            w[p + "shortconv.out_proj"] = rng.standard_normal((e, e)) / np.sqrt(e)
        else:
            w[p + "attn_q"] = rng.standard_normal((q, e)) / np.sqrt(e)
            w[p + "attn_k"] = rng.standard_normal((kv, e)) / np.sqrt(e)
            w[p + "attn_v"] = rng.standard_normal((kv, e)) / np.sqrt(e)
            w[p + "attn_q_norm"], w[p + "attn_k_norm"] = near_one(rng, hd), near_one(rng, hd)
            w[p + "attn_output"] = rng.standard_normal((e, q)) / np.sqrt(q)
        w[p + "ffn_norm"] = near_one(rng, e)
        if "moe" in m and il >= m["n_dense_lead"]:                     # Lfm2MoeSparseMoeBlock
            ne, fe = m["n_expert"], m["n_ff_exp"]
            w[p + "ffn_gate_inp"] = rng.standard_normal((ne, e)) / np.sqrt(e) * 1.5     # gate
            w[p + "exp_probs_b_bias"] = rng.standard_normal(ne) * m["bias_std"]         # expert_bias
            w[p + "ffn_gate_exps"] = rng.standard_normal((ne, fe, e)) / np.sqrt(e)      # experts.*.w1
            w[p + "ffn_up_exps"] = rng.standard_normal((ne, fe, e)) / np.sqrt(e)        # experts.*.w3
            w[p + "ffn_down_exps"] = rng.standard_normal((ne, e, fe)) / np.sqrt(fe)     # experts.*.w2
            continue
        w[p + "ffn_gate"] = rng.standard_normal((f, e)) / np.sqrt(e)      # w1
        w[p + "ffn_up"] = rng.standard_normal((f, e)) / np.sqrt(e)        # w3
        w[p + "ffn_down"] = rng.standard_normal((e, f)) / np.sqrt(f)      # w2
    return w


def lfm2_ffn(m, w, il, h, stats):
    """Lfm2MoeDecoderLayer's feed_forward: the dense SwiGLU MLP before num_dense_layers, else
    Lfm2MoeSparseMoeBlock: sigmoid scores, the k best of scores + expert_bias, weighted by the
    unbiased scores / (their sum + 1e-6) x routed_scaling_factor (ds_route without groups)."""
    p = f"blk.{il}."
    if "moe" not in m or il < m["n_dense_lead"]:
        return (silu(h @ w[p + "ffn_gate"].T) * (h @ w[p + "ffn_up"].T)) @ w[p + "ffn_down"].T
    chosen, wts = ds_route(m, w, il, h, stats)
    out = np.zeros_like(h)
    for i in range(h.shape[0]):
        for slot in range(chosen.shape[1]):
            ex = chosen[i, slot]
            y = silu(h[i] @ w[p + "ffn_gate_exps"][ex].T) * (h[i] @ w[p + "ffn_up_exps"][ex].T)
            out[i] += wts[i, slot] * (y @ w[p + "ffn_down_exps"][ex].T)
    return out


def lfm2_ffn_token(m, w, il, hv):
    """One token through lfm2_ffn, written out with Python floats."""
    p = f"blk.{il}."

    def mlp(gate, up, down):
        g, u = gate @ hv, up @ hv
        return down @ np.array([gg / (1.0 + math.exp(-gg)) * uu for gg, uu in zip(g, u)])

    if "moe" not in m or il < m["n_dense_lead"]:
        return mlp(w[p + "ffn_gate"], w[p + "ffn_up"], w[p + "ffn_down"])
    scores = [1.0 / (1.0 + math.exp(-float(row @ hv))) for row in w[p + "ffn_gate_inp"]]
    ranked = sorted(range(m["n_expert"]), key=lambda ex: -(scores[ex] + w[p + "exp_probs_b_bias"][ex]))[:m["n_expert_used"]]
    total = sum(scores[ex] for ex in ranked) + m["norm_eps"]
    return sum(scores[ex] / total * m["routed_scale"] * mlp(w[p + "ffn_gate_exps"][ex], w[p + "ffn_up_exps"][ex], w[p + "ffn_down_exps"][ex])
               for ex in ranked)


def lfm2_short_conv(m, w, il, h):
    """Lfm2ShortConv.slow_forward without a cache: B, C, x = in_proj(h) in thirds, B * x convolved
    causally per channel (nn.Conv1d, groups = channels, padding L - 1, the first T outputs), times C."""
    p, t, L = f"blk.{il}.", h.shape[0], m["conv_L"]
    B, C, x = np.split(h @ w[p + "shortconv.in_proj"].T, 3, axis=1)    # [T, e] each
    bx = np.concatenate([np.zeros((L - 1, h.shape[1])), B * x])        # the zero inputs before the batch
    taps = w[p + "shortconv.conv"][:, 0, :]                            # [e, L]
    conv = np.stack([(bx[i:i + L] * taps.T).sum(axis=0) for i in range(t)])
    return (C * conv) @ w[p + "shortconv.out_proj"].T


def lfm2_forward(m, w, tokens, n_kv, n_layers, stats):
    t = len(tokens)
    pos = np.arange(n_kv - t, n_kv, dtype=np.float64)
    x = w["token_embd"][tokens]
    for il in range(n_layers):
        p = f"blk.{il}."
        h = rms_norm(x, w[p + "attn_norm"], m["eps"])
        x = x + (lfm2_short_conv(m, w, il, h) if m["layer_types"][il] == "conv" else attention(m, w, il, h, pos, n_kv))
        x = x + lfm2_ffn(m, w, il, rms_norm(x, w[p + "ffn_norm"], m["eps"]), stats)
    return rms_norm(x, w["token_embd_norm"], m["eps"]) @ w["token_embd"].T   # embedding_norm, tied lm_head


def lfm2_forward_incremental(m, w, tokens, n_kv, n_layers):
    """Token by token as Lfm2HybridConvCache decodes: each conv layer keeps its last L - 1 inputs
    B * x (zeros at first) and takes one dot product per channel with the taps; each attention
    layer appends its key and value to a cache of n_kv - T zero entries; rope as a complex rotation."""
    e, nh, nkv, hd, L = m["n_embd"], m["n_head"], m["n_head_kv"], m["head_dim"], m["conv_L"]
    half = hd // 2

    def rms(vec, weight):
        return vec * weight / math.sqrt(float(np.dot(vec, vec)) / vec.size + m["eps"])

    def rotate(vec, position):
        angles = np.array([position / (m["freq_base"] ** (2.0 * i / hd)) for i in range(half)])
        z = (vec[:half] + 1j * vec[half:]) * np.exp(1j * angles)
        return np.concatenate([z.real, z.imag])

    prefix = n_kv - len(tokens)
    states = [[np.zeros(e) for _ in range(L - 1)] for _ in range(n_layers)]
    caches = [[(np.zeros((nkv, hd)), np.zeros((nkv, hd)))] * prefix for _ in range(n_layers)]
    rows = []
    for i, tok in enumerate(tokens):
        position = prefix + i
        x = w["token_embd"][tok].copy()
        for il in range(n_layers):
            p = f"blk.{il}."
            h = rms(x, w[p + "attn_norm"])
            if m["layer_types"][il] == "conv":
                bcx = w[p + "shortconv.in_proj"] @ h
                b, c, xx = bcx[:e], bcx[e:2 * e], bcx[2 * e:]
                window = states[il] + [b * xx]
                states[il] = window[1:]
                conv = np.array([sum(window[j][ch] * w[p + "shortconv.conv"][ch, 0, j] for j in range(L)) for ch in range(e)])
                x = x + w[p + "shortconv.out_proj"] @ (c * conv)
            else:
                qv, kv_, vv = w[p + "attn_q"] @ h, w[p + "attn_k"] @ h, w[p + "attn_v"] @ h
                qs = [rotate(rms(qv[hh * hd:(hh + 1) * hd], w[p + "attn_q_norm"]), position) for hh in range(nh)]
                ks = np.array([rotate(rms(kv_[hh * hd:(hh + 1) * hd], w[p + "attn_k_norm"]), position) for hh in range(nkv)])
                caches[il].append((ks, vv.reshape(nkv, hd)))
                attn = np.zeros(nh * hd)
                for hh in range(nh):
                    kvh = hh * nkv // nh
                    scores = [float(np.dot(qs[hh], ck[kvh])) / math.sqrt(hd) for ck, _ in caches[il]]
                    top = max(scores)
                    lse = top + math.log(sum(math.exp(sc - top) for sc in scores))
                    attn[hh * hd:(hh + 1) * hd] = sum(math.exp(sc - lse) * cv[kvh] for sc, (_, cv) in zip(scores, caches[il]))
                x = x + w[p + "attn_output"] @ attn
            x = x + lfm2_ffn_token(m, w, il, rms(x, w[p + "ffn_norm"]))
        rows.append(w["token_embd"] @ rms(x, w["token_embd_norm"]))
    return np.array(rows)


# --- granitehybrid (IBM's Granite 4.0-H, transformers' modeling_granitemoehybrid: Mamba-2 layers
# among attention layers, Granite's multipliers, experts beside a shared MLP). Checkpoint-layout keys
# are llama.cpp's names, except the Mamba-2 mixer's, which keep HF's layout until the converter's
# step: A_log and D [n_head], conv1d [channels, 1, K], norm [d_inner]. The mixer's states before the
# batch are zero, as the attention cache's earlier entries are.

LFM2_ARCHS = ("lfm2", "lfm2moe")   # gated short convolutions among attention layers; lfm2moe with experts
GH_MIXER_ROLES = ("A_log", "D", "ssm_conv1d", "ssm_norm")
GH_ARCHS = ("granitehybrid", "nemotron_h", "nemotron_h_moe")   # Mamba-2 hybrids; nemotron_h's layers are each a mixer or an MLP alone


def experts_beside_shared(w, p, rng, e, ne, f, fs):
    """Layer p's router, ne SwiGLU experts of f and a shared one of fs, in llama.cpp's names (the
    converters split HF's fused gate/up inputs into the gate and up rows), drawn in this order."""
    w[p + "ffn_gate_inp"] = rng.standard_normal((ne, e)) / np.sqrt(e) * 2.0
    w[p + "ffn_gate_exps"] = rng.standard_normal((ne, f, e)) / np.sqrt(e)
    w[p + "ffn_up_exps"] = rng.standard_normal((ne, f, e)) / np.sqrt(e)
    w[p + "ffn_down_exps"] = rng.standard_normal((ne, e, f)) / np.sqrt(f)
    w[p + "ffn_gate_shexp"] = rng.standard_normal((fs, e)) / np.sqrt(e)
    w[p + "ffn_up_shexp"] = rng.standard_normal((fs, e)) / np.sqrt(e)
    w[p + "ffn_down_shexp"] = rng.standard_normal((e, fs)) / np.sqrt(fs)


def chosen_experts_token(m, w, p, hv, mlp):
    """One token's routed experts: the top n_expert_used router logits, weighted by the softmax over
    them (the softmax over all, renormalised, is the same), each expert through mlp(gate, up, down)."""
    logits = w[p + "ffn_gate_inp"] @ hv
    ranked = sorted(range(m["n_expert"]), key=lambda ex: -logits[ex])[:m["n_expert_used"]]
    z = [math.exp(logits[ex] - logits[ranked[0]]) for ex in ranked]
    return sum(zz / sum(z) * mlp(w[p + "ffn_gate_exps"][ex], w[p + "ffn_up_exps"][ex], w[p + "ffn_down_exps"][ex])
               for zz, ex in zip(z, ranked))


def gh_sizes(m):
    di, ds, nh, ng = m["d_inner"], m["d_state"], m["ssm_heads"], m["ssm_groups"]
    return di, ds, nh, ng, di + 2 * ng * ds, di // nh


def gh_make_weights(m, rng):
    e, hd, v = m["n_embd"], m["head_dim"], m["n_vocab"]
    q, kv = m["n_head"] * hd, m["n_head_kv"] * hd
    di, ds, nh, ng, ch, _ = gh_sizes(m)
    w = {"token_embd": rng.standard_normal((v, e)) * m["embd_std"], "output_norm": near_one(rng, e)}
    if not m["tied"]:
        w["output"] = rng.standard_normal((v, e)) / np.sqrt(e)
    for il, kind in enumerate(m["layer_types"]):
        if kind == "mlp" and "moe" in m:                                # NemotronHMOE: experts beside a shared one, relu^2
            p, f, fs, ne = f"blk.{il}.", m["n_ff_exp"], m["n_ff_shared"], m["n_expert"]
            w[p + "attn_norm"] = near_one(rng, e)
            w[p + "ffn_gate_inp"] = rng.standard_normal((ne, e)) / np.sqrt(e) * 1.5      # gate.weight
            w[p + "exp_probs_b_bias"] = rng.standard_normal(ne) * m["bias_std"]          # e_score_correction_bias
            w[p + "ffn_up_exps"] = rng.standard_normal((ne, f, e)) / np.sqrt(e) * 1.5
            w[p + "ffn_down_exps"] = rng.standard_normal((ne, e, f)) / np.sqrt(f)
            w[p + "ffn_up_shexp"] = rng.standard_normal((fs, e)) / np.sqrt(e) * 1.5
            w[p + "ffn_down_shexp"] = rng.standard_normal((e, fs)) / np.sqrt(fs)
            continue
        if kind == "mlp":                                                # Nemotron-H's NemotronHMLP: down(relu(up x)^2)
            p, f = f"blk.{il}.", m["n_ff"]
            w[p + "attn_norm"] = near_one(rng, e)
            w[p + "ffn_up"] = rng.standard_normal((f, e)) / np.sqrt(e) * 1.5
            w[p + "ffn_down"] = rng.standard_normal((e, f)) / np.sqrt(f)
            continue
        p = f"blk.{il}."
        w[p + "attn_norm"] = near_one(rng, e)                          # input_layernorm
        if kind == "mamba":
            w[p + "ssm_in"] = rng.standard_normal((2 * di + 2 * ng * ds + nh, e)) / np.sqrt(e)
            w[p + "ssm_conv1d"] = rng.standard_normal((ch, 1, m["conv_K"])) * 0.5
            w[p + "ssm_conv1d_bias"] = rng.standard_normal(ch) * 0.2
            w[p + "ssm_dt_bias"] = rng.uniform(-2.0, 0.5, nh)         # steps of about 0.1 to 1
            w[p + "A_log"] = np.log(rng.uniform(0.5, 4.0, nh))        # decays exp(-dt exp(A_log))
            w[p + "D"] = rng.uniform(0.5, 1.5, nh)
            w[p + "ssm_norm"] = near_one(rng, di)
            w[p + "ssm_out"] = rng.standard_normal((e, di)) / np.sqrt(di)
        else:
            w[p + "attn_q"] = rng.standard_normal((q, e)) / np.sqrt(e)
            w[p + "attn_k"] = rng.standard_normal((kv, e)) / np.sqrt(e)
            w[p + "attn_v"] = rng.standard_normal((kv, e)) / np.sqrt(e)
            w[p + "attn_output"] = rng.standard_normal((e, q)) / np.sqrt(q)
        if m["arch"] != "granitehybrid":                                # Nemotron-H: the mixer alone
            continue
        w[p + "ffn_norm"] = near_one(rng, e)                           # post_attention_layernorm
        if "moe" in m:                       # block_sparse_moe and shared_mlp
            experts_beside_shared(w, p, rng, e, m["n_expert"], m["n_ff"], m["n_ff_shared"])
        else:                                                            # shared_mlp alone: ffn_gate/up/down
            f = m["n_ff"]
            w[p + "ffn_gate"] = rng.standard_normal((f, e)) / np.sqrt(e)
            w[p + "ffn_up"] = rng.standard_normal((f, e)) / np.sqrt(e)
            w[p + "ffn_down"] = rng.standard_normal((e, f)) / np.sqrt(f)
    return w


def gh_write_keys(writer, m):
    """GraniteHybridModel.set_gguf_parameters: the Mamba-2 mixer's sizes, Granite's multipliers, rope
    on or off, the shared MLP's width."""
    di, ds, nh, ng, _, _ = gh_sizes(m)
    writer.add_ssm_conv_kernel(m["conv_K"])
    writer.add_ssm_state_size(ds)
    writer.add_ssm_group_count(ng)
    writer.add_ssm_inner_size(di)
    writer.add_ssm_time_step_rank(nh)
    if m["arch"] == "nemotron_h_moe":                  # NemotronHModel.set_gguf_parameters, is_moe
        writer.add_expert_shared_feed_forward_length(m["n_ff_shared"])
        writer.add_expert_shared_count(1)
        writer.add_expert_weights_norm(m["norm_topk"])
        writer.add_expert_weights_scale(m["routed_scale"])
        writer.add_expert_group_count(m["n_group"])
    if m["arch"] != "granitehybrid":                   # NemotronHModel: per-layer feed_forward_length (llama_writer)
        return
    writer.add_embedding_scale(m["embd_scale"])
    writer.add_attention_scale(m["attn_scale"])
    writer.add_residual_scale(m["residual_scale"])
    writer.add_logit_scale(m["logit_scale"])
    writer.add_rope_scaling_finetuned(not m.get("no_rope", False))
    if "n_ff_shared" in m:
        writer.add_expert_shared_feed_forward_length(m["n_ff_shared"])


def softplus(v):
    return np.where(v > 20.0, v, np.log1p(np.exp(np.minimum(v, 20.0))))


def silu(v):
    return v / (1.0 + np.exp(-v))


def gh_mamba2(m, w, il, h):
    """GraniteMoeHybridMambaLayer without a cache, in the state-space duality's matrix form (the
    chunked scan of torch_forward with one chunk): per head, y_i = sum_{j <= i} exp(cum_i - cum_j)
    (C_i . B_j) dt_j x_j + D x_i, cum the running sum of dt A; then gated by silu(z), RMS-normed
    per group of d_inner / n_groups (NemotronH's MambaRMSNormGated; Granite's norms all of d_inner,
    one group in every Granite 4.0-H), projected out."""
    p, t = f"blk.{il}.", h.shape[0]
    di, ds, nh, ng, ch, hd = gh_sizes(m)
    K = m["conv_K"]
    z, xbc, dt = np.split(h @ w[p + "ssm_in"].T, [di, di + ch], axis=1)
    padded = np.concatenate([np.zeros((K - 1, ch)), xbc])              # nn.Conv1d padding K - 1, first T outputs
    taps = w[p + "ssm_conv1d"][:, 0, :]                                # [ch, K]
    conv = np.stack([(padded[i:i + K] * taps.T).sum(axis=0) for i in range(t)]) + w[p + "ssm_conv1d_bias"]
    x, B, C = np.split(silu(conv), [di, di + ng * ds], axis=1)
    x, B, C = x.reshape(t, nh, hd), B.reshape(t, ng, ds), C.reshape(t, ng, ds)
    dt = softplus(dt + w[p + "ssm_dt_bias"])                           # [T, nh]; time_step_limit (0, inf)
    A = -np.exp(w[p + "A_log"])
    cum = np.cumsum(dt * A, axis=0)
    causal = np.tril(np.ones((t, t), dtype=bool))
    y = np.empty((t, nh, hd))
    for hh in range(nh):
        g = hh // (nh // ng)
        decay = np.where(causal, np.exp(np.where(causal, cum[:, None, hh] - cum[None, :, hh], 0.0)), 0.0)
        y[:, hh, :] = (decay * (C[:, g, :] @ B[:, g, :].T) * dt[None, :, hh]) @ x[:, hh, :]
    y = (y + w[p + "D"][None, :, None] * x).reshape(t, di) * silu(z)
    y = rms_norm(y.reshape(t, ng, di // ng), w[p + "ssm_norm"].reshape(ng, di // ng), m["eps"]).reshape(t, di)
    return y @ w[p + "ssm_out"].T


def nh_moe(m, w, il, h, stats):
    """NemotronHMOE: DeepSeek-V3's router (ds_route: sigmoid scores, the selection bias choosing,
    normalised, scaled) over experts down(relu(up x)^2), plus the shared expert of the same form."""
    p = f"blk.{il}."
    relu2 = lambda x, up, down: (np.maximum(x @ up.T, 0.0) ** m.get("relu_power", 2)) @ down.T   # noqa: E731
    chosen, wts = ds_route(m, w, il, h, stats)
    out = relu2(h, w[p + "ffn_up_shexp"], w[p + "ffn_down_shexp"])
    for i in range(h.shape[0]):
        for slot in range(chosen.shape[1]):
            ex = chosen[i, slot]
            out[i] += wts[i, slot] * relu2(h[i:i + 1], w[p + "ffn_up_exps"][ex], w[p + "ffn_down_exps"][ex])[0]
    return out


def nh_moe_token(m, w, p, hv):
    """One token through NemotronHMOE, written out: sigmoid scores, the k best of scores + bias,
    weights the unbiased scores normalised and scaled, relu^2 experts, the shared expert."""
    scores = [1.0 / (1.0 + math.exp(-float(row @ hv))) for row in w[p + "ffn_gate_inp"]]
    ranked = sorted(range(m["n_expert"]), key=lambda ex: -(scores[ex] + w[p + "exp_probs_b_bias"][ex]))[:m["n_expert_used"]]
    total = sum(scores[ex] for ex in ranked)

    def relu2(up, down):
        return down @ np.array([max(u, 0.0) ** 2 for u in up @ hv])

    out = relu2(w[p + "ffn_up_shexp"], w[p + "ffn_down_shexp"])
    for ex in ranked:
        out = out + scores[ex] / total * m["routed_scale"] * relu2(w[p + "ffn_up_exps"][ex], w[p + "ffn_down_exps"][ex])
    return out


def gh_ffn(m, w, il, h, stats):
    p = f"blk.{il}."
    if "moe" not in m:
        return (silu(h @ w[p + "ffn_gate"].T) * (h @ w[p + "ffn_up"].T)) @ w[p + "ffn_down"].T
    shared = (silu(h @ w[p + "ffn_gate_shexp"].T) * (h @ w[p + "ffn_up_shexp"].T)) @ w[p + "ffn_down_shexp"].T
    # GraniteMoeHybridTopKGating: the top-k logits, softmax over them (the softmax over all,
    # renormalised over the k, is the same).
    return moe(m, w, il, h, stats) + shared


def gh_forward(m, w, tokens, n_kv, n_layers, stats):
    t = len(tokens)
    pos = np.arange(n_kv - t, n_kv, dtype=np.float64)
    x = w["token_embd"][tokens] * m.get("embd_scale", 1.0)
    r = m.get("residual_scale", 1.0)
    for il in range(n_layers):
        p = f"blk.{il}."
        h = rms_norm(x, w[p + "attn_norm"], m["eps"])
        kind = m["layer_types"][il]
        if kind == "mlp" and "moe" in m:                    # NemotronHMOE
            mixed = nh_moe(m, w, il, h, stats)
        elif kind == "mlp":                                 # NemotronHMLP
            mixed = np.maximum(h @ w[p + "ffn_up"].T, 0.0) ** m.get("relu_power", 2) @ w[p + "ffn_down"].T
        else:
            mixed = gh_mamba2(m, w, il, h) if kind == "mamba" else attention(m, w, il, h, pos, n_kv)
        x = x + mixed * r
        if m["arch"] == "granitehybrid":                    # Nemotron-H's layers are the mixer alone
            x = x + gh_ffn(m, w, il, rms_norm(x, w[p + "ffn_norm"], m["eps"]), stats) * r
    x = rms_norm(x, w["output_norm"], m["eps"])
    return (x @ w["output" if "output" in w else "token_embd"].T) / m.get("logit_scale", 1.0)


def gh_forward_incremental(m, w, tokens, n_kv, n_layers):
    """Token by token as a decoder runs Granite 4.0-H: each Mamba-2 layer keeps its last K - 1
    convolution inputs and a state [n_head, head_dim, d_state] (zeros at first), updated as
    state = exp(dt A) state + dt x B^T, y = state C + D x; each attention layer appends its key and
    value to a cache of n_kv - T zero entries; rope as a complex rotation; experts looped."""
    e, nh, nkv, hd, eps = m["n_embd"], m["n_head"], m["n_head_kv"], m["head_dim"], m["eps"]
    di, ds, snh, ng, ch, shd = gh_sizes(m)
    K, r, half = m["conv_K"], m.get("residual_scale", 1.0), hd // 2
    scale = m.get("attn_scale", 1.0 / math.sqrt(hd))
    gs = di // ng

    def rms(vec, weight):
        return vec * weight / math.sqrt(float(np.dot(vec, vec)) / vec.size + eps)

    def rotate(vec, position):
        if m.get("no_rope"):
            return vec
        angles = np.array([position / (m["freq_base"] ** (2.0 * i / hd)) for i in range(half)])
        z = (vec[:half] + 1j * vec[half:]) * np.exp(1j * angles)
        return np.concatenate([z.real, z.imag])

    def sl(v):
        return v / (1.0 + math.exp(-v))

    def mlp(hv, gate, up, down):
        return down @ (np.array([sl(g) for g in gate @ hv]) * (up @ hv))

    prefix = n_kv - len(tokens)
    windows = [[np.zeros(ch) for _ in range(K - 1)] for _ in range(n_layers)]
    states = [np.zeros((snh, shd, ds)) for _ in range(n_layers)]
    caches = [[(np.zeros((nkv, hd)), np.zeros((nkv, hd)))] * prefix for _ in range(n_layers)]
    rows = []
    for i, tok in enumerate(tokens):
        position = prefix + i
        x = w["token_embd"][tok] * m.get("embd_scale", 1.0)
        for il in range(n_layers):
            p = f"blk.{il}."
            h = rms(x, w[p + "attn_norm"])
            if m["layer_types"][il] == "mlp" and "moe" in m:
                x = x + nh_moe_token(m, w, p, h)
                continue
            if m["layer_types"][il] == "mlp":
                x = x + r * (w[p + "ffn_down"] @ np.array([max(u, 0.0) ** 2 for u in w[p + "ffn_up"] @ h]))
                continue
            if m["layer_types"][il] == "mamba":
                proj = w[p + "ssm_in"] @ h
                z, xbc, dt_raw = proj[:di], proj[di:di + ch], proj[di + ch:]
                window = windows[il] + [xbc]
                windows[il] = window[1:]
                conv = np.array([sum(window[j][c] * w[p + "ssm_conv1d"][c, 0, j] for j in range(K)) for c in range(ch)])
                conv = np.array([sl(v) for v in conv + w[p + "ssm_conv1d_bias"]])
                xs, Bs, Cs = conv[:di].reshape(snh, shd), conv[di:di + ng * ds].reshape(ng, ds), conv[di + ng * ds:].reshape(ng, ds)
                y = np.zeros((snh, shd))
                for hh in range(snh):
                    g = hh // (snh // ng)
                    v = dt_raw[hh] + w[p + "ssm_dt_bias"][hh]
                    dt = v if v > 20.0 else math.log1p(math.exp(v))
                    states[il][hh] = math.exp(-dt * math.exp(w[p + "A_log"][hh])) * states[il][hh] + dt * np.outer(xs[hh], Bs[g])
                    y[hh] = states[il][hh] @ Cs[g] + w[p + "D"][hh] * xs[hh]
                y = y.reshape(di) * np.array([sl(v) for v in z])
                mixed = w[p + "ssm_out"] @ np.concatenate([rms(y[g * gs:(g + 1) * gs], w[p + "ssm_norm"][g * gs:(g + 1) * gs]) for g in range(ng)])
            else:
                qv, kv_, vv = w[p + "attn_q"] @ h, w[p + "attn_k"] @ h, w[p + "attn_v"] @ h
                qs = [rotate(qv[hh * hd:(hh + 1) * hd], position) for hh in range(nh)]
                ks = np.array([rotate(kv_[hh * hd:(hh + 1) * hd], position) for hh in range(nkv)])
                caches[il].append((ks, vv.reshape(nkv, hd)))
                attn = np.zeros(nh * hd)
                for hh in range(nh):
                    kvh = hh * nkv // nh
                    scores = [float(np.dot(qs[hh], ck[kvh])) * scale for ck, _ in caches[il]]
                    top = max(scores)
                    lse = top + math.log(sum(math.exp(sc - top) for sc in scores))
                    attn[hh * hd:(hh + 1) * hd] = sum(math.exp(sc - lse) * cv[kvh] for sc, (_, cv) in zip(scores, caches[il]))
                mixed = w[p + "attn_output"] @ attn
            x = x + r * mixed
            if m["arch"] != "granitehybrid":
                continue
            hf = rms(x, w[p + "ffn_norm"])
            if "moe" in m:
                f = chosen_experts_token(m, w, p, hf, lambda g_, u_, d_: mlp(hf, g_, u_, d_))
                f = f + mlp(hf, w[p + "ffn_gate_shexp"], w[p + "ffn_up_shexp"], w[p + "ffn_down_shexp"])
            else:
                f = mlp(hf, w[p + "ffn_gate"], w[p + "ffn_up"], w[p + "ffn_down"])
            x = x + r * f
        out = (w["output"] if "output" in w else w["token_embd"]) @ rms(x, w["output_norm"])
        rows.append(out / m.get("logit_scale", 1.0))
    return np.array(rows)


# --- qwen35 (Qwen3.5, transformers' modeling_qwen3_5: gated delta net layers among gated full
# attention layers). Checkpoint-layout keys are llama.cpp's names holding HF's tensors: norms
# zero-centred (HF multiplies by 1 + w; the converter adds 1) except the gated norm (ssm_norm),
# A_log (the converter writes -exp(A_log) as ssm_a), dt_bias, conv1d [channels, 1, K], and every
# value-head axis in HF's grouped order (the value heads of key head 0, then of key head 1, ...; the
# converter reorders them to ggml's tiled order). The recurrent states before the batch are zero.

Q35_CENTRED = ("attn_norm", "post_attention_norm", "output_norm", "attn_q_norm", "attn_k_norm")


def q35_sizes(m):
    nk, nv, d = m["lin_k_heads"], m["lin_v_heads"], m["lin_head"]
    return nk, nv, d, 2 * nk * d + nv * d


def q35_layer_is_linear(m, il):
    if "layer_types" in m:
        return m["layer_types"][il] == "linear_attention"
    return (il + 1) % m["attn_interval"] != 0


def q3n_fuse(m, parts, widths):
    """Qwen3-Next's fused projections (in_proj_qkvz, in_proj_ba): per key head, its rows of each
    part in turn; `parts` are the parts' rows for all key heads, `widths` each key head's share."""
    nk = m["lin_k_heads"]
    return np.concatenate([np.concatenate([a[g * wd:(g + 1) * wd] for a, wd in zip(parts, widths)]) for g in range(nk)])


def q3n_split(m, fused, widths):
    """q3n_fuse undone: the parts, each with all key heads' rows."""
    nk = m["lin_k_heads"]
    groups = fused.reshape(nk, sum(widths), *fused.shape[1:])
    edges = np.cumsum((0,) + tuple(widths))
    return [groups[:, a:b].reshape(nk * (b - a), *fused.shape[1:]) for a, b in zip(edges[:-1], edges[1:])]


def q3n_widths(m):
    nk, nv, d, _ = q35_sizes(m)
    r = nv // nk
    return (d, d, r * d, r * d), (r, r)


def q35_make_weights(m, rng):
    e, hd, v, f = m["n_embd"], m["head_dim"], m["n_vocab"], m["n_ff"]
    q, kv = m["n_head"] * hd, m["n_head_kv"] * hd
    nk, nv, d, ch = q35_sizes(m)
    centred = lambda n: near_one(rng, n) - 1.0   # noqa: E731
    w = {"token_embd": rng.standard_normal((v, e)) * 0.5, "output_norm": centred(e)}
    for il in range(m["n_layers"]):
        p = f"blk.{il}."
        w[p + "attn_norm"] = centred(e)                                 # input_layernorm
        if q35_layer_is_linear(m, il):
            w[p + "attn_qkv"] = rng.standard_normal((ch, e)) / np.sqrt(e) * 1.5   # in_proj_qkv
            w[p + "attn_gate"] = rng.standard_normal((nv * d, e)) / np.sqrt(e)    # in_proj_z
            w[p + "ssm_beta"] = rng.standard_normal((nv, e)) / np.sqrt(e)         # in_proj_b
            w[p + "ssm_alpha"] = rng.standard_normal((nv, e)) / np.sqrt(e)        # in_proj_a
            w[p + "ssm_conv1d"] = rng.standard_normal((ch, 1, m["conv_K"])) * 0.5
            w[p + "ssm_dt_bias"] = rng.uniform(-1.0, 1.0, nv)
            w[p + "A_log"] = np.log(rng.uniform(0.2, 2.0, nv))
            w[p + "ssm_norm"] = near_one(rng, d)                        # linear_attn.norm: not centred
            w[p + "ssm_out"] = rng.standard_normal((e, nv * d)) / np.sqrt(nv * d)
        else:
            w[p + "attn_q"] = rng.standard_normal((2 * q, e)) / np.sqrt(e)   # per head: query, then gate
            w[p + "attn_k"] = rng.standard_normal((kv, e)) / np.sqrt(e)
            w[p + "attn_v"] = rng.standard_normal((kv, e)) / np.sqrt(e)
            w[p + "attn_q_norm"], w[p + "attn_k_norm"] = centred(hd), centred(hd)
            w[p + "attn_output"] = rng.standard_normal((e, q)) / np.sqrt(q)
        if m["arch"] == "qwen3next" and q35_layer_is_linear(m, il):   # HF's fused, grouped layouts
            qkvz_w, ba_w = q3n_widths(m)
            q_, k_, v_ = np.split(w.pop(p + "attn_qkv"), [nk * d, 2 * nk * d])
            w[p + "ssm_in"] = q3n_fuse(m, (q_, k_, v_, w.pop(p + "attn_gate")), qkvz_w)   # in_proj_qkvz
            w[p + "ssm_ba"] = q3n_fuse(m, (w.pop(p + "ssm_beta"), w.pop(p + "ssm_alpha")), ba_w)  # in_proj_ba
        w[p + "post_attention_norm"] = centred(e)
        if "moe" in m:                                   # Qwen3_5MoeSparseMoeBlock
            experts_beside_shared(w, p, rng, e, m["n_expert"], m["n_ff_exp"], m["n_ff_shared"])
            w[p + "ffn_gate_inp_shexp"] = rng.standard_normal((1, e)) / np.sqrt(e) * 2.0   # shared_expert_gate [1, e]
            continue
        w[p + "ffn_gate"] = rng.standard_normal((f, e)) / np.sqrt(e)
        w[p + "ffn_up"] = rng.standard_normal((f, e)) / np.sqrt(e)
        w[p + "ffn_down"] = rng.standard_normal((e, f)) / np.sqrt(f)
    if not m["tied"]:
        w["output"] = rng.standard_normal((v, e)) / np.sqrt(e)
    return w


def q35_tiled(m, a, axis, head, inverse=False):
    """_LinearAttentionVReorderBase._reorder_v_heads: value heads from grouped (key head major) to
    tiled (key head minor) order along `axis`, each `head` wide; `inverse` undoes it. Qwen3-Next's
    converter reorders nothing: its value heads stay grouped."""
    if m["arch"] == "qwen3next":
        return a
    nk, nv, _, _ = q35_sizes(m)
    r = nv // nk
    a = np.moveaxis(a, axis, 0)
    outer = (r, nk) if inverse else (nk, r)
    a = a.reshape(*outer, head, *a.shape[1:]).swapaxes(0, 1).reshape(a.shape)
    return np.moveaxis(a, 0, axis)


def q35_to_file(m, w, inverse=False):
    """The converter's step (Qwen3_5TextModel; Qwen3NextModel, which reorders no head but splits
    in_proj_qkvz first); with `inverse`, its undoing (same keys both ways but A_log <-> ssm_a).
    Names: file names without .weight/.bias except where noted."""
    if m["arch"] == "qwen3next" and not inverse:
        w = q3n_split_qkvz(m, w)
    nk, nv, d, ch = q35_sizes(m)
    key_dim = 2 * nk * d
    out = {}
    for key, a in w.items():
        role, p = key.split(".")[-1], key[: key.rfind(".") + 1]
        if role in Q35_CENTRED:
            a = a - 1.0 if inverse else a + 1.0
        elif role == "attn_qkv":
            a = np.concatenate([a[:key_dim], q35_tiled(m, a[key_dim:], 0, d, inverse)])
        elif role == "attn_gate":
            a = q35_tiled(m, a, 0, d, inverse)
        elif role in ("ssm_beta", "ssm_alpha", "ssm_dt_bias"):
            a = q35_tiled(m, a, 0, 1, inverse)
        elif role == "A_log":                                   # -> ssm_a = -exp(A_log), tiled
            out[p + "ssm_a"] = q35_tiled(m, -np.exp(a), 0, 1)
            continue
        elif role == "ssm_a" and inverse:
            out[p + "A_log"] = np.log(-q35_tiled(m, a, 0, 1, inverse=True))
            continue
        elif role == "ssm_conv1d":                              # [ch, 1, K] squeezed; V channels tiled
            a = a[:, 0, :] if not inverse else a
            a = np.concatenate([a[:key_dim], q35_tiled(m, a[key_dim:], 0, d, inverse)])
            a = a[:, None, :] if inverse else a
        elif role == "ssm_out":                                 # its columns are the value heads'
            a = q35_tiled(m, a, 1, d, inverse)
        out[key if inverse else tensor_name(key)] = a
    if m["arch"] == "qwen3next" and inverse:
        out = q3n_fuse_qkvz(m, out)
    return out


def q3n_split_qkvz(m, w):
    """Qwen3NextModel.modify_tensors' own step before the rest of q35_to_file: in_proj_qkvz split into
    attn_qkv (q, k, v of all heads) and attn_gate (z), unless the file keeps it whole as ssm_in (older
    converters); in_proj_ba stays whole as ssm_ba."""
    if m.get("fused_ssm_in"):
        return w
    qkvz_w, _ = q3n_widths(m)
    out = {}
    for key, a in w.items():
        if key.endswith(".ssm_in"):
            p = key[: -len("ssm_in")]
            q_, k_, v_, z_ = q3n_split(m, a, qkvz_w)
            out[p + "attn_qkv"], out[p + "attn_gate"] = np.concatenate([q_, k_, v_]), z_
        else:
            out[key] = a
    return out


def q3n_fuse_qkvz(m, w):
    """q3n_split_qkvz undone: attn_qkv and attn_gate back into HF's in_proj_qkvz (ssm_in)."""
    qkvz_w, _ = q3n_widths(m)
    nk, _, d, _ = q35_sizes(m)
    out = {}
    for key, a in w.items():
        if key.endswith(".attn_gate"):
            continue
        if key.endswith(".attn_qkv"):
            p = key[: -len("attn_qkv")]
            q_, k_, v_ = np.split(a, [nk * d, 2 * nk * d])
            out[p + "ssm_in"] = q3n_fuse(m, (q_, k_, v_, w[p + "attn_gate"]), qkvz_w)
        else:
            out[key] = a
    return out


def q35_from_file(m, tensors):
    w = {}
    for name, a in tensors.items():
        if name.endswith(".ssm_a"):
            key = name
        elif name.endswith(".weight"):
            key = name[: -len(".weight")]
        else:
            key = name[: -len(".bias")] + "_bias"
        w[key] = a
    return q35_to_file(m, w, inverse=True)


def q35_write_keys(writer, m):
    """Qwen3NextModel.set_gguf_parameters and the Qwen3.5 mixins: the delta net's sizes, the full
    attention interval, the partial rope's dims and sections."""
    nk, nv, d, _ = q35_sizes(m)
    writer.add_ssm_conv_kernel(m["conv_K"])
    writer.add_ssm_state_size(d)
    writer.add_ssm_group_count(nk)
    writer.add_ssm_time_step_rank(nv)
    writer.add_ssm_inner_size(d * nv)
    if "layer_types" in m:                          # attention.recurrent_layers, as the converter writes it
        writer.add_array(f"{m['arch']}.attention.recurrent_layers", [t == "linear_attention" for t in m["layer_types"]])
    writer.add_full_attention_interval(m["attn_interval"])
    writer.add_rope_dimension_count(m["rot_dims"])
    if m["arch"] != "qwen3next":                    # Qwen3-Next's rope is plain neox
        writer.add_rope_dimension_sections([m["rot_dims"] // 4, m["rot_dims"] // 4, 0, 0])
    if "moe" in m:
        writer.add_expert_shared_feed_forward_length(m["n_ff_shared"])


def l2norm(x, eps=1e-6):
    """transformers' (and FLA's) l2norm: x / sqrt(sum x^2 + eps)."""
    return x / np.sqrt((x * x).sum(axis=-1, keepdims=True) + eps)


def q35_partial_rope(m, x, pos):
    r = m["rot_dims"]
    return np.concatenate([rope_rotate_half(x[..., :r], pos, m["freq_base"], 1.0, 1.0), x[..., r:]], axis=-1)


def q35_attention(m, w, il, h, pos, n_kv):
    """Qwen3_5Attention: the query and its gate from q_proj (per head side by side), zero-centred
    q/k norms, partial rope, softmax over a cache of n_kv - T zero entries, the output times
    sigmoid(gate)."""
    t, nh, nkv, hd = h.shape[0], m["n_head"], m["n_head_kv"], m["head_dim"]
    p = f"blk.{il}."
    qg = (h @ w[p + "attn_q"].T).reshape(t, nh, 2 * hd)
    q, gate = qg[..., :hd], qg[..., hd:].reshape(t, nh * hd)
    k, v = (h @ w[p + "attn_k"].T).reshape(t, nkv, hd), (h @ w[p + "attn_v"].T).reshape(t, nkv, hd)
    q = q35_partial_rope(m, rms_norm(q, 1.0 + w[p + "attn_q_norm"], m["eps"]), pos)
    k = q35_partial_rope(m, rms_norm(k, 1.0 + w[p + "attn_k_norm"], m["eps"]), pos)
    prefix = n_kv - t
    k = np.concatenate([np.zeros((prefix, nkv, hd)), k])
    v = np.concatenate([np.zeros((prefix, nkv, hd)), v])
    kh, vh = np.repeat(k, nh // nkv, axis=1), np.repeat(v, nh // nkv, axis=1)
    s = np.einsum("thd,shd->hts", q, kh) / np.sqrt(hd)
    s = np.where((np.arange(n_kv)[None, :] <= pos[:, None])[None], s, -np.inf)
    e = np.exp(s - s.max(axis=2, keepdims=True))
    out = np.einsum("hts,shd->thd", e / e.sum(axis=2, keepdims=True), vh).reshape(t, nh * hd)
    return (out / (1.0 + np.exp(-gate))) @ w[p + "attn_output"].T


def q35_chunk_delta_rule(q, k, v, g, beta, chunk):
    """transformers' torch_chunk_gated_delta_rule (q, k L2-normed already; zero initial state): per
    chunk, the WY form of the delta rule's writes (a triangular solve by forward substitution), the
    chunk's outputs from the state before it plus its own causal part, then the state passed on.
    q, k, v [T, H, d]; g (log-decay) and beta [T, H] -> [T, H, d]."""
    t, heads, d = q.shape
    pad = (-t) % chunk
    padded = lambda a: np.concatenate([a, np.zeros((pad, *a.shape[1:]))])   # noqa: E731
    q, k, v, g, beta = (padded(a) for a in (q / np.sqrt(d), k, v, g, beta))
    out = np.zeros_like(v)
    strictly_lower = np.tril(np.ones((chunk, chunk)), -1)
    lower = np.tril(np.ones((chunk, chunk)))
    for hh in range(heads):
        state = np.zeros((d, v.shape[2]))
        for c0 in range(0, t + pad, chunk):
            sl = slice(c0, c0 + chunk)
            qc, kc, vc, bc = q[sl, hh], k[sl, hh], v[sl, hh], beta[sl, hh]
            gc = np.cumsum(g[sl, hh])
            decay = np.exp(np.tril(gc[:, None] - gc[None, :])) * lower
            kb, vb = kc * bc[:, None], vc * bc[:, None]
            a = -(kb @ kc.T) * decay * strictly_lower
            for i in range(1, chunk):
                a[i, :i] = a[i, :i] + (a[i, :i, None] * a[:i, :i]).sum(axis=0)
            a = a + np.eye(chunk)
            u, w_ = a @ vb, a @ (kb * np.exp(gc)[:, None])
            v_new = u - w_ @ state
            out[sl, hh] = (qc * np.exp(gc)[:, None]) @ state + ((qc @ kc.T) * decay) @ v_new
            state = state * np.exp(gc[-1]) + (kc * np.exp(gc[-1] - gc)[:, None]).T @ v_new
    return out[:t]


def q35_projections(m, w, p, h):
    """The delta net's projections of h [T, e]: the convolution's input (q, k, v of all heads)
    [T, ch], z [T, nv d], b and a [T, nv]. Qwen3-Next's come fused, per key head (HF's
    fix_query_key_value_ordering undoes that)."""
    if m["arch"] != "qwen3next":
        return h @ w[p + "attn_qkv"].T, h @ w[p + "attn_gate"].T, h @ w[p + "ssm_beta"].T, h @ w[p + "ssm_alpha"].T
    qkvz_w, ba_w = q3n_widths(m)
    t = h.shape[0]
    nk = m["lin_k_heads"]
    qkvz = (h @ w[p + "ssm_in"].T).reshape(t, nk, sum(qkvz_w))
    q, k, v, z = np.split(qkvz, np.cumsum(qkvz_w)[:-1], axis=2)
    ba = (h @ w[p + "ssm_ba"].T).reshape(t, nk, sum(ba_w))
    b, a = np.split(ba, [ba_w[0]], axis=2)
    flat = lambda x: x.reshape(t, -1)   # noqa: E731
    return np.concatenate([flat(q), flat(k), flat(v)], axis=1), flat(z), flat(b), flat(a)


def q35_linear(m, w, il, h):
    """Qwen3_5GatedDeltaNet without a cache: in_proj_qkv through a causal depthwise convolution
    (no bias) and silu; q, k L2-normed and each repeated to its value heads (repeat_interleave:
    HF's grouped order); beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias); the chunked
    delta rule; an RMS norm per head times silu(z); out_proj."""
    p, t = f"blk.{il}.", h.shape[0]
    nk, nv, d, ch = q35_sizes(m)
    K = m["conv_K"]
    mixed, z, b, a = q35_projections(m, w, p, h)
    padded_in = np.concatenate([np.zeros((K - 1, ch)), mixed])
    taps = w[p + "ssm_conv1d"][:, 0, :]
    conv = silu(np.stack([(padded_in[i:i + K] * taps.T).sum(axis=0) for i in range(t)]))
    q, k, v = np.split(conv, [nk * d, 2 * nk * d], axis=1)
    q = np.repeat(l2norm(q.reshape(t, nk, d)), nv // nk, axis=1)
    k = np.repeat(l2norm(k.reshape(t, nk, d)), nv // nk, axis=1)
    v = v.reshape(t, nv, d)
    beta = 1.0 / (1.0 + np.exp(-b))
    g = -np.exp(w[p + "A_log"]) * softplus(a + w[p + "ssm_dt_bias"])
    core = q35_chunk_delta_rule(q, k, v, g, beta, m["chunk"])
    o = rms_norm(core, w[p + "ssm_norm"], m["eps"]) * silu(z.reshape(t, nv, d))
    return o.reshape(t, nv * d) @ w[p + "ssm_out"].T


def q35_ffn(m, w, il, hf, stats):
    p = f"blk.{il}."
    if "moe" not in m:
        return (silu(hf @ w[p + "ffn_gate"].T) * (hf @ w[p + "ffn_up"].T)) @ w[p + "ffn_down"].T
    shared = (silu(hf @ w[p + "ffn_gate_shexp"].T) * (hf @ w[p + "ffn_up_shexp"].T)) @ w[p + "ffn_down_shexp"].T
    gate = 1.0 / (1.0 + np.exp(-(hf @ w[p + "ffn_gate_inp_shexp"].T)))          # [T, 1]
    return moe(m, w, il, hf, stats) + shared * gate


def q35_forward(m, w, tokens, n_kv, n_layers, stats):
    t = len(tokens)
    pos = np.arange(n_kv - t, n_kv, dtype=np.float64)
    x = w["token_embd"][tokens]
    for il in range(n_layers):
        p = f"blk.{il}."
        h = rms_norm(x, 1.0 + w[p + "attn_norm"], m["eps"])
        x = x + (q35_linear(m, w, il, h) if q35_layer_is_linear(m, il) else q35_attention(m, w, il, h, pos, n_kv))
        x = x + q35_ffn(m, w, il, rms_norm(x, 1.0 + w[p + "post_attention_norm"], m["eps"]), stats)
    return rms_norm(x, 1.0 + w["output_norm"], m["eps"]) @ w["output" if "output" in w else "token_embd"].T


def q35_forward_incremental(m, w, tokens, n_kv, n_layers):
    """Token by token as transformers' torch_recurrent_gated_delta_rule decodes: per value head a
    state [d, d] (zeros at first) decayed by exp(g), corrected by beta (v - S^T k) k^T, read by
    q / sqrt(d); the convolution's last K - 1 inputs kept; value heads read key head h // (nv / nk);
    attention appends to a cache of n_kv - T zero entries; rope as a complex rotation."""
    e, nh, nkv, hd, eps = m["n_embd"], m["n_head"], m["n_head_kv"], m["head_dim"], m["eps"]
    nk, nv, d, ch = q35_sizes(m)
    K, r = m["conv_K"], m["rot_dims"]

    def rms(vec, weight):
        return vec * weight / math.sqrt(float(np.dot(vec, vec)) / vec.size + eps)

    def rotate(vec, position):
        half = r // 2
        angles = np.array([position / (m["freq_base"] ** (2.0 * i / r)) for i in range(half)])
        z = (vec[:half] + 1j * vec[half:r]) * np.exp(1j * angles)
        return np.concatenate([z.real, z.imag, vec[r:]])

    def sl(val):
        return val / (1.0 + math.exp(-val))

    prefix = n_kv - len(tokens)
    windows = [[np.zeros(ch) for _ in range(K - 1)] for _ in range(n_layers)]
    states = [np.zeros((nv, d, d)) for _ in range(n_layers)]
    caches = [[(np.zeros((nkv, hd)), np.zeros((nkv, hd)))] * prefix for _ in range(n_layers)]
    rows = []
    for i, tok in enumerate(tokens):
        position = prefix + i
        x = w["token_embd"][tok].copy()
        for il in range(n_layers):
            p = f"blk.{il}."
            h = rms(x, 1.0 + w[p + "attn_norm"])
            if q35_layer_is_linear(m, il):
                mixed, z, b, a_ = (row[0] for row in q35_projections(m, w, p, h[None]))
                window = windows[il] + [mixed]
                windows[il] = window[1:]
                conv = np.array([sl(sum(window[j][c] * w[p + "ssm_conv1d"][c, 0, j] for j in range(K))) for c in range(ch)])
                out = np.zeros((nv, d))
                for hh in range(nv):
                    kh = hh // (nv // nk)
                    qv, kv_ = conv[kh * d:(kh + 1) * d], conv[nk * d + kh * d:nk * d + (kh + 1) * d]
                    qv = qv / math.sqrt(float(np.dot(qv, qv)) + 1e-6) / math.sqrt(d)
                    kv_ = kv_ / math.sqrt(float(np.dot(kv_, kv_)) + 1e-6)
                    vv = conv[2 * nk * d + hh * d:2 * nk * d + (hh + 1) * d]
                    a = float(a_[hh]) + w[p + "ssm_dt_bias"][hh]
                    g = -math.exp(w[p + "A_log"][hh]) * (a if a > 20.0 else math.log1p(math.exp(a)))
                    beta = 1.0 / (1.0 + math.exp(-float(b[hh])))
                    S = states[il][hh] * math.exp(g)
                    S = S + np.outer(kv_, (vv - S.T @ kv_) * beta)
                    states[il][hh] = S
                    o = S.T @ qv
                    gate = z[hh * d:(hh + 1) * d]
                    out[hh] = rms(o, w[p + "ssm_norm"]) * np.array([sl(gg) for gg in gate])
                x = x + w[p + "ssm_out"] @ out.reshape(nv * d)
            else:
                qg = w[p + "attn_q"] @ h
                kv_, vv = w[p + "attn_k"] @ h, w[p + "attn_v"] @ h
                qs = [rotate(rms(qg[2 * hh * hd:(2 * hh + 1) * hd], 1.0 + w[p + "attn_q_norm"]), position) for hh in range(nh)]
                gates = [qg[(2 * hh + 1) * hd:(2 * hh + 2) * hd] for hh in range(nh)]
                ks = np.array([rotate(rms(kv_[hh * hd:(hh + 1) * hd], 1.0 + w[p + "attn_k_norm"]), position) for hh in range(nkv)])
                caches[il].append((ks, vv.reshape(nkv, hd)))
                attn = np.zeros(nh * hd)
                for hh in range(nh):
                    kvh = hh * nkv // nh
                    scores = [float(np.dot(qs[hh], ck[kvh])) / math.sqrt(hd) for ck, _ in caches[il]]
                    top = max(scores)
                    lse = top + math.log(sum(math.exp(sc - top) for sc in scores))
                    o = sum(math.exp(sc - lse) * cv[kvh] for sc, (_, cv) in zip(scores, caches[il]))
                    attn[hh * hd:(hh + 1) * hd] = o * np.array([1.0 / (1.0 + math.exp(-gg)) for gg in gates[hh]])
                x = x + w[p + "attn_output"] @ attn
            hf = rms(x, 1.0 + w[p + "post_attention_norm"])

            def mlp(gate_w, up_w, down_w):
                return down_w @ (np.array([sl(gg) for gg in gate_w @ hf]) * (up_w @ hf))

            if "moe" in m:
                f = chosen_experts_token(m, w, p, hf, mlp)
                gate = 1.0 / (1.0 + math.exp(-float(w[p + "ffn_gate_inp_shexp"][0] @ hf)))
                f = f + gate * mlp(w[p + "ffn_gate_shexp"], w[p + "ffn_up_shexp"], w[p + "ffn_down_shexp"])
            else:
                f = mlp(w[p + "ffn_gate"], w[p + "ffn_up"], w[p + "ffn_down"])
            x = x + f
        rows.append((w["output"] if "output" in w else w["token_embd"]) @ rms(x, 1.0 + w["output_norm"]))
    return np.array(rows)


# --- deepseek2 (DeepSeek-V2/V3 layout: MLA attention, grouped sigmoid-routed MoE, shared expert) ---
# Checkpoint-layout keys are llama.cpp's names, except attn_kv_b: HF's kv_b_proj [n_head * (qk_nope +
# v_head), kv_lora_rank], which the converter splits into attn_k_b (transposed) and attn_v_b.

def ds_make_weights(m, rng):
    e, v, h = m["n_embd"], m["n_vocab"], m["n_head"]
    qr, kvr, nope, rope, vh = m["q_lora_rank"], m["kv_lora_rank"], m["qk_nope"], m["qk_rope"], m["v_head"]
    w = {"token_embd": rng.standard_normal((v, e)) * 0.5, "output_norm": near_one(rng, e),
         "output": rng.standard_normal((v, e)) / np.sqrt(e)}
    for il in range(m["n_layers"]):
        p = f"blk.{il}."
        w[p + "attn_norm"] = near_one(rng, e)
        w[p + "attn_q_a"] = rng.standard_normal((qr, e)) / np.sqrt(e)               # q_a_proj
        w[p + "attn_q_a_norm"] = near_one(rng, qr)                                   # q_a_layernorm
        w[p + "attn_q_b"] = rng.standard_normal((h * (nope + rope), qr)) / np.sqrt(qr) * 1.5   # q_b_proj
        w[p + "attn_kv_a_mqa"] = rng.standard_normal((kvr + rope, e)) / np.sqrt(e) * 1.5  # kv_a_proj_with_mqa
        w[p + "attn_kv_a_norm"] = near_one(rng, kvr)                                 # kv_a_layernorm
        w[p + "attn_kv_b"] = rng.standard_normal((h * (nope + vh), kvr)) / np.sqrt(kvr)   # kv_b_proj
        w[p + "attn_output"] = rng.standard_normal((e, h * vh)) / np.sqrt(h * vh)    # o_proj
        w[p + "ffn_norm"] = near_one(rng, e)                                         # post_attention_layernorm
        if il < m["n_dense_lead"]:
            f = m["n_ff"]
            w[p + "ffn_gate"] = rng.standard_normal((f, e)) / np.sqrt(e)
            w[p + "ffn_up"] = rng.standard_normal((f, e)) / np.sqrt(e)
            w[p + "ffn_down"] = rng.standard_normal((e, f)) / np.sqrt(f)
        else:
            ne, f, fs = m["n_expert"], m["n_ff_exp"], m["n_ff_exp"] * m["n_shared"]
            w[p + "ffn_gate_inp"] = rng.standard_normal((ne, e)) / np.sqrt(e) * 1.5      # mlp.gate.weight
            w[p + "exp_probs_b_bias"] = rng.standard_normal(ne) * m["bias_std"]          # e_score_correction_bias
            w[p + "ffn_gate_exps"] = rng.standard_normal((ne, f, e)) / np.sqrt(e)
            w[p + "ffn_up_exps"] = rng.standard_normal((ne, f, e)) / np.sqrt(e)
            w[p + "ffn_down_exps"] = rng.standard_normal((ne, e, f)) / np.sqrt(f)
            w[p + "ffn_gate_shexp"] = rng.standard_normal((fs, e)) / np.sqrt(e)         # shared_experts
            w[p + "ffn_up_shexp"] = rng.standard_normal((fs, e)) / np.sqrt(e)
            w[p + "ffn_down_shexp"] = rng.standard_normal((e, fs)) / np.sqrt(fs)
    return w


def ds_write_keys(writer, m):
    """The keys DeepseekV2Model (and TextModel before it) writes from a DeepSeek-V3 config.json, after
    llama_writer's common ones (block_count, context_length, embedding_length, feed_forward_length =
    the dense intermediate_size, head_count, head_count_kv = 1, layer_norm_rms_epsilon, tokenizer.ggml.model
    "none", vocab_size); write_gguf
    adds rope.freq_base and the generator tag."""
    if "yarn" in m:                                          # config rope_scaling {"type": "yarn", ...}
        y = m["yarn"]
        writer.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        writer.add_rope_scaling_factor(y["factor"])
        writer.add_rope_scaling_orig_ctx_len(y["orig_context"])
        writer.add_rope_scaling_yarn_beta_fast(y["beta_fast"])
        writer.add_rope_scaling_yarn_beta_slow(y["beta_slow"])
    writer.add_expert_count(m["n_expert"])
    writer.add_expert_used_count(m["n_expert_used"])
    writer.add_expert_group_count(m["n_group"])
    writer.add_expert_group_used_count(m["topk_group"])
    writer.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)   # scoring_func "sigmoid": 2
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_leading_dense_block_count(m["n_dense_lead"])             # first_k_dense_replace
    writer.add_q_lora_rank(m["q_lora_rank"])
    writer.add_kv_lora_rank(m["kv_lora_rank"])
    writer.add_key_length(m["kv_lora_rank"] + m["qk_rope"])            # the MQA view of MLA: latent + rope
    writer.add_value_length(m["kv_lora_rank"])
    writer.add_key_length_mla(m["qk_nope"] + m["qk_rope"])             # the decompressed heads
    writer.add_value_length_mla(m["v_head"])
    writer.add_expert_feed_forward_length(m["n_ff_exp"])
    writer.add_expert_shared_count(m["n_shared"])
    writer.add_expert_weights_scale(m["routed_scale"])                 # routed_scaling_factor
    if m["norm_topk"]:
        writer.add_expert_weights_norm(True)                           # norm_topk_prob
    writer.add_rope_dimension_count(m["qk_rope"])
    if "yarn" in m and m["yarn"].get("mscale_all_dim") is not None:
        writer.add_rope_scaling_yarn_log_mul(0.1 * m["yarn"]["mscale_all_dim"])   # [TAG_DEEPSEEK2_YARN_LOG_MUL_FIX]


def ds_read_keys(reader, m):
    """The values llama.cpp reads from the file (float32 as stored) for the second formulation."""
    a = m["arch"]
    f = {"freq_base": read_scalar(reader, f"{a}.rope.freq_base"), "n_rot": read_scalar(reader, f"{a}.rope.dimension_count"),
         "head_k": read_scalar(reader, f"{a}.attention.key_length_mla"), "scale": read_scalar(reader, f"{a}.expert_weights_scale"),
         "norm": bool(read_scalar(reader, f"{a}.expert_weights_norm")), "n_group": read_scalar(reader, f"{a}.expert_group_count"),
         "group_used": read_scalar(reader, f"{a}.expert_group_used_count"), "eps": read_scalar(reader, f"{a}.attention.layer_norm_rms_epsilon"),
         "rope_type": "none", "freq_scale": 1.0, "log_mul": 0.0}
    assert read_scalar(reader, f"{a}.expert_gating_func") == 2
    if f"{a}.rope.scaling.type" in reader.fields:
        field = reader.fields[f"{a}.rope.scaling.type"]
        f["rope_type"] = bytes(field.parts[field.data[0]]).decode()
        f["freq_scale"] = 1.0 / read_scalar(reader, f"{a}.rope.scaling.factor")
        f["n_ctx_orig"] = read_scalar(reader, f"{a}.rope.scaling.original_context_length")
    if f"{a}.rope.scaling.yarn_log_multiplier" in reader.fields:
        # llama.cpp divides by 0.1f in float32, which gives back mscale_all_dim exactly here
        f["log_mul"] = float(np.float32(read_scalar(reader, f"{a}.rope.scaling.yarn_log_multiplier")) / np.float32(0.1))
    return f


def ds_yarn_get_mscale(scale, mscale):
    return 1.0 if scale <= 1.0 else 0.1 * mscale * math.log(scale) + 1.0


def ds_hf_rope_tables(m):
    """(inv_freq [qk_rope/2], cos/sin multiplier, softmax scale) as DeepSeek-V3's modeling_deepseek.py
    (DeepseekV3RotaryEmbedding / DeepseekV3YarnRotaryEmbedding, DeepseekV3Attention) computes them."""
    dim, base = m["qk_rope"], m["freq_base"]
    freq_extra = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    softmax_scale = (m["qk_nope"] + m["qk_rope"]) ** -0.5
    if "yarn" not in m:
        return freq_extra, 1.0, softmax_scale
    y = m["yarn"]
    s = y["factor"]
    freq_inter = 1.0 / (s * base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))

    def corr_dim(num_rot):                                   # yarn_find_correction_dim
        return (dim * math.log(y["orig_context"] / (num_rot * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(corr_dim(y["beta_fast"])), 0)     # yarn_find_correction_range
    high = min(math.ceil(corr_dim(y["beta_slow"])), dim - 1)
    if "ramp_override" in m:                                 # self-check variants only
        ramp = np.full(dim // 2, m["ramp_override"])
    else:                                                    # yarn_linear_ramp_mask
        ramp = np.clip((np.arange(dim // 2) - low) / ((high + 0.001 if low == high else high) - low), 0.0, 1.0)
    inv_freq_mask = 1.0 - ramp
    inv_freq = freq_inter * (1.0 - inv_freq_mask) + freq_extra * inv_freq_mask
    cos_scale = ds_yarn_get_mscale(s, y["mscale"]) / ds_yarn_get_mscale(s, y["mscale_all_dim"])
    if y.get("mscale_all_dim"):
        softmax_scale *= ds_yarn_get_mscale(s, y["mscale_all_dim"]) ** 2
    return inv_freq, cos_scale, softmax_scale


def ds_hf_rope(x, pos, inv_freq, cos_scale):
    """modeling_deepseek's apply_rotary_pos_emb: de-interleave the last dim (x0 x2 .. x1 x3 ..), then
    rotate-half with cos/sin of cat(freqs, freqs). x [T, heads, d]; returns the de-interleaved order."""
    t, hh, d = x.shape
    ang = pos[:, None] * inv_freq[None, :]
    emb = np.concatenate([ang, ang], axis=-1)
    cos, sin = (np.cos(emb) * cos_scale)[:, None, :], (np.sin(emb) * cos_scale)[:, None, :]
    x = x.reshape(t, hh, d // 2, 2).swapaxes(2, 3).reshape(t, hh, d)
    rot = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
    return x * cos + rot * sin


def ds_attention(m, w, il, h, pos, n_kv):
    """DeepseekV3Attention (eager, q_lora_rank > 0) over a cache of n_kv - T zero keys/values first."""
    t, nh = h.shape[0], m["n_head"]
    nope, rope, vh, kvr = m["qk_nope"], m["qk_rope"], m["v_head"], m["kv_lora_rank"]
    p = f"blk.{il}."
    q = rms_norm(h @ w[p + "attn_q_a"].T, w[p + "attn_q_a_norm"], m["eps"]) @ w[p + "attn_q_b"].T
    q = q.reshape(t, nh, nope + rope)
    q_nope, q_pe = q[..., :nope], q[..., nope:]
    ckv = h @ w[p + "attn_kv_a_mqa"].T
    compressed, k_pe = ckv[:, :kvr], ckv[:, kvr:].reshape(t, 1, rope)
    kv = (rms_norm(compressed, w[p + "attn_kv_a_norm"], m["eps"]) @ w[p + "attn_kv_b"].T).reshape(t, nh, nope + vh)
    k_nope, value = kv[..., :nope], kv[..., nope:]
    inv_freq, cos_scale, softmax_scale = ds_hf_rope_tables(m)
    q_pe, k_pe = ds_hf_rope(q_pe, pos, inv_freq, cos_scale), ds_hf_rope(k_pe, pos, inv_freq, cos_scale)
    qs = np.concatenate([q_nope, q_pe], axis=-1)
    ks = np.concatenate([k_nope, np.broadcast_to(k_pe, (t, nh, rope))], axis=-1)
    prefix = n_kv - t
    ks = np.concatenate([np.zeros((prefix, nh, nope + rope)), ks])
    value = np.concatenate([np.zeros((prefix, nh, vh)), value])
    s = np.einsum("thd,shd->hts", qs, ks) * softmax_scale
    s = np.where((np.arange(n_kv)[None, :] <= pos[:, None])[None], s, -np.inf)
    e = np.exp(s - s.max(axis=2, keepdims=True))
    out = np.einsum("hts,shd->thd", e / e.sum(axis=2, keepdims=True), value).reshape(t, nh * vh)
    return out @ w[p + "attn_output"].T


def ds_mlp(h, gate, up, down):
    g = h @ gate.T
    return (g / (1.0 + np.exp(-g)) * (h @ up.T)) @ down.T


def ds_route(m, w, il, h, stats):
    """DeepSeek-V3's MoEGate (noaux_tc): sigmoid scores; choice scores = scores + e_score_correction_bias;
    a group's score is the sum of its top-2 choice scores; the topk_group best groups stay, the other
    experts' choice scores become 0.0; top-k of those; weights = the unbiased scores of the chosen,
    divided by their sum (norm_topk_prob), times routed_scaling_factor. Returns (chosen, weights)."""
    p = f"blk.{il}."
    ne, k, ng, kg = m["n_expert"], m["n_expert_used"], m["n_group"], m["topk_group"]
    scores = 1.0 / (1.0 + np.exp(-(h @ w[p + "ffn_gate_inp"].T)))
    choice = scores + (w[p + "exp_probs_b_bias"] if m.get("use_bias", True) else 0.0)
    t = h.shape[0]
    if ng > 1:
        group_scores = np.sort(choice.reshape(t, ng, ne // ng), axis=2)[:, :, -2:].sum(axis=2)
        g_order = np.argsort(-group_scores, axis=1, kind="stable")
        keep = np.zeros((t, ng), dtype=bool)
        np.put_along_axis(keep, g_order[:, :kg], True, 1)
        allowed = np.repeat(keep, ne // ng, axis=1)
        sg = np.sort(group_scores, axis=1)[:, ::-1]
        stats["group_gap"] = min(stats.get("group_gap", np.inf), float((sg[:, kg - 1] - sg[:, kg]).min()))
    else:
        allowed = np.ones((t, ne), dtype=bool)
    masked = np.where(allowed, choice, 0.0)
    chosen = np.argsort(-masked, axis=1, kind="stable")[:, :k]
    # margins (as llama.cpp masks with -inf rather than 0.0, the k-th choice must also be > 0)
    ranked = np.sort(np.where(allowed, choice, -np.inf), axis=1)[:, ::-1]
    stats["expert_gap"] = min(stats.get("expert_gap", np.inf), float((ranked[:, k - 1] - ranked[:, k]).min()))
    stats["kth_choice"] = min(stats.get("kth_choice", np.inf), float(ranked[:, k - 1].min()))
    # how often the groups and the bias decide something (self-check wants both to matter)
    free = np.sort(np.argsort(-choice, axis=1, kind="stable")[:, :k], axis=1)
    unbiased = np.sort(np.argsort(-np.where(allowed, scores, -np.inf), axis=1, kind="stable")[:, :k], axis=1)
    mine = np.sort(chosen, axis=1)
    stats["group_decides"] = stats.get("group_decides", 0) + int((free != mine).any(axis=1).sum())
    stats["bias_decides"] = stats.get("bias_decides", 0) + int((unbiased != mine).any(axis=1).sum())
    wts = np.take_along_axis(choice if m.get("bias_in_weights") else scores, chosen, 1)
    if m["norm_topk"]:
        wts = wts / (wts.sum(axis=1, keepdims=True) + m.get("norm_eps", 1e-20))   # LFM2-MoE's is 1e-6
    return chosen, wts * m["routed_scale"]


def ds_ffn(m, w, il, h, stats):
    p = f"blk.{il}."
    if il < m["n_dense_lead"]:
        return ds_mlp(h, w[p + "ffn_gate"], w[p + "ffn_up"], w[p + "ffn_down"])
    chosen, wts = ds_route(m, w, il, h, stats)
    dense = np.zeros((h.shape[0], m["n_expert"]))
    np.put_along_axis(dense, chosen, wts, 1)
    out = np.zeros_like(h)
    for ex in range(m["n_expert"]):
        out += dense[:, ex:ex + 1] * ds_mlp(h, w[p + "ffn_gate_exps"][ex], w[p + "ffn_up_exps"][ex], w[p + "ffn_down_exps"][ex])
    if m.get("use_shared", True):
        out += ds_mlp(h, w[p + "ffn_gate_shexp"], w[p + "ffn_up_shexp"], w[p + "ffn_down_shexp"])
    return out


def ds_forward(m, w, tokens, n_kv, n_layers, stats):
    t = len(tokens)
    pos = np.arange(n_kv - t, n_kv, dtype=np.float64)
    x = w["token_embd"][tokens]
    for il in range(n_layers):
        p = f"blk.{il}."
        x = x + ds_attention(m, w, il, rms_norm(x, w[p + "attn_norm"], m["eps"]), pos, n_kv)
        x = x + ds_ffn(m, w, il, rms_norm(x, w[p + "ffn_norm"], m["eps"]), stats)
    return rms_norm(x, w["output_norm"], m["eps"]) @ w["output"].T


def ds_forward_incremental(m, w, tokens, n_kv, n_layers):
    """llama.cpp's formulation, token by token: the MLA cache holds the normed latent and the roped
    k_pe (n_kv - T zero entries first); q_nope is absorbed through attn_k_b, the latent output
    decompressed through attn_v_b (the file's split tensors); ggml's normal rope on adjacent pairs
    as complex rotations with ggml's YaRN (rope_yarn, corr dims) and llama.cpp's attn_factor /
    kq_scale arithmetic; routing with -inf masking, per-token loops. Hyperparameters come from the
    file's keys (m["file"])."""
    f = m["file"]
    nh, e = m["n_head"], m["n_embd"]
    nope, kvr, vh = m["qk_nope"], m["kv_lora_rank"], m["v_head"]
    n_rot, base, eps = f["n_rot"], f["freq_base"], f["eps"]
    # llama_context: freq_scale, ext_factor, yarn_attn_factor
    yarn = f["rope_type"] == "yarn"
    freq_scale = f["freq_scale"] if f["rope_type"] in ("yarn", "linear") else 1.0
    ext_factor = 1.0 if yarn else 0.0
    attn_factor = 1.0
    if ext_factor != 0.0:
        factor = 1.0 / freq_scale

        def get_mscale(scale, msc):
            return 1.0 if scale <= 1.0 else 0.1 * msc * math.log(scale) + 1.0
        if f["log_mul"] != 0.0:
            msc = f["log_mul"] if f["log_mul"] != 1.0 else 1.0   # deepseek2: mscale taken as mscale_all_dim
            attn_factor = get_mscale(factor, msc) / get_mscale(factor, f["log_mul"])
        else:
            attn_factor = get_mscale(factor, 1.0)
        attn_factor *= 1.0 / (1.0 + 0.1 * math.log(factor))
    # deepseek2 graph: undo the adjustment, pre-scale kq_scale
    attn_factor_org = attn_factor * (1.0 + 0.1 * math.log(1.0 / freq_scale))
    msc = attn_factor_org * (1.0 + 0.1 * f["log_mul"] * math.log(1.0 / freq_scale))
    kq_scale = msc * msc / math.sqrt(f["head_k"])
    if yarn:                                                 # ggml_rope_yarn_corr_dims
        def corr(n_rot_b):
            return n_rot * math.log(f["n_ctx_orig"] / (n_rot_b * 2 * math.pi)) / (2 * math.log(base))
        corr_dims = (max(0.0, math.floor(corr(32.0))), min(n_rot - 1.0, math.ceil(corr(1.0))))  # llama.cpp's beta defaults

    def rope(vec, position):
        out = vec.copy()
        for j in range(n_rot // 2):
            theta_extrap = position * base ** (-2.0 * j / n_rot)
            theta = freq_scale * theta_extrap
            amp = attn_factor
            if ext_factor != 0.0:
                y = (j - corr_dims[0]) / max(0.001, corr_dims[1] - corr_dims[0])
                ramp_mix = (1.0 - min(1.0, max(0.0, y))) * ext_factor
                theta = theta * (1.0 - ramp_mix) + theta_extrap * ramp_mix
                amp *= 1.0 + 0.1 * math.log(1.0 / freq_scale)
            z = complex(vec[2 * j], vec[2 * j + 1]) * complex(math.cos(theta), math.sin(theta)) * amp
            out[2 * j], out[2 * j + 1] = z.real, z.imag
        return out

    def rms(vec, weight):
        return vec * weight / math.sqrt(float(np.dot(vec, vec)) / vec.size + eps)

    def silu(g):
        return g / (1.0 + math.exp(-g))

    def mlp(hv, gate, up, down):
        return down @ (np.array([silu(gg) for gg in gate @ hv]) * (up @ hv))

    prefix = n_kv - len(tokens)
    cache = [[(np.zeros(kvr), np.zeros(n_rot))] * prefix for _ in range(n_layers)]
    rows = []
    for i, tok in enumerate(tokens):
        position = float(prefix + i)
        x = w["token_embd"][tok].copy()
        for il in range(n_layers):
            p = f"blk.{il}."
            kv_b = w[p + "attn_kv_b"].reshape(nh, nope + vh, kvr)
            k_b = np.swapaxes(kv_b[:, :nope, :], 1, 2)       # attn_k_b as the file holds it (n_head, kvr, nope)
            v_b = kv_b[:, nope:, :]                          # attn_v_b (n_head, v_head, kvr)
            h = rms(x, w[p + "attn_norm"])
            q = w[p + "attn_q_b"] @ rms(w[p + "attn_q_a"] @ h, w[p + "attn_q_a_norm"])
            kv_cmpr_pe = w[p + "attn_kv_a_mqa"] @ h
            latent = rms(kv_cmpr_pe[:kvr], w[p + "attn_kv_a_norm"])
            cache[il].append((latent, rope(kv_cmpr_pe[kvr:], position)))
            attn = []
            for hh in range(nh):
                qh = q[hh * (nope + n_rot):(hh + 1) * (nope + n_rot)]
                q_abs = k_b[hh] @ qh[:nope]                  # ggml_mul_mat(wk_b, q_nope)
                q_pe = rope(qh[nope:], position)
                scores = [(float(np.dot(q_abs, c)) + float(np.dot(q_pe, kp))) * kq_scale for c, kp in cache[il]]
                top = max(scores)
                lse = top + math.log(sum(math.exp(sc - top) for sc in scores))
                o_latent = sum(math.exp(sc - lse) * c for sc, (c, _) in zip(scores, cache[il]))
                attn.append(v_b[hh] @ o_latent)              # decompressed by wv_b
            x = x + w[p + "attn_output"] @ np.concatenate(attn)
            h = rms(x, w[p + "ffn_norm"])
            if il < m["n_dense_lead"]:
                x = x + mlp(h, w[p + "ffn_gate"], w[p + "ffn_up"], w[p + "ffn_down"])
                continue
            probs = [1.0 / (1.0 + math.exp(-lv)) for lv in w[p + "ffn_gate_inp"] @ h]
            sel = [pr + b for pr, b in zip(probs, w[p + "exp_probs_b_bias"])]
            per = m["n_expert"] // f["n_group"]
            gscore = [sum(sorted(sel[g * per:(g + 1) * per])[-2:]) for g in range(f["n_group"])]
            groups = sorted(range(f["n_group"]), key=lambda g: -gscore[g])[:f["group_used"]]
            sel = [sv if ex // per in groups else -math.inf for ex, sv in enumerate(sel)]
            ranked = sorted(range(m["n_expert"]), key=lambda ex: -sel[ex])[:m["n_expert_used"]]
            gates = [probs[ex] for ex in ranked]
            if f["norm"]:
                total = max(sum(gates), 6.103515625e-5)
                gates = [g / total for g in gates]
            out = np.zeros(e)
            for ex, gw in zip(ranked, gates):
                out += gw * f["scale"] * mlp(h, w[p + "ffn_gate_exps"][ex], w[p + "ffn_up_exps"][ex], w[p + "ffn_down_exps"][ex])
            out += mlp(h, w[p + "ffn_gate_shexp"], w[p + "ffn_up_shexp"], w[p + "ffn_down_shexp"])
            x = x + out
        rows.append(w["output"] @ rms(x, w["output_norm"]))
    return np.array(rows)


def routing_has_margins(m, stats):
    """Softmax and gpt-oss routers: the k-th and (k+1)-th router logits differ by ROUTER_MARGIN.
    DeepSeek's sigmoid scores move at most 1/4 as much as the logits, so: expert choice scores
    ROUTER_MARGIN / 4 apart, group scores (sums of two) ROUTER_MARGIN / 2 apart, and the k-th choice
    score above ROUTER_MARGIN / 4 (so that HF's 0.0 fill and llama.cpp's -inf agree)."""
    if m.get("moe") in ("nemotron", "lfm2"):       # DeepSeek's router without groups
        return stats["expert_gap"] >= ROUTER_MARGIN / 4 and stats["kth_choice"] >= ROUTER_MARGIN / 4
    if m.get("moe") != "deepseek":
        return stats["router_gap"] >= ROUTER_MARGIN
    return (stats["expert_gap"] >= ROUTER_MARGIN / 4 and stats["group_gap"] >= ROUTER_MARGIN / 2
            and stats["kth_choice"] >= ROUTER_MARGIN / 4)


def ds_self_check(name, m, held, refs, stats, changed):
    t = len(TOKENS)
    f = m["file"]
    assert f["head_k"] == m["qk_nope"] + m["qk_rope"] and f["n_rot"] == m["qk_rope"]
    assert stats["group_decides"] > 0, f"{name}: the group limit never changes a choice"
    assert stats["bias_decides"] > 0, f"{name}: the selection bias never changes a choice"
    changed("the expert groups", variant(m, n_group=1))
    changed("the selection bias", variant(m, use_bias=False))
    changed("the shared expert", variant(m, use_shared=False))
    changed("the routed weights scale", variant(m, routed_scale=1.0))
    changed("the weight normalisation", variant(m, norm_topk=False))
    changed("top-k routing", variant(m, n_expert_used=3))
    changed("weights from the unbiased scores", variant(m, bias_in_weights=True))   # the bias chooses only
    if "yarn" in m:
        assert f["rope_type"] == "yarn" and f["log_mul"] == m["yarn"]["mscale_all_dim"]
        dim, y = m["qk_rope"], m["yarn"]
        inv, _, _ = ds_hf_rope_tables(m)
        plain = 1.0 / m["freq_base"] ** (np.arange(0, dim, 2) / dim)
        ramp = (plain - inv) / (plain - plain / y["factor"])      # 0: extrapolated, 1: interpolated
        assert ((ramp > 0.01) & (ramp < 0.99)).sum() >= 2, f"{name}: the YaRN ramp has no blended pairs ({ramp})"
        for label, r in (("interpolation only", 1.0), ("extrapolation only", 0.0)):
            changed(f"the YaRN ramp ({label}, n_kv 12)", variant(m, ramp_override=r), n_kv=t + 5)
        changed("the YaRN attention scale (mscale_all_dim)", variant(m, yarn=dict(y, mscale_all_dim=0.0)))
        changed("YaRN altogether (n_kv 12)", variant(m, yarn=None), n_kv=t + 5)


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
    for attempt in range(m.get("max_attempts", 50)):
        rng = np.random.default_rng(SEEDS[name] + attempt)
        w = make_weights(m, rng)
        write_gguf(path, name, m, to_file(m, w))
        tensors, reader = read_gguf(path)
        held = from_file(m, tensors)
        assert held.keys() == w.keys(), f"{name}: {sorted(held.keys() ^ w.keys())}"
        for key, a in w.items():  # the round trip through the file: float32, f16, q8_0 or mxfp4 rounding only
            # MXFP4 can round its block's largest value down by a quarter (3.99 to 3: the exponent is floor(log2)).
            stored_as = file_type(m, tensor_name(key), a.ndim)
            if key.endswith(("gate_up_proj", "down_proj")):  # gpt-oss's experts, in HF's fused layout here
                stored_as = m.get("expert_type", stored_as)
            tol = {T.F32: 1e-6, T.MXFP4: 0.3}.get(stored_as, 0.02) * np.abs(a).max()
            assert held[key].shape == a.shape and np.abs(held[key] - a).max() <= tol, f"{name}: {key}"
        if m.get("longrope"):
            m["attn_factor_held"] = float(read_scalar(reader, f"{m['arch']}.rope.scaling.attn_factor"))
        if m["arch"] == "deepseek2":
            m["file"] = ds_read_keys(reader, m)
        stats, refs = {}, {}
        for n_layers, n_kv in cases(name, m):
            refs[(n_layers, n_kv)] = forward(m, held, TOKENS, n_kv, n_layers or m["n_layers"], stats)
        if "moe" not in m or routing_has_margins(m, stats):
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
        if "moe" in m and m["moe"] != "deepseek":
            changed("top-k routing", variant(m, n_expert_used=m["n_expert"] - 1))
        if m["arch"] == "deepseek2":
            ds_self_check(name, m, held, refs, stats, changed)
        if m["arch"] in LFM2_ARCHS:
            # The convolutions mix tokens: their taps before the last one matter.
            last_tap_only = dict(held)
            for il, kind in enumerate(m["layer_types"]):
                if kind == "conv":
                    taps = held[f"blk.{il}.shortconv.conv"].copy()
                    taps[:, :, :-1] = 0.0
                    last_tap_only[f"blk.{il}.shortconv.conv"] = taps
            changed("the convolutions' earlier taps", m, ww=last_tap_only)
        if m["arch"] == "lfm2moe":
            assert stats["bias_decides"] > 0, f"{name}: the selection bias never changes a choice"
            no_bias = dict(held)
            for il in range(m["n_dense_lead"], m["n_layers"]):
                no_bias[f"blk.{il}.exp_probs_b_bias"] = np.zeros(m["n_expert"])
            changed("the selection bias", m, ww=no_bias, threshold=0.01)
            changed("the weight normalisation", variant(m, norm_topk=False))
            # transformers' 1e-6 in the normalisation's sum, which llama.cpp leaves out: how far apart.
            plain = forward(variant(m, norm_eps=0.0), held, TOKENS, t, m["n_layers"])
            ref = refs[(0, t)]
            print(f"  {name}: without transformers' +1e-6 (as llama.cpp): NMSE {((plain - ref) ** 2).mean() / (ref ** 2).mean():.2e}")
        if m["arch"] in ("qwen35moe", "qwen3next"):
            no_shared_gate = dict(held)
            for il in range(m["n_layers"]):
                no_shared_gate[f"blk.{il}.ffn_gate_inp_shexp"] = np.full((1, m["n_embd"]), 0.0)   # sigmoid 1/2
            changed("the shared expert's gate", m, ww=no_shared_gate, threshold=0.01)
        if m["arch"] in Q35_ARCHS:
            # The delta rule's memory and its corrections matter, and so does the attention's gate.
            for label, key, value in (("no decay (A = 0)", "A_log", -60.0), ("instant decay", "A_log", 6.0)):
                ww = dict(held)
                for il in range(m["n_layers"]):
                    if q35_layer_is_linear(m, il):
                        ww[f"blk.{il}.{key}"] = np.full(m["lin_v_heads"], value)
                changed(f"the delta net's {label}", m, ww=ww)
            no_gate = dict(held)
            for il in range(m["n_layers"]):
                if not q35_layer_is_linear(m, il):
                    a = held[f"blk.{il}.attn_q"].reshape(m["n_head"], 2, m["head_dim"], -1).copy()
                    a[:, 1] = 0.0                               # gate 0: sigmoid 1/2 everywhere
                    no_gate[f"blk.{il}.attn_q"] = a.reshape(held[f"blk.{il}.attn_q"].shape)
            changed("the attention's output gate", m, ww=no_gate, threshold=0.01)
        if m["arch"] in ("nemotron_h", "nemotron_h_moe"):
            changed("the MLPs' square (relu alone)", variant(m, relu_power=1))
        if m["arch"] == "nemotron_h_moe":
            no_bias = dict(held)
            for il, kind in enumerate(m["layer_types"]):
                if kind == "mlp":
                    no_bias[f"blk.{il}.exp_probs_b_bias"] = np.zeros(m["n_expert"])
            changed("the selection bias", m, ww=no_bias, threshold=0.01)
            changed("the routed scale", variant(m, routed_scale=1.0))
        if m["arch"] in GH_ARCHS:
            # The scan carries information across tokens: without decay (A = 0: the state keeps
            # everything) or without memory (a large A forgets at once) the logits differ.
            for label, a_log in (("no decay", -60.0), ("no memory", 8.0)):
                ww = dict(held)
                for il, kind in enumerate(m["layer_types"]):
                    if kind == "mamba":
                        ww[f"blk.{il}.A_log"] = np.full(m["ssm_heads"], a_log)
                changed(f"the scan's decay ({label})", m, ww=ww)
            for key in ("residual_scale", "attn_scale", "logit_scale", "embd_scale"):
                if key in m:
                    changed(f"Granite's {key}", variant(m, **{key: m[key] * 1.5}))
            no_d = dict(held)
            for il, kind in enumerate(m["layer_types"]):
                if kind == "mamba":
                    no_d[f"blk.{il}.D"] = np.zeros(m["ssm_heads"])
            changed("the D skip", m, ww=no_d)
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
        keep_llamacpp_entries(out, manifest, "arch_fixtures")
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        print(f"arch_fixtures: wrote {len(MODELS)} models to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
