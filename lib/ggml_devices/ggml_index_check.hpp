// Indices checked before ggml reads them. ggml's kernels assert on an index out of range (get_rows,
// set_rows, mul_mat_id, add_id), which aborts the process; xbackend reports it as an error naming
// the node. The indices are read where they are (any ggml buffer) right before the node computes,
// so a graph whose indices are themselves computed (argsort -> mul_mat_id) is computed in pieces
// that end at each such node.
#pragma once

#include "core/status.hpp"

struct ggml_tensor;

namespace xb::ggml_devices {

// The node reads indices (get_rows, set_rows, mul_mat_id, add_id).
bool reads_indices(const ggml_tensor* node);

// InvalidArgument naming the node and the first index outside the range the node addresses.
Status check_indices(const ggml_tensor* node);

}  // namespace xb::ggml_devices
