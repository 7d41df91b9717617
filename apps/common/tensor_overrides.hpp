// --override-tensor REGEX=DEVICE (llama.cpp's -ot): weights whose names the regular expression finds
// go to DEVICE, ahead of the config's own placement rules ("exps=CPU" keeps a mixture of experts'
// stacked experts on the host while the layers are offloaded, as llama-bench -ngl 99 -ot exps=CPU).
#pragma once

#include <string>
#include <vector>

#include "config/config_spec.hpp"
#include "core/status.hpp"

namespace xb::tools {

// The rules of the option's values, each "REGEX=DEVICE" (split at the last '='); InvalidArgument
// naming the value when one has no '=', an empty side, or a pattern that is not a regex.
Result<std::vector<config::DeviceRule>> parse_tensor_overrides(const std::vector<std::string>& values);

// Puts `rules` before the spec's weight rules (the first match wins).
void apply_tensor_overrides(const std::vector<config::DeviceRule>& rules, config::ConfigSpec& spec);

}  // namespace xb::tools
