#include "models/llama_decoder.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "models/weight_rows.hpp"
#include "core/ops.hpp"

namespace xb {

double LlamaParams::matmul_flops() const {
    const double e = n_embd, q = static_cast<double>(n_embd_q()), kv = static_cast<double>(n_embd_kv()), f = n_ff,
                 t = n_tokens;
    const double per_layer = 2.0 * t * (e * q * 2 + e * kv * 2 + 3 * e * f);
    const double attention = 2.0 * 2.0 * t * n_attended() * q;  // q k^T and (kq) v over all heads
    return n_layers * (per_layer + attention) + 2.0 * t * e * n_vocab;
}

std::vector<Tensor*> LlamaLayerWeights::all() const {
    std::vector<Tensor*> w;
    for (Tensor* t : {attn_norm, wq, wk, wv, bq, bk, bv, wo, ffn_norm, w_gate, w_up, w_down}) {
        if (t != nullptr) w.push_back(t);
    }
    return w;
}

std::vector<Tensor*> LlamaDecoder::weights() const {
    std::vector<Tensor*> w = {tok_embd, out_norm};
    if (output != tok_embd) w.push_back(output);
    if (rope_freqs != nullptr) w.push_back(rope_freqs);
    for (const LlamaLayerWeights& l : layers) {
        const std::vector<Tensor*> lw = l.all();
        w.insert(w.end(), lw.begin(), lw.end());
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

// Makes the weights with llama.cpp's names and each one's type (the caller's choice, or the
// builder's fallback).
class WeightMaker {
public:
    WeightMaker(Context& ctx, const LlamaParams& p, const LlamaWeightTypes& types) : ctx_(ctx), p_(p), types_(types) {}

    Tensor* matrix(const std::string& name, int64_t cols, int64_t rows) { return make(name, p_.weight_type, {cols, rows}); }
    Tensor* vector(const std::string& name, int64_t n) { return make(name, DType::F32, {n}); }

    LlamaLayerWeights layer(int il) {
        const std::string pre = "blk." + std::to_string(il) + ".";
        const int64_t e = p_.n_embd, q = p_.n_embd_q(), kv = p_.n_embd_kv(), f = p_.n_ff;
        LlamaLayerWeights w{};
        w.attn_norm = vector(pre + "attn_norm.weight", e);
        w.wq = matrix(pre + "attn_q.weight", e, q);
        w.wk = matrix(pre + "attn_k.weight", e, kv);
        w.wv = matrix(pre + "attn_v.weight", e, kv);
        if (p_.qkv_bias) {
            w.bq = vector(pre + "attn_q.bias", q);
            w.bk = vector(pre + "attn_k.bias", kv);
            w.bv = vector(pre + "attn_v.bias", kv);
        }
        w.wo = matrix(pre + "attn_output.weight", q, e);
        w.ffn_norm = vector(pre + "ffn_norm.weight", e);
        w.w_gate = matrix(pre + "ffn_gate.weight", e, f);
        w.w_up = matrix(pre + "ffn_up.weight", e, f);
        w.w_down = matrix(pre + "ffn_down.weight", f, e);
        return w;
    }

private:
    Tensor* make(const std::string& name, DType fallback, std::initializer_list<int64_t> ne) {
        return named(ctx_.new_tensor(types_ ? types_(name, fallback) : fallback, ne), name);
    }

    Context& ctx_;
    const LlamaParams& p_;
    const LlamaWeightTypes& types_;
};

// Names the nodes of one layer: "Qcur-0", and for the earlier nodes of the same value
// "Qcur-0 (mul_mat)".
struct LayerNames {
    std::string suffix;  // "-0"
    Tensor* operator()(Tensor* t, const char* name) const { return named(t, name + suffix); }
    Tensor* step(Tensor* t, const char* name, const char* op) const { return named(t, name + suffix + " (" + op + ")"); }
};

// rms_norm(x) * w, named `name` (the rms_norm node `name (rms_norm)`).
Tensor* norm(Context& ctx, Tensor* x, Tensor* w, float eps, const std::string& name) {
    Tensor* n = named(rms_norm(ctx, x, eps), name + " (rms_norm)");
    return named(mul(ctx, n, w), name);
}

// Attention of q [head_dim, n_tokens, n_head] over k, v [head_dim, n_attended, n_head_kv] (any
// strides); returns [n_embd_q, n_tokens], named kqv_out-<il>.
Tensor* attention(Context& ctx, const LlamaParams& p, const LayerNames& n, Tensor* q, Tensor* k, Tensor* v, Tensor* mask) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(p.head_dim()));
    const int64_t t = p.n_tokens;
    if (p.flash_attn) {
        Tensor* out = n(flash_attn_ext(ctx, q, k, v, mask, scale), "__fattn__");  // [head_dim, n_head, n_tokens]
        return n(reshape(ctx, out, {p.n_embd_q(), t, 1, 1}), "kqv_out");
    }
    Tensor* kq = n(mul_mat(ctx, k, q), "kq");                              // [n_attended, n_tokens, n_head]
    kq = n(soft_max_ext(ctx, kq, mask, scale, 0.0f), "kq_soft_max");
    Tensor* vt = n.step(cont(ctx, n.step(transpose(ctx, v), "v", "transposed")), "v", "cont");  // [n_attended, head_dim, n_head_kv]
    Tensor* kqv = n(mul_mat(ctx, vt, kq), "kqv");                          // [head_dim, n_tokens, n_head]
    Tensor* merged = n(permute(ctx, kqv, {0, 2, 1, 3}), "kqv_merged");     // [head_dim, n_head, n_tokens]
    Tensor* merged_cont = n(cont(ctx, merged), "kqv_merged_cont");
    return n(reshape(ctx, merged_cont, {p.n_embd_q(), t, 1, 1}), "kqv_out");
}

// Writes the batch's k or v ([n_embd_kv, n_tokens], named `what`) into the cache's last n_tokens
// columns and returns the whole cache as [head_dim, n_kv, n_head_kv], named k-<il> / v-<il>.
Tensor* through_cache(Context& ctx, const LlamaParams& p, const LayerNames& n, const char* what, Tensor* cache, Tensor* cur,
                      std::vector<Tensor*>& writes) {
    const bool is_k = what[0] == 'K';
    const int64_t hd = p.head_dim(), kv_dim = cache->ne[0], t = p.n_tokens;
    const size_t row = cache->nb[1];
    Tensor* slot = n(view_2d(ctx, cache, kv_dim, t, row, row * static_cast<size_t>(p.n_kv - t)), is_k ? "k_cache_view" : "v_cache_view");
    Tensor* flat = n.step(reshape(ctx, cur, {kv_dim, t, 1, 1}), what, "flattened");
    writes.push_back(named(cpy(ctx, flat, slot), slot->name + " (copy of " + cur->name + ")"));
    return n(view(ctx, cache, {hd, p.n_kv, p.n_head_kv, 1},
                  {row, static_cast<size_t>(hd) * type_size(cache->type), row * static_cast<size_t>(p.n_kv)}, 0),
             is_k ? "k" : "v");
}

// x @ w (+ b), reshaped to heads [head_dim, n_heads, n_tokens]: the projection for Qcur, Kcur or
// Vcur, named as the value's earlier steps.
Tensor* project(Context& ctx, const LayerNames& n, const char* what, Tensor* w, Tensor* b, Tensor* x, int64_t hd, int64_t heads,
                int64_t t) {
    Tensor* y = n.step(mul_mat(ctx, w, x), what, "mul_mat");
    if (b != nullptr) y = n.step(add(ctx, y, b), what, "bias");
    return n.step(reshape(ctx, y, {hd, heads, t, 1}), what, "reshaped");
}

Tensor* layer(Context& ctx, const LlamaParams& p, LlamaDecoder& m, size_t il, Tensor* x) {
    const LlamaLayerWeights& w = m.layers[il];
    const LayerNames n{"-" + std::to_string(il)};
    const int64_t hd = p.head_dim(), t = p.n_tokens;
    RopeParams rope_params;
    rope_params.n_dims = p.rope_dims();
    rope_params.mode = p.rope_mode;
    rope_params.freq_base = p.rope_freq_base;
    rope_params.freq_scale = p.rope_freq_scale;

    Tensor* cur = norm(ctx, x, w.attn_norm, p.rms_eps, "attn_norm" + n.suffix);
    Tensor* q = project(ctx, n, "Qcur", w.wq, w.bq, cur, hd, p.n_head, t);
    q = n(rope(ctx, q, m.positions, rope_params, m.rope_freqs), "Qcur");
    Tensor* k = project(ctx, n, "Kcur", w.wk, w.bk, cur, hd, p.n_head_kv, t);
    k = n(rope(ctx, k, m.positions, rope_params, m.rope_freqs), "Kcur");
    Tensor* v = project(ctx, n, "Vcur", w.wv, w.bv, cur, hd, p.n_head_kv, t);
    v->name = "Vcur" + n.suffix;  // the last step of Vcur is its reshape (llama.cpp names it so too)
    q = n(permute(ctx, q, {0, 2, 1, 3}), "q");
    if (p.n_kv > 0) {
        k = through_cache(ctx, p, n, "Kcur", m.k_cache[il], k, m.graph_outputs);
        v = through_cache(ctx, p, n, "Vcur", m.v_cache[il], v, m.graph_outputs);
    } else {
        k = n(permute(ctx, k, {0, 2, 1, 3}), "k");
        v = n(permute(ctx, v, {0, 2, 1, 3}), "v");
    }
    Tensor* attn = attention(ctx, p, n, q, k, v, m.kq_mask);
    Tensor* h = n(add(ctx, n(mul_mat(ctx, w.wo, attn), "attn_out"), x), "ffn_inp");

    Tensor* ffn_in = norm(ctx, h, w.ffn_norm, p.rms_eps, "ffn_norm" + n.suffix);
    Tensor* gate = n(mul_mat(ctx, w.w_gate, ffn_in), "ffn_gate");
    Tensor* up = n(mul_mat(ctx, w.w_up, ffn_in), "ffn_up");
    Tensor* act = n(glu_split(ctx, gate, up, GluOp::SwiGlu), "ffn_swiglu");
    return n(add(ctx, n(mul_mat(ctx, w.w_down, act), "ffn_out"), h), "l_out");
}

Status check_params(const LlamaParams& p) {
    if (p.n_layers < 1 || p.n_embd < 1 || p.n_head < 1 || p.n_head_kv < 1 || p.n_ff < 1 || p.n_tokens < 1 ||
        p.n_vocab < 1 || p.n_embd_head < 0) {
        return Status(StatusCode::InvalidArgument, "llama_decoder: every size must be positive");
    }
    if (p.n_kv != 0 && p.n_kv < p.n_tokens) {
        return Status(StatusCode::InvalidArgument, "llama_decoder: n_kv must be 0 (no cache) or at least n_tokens");
    }
    if (p.n_head % p.n_head_kv != 0) {
        return Status(StatusCode::InvalidArgument, "llama_decoder: n_head_kv (" + std::to_string(p.n_head_kv) +
                                                       ") must divide n_head (" + std::to_string(p.n_head) + ")");
    }
    if ((p.n_embd_head == 0 && p.n_embd % p.n_head != 0) || p.head_dim() % 2 != 0) {
        return Status(StatusCode::InvalidArgument, "llama_decoder: n_embd (" + std::to_string(p.n_embd) +
                                                       ") must divide into n_head (" + std::to_string(p.n_head) +
                                                       ") heads of even size");
    }
    if (p.rope_n_dims < 0 || p.rope_n_dims > p.head_dim() || p.rope_n_dims % 2 != 0) {
        return Status(StatusCode::InvalidArgument, "llama_decoder: rope n_dims (" + std::to_string(p.rope_n_dims) +
                                                       ") must be even and at most the head size " + std::to_string(p.head_dim()));
    }
    return Status::ok();
}

}  // namespace

