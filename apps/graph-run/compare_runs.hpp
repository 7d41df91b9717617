// graph-run --compare BASE.json NEW.json: two saved reports side by side, like llama.cpp's
// compare-llama-bench. Runs are paired by (config, backends, threads), or the two runs paired
// as they are when each file holds one; for every number a pair both hold (time_ms.median,
// tokens_per_s, n_splits, copy_bytes, buffer_bytes.CPU, ...) the base value, the new one and
// new / base, and a note for each way the runs differ (commit, CPU, kernels, threads, backends,
// config) or a run without a partner.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.hpp"
#include "report/table.hpp"

namespace xb::tools {

struct RunComparison {
    report::Table table{{"run", "metric", "base", "new", "new/base"}};
    nlohmann::ordered_json json;     // {base, new, differences, metrics[{run, metric, base, new, ratio}]}
    std::vector<std::string> notes;  // "commit: 1a2b3c -> 4d5e6f", "only in base: ...", ...
};

// InvalidArgument (one line, naming the file) when a file cannot be read or is not a graph-run
// report. Reports from before graph-run wrote a list of runs (one run at the top level) are read too.
Result<RunComparison> compare_runs(const std::string& base_path, const std::string& new_path);

}  // namespace xb::tools
