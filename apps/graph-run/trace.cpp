#include "trace.hpp"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "report/table.hpp"

namespace xb::tools {

double TraceWriter::add_compute(const SchedReport& report, int rep, double start_us) {
    double t = start_us;
    for (const SplitReport& s : report.splits) {
        const auto it = std::find(backends_.begin(), backends_.end(), s.backend);
        const int track = static_cast<int>(it - backends_.begin());
        const std::string range = "[" + std::to_string(s.node_begin) + ", " + std::to_string(s.node_end) + ")";
        if (s.copy_seconds > 0) {
            spans_.push_back({"rep " + std::to_string(rep) + " split " + std::to_string(s.index) + " copy " +
                                  std::to_string(s.inputs.size()) + " inputs",
                              track, t, s.copy_seconds * 1e6});
            t += s.copy_seconds * 1e6;
        }
        if (s.compute_seconds > 0) {
            spans_.push_back({"rep " + std::to_string(rep) + " split " + std::to_string(s.index) + " nodes " + range, track, t,
                              s.compute_seconds * 1e6});
            t += s.compute_seconds * 1e6;
        }
    }
    return t;
}

Status TraceWriter::write(const std::string& path) const {
    nlohmann::ordered_json events = nlohmann::ordered_json::array();
    for (size_t i = 0; i < backends_.size(); ++i) {
        events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", i}, {"args", {{"name", backends_[i]}}}});
    }
    for (const Span& s : spans_) {
        events.push_back({{"name", s.name}, {"ph", "X"}, {"pid", 0}, {"tid", s.track}, {"ts", s.ts_us}, {"dur", s.dur_us}});
    }
    std::ofstream out(path);
    if (!out) return Status(StatusCode::NotFound, "--trace: cannot write " + path);
    out << report::json_text(nlohmann::ordered_json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}) << '\n';
    return out ? Status::ok() : Status(StatusCode::Internal, "--trace: error while writing " + path);
}

}  // namespace xb::tools
