#!/usr/bin/env python3
"""Optional cross-check of scripts/arch_fixtures.py's committed references against transformers' own
model classes (Qwen3, Gemma2, Gemma3Text, Phi3, Mixtral, Qwen3Moe, GptOss), run in float64 with
eager attention and eager experts on the weights each GGUF file holds (read back and converted to
the checkpoint layout by arch_fixtures' own from_file). The cache prefix of the n_kv 12
references is a DynamicCache of zero keys and values.

    python3 -m pip install torch transformers gguf numpy   # written against transformers 5.24, torch 2.15
    python3 scripts/arch_fixtures_hf_check.py

Not needed to build or test anything: arch_fixtures.py and the tests use numpy and gguf only.
Expect differences of a few 1e-7 relative, not 1e-12: transformers computes RMSNorm and the rope
tables in float32 even in a float64 model. A wrong convention (a layout, a mask, a factor) shows as
differences of 0.05 or more (arch_fixtures' self-check makes sure of that for each feature).
Exits 1 when any reference is off by more than 1e-5 relative to its largest logit.
"""
import copy
import json
import sys
from pathlib import Path

import numpy as np
import torch
import transformers as tf
from transformers import DynamicCache

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import arch_fixtures as A  # noqa: E402

torch.set_default_dtype(torch.float64)
DATA = REPO / "tests/data/models/arch"


