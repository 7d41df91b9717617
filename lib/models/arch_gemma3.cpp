// gemma3: Gemma 3, Gemma 2's layers with per-head Q/K norms and without soft-capped scores; when
// the file gives a window, five layers in six slide (or the file's per-layer list), with a local
// rope of base 10000 and no scaling, the global layers keeping the file's rope.
#include "models/arch_entries.hpp"
#include "models/arch_hparams.hpp"

namespace xb::arch {

namespace {

Status read_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(gemma_common(a, p, 62));
    XB_ASSIGN_OR_RETURN(const double final_cap, md.non_negative(a + "final_logit_softcapping", 0.0));
    p.final_softcap = static_cast<float>(final_cap);
    if (!md.has(a + "attention.sliding_window")) return Status::ok();
    return sliding_window(md, a, p, std::nullopt, 6, 10000.0, 1.0f, 0);
}

void layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) {
    make.qkv(w, decoder::Need::None);
    make.qk_norms(w);
    make.attn_output(w, decoder::Need::None);
    make.ffn(w, "ffn_norm");
    make.post_norms(w);
}

Tensor* layer(const decoder::LayerGraph& g, Tensor* x) {
    return g.residual_ffn(g.self_attention(g.rope(g.qk_norms(g.qkv(g.norm(x, g.w.attn_norm, "attn_norm"))))), x);
}

}  // namespace

const Architecture kGemma3{.name = "gemma3", .ffn_glu = GluOp::GeGlu, .read_hparams = read_hparams,
                           .layer_weights = layer_weights, .layer = layer};

}  // namespace xb::arch
