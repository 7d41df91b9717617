// The pointer arrays of batched GEMMs whose batches do not step by one stride (a broadcast over
// dims 2 and 3, or batch strides that do not flatten): computed on the device, in scratch. And the
// mat-vec kernel of f16/bf16 weights, which reads the f32 activations as they are.
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"

namespace xb::cuda {

namespace {

__global__ void gemm_pointers_kernel(GemmPointerArgs p) {
    const int64_t batches = p.batch2 * p.batch3;
    for (int64_t batch = thread_index(); batch < batches; batch += thread_count()) {
        const int64_t i2 = batch % p.batch2;
        const int64_t i3 = batch / p.batch2;
        p.a_out[batch] = p.a + (i2 / p.r2) * p.a_nb2 + (i3 / p.r3) * p.a_nb3;
        p.b_out[batch] = p.b + i2 * p.b_nb2 + i3 * p.b_nb3;
        p.c_out[batch] = p.c + i2 * p.c_nb2 + i3 * p.c_nb3;
    }
}

// dst[i, 0, i2, i3] = dot(row i of a's matrix (i2 / r2, i3 / r3), f16 or bf16, and column 0 of b,
// f32): one warp per output. With `vectorized` (both rows 16-byte aligned and contiguous) each lane
// reads eight weights and eight activations at a time, which is what reaches the memory's speed;
// the rest of a row (and every element without it) one at a time. A warp reduction at the end.
__global__ void mul_mat_vec_half_kernel(TensorDesc a, TensorDesc b, TensorDesc dst, int64_t r2, int64_t r3,
                                        bool vectorized) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int64_t k = a.ne[0];
    const int64_t k_vec = vectorized ? k - k % 8 : 0;
    for_each_warp_output(dst, [&](int64_t i, int64_t i2, int64_t i3) {
        const char* w = row_address(a, i, i2 / r2, i3 / r3);
        const char* x = row_address(b, 0, i2, i3);
        float sum = 0.0f;
        for (int64_t e = 8 * lane; e < k_vec; e += 8 * kWarpSize) {
            float wv[8];
            load8_half_f32(a.type, w + 2 * e, wv);
            const float4 x0 = *reinterpret_cast<const float4*>(x + 4 * e);
            const float4 x1 = *reinterpret_cast<const float4*>(x + 4 * e + 16);
            sum += wv[0] * x0.x + wv[1] * x0.y + wv[2] * x0.z + wv[3] * x0.w;
            sum += wv[4] * x1.x + wv[5] * x1.y + wv[6] * x1.z + wv[7] * x1.w;
        }
        for (int64_t e = k_vec + lane; e < k; e += kWarpSize) {
            sum += load_as_f32(a.type, w + e * a.nb[0]) * load_as_f32(b.type, x + e * b.nb[0]);
        }
        sum = warp_reduce(sum, SumOp{});
        if (lane == 0) store_f32(dst, Index4{{i, 0, i2, i3}}, sum);
    });
}

}  // namespace

Status launch_mul_mat_vec_half(const LaunchContext& ctx, const Tensor& dst) {
    const TensorDesc a = describe(*dst.src[0]);
    const TensorDesc b = describe(*dst.src[1]);
    const int64_t outputs = dst.ne[0] * dst.ne[2] * dst.ne[3];
    if (outputs == 0) return Status::ok();
    constexpr int kWarps = 4;
    const bool vectorized = rows_aligned16(a) && rows_aligned16(b);
    mul_mat_vec_half_kernel<<<elementwise_blocks(outputs, kWarps), kWarps * kWarpSize, 0, ctx.stream>>>(
        a, b, describe(dst), dst.ne[2] / a.ne[2], dst.ne[3] / a.ne[3], vectorized);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_gemm_pointers(const LaunchContext& ctx, const GemmPointerArgs& args) {
    const int64_t batches = args.batch2 * args.batch3;
    gemm_pointers_kernel<<<elementwise_blocks(batches), kBlockSize, 0, ctx.stream>>>(args);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

}  // namespace xb::cuda
