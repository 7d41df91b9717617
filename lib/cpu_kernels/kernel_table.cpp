// Op -> CPU kernel dispatch, the CPU's type support, and scratch sizes.
#include "cpu_kernels/kernels.hpp"
#include "core/op_params.hpp"

namespace xb::cpu_kernels {

KernelFn find_kernel(const Tensor& dst) {
    switch (dst.op) {
        case Op::Dup: case Op::Cont: case Op::Cpy: return compute_copy;
        case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: return compute_binary;
        case Op::Add1: return compute_add1;
        case Op::Scale: case Op::Sqr: case Op::Sqrt: case Op::Log: case Op::Clamp: case Op::Unary:
            return compute_map;
        case Op::Glu: return compute_glu;
        case Op::Sum: return compute_sum;
        case Op::SumRows: case Op::Mean: return compute_sum_rows;
        case Op::Argmax: return compute_argmax;
        case Op::Repeat: return compute_repeat;
        case Op::Concat: return compute_concat;
        case Op::Norm: case Op::RmsNorm: case Op::L2Norm: return compute_norm;
        case Op::SoftMax: return compute_soft_max;
        case Op::DiagMaskInf: return compute_diag_mask_inf;
        case Op::Rope: return compute_rope;
        case Op::MulMat: return compute_mul_mat;
        case Op::OutProd: return compute_out_prod;
        case Op::GetRows: return compute_get_rows;
        case Op::SetRows: return compute_set_rows;
        case Op::Pad: return compute_pad;
        case Op::Arange: return compute_arange;
        case Op::FlashAttnExt: return compute_flash_attn_ext;
        case Op::MulMatId: return compute_mul_mat_id;
        case Op::Argsort: return compute_argsort;
        case Op::AddId: return compute_add_id;
        case Op::SsmConv: return compute_ssm_conv;
        case Op::SsmScan: return compute_ssm_scan;
        case Op::GatedDeltaNet: return compute_gated_delta_net;
        case Op::None: case Op::Reshape: case Op::View: case Op::Permute: case Op::Transpose:
            return nullptr;
    }
    return nullptr;
}

bool supports_node(const Tensor& node) {
    if (op_is_view(node.op) || node.op == Op::None) return true;
    if (find_kernel(node) == nullptr) return false;
    // Quantized weights need this instruction set's dot product of their type (q8_K has none: it
    // is the k-quants' activation format, not a weight type).
    if (node.op == Op::MulMat || node.op == Op::MulMatId) return weights_supported(node.src[0]->type);
    // Every builder already restricts types to what these kernels handle: float types through
    // load/store conversion, i32 where an op takes indices or copies integers.
    return true;
}

size_t kernel_work_size(const Tensor& node, int nth) {
    switch (node.op) {
        case Op::MulMat: return mul_mat_work_size(node, nth);
        case Op::FlashAttnExt: return flash_attn_ext_work_size(node, nth);
        case Op::MulMatId: return mul_mat_id_work_size(node, nth);
        default: return 0;
    }
}

}  // namespace xb::cpu_kernels
