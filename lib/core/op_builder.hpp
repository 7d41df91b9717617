// Internal helpers of the op builders (ops_*.cpp): argument checks that record a sticky error on
// the context, and creation of result nodes.
#pragma once

#include <initializer_list>
#include <string>

#include "core/context.hpp"
#include "core/tensor.hpp"

namespace xb::detail {

// "add: a [3, 4, 1, 1] f32 and b [5, 1, 1, 1] f32: <why>" as an InvalidArgument status.
Status op_error(const char* op, const std::string& why);
std::string describe(const char* role, const Tensor& t);

// True when every tensor is non-null; otherwise records an error naming the op.
bool check_not_null(Context& ctx, const char* op, std::initializer_list<const Tensor*> srcs);
bool check_float(Context& ctx, const char* op, const char* role, const Tensor& t);
// A float type, or a quantized type whose rows are consecutive blocks (nb[0] the block's bytes): what
// the ops that take quantized tensors (mul_mat's a, get_rows' a, copies) accept.
bool check_float_or_quantized(Context& ctx, const char* op, const char* role, const Tensor& t);

// A new contiguous node of `type` and shape `ne` computing `op` over `srcs`.
Tensor* make_node(Context& ctx, Op op, DType type, const std::array<int64_t, kMaxDims>& ne,
                  std::initializer_list<Tensor*> srcs);

}  // namespace xb::detail
