#include "models/mla_attention.hpp"

#include <cmath>

#include "core/ops.hpp"

namespace xb::decoder {

float mla_kq_scale(const DecoderParams& p) {
    // llama.cpp hands rope an attn_factor that cancels YaRN's magnitude correction (models/
    // gguf_model.cpp); DeepSeek puts that magnitude, with its own log multiplier, on the scores
    // instead.
    const float log_scale = std::log(1.0f / p.rope_freq_scale);
    const float attn_factor = p.rope_ext_factor != 0.0f ? p.rope_attn_factor * (1.0f + 0.1f * log_scale) : p.rope_attn_factor;
    const float mscale = attn_factor * (1.0f + 0.1f * p.mla.yarn_log_mul * log_scale);
    return mscale * mscale / std::sqrt(static_cast<float>(p.mla.qk_nope + p.rope_dims()));
}

Tensor* mla_attention(Context& ctx, const DecoderParams& p, Decoder& m, const LayerNames& n, int il, Tensor* x) {
    const LayerWeights& w = m.layers[static_cast<size_t>(il)];
    const MlaParams& a = p.mla;
    const int64_t t = p.n_tokens, rope_dims = p.rope_dims(), nope = a.qk_nope, latent = a.kv_lora_rank;
    const int64_t key = latent + rope_dims;  // the cache's row: the latent, then the key's rope part
    const RopeParams rope_params = layer_rope(p, il);

    // Queries [qk_nope + rope, n_head, t].
    Tensor* q = nullptr;
    if (w.wq_a != nullptr) {
        q = n.step(mul_mat(ctx, w.wq_a, x), "q", "a");
        q = norm(ctx, q, w.q_a_norm, p.rms_eps, "q" + n.suffix + " (a normed)");
        q = n.step(mul_mat(ctx, w.wq_b, q), "q", "b");
    } else {
        q = n.step(mul_mat(ctx, w.wq_b, x), "q", "mul_mat");
    }
    q = n(reshape(ctx, q, {nope + rope_dims, p.n_head, t, 1}), "q");
    const size_t fsize = sizeof(float);

    // The latent and the key's rope part of each token.
    Tensor* kv_pe = n(mul_mat(ctx, w.wkv_a_mqa, x), "kv_cmpr_pe");  // [latent + rope, t]
    Tensor* kv = n.step(view_2d(ctx, kv_pe, latent, t, kv_pe->nb[1], 0), "kv_cmpr", "view");
    Tensor* k_pe = n.step(view(ctx, kv_pe, {rope_dims, 1, t, 1}, {kv_pe->nb[1], kv_pe->nb[1], kv_pe->nb[1] * static_cast<size_t>(t)},
                               static_cast<size_t>(latent) * fsize),
                          "k_pe", "view");
    k_pe = n(rope(ctx, k_pe, m.positions, rope_params), "k_pe");
    kv = norm(ctx, kv, w.kv_a_norm, p.rms_eps, "kv_cmpr" + n.suffix);

    // Each head's query: its rope part rope'd, its other part carried into the latent space.
    Tensor* q_nope = n(view(ctx, q, {nope, p.n_head, t, 1}, {q->nb[1], q->nb[2], q->nb[3]}, 0), "q_nope");
    Tensor* q_pe = n.step(view(ctx, q, {rope_dims, p.n_head, t, 1}, {q->nb[1], q->nb[2], q->nb[3]}, static_cast<size_t>(nope) * fsize),
                          "q_pe", "view");
    q_pe = n(rope(ctx, q_pe, m.positions, rope_params), "q_pe");
    Tensor* q_nope_perm = n(permute(ctx, q_nope, {0, 2, 1, 3}), "q_nope_perm");         // [nope, t, n_head]
    Tensor* absorbed = n(mul_mat(ctx, w.wk_b, q_nope_perm), "q_nope_absorbed");          // [latent, t, n_head]
    Tensor* absorbed_perm = n(permute(ctx, absorbed, {0, 2, 1, 3}), "q_nope_absorbed_perm");  // [latent, n_head, t]
    Tensor* q_cur = n(concat(ctx, absorbed_perm, q_pe, 0), "Qcur");                      // [key, n_head, t]
    Tensor* k_cur = n(concat(ctx, n(reshape(ctx, kv, {latent, 1, t, 1}), "kv_cmpr_reshape"), k_pe, 0), "Kcur");  // [key, 1, t]

    // Keys [key, n_cells, 1]: the cache (this batch written into its cells) or the batch alone;
    // values: the keys' latent part.
    Tensor* k = p.n_kv > 0 ? through_cache(ctx, p, n, "Kcur", m.k_cache[static_cast<size_t>(il)], k_cur, m.kv_idxs,
                                           m.graph_outputs)
                           : n(reshape(ctx, k_cur, {key, t, 1, 1}), "k");
    Tensor* v = n(view(ctx, k, {latent, k->ne[1], 1, 1}, {k->nb[1], k->nb[2], k->nb[3]}, 0), "v");

    // Every head attends to the one latent head; its output leaves the latent space through attn_v_b.
    Tensor* q_heads = n(permute(ctx, q_cur, {0, 2, 1, 3}), "q");  // [key, t, n_head]
    Tensor* heads = attend(ctx, p, n, q_heads, k, v, m.kq_mask, nullptr, mla_kq_scale(p));  // [latent, n_head, t]
    Tensor* per_head = n.step(permute(ctx, heads, {0, 2, 1, 3}), "kqv", "per head");       // [latent, t, n_head]
    Tensor* out = n(mul_mat(ctx, w.wv_b, per_head), "kqv_mla");                             // [v_head, t, n_head]
    Tensor* merged = n(cont(ctx, permute(ctx, out, {0, 2, 1, 3})), "kqv_mla_merged");        // [v_head, n_head, t]
    Tensor* flat = n(reshape(ctx, merged, {static_cast<int64_t>(a.v_head) * p.n_head, t, 1, 1}), "kqv_out");
    return n(mul_mat(ctx, w.wo, flat), "attn_out");
}

}  // namespace xb::decoder
