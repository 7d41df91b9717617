// The pointer arrays of batched GEMMs whose batches do not step by one stride (a broadcast over
// dims 2 and 3, or batch strides that do not flatten): computed on the device, in scratch.
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

}  // namespace

Status launch_gemm_pointers(const LaunchContext& ctx, const GemmPointerArgs& args) {
    const int64_t batches = args.batch2 * args.batch3;
    gemm_pointers_kernel<<<elementwise_blocks(batches), kBlockSize, 0, ctx.stream>>>(args);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

}  // namespace xb::cuda
