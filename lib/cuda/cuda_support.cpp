#include "cuda/cuda_support.hpp"

#include <climits>

#include "core/ops.hpp"
#include "core/quant.hpp"
#include "cuda/expert_products.hpp"
#include "cuda/gemm_plan.hpp"
#include "cuda/launch_config.hpp"
#include "cuda/quant_products.hpp"
#include "cuda/quant_types.cuh"
#include "cuda/tensor_desc.hpp"

namespace xb::cuda {

namespace {

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
// Element by element (launch_copy): float types, or the same non-block type.
bool convertible(DType from, DType to) { return (from == to && !is_quantized(from)) || (is_float(from) && is_float(to)); }

// Every element address is a multiple of the element size (allocations are 256-byte aligned, so
// the view offset and the strides decide).
bool elements_aligned(const Tensor& t) {
    const size_t size = type_size(t.type);
    if (t.is_view() && t.view_offs % size != 0) return false;
    for (int d = 0; d < kMaxDims; ++d) {
        if (t.ne[d] > 1 && t.nb[d] % size != 0) return false;
    }
    return true;
}

bool all_aligned(const Tensor& node) {
    if (!elements_aligned(node)) return false;
    for (const Tensor* s : node.src) {
        if (s != nullptr && !elements_aligned(*s)) return false;
    }
    return true;
}

bool all_float(std::initializer_list<const Tensor*> tensors) {
    for (const Tensor* t : tensors) {
        if (t == nullptr || !is_float(t->type)) return false;
    }
    return true;
}

bool supports_glu(const Tensor& node) {
    const int op = static_cast<int>(GluParams::load(node).op);
    if (op < 0 || op >= kGluOpCount || !all_float({&node, node.src[0]})) return false;
    if (node.src[1] != nullptr) return is_float(node.src[1]->type) && same_shape(*node.src[0], *node.src[1]);
    return node.src[0]->ne[0] == 2 * node.ne[0];
}

bool supports_rope(const Tensor& node) {
    const RopeParams p = RopeParams::load(node);
    const Tensor* pos = node.src[1];
    const Tensor* factors = node.src[2];
    if (factors != nullptr && (factors->type != DType::F32 || !factors->is_contiguous())) return false;
    return all_float({&node, node.src[0]}) && pos != nullptr && pos->type == DType::I32 && p.n_dims > 0 &&
           p.n_dims % 2 == 0 && p.n_dims <= node.ne[0] && (p.mode == RopeMode::Normal || p.mode == RopeMode::Neox);
}

// Float into a quantized type with a quantizer, row for row (the same row length and number of
// rows), the destination's rows whole blocks.
bool quantizing_copy(const Tensor& src, const Tensor& dst) {
    return is_float(src.type) && is_quantized(dst.type) && can_quantize(dst.type) && src.ne[0] == dst.ne[0] &&
           src.nrows() == dst.nrows() && dst.ne[0] % blck_size(dst.type) == 0 && dst.nb[0] == type_size(dst.type);
}

bool supports_flash_attn(const Tensor& node) {
    const Tensor* q = node.src[0];
    const Tensor* k = node.src[1];
    const Tensor* v = node.src[2];
    const Tensor* mask = node.src[3];
    if (q == nullptr || k == nullptr || v == nullptr || q->type != DType::F32 || node.type != DType::F32) return false;
    if (!is_float(k->type) || !is_float(v->type)) return false;
    if (mask != nullptr && mask->type != DType::F32 && mask->type != DType::F16) return false;
    if (k->ne[2] <= 0 || q->ne[2] % k->ne[2] != 0) return false;
    return flash_head_sizes_fit(q->ne[0], v->ne[0]) && q->ne[2] <= INT_MAX;
}

bool supports_op_types(const Tensor& node) {
    const Tensor* a = node.src[0];
    const Tensor* b = node.src[1];
    switch (node.op) {
        case Op::None: case Op::Reshape: case Op::View: case Op::Permute: case Op::Transpose:
            return true;
        case Op::Dup: case Op::Cont: case Op::Cpy:
            // Quantized sources dequantize; float sources quantize into every type core can make.
            return a != nullptr && (convertible(a->type, node.type) || (is_quantized(a->type) && is_float(node.type)) ||
                                    quantizing_copy(*a, node) ||
                                    (a->type == node.type && a->is_contiguous() && node.is_contiguous()));
        case Op::Add: case Op::Sub: case Op::Mul: case Op::Div:
            return all_float({&node, a, b}) && same_shape(node, *a) && can_repeat(*b, node);
        case Op::Add1:
            return all_float({&node, a, b}) && b->nelements() == 1;
        case Op::Scale: case Op::Sqr: case Op::Sqrt: case Op::Log: case Op::Clamp:
            return all_float({&node, a});
        case Op::Unary:
            return all_float({&node, a}) && static_cast<int>(UnaryParams::load(node).op) >= 0 &&
                   static_cast<int>(UnaryParams::load(node).op) < kUnaryOpCount;
        case Op::Glu:
            return supports_glu(node);
        case Op::Sum: case Op::SumRows: case Op::Mean:
            return all_float({&node, a});
        case Op::Argmax:
            return all_float({a}) && node.type == DType::I32 && a->ne[0] <= INT_MAX;
        case Op::Repeat:
            return a != nullptr && a->type == node.type && can_repeat(*a, node);
        case Op::Concat:
            return a != nullptr && b != nullptr && a->type == node.type && b->type == node.type &&
                   ConcatParams::load(node).dim >= 0 && ConcatParams::load(node).dim < kMaxDims;
        case Op::Pad:
            return a != nullptr && a->type == node.type;
        case Op::Arange:
            return is_float(node.type);
        case Op::GetRows:
            return a != nullptr && b != nullptr && b->type == DType::I32 &&
                   (convertible(a->type, node.type) || (is_quantized(a->type) && is_float(node.type)));
        case Op::SetRows:
            return all_float({&node, a}) && b != nullptr && (b->type == DType::I32 || b->type == DType::I64);
        case Op::Norm: case Op::RmsNorm: case Op::L2Norm:
            return all_float({&node, a});
        case Op::SoftMax:
            return a != nullptr && a->type == DType::F32 && node.type == DType::F32 &&
                   (b == nullptr || b->type == DType::F32 || b->type == DType::F16);
        case Op::DiagMaskInf:
            return a != nullptr && a->type == DType::F32 && node.type == DType::F32;
        case Op::Rope:
            return supports_rope(node);
        case Op::MulMat: case Op::OutProd:
            return gemm_supported(node);
        case Op::FlashAttnExt:
            return supports_flash_attn(node);
        case Op::MulMatId:
            // Float experts, or quantized ones of a type with device blocks; f32/f16/bf16 b; the ids
            // are i32 (the builder checks them).
            return a != nullptr && b != nullptr && node.src[2] != nullptr && is_float(b->type) &&
                   (is_float(a->type) || with_block_type(a->type, [](auto) { return true; }, false));
        case Op::Argsort:
            return all_float({a}) && node.type == DType::I32 && a->ne[0] <= kArgsortMaxRow;
        case Op::AddId:
            return all_float({&node, a, b}) && node.src[2] != nullptr;
        // f32 throughout (the builders check it); each lane or thread keeps its slice of the
        // state in registers, which bounds the state sizes (kernels_recurrent.cu).
        case Op::SsmConv:
            return true;
        case Op::SsmScan:
            return a->ne[0] <= kMaxScanStateDim;
        case Op::GatedDeltaNet:
            return node.src[2]->ne[0] <= kMaxDeltaNetDim;
    }
    return false;
}

}  // namespace

bool supports_node(const Tensor& node) {
    if (node.op == Op::None || op_is_view(node.op)) return true;
    return supports_op_types(node) && all_aligned(node);
}

FlashShape flash_shape(const Tensor& node) {
    const Tensor& q = *node.src[0];
    const Tensor& k = *node.src[1];
    const Tensor& v = *node.src[2];
    FlashShape s;
    s.d = q.ne[0];
    s.dv = v.ne[0];
    s.n_q = q.ne[1];
    s.n_head = q.ne[2];
    s.n_seq = q.ne[3];
    s.n_kv = k.ne[1];
    s.kv_vectors = is_float(k.type) && is_float(v.type) && rows_aligned16(describe(k)) && rows_aligned16(describe(v));
    return s;
}

size_t node_scratch_bytes(const Tensor& node) {
    if (computes_nothing(node)) return 0;
    switch (node.op) {
        case Op::MulMat: case Op::OutProd:
            if (is_quant_product(node)) return plan_quant_product(node).scratch_bytes;
            return uses_mat_vec(node) ? 0 : plan_gemm(node).scratch_bytes;
        case Op::Rope:
            // cos and sin of every rotated pair at each token's position.
            return align_scratch(static_cast<size_t>(node.ne[2]) * static_cast<size_t>(RopeParams::load(node).n_dims) *
                                 sizeof(float));
        case Op::MulMatId:
            // The pairs grouped by expert, for the tile path (expert_products.hpp).
            return plan_expert_product(node).scratch_bytes;
        case Op::FlashAttnExt:
            // Partial results of the key splits (launch_config.hpp).
            return align_scratch(plan_flash(flash_shape(node)).partial_bytes);
        default:
            return 0;
    }
}

}  // namespace xb::cuda
