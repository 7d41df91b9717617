// The figures sched-profile reports for one scheduled config: splits, copies per backend pair,
// compute buffers, time totals, and a hint when copies dominate (like trtexec's "bound by H2D").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "report/table.hpp"
#include "session.hpp"

namespace xb::tools {

struct PairCopies {
    int count = 0;     // split inputs copied from the first backend to the second
    size_t bytes = 0;
    double modelled_ms = -1;  // the simulated links' model of those copies (-1: not modelled)
};

struct ProfileSummary {
    std::string model;
    std::vector<std::string> backends;
    int n_nodes = 0;
    int n_splits = 0;
    std::map<std::pair<std::string, std::string>, PairCopies> copies;  // (from, to)
    std::map<std::string, size_t> buffer_bytes;  // compute buffers
    std::map<std::string, size_t> weight_bytes;  // the weights placed on each device (a row split's by slice)
    // Sums over the splits of the last profiled compute; absent on a dry run.
    std::optional<double> copy_ms, compute_ms, modelled_copy_ms;

    int total_copies() const;
    size_t total_copy_bytes() const;
};

ProfileSummary summarize(const Session& session, bool timed);

// "bound by copies: ..." when copies (measured, or modelled for a simulated link) take more than
// half of the profiled time; empty otherwise or on a dry run.
std::string bound_hint(const ProfileSummary& summary);

nlohmann::ordered_json to_json(const ProfileSummary& summary);

}  // namespace xb::tools
