// Builders of reductions, normalisation, softmax, rope, matrix products and attention.
#include <limits>

#include "core/op_builder.hpp"
#include "core/op_math.hpp"
#include "core/ops.hpp"

namespace xb {

using detail::check_float;
using detail::check_float_or_quantized;
using detail::check_not_null;
using detail::describe;
using detail::make_node;
using detail::op_error;

namespace {

Tensor* row_reduction(Context& ctx, Op op, Tensor* a, DType type) {
    const char* name = op_name(op);
    if (!check_not_null(ctx, name, {a})) return ctx.placeholder();
    if (!check_float(ctx, name, "a", *a)) return ctx.placeholder(a);
    return make_node(ctx, op, type, {1, a->ne[1], a->ne[2], a->ne[3]}, {a});
}

Tensor* normalization(Context& ctx, Op op, Tensor* a, float eps) {
    const char* name = op_name(op);
    if (!check_not_null(ctx, name, {a})) return ctx.placeholder();
    if (!check_float(ctx, name, "a", *a)) return ctx.placeholder(a);
    if (!(eps >= 0.0f)) return ctx.fail(op_error(name, "eps must not be negative"), a);
    Tensor* t = make_node(ctx, op, a->type, a->ne, {a});
    NormParams{.eps = eps}.store(*t);
    return t;
}

// mask [n0, >= n1, m2, m3] broadcast over dims 2 and 3 of `scores`.
bool check_mask(Context& ctx, const char* op, const Tensor& mask, int64_t n_cols, const Tensor& scores) {
    const bool ok = (mask.type == DType::F32 || mask.type == DType::F16) && mask.ne[0] == n_cols &&
                    mask.ne[1] >= scores.ne[1] && mask.ne[2] > 0 && mask.ne[3] > 0 &&
                    scores.ne[2] % mask.ne[2] == 0 && scores.ne[3] % mask.ne[3] == 0;
    if (!ok) {
        ctx.fail(op_error(op, describe("mask", mask) + " must be f32/f16 [" + std::to_string(n_cols) +
                                  ", >= " + std::to_string(scores.ne[1]) + ", m2, m3] dividing " +
                                  describe("scores", scores)));
    }
    return ok;
}

}  // namespace

Tensor* sum(Context& ctx, Tensor* a) {
    if (!check_not_null(ctx, "sum", {a})) return ctx.placeholder();
    if (!check_float(ctx, "sum", "a", *a)) return ctx.placeholder(a);
    return make_node(ctx, Op::Sum, DType::F32, {1, 1, 1, 1}, {a});
}
Tensor* sum_rows(Context& ctx, Tensor* a) { return row_reduction(ctx, Op::SumRows, a, a ? a->type : DType::F32); }
Tensor* mean(Context& ctx, Tensor* a) { return row_reduction(ctx, Op::Mean, a, DType::F32); }

Tensor* argmax(Context& ctx, Tensor* a) {
    if (!check_not_null(ctx, "argmax", {a})) return ctx.placeholder();
    if (!check_float(ctx, "argmax", "a", *a)) return ctx.placeholder(a);
    if (a->ne[2] != 1 || a->ne[3] != 1) return ctx.fail(op_error("argmax", describe("a", *a) + " must be a matrix"), a);
    return make_node(ctx, Op::Argmax, DType::I32, {a->ne[1], 1, 1, 1}, {a});
}

Tensor* argsort(Context& ctx, Tensor* a, SortOrder order) {
    if (!check_not_null(ctx, "argsort", {a})) return ctx.placeholder();
    if (!check_float(ctx, "argsort", "a", *a)) return ctx.placeholder(a);
    if (order != SortOrder::Ascending && order != SortOrder::Descending) {
        return ctx.fail(op_error("argsort", "the order must be ascending (0) or descending (1)"), a);
    }
    if (a->ne[0] > std::numeric_limits<int32_t>::max()) {
        return ctx.fail(op_error("argsort", describe("a", *a) + " has rows longer than an i32 index reaches"), a);
    }
    Tensor* t = make_node(ctx, Op::Argsort, DType::I32, a->ne, {a});
    ArgsortParams{.order = order}.store(*t);
    return t;
}

Tensor* top_k(Context& ctx, Tensor* a, int k) {
    Tensor* sorted = argsort(ctx, a, SortOrder::Descending);
    if (!ctx.ok()) return sorted;
    if (k < 1 || k > a->ne[0]) {
        return ctx.fail(op_error("top_k", "k " + std::to_string(k) + " must be in [1, " + std::to_string(a->ne[0]) + "]"), a);
    }
    return view(ctx, sorted, {k, a->ne[1], a->ne[2], a->ne[3]}, {sorted->nb[1], sorted->nb[2], sorted->nb[3]}, 0);
}

Tensor* norm(Context& ctx, Tensor* a, float eps) { return normalization(ctx, Op::Norm, a, eps); }
Tensor* rms_norm(Context& ctx, Tensor* a, float eps) { return normalization(ctx, Op::RmsNorm, a, eps); }
Tensor* l2_norm(Context& ctx, Tensor* a, float eps) { return normalization(ctx, Op::L2Norm, a, eps); }

Tensor* soft_max(Context& ctx, Tensor* a) { return soft_max_ext(ctx, a, nullptr, 1.0f, 0.0f); }

namespace {

// Sinks: contiguous f32 [n_heads], one logit per head.
bool check_sinks(Context& ctx, const char* op, const Tensor* sinks, int64_t n_heads) {
    if (sinks == nullptr) return true;
    if (sinks->type != DType::F32 || sinks->nelements() != n_heads || sinks->ne[0] != n_heads || !sinks->is_contiguous()) {
        ctx.fail(op_error(op, describe("sinks", *sinks) + " must be contiguous f32 [" + std::to_string(n_heads) +
                                  "] (one per head)"));
        return false;
    }
    return true;
}

}  // namespace

Tensor* soft_max_ext(Context& ctx, Tensor* a, Tensor* mask, float scale, float max_bias, Tensor* sinks) {
    if (!check_not_null(ctx, "soft_max", {a})) return ctx.placeholder();
    if (a->type != DType::F32) return ctx.fail(op_error("soft_max", describe("a", *a) + " must be f32"), a);
    if (mask != nullptr && !check_mask(ctx, "soft_max", *mask, a->ne[0], *a)) return ctx.placeholder(a);
    if (max_bias > 0.0f && mask == nullptr) {
        return ctx.fail(op_error("soft_max", "max_bias (ALiBi) needs a mask"), a);
    }
    if (!check_sinks(ctx, "soft_max", sinks, a->ne[2])) return ctx.placeholder(a);
    Tensor* t = make_node(ctx, Op::SoftMax, DType::F32, a->ne, {a, mask, sinks});
    SoftMaxParams{.scale = scale, .max_bias = max_bias}.store(*t);
    return t;
}

Tensor* diag_mask_inf(Context& ctx, Tensor* a, int n_past) {
    if (!check_not_null(ctx, "diag_mask_inf", {a})) return ctx.placeholder();
    if (a->type != DType::F32) return ctx.fail(op_error("diag_mask_inf", describe("a", *a) + " must be f32"), a);
    if (n_past < 0) return ctx.fail(op_error("diag_mask_inf", "n_past must not be negative"), a);
    Tensor* t = make_node(ctx, Op::DiagMaskInf, DType::F32, a->ne, {a});
    DiagMaskInfParams{.n_past = n_past}.store(*t);
    return t;
}

Tensor* rope(Context& ctx, Tensor* a, Tensor* positions, const RopeParams& params, Tensor* freq_factors) {
    if (!check_not_null(ctx, "rope", {a, positions})) return ctx.placeholder(a);
    if (!check_float(ctx, "rope", "a", *a)) return ctx.placeholder(a);
    if (positions->type != DType::I32 || positions->ne[0] != a->ne[2] || positions->nrows() != 1) {
        return ctx.fail(op_error("rope", describe("positions", *positions) + " must be i32 [" +
                                             std::to_string(a->ne[2]) + "] (one per token of a)"),
                        a);
    }
    if (params.n_dims <= 0 || params.n_dims % 2 != 0 || params.n_dims > a->ne[0]) {
        return ctx.fail(op_error("rope", "n_dims " + std::to_string(params.n_dims) +
                                             " must be even, positive and at most the head size " + std::to_string(a->ne[0])),
                        a);
    }
    if (params.mode != RopeMode::Normal && params.mode != RopeMode::Neox) {
        return ctx.fail(op_error("rope", "mode must be normal (0) or neox (2)"), a);
    }
    if (!(params.freq_base > 0.0f) || !(params.freq_scale > 0.0f)) {
        return ctx.fail(op_error("rope", "freq_base and freq_scale must be positive"), a);
    }
    if (freq_factors != nullptr &&
        (freq_factors->type != DType::F32 || freq_factors->nrows() != 1 || freq_factors->ne[0] < params.n_dims / 2)) {
        return ctx.fail(op_error("rope", describe("freq_factors", *freq_factors) + " must be f32 [n_dims / 2 = " +
                                             std::to_string(params.n_dims / 2) + "]"),
                        a);
    }
    Tensor* t = make_node(ctx, Op::Rope, a->type, a->ne, {a, positions, freq_factors});
    params.store(*t);
    return t;
}

Tensor* mul_mat(Context& ctx, Tensor* a, Tensor* b) {
    if (!check_not_null(ctx, "mul_mat", {a, b})) return ctx.placeholder();
    if (!check_float_or_quantized(ctx, "mul_mat", "a", *a) || !check_float(ctx, "mul_mat", "b", *b)) {
        return ctx.placeholder(a);
    }
    const bool ok = a->ne[0] == b->ne[0] && a->ne[2] > 0 && a->ne[3] > 0 && b->ne[2] % a->ne[2] == 0 &&
                    b->ne[3] % a->ne[3] == 0;
    if (!ok) {
        return ctx.fail(op_error("mul_mat", describe("a", *a) + " and " + describe("b", *b) +
                                                " do not fit: need a [k, m, a2, a3], b [k, n, b2, b3], "
                                                "b2 % a2 == 0, b3 % a3 == 0"),
                        a);
    }
    return make_node(ctx, Op::MulMat, DType::F32, {a->ne[1], b->ne[1], b->ne[2], b->ne[3]}, {a, b});
}

Tensor* out_prod(Context& ctx, Tensor* a, Tensor* b) {
    if (!check_not_null(ctx, "out_prod", {a, b})) return ctx.placeholder();
    if (!check_float(ctx, "out_prod", "a", *a) || !check_float(ctx, "out_prod", "b", *b)) return ctx.placeholder(a);
    const bool ok = a->ne[1] == b->ne[1] && a->ne[2] > 0 && a->ne[3] > 0 && b->ne[2] % a->ne[2] == 0 &&
                    b->ne[3] % a->ne[3] == 0;
    if (!ok) {
        return ctx.fail(op_error("out_prod", describe("a", *a) + " and " + describe("b", *b) +
                                                 " do not fit: need a [m, k, a2, a3], b [n, k, b2, b3], "
                                                 "b2 % a2 == 0, b3 % a3 == 0"),
                        a);
    }
    return make_node(ctx, Op::OutProd, DType::F32, {a->ne[0], b->ne[0], b->ne[2], b->ne[3]}, {a, b});
}

Tensor* flash_attn_ext(Context& ctx, Tensor* q, Tensor* k, Tensor* v, Tensor* mask, float scale, float max_bias,
                       float softcap, Tensor* sinks) {
    if (!check_not_null(ctx, "flash_attn_ext", {q, k, v})) return ctx.placeholder(q);
    if (q->type != DType::F32) return ctx.fail(op_error("flash_attn_ext", describe("q", *q) + " must be f32"), q);
    if (!check_float(ctx, "flash_attn_ext", "k", *k) || !check_float(ctx, "flash_attn_ext", "v", *v)) {
        return ctx.placeholder(q);
    }
    const bool ok = q->ne[0] == k->ne[0] && k->ne[1] == v->ne[1] && k->ne[2] == v->ne[2] && k->ne[3] == v->ne[3] &&
                    k->ne[2] > 0 && q->ne[2] % k->ne[2] == 0 && q->ne[3] == k->ne[3];
    if (!ok) {
        return ctx.fail(op_error("flash_attn_ext", describe("q", *q) + ", " + describe("k", *k) + " and " +
                                                       describe("v", *v) +
                                                       " do not fit: need q [d, n_q, h, s], k [d, n_kv, h_kv, s], "
                                                       "v [dv, n_kv, h_kv, s], h % h_kv == 0"),
                        q);
    }
    if (mask != nullptr) {
        Tensor scores;  // the shape the mask is broadcast against: [n_kv, n_q, h, s]
        scores.ne = {k->ne[1], q->ne[1], q->ne[2], q->ne[3]};
        if (!check_mask(ctx, "flash_attn_ext", *mask, k->ne[1], scores)) return ctx.placeholder(q);
    }
    if (max_bias > 0.0f && mask == nullptr) {
        return ctx.fail(op_error("flash_attn_ext", "max_bias (ALiBi) needs a mask"), q);
    }
    if (softcap < 0.0f) return ctx.fail(op_error("flash_attn_ext", "softcap must not be negative"), q);
    if (!check_sinks(ctx, "flash_attn_ext", sinks, q->ne[2])) return ctx.placeholder(q);
    Tensor* t = make_node(ctx, Op::FlashAttnExt, DType::F32, {v->ne[0], q->ne[2], q->ne[1], q->ne[3]}, {q, k, v, mask, sinks});
    FlashAttnParams{.scale = scale, .max_bias = max_bias, .softcap = softcap}.store(*t);
    return t;
}

float alibi_slope(int h, int n_head, float max_bias) { return alibi_slope_f32(h, n_head, max_bias); }

namespace {

// ids: i32 [n_used, n_t] with rows of n_used consecutive ids.
bool check_ids(Context& ctx, const char* op, const Tensor& ids, int64_t n_t) {
    if (ids.type != DType::I32 || ids.ne[1] != n_t || ids.ne[2] != 1 || ids.ne[3] != 1 || ids.nb[0] != sizeof(int32_t)) {
        ctx.fail(op_error(op, describe("ids", ids) + " must be i32 [n_used, " + std::to_string(n_t) +
                                  "] with consecutive ids per token"));
        return false;
    }
    return true;
}

}  // namespace

Tensor* mul_mat_id(Context& ctx, Tensor* as, Tensor* b, Tensor* ids) {
    if (!check_not_null(ctx, "mul_mat_id", {as, b, ids})) return ctx.placeholder(as);
    if (!check_float_or_quantized(ctx, "mul_mat_id", "as", *as) || !check_float(ctx, "mul_mat_id", "b", *b)) {
        return ctx.placeholder(as);
    }
    if (as->ne[3] != 1 || b->ne[3] != 1 || as->ne[0] != b->ne[0]) {
        return ctx.fail(op_error("mul_mat_id", describe("as", *as) + " and " + describe("b", *b) +
                                                   " do not fit: need as [k, m, n_as] and b [k, n_b, n_t]"),
                        as);
    }
    if (!check_ids(ctx, "mul_mat_id", *ids, b->ne[2])) return ctx.placeholder(as);
    if (b->ne[1] != 1 && b->ne[1] != ids->ne[0]) {
        return ctx.fail(op_error("mul_mat_id", describe("b", *b) + ": ne[1] must be 1 or n_used (" +
                                                   std::to_string(ids->ne[0]) + ")"),
                        as);
    }
    return make_node(ctx, Op::MulMatId, DType::F32, {as->ne[1], ids->ne[0], b->ne[2], 1}, {as, b, ids});
}

Tensor* add_id(Context& ctx, Tensor* a, Tensor* b, Tensor* ids) {
    if (!check_not_null(ctx, "add_id", {a, b, ids})) return ctx.placeholder(a);
    if (a->type != DType::F32 || b->type != DType::F32) {
        return ctx.fail(op_error("add_id", describe("a", *a) + " and " + describe("b", *b) + " must be f32"), a);
    }
    if (a->ne[3] != 1 || b->ne[0] != a->ne[0] || b->ne[2] != 1 || b->ne[3] != 1 || b->nb[0] != sizeof(float)) {
        return ctx.fail(op_error("add_id", describe("a", *a) + " and " + describe("b", *b) +
                                               " do not fit: need a [n, n_used, n_t] and b [n, n_as] with contiguous rows"),
                        a);
    }
    if (!check_ids(ctx, "add_id", *ids, a->ne[2])) return ctx.placeholder(a);
    if (ids->ne[0] != a->ne[1]) {
        return ctx.fail(op_error("add_id", describe("ids", *ids) + " must have a.ne[1] (" + std::to_string(a->ne[1]) +
                                               ") ids per token"),
                        a);
    }
    return make_node(ctx, Op::AddId, DType::F32, a->ne, {a, b, ids});
}

}  // namespace xb
