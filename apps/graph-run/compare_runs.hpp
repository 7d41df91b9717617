// graph-run --compare BASE.json NEW.json: two saved reports side by side, like llama.cpp's
// compare-llama-bench. Runs are paired by (config, test, backends, threads), or the two runs
// paired as they are when each file holds one. The table has a row per pair: tokens/s and the
// median time of both and new / base; the JSON has every number a pair both hold (time_ms.*,
// tokens_per_s, n_splits, copy_bytes, buffer_bytes.CPU, ...). Notes say how the runs differ
// (commit, CPU, kernels, threads, backends, config) and which runs have no partner.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.hpp"
#include "report/table.hpp"

namespace xb::tools {

struct RunComparison {
    report::Table table{{"run", "base_tokens_per_s", "new_tokens_per_s", "new/base", "base_median_ms", "new_median_ms"}};
    nlohmann::ordered_json json;           // {base, new, differences, unpaired, metrics[{run, metric, base, new, ratio}]}
    std::vector<std::string> differences;  // "commit: 1a2b3c -> 4d5e6f"
    std::vector<std::string> unpaired;     // "base: configs/a.json pp8 CPU t2"
};

// InvalidArgument (one line, naming the file) when a file cannot be read or is not a graph-run
// report. Reports from before graph-run wrote a list of runs (one run at the top level) are read too.
Result<RunComparison> compare_runs(const std::string& base_path, const std::string& new_path);

}  // namespace xb::tools
