// The tools' verdict on outputs that hold NaN or infinity. Two backends that both give NaN compare
// as equal, so a model of NaN weights "passed" backend-compare, and graph-run timed it without a
// word. --nonfinite says what such outputs do: fail (exit 1, backend-compare's default: a check
// must not pass what it cannot judge) or warn (graph-run's default: it times, it does not judge).
#pragma once

#include <string>
#include <string_view>

#include "config/model.hpp"
#include "config/model_io.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace xb::tools {

enum class NonFinitePolicy { Warn, Fail };

// Adds --nonfinite warn|fail, with `policy`'s value as the default.
void add_nonfinite_option(CLI::App& app, NonFinitePolicy& policy);

// Tells each output of `model` that holds NaN or infinity ("error: ..." under Fail, "warning: ..."
// under Warn; `where` says on which backends, e.g. "after the last compute on SIM0,CPU") and
// returns kExitCheckFailed under Fail when there is one, else kExitOk; a read error is kExitUsage.
// `values` reads the outputs (default: as the model holds them).
int judge_nonfinite(std::string_view tool, const config::Model& model, NonFinitePolicy policy, std::string_view where,
                    const config::TensorValues& values = {});

}  // namespace xb::tools
