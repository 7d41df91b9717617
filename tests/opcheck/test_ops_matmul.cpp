// Conformance of the matrix products (mul_mat, out_prod) on every device against the float64
// reference; the cases are in lib/opcheck/cases_matmul.cpp.
#include "op_test_util.hpp"

namespace xbt {

XB_OP_CASES(MatMul, matmul_cases());

}  // namespace xbt
