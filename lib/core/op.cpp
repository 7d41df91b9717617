#include "core/op.hpp"

#include <array>

namespace xb {

namespace {
constexpr std::array<const char*, kOpCount> kOpNames = {
    "none",    "dup",      "add",        "sub",     "mul",       "div",       "add1",
    "scale",   "sqr",      "sqrt",       "log",     "sum",       "sum_rows",  "mean",
    "argmax",  "repeat",   "concat",     "unary",   "glu",       "clamp",     "norm",
    "rms_norm", "soft_max", "diag_mask_inf", "rope", "mul_mat",  "out_prod",  "get_rows",
    "set_rows", "cpy",     "cont",       "reshape", "view",      "permute",   "transpose",
    "pad",     "arange",   "flash_attn_ext", "mul_mat_id", "argsort", "add_id", "l2_norm",
    "ssm_conv", "ssm_scan", "gated_delta_net",
};
constexpr std::array<const char*, kUnaryOpCount> kUnaryNames = {
    "neg", "relu", "gelu", "gelu_quick", "silu", "tanh", "sigmoid", "exp", "softplus",
};
constexpr std::array<const char*, kGluOpCount> kGluNames = {"swiglu", "geglu", "swiglu_oai"};

template <typename E, size_t N>
std::optional<E> find_name(const std::array<const char*, N>& names, std::string_view name) {
    for (size_t i = 0; i < N; ++i) {
        if (name == names[i]) return static_cast<E>(i);
    }
    return std::nullopt;
}
}  // namespace

const char* op_name(Op op) { return kOpNames[static_cast<size_t>(op)]; }
const char* unary_op_name(UnaryOp op) { return kUnaryNames[static_cast<size_t>(op)]; }
const char* glu_op_name(GluOp op) { return kGluNames[static_cast<size_t>(op)]; }
std::optional<Op> op_from_name(std::string_view name) { return find_name<Op>(kOpNames, name); }
std::optional<UnaryOp> unary_op_from_name(std::string_view name) { return find_name<UnaryOp>(kUnaryNames, name); }
std::optional<GluOp> glu_op_from_name(std::string_view name) { return find_name<GluOp>(kGluNames, name); }

int op_inplace_sources(Op op) {
    switch (op) {
        case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Glu: return 2;
        default: return op_can_inplace(op) ? 1 : 0;
    }
}

bool op_can_inplace(Op op) {
    switch (op) {
        case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Add1: case Op::Scale:
        case Op::Sqr: case Op::Sqrt: case Op::Log: case Op::Unary: case Op::Clamp:
        case Op::Norm: case Op::RmsNorm: case Op::L2Norm: case Op::SoftMax: case Op::DiagMaskInf: case Op::Rope:
        case Op::AddId:
        // Beyond ggml's list: the split GLU (gate and up apart, the result their shape) reads both
        // at the position it writes, so the FFN's activation can take over the gate's memory; at a
        // 512-token prefill of a 2048-wide, 8192-FFN model that is 16 MiB off the compute buffer's
        // peak (the fused form's result is half its source's width, so same_layout rules it out).
        case Op::Glu:
            return true;
        default:
            return false;
    }
}

}  // namespace xb
