// Op -> launcher dispatch for one graph node.
#include "cuda/cuda_check.hpp"
#include "cuda/gemm_plan.hpp"
#include "cuda/kernels.hpp"
#include "cuda/quant_products.hpp"

namespace xb::cuda {

namespace {

// dup, cont, cpy: a plain memcpy when both sides are packed in the same type (elements then sit
// at the same byte offsets whatever the shapes), dequantization from a quantized source,
// quantization into a quantized destination, the converting copy kernel otherwise.
Status launch_copy_node(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    if (src.type == dst.type && src.is_contiguous() && dst.is_contiguous()) {
        XB_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst.data, src.data, dst.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream));
        return Status::ok();
    }
    if (is_quantized(src.type)) return launch_dequantize(ctx, describe(src), describe(dst));
    if (is_quantized(dst.type)) return launch_quantize(ctx, describe(src), describe(dst));
    return launch_copy(ctx, describe(src), describe(dst));
}

Status launch_get_rows_node(const LaunchContext& ctx, const Tensor& dst) {
    return is_quantized(dst.src[0]->type) ? launch_get_rows_quant(ctx, dst) : launch_get_rows(ctx, dst);
}

// Quantized weights go to the integer mat-vec or the tile kernels, never through cuBLAS; f16/bf16
// weights times one f32 column to the half mat-vec kernel; the rest to cuBLAS.
Status launch_mul_mat_node(const LaunchContext& ctx, const Tensor& dst) {
    if (is_quant_product(dst)) {
        const QuantProductPlan plan = plan_quant_product(dst);
        return plan.path == QuantProductPath::MatVec ? launch_mul_mat_vec_q(ctx, dst, plan)
                                                     : launch_mul_mat_q_tiles(ctx, dst, plan);
    }
    return uses_mat_vec(dst) ? launch_mul_mat_vec_half(ctx, dst) : launch_gemm(ctx, dst);
}

}  // namespace

Status launch_node(const LaunchContext& ctx, const Tensor& node) {
    switch (node.op) {
        case Op::None: case Op::Reshape: case Op::View: case Op::Permute: case Op::Transpose:
            return Status::ok();
        case Op::Dup: case Op::Cont: case Op::Cpy: return launch_copy_node(ctx, node);
        case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: return launch_binary(ctx, node);
        case Op::Add1: case Op::Scale: case Op::Sqr: case Op::Sqrt: case Op::Log: case Op::Clamp: case Op::Unary:
            return launch_map(ctx, node);
        case Op::Glu: return launch_glu(ctx, node);
        case Op::Sum: return launch_sum(ctx, node);
        case Op::SumRows: case Op::Mean: return launch_sum_rows(ctx, node);
        case Op::Argmax: return launch_argmax(ctx, node);
        case Op::Repeat: return launch_repeat(ctx, node);
        case Op::Concat: return launch_concat(ctx, node);
        case Op::Pad: return launch_pad(ctx, node);
        case Op::Arange: return launch_arange(ctx, node);
        case Op::GetRows: return launch_get_rows_node(ctx, node);
        case Op::SetRows: return launch_set_rows(ctx, node);
        case Op::Norm: case Op::RmsNorm: case Op::L2Norm: return launch_norm(ctx, node);
        case Op::SoftMax: return launch_soft_max(ctx, node);
        case Op::DiagMaskInf: return launch_diag_mask_inf(ctx, node);
        case Op::Rope: return launch_rope(ctx, node);
        case Op::MulMat: case Op::OutProd: return launch_mul_mat_node(ctx, node);
        case Op::FlashAttnExt: return launch_flash_attn_ext(ctx, node);
        case Op::MulMatId: return launch_mul_mat_id(ctx, node);
        case Op::Argsort: return launch_argsort(ctx, node);
        case Op::AddId: return launch_add_id(ctx, node);
        case Op::SsmConv: return launch_ssm_conv(ctx, node);
        case Op::SsmScan: return launch_ssm_scan(ctx, node);
        case Op::GatedDeltaNet: return launch_gated_delta_net(ctx, node);
    }
    return Status(StatusCode::NotSupported, std::string("no CUDA kernel for op ") + op_name(node.op));
}

}  // namespace xb::cuda
