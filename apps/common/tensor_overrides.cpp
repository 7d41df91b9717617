#include "tensor_overrides.hpp"

#include "core/message_text.hpp"

namespace xb::tools {

Result<std::vector<config::DeviceRule>> parse_tensor_overrides(const std::vector<std::string>& values) {
    std::vector<config::DeviceRule> rules;
    for (const std::string& value : values) {
        const size_t eq = value.rfind('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == value.size()) {
            return Status(StatusCode::InvalidArgument,
                          "--override-tensor " + quoted_name(value) + ": give REGEX=DEVICE, e.g. exps=CPU");
        }
        config::DeviceRule rule;
        rule.pattern = value.substr(0, eq);
        rule.regex = true;
        rule.device = value.substr(eq + 1);
        rule.path = "--override-tensor " + value;
        if (const auto problem = config::DeviceRule::regex_problem(rule.pattern)) {
            return Status(StatusCode::InvalidArgument, "--override-tensor " + quoted_name(value) + ": " +
                                                           quoted_name(rule.pattern) + " is not a regular expression: " + *problem);
        }
        rules.push_back(std::move(rule));
    }
    return rules;
}

void apply_tensor_overrides(const std::vector<config::DeviceRule>& rules, config::ConfigSpec& spec) {
    spec.placement.weights.insert(spec.placement.weights.begin(), rules.begin(), rules.end());
}

}  // namespace xb::tools
