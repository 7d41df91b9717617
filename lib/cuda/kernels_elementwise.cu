// Element-wise kernels: binary ops with broadcasting, the maps (add1, scale, sqr, sqrt, log, clamp,
// unary activations) and gated linear units. The scalar math is op_math.hpp's, shared with the CPU.
#include "core/op_math.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"

namespace xb::cuda {

namespace {

// dst = a (op) b, b tiled over a (a has dst's shape).
__global__ void binary_kernel(TensorDesc a, TensorDesc b, TensorDesc dst, BinaryOp op, int64_t n) {
    for (int64_t f = thread_index(); f < n; f += thread_count()) {
        const Index4 i = unravel(dst, f);
        store_f32(dst, i, binary_f32(op, load_f32(a, i), load_f32(b, wrap(b, i))));
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

__global__ void map_kernel(TensorDesc src, TensorDesc dst, MapParams params, int64_t n) {
    for (int64_t f = thread_index(); f < n; f += thread_count()) {
        const Index4 i = unravel(dst, f);
        store_f32(dst, i, apply_map(params, load_f32(src, i)));
    }
}

// dst = act(x) * g. Split form: x from `a`, g from `g` (same shapes). Fused form (`g` unused): x
// and g are the halves of a's rows, at act_offset and gate_offset along dim 0.
__global__ void glu_kernel(TensorDesc a, TensorDesc g, TensorDesc dst, GluOp op, bool split, int64_t act_offset,
                           int64_t gate_offset, int64_t n) {
    for (int64_t f = thread_index(); f < n; f += thread_count()) {
        const Index4 i = unravel(dst, f);
        float x;
        float y;
        if (split) {
            x = load_f32(a, i);
            y = load_f32(g, i);
        } else {
            x = load_f32(a, with_dim(i, 0, i.i[0] + act_offset));
            y = load_f32(a, with_dim(i, 0, i.i[0] + gate_offset));
        }
        store_f32(dst, i, glu_activation_f32(op, x) * y);
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
            p.p0 = dst.param_f32(0);
            p.p1 = dst.param_f32(1);
            break;
        case Op::Sqr: p.kind = MapKind::Sqr; break;
        case Op::Sqrt: p.kind = MapKind::Sqrt; break;
        case Op::Log: p.kind = MapKind::Log; break;
        case Op::Clamp:
            p.kind = MapKind::Clamp;
            p.p0 = dst.param_f32(0);
            p.p1 = dst.param_f32(1);
            break;
        default:
            p.kind = MapKind::Unary;
            p.unary = static_cast<UnaryOp>(dst.param_i32(0));
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
    const int64_t n = dst.nelements();
    binary_kernel<<<elementwise_blocks(n), kBlockSize, 0, ctx.stream>>>(describe(*dst.src[0]), describe(*dst.src[1]),
                                                                        describe(dst), binary_op(dst.op), n);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_map(const LaunchContext& ctx, const Tensor& dst) {
    const int64_t n = dst.nelements();
    map_kernel<<<elementwise_blocks(n), kBlockSize, 0, ctx.stream>>>(describe(*dst.src[0]), describe(dst),
                                                                     map_params(dst), n);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_glu(const LaunchContext& ctx, const Tensor& dst) {
    const int64_t n = dst.nelements();
    const bool split = dst.src[1] != nullptr;
    const bool swapped = !split && dst.param_i32(1) != 0;
    const int64_t half = dst.ne[0];
    const TensorDesc gate = split ? describe(*dst.src[1]) : TensorDesc{};
    glu_kernel<<<elementwise_blocks(n), kBlockSize, 0, ctx.stream>>>(
        describe(*dst.src[0]), gate, describe(dst), static_cast<GluOp>(dst.param_i32(0)), split, swapped ? half : 0,
        swapped ? 0 : half, n);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

}  // namespace xb::cuda
