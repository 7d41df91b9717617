// A graph node computed in exact arithmetic: the op's meaning (ops.hpp) applied to its sources with
// its parameters (core/op_params.hpp). This is the F64 device's one kernel; it returns the values in
// the node's logical order and leaves storing them (and any rounding the node's own type implies,
// such as a copy into an f16 cache) to the caller.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.hpp"
#include "core/tensor.hpp"
#include "exact/ref_array.hpp"

namespace xb::exact {

struct NodeValues {
    // The node's values in its shape and logical order; or, with `rows`, only the rows written.
    RefArray values;
    // Empty: `values` is the whole node. Else row r of `values` (in logical order, dim 1 fastest)
    // goes to row rows[r] (i1, i2, i3) of the node, and the node's other rows stay as they are: what
    // set_rows writes (values is its src), without reading or rewriting the rest of the destination
    // (a cache; rewriting a quantized row would round it again).
    std::vector<std::array<int64_t, 3>> rows;
};

// Computes `node` from `srcs` (srcs[j] reads node.src[j]; nullptr where the node has no source j).
// The first operand of mul_mat, mul_mat_id and get_rows is read a row at a time; every other
// operand is read whole. Views compute nothing and are not to be evaluated (InvalidArgument). An
// index outside its range (get_rows, set_rows, an expert id) is OutOfRange, as on every device.
Result<NodeValues> evaluate_node(const Tensor& node, std::span<const RowSource* const> srcs);

}  // namespace xb::exact
