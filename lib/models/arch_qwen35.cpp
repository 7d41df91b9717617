// qwen35, qwen35moe, qwen3next: the Qwen hybrids of gated delta nets and full attention.
//
// Qwen3.5 (0.8B to 27B dense; 35B-A3B to 397B-A17B with experts): three gated delta net layers
// (layer_graph.hpp's gated_delta_net: linear attention with a convolution state and a [head, head]
// state per head) to one full attention layer (read_recurrent_layers), whose query comes with a
// sigmoid output gate and Q/K norms; partial rope (rope.dimension_count of the head). Every layer
// then a SwiGLU FFN after post_attention_norm: dense, or (qwen35moe) experts beside a
// sigmoid-gated shared expert. The multi-section rope (rope.dimension_sections) equals neox rope
// for text, every section's position being the token's.
//
// Qwen3-Next (qwen3next, 80B-A3B; Qwen3.5's predecessor, always with experts) builds the same
// layers from other tensors: ssm_ba holds beta and alpha per key head, older files fuse attn_qkv
// and attn_gate into ssm_in, and its value heads stay grouped by key head
// (SsmParams::grouped_heads); neox rope without sections.
#include "models/arch_entries.hpp"
#include "models/arch_hparams.hpp"

namespace xb::arch {

namespace {

Status read_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(refuse_experts(a, p));
    XB_RETURN_IF_ERROR(read_delta_net_sizes(md, a, p));
    return read_recurrent_layers(md, a, p);
}

Status read_moe_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(read_delta_net_sizes(md, a, p));
    XB_RETURN_IF_ERROR(read_recurrent_layers(md, a, p));
    return read_experts_beside_gated_shared(md, a, p);
}

// Qwen3-Next: Qwen3.5-MoE's predecessor, always with experts; its value heads stay in HF's grouped
// order (the converter does not reorder them), so q and k are repeated to them head by head.
Status read_qwen3next_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(read_moe_hparams(md, a, p));
    p.ssm.grouped_heads = true;
    return Status::ok();
}

// The full attention layers' and every layer's FFN weights; `delta_net` names a recurrent layer's.
void hybrid_layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w, void (*delta_net)(decoder::LayerWeightMaker&, LayerWeights&)) {
    const DecoderParams& p = make.params();
    const int64_t e = p.n_embd;
    w.attn_norm = make.vector("attn_norm.weight", e);
    if (p.layer_is_recurrent(make.layer())) {
        delta_net(make, w);
    } else {
        w.wq = make.matrix("attn_q.weight", e, 2 * p.n_embd_q());  // each head's query and gate
        w.wk = make.matrix("attn_k.weight", e, p.n_embd_kv());
        w.wv = make.matrix("attn_v.weight", e, p.n_embd_kv());
        make.qk_norms(w);
        w.wo = make.matrix("attn_output.weight", p.n_embd_q(), e);
    }
    make.ffn(w, "post_attention_norm");
}

// The delta net's weights both families name alike.
void delta_net_common(decoder::LayerWeightMaker& make, LayerWeights& w) {
    const DecoderParams& p = make.params();
    const SsmParams& s = p.ssm;
    w.ssm_conv = make.tensor("ssm_conv1d.weight", DType::F32, {p.conv_kernel, s.conv_channels()});
    w.ssm_dt_b = make.vector("ssm_dt.bias", s.n_head);
    w.ssm_a = make.vector("ssm_a", s.n_head);  // no ".weight", as llama.cpp names it
    w.ssm_norm = make.vector("ssm_norm.weight", s.head_dim());
    w.ssm_out = make.matrix("ssm_out.weight", s.d_inner, p.n_embd);
}

void qwen35_delta_net(decoder::LayerWeightMaker& make, LayerWeights& w) {
    const SsmParams& s = make.params().ssm;
    const int64_t e = make.params().n_embd;
    w.delta_qkv = make.matrix("attn_qkv.weight", e, s.conv_channels());
    w.delta_z = make.matrix("attn_gate.weight", e, s.d_inner);
    w.ssm_beta = make.matrix("ssm_beta.weight", e, s.n_head);
    w.ssm_alpha = make.matrix("ssm_alpha.weight", e, s.n_head);
    delta_net_common(make, w);
}

// Qwen3-Next: beta and alpha fused (ssm_ba); attn_qkv and attn_gate, or in older files both fused
// into ssm_in (llama.cpp reads either).
void qwen3next_delta_net(decoder::LayerWeightMaker& make, LayerWeights& w) {
    const SsmParams& s = make.params().ssm;
    const int64_t e = make.params().n_embd;
    if (make.has("ssm_in.weight")) {
        w.ssm_in = make.matrix("ssm_in.weight", e, s.conv_channels() + s.d_inner);
    } else {
        w.delta_qkv = make.matrix("attn_qkv.weight", e, s.conv_channels());
        w.delta_z = make.matrix("attn_gate.weight", e, s.d_inner);
    }
    w.ssm_beta_alpha = make.matrix("ssm_ba.weight", e, 2 * static_cast<int64_t>(s.n_head));
    delta_net_common(make, w);
}

void layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) { hybrid_layer_weights(make, w, qwen35_delta_net); }
void qwen3next_layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) { hybrid_layer_weights(make, w, qwen3next_delta_net); }

Tensor* layer(const decoder::LayerGraph& g, Tensor* x) {
    Tensor* in = g.norm(x, g.w.attn_norm, "attn_norm");
    Tensor* mixed = g.p.layer_is_recurrent(g.il) ? g.gated_delta_net(in) : g.gated_attention(in);
    return g.residual_ffn(mixed, x);
}

}  // namespace

const Architecture kQwen35{.name = "qwen35", .read_hparams = read_hparams, .layer_weights = layer_weights, .layer = layer, .hybrid = true};
const Architecture kQwen35Moe{.name = "qwen35moe", .read_hparams = read_moe_hparams, .layer_weights = layer_weights, .layer = layer,
                              .hybrid = true};
const Architecture kQwen3Next{.name = "qwen3next", .read_hparams = read_qwen3next_hparams, .layer_weights = qwen3next_layer_weights,
                              .layer = layer, .hybrid = true};

}  // namespace xb::arch
