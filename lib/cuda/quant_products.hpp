// How the GPU multiplies quantized weights (mul_mat with a quantized a), as ggml's CUDA backend
// does, never through a dequantized copy of the whole matrix (pure host logic, unit-tested without
// a GPU):
//   - up to kMatVecMaxColumns columns of b per batch (decode, small batches): the columns are
//     quantized once to 8-bit blocks in scratch (core/quant_int_dot.hpp), and each weight row is
//     dotted with them in integer arithmetic (dp4a) by a block of threads, several columns per
//     weight read (kernels_mat_vec_q.cu);
//   - more columns (prefill): tiles of the weights are decoded to f16 in shared memory and
//     multiplied with f16 tiles of b on the tensor cores (kernels_mat_mat_q.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor.hpp"

namespace xb::cuda {

inline constexpr int kMatVecMaxColumns = 8;
// Weight rows and columns of b per tile of the prefill (Tiles) kernel.
inline constexpr int kTileWeightRows = 128;
inline constexpr int kTileColumns = 64;
// Threads of a mat-vec block: its warps split a weight row's units among them.
inline constexpr int kMatVecWarps = 4;

enum class QuantProductPath { MatVec, Tiles };

// Where the mat-vec kernels' 8-bit columns sit in scratch: `columns` columns of k int8 values, then
// their Q8Scales (one per kQ8Block values), each part aligned.
struct QuantizedColumns {
    size_t values_offset = 0;
    size_t scales_offset = 0;
    size_t bytes = 0;
};
QuantizedColumns quantized_columns(int64_t columns, int64_t k);

struct QuantProductPlan {
    QuantProductPath path = QuantProductPath::Tiles;
    int64_t k = 0;              // the dot length (a's row length)
    int64_t rows = 0;           // a's rows: dst's ne[0]
    int64_t columns = 0;        // b's columns per batch: dst's ne[1]
    int64_t batches = 0;        // dst's ne[2] * ne[3]
    int64_t r2 = 1, r3 = 1;     // dst batches per matrix of a, per dim
    bool wide_loads = false;    // mat-vec: the weights' quants read 16 bytes at a time
    // Mat-vec: the quantized columns in scratch, column j of batch t being column j + columns * t.
    QuantizedColumns quantized;
    size_t scratch_bytes = 0;
};

// A mul_mat whose weights (a) are quantized.
bool is_quant_product(const Tensor& dst);
// The plan of a node for which is_quant_product and gemm_supported hold. Reads a's data address
// (the wide loads need 16-byte aligned rows), so make it after allocation.
QuantProductPlan plan_quant_product(const Tensor& dst);

// Weight types whose mat-vec units read their quants 16 bytes at a time when rows allow it.
bool has_wide_units(DType t);
// has_wide_units, and every row of `a` (quantized weights) starts 16-byte aligned.
bool wide_loads_usable(const Tensor& a);

}  // namespace xb::cuda
