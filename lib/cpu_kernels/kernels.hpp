// CPU kernels: one function per op family. Each is called by every thread of the team with the
// same node; a kernel splits its work by params.ith / params.nth, and may call params.barrier()
// (every thread must then reach the same barriers). Sources are read through their strides, so
// non-contiguous inputs work everywhere; `dst` is written through its strides too.
#pragma once

#include <cstddef>

#include "core/tensor.hpp"
#include "cpu_kernels/compute_params.hpp"

namespace xb::cpu_kernels {

using KernelFn = void (*)(const ComputeParams& params, Tensor& dst);

// The kernel of dst->op, or nullptr when the CPU has none for its op (view ops have none: they
// compute nothing).
KernelFn find_kernel(const Tensor& dst);
// True when the CPU backend can compute `node` with these source and result types.
bool supports_node(const Tensor& node);
// Scratch bytes the kernel of `node` needs when computed by nth threads (0 for most ops).
size_t kernel_work_size(const Tensor& node, int nth);

// --- kernels_elementwise.cpp ---
void compute_binary(const ComputeParams& p, Tensor& dst);      // Add, Sub, Mul, Div (broadcast)
void compute_add1(const ComputeParams& p, Tensor& dst);
void compute_map(const ComputeParams& p, Tensor& dst);         // Scale, Sqr, Sqrt, Log, Clamp, Unary
void compute_glu(const ComputeParams& p, Tensor& dst);

// --- kernels_copy.cpp ---
void compute_copy(const ComputeParams& p, Tensor& dst);        // Dup, Cont, Cpy (with conversion)
void compute_repeat(const ComputeParams& p, Tensor& dst);
void compute_concat(const ComputeParams& p, Tensor& dst);
void compute_pad(const ComputeParams& p, Tensor& dst);
void compute_arange(const ComputeParams& p, Tensor& dst);
void compute_get_rows(const ComputeParams& p, Tensor& dst);
void compute_set_rows(const ComputeParams& p, Tensor& dst);

// --- kernels_reduce.cpp ---
void compute_sum(const ComputeParams& p, Tensor& dst);
void compute_sum_rows(const ComputeParams& p, Tensor& dst);   // SumRows, Mean
void compute_argmax(const ComputeParams& p, Tensor& dst);
void compute_argsort(const ComputeParams& p, Tensor& dst);
void compute_norm(const ComputeParams& p, Tensor& dst);         // Norm, RmsNorm, L2Norm

// --- kernels_matmul.cpp ---
void compute_mul_mat(const ComputeParams& p, Tensor& dst);
size_t mul_mat_work_size(const Tensor& dst, int nth);
// --- kernels_matmul_packed.cpp: mul_mat with many columns of b (compute_mul_mat sends it there) ---
bool mul_mat_packed_applies(const Tensor& dst);
void compute_mul_mat_packed(const ComputeParams& p, Tensor& dst);
size_t mul_mat_packed_work_size(const Tensor& dst, int nth);
// --- kernels_matmul_quant.cpp: mul_mat with quantized src0 (compute_mul_mat sends it there) ---
void compute_mul_mat_quant(const ComputeParams& p, Tensor& dst);
size_t mul_mat_quant_work_size(const Tensor& dst, int nth);
// Weights of type t can be multiplied here: every float type, and the quantized types this
// instruction set has a dot product for (not q8_K, the k-quants' activation format).
bool weights_supported(DType t);
void compute_out_prod(const ComputeParams& p, Tensor& dst);

// --- kernels_moe.cpp: mixture of experts ---
void compute_mul_mat_id(const ComputeParams& p, Tensor& dst);
size_t mul_mat_id_work_size(const Tensor& dst, int nth);
void compute_add_id(const ComputeParams& p, Tensor& dst);

// --- kernels_recurrent.cpp: recurrent layers ---
void compute_ssm_conv(const ComputeParams& p, Tensor& dst);
void compute_ssm_scan(const ComputeParams& p, Tensor& dst);
void compute_gated_delta_net(const ComputeParams& p, Tensor& dst);

// --- kernels_attention.cpp ---
void compute_soft_max(const ComputeParams& p, Tensor& dst);
void compute_diag_mask_inf(const ComputeParams& p, Tensor& dst);
void compute_rope(const ComputeParams& p, Tensor& dst);
void compute_flash_attn_ext(const ComputeParams& p, Tensor& dst);
size_t flash_attn_ext_work_size(const Tensor& dst, int nth);

}  // namespace xb::cpu_kernels
