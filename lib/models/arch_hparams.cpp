#include "models/arch_hparams.hpp"

#include <cmath>

namespace xb::arch {

Status refuse_experts(const std::string& a, const DecoderParams& p) {
    if (!p.has_experts()) return Status::ok();
    return Status(StatusCode::NotSupported, "a mixture-of-experts " + a.substr(0, a.size() - 1) + " model (" + a +
                                                "expert_count " + std::to_string(p.experts.n_expert) + ") is not supported");
}

Status read_experts(const GgufMetadata& md, const std::string& a, DecoderParams& p, const std::string& n_ff_key) {
    if (!p.has_experts()) {
        const std::string key = a + "expert_count";
        if (const GgufKV* kv = md.file().find_kv_entry(key)) return md.error(*kv, "is 0: a mixture-of-experts architecture has experts");
        return md.missing(key, "a mixture-of-experts architecture has experts");
    }
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

Status read_ssm_sizes(const GgufMetadata& md, const std::string& a, DecoderParams& p, SsmKind kind) {
    XB_ASSIGN_OR_RETURN(const int64_t kernel, md.integer(a + "ssm.conv_kernel", std::nullopt, 2, 64));
    XB_ASSIGN_OR_RETURN(const int64_t inner, md.integer(a + "ssm.inner_size", std::nullopt, 1, 1 << 18));
    XB_ASSIGN_OR_RETURN(const int64_t state, md.integer(a + "ssm.state_size", std::nullopt, 1, 1024));
    XB_ASSIGN_OR_RETURN(const int64_t heads, md.integer(a + "ssm.time_step_rank", std::nullopt, 1, inner));
    XB_ASSIGN_OR_RETURN(const int64_t groups, md.integer(a + "ssm.group_count", std::nullopt, 1, heads));
    p.conv_kernel = static_cast<int>(kernel);
    p.ssm = SsmParams{.d_inner = static_cast<int>(inner), .d_state = static_cast<int>(state), .n_head = static_cast<int>(heads),
                      .n_group = static_cast<int>(groups), .kind = kind};
    return Status::ok();
}

Status read_mamba2_sizes(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(read_ssm_sizes(md, a, p, SsmKind::Mamba2));
    const int64_t inner = p.ssm.d_inner, heads = p.ssm.n_head, groups = p.ssm.n_group;
    if (inner % heads != 0) {
        return md.error(*md.file().find_kv_entry(a + "ssm.time_step_rank"),
                        "(the Mamba-2 heads) does not divide " + a + "ssm.inner_size " + std::to_string(inner));
    }
    if (heads % groups != 0) {
        return md.error(*md.file().find_kv_entry(a + "ssm.group_count"), "does not divide the " + std::to_string(heads) + " Mamba-2 heads (" +
                                                                              a + "ssm.time_step_rank)");
    }
    return Status::ok();
}

Status read_delta_net_sizes(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(read_ssm_sizes(md, a, p, SsmKind::GatedDeltaNet));
    const int64_t inner = p.ssm.d_inner, head_k = p.ssm.d_state, v_heads = p.ssm.n_head, k_heads = p.ssm.n_group;
    if (inner % v_heads != 0 || inner / v_heads != head_k) {
        return md.error(*md.file().find_kv_entry(a + "ssm.inner_size"),
                        "is not " + a + "ssm.time_step_rank (" + std::to_string(v_heads) + " value heads) x " + a + "ssm.state_size (" +
                            std::to_string(head_k) + "): the delta net's key and value heads must be of one size");
    }
    if (v_heads % k_heads != 0) {
        return md.error(*md.file().find_kv_entry(a + "ssm.group_count"),
                        "(the key heads) does not divide the " + std::to_string(v_heads) + " value heads (" + a + "ssm.time_step_rank)");
    }
    return Status::ok();
}

Status read_recurrent_layers(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    if (md.is_array(a + "attention.recurrent_layers")) {
        XB_ASSIGN_OR_RETURN(p.recurrent, md.bool_per_layer(a + "attention.recurrent_layers", p.n_layers));
        return Status::ok();
    }
    XB_ASSIGN_OR_RETURN(const int64_t interval, md.integer(a + "full_attention_interval", 4, 1, 1 << 16));
    p.recurrent.clear();
    for (int il = 0; il < p.n_layers; ++il) p.recurrent.push_back((il + 1) % interval != 0);
    return Status::ok();
}

Status read_experts_beside_gated_shared(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(read_experts(md, a, p, "expert_feed_forward_length"));
    XB_ASSIGN_OR_RETURN(const int64_t shared, md.integer(a + "expert_shared_feed_forward_length", p.n_ff, 1, 1 << 18));
    ExpertParams& e = p.experts;
    e.gating = ExpertGating::Softmax;
    e.normalize = true;
    e.n_shared = 1;
    e.n_ff_shared = static_cast<int>(shared);
    e.shared_gate = true;
    return Status::ok();
}

Status sliding_window(const GgufMetadata& md, const std::string& a, DecoderParams& p, std::optional<int64_t> window,
                      int64_t pattern, double swa_base, float swa_scale, int64_t min_window) {
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

Status gemma_common(const std::string& a, DecoderParams& p, int layers_of_27b) {
    XB_RETURN_IF_ERROR(refuse_experts(a, p));
    p.embd_scale = std::sqrt(static_cast<float>(p.n_embd));
    const int d = p.n_layers == layers_of_27b ? p.n_embd / p.n_head : p.head_dim();
    p.q_scale = 1.0f / std::sqrt(static_cast<float>(d));
    return Status::ok();
}

}  // namespace xb::arch
