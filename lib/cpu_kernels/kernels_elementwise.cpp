// Element-wise kernels: binary ops with broadcasting, add1, unary maps and gated linear units.
//
// Each kernel splits the rows of dst across threads. Rows whose elements are packed f32 take a
// plain loop the compiler vectorizes; every other layout or type goes through load_as_f32 /
// store_from_f32 with explicit strides.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/op_math.hpp"
#include "core/op_params.hpp"
#include "cpu_kernels/kernels.hpp"
#include "cpu_kernels/row_kernels.hpp"
#include "cpu_kernels/row_loops.hpp"
#include "cpu_kernels/row_iter.hpp"

namespace xb::cpu_kernels {

namespace {

// --- binary ----------------------------------------------------------------------------------------

// Rows of packed, aligned floats of any float type: core's vectorised converters can read them.
bool convertible_rows(const Tensor& t) {
    const size_t size = type_size(t.type);
    return is_float_type(t.type) && t.is_contiguous_rows() && reinterpret_cast<uintptr_t>(t.data) % size == 0 &&
           t.nb[1] % size == 0 && t.nb[2] % size == 0 && t.nb[3] % size == 0;
}

constexpr int64_t kConvertChunk = 256;  // floats converted at a time on the stack

// One row of dst = a op b where a and dst are packed float rows of any float type and y is b's
// row already in f32 (nb0 elements, repeated along the row). Chunk by chunk, so dst may alias a.
// `span` is the instruction set's loop for Op.
template <BinaryOp Op>
void binary_row_converted(const Tensor& dst, std::byte* d, const Tensor& a, const std::byte* x, const float* y,
                          int64_t ne0, int64_t nb0, RowLoops::BinaryFn span) {
    float buf[kConvertChunk];
    const size_t dst_size = type_size(dst.type), a_size = type_size(a.type);
    for (int64_t off = 0; off < ne0; off += kConvertChunk) {
        const int64_t len = std::min(kConvertChunk, ne0 - off);
        (void)convert_row(a.type, x + static_cast<size_t>(off) * a_size, DType::F32, buf, len);
        if (nb0 == ne0) {
            span(buf, y + off, buf, len);
        } else {
            for (int64_t i = 0; i < len; ++i) buf[i] = binary_f32(Op, buf[i], y[(off + i) % nb0]);
        }
        (void)convert_row(DType::F32, buf, dst.type, d + static_cast<size_t>(off) * dst_size, len);
    }
}

template <BinaryOp Op>
void binary_rows(const ComputeParams& p, Tensor& dst, const Tensor& a, const Tensor& b) {
    const int64_t ne0 = dst.ne[0];
    const int64_t nb0 = b.ne[0];  // a row of b repeats ne0 / nb0 times along a row of dst
    const bool fast = packed_f32_rows(dst) && packed_f32_rows(a) && packed_f32_rows(b);
    const bool converted = !fast && convertible_rows(dst) && convertible_rows(a) && convertible_rows(b);
    const RowLoops::BinaryFn span = row_loops().binary[static_cast<int>(Op)];
    std::vector<float> b_row(converted ? static_cast<size_t>(nb0) : 0);
    const auto range = p.split(dst.nrows());
    for (int64_t row = range.begin; row < range.end; ++row) {
        const RowIndex r = row_index(dst, row);
        const RowIndex rb = broadcast_row(b, r);
        if (fast) {
            float* d = f32_row(dst, r);
            const float* x = f32_row(a, r);
            const float* y = f32_row(b, rb);
            for (int64_t off = 0; off < ne0; off += nb0) span(x + off, y, d + off, nb0);
            continue;
        }
        std::byte* d = row_ptr(dst, r);
        const std::byte* x = row_ptr(a, r);
        const std::byte* y = row_ptr(b, rb);
        if (converted) {
            (void)convert_row(b.type, y, DType::F32, b_row.data(), nb0);
            binary_row_converted<Op>(dst, d, a, x, b_row.data(), ne0, nb0, span);
            continue;
        }
        for (int64_t i0 = 0, j = 0; i0 < ne0; ++i0) {
            store_at(dst, d, i0, binary_f32(Op, load_at(a, x, i0), load_at(b, y, j)));
            if (++j == nb0) j = 0;
        }
    }
}

// --- maps ------------------------------------------------------------------------------------------

// f over a packed f32 span: the instruction set's span function when there is one, else f.
template <typename F, typename Span>
void map_span_f32(const float* x, float* y, int64_t n, F f, const Span& span) {
    if constexpr (std::is_pointer_v<Span>) {
        if (span == nullptr) {
            for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
            return;
        }
    }
    span(x, y, n);
}

// One row of n elements through f, converted to f32 and back a chunk at a time (f16/bf16 rows
// would otherwise pay a type dispatch per element). Chunk by chunk, so dst may alias src.
template <typename F, typename Span>
void map_row_converted(const Tensor& dst, std::byte* d, const Tensor& src, const std::byte* x, int64_t n, F f,
                       const Span& vec) {
    float buf[kConvertChunk];
    const size_t dst_size = type_size(dst.type), src_size = type_size(src.type);
    for (int64_t off = 0; off < n; off += kConvertChunk) {
        const int64_t len = std::min(kConvertChunk, n - off);
        (void)convert_row(src.type, x + static_cast<size_t>(off) * src_size, DType::F32, buf, len);
        map_span_f32(buf, buf, len, f, vec);
        (void)convert_row(DType::F32, buf, dst.type, d + static_cast<size_t>(off) * dst_size, len);
    }
}

// dst = f(src) element by element; dst and src have the same shape (dst may alias src). `vec`, when
// it converts to true, is the same map over packed f32 spans, called as vec(x, y, n): a
// RowKernels::MapFn or a lambda over the instruction set's row loops.
template <typename F, typename Span = RowKernels::MapFn>
void map_rows(const ComputeParams& p, Tensor& dst, const Tensor& src, F f, const Span& vec = nullptr) {
    const int64_t ne0 = dst.ne[0];
    const bool fast = packed_f32_rows(dst) && packed_f32_rows(src);
    const bool converted = !fast && convertible_rows(dst) && convertible_rows(src);
    const auto range = p.split(dst.nrows());
    for (int64_t row = range.begin; row < range.end; ++row) {
        const RowIndex r = row_index(dst, row);
        if (fast) {
            float* d = f32_row(dst, r);
            const float* x = f32_row(src, r);
            map_span_f32(x, d, ne0, f, vec);
            continue;
        }
        std::byte* d = row_ptr(dst, r);
        const std::byte* x = row_ptr(src, r);
        if (converted) {
            map_row_converted(dst, d, src, x, ne0, f, vec);
            continue;
        }
        for (int64_t i0 = 0; i0 < ne0; ++i0) store_at(dst, d, i0, f(load_at(src, x, i0)));
    }
}

template <UnaryOp U>
void map_unary(const ComputeParams& p, Tensor& dst, const Tensor& src) {
    map_rows(p, dst, src, [](float x) { return unary_f32(U, x); }, row_kernels().unary[static_cast<int>(U)]);
}

void compute_unary(const ComputeParams& p, Tensor& dst, const Tensor& src) {
    const UnaryOp op = UnaryParams::load(dst).op;
    switch (op) {
        case UnaryOp::Neg: return map_unary<UnaryOp::Neg>(p, dst, src);
        case UnaryOp::Relu: return map_unary<UnaryOp::Relu>(p, dst, src);
        case UnaryOp::Gelu: return map_unary<UnaryOp::Gelu>(p, dst, src);
        case UnaryOp::GeluQuick: return map_unary<UnaryOp::GeluQuick>(p, dst, src);
        case UnaryOp::Silu: return map_unary<UnaryOp::Silu>(p, dst, src);
        case UnaryOp::Tanh: return map_unary<UnaryOp::Tanh>(p, dst, src);
        case UnaryOp::Sigmoid: return map_unary<UnaryOp::Sigmoid>(p, dst, src);
        case UnaryOp::Exp: return map_unary<UnaryOp::Exp>(p, dst, src);
        case UnaryOp::Softplus: return map_unary<UnaryOp::Softplus>(p, dst, src);
    }
    if (p.ith == 0) {
        p.report(Status(StatusCode::InvalidArgument,
                        "unary: unknown unary op " + std::to_string(static_cast<int>(op))));
    }
}

// --- glu -------------------------------------------------------------------------------------------

// out[i] = act(a[i]) * g[i] over n packed floats: in one pass with the instruction set's gated map
// when it has one, else its vector map (silu or gelu) a chunk at a time and a multiply, else
// element by element. out may alias a or g.
template <GluOp G>
void glu_span_f32(float* out, const float* a, const float* g, int64_t n) {
    const UnaryOp act = G == GluOp::SwiGlu ? UnaryOp::Silu : UnaryOp::Gelu;
    if (const RowKernels::GatedMapFn gated = row_kernels().gated[static_cast<int>(G)]) return gated(a, g, out, n);
    const RowKernels::MapFn vec = row_kernels().unary[static_cast<int>(act)];
    if (vec == nullptr) {
        for (int64_t i = 0; i < n; ++i) out[i] = glu_activation_f32(G, a[i]) * g[i];
        return;
    }
    const RowLoops::BinaryFn times = row_loops().binary[static_cast<int>(BinaryOp::Mul)];
    float buf[kConvertChunk];
    for (int64_t off = 0; off < n; off += kConvertChunk) {
        const int64_t len = std::min(kConvertChunk, n - off);
        vec(a + off, buf, len);
        times(buf, g + off, out + off, len);
    }
}

// Fused form: each row of src0 is [x | g]; the activated half is x, or g when swapped.
template <GluOp G>
void glu_fused(const ComputeParams& p, Tensor& dst, const Tensor& src, bool swapped) {
    const int64_t nc = dst.ne[0];
    const int64_t act_off = swapped ? nc : 0;
    const int64_t gate_off = swapped ? 0 : nc;
    const bool fast = packed_f32_rows(dst) && packed_f32_rows(src);
    const auto range = p.split(dst.nrows());
    for (int64_t row = range.begin; row < range.end; ++row) {
        const RowIndex r = row_index(dst, row);
        if (fast) {
            const float* s = f32_row(src, r);
            glu_span_f32<G>(f32_row(dst, r), s + act_off, s + gate_off, nc);
            continue;
        }
        std::byte* d = row_ptr(dst, r);
        const std::byte* s = row_ptr(src, r);
        for (int64_t i = 0; i < nc; ++i) {
            const float a = load_at(src, s, act_off + i);
            const float g = load_at(src, s, gate_off + i);
            store_at(dst, d, i, glu_activation_f32(G, a) * g);
        }
    }
}

// Split form, row by row: `span(out, a, g, n)` over packed f32 rows, `elem(a, g)` element by
// element for any other layout; dst, src0 and src1 of the same shape.
template <typename Span, typename Elem>
void glu_split_rows(const ComputeParams& p, Tensor& dst, const Tensor& a, const Tensor& g, Span span, Elem elem) {
    const int64_t n = dst.ne[0];
    const bool fast = packed_f32_rows(dst) && packed_f32_rows(a) && packed_f32_rows(g);
    const auto range = p.split(dst.nrows());
    for (int64_t row = range.begin; row < range.end; ++row) {
        const RowIndex r = row_index(dst, row);
        if (fast) {
            span(f32_row(dst, r), f32_row(a, r), f32_row(g, r), n);
            continue;
        }
        std::byte* d = row_ptr(dst, r);
        const std::byte* x = row_ptr(a, r);
        const std::byte* y = row_ptr(g, r);
        for (int64_t i = 0; i < n; ++i) store_at(dst, d, i, elem(load_at(a, x, i), load_at(g, y, i)));
    }
}

// Split form: dst = act(src0) * src1.
template <GluOp G>
void glu_split(const ComputeParams& p, Tensor& dst, const Tensor& a, const Tensor& g) {
    glu_split_rows(p, dst, a, g, [](float* out, const float* x, const float* y, int64_t n) { glu_span_f32<G>(out, x, y, n); },
                   [](float x, float y) { return glu_activation_f32(G, x) * y; });
}

// gpt-oss's SwiGLU over n packed floats (out may alias a or g): x = min(a, limit), sigmoid(alpha x)
// by the instruction set's vector sigmoid a chunk at a time (element by element where the set has
// none), then x * sigmoid * (clamp(g) + 1) in swiglu_oai_f32's order.
void swiglu_oai_span(float* out, const float* a, const float* g, int64_t n, float alpha, float limit) {
    const RowKernels::MapFn sigmoid = row_kernels().unary[static_cast<int>(UnaryOp::Sigmoid)];
    if (sigmoid == nullptr) {
        for (int64_t i = 0; i < n; ++i) out[i] = swiglu_oai_f32(a[i], g[i], alpha, limit);
        return;
    }
    float x[kConvertChunk], s[kConvertChunk];
    for (int64_t off = 0; off < n; off += kConvertChunk) {
        const int64_t len = std::min(kConvertChunk, n - off);
        for (int64_t i = 0; i < len; ++i) {
            x[i] = min_keeping_nan(a[off + i], limit);
            s[i] = alpha * x[i];
        }
        sigmoid(s, s, len);
        for (int64_t i = 0; i < len; ++i) {
            const float gate = clamp_keeping_nan(g[off + i], -limit, limit);
            out[off + i] = x[i] * s[i] * (gate + 1.0f);
        }
    }
}

// Split form of gpt-oss's SwiGLU: dst = swiglu_oai(src0, src1).
void glu_split_oai(const ComputeParams& p, Tensor& dst, const Tensor& a, const Tensor& g, const GluParams& gp) {
    glu_split_rows(
        p, dst, a, g,
        [&gp](float* out, const float* x, const float* y, int64_t n) { swiglu_oai_span(out, x, y, n, gp.alpha, gp.limit); },
        [&gp](float x, float y) { return swiglu_oai_f32(x, y, gp.alpha, gp.limit); });
}

template <GluOp G>
void glu_any(const ComputeParams& p, Tensor& dst) {
    if (dst.src[1] != nullptr) {
        glu_split<G>(p, dst, *dst.src[0], *dst.src[1]);
    } else {
        glu_fused<G>(p, dst, *dst.src[0], GluParams::load(dst).swapped);
    }
}

}  // namespace

void compute_binary(const ComputeParams& p, Tensor& dst) {
    if (dst.is_empty()) return;
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    switch (dst.op) {
        case Op::Add: return binary_rows<BinaryOp::Add>(p, dst, a, b);
        case Op::Sub: return binary_rows<BinaryOp::Sub>(p, dst, a, b);
        case Op::Mul: return binary_rows<BinaryOp::Mul>(p, dst, a, b);
        case Op::Div: return binary_rows<BinaryOp::Div>(p, dst, a, b);
        default: break;
    }
    if (p.ith == 0) {
        p.report(Status(StatusCode::Internal, std::string("compute_binary: unexpected op ") + op_name(dst.op)));
    }
}

void compute_add1(const ComputeParams& p, Tensor& dst) {
    if (dst.is_empty()) return;
    const Tensor& scalar = *dst.src[1];
    const float s = load_as_f32(scalar.type, scalar.data);
    map_rows(p, dst, *dst.src[0], [s](float x) { return x + s; });
}

void compute_map(const ComputeParams& p, Tensor& dst) {
    if (dst.is_empty()) return;
    const Tensor& src = *dst.src[0];
    switch (dst.op) {
        case Op::Scale: {
            const ScaleParams sp = ScaleParams::load(dst);  // not a structured binding: clang 14 cannot capture those
            const RowLoops::ScaleFn span = row_loops().scale;
            return map_rows(p, dst, src, [sp](float x) { return scale_f32(x, sp.scale, sp.bias); },
                            [sp, span](const float* x, float* y, int64_t n) { span(x, y, n, sp.scale, sp.bias); });
        }
        case Op::Sqr: return map_rows(p, dst, src, [](float x) { return x * x; });
        case Op::Sqrt: return map_rows(p, dst, src, [](float x) { return std::sqrt(x); });
        case Op::Log: return map_rows(p, dst, src, [](float x) { return std::log(x); });
        case Op::Clamp: {
            const ClampParams cp = ClampParams::load(dst);
            return map_rows(p, dst, src, [cp](float x) { return clamp_f32(x, cp.min, cp.max); });
        }
        case Op::Unary: return compute_unary(p, dst, src);
        default: break;
    }
    if (p.ith == 0) {
        p.report(Status(StatusCode::Internal, std::string("compute_map: unexpected op ") + op_name(dst.op)));
    }
}

void compute_glu(const ComputeParams& p, Tensor& dst) {
    if (dst.is_empty()) return;
    const GluOp op = GluParams::load(dst).op;
    switch (op) {
        case GluOp::SwiGlu: return glu_any<GluOp::SwiGlu>(p, dst);
        case GluOp::GeGlu: return glu_any<GluOp::GeGlu>(p, dst);
        case GluOp::SwiGluOai:
            // Split form only (the builder's rule).
            if (dst.src[1] != nullptr) return glu_split_oai(p, dst, *dst.src[0], *dst.src[1], GluParams::load(dst));
            break;
    }
    if (p.ith == 0) {
        p.report(Status(StatusCode::InvalidArgument, "glu: unknown glu op " + std::to_string(static_cast<int>(op))));
    }
}

}  // namespace xb::cpu_kernels
