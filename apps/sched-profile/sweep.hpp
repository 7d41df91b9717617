// --sweep KEY=FIRST..LAST (or KEY=V1,V2,...): reruns sched-profile with one placement setting of
// the config changed, to see how splits, copies and time move with it. Keys: offload_layers,
// n_copies, and split.ratios (values as colon-separated lists: split.ratios=3:1,1:1,1:3).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config_spec.hpp"
#include "core/status.hpp"

namespace xb::tools {

struct Sweep {
    std::string key;                              // offload_layers, n_copies or split.ratios
    std::vector<int> values;                      // offload_layers, n_copies
    std::vector<std::vector<double>> ratio_sets;  // split.ratios

    size_t size() const { return key == "split.ratios" ? ratio_sets.size() : values.size(); }
    std::string text(size_t i) const;             // "3", or "3:1"
    nlohmann::ordered_json json(size_t i) const;  // 3, or [3, 1]
    // Sets the swept key of `spec` to value i; InvalidArgument when the config cannot take it
    // (split.ratios for a config without a split, or not one ratio per device).
    Status apply(size_t i, config::ConfigSpec& spec) const;
};

// InvalidArgument, naming the keys it knows, for anything else.
Result<Sweep> parse_sweep(const std::string& text);

}  // namespace xb::tools
