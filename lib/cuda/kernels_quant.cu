// Kernels of the quantized types: dequantization (copies to float types, get_rows, GEMM operands)
// and the one-token product of quantized weights with f32 activations. Every block is dequantized
// by core/quant_blocks.hpp's XB_HD code, the CPU's own, so both see the same weights.
#include "core/quant_blocks.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"

namespace xb::cuda {

namespace {

// The largest block of any quantized type, in elements.
constexpr int kMaxBlock = kQKK;

// Dequantizes the block at p, of the quantized type t, into y; returns its element count (0 for a
// type that is not quantized).
__device__ __forceinline__ int dequantize_any(DType t, const char* p, float* y) {
    switch (t) {
        case DType::Q4_0: dequantize_block(*reinterpret_cast<const BlockQ4_0*>(p), y); return kQK;
        case DType::Q4_1: dequantize_block(*reinterpret_cast<const BlockQ4_1*>(p), y); return kQK;
        case DType::Q5_0: dequantize_block(*reinterpret_cast<const BlockQ5_0*>(p), y); return kQK;
        case DType::Q5_1: dequantize_block(*reinterpret_cast<const BlockQ5_1*>(p), y); return kQK;
        case DType::Q8_0: dequantize_block(*reinterpret_cast<const BlockQ8_0*>(p), y); return kQK;
        case DType::Q4_K: dequantize_block(*reinterpret_cast<const BlockQ4_K*>(p), y); return kQKK;
        case DType::Q5_K: dequantize_block(*reinterpret_cast<const BlockQ5_K*>(p), y); return kQKK;
        case DType::Q6_K: dequantize_block(*reinterpret_cast<const BlockQ6_K*>(p), y); return kQKK;
        case DType::Q8_K: dequantize_block(*reinterpret_cast<const BlockQ8_K*>(p), y); return kQKK;
        default: return 0;
    }
}

// One thread per block: src (quantized) into dst (a float type, any strides, the same row length
// and number of rows; its dims 1-3 may be cut differently, as a copy's may).
__global__ void dequantize_kernel(TensorDesc src, TensorDesc dst, int64_t blocks_per_row, int block_elems,
                                  int block_bytes, int64_t n_blocks) {
    float y[kMaxBlock];
    for (int64_t u = thread_index(); u < n_blocks; u += thread_count()) {
        const int64_t row = u / blocks_per_row;
        const Index4 s = row_start(src, row);
        const Index4 d = row_start(dst, row);
        const int64_t b = u % blocks_per_row;
        const int n = dequantize_any(src.type, row_address(src, s.i[1], s.i[2], s.i[3]) + b * block_bytes, y);
        for (int j = 0; j < n && j < block_elems; ++j) store_f32(dst, with_dim(d, 0, b * block_elems + j), y[j]);
    }
}

// get_rows from quantized src: dst row (i1, i2, i3) is row rows[i1, i2, i3] of src matrix (i2, i3).
__global__ void get_rows_quant_kernel(TensorDesc src, TensorDesc rows, TensorDesc dst, KernelErrorRecord* errors,
                                      int slot, int64_t blocks_per_row, int block_elems, int block_bytes,
                                      int64_t n_blocks) {
    float y[kMaxBlock];
    for (int64_t u = thread_index(); u < n_blocks; u += thread_count()) {
        const Index4 r = row_start(dst, u / blocks_per_row);
        const int64_t b = u % blocks_per_row;
        const int64_t row = load_index(rows, Index4{{r.i[1], r.i[2], r.i[3], 0}});
        if (row < 0 || row >= src.ne[1]) {
            if (b == 0) report_index_error(errors, slot, row, src.ne[1]);
            continue;
        }
        const int n = dequantize_any(src.type, row_address(src, row, r.i[2], r.i[3]) + b * block_bytes, y);
        for (int j = 0; j < n && j < block_elems; ++j) store_f32(dst, with_dim(r, 0, b * block_elems + j), y[j]);
    }
}

// dst[i, 0, i2, i3] = dot(row i of a's matrix (i2 / r2, i3 / r3), column 0 of b): one warp per output,
// lanes over blocks, a warp reduction at the end.
__global__ void mul_mat_vec_quant_kernel(TensorDesc a, TensorDesc b, TensorDesc dst, int64_t blocks_per_row,
                                         int block_elems, int block_bytes, int64_t r2, int64_t r3) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    for_each_warp_output(dst, [&](int64_t i, int64_t i2, int64_t i3) {
        float y[kMaxBlock];
        const char* w = row_address(a, i, i2 / r2, i3 / r3);
        float sum = 0.0f;
        for (int64_t k = lane; k < blocks_per_row; k += kWarpSize) {
            const int n = dequantize_any(a.type, w + k * block_bytes, y);
            for (int j = 0; j < n; ++j) sum += y[j] * load_f32(b, Index4{{k * block_elems + j, 0, i2, i3}});
        }
        sum = warp_reduce(sum, SumOp{});
        if (lane == 0) store_f32(dst, Index4{{i, 0, i2, i3}}, sum);
    });
}

struct BlockShape {
    int elems;
    int bytes;
};

BlockShape block_shape(DType t) {
    return {static_cast<int>(blck_size(t)), static_cast<int>(type_size(t))};
}

}  // namespace

Status launch_dequantize(const LaunchContext& ctx, const TensorDesc& src, const TensorDesc& dst) {
    const BlockShape bs = block_shape(src.type);
    const int64_t blocks_per_row = src.ne[0] / bs.elems;
    const int64_t n_blocks = blocks_per_row * src.ne[1] * src.ne[2] * src.ne[3];
    if (n_blocks == 0) return Status::ok();
    dequantize_kernel<<<elementwise_blocks(n_blocks), kBlockSize, 0, ctx.stream>>>(src, dst, blocks_per_row, bs.elems,
                                                                                   bs.bytes, n_blocks);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_get_rows_quant(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const BlockShape bs = block_shape(src.type);
    const int64_t blocks_per_row = src.ne[0] / bs.elems;
    const int64_t n_blocks = blocks_per_row * dst.nrows();
    if (n_blocks == 0) return Status::ok();
    get_rows_quant_kernel<<<elementwise_blocks(n_blocks), kBlockSize, 0, ctx.stream>>>(
        describe(src), describe(*dst.src[1]), describe(dst), ctx.errors, ctx.error_slot, blocks_per_row, bs.elems,
        bs.bytes, n_blocks);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_mul_mat_vec_quant(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const BlockShape bs = block_shape(a.type);
    const int64_t outputs = dst.ne[0] * dst.ne[2] * dst.ne[3];
    if (outputs == 0) return Status::ok();
    constexpr int kWarps = 4;
    mul_mat_vec_quant_kernel<<<elementwise_blocks(outputs, kWarps), kWarps * kWarpSize, 0, ctx.stream>>>(
        describe(a), describe(b), describe(dst), a.ne[0] / bs.elems, bs.elems, bs.bytes, dst.ne[2] / a.ne[2],
        dst.ne[3] / a.ne[3]);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

}  // namespace xb::cuda
