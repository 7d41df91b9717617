// Conformance of every op family with NaN and infinities in its inputs, on every device against the
// float64 reference: non-finite exactly where the reference is (any non-finite value for inputs
// holding infinities), finite and within tolerance elsewhere. The cases are lib/opcheck/
// cases_nonfinite.cpp's twins of the other families' cases.
#include "op_test_util.hpp"

namespace xbt {

XB_OP_CASES(NonFinite, nonfinite_cases());

}  // namespace xbt
