// granitehybrid: IBM's Granite 4.0-H (350M to 32B-A9B), a hybrid of Mamba-2 layers (the
// selective state space of layer_graph.hpp's mamba2, a convolution state and a scan state each)
// and attention layers, every layer then a SwiGLU FFN: dense, or experts (softmax, top-k,
// renormalised) beside a shared expert of its own width. The file marks the Mamba-2 layers by a
// head_count_kv of 0 in its per-layer array. Granite's multipliers scale the embeddings, the
// attention scores (instead of 1/sqrt(head size)), both residual branches and the logits (divided).
// Granite 4.0-H ropes nothing (rope.scaling.finetuned false); files that rope (Bamba) rope
// normal-mode.
#include "models/arch_entries.hpp"
#include "models/arch_hparams.hpp"

namespace xb::arch {

namespace {

Status read_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(read_mamba2_sizes(md, a, p));
    XB_ASSIGN_OR_RETURN(const double embd_scale, md.non_negative(a + "embedding_scale", 0.0));
    XB_ASSIGN_OR_RETURN(const double kq_scale, md.non_negative(a + "attention.scale", 0.0));
    XB_ASSIGN_OR_RETURN(const double residual_scale, md.non_negative(a + "residual_scale", 0.0));
    XB_ASSIGN_OR_RETURN(const double logit_scale, md.non_negative(a + "logit_scale", 0.0));
    XB_ASSIGN_OR_RETURN(p.rope, md.boolean(a + "rope.scaling.finetuned", true));
    p.embd_scale = static_cast<float>(embd_scale);
    p.kq_scale = static_cast<float>(kq_scale);
    p.residual_scale = static_cast<float>(residual_scale);
    p.logit_scale = static_cast<float>(logit_scale);
    if (!p.has_experts()) return Status::ok();
    // The experts' hidden size is feed_forward_length; the shared expert has its own.
    XB_RETURN_IF_ERROR(read_experts(md, a, p, ""));
    XB_ASSIGN_OR_RETURN(const int64_t shared, md.integer(a + "expert_shared_feed_forward_length", 0, 0, 1 << 18));
    ExpertParams& e = p.experts;
    e.gating = ExpertGating::Softmax;
    e.normalize = true;
    e.n_shared = shared > 0 ? 1 : 0;
    e.n_ff_shared = static_cast<int>(shared);
    return Status::ok();
}

void layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) {
    const DecoderParams& p = make.params();
    if (p.layer_is_recurrent(make.layer())) {
        w.attn_norm = make.vector("attn_norm.weight", p.n_embd);
        make.mamba2(w);
    } else {
        make.qkv(w, decoder::Need::Optional);
        make.attn_output(w, decoder::Need::Optional);
    }
    make.ffn(w, "ffn_norm");
}

Tensor* layer(const decoder::LayerGraph& g, Tensor* x) {
    Tensor* in = g.norm(x, g.w.attn_norm, "attn_norm");
    Tensor* mixed = g.p.layer_is_recurrent(g.il) ? g.mamba2(in) : g.self_attention(g.rope(g.qkv(in)));
    Tensor* h = g.attn_residual(g.residual_scaled(mixed), x);
    Tensor* out = g.ffn(g.norm(h, g.w.ffn_norm, "ffn_norm"));
    return g.layer_out(g.residual_scaled(out), h);
}

}  // namespace

const Architecture kGraniteHybrid{.name = "granitehybrid", .rope_mode = RopeMode::Normal, .read_hparams = read_hparams,
                                  .layer_weights = layer_weights, .layer = layer, .hybrid = true};

}  // namespace xb::arch
