// Builders of copies and layout ops: dup, cont, cpy, views, permutations, repeat, concat, pad,
// arange, get_rows, set_rows.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/op_builder.hpp"
#include "core/ops.hpp"
#include "core/quant.hpp"
#include "core/size_math.hpp"

namespace xb {

using detail::check_float;
using detail::check_float_or_quantized;
using detail::check_not_null;
using detail::describe;
using detail::make_node;
using detail::op_error;

namespace {

// A view node aliasing a's storage; bounds are checked against the storage root.
Tensor* view_node(Context& ctx, Op op, Tensor* a, const std::array<int64_t, kMaxDims>& ne,
                  const std::array<size_t, kMaxDims>& nb, size_t offset) {
    Tensor* t = ctx.new_view(*a, ne, nb, offset);
    t->op = op;
    t->src[0] = a;
    return t;
}

std::string shape_text(const std::array<int64_t, kMaxDims>& ne) {
    return "[" + std::to_string(ne[0]) + ", " + std::to_string(ne[1]) + ", " + std::to_string(ne[2]) + ", " +
           std::to_string(ne[3]) + "]";
}

bool check_index_type(Context& ctx, const char* op, const Tensor& idx, bool allow_i64) {
    if (idx.type == DType::I32 || (allow_i64 && idx.type == DType::I64)) return true;
    ctx.fail(op_error(op, describe("indices", idx) + (allow_i64 ? " must be i32 or i64" : " must be i32")));
    return false;
}

}  // namespace

Tensor* dup(Context& ctx, Tensor* a) {
    if (!check_not_null(ctx, "dup", {a})) return ctx.placeholder();
    if (is_quantized(a->type) && !check_float_or_quantized(ctx, "dup", "a", *a)) return ctx.placeholder(a);
    return make_node(ctx, Op::Dup, a->type, a->ne, {a});
}

Tensor* cont(Context& ctx, Tensor* a) {
    if (!check_not_null(ctx, "cont", {a})) return ctx.placeholder();
    if (is_quantized(a->type) && !check_float_or_quantized(ctx, "cont", "a", *a)) return ctx.placeholder(a);
    return make_node(ctx, Op::Cont, a->type, a->ne, {a});
}

Tensor* cpy(Context& ctx, Tensor* a, Tensor* b) {
    if (!check_not_null(ctx, "cpy", {a, b})) return ctx.placeholder(b);
    if (a->nelements() != b->nelements()) {
        return ctx.fail(op_error("cpy", describe("a", *a) + " and " + describe("b", *b) +
                                            " must have the same number of elements"),
                        b);
    }
    const auto numeric = [](DType t) { return is_float_type(t) || is_quantized(t); };
    const bool convertible = a->type == b->type || (numeric(a->type) && numeric(b->type));
    if (!convertible) {
        return ctx.fail(op_error("cpy", std::string("cannot convert ") + dtype_name(a->type) + " to " +
                                            dtype_name(b->type)),
                        b);
    }
    if (a->type != b->type && is_quantized(b->type) && !can_quantize(b->type)) {
        return ctx.fail(op_error("cpy", std::string("cannot convert ") + dtype_name(a->type) + " to " +
                                            dtype_name(b->type) +
                                            ": a read-only format (no quantizer without an importance matrix, as in ggml)"),
                        b);
    }
    // Quantizing or dequantizing converts whole rows of blocks.
    if (is_quantized(a->type) || is_quantized(b->type)) {
        if (a->ne[0] != b->ne[0]) {
            return ctx.fail(op_error("cpy", describe("a", *a) + " and " + describe("b", *b) +
                                                ": a quantized copy keeps the row length"),
                            b);
        }
        if (!check_float_or_quantized(ctx, "cpy", "a", *a) || !check_float_or_quantized(ctx, "cpy", "b", *b)) {
            return ctx.placeholder(b);
        }
    }
    Tensor* t = ctx.new_view(*b, b->ne, b->nb, 0);
    t->op = Op::Cpy;
    t->src[0] = a;
    t->src[1] = b;
    return t;
}

Tensor* cast(Context& ctx, Tensor* a, DType type) {
    if (!check_not_null(ctx, "cast", {a})) return ctx.placeholder();
    return cpy(ctx, a, ctx.new_tensor(type, std::span<const int64_t>(a->ne.data(), a->ne.size())));
}

Tensor* reshape(Context& ctx, Tensor* a, std::array<int64_t, kMaxDims> ne) {
    if (!check_not_null(ctx, "reshape", {a})) return ctx.placeholder();
    if (!a->is_contiguous()) {
        return ctx.fail(op_error("reshape", describe("a", *a) + " must be contiguous (use cont first)"), a);
    }
    const std::optional<int64_t> n = checked_nelements(ne);  // negative dims and overflow: nullopt
    if (!n || *n != a->nelements()) {
        return ctx.fail(op_error("reshape", "cannot reshape " + describe("a", *a) + " to " + shape_text(ne)), a);
    }
    return view_node(ctx, Op::Reshape, a, ne, contiguous_strides(a->type, ne), 0);
}

Tensor* view(Context& ctx, Tensor* a, std::array<int64_t, kMaxDims> ne, std::array<size_t, 3> nb123, size_t offset) {
    if (!check_not_null(ctx, "view", {a})) return ctx.placeholder();
    const std::array<size_t, kMaxDims> nb{type_size(a->type), nb123[0], nb123[1], nb123[2]};
    const Tensor& root = a->view_src ? *a->view_src : *a;
    // Checked: strides and offsets come from configs, and a wrapped sum would pass the bound.
    const std::optional<uint64_t> extent = checked_extent(a->type, ne, nb);
    const std::optional<uint64_t> end = extent ? checked_add(a->view_offs, offset) : std::nullopt;
    const std::optional<uint64_t> last = end ? checked_add(*end, *extent) : std::nullopt;
    if (ne[0] < 0 || ne[1] < 0 || ne[2] < 0 || ne[3] < 0 || ne[0] % blck_size(a->type) != 0) {
        return ctx.fail(op_error("view", "view " + shape_text(ne) + " of " + describe("a", *a) +
                                             ": dims must not be negative, and ne[0] must be whole blocks"),
                        a);
    }
    if (!last || *last > root.nbytes()) {
        return ctx.fail(op_error("view", "view " + shape_text(ne) + " with strides " + std::to_string(nb[1]) + ", " +
                                             std::to_string(nb[2]) + ", " + std::to_string(nb[3]) + " at offset " +
                                             std::to_string(offset) + (extent ? " spans " + std::to_string(*extent) + " bytes" : " overflows") +
                                             ", past the end of " + describe("a", *a) + " (" +
                                             std::to_string(root.nbytes() - a->view_offs) + " bytes)"),
                        a);
    }
    return view_node(ctx, Op::View, a, ne, nb, offset);
}

Tensor* view_1d(Context& ctx, Tensor* a, int64_t ne0, size_t offset) {
    const size_t row = a ? row_size(a->type, ne0) : 0;
    return view(ctx, a, {ne0, 1, 1, 1}, {row, row, row}, offset);
}

Tensor* view_2d(Context& ctx, Tensor* a, int64_t ne0, int64_t ne1, size_t nb1, size_t offset) {
    return view(ctx, a, {ne0, ne1, 1, 1}, {nb1, nb1 * static_cast<size_t>(ne1), nb1 * static_cast<size_t>(ne1)}, offset);
}

Tensor* permute(Context& ctx, Tensor* a, std::array<int, kMaxDims> axes) {
    if (!check_not_null(ctx, "permute", {a})) return ctx.placeholder();
    bool seen[kMaxDims] = {};
    for (int ax : axes) {
        if (ax < 0 || ax >= kMaxDims || seen[ax]) {
            return ctx.fail(op_error("permute", "axes must be a permutation of 0, 1, 2, 3"), a);
        }
        seen[ax] = true;
    }
    std::array<int64_t, kMaxDims> ne{};
    std::array<size_t, kMaxDims> nb{};
    for (int i = 0; i < kMaxDims; ++i) {
        ne[axes[i]] = a->ne[i];
        nb[axes[i]] = a->nb[i];
    }
    Tensor* t = view_node(ctx, Op::Permute, a, ne, nb, 0);
    PermuteParams{.axes = {axes[0], axes[1], axes[2], axes[3]}}.store(*t);
    return t;
}

Tensor* transpose(Context& ctx, Tensor* a) {
    if (!check_not_null(ctx, "transpose", {a})) return ctx.placeholder();
    std::array<int64_t, kMaxDims> ne = a->ne;
    std::array<size_t, kMaxDims> nb = a->nb;
    std::swap(ne[0], ne[1]);
    std::swap(nb[0], nb[1]);
    return view_node(ctx, Op::Transpose, a, ne, nb, 0);
}

Tensor* repeat(Context& ctx, Tensor* a, Tensor* shape_of) {
    if (!check_not_null(ctx, "repeat", {a, shape_of})) return ctx.placeholder(shape_of);
    if (!can_repeat(*a, *shape_of)) {
        return ctx.fail(op_error("repeat", describe("a", *a) + " cannot be tiled to " + describe("target", *shape_of)),
                        shape_of);
    }
    return make_node(ctx, Op::Repeat, a->type, shape_of->ne, {a});
}

Tensor* repeat_4d(Context& ctx, Tensor* a, std::array<int64_t, kMaxDims> ne) {
    if (!check_not_null(ctx, "repeat", {a})) return ctx.placeholder(a);
    if (a->is_empty() || std::any_of(ne.begin(), ne.end(), [](int64_t n) { return n < 1; }) || !can_repeat(*a, ne)) {
        const std::string target = "[" + std::to_string(ne[0]) + ", " + std::to_string(ne[1]) + ", " + std::to_string(ne[2]) + ", " +
                                   std::to_string(ne[3]) + "]";
        return ctx.fail(op_error("repeat", describe("a", *a) + " cannot be tiled to " + target), a);
    }
    return make_node(ctx, Op::Repeat, a->type, ne, {a});
}

Tensor* concat(Context& ctx, Tensor* a, Tensor* b, int dim) {
    if (!check_not_null(ctx, "concat", {a, b})) return ctx.placeholder(a);
    if (dim < 0 || dim >= kMaxDims) return ctx.fail(op_error("concat", "dim must be 0..3"), a);
    if (a->type != b->type) return ctx.fail(op_error("concat", describe("a", *a) + " and " + describe("b", *b) + " differ in type"), a);
    std::array<int64_t, kMaxDims> ne = a->ne;
    for (int i = 0; i < kMaxDims; ++i) {
        if (i != dim && a->ne[i] != b->ne[i]) {
            return ctx.fail(op_error("concat", describe("a", *a) + " and " + describe("b", *b) + " differ in dim " +
                                                   std::to_string(i) + ", which is not the concat dim"),
                            a);
        }
    }
    ne[dim] += b->ne[dim];
    Tensor* t = make_node(ctx, Op::Concat, a->type, ne, {a, b});
    ConcatParams{.dim = dim}.store(*t);
    return t;
}

Tensor* pad(Context& ctx, Tensor* a, std::array<int32_t, kMaxDims> after) {
    if (!check_not_null(ctx, "pad", {a})) return ctx.placeholder();
    if (!check_float(ctx, "pad", "a", *a)) return ctx.placeholder(a);
    std::array<int64_t, kMaxDims> ne = a->ne;
    for (int i = 0; i < kMaxDims; ++i) {
        if (after[i] < 0) return ctx.fail(op_error("pad", "padding must not be negative"), a);
        ne[i] += after[i];
    }
    Tensor* t = make_node(ctx, Op::Pad, a->type, ne, {a});
    PadParams{.after = after}.store(*t);
    return t;
}

Tensor* arange(Context& ctx, float start, float stop, float step) {
    if (!(step != 0.0f) || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step) ||
        (stop - start) / step <= 0.0f) {
        return ctx.fail(op_error("arange", "start, stop and step must be finite and give at least one element"));
    }
    // A float quotient is at most 3.4e38 (or infinite): checked before it becomes a count.
    constexpr int64_t kMaxArangeElements = static_cast<int64_t>(kMaxTensorBytes / sizeof(float));
    const std::optional<int64_t> n = checked_integer<int64_t>(std::ceil((stop - start) / step));
    if (!n || *n > kMaxArangeElements) {
        return ctx.fail(op_error("arange", "start, stop and step give more than " + std::to_string(kMaxArangeElements) +
                                               " elements"));
    }
    Tensor* t = make_node(ctx, Op::Arange, DType::F32, {*n, 1, 1, 1}, {});
    ArangeParams{.start = start, .stop = stop, .step = step}.store(*t);
    return t;
}

