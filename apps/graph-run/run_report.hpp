// graph-run's report, as llama-bench prints one: a row per run (config, backends, threads) in
// every format; the JSON keeps every statistic, and jsonl writes one run per line with the
// metadata in each, so that lines from many invocations can be concatenated.
#pragma once

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "machine_load.hpp"
#include "node_profile.hpp"
#include "report/timing.hpp"
#include "session.hpp"
#include "token_tests.hpp"

namespace xb::tools {

struct RunRecord {
    CommonOptions options;              // this run's config, backends and threads
    nlohmann::ordered_json row;         // run_row()
    std::optional<NodeProfile> profile;  // with --profile
};

// One run's figures (`run` with its threads chosen): config, model, backends, threads, nodes, splits, reps,
// time_ms statistics, tokens/s, GFLOP/s, buffer and copy bytes, and the other tasks running.
// `test` names the tokens computed as llama-bench does (test, n_prompt, n_gen, n_depth); time_ms is
// per timed repetition, which computes test.n_gen tokens one after another for a generation test,
// else the model's batch once.
nlohmann::ordered_json run_row(Session& s, const report::TimingStats& t, const CommonOptions& run, const TestLabel& test,
                               const MachineLoad& load);

// Writes the runs in the chosen format (table and md add each profile's per-op and slowest-node
// tables; json and jsonl carry every node).
Status write_runs(const std::vector<RunRecord>& runs, const CommonOptions& options);

}  // namespace xb::tools