def config_for(name, m, n_layers):
    common = dict(vocab_size=m["n_vocab"], hidden_size=m["n_embd"], num_hidden_layers=n_layers,
                  num_attention_heads=m["n_head"], num_key_value_heads=m["n_head_kv"], rms_norm_eps=m["eps"],
                  tie_word_embeddings=m["tied"], max_position_embeddings=m.get("context", 2048))
    arch = m["arch"]
    if arch == "qwen3":
        c = tf.Qwen3Config(**common, intermediate_size=m["n_ff"], head_dim=m["head_dim"],
                           rope_parameters={"rope_type": "default", "rope_theta": m["freq_base"]})
        cls = tf.Qwen3ForCausalLM
    elif arch == "gemma2":
        c = tf.Gemma2Config(**common, intermediate_size=m["n_ff"], head_dim=m["head_dim"],
                            query_pre_attn_scalar=m["head_dim"], sliding_window=m["swa_window"],
                            attn_logit_softcapping=m["attn_softcap"], final_logit_softcapping=m["final_softcap"],
                            hidden_activation="gelu_pytorch_tanh",
                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
        cls = tf.Gemma2ForCausalLM
    elif arch == "gemma3":
        c = tf.Gemma3TextConfig(**common, intermediate_size=m["n_ff"], head_dim=m["head_dim"],
                                query_pre_attn_scalar=m["head_dim"], sliding_window=m["swa_window"],
                                final_logit_softcapping=None, attn_logit_softcapping=None,
                                hidden_activation="gelu_pytorch_tanh",
                                rope_parameters={"full_attention": {"rope_type": "linear", "factor": m["linear_scale"],
                                                                    "rope_theta": m["freq_base"]},
                                                 "sliding_attention": {"rope_type": "default",
                                                                       "rope_theta": m["freq_base_swa"]}})
        cls = tf.Gemma3ForCausalLM
    elif arch == "phi3":
        c = tf.Phi3Config(**common, intermediate_size=m["n_ff"], original_max_position_embeddings=m["orig_context"],
                          rope_parameters={"rope_type": "longrope", "rope_theta": m["freq_base"],
                                           "short_factor": FACTORS["short"], "long_factor": FACTORS["long"],
                                           "original_max_position_embeddings": m["orig_context"]},
                          sliding_window=None, pad_token_id=0, bos_token_id=1, eos_token_id=2)
        cls = tf.Phi3ForCausalLM
    elif arch == "llama":
        c = tf.MixtralConfig(**common, intermediate_size=m["n_ff"], num_local_experts=m["n_expert"],
                             num_experts_per_tok=m["n_expert_used"],
                             rope_parameters={"rope_type": "default", "rope_theta": m["freq_base"]})
        cls = tf.MixtralForCausalLM
    elif arch == "qwen3moe":
        c = tf.Qwen3MoeConfig(**common, intermediate_size=m["n_ff"], moe_intermediate_size=m["n_ff_exp"],
                              head_dim=m["head_dim"], num_experts=m["n_expert"], num_experts_per_tok=m["n_expert_used"],
                              norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
                              rope_parameters={"rope_type": "default", "rope_theta": m["freq_base"]})
        cls = tf.Qwen3MoeForCausalLM
    elif arch == "gpt-oss":
        c = tf.GptOssConfig(**common, intermediate_size=m["n_ff_exp"], head_dim=m["head_dim"],
                            num_local_experts=m["n_expert"], num_experts_per_tok=m["n_expert_used"],
                            sliding_window=m["swa_window"], attention_bias=True,
                            rope_parameters={"rope_type": "default", "rope_theta": m["freq_base"]})
        cls = tf.GptOssForCausalLM
    c._attn_implementation = "eager"
    c._experts_implementation = "eager"
    return c, cls


def state_dict(m, w, keys):
    arch, sd = m["arch"], {}
    t = lambda a: torch.tensor(np.ascontiguousarray(a))
    for key in keys:
        if key == "model.embed_tokens.weight":
            v = w["token_embd"]
        elif key == "model.norm.weight":
            v = w["output_norm"]
        elif key == "lm_head.weight":
            v = w["output"] if "output" in w else w["token_embd"]
        else:
            parts = key.split(".")
            il, rest = int(parts[2]), ".".join(parts[3:])
            p = f"blk.{il}."
            table = {
                "input_layernorm.weight": "attn_norm",
                "post_attention_layernorm.weight": "post_attention_norm" if arch in ("gemma2", "gemma3", "gpt-oss") else "ffn_norm",
                "pre_feedforward_layernorm.weight": "ffn_norm",
                "post_feedforward_layernorm.weight": "post_ffw_norm",
                "self_attn.q_proj.weight": "attn_q", "self_attn.k_proj.weight": "attn_k",
                "self_attn.v_proj.weight": "attn_v", "self_attn.o_proj.weight": "attn_output",
                "self_attn.q_proj.bias": "attn_q_bias", "self_attn.k_proj.bias": "attn_k_bias",
                "self_attn.v_proj.bias": "attn_v_bias", "self_attn.o_proj.bias": "attn_output_bias",
                "self_attn.q_norm.weight": "attn_q_norm", "self_attn.k_norm.weight": "attn_k_norm",
                "self_attn.sinks": "attn_sinks",
                "self_attn.qkv_proj.weight": "attn_qkv",
                "mlp.gate_proj.weight": "ffn_gate", "mlp.up_proj.weight": "ffn_up", "mlp.down_proj.weight": "ffn_down",
                "mlp.gate_up_proj.weight": "ffn_up",
                "mlp.gate.weight": "ffn_gate_inp", "mlp.router.weight": "ffn_gate_inp",
                "mlp.router.bias": "ffn_gate_inp_bias",
            }
            if rest in table:
                v = w[p + table[rest]]
            elif rest == "mlp.experts.gate_up_proj":
                v = w[p + "gate_up_proj"] if arch == "gpt-oss" else np.concatenate(
                    [w[p + "ffn_gate_exps"], w[p + "ffn_up_exps"]], axis=1)
            elif rest == "mlp.experts.gate_up_proj_bias":
                v = w[p + "gate_up_proj_bias"]
            elif rest == "mlp.experts.down_proj":
                v = w[p + "down_proj"] if arch == "gpt-oss" else w[p + "ffn_down_exps"]
            elif rest == "mlp.experts.down_proj_bias":
                v = w[p + "down_proj_bias"]
            else:
                raise KeyError(key)
        # Gemma's norms: w holds HF's weight already (from_file undid the converter's + 1)
        sd[key] = t(v)
    return sd


FACTORS = {}  # Phi-3's LongRoPE factors, as the file holds them, for config_for


def run(name, m, w, n_layers, n_kv):
    """HF's logits [T, vocab] for the first n_layers layers with an n_kv cache (zero prefix)."""
    if "rope_factors_short" in w:
        FACTORS["short"], FACTORS["long"] = w["rope_factors_short"].tolist(), w["rope_factors_long"].tolist()
    c, cls = config_for(name, m, n_layers)
    model = cls(c).to(torch.float64).eval()
    keys = [k for k in model.state_dict().keys() if not k.endswith("rotary_emb.inv_freq")]
    sd = state_dict(m, w, keys)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if "inv_freq" not in k and "original_inv_freq" not in k and "long_inv_freq" not in k]
    assert not missing and not unexpected, (missing, unexpected)
    tokens = torch.tensor([A.TOKENS])
    t = len(A.TOKENS)
    prefix = n_kv - t
    kwargs = {}
    if prefix:
        cache = DynamicCache()
        for il in range(n_layers):
            z = torch.zeros(1, m["n_head_kv"], prefix, m["head_dim"])
            cache.update(z, z.clone(), il)
        kwargs = dict(past_key_values=cache, attention_mask=torch.ones(1, n_kv, dtype=torch.long))
    with torch.no_grad():
        out = model(input_ids=tokens, position_ids=torch.arange(prefix, n_kv)[None],
                    cache_position=torch.arange(prefix, n_kv), use_cache=bool(prefix), **kwargs)
    return out.logits[0].numpy()


def main():
    worst = 0.0
    for name, spec in A.MODELS.items():
        m = copy.deepcopy(spec)
        if m["arch"] == "deepseek2":   # no transformers mapping written for it yet (see arch/README.md)
            print(f"{name:20s} skipped: not mapped onto transformers' DeepseekV3 here")
            continue
        tensors, reader = A.read_gguf(DATA / f"{name}.gguf")
        w = A.from_file(m, tensors)
        refs = {(r["n_layers"], r["n_kv"]): r["logits"] for r in
                json.loads((DATA / "manifest.json").read_text())["models"][name]["references"]}
        for (n_layers, n_kv), file in refs.items():
            ref = np.load(DATA / file)
            hf = run(name, m, w, n_layers or m["n_layers"], n_kv)
            err = np.abs(hf - ref).max()
            worst = max(worst, err / np.abs(ref).max())
            print(f"{name:20s} l{n_layers} kv{n_kv:2d}: max|HF - ref| = {err:.3g}  (max|ref| {np.abs(ref).max():.3g})")
    print(f"worst relative difference {worst:.3g}")
    sys.exit(0 if worst < 1e-5 else 1)


if __name__ == "__main__":
    main()
