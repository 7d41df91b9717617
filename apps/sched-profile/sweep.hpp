// --sweep KEY=FIRST..LAST (or KEY=V1,V2,...): reruns sched-profile with one placement setting of
// the config changed, to see how splits, copies and time move with it.
#pragma once

#include <string>
#include <vector>

#include "config/config_spec.hpp"
#include "core/status.hpp"

namespace xb::tools {

struct Sweep {
    std::string key;  // offload_layers or n_copies
    std::vector<int> values;
};

// InvalidArgument, naming the keys it knows, for anything else.
Result<Sweep> parse_sweep(const std::string& text);

// Sets the swept key of `spec` to `value`.
void apply_sweep_value(const std::string& key, int value, config::ConfigSpec& spec);

}  // namespace xb::tools
