// Conformance of the mixture-of-experts ops (mul_mat_id of every weight type and its paths, add_id,
// the router's top_k feeding it) on every device against the float64 reference; the cases are in
// lib/opcheck/cases_moe.cpp.
#include "op_test_util.hpp"

namespace xbt {

XB_OP_CASES(Moe, moe_cases());

}  // namespace xbt
