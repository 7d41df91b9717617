#include "trace.hpp"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/file_io.hpp"
#include "report/table.hpp"

namespace xb::tools {

void TraceWriter::add_compute(const SchedReport& report, int rep) {
    for (const SplitReport& s : report.splits) {
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
            add_span(split + " copy", s.backend, s.copy_seconds * 1e6, std::move(copy_args));
        }
        if (s.compute_seconds > 0) add_span(split + " compute", s.backend, s.compute_seconds * 1e6, std::move(args));
    }
    now_us_ += kGapUs;
}

void TraceWriter::add_nodes(const NodeProfile& profile) {
    for (const NodeTime& n : profile.nodes) {
        add_span(n.name, n.backend, n.us,
                 {{"node", n.index}, {"op", n.op}, {"shape", n.shape}, {"type", n.type}, {"backend", n.backend},
                  {"bytes", n.bytes}, {"median_of", profile.reps}});
    }
    now_us_ += kGapUs;
}

void TraceWriter::add_span(std::string name, const std::string& backend, double dur_us, nlohmann::ordered_json args) {
    if (!run_.empty()) args["run"] = run_;
    spans_.push_back({std::move(name), track_of(backend), now_us_, dur_us, std::move(args)});
    now_us_ += dur_us;
}

int TraceWriter::track_of(const std::string& backend) {
    const auto it = std::find(backends_.begin(), backends_.end(), backend);
    if (it != backends_.end()) return static_cast<int>(it - backends_.begin());
    backends_.push_back(backend);
    return static_cast<int>(backends_.size()) - 1;
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
    XB_ASSIGN_OR_RETURN(std::ofstream out, open_for_writing(path, "trace (--trace)"));
    out << report::json_text(nlohmann::ordered_json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}) << '\n';
    return out.flush() ? Status::ok() : write_error(path, "trace (--trace)");
}

}  // namespace xb::tools
