// qwen35, qwen35moe: Qwen3.5 (0.8B to 27B dense; 35B-A3B to 397B-A17B with experts), a hybrid: three gated delta net layers (layer_graph.hpp's
// gated_delta_net: linear attention with a convolution state and a [head, head] state per head) to
// one full attention layer (full_attention_interval, 4 by default: layer il attends when
// (il + 1) % interval == 0), whose query comes with a sigmoid output gate and Q/K norms; partial
// rope (rope.dimension_count of the head). Every layer then a SwiGLU FFN after
// post_attention_norm: dense, or (qwen35moe) experts beside a sigmoid-gated shared expert. The multi-section rope (rope.dimension_sections) equals neox rope for text,
// every section's position being the token's.
#include "models/arch_entries.hpp"
#include "models/arch_hparams.hpp"

namespace xb::arch {

namespace {

Status read_delta_net(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(read_ssm_sizes(md, a, p, SsmKind::GatedDeltaNet));
    const int64_t inner = p.ssm.d_inner, head_k = p.ssm.d_state, v_heads = p.ssm.n_head, k_heads = p.ssm.n_group;
    if (inner % v_heads != 0 || inner / v_heads != head_k) {
        return md.error(*md.file().find_kv_entry(a + "ssm.inner_size"),
                        "is not " + a + "ssm.time_step_rank (" + std::to_string(v_heads) + " value heads) x " + a + "ssm.state_size (" +
                            std::to_string(head_k) + "): the delta net's key and value heads must be of one size");
    }
    if (v_heads % k_heads != 0) {
        return md.error(*md.file().find_kv_entry(a + "ssm.group_count"),
                        "(the key heads) does not divide the " + std::to_string(v_heads) + " value heads (" + a + "ssm.time_step_rank)");
    }
    return Status::ok();
}

// Which layers are delta nets: the file's attention.recurrent_layers (one bool per layer), else
// every layer but each full_attention_interval-th (llama.cpp's order of preference).
Status read_layer_kinds(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    if (md.is_array(a + "attention.recurrent_layers")) {
        XB_ASSIGN_OR_RETURN(p.recurrent, md.bool_per_layer(a + "attention.recurrent_layers", p.n_layers));
        return Status::ok();
    }
    XB_ASSIGN_OR_RETURN(const int64_t interval, md.integer(a + "full_attention_interval", 4, 1, 1 << 16));
    p.recurrent.clear();
    for (int il = 0; il < p.n_layers; ++il) p.recurrent.push_back((il + 1) % interval != 0);
    return Status::ok();
}

Status read_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(refuse_experts(a, p));
    XB_RETURN_IF_ERROR(read_delta_net(md, a, p));
    return read_layer_kinds(md, a, p);
}

// Qwen3.5-MoE: the experts (softmax, top-k, renormalised) beside one shared expert of its own
// width, gated per token by a sigmoid.
Status read_moe_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(read_delta_net(md, a, p));
    XB_RETURN_IF_ERROR(read_layer_kinds(md, a, p));
    XB_RETURN_IF_ERROR(read_experts(md, a, p, "expert_feed_forward_length"));
    XB_ASSIGN_OR_RETURN(const int64_t shared, md.integer(a + "expert_shared_feed_forward_length", std::nullopt, 1, 1 << 18));
    ExpertParams& e = p.experts;
    e.gating = ExpertGating::Softmax;
    e.normalize = true;
    e.n_shared = 1;
    e.n_ff_shared = static_cast<int>(shared);
    e.shared_gate = true;
    return Status::ok();
}

void layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) {
    const DecoderParams& p = make.params();
    const SsmParams& s = p.ssm;
    const int64_t e = p.n_embd;
    w.attn_norm = make.vector("attn_norm.weight", e);
    if (p.layer_is_recurrent(make.layer())) {
        w.delta_qkv = make.matrix("attn_qkv.weight", e, s.conv_channels());
        w.delta_z = make.matrix("attn_gate.weight", e, s.d_inner);
        w.ssm_conv = make.tensor("ssm_conv1d.weight", DType::F32, {p.conv_kernel, s.conv_channels()});
        w.ssm_dt_b = make.vector("ssm_dt.bias", s.n_head);
        w.ssm_a = make.vector("ssm_a", s.n_head);  // no ".weight", as llama.cpp names it
        w.ssm_beta = make.matrix("ssm_beta.weight", e, s.n_head);
        w.ssm_alpha = make.matrix("ssm_alpha.weight", e, s.n_head);
        w.ssm_norm = make.vector("ssm_norm.weight", s.head_dim());
        w.ssm_out = make.matrix("ssm_out.weight", s.d_inner, e);
    } else {
        w.wq = make.matrix("attn_q.weight", e, 2 * p.n_embd_q());  // each head's query and gate
        w.wk = make.matrix("attn_k.weight", e, p.n_embd_kv());
        w.wv = make.matrix("attn_v.weight", e, p.n_embd_kv());
        make.qk_norms(w);
        w.wo = make.matrix("attn_output.weight", p.n_embd_q(), e);
    }
    make.ffn(w, "post_attention_norm");
}

Tensor* layer(const decoder::LayerGraph& g, Tensor* x) {
    Tensor* in = g.norm(x, g.w.attn_norm, "attn_norm");
    Tensor* mixed = g.p.layer_is_recurrent(g.il) ? g.gated_delta_net(in) : g.gated_attention(in);
    return g.residual_ffn(mixed, x);
}

}  // namespace

const Architecture kQwen35{.name = "qwen35", .read_hparams = read_hparams, .layer_weights = layer_weights, .layer = layer, .hybrid = true};
const Architecture kQwen35Moe{.name = "qwen35moe", .read_hparams = read_moe_hparams, .layer_weights = layer_weights, .layer = layer,
                              .hybrid = true};

}  // namespace xb::arch
