// Which cases and which backends a run of op-check covers: --op and -p over the case set of the
// mode, -b over the registry's devices.
#pragma once

#include <string>
#include <vector>

#include "core/status.hpp"
#include "opcheck/op_case.hpp"
#include "options.hpp"

namespace xb::tools::opcheck {

// A case with what its graph says about it.
struct SelectedCase {
    const xb::opcheck::OpCase* source;
    std::string op;    // the output node's op label: "add", "unary(silu)", "mul_mat"
    std::string type;  // its sources' types, "f16,f32" for an f16 weight times f32 activations
};

// The cases of `set` whose op matches one of --op (by op name, sub-op name or label) and whose name
// matches -p (name_pattern.hpp). InvalidArgument for an unknown op name, a bad pattern, or a
// selection that is empty.
Result<std::vector<SelectedCase>> select_cases(const std::vector<xb::opcheck::OpCase>& set,
                                               const OpCheckOptions& options);

// -b when given (each must be a registered device), else every device but the CPU; support mode
// lists every device, the CPU too, by default.
Result<std::vector<std::string>> pick_backends(const OpCheckOptions& options);

}  // namespace xb::tools::opcheck
