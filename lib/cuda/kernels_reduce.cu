// Reductions: sum, sum_rows/mean, argmax, norm and rms_norm. One block per row (grid-stride over
// rows); sums accumulate in double, as the CPU does, so both round the same exact-ish sums once.
#include "core/op_math.hpp"
#include "core/op_params.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"

namespace xb::cuda {

namespace {

// One block reduces every element (deterministic: a fixed order for a fixed launch).
__global__ void sum_kernel(TensorDesc src, TensorDesc dst) {
    __shared__ double scratch[kMaxBlockSize / kWarpSize];
    const int64_t n = element_count(src);
    double acc = 0.0;
    for (int64_t f = threadIdx.x; f < n; f += blockDim.x) acc += static_cast<double>(load_f32(src, unravel(src, f)));
    acc = block_reduce(acc, SumOp{}, 0.0, scratch);
    if (threadIdx.x == 0) store_from_f32(dst.type, dst.data, static_cast<float>(acc));
}

__global__ void sum_rows_kernel(TensorDesc src, TensorDesc dst, bool mean) {
    __shared__ double scratch[kMaxBlockSize / kWarpSize];
    const int64_t rows = row_count(dst);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const Index4 r = row_start(dst, row);
        double acc = 0.0;
        for (int64_t i0 = threadIdx.x; i0 < src.ne[0]; i0 += blockDim.x) {
            acc += static_cast<double>(load_f32(src, with_dim(r, 0, i0)));
        }
        acc = block_reduce(acc, SumOp{}, 0.0, scratch);
        if (threadIdx.x == 0) {
            // As the CPU: the f32 sum divided by n (an empty row's mean is 0/0 = NaN).
            const float s = static_cast<float>(acc);
            store_f32(dst, r, mean ? s / static_cast<float>(src.ne[0]) : s);
        }
    }
}

// The better of two (value, index) candidates: the larger value, the smaller index on ties; index
// -1 is "no candidate". Values never exceed -inf or NaN, so those are never chosen (as the CPU's
// strict > scan from -inf).
__device__ __forceinline__ bool better(float v, int i, float best_v, int best_i) {
    if (i < 0) return false;
    if (best_i < 0) return true;
    return v > best_v || (v == best_v && i < best_i);
}

// dst[i1] = index of the first maximum of row i1 (0 when no element exceeds -inf).
__global__ void argmax_kernel(TensorDesc src, TensorDesc dst) {
    __shared__ float warp_value[kMaxBlockSize / kWarpSize];
    __shared__ int warp_index[kMaxBlockSize / kWarpSize];
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int n_warps = static_cast<int>(blockDim.x) / kWarpSize;
    for (int64_t row = blockIdx.x; row < src.ne[1]; row += gridDim.x) {
        float best_v = -INFINITY;
        int best_i = -1;
        for (int64_t i0 = threadIdx.x; i0 < src.ne[0]; i0 += blockDim.x) {
            const float v = load_f32(src, Index4{{i0, row, 0, 0}});
            if (v > best_v) {  // ascending i0: the thread keeps the first of its maxima
                best_v = v;
                best_i = static_cast<int>(i0);
            }
        }
        for (int round = 0; round < 2; ++round) {
            for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
                const float v = __shfl_xor_sync(0xffffffffu, best_v, offset);
                const int i = __shfl_xor_sync(0xffffffffu, best_i, offset);
                if (better(v, i, best_v, best_i)) {
                    best_v = v;
                    best_i = i;
                }
            }
            if (round == 1) break;
            __syncthreads();  // the previous row's readers are done with the shared slots
            if (lane == 0) {
                warp_value[warp] = best_v;
                warp_index[warp] = best_i;
            }
            __syncthreads();
            best_v = lane < n_warps ? warp_value[lane] : -INFINITY;
            best_i = lane < n_warps ? warp_index[lane] : -1;
        }
        if (threadIdx.x == 0) {
            *reinterpret_cast<int32_t*>(element_address(dst, Index4{{row, 0, 0, 0}})) = best_i < 0 ? 0 : best_i;
        }
    }
}

// norm: (x - mean) / sqrt(var + eps); rms_norm: x / sqrt(mean(x^2) + eps); l2_norm: x / max(|x|,
// eps); the CPU's roundings (norm_scale_f32).
__global__ void norm_kernel(TensorDesc src, TensorDesc dst, float eps, Op op) {
    __shared__ double scratch[kMaxBlockSize / kWarpSize];
    const int64_t n = src.ne[0];
    const int64_t rows = row_count(dst);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const Index4 r = row_start(dst, row);
        float mean = 0.0f;
        if (op == Op::Norm) {
            double acc = 0.0;
            for (int64_t i0 = threadIdx.x; i0 < n; i0 += blockDim.x) acc += static_cast<double>(load_f32(src, with_dim(r, 0, i0)));
            mean = static_cast<float>(block_reduce(acc, SumOp{}, 0.0, scratch) / static_cast<double>(n));
        }
        double sq = 0.0;
        for (int64_t i0 = threadIdx.x; i0 < n; i0 += blockDim.x) {
            const float v = load_f32(src, with_dim(r, 0, i0)) - mean;
            sq += static_cast<double>(v * v);
        }
        sq = block_reduce(sq, SumOp{}, 0.0, scratch);
        const float scale = norm_scale_f32(op, sq, n, eps);
        // Each thread writes only the elements it read: in place (dst aliasing src) is safe.
        for (int64_t i0 = threadIdx.x; i0 < n; i0 += blockDim.x) {
            const Index4 i = with_dim(r, 0, i0);
            store_f32(dst, i, (load_f32(src, i) - mean) * scale);
        }
    }
}

}  // namespace

Status launch_sum(const LaunchContext& ctx, const Tensor& dst) {
    sum_kernel<<<1, kMaxBlockSize, 0, ctx.stream>>>(describe(*dst.src[0]), describe(dst));
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_sum_rows(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    sum_rows_kernel<<<row_blocks(dst.nrows()), reduction_block_size(src.ne[0], kRowBlockSize), 0, ctx.stream>>>(
        describe(src), describe(dst), dst.op == Op::Mean);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_argmax(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    argmax_kernel<<<row_blocks(src.ne[1]), reduction_block_size(src.ne[0]), 0, ctx.stream>>>(describe(src),
                                                                                          describe(dst));
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_norm(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    norm_kernel<<<row_blocks(dst.nrows()), reduction_block_size(src.ne[0], kRowBlockSize), 0, ctx.stream>>>(
        describe(src), describe(dst), NormParams::load(dst).eps, dst.op);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

}  // namespace xb::cuda
