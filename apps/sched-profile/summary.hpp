// The figures sched-profile reports for one scheduled config: splits, copies per backend pair,
// compute buffers, time totals, and a hint when copies dominate (like trtexec's "bound by H2D").
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "backend/row_split_buffer.hpp"
#include "report/table.hpp"
#include "session.hpp"

namespace xb::tools {

struct PairCopies {
    int count = 0;     // split inputs copied from the first backend to the second
    size_t bytes = 0;
    double modelled_ms = -1;  // the simulated links' model of those copies (-1: not modelled)
    double copy_ms = -1;      // the copies measured one by one, summed (-1: not timed)
    double link_gbps = -1;    // the link's bandwidth at best (the slowest of the copies'; -1: unknown)

    // GB/s of the bytes over the measured or the modelled time; -1 when not timed or modelled.
    double achieved_gbps() const { return copy_ms > 0 ? static_cast<double>(bytes) / copy_ms * 1e-6 : -1; }
    double modelled_gbps() const { return modelled_ms > 0 ? static_cast<double>(bytes) / modelled_ms * 1e-6 : -1; }
};

struct ProfileSummary {
    std::string model;
    std::vector<std::string> backends;
    int n_nodes = 0;
    int n_splits = 0;
    std::map<std::pair<std::string, std::string>, PairCopies> copies;  // (from, to)
    // A row split's copies inside the main device's backend (activations out to each slice's
    // device, rows back), per compute: counted in the totals too.
    std::map<std::pair<std::string, std::string>, RowSplitCopies> row_split;
    std::map<std::string, size_t> buffer_bytes;  // compute buffers
    std::map<std::string, size_t> weight_bytes;  // the weights placed on each device (a row split's by slice)
    // The buffer types holding the weights of CPU-type devices ("SIM0_Host" when pinned, "CPU").
    std::vector<std::string> host_weight_buffers;
    // Mixture-of-experts models (weights named *_exps*, llama.cpp's names): the experts' weights
    // on each device, and those copied per compute (a device computing experts whose weights live
    // elsewhere, e.g. through op offload: what an expert-offload rule such as -ot exps=CPU avoids).
    std::map<std::string, size_t> expert_weight_bytes;
    PairCopies expert_copies;
    // Sums over the splits of the last profiled compute; absent on a dry run.
    std::optional<double> copy_ms, compute_ms, modelled_copy_ms;

    // Every copy of a compute: the scheduler's split inputs and a row split's.
    int total_copies() const;
    size_t total_copy_bytes() const;
};

ProfileSummary summarize(const Session& session, bool timed);

// The slower of two link bandwidths, either of which may be unknown (-1).
inline double slowest_link(double a, double b) { return a > 0 && b > 0 ? std::min(a, b) : std::max(a, b); }

// "bound by copies: ..." when copies (measured, or modelled for a simulated link) take more than
// half of the profiled time; empty otherwise or on a dry run.
std::string bound_hint(const ProfileSummary& summary);

nlohmann::ordered_json to_json(const ProfileSummary& summary);

}  // namespace xb::tools