Tensor* get_rows(Context& ctx, Tensor* a, Tensor* rows) {
    if (!check_not_null(ctx, "get_rows", {a, rows})) return ctx.placeholder(a);
    if (!check_index_type(ctx, "get_rows", *rows, false)) return ctx.placeholder(a);
    if (is_quantized(a->type) && !check_float_or_quantized(ctx, "get_rows", "a", *a)) return ctx.placeholder(a);
    if (a->ne[2] != rows->ne[1] || a->ne[3] != rows->ne[2] || rows->ne[3] != 1) {
        return ctx.fail(op_error("get_rows", describe("indices", *rows) + " must be [m, a.ne2, a.ne3] for " +
                                                 describe("a", *a)),
                        a);
    }
    const DType type = a->type == DType::I32 ? DType::I32 : DType::F32;
    return make_node(ctx, Op::GetRows, type, {a->ne[0], rows->ne[0], rows->ne[1], rows->ne[2]}, {a, rows});
}

Tensor* set_rows(Context& ctx, Tensor* dst, Tensor* src, Tensor* rows) {
    if (!check_not_null(ctx, "set_rows", {dst, src, rows})) return ctx.placeholder(dst);
    if (!check_index_type(ctx, "set_rows", *rows, true)) return ctx.placeholder(dst);
    if (!check_float(ctx, "set_rows", "dst", *dst) || !check_float(ctx, "set_rows", "src", *src)) {
        return ctx.placeholder(dst);
    }
    const bool ok = dst->ne[0] == src->ne[0] && dst->ne[2] == src->ne[2] && dst->ne[3] == src->ne[3] &&
                    src->ne[1] == rows->ne[0] && rows->ne[1] > 0 && rows->ne[2] > 0 &&
                    src->ne[2] % rows->ne[1] == 0 && src->ne[3] % rows->ne[2] == 0 && rows->ne[3] == 1;
    if (!ok) {
        return ctx.fail(op_error("set_rows", describe("dst", *dst) + ", " + describe("src", *src) + " and " +
                                                 describe("indices", *rows) +
                                                 " do not fit: need dst [n0, *, n2, n3], src [n0, m, n2, n3], "
                                                 "indices [m, r2, r3] with n2 % r2 == 0 and n3 % r3 == 0"),
                        dst);
    }
    Tensor* t = ctx.new_view(*dst, dst->ne, dst->nb, 0);
    t->op = Op::SetRows;
    t->src[0] = src;
    t->src[1] = rows;
    // dst as a source too (ggml does the same): the rows are written over its values, so a dst
    // computed in the graph (not a cache) must be computed first and kept alive.
    t->src[2] = dst;
    return t;
}

}  // namespace xb
