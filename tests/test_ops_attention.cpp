// Conformance of the attention ops (soft_max_ext, diag_mask_inf, rope, flash_attn_ext) on every
// device against the float64 reference; the cases are in lib/opcheck/cases_attention.cpp.
#include "op_test_util.hpp"

namespace xbt {

XB_OP_CASES(Attention, attention_cases());

}  // namespace xbt
