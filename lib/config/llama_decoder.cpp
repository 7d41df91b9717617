#include "config/llama_decoder.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "config/weight_rows.hpp"
#include "core/ops.hpp"

namespace xb {

double LlamaParams::matmul_flops() const {
    const double e = n_embd, kv = static_cast<double>(n_head_kv) * head_dim(), f = n_ff, t = n_tokens;
    const double per_layer = 2.0 * t * (e * e * 2 + e * kv * 2 + 3 * e * f);
    const double attention = 2.0 * 2.0 * t * n_attended() * e;  // q k^T and (kq) v over all heads
    return n_layers * (per_layer + attention) + 2.0 * t * e * n_vocab;
}

std::vector<Tensor*> LlamaDecoder::weights() const {
    std::vector<Tensor*> w = {tok_embd, out_norm, output};
    for (const LlamaLayerWeights& l : layers) {
        w.insert(w.end(), {l.attn_norm, l.wq, l.wk, l.wv, l.wo, l.ffn_norm, l.w_gate, l.w_up, l.w_down});
    }
    w.insert(w.end(), k_cache.begin(), k_cache.end());
    w.insert(w.end(), v_cache.begin(), v_cache.end());
    return w;
}

std::vector<int32_t> batch_positions(const LlamaParams& params) {
    std::vector<int32_t> pos(static_cast<size_t>(params.n_tokens));
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(params.n_attended() - params.n_tokens + static_cast<int>(i));
    return pos;
}

std::vector<float> causal_mask_values(int n_kv, int n_tokens) {
    std::vector<float> mask(static_cast<size_t>(n_kv) * n_tokens);
    for (int i = 0; i < n_tokens; ++i) {
        for (int j = 0; j < n_kv; ++j) {
            mask[static_cast<size_t>(i) * n_kv + j] = j <= i + (n_kv - n_tokens) ? 0.0f : -std::numeric_limits<float>::infinity();
        }
    }
    return mask;
}

namespace {

Tensor* named(Tensor* t, const std::string& name) {
    t->name = name;
    return t;
}

Tensor* weight(Context& ctx, DType type, std::initializer_list<int64_t> ne, const std::string& name) {
    return named(ctx.new_tensor(type, ne), name);
}

LlamaLayerWeights make_layer_weights(Context& ctx, const LlamaParams& p, int il) {
    const std::string pre = "blk." + std::to_string(il) + ".";
    const int64_t e = p.n_embd, kv = static_cast<int64_t>(p.n_head_kv) * p.head_dim(), f = p.n_ff;
    const DType wt = p.weight_type;
    return LlamaLayerWeights{
        weight(ctx, DType::F32, {e}, pre + "attn_norm"), weight(ctx, wt, {e, e}, pre + "attn_q"),
        weight(ctx, wt, {e, kv}, pre + "attn_k"),       weight(ctx, wt, {e, kv}, pre + "attn_v"),
        weight(ctx, wt, {e, e}, pre + "attn_output"),   weight(ctx, DType::F32, {e}, pre + "ffn_norm"),
        weight(ctx, wt, {e, f}, pre + "ffn_gate"),      weight(ctx, wt, {e, f}, pre + "ffn_up"),
        weight(ctx, wt, {f, e}, pre + "ffn_down"),
    };
}

// Attention of q [head_dim, n_tokens, n_head] over k, v [head_dim, n_attended, n_head_kv] (any
// strides); returns [n_embd, n_tokens].
Tensor* attention(Context& ctx, const LlamaParams& p, Tensor* q, Tensor* k, Tensor* v, Tensor* mask) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(p.head_dim()));
    const int64_t t = p.n_tokens;
    if (p.flash_attn) {
        Tensor* out = flash_attn_ext(ctx, q, k, v, mask, scale);  // [head_dim, n_head, n_tokens]
        return reshape(ctx, out, {p.n_embd, t, 1, 1});
    }
    Tensor* kq = mul_mat(ctx, k, q);                                  // [n_attended, n_tokens, n_head]
    kq = soft_max_ext(ctx, kq, mask, scale, 0.0f);
    Tensor* vt = cont(ctx, transpose(ctx, v));                        // [n_attended, head_dim, n_head_kv]
    Tensor* kqv = mul_mat(ctx, vt, kq);                               // [head_dim, n_tokens, n_head]
    Tensor* merged = permute(ctx, kqv, {0, 2, 1, 3});                 // [head_dim, n_head, n_tokens]
    return reshape(ctx, cont(ctx, merged), {p.n_embd, t, 1, 1});
}

// Writes the batch's k or v ([n_embd_kv, n_tokens]) into the cache's last n_tokens columns and
// returns the whole cache as [head_dim, n_kv, n_head_kv].
Tensor* through_cache(Context& ctx, const LlamaParams& p, Tensor* cache, Tensor* cur, std::vector<Tensor*>& writes) {
    const int64_t hd = p.head_dim(), kv_dim = cache->ne[0], t = p.n_tokens;
    const size_t row = cache->nb[1];
    Tensor* slot = view_2d(ctx, cache, kv_dim, t, row, row * static_cast<size_t>(p.n_kv - t));
    writes.push_back(cpy(ctx, reshape(ctx, cur, {kv_dim, t, 1, 1}), slot));
    return view(ctx, cache, {hd, p.n_kv, p.n_head_kv, 1},
                {row, static_cast<size_t>(hd) * type_size(cache->type), row * static_cast<size_t>(p.n_kv)}, 0);
}

