#include "models/llama_decoder.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "models/decoder_blocks.hpp"
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

using decoder::LayerNames;
using decoder::named;

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

Tensor* layer(Context& ctx, const LlamaParams& p, LlamaDecoder& m, size_t il, Tensor* x) {
    const LlamaLayerWeights& w = m.layers[il];
    const LayerNames n{"-" + std::to_string(il)};
    const int64_t hd = p.head_dim(), t = p.n_tokens;
    RopeParams rope_params;
    rope_params.n_dims = p.rope_dims();
    rope_params.mode = p.rope_mode;
    rope_params.freq_base = p.rope_freq_base;
    rope_params.freq_scale = p.rope_freq_scale;

    Tensor* cur = decoder::norm(ctx, x, w.attn_norm, p.rms_eps, "attn_norm" + n.suffix);
    Tensor* q = decoder::project(ctx, n, "Qcur", w.wq, w.bq, cur, hd, p.n_head, t);
    q = n(rope(ctx, q, m.positions, rope_params, m.rope_freqs), "Qcur");
    Tensor* k = decoder::project(ctx, n, "Kcur", w.wk, w.bk, cur, hd, p.n_head_kv, t);
    k = n(rope(ctx, k, m.positions, rope_params, m.rope_freqs), "Kcur");
    Tensor* v = decoder::project(ctx, n, "Vcur", w.wv, w.bv, cur, hd, p.n_head_kv, t);
    v->name = "Vcur" + n.suffix;  // the last step of Vcur is its reshape (llama.cpp names it so too)
    q = n(permute(ctx, q, {0, 2, 1, 3}), "q");
    if (p.n_kv > 0) {
        k = decoder::through_cache(ctx, p, n, "Kcur", m.k_cache[il], k, m.graph_outputs);
        v = decoder::through_cache(ctx, p, n, "Vcur", m.v_cache[il], v, m.graph_outputs);
    } else {
        k = n(permute(ctx, k, {0, 2, 1, 3}), "k");
        v = n(permute(ctx, v, {0, 2, 1, 3}), "v");
    }
    Tensor* attn = decoder::attention(ctx, p, n, q, k, v, m.kq_mask);
    Tensor* h = n(add(ctx, n(mul_mat(ctx, w.wo, attn), "attn_out"), x), "ffn_inp");

    Tensor* ffn_in = decoder::norm(ctx, h, w.ffn_norm, p.rms_eps, "ffn_norm" + n.suffix);
    Tensor* ffn = decoder::gated_ffn(ctx, n, ffn_in, w.w_gate, w.w_up, w.w_down, GluOp::SwiGlu);
    return n(add(ctx, ffn, h), "l_out");
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
    x = decoder::norm(ctx, x, m.out_norm, p.rms_eps, "result_norm");
    m.logits = named(mul_mat(ctx, m.output, x), "result_output");
    m.logits->set_output();
    m.graph_outputs.push_back(m.logits);
    if (!ctx.ok()) return ctx.status();
    return m;
}

}  // namespace xb
