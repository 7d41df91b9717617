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
    RefArray values;  // the node's shape, logical order
    // The rows (i1, i2, i3) of the node the op writes; empty: all of them. set_rows writes the rows
    // its indices name and leaves the others as they are (rewriting a quantized row would round
    // it again).
    std::vector<std::array<int64_t, 3>> rows;
};

// Computes `node` from `srcs` (srcs[j] reads node.src[j]; nullptr where the node has no source j).
// The first operand of mul_mat, mul_mat_id and get_rows is read a row at a time; every other
// operand is read whole. Views compute nothing and are not to be evaluated (InvalidArgument). An
// index outside its range (get_rows, set_rows, an expert id) is OutOfRange, as on every device.
Result<NodeValues> evaluate_node(const Tensor& node, std::span<const RowSource* const> srcs);

}  // namespace xb::exact
