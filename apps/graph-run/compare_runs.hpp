// graph-run --compare BASE.json NEW.json: two saved reports side by side, like llama.cpp's
// compare-llama-bench: for every number both hold (time_ms.median, tokens_per_s, n_splits,
// copy_bytes, buffer_bytes.CPU, ...) the base value, the new one and new / base, and a note for
// each way the runs differ (commit, CPU, kernels, threads, backends, config).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.hpp"
#include "report/table.hpp"

namespace xb::tools {

struct RunComparison {
    report::Table table{{"metric", "base", "new", "new/base"}};
    nlohmann::ordered_json json;     // {base, new, metrics[{metric, base, new, ratio}]}
    std::vector<std::string> notes;  // "commit: 1a2b3c -> 4d5e6f", ...
};

// InvalidArgument (one line, naming the file) when a file cannot be read or is not a graph-run report.
Result<RunComparison> compare_runs(const std::string& base_path, const std::string& new_path);

}  // namespace xb::tools
