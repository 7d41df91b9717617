// Conformance of the quantized types' ops (mul_mat with quantized weights, get_rows of quantized
// rows, copies into and out of block formats) on every device against the float64 reference; the
// cases are in lib/opcheck/cases_quant.cpp.
#include "op_test_util.hpp"

namespace xbt {

XB_OP_CASES(Quant, quant_cases());

}  // namespace xbt
