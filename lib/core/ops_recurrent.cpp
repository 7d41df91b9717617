// Builders of the recurrent layers' ops: ssm_conv, ssm_scan, gated_delta_net (ops.hpp says what
// each computes; the shapes and rules are ggml's).
#include <string>

#include "core/op_builder.hpp"
#include "core/ops.hpp"

namespace xb {

using detail::check_not_null;
using detail::describe;
using detail::make_node;
using detail::op_error;

namespace {

std::string ne_text(std::initializer_list<int64_t> ne) {
    std::string s = "[";
    for (const int64_t n : ne) s += (s.size() > 1 ? ", " : "") + std::to_string(n);
    return s + "]";
}

// f32 with packed rows (and wholly contiguous when `contiguous`).
bool check_f32(Context& ctx, const char* op, const char* role, const Tensor& t, bool contiguous = false) {
    if (t.type == DType::F32 && t.nb[0] == sizeof(float) && (!contiguous || t.is_contiguous())) return true;
    ctx.fail(op_error(op, describe(role, t) + " must be f32 with " + (contiguous ? "contiguous elements" : "packed rows")));
    return false;
}

// `t` must have the shape `want` (every dim).
bool check_shape(Context& ctx, const char* op, const char* role, const Tensor& t, std::initializer_list<int64_t> want, const char* why) {
    size_t i = 0;
    bool ok = true;
    for (const int64_t n : want) ok = ok && t.ne[i++] == n;
    for (; i < kMaxDims; ++i) ok = ok && t.ne[i] == 1;
    if (!ok) ctx.fail(op_error(op, describe(role, t) + " must be " + ne_text(want) + " (" + why + ")"));
    return ok;
}

}  // namespace

Tensor* ssm_conv(Context& ctx, Tensor* sx, Tensor* c) {
    const char* op = "ssm_conv";
    if (!check_not_null(ctx, op, {sx, c})) return ctx.placeholder();
    if (!check_f32(ctx, op, "sx", *sx) || !check_f32(ctx, op, "c", *c)) return ctx.placeholder(sx);
    const int64_t d_conv = c->ne[0], d_inner = c->ne[1], n_t = sx->ne[0] - d_conv + 1;
    if (c->ne[2] != 1 || c->ne[3] != 1 || sx->ne[3] != 1 || sx->ne[1] != d_inner || n_t < 1) {
        return ctx.fail(op_error(op, describe("sx", *sx) + " and " + describe("c", *c) +
                                         " do not fit: need c [d_conv, d_inner] and sx [d_conv - 1 + n_t, d_inner, n_s] with n_t >= 1"),
                        sx);
    }
    return make_node(ctx, Op::SsmConv, DType::F32, {d_inner, n_t, sx->ne[2], 1}, {sx, c});
}

Tensor* ssm_scan(Context& ctx, Tensor* s, Tensor* x, Tensor* dt, Tensor* A, Tensor* B, Tensor* C, Tensor* ids) {
    const char* op = "ssm_scan";
    if (!check_not_null(ctx, op, {s, x, dt, A, B, C, ids})) return ctx.placeholder();
    if (!check_f32(ctx, op, "s", *s, true) || !check_f32(ctx, op, "x", *x) || !check_f32(ctx, op, "dt", *dt, true) ||
        !check_f32(ctx, op, "A", *A, true) || !check_f32(ctx, op, "B", *B) || !check_f32(ctx, op, "C", *C)) {
        return ctx.placeholder(x);
    }
    const int64_t d_state = s->ne[0], head_dim = x->ne[0], n_head = x->ne[1], n_t = x->ne[2], n_s = x->ne[3];
    const int64_t n_group = B->ne[1];
    if (s->ne[1] != head_dim || s->ne[2] != n_head) {
        return ctx.fail(op_error(op, describe("s", *s) + " must be [d_state, " + std::to_string(head_dim) + ", " + std::to_string(n_head) +
                                         ", n] (x's head size and heads)"),
                        x);
    }
    if (!check_shape(ctx, op, "dt", *dt, {n_head, n_t, n_s}, "a step per head and token")) return ctx.placeholder(x);
    if (A->ne[1] != n_head || (A->ne[0] != 1 && A->ne[0] != d_state) || A->ne[2] != 1 || A->ne[3] != 1) {
        return ctx.fail(op_error(op, describe("A", *A) + " must be [1, " + std::to_string(n_head) + "] (Mamba-2) or [" +
                                         std::to_string(d_state) + ", " + std::to_string(n_head) + "] (Mamba-1)"),
                        x);
    }
    if (B->ne[0] != d_state || B->ne[2] != n_t || B->ne[3] != n_s || n_group < 1 || n_head % n_group != 0 || C->ne != B->ne) {
        return ctx.fail(op_error(op, describe("B", *B) + " and " + describe("C", *C) + " must both be [" + std::to_string(d_state) +
                                         ", n_group, " + std::to_string(n_t) + ", " + std::to_string(n_s) +
                                         "] with n_group dividing the " + std::to_string(n_head) + " heads"),
                        x);
    }
    if (ids->type != DType::I32 || !ids->is_contiguous()) return ctx.fail(op_error(op, describe("ids", *ids) + " must be contiguous i32"), x);
    if (!check_shape(ctx, op, "ids", *ids, {n_s}, "a state per sequence")) return ctx.placeholder(x);
    return make_node(ctx, Op::SsmScan, DType::F32, {x->nelements() + d_state * head_dim * n_head * n_s, 1, 1, 1}, {s, x, dt, A, B, C, ids});
}

Tensor* gated_delta_net(Context& ctx, Tensor* q, Tensor* k, Tensor* v, Tensor* g, Tensor* beta, Tensor* state) {
    const char* op = "gated_delta_net";
    if (!check_not_null(ctx, op, {q, k, v, g, beta, state})) return ctx.placeholder();
    if (!check_f32(ctx, op, "q", *q) || !check_f32(ctx, op, "k", *k) || !check_f32(ctx, op, "v", *v) ||
        !check_f32(ctx, op, "g", *g, true) || !check_f32(ctx, op, "beta", *beta, true) || !check_f32(ctx, op, "state", *state, true)) {
        return ctx.placeholder(v);
    }
    const int64_t d = v->ne[0], h = v->ne[1], n_t = v->ne[2], n_s = v->ne[3];
    if (q->ne != k->ne || q->ne[0] != d || q->ne[2] != n_t || q->ne[1] < 1 || h % q->ne[1] != 0 || n_s % q->ne[3] != 0) {
        return ctx.fail(op_error(op, describe("q", *q) + " and " + describe("k", *k) + " must both be [" + std::to_string(d) + ", H_k, " +
                                         std::to_string(n_t) + ", n_s_k] with H_k dividing v's " + std::to_string(h) +
                                         " heads and n_s_k its " + std::to_string(n_s) + " sequences"),
                        v);
    }
    if (g->ne[0] != 1 && g->ne[0] != d) {
        return ctx.fail(op_error(op, describe("g", *g) + " must be [1 or " + std::to_string(d) + ", " + std::to_string(h) + ", " +
                                         std::to_string(n_t) + ", " + std::to_string(n_s) + "]"),
                        v);
    }
    if (!check_shape(ctx, op, "g", *g, {g->ne[0], h, n_t, n_s}, "a gate per head and token") ||
        !check_shape(ctx, op, "beta", *beta, {1, h, n_t, n_s}, "a step size per head and token") ||
        !check_shape(ctx, op, "state", *state, {d, d, h, n_s}, "a state per head and sequence")) {
        return ctx.placeholder(v);
    }
    return make_node(ctx, Op::GatedDeltaNet, DType::F32, {d * h, n_t * n_s + d * n_s, 1, 1}, {q, k, v, g, beta, state});
}

}  // namespace xb
