// Conformance of the copy and layout ops (dup, cont, cpy, cast, views feeding computing ops, repeat,
// concat, pad, arange, get_rows, set_rows) on every device against the float64 reference; the
// cases are in lib/opcheck/cases_layout.cpp.
#include "op_test_util.hpp"

namespace xbt {

XB_OP_CASES(Layout, layout_cases());

}  // namespace xbt
