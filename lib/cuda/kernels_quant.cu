// Kernels of the quantized types' values: dequantization (copies to float types, get_rows) and
// quantization (copies from float types). Their products are in kernels_mat_vec_q.cu and
// kernels_mat_mat_q.cu. Every value comes from core/quant_blocks.hpp's XB_HD dequantize_part, the
// same bits as the CPU's dequantize_block; a thread takes sixteen values at a time, so no thread
// holds a whole 256-value block. Quantizing runs core's XB_HD quantize_block (the CPU's
// quantize_row), one thread per block (copies into quantized types are off the products' paths);
// where the device fuses a multiply and an add that the host compiler left apart, a value on a
// rounding boundary can land one step away from the CPU's, within the format's error bound that
// op-check's cast cases hold it to.
#include "core/quant_blocks.hpp"
#include "core/quantize_blocks.hpp"
#include "core/quantize_formats.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"
#include "cuda/quant_types.cuh"

namespace xb::cuda {

namespace {

constexpr int kPiece = 16;  // values per thread and step

// Values piece * 16 .. + 15 of the quantized row at `row` into dst's row `d` (any float type and
// strides).
template <typename Block>
__device__ __forceinline__ void dequantize_piece(const char* row, int64_t piece, const TensorDesc& dst, const Index4& d) {
    constexpr int kPieces = kBlockElems<Block> / kPiece;
    const auto& block = *reinterpret_cast<const Block*>(row + (piece / kPieces) * static_cast<int64_t>(sizeof(Block)));
    float y[kPiece];
    dequantize_part(block, static_cast<int>(piece % kPieces), y);
#pragma unroll
    for (int j = 0; j < kPiece; ++j) store_f32(dst, with_dim(d, 0, piece * kPiece + j), y[j]);
}

// One thread per piece: src (quantized) into dst (a float type, any strides, the same row length
// and number of rows; its dims 1-3 may be cut differently, as a copy's may).
template <typename Block>
__global__ void dequantize_kernel(TensorDesc src, TensorDesc dst, int64_t pieces_per_row, int64_t n_pieces) {
    for (int64_t u = thread_index(); u < n_pieces; u += thread_count()) {
        const int64_t row = u / pieces_per_row;
        const Index4 s = row_start(src, row);
        dequantize_piece<Block>(row_address(src, s.i[1], s.i[2], s.i[3]), u % pieces_per_row, dst, row_start(dst, row));
    }
}

// get_rows from quantized src: dst row (i1, i2, i3) is row rows[i1, i2, i3] of src matrix (i2, i3).
template <typename Block>
__global__ void get_rows_quant_kernel(TensorDesc src, TensorDesc rows, TensorDesc dst, KernelErrorRecord* errors,
                                      int slot, int64_t pieces_per_row, int64_t n_pieces) {
    for (int64_t u = thread_index(); u < n_pieces; u += thread_count()) {
        const Index4 r = row_start(dst, u / pieces_per_row);
        const int64_t piece = u % pieces_per_row;
        const int64_t row = load_index(rows, Index4{{r.i[1], r.i[2], r.i[3], 0}});
        if (row < 0 || row >= src.ne[1]) {
            if (piece == 0) report_index_error(errors, slot, row, src.ne[1]);
            continue;
        }
        dequantize_piece<Block>(row_address(src, row, r.i[2], r.i[3]), piece, dst, r);
    }
}

// One thread per block of dst (a quantized type, rows of whole blocks): the block's values from the
// same row of src (a float type, any strides; dims 1-3 may be cut differently, as a copy's may).
template <typename Block>
__global__ void quantize_kernel(TensorDesc src, TensorDesc dst, int64_t blocks_per_row, int64_t n_blocks) {
    constexpr int kElems = kBlockElems<Block>;
    for (int64_t u = thread_index(); u < n_blocks; u += thread_count()) {
        const int64_t row = u / blocks_per_row;
        const int64_t first = (u % blocks_per_row) * kElems;
        const Index4 s = row_start(src, row);
        float x[kElems];
        for (int j = 0; j < kElems; ++j) x[j] = load_f32(src, with_dim(s, 0, first + j));
        Block block;
        quantize_block(x, block);
        reinterpret_cast<Block*>(element_address(dst, row_start(dst, row)))[first / kElems] = block;
    }
}

template <typename Block>
concept HasQuantizer = requires(const float* x, Block& b) { quantize_block(x, b); };

constexpr const char* kNotQuantized = "dequantize: not a quantized type: ";

}  // namespace

Status launch_dequantize(const LaunchContext& ctx, const TensorDesc& src, const TensorDesc& dst) {
    const int64_t pieces_per_row = src.ne[0] / kPiece;
    const int64_t n_pieces = pieces_per_row * src.ne[1] * src.ne[2] * src.ne[3];
    if (n_pieces == 0) return Status::ok();
    return launch_for_block_type(
        src.type,
        [&](auto tag) {
            dequantize_kernel<typename decltype(tag)::type>
                <<<elementwise_blocks(n_pieces), kBlockSize, 0, ctx.stream>>>(src, dst, pieces_per_row, n_pieces);
            return true;
        },
        StatusCode::Internal, kNotQuantized);
}

Status launch_quantize(const LaunchContext& ctx, const TensorDesc& src, const TensorDesc& dst) {
    return launch_for_block_type(
        dst.type,
        [&](auto tag) {
            using Block = typename decltype(tag)::type;
            if constexpr (HasQuantizer<Block>) {
                const int64_t blocks_per_row = dst.ne[0] / kBlockElems<Block>;
                const int64_t n_blocks = blocks_per_row * dst.ne[1] * dst.ne[2] * dst.ne[3];
                if (n_blocks > 0) {
                    quantize_kernel<Block>
                        <<<elementwise_blocks(n_blocks), kBlockSize, 0, ctx.stream>>>(src, dst, blocks_per_row, n_blocks);
                }
                return true;
            } else {
                return false;
            }
        },
        StatusCode::Internal, "quantize: no quantizer for ");
}

Status launch_get_rows_quant(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const int64_t pieces_per_row = src.ne[0] / kPiece;
    const int64_t n_pieces = pieces_per_row * dst.nrows();
    if (n_pieces == 0) return Status::ok();
    return launch_for_block_type(
        src.type,
        [&](auto tag) {
            get_rows_quant_kernel<typename decltype(tag)::type><<<elementwise_blocks(n_pieces), kBlockSize, 0, ctx.stream>>>(
                describe(src), describe(*dst.src[1]), describe(dst), ctx.errors, ctx.error_slot, pieces_per_row, n_pieces);
            return true;
        },
        StatusCode::Internal, kNotQuantized);
}

}  // namespace xb::cuda
