#include "ggml_devices/ggml_cpu_limits.hpp"

#include <ggml.h>

#include <initializer_list>
#include <string>

namespace xb::ggml_devices {

namespace {

bool one_of(ggml_type t, std::initializer_list<ggml_type> types) {
    for (ggml_type u : types) {
        if (t == u) return true;
    }
    return false;
}

// The kernel steps through dim 0 one element at a time.
bool packed_rows(const ggml_tensor* t) { return t->ne[0] == 1 || t->nb[0] == ggml_type_size(t->type); }

std::string types_text(const ggml_tensor* node) {
    std::string s = std::string(ggml_type_name(node->src[0]->type));
    if (node->src[1] != nullptr) s += ", " + std::string(ggml_type_name(node->src[1]->type));
    return s + " -> " + ggml_type_name(node->type);
}

std::string no_kernel(const ggml_tensor* node) { return "ggml's CPU has no kernel for " + types_text(node); }

}  // namespace

std::string cpu_kernel_gap(const ggml_tensor* node) {
    const ggml_tensor* a = node->src[0];
    const ggml_tensor* b = node->src[1];
    switch (node->op) {
        case GGML_OP_ADD:
        case GGML_OP_SUB:
        case GGML_OP_MUL:
        case GGML_OP_DIV: {
            // binary-ops.cpp: one type throughout, or f16/bf16 with an f32 src1.
            const bool same = a->type == b->type && a->type == node->type && one_of(a->type, {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16});
            const bool mixed = one_of(a->type, {GGML_TYPE_F16, GGML_TYPE_BF16}) && b->type == GGML_TYPE_F32 &&
                               one_of(node->type, {a->type, GGML_TYPE_F32});
            if (!same && !mixed) return no_kernel(node);
            if (!packed_rows(a) || !packed_rows(node)) return "ggml's CPU binary ops need packed rows in src0";
            return "";
        }
        case GGML_OP_SCALE:
            return one_of(a->type, {GGML_TYPE_F32, GGML_TYPE_BF16}) ? "" : no_kernel(node);
        case GGML_OP_CLAMP:
            return one_of(a->type, {GGML_TYPE_F32, GGML_TYPE_F16}) ? "" : no_kernel(node);
        case GGML_OP_GLU:
            if (ggml_get_glu_op(node) == GGML_GLU_OP_SWIGLU_OAI && a->type != GGML_TYPE_F32) return no_kernel(node);
            return "";
        case GGML_OP_PAD:
        case GGML_OP_SUM_ROWS:
        case GGML_OP_MEAN:
        case GGML_OP_ARGMAX:
        case GGML_OP_ARGSORT:
        case GGML_OP_NORM:
        case GGML_OP_RMS_NORM:
        case GGML_OP_SOFT_MAX:
        case GGML_OP_DIAG_MASK_INF:
        case GGML_OP_ADD_ID:
            if (a->type != GGML_TYPE_F32) return no_kernel(node);
            if (!packed_rows(a)) return "ggml's CPU " + std::string(ggml_op_desc(node)) + " needs packed rows";
            return "";
        case GGML_OP_ROPE:
            return one_of(a->type, {GGML_TYPE_F32, GGML_TYPE_F16}) ? "" : no_kernel(node);
        case GGML_OP_CONCAT:
            return one_of(a->type, {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32}) ? "" : no_kernel(node);
        case GGML_OP_REPEAT:
            return one_of(a->type, {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32}) ? "" : no_kernel(node);
        case GGML_OP_DUP:
        case GGML_OP_CONT:
        case GGML_OP_CPY: {
            // ops.cpp dup: between f32, f16 and bf16 (i32 <-> f32), or a quantized source into f32;
            // a quantized result from f32 (quantize_row), rows packed on both sides.
            const ggml_type from = a->type;
            const ggml_type to = node->type;
            const bool floats = one_of(from, {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16}) &&
                                one_of(to, {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16});
            const bool ints = (from == GGML_TYPE_I32 && to == GGML_TYPE_F32) || (from == GGML_TYPE_F32 && to == GGML_TYPE_I32);
            if (from == to) return "";
            if (ggml_is_quantized(from)) return to == GGML_TYPE_F32 && packed_rows(node) ? "" : no_kernel(node);
            if (ggml_is_quantized(to)) return packed_rows(a) && packed_rows(node) ? "" : "ggml's CPU quantizes packed rows only";
            return floats || ints ? "" : no_kernel(node);
        }
        case GGML_OP_MUL_MAT:
            return packed_rows(b) ? "" : "ggml's CPU mul_mat needs packed rows in src1";
        case GGML_OP_MUL_MAT_ID:
            return b->type == GGML_TYPE_F32 ? "" : "ggml's CPU mul_mat_id takes f32 activations only";
        default: return "";
    }
}

}  // namespace xb::ggml_devices
