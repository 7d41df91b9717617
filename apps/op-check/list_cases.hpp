// --list-cases: the selected cases as a table, or in JSON with each case's output node described
// (op, sub-op, type, shape, parameter words, and every source's type, shape and byte strides), so
// that a script can rebuild the same node in another library (scripts/ggml-side-by-side builds
// ggml's test-backend-ops test file from it).
#pragma once

#include <vector>

#include "options.hpp"
#include "selection.hpp"

namespace xb::tools::opcheck {

int list_cases(const OpCheckOptions& options, const std::vector<SelectedCase>& cases);

}  // namespace xb::tools::opcheck
