// deepseek2: DeepSeek V2/V3/R1 and Kimi K2: latent attention (models/mla_attention.hpp), leading
// dense layers, then experts with shared experts and (V3) sigmoid routing with a selection bias
// within groups of experts; normal-mode rope, YaRN (models/gguf_model.cpp). Files of the split
// form only (attn_k_b/attn_v_b, what llama.cpp's converter writes since it computes the absorbed
// form).
#include <algorithm>

#include "models/arch_entries.hpp"
#include "models/arch_hparams.hpp"

namespace xb::arch {

namespace {

Status read_latent_attention(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
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
    return Status::ok();
}

Status read_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(read_latent_attention(md, a, p));
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
    // V3's selection bias, on every expert layer: any layer's says the file has them, so that one
    // missing is named as missing rather than the others as extra.
    e.selection_bias = std::any_of(md.file().tensors().begin(), md.file().tensors().end(),
                                   [](const GgufTensorInfo& t) { return t.name.ends_with(".exp_probs_b.bias"); });
    e.n_group = static_cast<int>(groups);
    e.n_group_used = static_cast<int>(groups_used);
    return Status::ok();
}

void layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) {
    make.latent_attention(w);
    make.ffn(w, "ffn_norm");
}

Tensor* layer(const decoder::LayerGraph& g, Tensor* x) {
    return g.residual_ffn(g.latent_attention(g.norm(x, g.w.attn_norm, "attn_norm")), x);
}

}  // namespace

const Architecture kDeepseek2{.name = "deepseek2", .rope_mode = RopeMode::Normal, .read_hparams = read_hparams,
                              .layer_weights = layer_weights, .layer = layer};

}  // namespace xb::arch