Tensor* layer(Context& ctx, const LlamaParams& p, LlamaDecoder& m, size_t il, Tensor* x) {
    const LlamaLayerWeights& w = m.layers[il];
    const int64_t hd = p.head_dim(), t = p.n_tokens;
    RopeParams rope_params;
    rope_params.n_dims = p.rope_n_dims > 0 ? p.rope_n_dims : static_cast<int>(hd);
    rope_params.mode = p.rope_mode;
    rope_params.freq_base = p.rope_freq_base;
    rope_params.freq_scale = p.rope_freq_scale;

    Tensor* cur = mul(ctx, rms_norm(ctx, x, p.rms_eps), w.attn_norm);
    Tensor* q = rope(ctx, reshape(ctx, mul_mat(ctx, w.wq, cur), {hd, p.n_head, t, 1}), m.positions, rope_params);
    Tensor* k = rope(ctx, reshape(ctx, mul_mat(ctx, w.wk, cur), {hd, p.n_head_kv, t, 1}), m.positions, rope_params);
    Tensor* v = mul_mat(ctx, w.wv, cur);
    q = permute(ctx, q, {0, 2, 1, 3});
    if (p.n_kv > 0) {
        k = through_cache(ctx, p, m.k_cache[il], k, m.graph_outputs);
        v = through_cache(ctx, p, m.v_cache[il], v, m.graph_outputs);
    } else {
        k = permute(ctx, k, {0, 2, 1, 3});
        v = permute(ctx, reshape(ctx, v, {hd, p.n_head_kv, t, 1}), {0, 2, 1, 3});
    }
    Tensor* attn = attention(ctx, p, q, k, v, m.kq_mask);
    Tensor* h = add(ctx, mul_mat(ctx, w.wo, attn), x);

    Tensor* ffn_in = mul(ctx, rms_norm(ctx, h, p.rms_eps), w.ffn_norm);
    Tensor* act = glu_split(ctx, mul_mat(ctx, w.w_gate, ffn_in), mul_mat(ctx, w.w_up, ffn_in), GluOp::SwiGlu);
    return add(ctx, mul_mat(ctx, w.w_down, act), h);
}

}  // namespace

Result<LlamaDecoder> build_llama_decoder(Context& ctx, const LlamaParams& p) {
    if (p.n_layers < 1 || p.n_embd < 1 || p.n_head < 1 || p.n_head_kv < 1 || p.n_ff < 1 || p.n_tokens < 1 ||
        p.n_vocab < 1) {
        return Status(StatusCode::InvalidArgument, "llama_decoder: every size must be positive");
    }
    if (p.n_kv != 0 && p.n_kv < p.n_tokens) {
        return Status(StatusCode::InvalidArgument, "llama_decoder: n_kv must be 0 (no cache) or at least n_tokens");
    }
    if (p.n_embd % p.n_head != 0 || p.n_head % p.n_head_kv != 0 || p.head_dim() % 2 != 0) {
        return Status(StatusCode::InvalidArgument,
                      "llama_decoder: n_embd must divide into n_head heads of even size, and n_head_kv must divide n_head");
    }
    XB_RETURN_IF_ERROR(check_weight_rows("llama_decoder", p.weight_type, {{"n_embd", p.n_embd}, {"n_ff", p.n_ff}}));
    LlamaDecoder m{};
    m.tokens = named(ctx.new_tensor(DType::I32, {p.n_tokens}), "tokens");
    m.positions = named(ctx.new_tensor(DType::I32, {p.n_tokens}), "positions");
    m.kq_mask = named(ctx.new_tensor(DType::F16, {p.n_attended(), p.n_tokens}), "kq_mask");
    for (Tensor* in : m.inputs()) in->set_input();
    m.tok_embd = weight(ctx, p.weight_type, {p.n_embd, p.n_vocab}, "token_embd");
    const int64_t kv_dim = static_cast<int64_t>(p.n_head_kv) * p.head_dim();
    for (int il = 0; il < p.n_layers; ++il) {
        m.layers.push_back(make_layer_weights(ctx, p, il));
        if (p.n_kv > 0) {
            const std::string pre = "cache." + std::to_string(il) + ".";
            m.k_cache.push_back(named(ctx.new_tensor(DType::F32, {kv_dim, p.n_kv}), pre + "k"));
            m.v_cache.push_back(named(ctx.new_tensor(DType::F32, {kv_dim, p.n_kv}), pre + "v"));
        }
    }
    m.out_norm = weight(ctx, DType::F32, {p.n_embd}, "output_norm");
    m.output = weight(ctx, p.weight_type, {p.n_embd, p.n_vocab}, "output");

    Tensor* x = get_rows(ctx, m.tok_embd, m.tokens);
    for (size_t il = 0; il < m.layers.size(); ++il) x = layer(ctx, p, m, il, x);
    x = mul(ctx, rms_norm(ctx, x, p.rms_eps), m.out_norm);
    m.logits = named(mul_mat(ctx, m.output, x), "logits");
    m.logits->set_output();
    m.graph_outputs.push_back(m.logits);
    if (!ctx.ok()) return ctx.status();
    return m;
}

}  // namespace xb
