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
        const std::string split = "split " + std::to_string(s.index);
        nlohmann::ordered_json args = {{"rep", rep}, {"split", s.index}, {"backend", s.backend}, {"nodes", range},
                                       {"n_nodes", s.n_nodes}};
        if (s.copy_seconds > 0) {
            size_t bytes = 0;
            nlohmann::ordered_json copied = nlohmann::ordered_json::array();
            for (const SplitInputReport& in : s.inputs) {
                bytes += in.bytes;
                copied.push_back(in.name);
            }
            nlohmann::ordered_json copy_args = args;
            copy_args.update({{"n_inputs", s.inputs.size()}, {"bytes", bytes}, {"inputs", copied}});
            spans_.push_back({split + " copy", track, t, s.copy_seconds * 1e6, std::move(copy_args)});
            t += s.copy_seconds * 1e6;
        }
        if (s.compute_seconds > 0) {
            spans_.push_back({split + " compute", track, t, s.compute_seconds * 1e6, std::move(args)});
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
        events.push_back({{"name", s.name}, {"ph", "X"}, {"pid", 0}, {"tid", s.track}, {"ts", s.ts_us}, {"dur", s.dur_us},
                          {"args", s.args}});
    }
    std::ofstream out(path);
    if (!out) return Status(StatusCode::NotFound, "--trace: cannot write " + path);
    out << report::json_text(nlohmann::ordered_json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}) << '\n';
    return out ? Status::ok() : Status(StatusCode::Internal, "--trace: error while writing " + path);
}

}  // namespace xb::tools
