#include "core/op_builder.hpp"

namespace xb::detail {

Status op_error(const char* op, const std::string& why) {
    return Status(StatusCode::InvalidArgument, std::string(op) + ": " + why);
}

std::string describe(const char* role, const Tensor& t) {
    std::string s = std::string(role) + " " + t.shape_string();
    if (!t.name.empty()) s += " ('" + t.name + "')";
    return s;
}

bool check_not_null(Context& ctx, const char* op, std::initializer_list<const Tensor*> srcs) {
    int i = 0;
    for (const Tensor* t : srcs) {
        if (t == nullptr) {
            ctx.fail(op_error(op, "argument " + std::to_string(i) + " is null"));
            return false;
        }
        ++i;
    }
    return true;
}

bool check_float(Context& ctx, const char* op, const char* role, const Tensor& t) {
    if (is_float_type(t.type)) return true;
    const std::string hint = is_quantized(t.type) ? " (quantized tensors go to mul_mat, get_rows and copies; cast first)" : "";
    ctx.fail(op_error(op, describe(role, t) + " must have a float type (f32, f16, bf16)" + hint));
    return false;
}

bool check_float_or_quantized(Context& ctx, const char* op, const char* role, const Tensor& t) {
    if (is_float_type(t.type)) return true;
    if (!is_quantized(t.type)) {
        ctx.fail(op_error(op, describe(role, t) + " must have a float or quantized type"));
        return false;
    }
    if (t.nb[0] != type_size(t.type)) {
        ctx.fail(op_error(op, describe(role, t) + " must have rows of consecutive blocks (nb[0] = " +
                                  std::to_string(type_size(t.type)) + " bytes)"));
        return false;
    }
    return true;
}

Tensor* make_node(Context& ctx, Op op, DType type, const std::array<int64_t, kMaxDims>& ne,
                  std::initializer_list<Tensor*> srcs) {
    Tensor* t = ctx.new_tensor(type, std::span<const int64_t>(ne.data(), ne.size()));
    t->op = op;
    int i = 0;
    for (Tensor* s : srcs) t->src[i++] = s;
    return t;
}

}  // namespace xb::detail
