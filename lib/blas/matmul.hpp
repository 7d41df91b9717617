// mul_mat and out_prod on host memory with cblas_sgemm.
//
// Each 2-D slice of an operand goes to sgemm in place when it is f32 with one packed dim (rows,
// or columns: a transposed matrix, handled with the transpose flag) and the other dim's stride
// fits cblas's leading dimension. Anything else (f16/bf16, quantized weights, both dims strided,
// overlapping or misaligned rows) is first converted to packed f32 in scratch memory that the
// backend owns and reuses. Batches (dims 2 and 3) are a loop of sgemm calls with a's slice broadcast over b's; a
// single 2-D a times a batch of b stored as one matrix is a single call.
#pragma once

#include <cstddef>

#include "core/aligned_bytes.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb::blas {

// Memory for converted operands, kept between calls and grown when a larger one is needed.
class Scratch {
public:
    // Room for `count` floats (64-byte aligned); OutOfMemory when it cannot be had.
    Result<float*> floats(size_t count);
    size_t capacity_bytes() const { return memory_.size(); }

private:
    AlignedBytes memory_;
};

// One scratch area per operand: a's converted slice stays while b's slices go through.
struct Workspace {
    Scratch a;
    Scratch b;
};

// The nodes compute_matmul handles: mul_mat and out_prod with f32/f16/bf16 operands (and quantized
// weights) of any strides, an f32 result whose rows are packed, every size within cblas's int.
bool matmul_supported(const Tensor& node);

// Computes a node that passed matmul_supported; its tensors are in host memory. The products and
// large conversions are split over up to n_threads OpenMP threads.
Status compute_matmul(const Tensor& node, Workspace& ws, int n_threads);

}  // namespace xb::blas
