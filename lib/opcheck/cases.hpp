// The case lists. The conformance set (every op of the core set over types, shapes, broadcasting
// and non-contiguous inputs, small enough to check against the float64 reference in milliseconds)
// is split by op family; the perf set has fewer cases at sizes where kernels, not overheads, count.
#pragma once

#include <vector>

#include "opcheck/op_case.hpp"

namespace xb::opcheck {

std::vector<OpCase> elementwise_cases();  // cases_elementwise.cpp
std::vector<OpCase> layout_cases();       // cases_layout.cpp
std::vector<OpCase> reduce_cases();       // cases_reduce.cpp
std::vector<OpCase> attention_cases();    // cases_attention.cpp
std::vector<OpCase> matmul_cases();       // cases_matmul.cpp
std::vector<OpCase> quant_cases();        // cases_quant.cpp
std::vector<OpCase> moe_cases();          // cases_moe.cpp
std::vector<OpCase> recurrent_cases();    // cases_recurrent.cpp
// Twins of the cases above with NaN or an infinity in one input (cases_nonfinite.cpp).
std::vector<OpCase> nonfinite_cases();

// Every conformance case, family by family in the order above, the non-finite twins last.
std::vector<OpCase> all_cases();
// Larger shapes for timing (cases_perf.cpp).
std::vector<OpCase> perf_cases();

}  // namespace xb::opcheck
