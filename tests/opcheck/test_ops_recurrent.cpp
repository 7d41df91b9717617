// Conformance of the recurrent layers' ops (ssm_conv, ssm_scan, gated_delta_net) on every device
// against the float64 reference; the cases are in lib/opcheck/cases_recurrent.cpp.
#include "op_test_util.hpp"

namespace xbt {

XB_OP_CASES(Recurrent, recurrent_cases());

}  // namespace xbt
