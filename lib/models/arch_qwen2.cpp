// qwen2: Qwen2 and Qwen2.5, llama's layers with q/k/v biases and neox rope.
#include "models/arch_entries.hpp"
#include "models/arch_hparams.hpp"

namespace xb::arch {

namespace {

Status read_hparams(const GgufMetadata&, const std::string& a, DecoderParams& p) { return refuse_experts(a, p); }

void layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) {
    make.qkv(w, decoder::Need::Required);
    make.attn_output(w, decoder::Need::None);
    make.ffn(w, "ffn_norm");
}

Tensor* layer(const decoder::LayerGraph& g, Tensor* x) {
    return g.residual_ffn(g.self_attention(g.rope(g.qkv(g.norm(x, g.w.attn_norm, "attn_norm")))), x);
}

}  // namespace

const Architecture kQwen2{.name = "qwen2", .read_hparams = read_hparams, .layer_weights = layer_weights, .layer = layer};

}  // namespace xb::arch
