#include "models/attention.hpp"

#include <cmath>
#include <string>

#include "models/weight_rows.hpp"
#include "core/ops.hpp"

namespace xb {

std::vector<Tensor*> AttentionBlock::inputs() const {
    std::vector<Tensor*> in = {input};
    if (memory != nullptr) in.push_back(memory);
    in.push_back(kq_mask);
    return in;
}

namespace {

Tensor* named(Tensor* t, const char* name) {
    t->name = name;
    return t;
}

// x [n_embd, n] projected by w and split into heads: [head_dim, n, heads] (permuted view).
Tensor* heads(Context& ctx, Tensor* w, Tensor* x, int64_t head_dim, int64_t n_heads, int64_t n) {
    Tensor* projected = reshape(ctx, mul_mat(ctx, w, x), {head_dim, n_heads, n, 1});
    return permute(ctx, projected, {0, 2, 1, 3});
}

}  // namespace

Result<AttentionBlock> build_attention(Context& ctx, const AttentionParams& p) {
    if (p.n_embd < 1 || p.n_head < 1 || p.n_head_kv < 1 || p.n_tokens < 1 || p.n_kv < 0) {
        return Status(StatusCode::InvalidArgument, "attention: every size must be positive");
    }
    if (p.n_kv != 0 && p.n_kv < p.n_tokens) {
        return Status(StatusCode::InvalidArgument, "attention: n_kv must be 0 (self-attention) or at least n_tokens");
    }
    if (p.n_embd % p.n_head != 0 || p.n_head % p.n_head_kv != 0) {
        return Status(StatusCode::InvalidArgument,
                      "attention: n_embd must divide into n_head heads, and n_head_kv must divide n_head");
    }
    XB_RETURN_IF_ERROR(check_weight_rows("attention", p.weight_type, {{"n_embd", p.n_embd}}));
    const int64_t e = p.n_embd, hd = p.head_dim(), kv_dim = static_cast<int64_t>(p.n_head_kv) * hd;
    const int64_t t = p.n_tokens, n_att = p.n_attended();
    AttentionBlock b{};
    b.input = named(ctx.new_tensor(DType::F32, {e, t}), "input");
    b.memory = p.n_kv > 0 ? named(ctx.new_tensor(DType::F32, {e, n_att}), "memory") : nullptr;
    b.kq_mask = named(ctx.new_tensor(DType::F16, {n_att, t}), "kq_mask");
    for (Tensor* in : b.inputs()) in->set_input();
    b.wq = named(ctx.new_tensor(p.weight_type, {e, e}), "attn_q");
    b.wk = named(ctx.new_tensor(p.weight_type, {e, kv_dim}), "attn_k");
    b.wv = named(ctx.new_tensor(p.weight_type, {e, kv_dim}), "attn_v");
    b.wo = named(ctx.new_tensor(p.weight_type, {e, e}), "attn_output");

    Tensor* src = b.memory != nullptr ? b.memory : b.input;
    Tensor* q = heads(ctx, b.wq, b.input, hd, p.n_head, t);     // [hd, t, n_head]
    Tensor* k = heads(ctx, b.wk, src, hd, p.n_head_kv, n_att);  // [hd, n_att, n_head_kv]
    Tensor* v = heads(ctx, b.wv, src, hd, p.n_head_kv, n_att);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    Tensor* attn = nullptr;
    if (p.flash_attn) {
        attn = reshape(ctx, flash_attn_ext(ctx, q, k, v, b.kq_mask, scale), {e, t, 1, 1});
    } else {
        Tensor* kq = soft_max_ext(ctx, mul_mat(ctx, k, q), b.kq_mask, scale, 0.0f);  // [n_att, t, n_head]
        Tensor* kqv = mul_mat(ctx, cont(ctx, transpose(ctx, v)), kq);                 // [hd, t, n_head]
        attn = reshape(ctx, cont(ctx, permute(ctx, kqv, {0, 2, 1, 3})), {e, t, 1, 1});
    }
    b.output = named(mul_mat(ctx, b.wo, attn), "output");
    b.output->set_output();
    if (!ctx.ok()) return ctx.status();
    return b;
}

}  // namespace xb
