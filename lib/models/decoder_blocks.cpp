#include "models/decoder_blocks.hpp"

#include <cmath>

namespace xb::decoder {

Tensor* named(Tensor* t, const std::string& name) {
    t->name = name;
    return t;
}

Tensor* norm(Context& ctx, Tensor* x, Tensor* w, float eps, const std::string& name) {
    Tensor* n = named(rms_norm(ctx, x, eps), name + " (rms_norm)");
    return named(mul(ctx, n, w), name);
}

Tensor* attend(Context& ctx, const DecoderParams& p, const LayerNames& n, Tensor* q, Tensor* k, Tensor* v, Tensor* mask,
               Tensor* sinks, float scale) {
    if (p.flash_attn) return n(flash_attn_ext(ctx, q, k, v, mask, scale, 0.0f, p.attn_softcap, sinks), "__fattn__");
    Tensor* kq = n(mul_mat(ctx, k, q), "kq");  // [n_attended, n_tokens, n_head]
    // The cap applies to the scores before the softmax's scale (1 for the variants that cap).
    if (p.attn_softcap > 0.0f) kq = softcap(ctx, kq, p.attn_softcap, "kq_softcapped" + n.suffix);
    kq = n(soft_max_ext(ctx, kq, mask, scale, 0.0f, sinks), "kq_soft_max");
    Tensor* vt = n.step(cont(ctx, n.step(transpose(ctx, v), "v", "transposed")), "v", "cont");  // [n_attended, dv, n_head_kv]
    Tensor* kqv = n(mul_mat(ctx, vt, kq), "kqv");                          // [dv, n_tokens, n_head]
    Tensor* merged = n(permute(ctx, kqv, {0, 2, 1, 3}), "kqv_merged");     // [dv, n_head, n_tokens]
    return n(cont(ctx, merged), "kqv_merged_cont");
}

Tensor* attention(Context& ctx, const DecoderParams& p, const LayerNames& n, Tensor* q, Tensor* k, Tensor* v, Tensor* mask,
                  Tensor* sinks) {
    // A variant that scales Q itself (q_scale) leaves the scores unscaled, as llama.cpp's graph;
    // Granite gives the scores' scale (kq_scale).
    float scale = p.q_scale > 0.0f ? 1.0f : 1.0f / std::sqrt(static_cast<float>(p.head_dim()));
    if (p.kq_scale > 0.0f) scale = p.kq_scale;
    Tensor* heads = attend(ctx, p, n, q, k, v, mask, sinks, scale);
    return n(reshape(ctx, heads, {p.n_embd_q(), p.n_tokens, 1, 1}), "kqv_out");
}

RopeParams layer_rope(const DecoderParams& p, int il) {
    RopeParams r;
    r.n_dims = p.rope_dims();
    r.mode = p.rope_mode;
    const bool slides = p.swa.slides(il);
    r.freq_base = slides ? p.swa.rope_freq_base : p.rope_freq_base;
    r.freq_scale = slides ? p.swa.rope_freq_scale : p.rope_freq_scale;
    r.n_ctx_orig = p.rope_n_ctx_orig;
    r.ext_factor = p.rope_ext_factor;
    r.attn_factor = p.rope_attn_factor;
    r.beta_fast = p.rope_beta_fast;
    r.beta_slow = p.rope_beta_slow;
    return r;
}

QkvViews split_qkv(Context& ctx, const DecoderParams& p, const LayerNames& n, Tensor* qkv) {
    const int64_t hd = p.head_dim(), t = p.n_tokens;
    const size_t elem = type_size(qkv->type), row = qkv->nb[1], head = static_cast<size_t>(hd) * elem;
    auto part = [&](const char* what, int64_t heads, int64_t first_row) {
        return n.step(view(ctx, qkv, {hd, heads, t, 1}, {head, row, row * static_cast<size_t>(t)}, static_cast<size_t>(first_row) * elem),
                      what, "view");
    };
    return {part("Qcur", p.n_head, 0), part("Kcur", p.n_head_kv, p.n_embd_q()), part("Vcur", p.n_head_kv, p.n_embd_q() + p.n_embd_kv())};
}

Tensor* softcap(Context& ctx, Tensor* x, float c, const std::string& name) {
    Tensor* scaled = named(scale(ctx, x, 1.0f / c), name + " (scaled)");
    Tensor* capped = named(tanh(ctx, scaled), name + " (tanh)");
    return named(scale(ctx, capped, c), name);
}

Tensor* through_cache(Context& ctx, const DecoderParams& p, const LayerNames& n, const char* what, Tensor* cache, Tensor* cur,
                      Tensor* cells, std::vector<Tensor*>& writes) {
    const bool is_k = what[0] == 'K';
    // The heads as the batch has them: [head_dim, n_head_kv] of a layer, or latent attention's one
    // head of the latent and the key's rope part.
    const int64_t hd = cur->ne[0], heads = cur->ne[1], kv_dim = cache->ne[0], t = p.n_tokens;
    const size_t row = cache->nb[1];
    // A view into a fused QKV product (Phi-3) is made contiguous first: set_rows writes whole rows.
    Tensor* rows = cur->is_contiguous() ? cur : n.step(cont(ctx, cur), what, "cont");
    Tensor* flat = n.step(reshape(ctx, rows, {kv_dim, t, 1, 1}), what, "flattened");
    // The batch's rows go to the cells `cells` names (the batch's positions), so that one graph
    // serves a batch at any place in the cache (llama.cpp's k_idxs / v_idxs).
    writes.push_back(named(set_rows(ctx, cache, flat, cells), cache->name + " (rows of " + cur->name + ")"));
    return n(view(ctx, cache, {hd, p.n_cells(), heads, 1},
                  {row, static_cast<size_t>(hd) * type_size(cache->type), row * static_cast<size_t>(p.n_cells())}, 0),
             is_k ? "k" : "v");
}

Tensor* project(Context& ctx, const LayerNames& n, const char* what, Tensor* w, Tensor* b, Tensor* x, int64_t hd, int64_t heads,
                int64_t t) {
    Tensor* y = n.step(mul_mat(ctx, w, x), what, "mul_mat");
    if (b != nullptr) y = n.step(add(ctx, y, b), what, "bias");
    return n.step(reshape(ctx, y, {hd, heads, t, 1}), what, "reshaped");
}

Tensor* gated_ffn(Context& ctx, const LayerNames& n, Tensor* x, Tensor* gate, Tensor* up, Tensor* down, GluOp op) {
    const char* act_name = op == GluOp::SwiGlu ? "ffn_swiglu" : "ffn_geglu";
    Tensor* act = nullptr;
    if (gate == nullptr) {
        act = n(glu(ctx, n(mul_mat(ctx, up, x), "ffn_up"), op), act_name);  // the first half is the gate
    } else {
        Tensor* g = n(mul_mat(ctx, gate, x), "ffn_gate");
        Tensor* u = n(mul_mat(ctx, up, x), "ffn_up");
        act = n(glu_split(ctx, g, u, op), act_name);
    }
    return n(mul_mat(ctx, down, act), "ffn_out");
}

}  // namespace xb::decoder
