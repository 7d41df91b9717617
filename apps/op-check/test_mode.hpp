// --mode test: every selected case on every backend under test, compared with the CPU's result of
// the same case (same inputs), in guarded memory; the report and the exit code.
#pragma once

#include <string>
#include <vector>

#include "options.hpp"
#include "selection.hpp"

namespace xb::tools::opcheck {

// Exit code: kExitOk when every supported check passed, kExitCheckFailed when one failed.
int run_test_mode(const OpCheckOptions& options, const std::vector<SelectedCase>& cases,
                  const std::vector<std::string>& backends);

}  // namespace xb::tools::opcheck
