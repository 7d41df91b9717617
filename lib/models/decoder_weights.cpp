#include "models/decoder_weights.hpp"

#include "models/decoder_blocks.hpp"

namespace xb::decoder {

Tensor* WeightMaker::make(const std::string& name, DType fallback, std::initializer_list<int64_t> ne) {
    Tensor* w = named(ctx_.new_tensor(source_.types ? source_.types(name, fallback) : fallback, ne), name);
    if (source_.check && ctx_.ok()) {
        if (Status s = source_.check(*w); !s.is_ok()) ctx_.fail(std::move(s));  // the context's first error wins
    }
    return w;
}

Tensor* LayerWeightMaker::vector(const std::string& suffix, int64_t n, Need need) {
    const bool made = need == Need::Required || (need == Need::Optional && make_.has(pre_ + suffix));
    return made ? vector(suffix, n) : nullptr;
}

void LayerWeightMaker::qkv(LayerWeights& w, Need biases, bool fused) {
    const int64_t e = p_.n_embd, q = p_.n_embd_q(), kv = p_.n_embd_kv();
    w.attn_norm = vector("attn_norm.weight", e);
    if (fused && make_.has(pre_ + "attn_qkv.weight")) {
        w.wqkv = matrix("attn_qkv.weight", e, q + 2 * kv);
        w.bqkv = vector("attn_qkv.bias", q + 2 * kv, biases);
        return;
    }
    w.wq = matrix("attn_q.weight", e, q);
    w.wk = matrix("attn_k.weight", e, kv);
    w.wv = matrix("attn_v.weight", e, kv);
    w.bq = vector("attn_q.bias", q, biases);
    w.bk = vector("attn_k.bias", kv, biases);
    w.bv = vector("attn_v.bias", kv, biases);
}

void LayerWeightMaker::qk_norms(LayerWeights& w) {
    w.q_norm = vector("attn_q_norm.weight", p_.head_dim());
    w.k_norm = vector("attn_k_norm.weight", p_.head_dim());
}

void LayerWeightMaker::attn_output(LayerWeights& w, Need bias) {
    w.wo = matrix("attn_output.weight", p_.n_embd_q(), p_.n_embd);
    w.bo = vector("attn_output.bias", p_.n_embd, bias);
}

void LayerWeightMaker::post_norms(LayerWeights& w) {
    w.attn_post_norm = vector("post_attention_norm.weight", p_.n_embd);
    w.ffn_post_norm = vector("post_ffw_norm.weight", p_.n_embd);
}

void LayerWeightMaker::mamba2(LayerWeights& w) {
    const SsmParams& s = p_.ssm;
    const int64_t e = p_.n_embd, channels = s.conv_channels();
    w.ssm_in = matrix("ssm_in.weight", e, s.in_rows());
    w.ssm_conv = tensor("ssm_conv1d.weight", DType::F32, {p_.conv_kernel, channels});
    w.ssm_conv_b = vector("ssm_conv1d.bias", channels, Need::Optional);
    w.ssm_dt_b = vector("ssm_dt.bias", s.n_head);
    // No ".weight" suffix on A and D, as llama.cpp names them.
    w.ssm_a = tensor("ssm_a", DType::F32, {1, s.n_head});
    w.ssm_d = tensor("ssm_d", DType::F32, {1, s.n_head});
    w.ssm_norm = tensor("ssm_norm.weight", DType::F32, {s.d_inner / s.n_group, s.n_group});
    w.ssm_out = matrix("ssm_out.weight", s.d_inner, e);
}

void LayerWeightMaker::latent_attention(LayerWeights& w) {
    const MlaParams& a = p_.mla;
    const int64_t e = p_.n_embd, h = p_.n_head, rope = p_.rope_dims(), q = h * (a.qk_nope + rope);
    w.attn_norm = vector("attn_norm.weight", e);
    if (a.q_lora_rank > 0) {
        w.wq_a = matrix("attn_q_a.weight", e, a.q_lora_rank);
        w.q_a_norm = vector("attn_q_a_norm.weight", a.q_lora_rank);
        w.wq_b = matrix("attn_q_b.weight", a.q_lora_rank, q);
    } else {
        w.wq_b = matrix("attn_q.weight", e, q);
    }
    w.wkv_a_mqa = matrix("attn_kv_a_mqa.weight", e, a.kv_lora_rank + rope);
    w.kv_a_norm = vector("attn_kv_a_norm.weight", a.kv_lora_rank);
    w.wk_b = make_.make(pre_ + "attn_k_b.weight", p_.weight_type, {a.qk_nope, a.kv_lora_rank, h});
    w.wv_b = make_.make(pre_ + "attn_v_b.weight", p_.weight_type, {a.kv_lora_rank, a.v_head, h});
    w.wo = matrix("attn_output.weight", h * a.v_head, e);
}

void LayerWeightMaker::ffn(LayerWeights& w, const std::string& norm, bool fused_gate_up) {
    w.ffn_norm = vector(norm + ".weight", p_.n_embd);
    if (p_.layer_has_experts(il_)) {
        experts(w);
    } else {
        dense_ffn(w, fused_gate_up);
    }
}

void LayerWeightMaker::dense_ffn(LayerWeights& w, bool fused_gate_up) {
    const int64_t e = p_.n_embd, f = p_.n_ff;
    if (fused_gate_up) {
        w.w_up = matrix("ffn_up.weight", e, 2 * f);
    } else {
        w.w_gate = matrix("ffn_gate.weight", e, f);
        w.w_up = matrix("ffn_up.weight", e, f);
    }
    w.w_down = matrix("ffn_down.weight", f, e);
}

void LayerWeightMaker::experts(LayerWeights& w) {
    const ExpertParams& x = p_.experts;
    const int64_t e = p_.n_embd, f = x.n_ff, n = x.n_expert;
    // The router stays f32 in llama.cpp's files whatever the experts' type (the fallback: its
    // logits choose the experts).
    w.router = make_.make(pre_ + "ffn_gate_inp.weight", DType::F32, {e, n});
    if (!x.ungated) w.gate_exps = make_.make(pre_ + "ffn_gate_exps.weight", p_.weight_type, {e, f, n});
    w.up_exps = make_.make(pre_ + "ffn_up_exps.weight", p_.weight_type, {e, f, n});
    w.down_exps = make_.make(pre_ + "ffn_down_exps.weight", p_.weight_type, {f, e, n});
    if (x.selection_bias) w.exp_probs_b = vector("exp_probs_b.bias", n);
    if (x.n_shared > 0) {
        const int64_t fs = x.shared_ff();
        if (!x.ungated) w.gate_shexp = matrix("ffn_gate_shexp.weight", e, fs);
        w.up_shexp = matrix("ffn_up_shexp.weight", e, fs);
        w.down_shexp = matrix("ffn_down_shexp.weight", fs, e);
        if (x.shared_gate) w.gate_inp_shexp = vector("ffn_gate_inp_shexp.weight", e);
    }
    if (x.biases) {
        w.router_b = vector("ffn_gate_inp.bias", n);
        w.gate_exps_b = make_.make(pre_ + "ffn_gate_exps.bias", DType::F32, {f, n});
        w.up_exps_b = make_.make(pre_ + "ffn_up_exps.bias", DType::F32, {f, n});
        w.down_exps_b = make_.make(pre_ + "ffn_down_exps.bias", DType::F32, {e, n});
    }
}

}  // namespace xb::decoder
