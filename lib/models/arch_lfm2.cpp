// lfm2: Liquid AI's LFM2 (350M to 2.6B), a hybrid: most layers are gated short convolutions
// (layer_graph.hpp's short_conv: a depthwise causal convolution of shortconv.l_cache inputs, its
// state the last l_cache - 1), the others attention with per-head Q/K norms and neox rope; every
// layer then a SwiGLU FFN. The file marks the convolution layers by a head_count_kv of 0 in its
// per-layer array. The final norm is token_embd_norm (the converter's name for it). With a
// sliding window in the file, every attention layer slides.
//
// lfm2moe: LFM2-8B-A1B and LFM2-24B-A2B, the same layers with the FFN of every layer after the
// first leading_dense_block_count a mixture of SwiGLU experts: sigmoid scores, the k best of the
// scores plus the selection bias (exp_probs_b), weighted by their unbiased scores normalised to sum
// to 1. llama.cpp reads the gating function from the file and neither scales the weights nor adds
// transformers' 1e-6 to their sum.
#include "models/arch_entries.hpp"
#include "models/arch_hparams.hpp"

namespace xb::arch {

namespace {

// The convolution's width and the attention layers' window, LFM2's and LFM2-MoE's alike.
Status read_conv_and_window(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_ASSIGN_OR_RETURN(const int64_t width, md.integer(a + "shortconv.l_cache", std::nullopt, 2, 64));
    p.conv_kernel = static_cast<int>(width);
    if (!md.has(a + "attention.sliding_window")) return Status::ok();
    XB_ASSIGN_OR_RETURN(const int64_t window, md.integer(a + "attention.sliding_window", std::nullopt, 0));
    p.swa.window = static_cast<int>(window);
    p.swa.rope_freq_base = p.rope_freq_base;
    p.swa.rope_freq_scale = p.rope_freq_scale;
    for (int il = 0; il < p.n_layers; ++il) p.swa.layers.push_back(!p.layer_is_recurrent(il));
    return Status::ok();
}

Status read_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(refuse_experts(a, p));
    return read_conv_and_window(md, a, p);
}

Status read_moe_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(read_conv_and_window(md, a, p));
    XB_ASSIGN_OR_RETURN(const int64_t dense, md.integer(a + "leading_dense_block_count", 0, 0, p.n_layers));
    p.n_dense_lead = static_cast<int>(dense);
    XB_RETURN_IF_ERROR(read_experts(md, a, p, "expert_feed_forward_length"));
    // 1 softmax, 2 sigmoid (what the converter writes); llama.cpp needs the key.
    XB_ASSIGN_OR_RETURN(const int64_t gating, md.integer(a + "expert_gating_func", std::nullopt, 1, 2));
    ExpertParams& e = p.experts;
    e.gating = gating == 2 ? ExpertGating::Sigmoid : ExpertGating::Softmax;
    e.normalize = true;
    e.selection_bias = true;
    e.weights_scale = 1.0f;  // llama.cpp's lfm2moe reads no expert_weights_scale
    return Status::ok();
}

void layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) {
    const DecoderParams& p = make.params();
    const int64_t e = p.n_embd;
    if (p.layer_is_recurrent(make.layer())) {
        w.attn_norm = make.vector("attn_norm.weight", e);
        w.conv_kernel = make.tensor("shortconv.conv.weight", DType::F32, {p.conv_kernel, e});
        w.conv_in = make.matrix("shortconv.in_proj.weight", e, 3 * e);
        w.conv_out = make.matrix("shortconv.out_proj.weight", e, e);
    } else {
        make.qkv(w, decoder::Need::None);
        make.qk_norms(w);
        make.attn_output(w, decoder::Need::None);
    }
    make.ffn(w, "ffn_norm");
}

Tensor* layer(const decoder::LayerGraph& g, Tensor* x) {
    Tensor* in = g.norm(x, g.w.attn_norm, "attn_norm");
    Tensor* mixed = g.p.layer_is_recurrent(g.il) ? g.short_conv(in) : g.self_attention(g.rope(g.qk_norms(g.qkv(in))));
    return g.residual_ffn(mixed, x);
}

}  // namespace

const Architecture kLfm2{.name = "lfm2", .read_hparams = read_hparams, .layer_weights = layer_weights, .layer = layer,
                         .output_norm = "token_embd_norm.weight", .hybrid = true};
const Architecture kLfm2Moe{.name = "lfm2moe", .read_hparams = read_moe_hparams, .layer_weights = layer_weights, .layer = layer,
                            .output_norm = "token_embd_norm.weight", .hybrid = true};

}  // namespace xb::arch
