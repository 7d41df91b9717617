// --mode support: per op and type, which backends support it (Device::supports_op on every node of
// the cases of that op and type). Asks the devices only: nothing is allocated or computed, so the
// sim's unsupported=... setting and a real device's limits show the same way.
#pragma once

#include <string>
#include <vector>

#include "options.hpp"
#include "selection.hpp"

namespace xb::tools::opcheck {

int run_support_mode(const OpCheckOptions& options, const std::vector<SelectedCase>& cases,
                     const std::vector<std::string>& backends);

}  // namespace xb::tools::opcheck
