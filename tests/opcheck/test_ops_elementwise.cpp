// Conformance of the element-wise ops (binary ops with broadcasting, add1, scale, sqr, sqrt, log,
// clamp, the unary activations, the gated linear units) on every device against the float64
// reference; the cases are in lib/opcheck/cases_elementwise.cpp.
#include "op_test_util.hpp"

namespace xbt {

XB_OP_CASES(Elementwise, elementwise_cases());

}  // namespace xbt
