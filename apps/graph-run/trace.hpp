// Chrome Trace Event output (viewable in Perfetto or chrome://tracing) of profiled computes: one
// track per backend, each split's input copies and compute as spans. Span names carry no
// repetition number ("split 3 compute"), so that Perfetto groups the same span across computes;
// the repetition, node range, inputs and bytes are the span's args.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.hpp"
#include "sched/sched_report.hpp"

namespace xb::tools {

class TraceWriter {
public:
    explicit TraceWriter(std::vector<std::string> backends) : backends_(std::move(backends)) {}
    // Appends one compute's splits, laid end to end from `start_us`; returns the end time.
    double add_compute(const SchedReport& report, int rep, double start_us);
    Status write(const std::string& path) const;

private:
    struct Span {
        std::string name;
        int track;
        double ts_us;
        double dur_us;
        nlohmann::ordered_json args;
    };
    std::vector<std::string> backends_;
    std::vector<Span> spans_;
};

}  // namespace xb::tools
