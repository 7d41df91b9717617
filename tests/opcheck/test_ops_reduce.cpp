// Conformance of the reductions (sum, sum_rows, mean, argmax, norm, rms_norm) on every device
// against the float64 reference; the cases are in lib/opcheck/cases_reduce.cpp.
#include "op_test_util.hpp"

namespace xbt {

XB_OP_CASES(Reduce, reduce_cases());

}  // namespace xbt
