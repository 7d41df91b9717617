// gpt-oss: q/k/v and output biases, a learned sink logit per head in each softmax, a sliding
// window on every other layer, and experts on every layer with biases, a clamped SwiGLU and a
// softmax over the chosen experts' logits. Its pre-FFN norm is named post_attention_norm.
#include "models/arch_entries.hpp"
#include "models/arch_hparams.hpp"

namespace xb::arch {

namespace {

Status read_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    p.experts.gating = ExpertGating::SoftmaxOfChosen;
    p.experts.biases = true;
    XB_RETURN_IF_ERROR(read_experts(md, a, p, "expert_feed_forward_length"));
    return sliding_window(md, a, p, std::nullopt, 2, p.rope_freq_base, p.rope_freq_scale);
}

void layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) {
    make.qkv(w, decoder::Need::Required);
    make.attn_output(w, decoder::Need::Required);
    w.sinks = make.vector("attn_sinks.weight", make.params().n_head);
    make.ffn(w, "post_attention_norm");
}

Tensor* layer(const decoder::LayerGraph& g, Tensor* x) {
    return g.residual_ffn(g.self_attention(g.rope(g.qkv(g.norm(x, g.w.attn_norm, "attn_norm")))), x);
}

}  // namespace

const Architecture kGptOss{.name = "gpt-oss", .ffn_glu = GluOp::SwiGluOai, .read_hparams = read_hparams,
                           .layer_weights = layer_weights, .layer = layer};

}  // namespace xb::arch
