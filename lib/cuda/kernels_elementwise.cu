// Element-wise kernels: binary ops with broadcasting, the maps (add1, scale, sqr, sqrt, log, clamp,
// unary activations) and gated linear units. The scalar math is op_math.hpp's, shared with the CPU.
#include "core/op_math.hpp"
#include "core/op_params.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"

namespace xb::cuda {

namespace {

// dst = a (op) b, b tiled over a (a has dst's shape). b's row is found once per segment; along
// dim 0 it is read as is, as one broadcast element, or (rarely) tiled.
// With width 2 (a, dst and a full-width b pairable, or b one broadcast element) two elements at a
// time; with width 8 (the same with octets of 16-bit floats) eight. One instantiation per width,
// so that each keeps only its own path's registers.
template <int kWidth>
__global__ void binary_kernel(TensorDesc a, TensorDesc b, TensorDesc dst, BinaryOp op, SegmentGrid grid) {
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
                for (int j = 0; j < 8; ++j) x[j] = binary_f32(op, x[j], y[j]);
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
                store_pair_from_f32(dst.type, at(d_row, i0, dst.nb[0]),
                                    make_float2(binary_f32(op, x.x, y.x), binary_f32(op, x.y, y.y)));
            }
        } else {
            for (int64_t i0 = seg.begin + threadIdx.x; i0 < seg.end; i0 += blockDim.x) {
                const int64_t ib = b0 == grid.row_length ? i0 : (b0 == 1 ? 0 : i0 % b0);
                const float x = load_as_f32(a.type, at(a_row, i0, a.nb[0]));
                const float y = load_as_f32(b.type, at(b_row, ib, b.nb[0]));
                store_from_f32(dst.type, at(d_row, i0, dst.nb[0]), binary_f32(op, x, y));
            }
        }
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

__device__ __forceinline__ float apply_map(const MapParams& p, float x) {
    switch (p.kind) {
        case MapKind::AddScalar: return x + load_as_f32(p.scalar_type, p.scalar);
        case MapKind::Scale: return scale_f32(x, p.p0, p.p1);
        case MapKind::Sqr: return x * x;
        case MapKind::Sqrt: return sqrtf(x);
        case MapKind::Log: return logf(x);
        case MapKind::Clamp: return clamp_f32(x, p.p0, p.p1);
        case MapKind::Unary: return unary_f32(p.unary, x);
    }
    return x;
}

// src has dst's shape. Width 2: both pairable, two elements at a time; width 8: both octets of
// 16-bit floats, eight at a time. One instantiation per width, as binary_kernel.
template <int kWidth>
__global__ void map_kernel(TensorDesc src, TensorDesc dst, MapParams params, SegmentGrid grid) {
    for (int64_t s = blockIdx.x; s < grid.count; s += gridDim.x) {
        const RowSegment seg = row_segment(dst, grid, s);
        const char* s_row = element_address(src, seg.row);
        char* d_row = element_address(dst, seg.row);
        if constexpr (kWidth == 8) {
            for (int64_t i0 = seg.begin + 8 * threadIdx.x; i0 < seg.end; i0 += 8 * blockDim.x) {
                float x[8];
                load8_half_f32(src.type, at(s_row, i0, src.nb[0]), x);
                for (float& v : x) v = apply_map(params, v);
                store8_half_from_f32(dst.type, at(d_row, i0, dst.nb[0]), x);
            }
        } else if constexpr (kWidth == 2) {
            for (int64_t i0 = seg.begin + 2 * threadIdx.x; i0 < seg.end; i0 += 2 * blockDim.x) {
                const float2 x = load_pair_f32(src.type, at(s_row, i0, src.nb[0]));
                store_pair_from_f32(dst.type, at(d_row, i0, dst.nb[0]),
                                    make_float2(apply_map(params, x.x), apply_map(params, x.y)));
            }
        } else {
            for (int64_t i0 = seg.begin + threadIdx.x; i0 < seg.end; i0 += blockDim.x) {
                const float x = load_as_f32(src.type, at(s_row, i0, src.nb[0]));
                store_from_f32(dst.type, at(d_row, i0, dst.nb[0]), apply_map(params, x));
            }
        }
    }
}

// dst = act(x) * g. Split form: x from `a`, g from `g` (same shapes). Fused form (`g` unused): x
// and g are the halves of a's rows, at act_offset and gate_offset along dim 0.
__global__ void glu_kernel(TensorDesc a, TensorDesc g, TensorDesc dst, GluOp op, bool split, int64_t act_offset,
                           int64_t gate_offset, SegmentGrid grid, bool paired) {
    const TensorDesc& gate = split ? g : a;
    if (split) act_offset = gate_offset = 0;
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
                                    make_float2(glu_activation_f32(op, x.x) * y.x, glu_activation_f32(op, x.y) * y.y));
            }
            continue;
        }
        for (int64_t i0 = seg.begin + threadIdx.x; i0 < seg.end; i0 += blockDim.x) {
            const float x = load_as_f32(a.type, at(x_row, i0 + act_offset, a.nb[0]));
            const float y = load_as_f32(gate.type, at(g_row, i0 + gate_offset, gate.nb[0]));
            store_from_f32(dst.type, at(d_row, i0, dst.nb[0]), glu_activation_f32(op, x) * y);
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
    const bool b_paired = (b.ne[0] == d.ne[0] && pairable(b)) || b.ne[0] == 1;
    const bool b_octets = (b.ne[0] == d.ne[0] && octets_of_halves(b)) || b.ne[0] == 1;
    const int width = octets_of_halves(a) && octets_of_halves(d) && b_octets ? 8
                      : pairable(a) && pairable(d) && b_paired          ? 2
                                                                        : 1;
    const BinaryOp op = binary_op(dst.op);
    const int blocks = segment_blocks(grid);
    if (width == 8) {
        binary_kernel<8><<<blocks, kBlockSize, 0, ctx.stream>>>(a, b, d, op, grid);
    } else if (width == 2) {
        binary_kernel<2><<<blocks, kBlockSize, 0, ctx.stream>>>(a, b, d, op, grid);
    } else {
        binary_kernel<1><<<blocks, kBlockSize, 0, ctx.stream>>>(a, b, d, op, grid);
    }
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_map(const LaunchContext& ctx, const Tensor& dst) {
    const SegmentGrid grid = row_segments(dst.ne[0], dst.nrows());
    const TensorDesc src = describe(*dst.src[0]);
    const TensorDesc d = describe(dst);
    const int width = octets_of_halves(src) && octets_of_halves(d) ? 8 : pairable(src) && pairable(d) ? 2 : 1;
    const MapParams params = map_params(dst);
    const int blocks = segment_blocks(grid);
    if (width == 8) {
        map_kernel<8><<<blocks, kBlockSize, 0, ctx.stream>>>(src, d, params, grid);
    } else if (width == 2) {
        map_kernel<2><<<blocks, kBlockSize, 0, ctx.stream>>>(src, d, params, grid);
    } else {
        map_kernel<1><<<blocks, kBlockSize, 0, ctx.stream>>>(src, d, params, grid);
    }
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_glu(const LaunchContext& ctx, const Tensor& dst) {
    const SegmentGrid grid = row_segments(dst.ne[0], dst.nrows());
    const bool split = dst.src[1] != nullptr;
    const GluParams params = GluParams::load(dst);
    const bool swapped = !split && params.swapped;
    const int64_t half = dst.ne[0];
    const TensorDesc gate = split ? describe(*dst.src[1]) : TensorDesc{};
    const TensorDesc a = describe(*dst.src[0]);
    const TensorDesc d = describe(dst);
    // Fused rows: a's halves start at 0 and ne[0] (even when dst is pairable), so a pairable a
    // pairs both.
    const bool paired = pairable(a) && pairable(d) && (!split || pairable(gate));
    glu_kernel<<<segment_blocks(grid), kBlockSize, 0, ctx.stream>>>(a, gate, d, params.op,
                                                                    split, swapped ? half : 0, swapped ? 0 : half,
                                                                    grid, paired);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

}  // namespace xb::cuda
