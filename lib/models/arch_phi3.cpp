// phi3: Phi-3, 3.5 and 4-mini: one attn_qkv matrix (or three, in some files), the gate's and the
// up's rows in one ffn_up matrix, Q scaled by 1/sqrt(head size), long/short rope factors (chosen
// by the context: models/gguf_model.cpp) and an output bias in some files. llama.cpp ignores
// Phi-3's sliding window (its files' windows are not what the models used), and so does this.
#include <cmath>

#include "models/arch_entries.hpp"
#include "models/arch_hparams.hpp"

namespace xb::arch {

namespace {

Status read_hparams(const GgufMetadata&, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(refuse_experts(a, p));
    p.q_scale = 1.0f / std::sqrt(static_cast<float>(p.head_dim()));
    return Status::ok();
}

void layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) {
    make.qkv(w, decoder::Need::Optional, /*fused=*/true);
    make.attn_output(w, decoder::Need::None);
    make.ffn(w, "ffn_norm", /*fused_gate_up=*/true);
}

Tensor* layer(const decoder::LayerGraph& g, Tensor* x) {
    return g.residual_ffn(g.self_attention(g.rope(g.qkv(g.norm(x, g.w.attn_norm, "attn_norm")))), x);
}

}  // namespace

const Architecture kPhi3{.name = "phi3", .read_hparams = read_hparams, .layer_weights = layer_weights, .layer = layer,
                         .output_bias = true};

}  // namespace xb::arch
