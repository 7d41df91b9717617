#include "models/layer_graph.hpp"

#include "core/ops.hpp"
#include "models/mla_attention.hpp"
#include "models/moe_ffn.hpp"

namespace xb::decoder {

Tensor* LayerGraph::norm(Tensor* x, Tensor* weight, const char* name) const {
    return decoder::norm(ctx, x, weight, p.rms_eps, name + n.suffix);
}

QkvViews LayerGraph::qkv(Tensor* x) const {
    const int64_t hd = p.head_dim(), t = p.n_tokens;
    if (w.wqkv != nullptr) {
        Tensor* fused = n(mul_mat(ctx, w.wqkv, x), "wqkv");
        if (w.bqkv != nullptr) fused = n(add(ctx, fused, w.bqkv), "bqkv");
        return split_qkv(ctx, p, n, fused);
    }
    QkvViews h{};
    h.q = project(ctx, n, "Qcur", w.wq, w.bq, x, hd, p.n_head, t);
    h.k = project(ctx, n, "Kcur", w.wk, w.bk, x, hd, p.n_head_kv, t);
    h.v = project(ctx, n, "Vcur", w.wv, w.bv, x, hd, p.n_head_kv, t);
    return h;
}

QkvViews LayerGraph::qk_norms(const QkvViews& h) const {
    return {decoder::norm(ctx, h.q, w.q_norm, p.rms_eps, "Qcur_normed" + n.suffix),
            decoder::norm(ctx, h.k, w.k_norm, p.rms_eps, "Kcur_normed" + n.suffix), h.v};
}

QkvViews LayerGraph::rope(const QkvViews& h) const {
    const RopeParams rope_params = layer_rope(p, il);
    Tensor* q = xb::rope(ctx, h.q, m.positions, rope_params, m.rope_factors);
    Tensor* k = n(xb::rope(ctx, h.k, m.positions, rope_params, m.rope_factors), "Kcur");
    q = p.q_scale > 0.0f ? n(scale(ctx, n.step(q, "Qcur", "rope"), p.q_scale), "Qcur") : n(q, "Qcur");
    h.v->name = "Vcur" + n.suffix;  // the last step of Vcur is its reshape or view (llama.cpp names it so too)
    return {q, k, h.v};
}

Tensor* LayerGraph::self_attention(const QkvViews& h) const {
    Tensor* q = n(permute(ctx, h.q, {0, 2, 1, 3}), "q");
    Tensor* k = nullptr;
    Tensor* v = nullptr;
    if (p.n_kv > 0) {
        k = through_cache(ctx, p, n, "Kcur", m.k_cache[static_cast<size_t>(il)], h.k, m.graph_outputs);
        v = through_cache(ctx, p, n, "Vcur", m.v_cache[static_cast<size_t>(il)], h.v, m.graph_outputs);
    } else {
        k = n(permute(ctx, h.k, {0, 2, 1, 3}), "k");
        v = n(permute(ctx, h.v, {0, 2, 1, 3}), "v");
    }
    Tensor* mask = p.swa.slides(il) ? m.kq_mask_swa : m.kq_mask;
    Tensor* out = n(mul_mat(ctx, w.wo, attention(ctx, p, n, q, k, v, mask, w.sinks)), "attn_out");
    if (w.bo != nullptr) out = n(add(ctx, n.step(out, "attn_out", "mul_mat"), w.bo), "attn_out");
    return out;
}

Tensor* LayerGraph::latent_attention(Tensor* x) const { return mla_attention(ctx, p, m, n, il, x); }

Tensor* LayerGraph::attn_residual(Tensor* attn, Tensor* x) const {
    // The last layer's FFN (and everything after it) needs only the rows whose logits are asked
    // for: the attention output and the residual shrink to them here, as in llama.cpp.
    if (il == p.n_layers - 1 && m.out_ids != nullptr) {
        attn = get_rows(ctx, attn, m.out_ids);
        x = get_rows(ctx, x, m.out_ids);
    }
    return n(add(ctx, attn, x), "ffn_inp");
}

Tensor* LayerGraph::ffn(Tensor* x, GluOp glu) const {
    if (w.router != nullptr) return moe_ffn(ctx, p, n, w, x, glu);
    return gated_ffn(ctx, n, x, w.w_gate, w.w_up, w.w_down, glu);
}

Tensor* LayerGraph::layer_out(Tensor* ffn, Tensor* h) const { return n(add(ctx, ffn, h), "l_out"); }

Tensor* LayerGraph::residual_ffn(Tensor* attn, Tensor* x, GluOp glu, const char* ffn_norm) const {
    if (w.attn_post_norm != nullptr) attn = norm(attn, w.attn_post_norm, "attn_post_norm");
    Tensor* h = attn_residual(attn, x);
    Tensor* out = ffn(norm(h, w.ffn_norm, ffn_norm), glu);
    if (w.ffn_post_norm != nullptr) out = norm(out, w.ffn_post_norm, "ffn_post_norm");
    return layer_out(out, h);
}

}  // namespace xb::decoder