Result<LlamaDecoder> build_llama_decoder(Context& ctx, const LlamaParams& p, const LlamaWeightTypes& types) {
    XB_RETURN_IF_ERROR(check_params(p));
    if (!types) {
        XB_RETURN_IF_ERROR(check_weight_rows("llama_decoder", p.weight_type, {{"n_embd", p.n_embd}, {"n_ff", p.n_ff}}));
        XB_RETURN_IF_ERROR(check_weight_rows("llama_decoder", p.weight_type, {{"n_head x head size", p.n_embd_q()}}));
    }
    LlamaDecoder m{};
    m.tokens = named(ctx.new_tensor(DType::I32, {p.n_tokens}), "tokens");
    m.positions = named(ctx.new_tensor(DType::I32, {p.n_tokens}), "positions");
    m.kq_mask = named(ctx.new_tensor(DType::F16, {p.n_attended(), p.n_tokens}), "kq_mask");
    for (Tensor* in : m.inputs()) in->set_input();
    WeightMaker make(ctx, p, types);
    m.tok_embd = make.matrix("token_embd.weight", p.n_embd, p.n_vocab);
    for (int il = 0; il < p.n_layers; ++il) {
        m.layers.push_back(make.layer(il));
        if (p.n_kv > 0) {
            const std::string l = std::to_string(il);
            m.k_cache.push_back(named(ctx.new_tensor(DType::F32, {p.n_embd_kv(), p.n_kv}), "cache_k_l" + l));
            m.v_cache.push_back(named(ctx.new_tensor(DType::F32, {p.n_embd_kv(), p.n_kv}), "cache_v_l" + l));
        }
    }
    m.out_norm = make.vector("output_norm.weight", p.n_embd);
    m.output = p.tied_output ? m.tok_embd : make.matrix("output.weight", p.n_embd, p.n_vocab);
    m.rope_freqs = p.rope_freq_factors ? make.vector("rope_freqs.weight", p.rope_dims() / 2) : nullptr;

    Tensor* x = named(get_rows(ctx, m.tok_embd, m.tokens), "inp_embd");
    for (size_t il = 0; il < m.layers.size(); ++il) x = layer(ctx, p, m, il, x);
    x = norm(ctx, x, m.out_norm, p.rms_eps, "result_norm");
    m.logits = named(mul_mat(ctx, m.output, x), "result_output");
    m.logits->set_output();
    m.graph_outputs.push_back(m.logits);
    if (!ctx.ok()) return ctx.status();
    return m;
}

}  // namespace xb
