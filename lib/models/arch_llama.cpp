// llama: Llama 1/2/3, Mistral, SmolLM; Mixtral is llama with experts (a softmax router, its top-k
// renormalised). Normal-mode rope; q/k/v biases where a file has them.
#include "models/arch_entries.hpp"
#include "models/arch_hparams.hpp"

namespace xb::arch {

namespace {

Status read_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    if (!p.has_experts()) return Status::ok();
    if (md.file().find_tensor("blk.0.ffn_gate.0.weight") != nullptr) {
        return Status(StatusCode::NotSupported, md.file().path() + ": the experts are stored one tensor each (blk.0.ffn_gate.0.weight, "
                                                                   "an old Mixtral conversion): convert the model again with a current llama.cpp");
    }
    p.experts.normalize = true;
    return read_experts(md, a, p, "");
}

void layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) {
    make.qkv(w, decoder::Need::Optional);
    make.attn_output(w, decoder::Need::None);
    make.ffn(w, "ffn_norm");
}

Tensor* layer(const decoder::LayerGraph& g, Tensor* x) {
    return g.residual_ffn(g.self_attention(g.rope(g.qkv(g.norm(x, g.w.attn_norm, "attn_norm")))), x);
}

}  // namespace

const Architecture kLlama{.name = "llama", .rope_mode = RopeMode::Normal, .read_hparams = read_hparams,
                          .layer_weights = layer_weights, .layer = layer};

}  // namespace xb::arch
