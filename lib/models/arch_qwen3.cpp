// qwen3: Qwen3, an RMS norm of each head of Q and K before rope; no biases. qwen3moe: Qwen3-MoE,
// the same layers with experts on every layer (a softmax router, its top-k renormalised), each
// expert expert_feed_forward_length wide: the two differ only in their hyperparameters.
#include "models/arch_entries.hpp"
#include "models/arch_hparams.hpp"

namespace xb::arch {

namespace {

Status read_hparams(const GgufMetadata&, const std::string& a, DecoderParams& p) { return refuse_experts(a, p); }

Status read_moe_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    p.experts.normalize = true;
    return read_experts(md, a, p, "expert_feed_forward_length");
}

void layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) {
    make.qkv(w, decoder::Need::None);
    make.qk_norms(w);
    make.attn_output(w, decoder::Need::None);
    make.ffn(w, "ffn_norm");
}

Tensor* layer(const decoder::LayerGraph& g, Tensor* x) {
    return g.residual_ffn(g.self_attention(g.rope(g.qk_norms(g.qkv(g.norm(x, g.w.attn_norm, "attn_norm"))))), x);
}

}  // namespace

const Architecture kQwen3{.name = "qwen3", .read_hparams = read_hparams, .layer_weights = layer_weights, .layer = layer};
const Architecture kQwen3Moe{.name = "qwen3moe", .read_hparams = read_moe_hparams, .layer_weights = layer_weights, .layer = layer};

}  // namespace xb::arch
