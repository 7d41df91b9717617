// How a mul_mat or out_prod node maps onto cuBLAS (pure host logic, unit-tested without a GPU).
//
// cuBLAS is column-major. Each operand is seen as a column-major matrix whose columns are the
// tensor's rows (dim 0 contiguous) and whose leading dimension is nb[1] in elements:
//   mul_mat:  a [k, m] is stored k x m and used transposed, b [k, n] as is:   C[m x n] = a^T b
//   out_prod: a [m, k] is stored m x k and used as is, b [n, k] transposed:   C[m x n] = a b^T
// and C is dst [m, n], so that every batch (dims 2 and 3) is one GEMM.
//
// Quantized weights never come here: they have their own kernels (quant_products.hpp).
//
// Both operands must have one element type. As ggml does, f32 activations are rounded to the
// type of f16/bf16 weights (b takes a's type); other mixes compute in f32. An f16 or bf16 a times a
// single f32 column of b (a decode step) skips cuBLAS: a mat-vec kernel reads the weights as stored
// and the activations without rounding them (uses_mat_vec). An operand whose type,
// element stride or row stride cuBLAS cannot take is first packed (converted and made contiguous)
// into scratch memory. Batches are one GEMM, a strided batch when every operand steps by one
// stride per batch, else a batch over pointer arrays (broadcast of a over dims 2 and 3, or batch
// strides that do not flatten); the pointer arrays live in scratch too.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor.hpp"

namespace xb::cuda {

inline constexpr size_t kScratchAlignment = 256;

enum class GemmBatching { Single, Strided, Pointers };

struct GemmOperand {
    const Tensor* tensor = nullptr;  // the source node as it is
    bool transposed = false;         // used transposed by cuBLAS (op T)
    bool pack = false;               // packed into scratch as input_type first
    int64_t ld = 0;                  // leading dimension, in elements
    int64_t nb2 = 0, nb3 = 0;        // batch strides in bytes (of the packed copy when packed)
    size_t scratch_offset = 0;       // the packed copy's place in scratch
    size_t scratch_bytes = 0;        // 0 when not packed
};

struct GemmPlan {
    DType input_type = DType::F32;  // the element type both operands are given to cuBLAS in
    int64_t m = 0, n = 0, k = 0;
    GemmOperand a, b;
    int64_t c_ld = 0;               // dst's leading dimension, in elements
    int64_t batch2 = 1, batch3 = 1;  // dst dims 2 and 3
    int64_t r2 = 1, r3 = 1;          // how many dst batches share one matrix of a, per dim
    GemmBatching batching = GemmBatching::Single;
    // Strided batching: the per-batch step of a, b and dst, in elements.
    int64_t stride_a = 0, stride_b = 0, stride_c = 0;
    size_t pointers_offset = 0;      // Pointers batching: three arrays of batch_count() pointers
    size_t scratch_bytes = 0;        // all of the scratch the node needs

    int64_t batch_count() const { return batch2 * batch3; }
};

// The type both operands are converted to for a GEMM of a (type ta) and b (type tb).
DType gemm_input_type(DType ta, DType tb);
// True when the GPU computes a mul_mat / out_prod node: float sources (or mul_mat's a quantized, for
// the kernels of quant_products.hpp),
// contiguous f32 dst, and every size within cuBLAS's 32-bit ints.
bool gemm_supported(const Tensor& dst);
// A mul_mat with one column of b per batch of f16/bf16 a and f32 b: a mat-vec kernel, not cuBLAS.
bool uses_mat_vec(const Tensor& dst);
// The plan of a node for which gemm_supported is true and whose a is not quantized. Reads the
// tensors' data addresses (an operand at an address not aligned to its element is packed), so make
// it after allocation.
GemmPlan plan_gemm(const Tensor& dst);

size_t align_scratch(size_t bytes);

}  // namespace xb::cuda
