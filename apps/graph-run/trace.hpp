// Chrome Trace Event output (viewable in Perfetto or chrome://tracing) of profiled computes: one
// track per backend, each split's input copies and compute as spans (and with --profile each
// node, named as in every other report, with its op and shape as args). Span names carry no
// repetition number ("split 3 compute"), so that Perfetto groups the same span across computes;
// the repetition, node range, inputs and bytes are the span's args.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.hpp"
#include "node_profile.hpp"
#include "sched/sched_report.hpp"

namespace xb::tools {

class TraceWriter {
public:
    // Spans from now on carry `label` as their "run" arg (graph-run's runs of a list).
    void begin_run(std::string label) { run_ = std::move(label); }
    // Appends one compute's splits, laid end to end after what the trace holds.
    void add_compute(const SchedReport& report, int rep);
    // Appends a node profile's nodes (their median times, end to end) on their backends' tracks.
    void add_nodes(const NodeProfile& profile);
    Status write(const std::string& path) const;

private:
    struct Span {
        std::string name;
        int track;
        double ts_us;
        double dur_us;
        nlohmann::ordered_json args;
    };
    static constexpr double kGapUs = 50;  // between computes, so that they read apart

    int track_of(const std::string& backend);  // one track per backend, in order of appearance
    void add_span(std::string name, const std::string& backend, double dur_us, nlohmann::ordered_json args);

    std::vector<std::string> backends_;
    std::vector<Span> spans_;
    std::string run_;
    double now_us_ = 0;  // the end of the last span
};

}  // namespace xb::tools
