// The CUDA kernels' host-side launchers, one per op family (kernels_<family>.cu, matmul.cpp).
//
// Each launcher queues the node's work on ctx.stream and returns at once; a Status reports launch
// failures (checked with cudaGetLastError right after each launch). Errors found in the data while
// the kernels run go to ctx.errors (kernel_errors.hpp). Sources and dst are read and written
// through their strides: every layout that supports_node accepts works. dst may alias src[0]
// (in-place ops): every kernel reads an element's inputs before it writes that element.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "core/status.hpp"
#include "core/tensor.hpp"
#include "cuda/expert_products.hpp"
#include "cuda/kernel_errors.hpp"
#include "cuda/quant_products.hpp"
#include "cuda/tensor_desc.hpp"

namespace xb::cuda {

struct LaunchContext {
    cudaStream_t stream = nullptr;
    cublasHandle_t cublas = nullptr;
    char* scratch = nullptr;             // node_scratch_bytes(node) bytes at least, 256-byte aligned
    size_t scratch_bytes = 0;
    KernelErrorRecord* errors = nullptr;  // device memory
    int error_slot = 0;                   // the slot of the node being launched (get_rows, set_rows)
    bool tf32 = false;                    // f32 GEMMs on TF32 tensor cores
};

// Queues the node's computation (its op must be supported by supports_node).
Status launch_node(const LaunchContext& ctx, const Tensor& node);

// --- kernels_copy.cu ---
// src's elements into dst in logical (flat) order, converting between float types; same-type
// copies move bits. (Quantized sources go to launch_dequantize.) src and dst have the same number of elements, any shapes and strides.
Status launch_copy(const LaunchContext& ctx, const TensorDesc& src, const TensorDesc& dst);
Status launch_repeat(const LaunchContext& ctx, const Tensor& dst);
Status launch_concat(const LaunchContext& ctx, const Tensor& dst);
Status launch_pad(const LaunchContext& ctx, const Tensor& dst);
Status launch_arange(const LaunchContext& ctx, const Tensor& dst);
Status launch_get_rows(const LaunchContext& ctx, const Tensor& dst);
Status launch_set_rows(const LaunchContext& ctx, const Tensor& dst);

// --- kernels_elementwise.cu ---
Status launch_binary(const LaunchContext& ctx, const Tensor& dst);  // add, sub, mul, div (b broadcast)
Status launch_map(const LaunchContext& ctx, const Tensor& dst);     // add1, scale, sqr, sqrt, log, clamp, unary
Status launch_glu(const LaunchContext& ctx, const Tensor& dst);

// --- kernels_reduce.cu ---
Status launch_sum(const LaunchContext& ctx, const Tensor& dst);
Status launch_sum_rows(const LaunchContext& ctx, const Tensor& dst);  // sum_rows, mean
Status launch_argmax(const LaunchContext& ctx, const Tensor& dst);
Status launch_norm(const LaunchContext& ctx, const Tensor& dst);      // norm, rms_norm, l2_norm

// --- kernels_attention.cu ---
Status launch_soft_max(const LaunchContext& ctx, const Tensor& dst);
Status launch_diag_mask_inf(const LaunchContext& ctx, const Tensor& dst);
Status launch_rope(const LaunchContext& ctx, const Tensor& dst);  // uses scratch (cos/sin table)
Status launch_flash_attn_ext(const LaunchContext& ctx, const Tensor& dst);

// --- kernels_moe.cu: mixture of experts (ids out of range go to ctx.errors) ---
Status launch_mul_mat_id(const LaunchContext& ctx, const Tensor& dst);  // float or quantized experts
Status launch_add_id(const LaunchContext& ctx, const Tensor& dst);
// Recurrent layers (kernels_recurrent.cu), of the sizes launch_config.hpp bounds.
Status launch_ssm_conv(const LaunchContext& ctx, const Tensor& dst);
Status launch_ssm_scan(const LaunchContext& ctx, const Tensor& dst);
Status launch_gated_delta_net(const LaunchContext& ctx, const Tensor& dst);
Status launch_argsort(const LaunchContext& ctx, const Tensor& dst);     // rows of up to kArgsortMaxRow

// --- kernels_quant.cu: the quantized types' values (core/quant_blocks.hpp) ---
// src (quantized, whole rows of consecutive blocks) into dst (a float type, any strides) with the
// same row length and number of rows.
Status launch_dequantize(const LaunchContext& ctx, const TensorDesc& src, const TensorDesc& dst);
// src (a float type, any strides) into dst, a quantized type with a quantizer (core's can_quantize),
// row for row: the same row length and number of rows.
Status launch_quantize(const LaunchContext& ctx, const TensorDesc& src, const TensorDesc& dst);
Status launch_get_rows_quant(const LaunchContext& ctx, const Tensor& dst);

// --- kernels_mat_vec_q.cu and kernels_mat_mat_q.cu: quantized weights (quant_products.hpp) ---
// mul_mat of quantized a by up to kMatVecMaxColumns columns (the plan's MatVec path; uses scratch
// for the quantized columns), and by more (Tiles).
Status launch_mul_mat_vec_q(const LaunchContext& ctx, const Tensor& dst, const QuantProductPlan& plan);
Status launch_mul_mat_q_tiles(const LaunchContext& ctx, const Tensor& dst, const QuantProductPlan& plan);

// mul_mat_id's (slot, token) pairs grouped by expert, in scratch (expert_products.hpp's plan):
// pairs[pair_start[e] .. pair_start[e + 1]) chose expert e, whose column tiles start at tile_start[e].
struct ExpertGroups {
    int32_t* pair_start = nullptr;
    int32_t* tile_start = nullptr;
    int32_t* pairs = nullptr;
};
// The plan's Tiles path of mul_mat_id (kernels_moe.cu groups the pairs, then calls this): each
// expert's weights times tiles of its pairs' columns.
Status launch_mul_mat_id_tiles(const LaunchContext& ctx, const Tensor& dst, const ExpertProductPlan& plan,
                               const ExpertGroups& groups);
// The plan's MatVec path of mul_mat_id (kernels_mat_vec_q.cu): b's columns quantized into scratch,
// then each (slot, token) pair's rows of its expert dotted with the pair's column.
Status launch_mul_mat_id_vec_q(const LaunchContext& ctx, const Tensor& dst, const ExpertProductPlan& plan);

// --- kernels_matmul.cu: f16 or bf16 a times one f32 column of b (uses_mat_vec in gemm_plan.hpp) ---
Status launch_mul_mat_vec_half(const LaunchContext& ctx, const Tensor& dst);

// --- matmul.cpp (cuBLAS) and kernels_matmul.cu ---
Status launch_gemm(const LaunchContext& ctx, const Tensor& dst);  // mul_mat, out_prod; uses scratch

// The per-batch operand addresses of a pointer-array GEMM, computed on the device so that nothing
// in host memory must outlive the launch. Batch b = i2 + i3 * batch2; a's matrix is (i2 / r2, i3 / r3).
struct GemmPointerArgs {
    const char* a = nullptr;
    int64_t a_nb2 = 0, a_nb3 = 0;
    const char* b = nullptr;
    int64_t b_nb2 = 0, b_nb3 = 0;
    char* c = nullptr;
    int64_t c_nb2 = 0, c_nb3 = 0;
    int64_t batch2 = 1, batch3 = 1, r2 = 1, r3 = 1;
    const void** a_out = nullptr;
    const void** b_out = nullptr;
    void** c_out = nullptr;
};
Status launch_gemm_pointers(const LaunchContext& ctx, const GemmPointerArgs& args);

}  // namespace xb::cuda
