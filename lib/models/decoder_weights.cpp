#include "models/decoder_weights.hpp"

#include "models/decoder_blocks.hpp"

namespace xb::decoder {

Tensor* WeightMaker::make(const std::string& name, DType fallback, std::initializer_list<int64_t> ne) {
    return named(ctx_.new_tensor(types_ ? types_(name, fallback) : fallback, ne), name);
}

void WeightMaker::latent_attention(const std::string& pre, LayerWeights& w) {
    const MlaParams& a = p_.mla;
    const int64_t e = p_.n_embd, h = p_.n_head, rope = p_.rope_dims(), q = h * (a.qk_nope + rope);
    if (a.q_lora_rank > 0) {
        w.wq_a = matrix(pre + "attn_q_a.weight", e, a.q_lora_rank);
        w.q_a_norm = vector(pre + "attn_q_a_norm.weight", a.q_lora_rank);
        w.wq_b = matrix(pre + "attn_q_b.weight", a.q_lora_rank, q);
    } else {
        w.wq_b = matrix(pre + "attn_q.weight", e, q);
    }
    w.wkv_a_mqa = matrix(pre + "attn_kv_a_mqa.weight", e, a.kv_lora_rank + rope);
    w.kv_a_norm = vector(pre + "attn_kv_a_norm.weight", a.kv_lora_rank);
    w.wk_b = make(pre + "attn_k_b.weight", p_.weight_type, {a.qk_nope, a.kv_lora_rank, h});
    w.wv_b = make(pre + "attn_v_b.weight", p_.weight_type, {a.kv_lora_rank, a.v_head, h});
    w.wo = matrix(pre + "attn_output.weight", h * a.v_head, e);
}

void WeightMaker::attention(const std::string& pre, LayerWeights& w) {
    if (p_.mla.enabled()) return latent_attention(pre, w);
    const int64_t e = p_.n_embd, q = p_.n_embd_q(), kv = p_.n_embd_kv();
    if (p_.fused_qkv) {
        w.wqkv = matrix(pre + "attn_qkv.weight", e, q + 2 * kv);
        if (p_.qkv_bias) w.bqkv = vector(pre + "attn_qkv.bias", q + 2 * kv);
    } else {
        w.wq = matrix(pre + "attn_q.weight", e, q);
        w.wk = matrix(pre + "attn_k.weight", e, kv);
        w.wv = matrix(pre + "attn_v.weight", e, kv);
        if (p_.qkv_bias) {
            w.bq = vector(pre + "attn_q.bias", q);
            w.bk = vector(pre + "attn_k.bias", kv);
            w.bv = vector(pre + "attn_v.bias", kv);
        }
    }
    if (p_.qk_norm) {
        w.q_norm = vector(pre + "attn_q_norm.weight", p_.head_dim());
        w.k_norm = vector(pre + "attn_k_norm.weight", p_.head_dim());
    }
    w.wo = matrix(pre + "attn_output.weight", q, e);
    if (p_.attn_out_bias) w.bo = vector(pre + "attn_output.bias", e);
    if (p_.attn_sinks) w.sinks = vector(pre + "attn_sinks.weight", p_.n_head);
    if (p_.post_norms) w.attn_post_norm = vector(pre + "post_attention_norm.weight", e);
}

void WeightMaker::dense_ffn(const std::string& pre, LayerWeights& w) {
    const int64_t e = p_.n_embd, f = p_.n_ff;
    if (p_.fused_gate_up) {
        w.w_up = matrix(pre + "ffn_up.weight", e, 2 * f);
    } else {
        w.w_gate = matrix(pre + "ffn_gate.weight", e, f);
        w.w_up = matrix(pre + "ffn_up.weight", e, f);
    }
    w.w_down = matrix(pre + "ffn_down.weight", f, e);
}

void WeightMaker::experts(const std::string& pre, LayerWeights& w) {
    const int64_t e = p_.n_embd, f = p_.experts.n_ff, n = p_.experts.n_expert;
    // The router stays f32 in llama.cpp's files whatever the experts' type (the fallback: its
    // logits choose the experts).
    w.router = make(pre + "ffn_gate_inp.weight", DType::F32, {e, n});
    w.gate_exps = make(pre + "ffn_gate_exps.weight", p_.weight_type, {e, f, n});
    w.up_exps = make(pre + "ffn_up_exps.weight", p_.weight_type, {e, f, n});
    w.down_exps = make(pre + "ffn_down_exps.weight", p_.weight_type, {f, e, n});
    if (p_.experts.selection_bias) w.exp_probs_b = vector(pre + "exp_probs_b.bias", n);
    if (p_.experts.n_shared > 0) {
        const int64_t fs = f * p_.experts.n_shared;
        w.gate_shexp = matrix(pre + "ffn_gate_shexp.weight", e, fs);
        w.up_shexp = matrix(pre + "ffn_up_shexp.weight", e, fs);
        w.down_shexp = matrix(pre + "ffn_down_shexp.weight", fs, e);
    }
    if (p_.experts.biases) {
        w.router_b = vector(pre + "ffn_gate_inp.bias", n);
        w.gate_exps_b = make(pre + "ffn_gate_exps.bias", DType::F32, {f, n});
        w.up_exps_b = make(pre + "ffn_up_exps.bias", DType::F32, {f, n});
        w.down_exps_b = make(pre + "ffn_down_exps.bias", DType::F32, {e, n});
    }
}

LayerWeights WeightMaker::layer(int il) {
    const std::string pre = "blk." + std::to_string(il) + ".";
    LayerWeights w{};
    w.attn_norm = vector(pre + "attn_norm.weight", p_.n_embd);
    attention(pre, w);
    w.ffn_norm = vector(pre + p_.ffn_norm_name + ".weight", p_.n_embd);
    if (p_.layer_has_experts(il)) {
        experts(pre, w);
    } else {
        dense_ffn(pre, w);
    }
    if (p_.post_norms) w.ffn_post_norm = vector(pre + "post_ffw_norm.weight", p_.n_embd);
    return w;
}

}  // namespace xb::decoder
