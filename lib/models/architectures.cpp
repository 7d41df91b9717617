#include "models/architectures.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace xb {

namespace {

Status refuse_experts(const std::string& a, const DecoderParams& p) {
    if (!p.has_experts()) return Status::ok();
    return Status(StatusCode::NotSupported, "a mixture-of-experts " + a.substr(0, a.size() - 1) + " model (" + a +
                                                "expert_count " + std::to_string(p.experts.n_expert) + ") is not supported");
}

// The experts every MoE architecture describes alike; `n_ff_key` gives each expert's hidden size
// ("" : the dense feed_forward_length).
Status read_experts(const GgufMetadata& md, const std::string& a, DecoderParams& p, const std::string& n_ff_key) {
    if (!p.has_experts()) return md.missing(a + "expert_count", "a mixture-of-experts architecture has experts");
    ExpertParams& e = p.experts;
    if (n_ff_key.empty()) {
        e.n_ff = p.n_ff;
    } else {
        XB_ASSIGN_OR_RETURN(const int64_t n_ff, md.integer(a + n_ff_key, p.n_ff / e.n_used, 1, 1 << 18));
        e.n_ff = static_cast<int>(n_ff);
    }
    // llama.cpp treats 0 (its default) as no scaling.
    XB_ASSIGN_OR_RETURN(const double scale, md.non_negative(a + "expert_weights_scale", 0.0));
    e.weights_scale = scale == 0.0 ? 1.0f : static_cast<float>(scale);
    return Status::ok();
}

// Gemma's Q scale: 1/sqrt(head size), except the 27B models' 1/sqrt(n_embd / n_head) (the
// reference implementation's query_pre_attn_scalar), known by their layer count.
float gemma_q_scale(const DecoderParams& p, int layers_of_27b) {
    const int d = p.n_layers == layers_of_27b ? p.n_embd / p.n_head : p.head_dim();
    return 1.0f / std::sqrt(static_cast<float>(d));
}

Status gemma_common(const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(refuse_experts(a, p));
    p.embd_scale = std::sqrt(static_cast<float>(p.n_embd));
    p.post_norms = true;
    p.ffn_glu = GluOp::GeGlu;
    return Status::ok();
}

// The window of the sliding layers: gemma2 and gpt-oss always slide, so a window of 0 there is an
// error; gemma3's files give 0 for no window.
Status sliding_window(const GgufMetadata& md, const std::string& a, DecoderParams& p, std::optional<int64_t> window,
                      int64_t pattern, double swa_base, float swa_scale, int64_t min_window = 1) {
    XB_ASSIGN_OR_RETURN(const int64_t w, md.integer(a + "attention.sliding_window", window, min_window));
    // A number (llama.cpp's period rule), or one bool per layer (newer converters; true: it slides).
    const std::string pattern_key = a + "attention.sliding_window_pattern";
    if (md.is_array(pattern_key)) {
        XB_ASSIGN_OR_RETURN(p.swa.layers, md.bool_per_layer(pattern_key, p.n_layers));
    } else {
        XB_ASSIGN_OR_RETURN(const int64_t n, md.integer(pattern_key, pattern, 0, 1024));
        p.swa.pattern = static_cast<int>(n);
    }
    XB_ASSIGN_OR_RETURN(const double base, md.real(a + "rope.freq_base_swa", swa_base));
    p.swa.window = static_cast<int>(w);
    p.swa.rope_freq_base = static_cast<float>(base);
    p.swa.rope_freq_scale = swa_scale;
    return Status::ok();
}

// Llama 1/2/3, Mistral; Mixtral is llama with experts (softmax router, renormalised top-k).
Status llama(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    if (!p.has_experts()) return Status::ok();
    if (md.file().find_tensor("blk.0.ffn_gate.0.weight") != nullptr) {
        return Status(StatusCode::NotSupported, md.file().path() + ": the experts are stored one tensor each (blk.0.ffn_gate.0.weight, "
                                                                   "an old Mixtral conversion): convert the model again with a current llama.cpp");
    }
    p.experts.normalize = true;
    return read_experts(md, a, p, "");
}

Status qwen2(const GgufMetadata&, const std::string& a, DecoderParams& p) {
    p.qkv_bias = true;
    return refuse_experts(a, p);
}

Status qwen3(const GgufMetadata&, const std::string& a, DecoderParams& p) {
    p.qk_norm = true;
    return refuse_experts(a, p);
}

Status qwen3moe(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    p.qk_norm = true;
    p.experts.normalize = true;
    return read_experts(md, a, p, "expert_feed_forward_length");
}

Status gemma2(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(gemma_common(a, p));
    p.q_scale = gemma_q_scale(p, 46);
    XB_ASSIGN_OR_RETURN(const double attn_cap, md.non_negative(a + "attn_logit_softcapping", 50.0));
    XB_ASSIGN_OR_RETURN(const double final_cap, md.non_negative(a + "final_logit_softcapping", 30.0));
    p.attn_softcap = static_cast<float>(attn_cap);
    p.final_softcap = static_cast<float>(final_cap);
    // Every other layer slides (the even ones), with the global rope.
    return sliding_window(md, a, p, 4096, 2, p.rope_freq_base, p.rope_freq_scale);
}

Status gemma3(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(gemma_common(a, p));
    p.qk_norm = true;
    p.q_scale = gemma_q_scale(p, 62);
    XB_ASSIGN_OR_RETURN(const double final_cap, md.non_negative(a + "final_logit_softcapping", 0.0));
    p.final_softcap = static_cast<float>(final_cap);
    // Five layers in six slide when the file gives a window, with a local rope of base 10000 and
    // no scaling; the global layers keep the file's rope.
    if (!md.has(a + "attention.sliding_window")) return Status::ok();
    return sliding_window(md, a, p, std::nullopt, 6, 10000.0, 1.0f, 0);
}

Status phi3(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(refuse_experts(a, p));
    p.fused_qkv = md.file().find_tensor("blk.0.attn_qkv.weight") != nullptr;
    p.fused_gate_up = true;
    p.q_scale = 1.0f / std::sqrt(static_cast<float>(p.head_dim()));
    p.output_bias = md.file().find_tensor("output.bias") != nullptr;
    // llama.cpp ignores Phi-3's sliding window (its files' windows are not what the models used).
    return Status::ok();
}

Status gpt_oss(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    p.qkv_bias = true;
    p.attn_out_bias = true;
    p.attn_sinks = true;
    p.ffn_norm_name = "post_attention_norm";
    p.ffn_glu = GluOp::SwiGluOai;
    p.experts.gating = ExpertGating::SoftmaxOfChosen;
    p.experts.biases = true;
    XB_RETURN_IF_ERROR(read_experts(md, a, p, "expert_feed_forward_length"));
    return sliding_window(md, a, p, std::nullopt, 2, p.rope_freq_base, p.rope_freq_scale);
}

// DeepSeek V2/V3/R1, Kimi K2: latent attention, leading dense layers, shared experts, and (V3)
// sigmoid routing with a selection bias within groups of experts. Files of the split form only
// (attn_k_b/attn_v_b, what llama.cpp's converter writes since it computes the absorbed form).
Status deepseek2(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    if (md.file().find_tensor("blk.0.attn_kv_b.weight") != nullptr) {
        return Status(StatusCode::NotSupported, md.file().path() + ": attn_kv_b (a conversion older than llama.cpp's latent-attention "
                                                                   "form) is not supported: convert the model again with a current llama.cpp");
    }
    MlaParams& mla = p.mla;
    XB_ASSIGN_OR_RETURN(const int64_t q_rank, md.integer(a + "attention.q_lora_rank", 0, 0, 1 << 16));
    XB_ASSIGN_OR_RETURN(const int64_t kv_rank, md.integer(a + "attention.kv_lora_rank", std::nullopt, 1, 1 << 16));
    XB_ASSIGN_OR_RETURN(const int64_t key_mla, md.integer(a + "attention.key_length_mla", std::nullopt, 1, 65536));
    XB_ASSIGN_OR_RETURN(const int64_t value_mla, md.integer(a + "attention.value_length_mla", std::nullopt, 1, 65536));
    if (key_mla <= p.rope_dims()) {
        return Status(StatusCode::InvalidArgument, md.at({a + "attention.key_length_mla"}) + a + "attention.key_length_mla (" +
                                                       std::to_string(key_mla) + ") must exceed " + a + "rope.dimension_count (" +
                                                       std::to_string(p.rope_dims()) + ")");
    }
    mla.q_lora_rank = static_cast<int>(q_rank);
    mla.kv_lora_rank = static_cast<int>(kv_rank);
    mla.qk_nope = static_cast<int>(key_mla) - p.rope_dims();
    mla.v_head = static_cast<int>(value_mla);
    XB_ASSIGN_OR_RETURN(const int64_t dense, md.integer(a + "leading_dense_block_count", 0, 0, p.n_layers));
    p.n_dense_lead = static_cast<int>(dense);
    if (!p.has_experts()) return Status::ok();
    ExpertParams& e = p.experts;
    XB_RETURN_IF_ERROR(read_experts(md, a, p, "expert_feed_forward_length"));
    XB_ASSIGN_OR_RETURN(const int64_t shared, md.integer(a + "expert_shared_count", 0, 0, 64));
    XB_ASSIGN_OR_RETURN(e.normalize, md.boolean(a + "expert_weights_norm", false));
    // 1 softmax (V2, and files without the key), 2 sigmoid (V3).
    XB_ASSIGN_OR_RETURN(const int64_t gating, md.integer(a + "expert_gating_func", 1, 1, 2));
    XB_ASSIGN_OR_RETURN(const int64_t groups, md.integer(a + "expert_group_count", 0, 0, e.n_expert));
    XB_ASSIGN_OR_RETURN(const int64_t groups_used, md.integer(a + "expert_group_used_count", 0, 0, std::max<int64_t>(groups, 0)));
    e.n_shared = static_cast<int>(shared);
    e.gating = gating == 2 ? ExpertGating::Sigmoid : ExpertGating::Softmax;
    e.selection_bias = md.file().find_tensor("blk." + std::to_string(p.n_dense_lead) + ".exp_probs_b.bias") != nullptr;
    e.n_group = static_cast<int>(groups);
    e.n_group_used = static_cast<int>(groups_used);
    return Status::ok();
}

constexpr std::array kArchitectures = {
    Architecture{"llama", RopeMode::Normal, llama},   Architecture{"qwen2", RopeMode::Neox, qwen2},
    Architecture{"qwen3", RopeMode::Neox, qwen3},     Architecture{"qwen3moe", RopeMode::Neox, qwen3moe},
    Architecture{"gemma2", RopeMode::Neox, gemma2},   Architecture{"gemma3", RopeMode::Neox, gemma3},
    Architecture{"phi3", RopeMode::Neox, phi3},       Architecture{"gpt-oss", RopeMode::Neox, gpt_oss},
    Architecture{"deepseek2", RopeMode::Normal, deepseek2},
};

}  // namespace

const Architecture* find_architecture(std::string_view name) {
    for (const Architecture& a : kArchitectures) {
        if (a.name == name) return &a;
    }
    return nullptr;
}

std::string supported_architectures() {
    std::string names;
    for (const Architecture& a : kArchitectures) names += (names.empty() ? "" : ", ") + std::string(a.name);
    return names;
}

}  // namespace xb
