// Element-wise kernels: binary ops with broadcasting, the maps (add1, scale, sqr, sqrt, log, clamp,
// unary activations) and gated linear units. The scalar math is op_math.hpp's, shared with the CPU.
#include <algorithm>
#include <type_traits>
#include <utility>

#include "core/op_math.hpp"
#include "core/op_params.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"

namespace xb::cuda {

namespace {

// The element loops below take the op as a functor fixed at compile time: the kernel picks the
// op once, so that no element pays for a dispatch over every op (a chain of compares per element
// had held the maps at one element per ~90 instructions, slower than memory for 16-bit types).

// dst = a (op) b, b tiled over a (a has dst's shape). b's row is found once per segment; along
// dim 0 it is read as is, as one broadcast element, or (rarely) tiled.
// With width 2 (a, dst and a full-width b pairable, or b one broadcast element) two elements at a
// time; with width 8 (the same with octets of 16-bit floats) eight. One instantiation per width,
// so that each keeps only its own path's registers.
template <int kWidth, typename Op>
__device__ void binary_rows(const TensorDesc& a, const TensorDesc& b, const TensorDesc& dst, const SegmentGrid& grid,
                            Op op) {
    const int64_t b0 = b.ne[0];
    for (int64_t s = blockIdx.x; s < grid.count; s += gridDim.x) {
        const RowSegment seg = row_segment(dst, grid, s);
        const char* a_row = element_address(a, seg.row);
        const char* b_row = element_address(b, wrap(b, seg.row));
        char* d_row = element_address(dst, seg.row);
        if constexpr (kWidth == 8) {
            for (int64_t i0 = seg.begin + 8 * threadIdx.x; i0 < seg.end; i0 += 8 * blockDim.x) {
                float x[8], y[8];
                load8_half_f32(a.type, at(a_row, i0, a.nb[0]), x);
                if (b0 == 1) {
                    const float y0 = load_as_f32(b.type, b_row);
                    for (float& v : y) v = y0;
                } else {
                    load8_half_f32(b.type, at(b_row, i0, b.nb[0]), y);
                }
                for (int j = 0; j < 8; ++j) x[j] = op(x[j], y[j]);
                store8_half_from_f32(dst.type, at(d_row, i0, dst.nb[0]), x);
            }
        } else if constexpr (kWidth == 2) {
            for (int64_t i0 = seg.begin + 2 * threadIdx.x; i0 < seg.end; i0 += 2 * blockDim.x) {
                const float2 x = load_pair_f32(a.type, at(a_row, i0, a.nb[0]));
                float2 y;
                if (b0 == 1) {
                    y.x = y.y = load_as_f32(b.type, b_row);
                } else {
                    y = load_pair_f32(b.type, at(b_row, i0, b.nb[0]));
                }
                store_pair_from_f32(dst.type, at(d_row, i0, dst.nb[0]), make_float2(op(x.x, y.x), op(x.y, y.y)));
            }
        } else {
            for (int64_t i0 = seg.begin + threadIdx.x; i0 < seg.end; i0 += blockDim.x) {
                const int64_t ib = b0 == grid.row_length ? i0 : (b0 == 1 ? 0 : i0 % b0);
                const float x = load_as_f32(a.type, at(a_row, i0, a.nb[0]));
                const float y = load_as_f32(b.type, at(b_row, ib, b.nb[0]));
                store_from_f32(dst.type, at(d_row, i0, dst.nb[0]), op(x, y));
            }
        }
    }
}

template <BinaryOp kOp>
struct BinaryFn {
    __device__ __forceinline__ float operator()(float x, float y) const { return binary_f32(kOp, x, y); }
};

// Blocks per SM that the register budget must allow: these kernels stream memory, and occupancy
// keeps loads in flight (binary's pair path, the one f32 tensors take, ran at 0.76 of the copy
// bandwidth with 48 registers a thread and at 0.88 with 32). Each width gets the most blocks it
// reaches without spilling: binary 8 (32 registers) for pairs, maps 6 (40); width 8, which holds
// eight values per operand, 5 (48); width 1 what it needs.
template <int kWidth>
inline constexpr int kBinaryBlocksPerSm = kWidth == 2 ? 8 : kWidth == 8 ? 5 : 1;
template <int kWidth>
inline constexpr int kMapBlocksPerSm = kWidth == 2 ? 6 : kWidth == 8 ? 5 : 1;

template <int kWidth>
__global__ void __launch_bounds__(kBlockSize, kBinaryBlocksPerSm<kWidth>)
    binary_kernel(TensorDesc a, TensorDesc b, TensorDesc dst, BinaryOp op, SegmentGrid grid) {
    switch (op) {
        case BinaryOp::Add: return binary_rows<kWidth>(a, b, dst, grid, BinaryFn<BinaryOp::Add>{});
        case BinaryOp::Sub: return binary_rows<kWidth>(a, b, dst, grid, BinaryFn<BinaryOp::Sub>{});
        case BinaryOp::Mul: return binary_rows<kWidth>(a, b, dst, grid, BinaryFn<BinaryOp::Mul>{});
        case BinaryOp::Div: return binary_rows<kWidth>(a, b, dst, grid, BinaryFn<BinaryOp::Div>{});
    }
}

enum class MapKind : int { AddScalar, Scale, Sqr, Sqrt, Log, Clamp, Unary };

struct MapParams {
    MapKind kind = MapKind::Scale;
    UnaryOp unary = UnaryOp::Neg;
    float p0 = 0.0f;  // scale: s; clamp: min
    float p1 = 0.0f;  // scale: bias; clamp: max
    const char* scalar = nullptr;  // add1: the scalar's device address
    DType scalar_type = DType::F32;
};

// One map with its kind (and unary op) fixed at compile time. p0, p1: MapParams'; scalar: add1's
// value, read once per thread.
template <MapKind kKind, UnaryOp kUnary = UnaryOp::Neg>
struct MapFn {
    float p0 = 0.0f, p1 = 0.0f, scalar = 0.0f;
    __device__ __forceinline__ float operator()(float x) const {
        if constexpr (kKind == MapKind::AddScalar) return x + scalar;
        else if constexpr (kKind == MapKind::Scale) return scale_f32(x, p0, p1);
        else if constexpr (kKind == MapKind::Sqr) return x * x;
        else if constexpr (kKind == MapKind::Sqrt) return sqrtf(x);
        else if constexpr (kKind == MapKind::Log) return logf(x);
        else if constexpr (kKind == MapKind::Clamp) return clamp_f32(x, p0, p1);
        else return fast_unary_f32(kUnary, x);
    }
};

// src has dst's shape. Width 2: both pairable, two elements at a time; width 8: both octets of
// 16-bit floats, eight at a time.
template <int kWidth, typename Fn>
__device__ void map_rows(const TensorDesc& src, const TensorDesc& dst, const SegmentGrid& grid, Fn fn) {
    for (int64_t s = blockIdx.x; s < grid.count; s += gridDim.x) {
        const RowSegment seg = row_segment(dst, grid, s);
        const char* s_row = element_address(src, seg.row);
        char* d_row = element_address(dst, seg.row);
        if constexpr (kWidth == 8) {
            for (int64_t i0 = seg.begin + 8 * threadIdx.x; i0 < seg.end; i0 += 8 * blockDim.x) {
                float x[8];
                load8_half_f32(src.type, at(s_row, i0, src.nb[0]), x);
                for (float& v : x) v = fn(v);
                store8_half_from_f32(dst.type, at(d_row, i0, dst.nb[0]), x);
            }
        } else if constexpr (kWidth == 2) {
            for (int64_t i0 = seg.begin + 2 * threadIdx.x; i0 < seg.end; i0 += 2 * blockDim.x) {
                const float2 x = load_pair_f32(src.type, at(s_row, i0, src.nb[0]));
                store_pair_from_f32(dst.type, at(d_row, i0, dst.nb[0]), make_float2(fn(x.x), fn(x.y)));
            }
        } else {
            for (int64_t i0 = seg.begin + threadIdx.x; i0 < seg.end; i0 += blockDim.x) {
                const float x = load_as_f32(src.type, at(s_row, i0, src.nb[0]));
                store_from_f32(dst.type, at(d_row, i0, dst.nb[0]), fn(x));
            }
        }
    }
}

// The unary map whose op is `op`: one loop per op, of which the matching one runs.
template <int kWidth, int... kOps>
__device__ void map_unary(UnaryOp op, const TensorDesc& src, const TensorDesc& dst, const SegmentGrid& grid,
                          std::integer_sequence<int, kOps...>) {
    static_cast<void>(((static_cast<int>(op) == kOps &&
                        (map_rows<kWidth>(src, dst, grid, MapFn<MapKind::Unary, static_cast<UnaryOp>(kOps)>{}), true)) ||
                       ...));
}

// One instantiation per width, as binary_kernel.
template <int kWidth>
__global__ void __launch_bounds__(kBlockSize, kMapBlocksPerSm<kWidth>)
    map_kernel(TensorDesc src, TensorDesc dst, MapParams params, SegmentGrid grid) {
    const float p0 = params.p0, p1 = params.p1;
    switch (params.kind) {
        case MapKind::AddScalar:
            return map_rows<kWidth>(src, dst, grid,
                                    MapFn<MapKind::AddScalar>{p0, p1, load_as_f32(params.scalar_type, params.scalar)});
        case MapKind::Scale: return map_rows<kWidth>(src, dst, grid, MapFn<MapKind::Scale>{p0, p1});
        case MapKind::Sqr: return map_rows<kWidth>(src, dst, grid, MapFn<MapKind::Sqr>{});
        case MapKind::Sqrt: return map_rows<kWidth>(src, dst, grid, MapFn<MapKind::Sqrt>{});
        case MapKind::Log: return map_rows<kWidth>(src, dst, grid, MapFn<MapKind::Log>{});
        case MapKind::Clamp: return map_rows<kWidth>(src, dst, grid, MapFn<MapKind::Clamp>{p0, p1});
        case MapKind::Unary:
            return map_unary<kWidth>(params.unary, src, dst, grid, std::make_integer_sequence<int, kUnaryOpCount>{});
    }
}

// dst = act(x) * g (fast_glu_f32; alpha and limit are swiglu_oai's): x from `a` at act_offset along
// dim 0, g from `gate` at gate_offset. Split form: two tensors of dst's shape, offsets 0. Fused form:
// `gate` is `a`, and the offsets pick the halves of its rows. (The launcher picks `gate`: a reference
// chosen here between two parameters would put both in local memory, 160 bytes a thread.)
__global__ void glu_kernel(TensorDesc a, TensorDesc gate, TensorDesc dst, GluOp op, float alpha, float limit,
                           int64_t act_offset, int64_t gate_offset, SegmentGrid grid, bool paired) {
    for (int64_t s = blockIdx.x; s < grid.count; s += gridDim.x) {
        const RowSegment seg = row_segment(dst, grid, s);
        const char* x_row = element_address(a, seg.row);
        const char* g_row = element_address(gate, seg.row);
        char* d_row = element_address(dst, seg.row);
        if (paired) {
            for (int64_t i0 = seg.begin + 2 * threadIdx.x; i0 < seg.end; i0 += 2 * blockDim.x) {
                const float2 x = load_pair_f32(a.type, at(x_row, i0 + act_offset, a.nb[0]));
                const float2 y = load_pair_f32(gate.type, at(g_row, i0 + gate_offset, gate.nb[0]));
                store_pair_from_f32(dst.type, at(d_row, i0, dst.nb[0]),
                                    make_float2(fast_glu_f32(op, x.x, y.x, alpha, limit), fast_glu_f32(op, x.y, y.y, alpha, limit)));
            }
            continue;
        }
        for (int64_t i0 = seg.begin + threadIdx.x; i0 < seg.end; i0 += blockDim.x) {
            const float x = load_as_f32(a.type, at(x_row, i0 + act_offset, a.nb[0]));
            const float y = load_as_f32(gate.type, at(g_row, i0 + gate_offset, gate.nb[0]));
            store_from_f32(dst.type, at(d_row, i0, dst.nb[0]), fast_glu_f32(op, x, y, alpha, limit));
        }
    }
}

MapParams map_params(const Tensor& dst) {
    MapParams p;
    switch (dst.op) {
        case Op::Add1:
            p.kind = MapKind::AddScalar;
            p.scalar = static_cast<const char*>(dst.src[1]->data);
            p.scalar_type = dst.src[1]->type;
            break;
        case Op::Scale:
            p.kind = MapKind::Scale;
            p.p0 = ScaleParams::load(dst).scale;
            p.p1 = ScaleParams::load(dst).bias;
            break;
        case Op::Sqr: p.kind = MapKind::Sqr; break;
        case Op::Sqrt: p.kind = MapKind::Sqrt; break;
        case Op::Log: p.kind = MapKind::Log; break;
        case Op::Clamp:
            p.kind = MapKind::Clamp;
            p.p0 = ClampParams::load(dst).min;
            p.p1 = ClampParams::load(dst).max;
            break;
        default:
            p.kind = MapKind::Unary;
            p.unary = UnaryParams::load(dst).op;
            break;
    }
    return p;
}

// f(std::integral_constant<int, W>{}) for W = width (1, 2 or 8): the launch of a kernel's
// instantiation for that width.
template <typename F>
void with_width(int width, F f) {
    if (width == 8) {
        f(std::integral_constant<int, 8>{});
    } else if (width == 2) {
        f(std::integral_constant<int, 2>{});
    } else {
        f(std::integral_constant<int, 1>{});
    }
}

BinaryOp binary_op(Op op) {
    switch (op) {
        case Op::Sub: return BinaryOp::Sub;
        case Op::Mul: return BinaryOp::Mul;
        case Op::Div: return BinaryOp::Div;
        default: return BinaryOp::Add;
    }
}

}  // namespace

Status launch_binary(const LaunchContext& ctx, const Tensor& dst) {
    const SegmentGrid grid = row_segments(dst.ne[0], dst.nrows());
    const TensorDesc a = describe(*dst.src[0]);
    const TensorDesc b = describe(*dst.src[1]);
    const TensorDesc d = describe(dst);
    // b along dim 0: one broadcast element allows any width, a full row its own, a tiled row one.
    const int b_width = b.ne[0] == 1 ? 8 : b.ne[0] == d.ne[0] ? access_width(b) : 1;
    const int width = std::min({access_width(a), access_width(d), b_width});
    const BinaryOp op = binary_op(dst.op);
    const int blocks = segment_blocks(grid);
    with_width(width, [&](auto w) {
        binary_kernel<decltype(w)::value><<<blocks, kBlockSize, 0, ctx.stream>>>(a, b, d, op, grid);
    });
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_map(const LaunchContext& ctx, const Tensor& dst) {
    const SegmentGrid grid = row_segments(dst.ne[0], dst.nrows());
    const TensorDesc src = describe(*dst.src[0]);
    const TensorDesc d = describe(dst);
    const MapParams params = map_params(dst);
    const int blocks = segment_blocks(grid);
    with_width(std::min(access_width(src), access_width(d)), [&](auto w) {
        map_kernel<decltype(w)::value><<<blocks, kBlockSize, 0, ctx.stream>>>(src, d, params, grid);
    });
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_glu(const LaunchContext& ctx, const Tensor& dst) {
    const SegmentGrid grid = row_segments(dst.ne[0], dst.nrows());
    const bool split = dst.src[1] != nullptr;
    const GluParams params = GluParams::load(dst);
    const bool swapped = !split && params.swapped;
    const int64_t half = dst.ne[0];
    const TensorDesc a = describe(*dst.src[0]);
    const TensorDesc gate = split ? describe(*dst.src[1]) : a;
    const TensorDesc d = describe(dst);
    // Fused rows: a's halves start at 0 and ne[0] (even when dst is pairable), so a pairable a
    // pairs both.
    const bool paired = pairable(a) && pairable(gate) && pairable(d);
    const int64_t act_offset = swapped ? half : 0;
    const int64_t gate_offset = split || swapped ? 0 : half;
    glu_kernel<<<segment_blocks(grid), kBlockSize, 0, ctx.stream>>>(a, gate, d, params.op, params.alpha, params.limit,
                                                                    act_offset, gate_offset, grid, paired);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

}  // namespace xb::cuda
