// Builders of element-wise ops: binary with broadcasting, unary, glu, clamp, scale.
#include <cmath>

#include "core/op_builder.hpp"
#include "core/ops.hpp"

namespace xb {

using detail::check_float;
using detail::check_not_null;
using detail::describe;
using detail::make_node;
using detail::op_error;

namespace {

Tensor* binary(Context& ctx, Op op, Tensor* a, Tensor* b) {
    const char* name = op_name(op);
    if (!check_not_null(ctx, name, {a, b})) return ctx.placeholder(a);
    if (!check_float(ctx, name, "a", *a) || !check_float(ctx, name, "b", *b)) return ctx.placeholder(a);
    if (!can_repeat(*b, *a)) {
        return ctx.fail(op_error(name, describe("b", *b) + " cannot be broadcast to " + describe("a", *a) +
                                           ": each dim of a must be a multiple of b's"),
                        a);
    }
    return make_node(ctx, op, a->type, a->ne, {a, b});
}

Tensor* unary_like(Context& ctx, Op op, Tensor* a) {
    const char* name = op_name(op);
    if (!check_not_null(ctx, name, {a})) return ctx.placeholder();
    if (!check_float(ctx, name, "a", *a)) return ctx.placeholder(a);
    return make_node(ctx, op, a->type, a->ne, {a});
}

}  // namespace

Tensor* add(Context& ctx, Tensor* a, Tensor* b) { return binary(ctx, Op::Add, a, b); }
Tensor* sub(Context& ctx, Tensor* a, Tensor* b) { return binary(ctx, Op::Sub, a, b); }
Tensor* mul(Context& ctx, Tensor* a, Tensor* b) { return binary(ctx, Op::Mul, a, b); }
Tensor* div(Context& ctx, Tensor* a, Tensor* b) { return binary(ctx, Op::Div, a, b); }

Tensor* add1(Context& ctx, Tensor* a, Tensor* scalar) {
    if (!check_not_null(ctx, "add1", {a, scalar})) return ctx.placeholder(a);
    if (!check_float(ctx, "add1", "a", *a) || !check_float(ctx, "add1", "scalar", *scalar)) return ctx.placeholder(a);
    if (scalar->nelements() != 1) {
        return ctx.fail(op_error("add1", describe("scalar", *scalar) + " must have exactly one element"), a);
    }
    return make_node(ctx, Op::Add1, a->type, a->ne, {a, scalar});
}

Tensor* scale(Context& ctx, Tensor* a, float s, float bias) {
    Tensor* t = unary_like(ctx, Op::Scale, a);
    ScaleParams{.scale = s, .bias = bias}.store(*t);
    return t;
}

Tensor* sqr(Context& ctx, Tensor* a) { return unary_like(ctx, Op::Sqr, a); }
Tensor* sqrt(Context& ctx, Tensor* a) { return unary_like(ctx, Op::Sqrt, a); }
Tensor* log(Context& ctx, Tensor* a) { return unary_like(ctx, Op::Log, a); }

Tensor* clamp(Context& ctx, Tensor* a, float min, float max) {
    if (!(min <= max)) return ctx.fail(op_error("clamp", "min must not exceed max"), a);
    Tensor* t = unary_like(ctx, Op::Clamp, a);
    ClampParams{.min = min, .max = max}.store(*t);
    return t;
}

Tensor* unary(Context& ctx, Tensor* a, UnaryOp op) {
    if (static_cast<int>(op) < 0 || static_cast<int>(op) >= kUnaryOpCount) {
        return ctx.fail(op_error("unary", "unknown unary op " + std::to_string(static_cast<int>(op))), a);
    }
    Tensor* t = unary_like(ctx, Op::Unary, a);
    UnaryParams{.op = op}.store(*t);
    return t;
}
Tensor* neg(Context& ctx, Tensor* a) { return unary(ctx, a, UnaryOp::Neg); }
Tensor* relu(Context& ctx, Tensor* a) { return unary(ctx, a, UnaryOp::Relu); }
Tensor* gelu(Context& ctx, Tensor* a) { return unary(ctx, a, UnaryOp::Gelu); }
Tensor* gelu_quick(Context& ctx, Tensor* a) { return unary(ctx, a, UnaryOp::GeluQuick); }
Tensor* silu(Context& ctx, Tensor* a) { return unary(ctx, a, UnaryOp::Silu); }
Tensor* tanh(Context& ctx, Tensor* a) { return unary(ctx, a, UnaryOp::Tanh); }
Tensor* sigmoid(Context& ctx, Tensor* a) { return unary(ctx, a, UnaryOp::Sigmoid); }
Tensor* exp(Context& ctx, Tensor* a) { return unary(ctx, a, UnaryOp::Exp); }
Tensor* softplus(Context& ctx, Tensor* a) { return unary(ctx, a, UnaryOp::Softplus); }

namespace {

// The split form's node: act(a) * b, a and b of one shape and type.
Tensor* glu_split_node(Context& ctx, Tensor* a, Tensor* b, const GluParams& params) {
    if (!check_not_null(ctx, "glu", {a, b})) return ctx.placeholder(a);
    if (!check_float(ctx, "glu", "a", *a) || !check_float(ctx, "glu", "b", *b)) return ctx.placeholder(a);
    if (!same_shape(*a, *b) || a->type != b->type) {
        return ctx.fail(op_error("glu", describe("a", *a) + " and " + describe("b", *b) +
                                            " must have the same shape and type"),
                        a);
    }
    Tensor* t = make_node(ctx, Op::Glu, a->type, a->ne, {a, b});
    params.store(*t);
    return t;
}

}  // namespace

Tensor* glu(Context& ctx, Tensor* a, GluOp op, bool swapped) {
    if (!check_not_null(ctx, "glu", {a})) return ctx.placeholder();
    if (!check_float(ctx, "glu", "a", *a)) return ctx.placeholder(a);
    if (op == GluOp::SwiGluOai) return ctx.fail(op_error("glu", "swiglu_oai takes its two halves apart (swiglu_oai)"), a);
    if (a->ne[0] % 2 != 0) {
        return ctx.fail(op_error("glu", describe("a", *a) + " must have an even ne[0] to split in halves"), a);
    }
    if (!a->is_contiguous_rows()) {
        return ctx.fail(op_error("glu", describe("a", *a) + " must have contiguous rows"), a);
    }
    std::array<int64_t, kMaxDims> ne = a->ne;
    ne[0] /= 2;
    Tensor* t = make_node(ctx, Op::Glu, a->type, ne, {a});
    GluParams{.op = op, .swapped = swapped}.store(*t);
    return t;
}

Tensor* glu_split(Context& ctx, Tensor* a, Tensor* b, GluOp op) {
    if (op == GluOp::SwiGluOai) return ctx.fail(op_error("glu", "swiglu_oai needs its alpha and limit (swiglu_oai)"), a);
    return glu_split_node(ctx, a, b, GluParams{.op = op});
}

Tensor* swiglu_oai(Context& ctx, Tensor* a, Tensor* b, float alpha, float limit) {
    if (!(limit > 0.0f) || !std::isfinite(alpha) || !std::isfinite(limit)) {
        return ctx.fail(op_error("glu", "swiglu_oai needs a positive, finite limit and a finite alpha"), a);
    }
    return glu_split_node(ctx, a, b, GluParams{.op = GluOp::SwiGluOai, .alpha = alpha, .limit = limit});
}

Tensor* swiglu(Context& ctx, Tensor* a) { return glu(ctx, a, GluOp::SwiGlu); }
Tensor* geglu(Context& ctx, Tensor* a) { return glu(ctx, a, GluOp::GeGlu); }

}  // namespace xb
