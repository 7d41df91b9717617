#include "nonfinite.hpp"

#include <CLI/CLI.hpp>

#include "cli.hpp"
#include "core/message_text.hpp"

namespace xb::tools {

void add_nonfinite_option(CLI::App& app, NonFinitePolicy& policy) {
    const bool fails = policy == NonFinitePolicy::Fail;
    app.add_option_function<std::string>(
           "--nonfinite",
           [&policy](const std::string& v) { policy = v == "fail" ? NonFinitePolicy::Fail : NonFinitePolicy::Warn; },
           std::string("What outputs holding NaN or infinity do: fail (exit 1) or warn (default ") + (fails ? "fail" : "warn") +
               ")")
        ->check(CLI::IsMember({"fail", "warn"}));
}

int judge_nonfinite(std::string_view tool, const config::Model& model, NonFinitePolicy policy, std::string_view where,
                    const config::TensorValues& values) {
    Result<std::vector<config::NonFiniteOutput>> found = config::nonfinite_outputs(model, values);
    if (!found.is_ok()) return fail(std::string(tool).c_str(), found.status());
    const bool fails = policy == NonFinitePolicy::Fail;
    for (const config::NonFiniteOutput& o : *found) {
        tell(tool, std::string(fails ? "error: " : "warning: ") + "output " + quoted_name(o.tensor->display_name()) + " holds " +
                       std::to_string(o.nan) + " NaN and " + std::to_string(o.inf) + " infinite values (of " +
                       std::to_string(o.count) + ") " + std::string(where) +
                       (fails ? " (--nonfinite warn accepts them)" : " (--nonfinite fail makes this an error)"));
    }
    return fails && !found->empty() ? kExitCheckFailed : kExitOk;
}

}  // namespace xb::tools
