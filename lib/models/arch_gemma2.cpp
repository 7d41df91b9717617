// gemma2: Gemma 2, embeddings scaled by sqrt(n_embd), norms after the attention and after the
// FFN as well as before, GeGLU, soft-capped scores and logits, and a sliding window on every
// other layer (the even ones) with the global rope.
#include "models/arch_entries.hpp"
#include "models/arch_hparams.hpp"

namespace xb::arch {

namespace {

Status read_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(gemma_common(a, p, 46));
    XB_ASSIGN_OR_RETURN(const double attn_cap, md.non_negative(a + "attn_logit_softcapping", 50.0));
    XB_ASSIGN_OR_RETURN(const double final_cap, md.non_negative(a + "final_logit_softcapping", 30.0));
    p.attn_softcap = static_cast<float>(attn_cap);
    p.final_softcap = static_cast<float>(final_cap);
    return sliding_window(md, a, p, 4096, 2, p.rope_freq_base, p.rope_freq_scale);
}

void layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) {
    make.qkv(w, decoder::Need::None);
    make.attn_output(w, decoder::Need::None);
    make.ffn(w, "ffn_norm");
    make.post_norms(w);
}

Tensor* layer(const decoder::LayerGraph& g, Tensor* x) {
    return g.residual_ffn(g.self_attention(g.rope(g.qkv(g.norm(x, g.w.attn_norm, "attn_norm")))), x);
}

}  // namespace

const Architecture kGemma2{.name = "gemma2", .ffn_glu = GluOp::GeGlu, .read_hparams = read_hparams,
                           .layer_weights = layer_weights, .layer = layer};

}  // namespace xb::arch
