// sched-profile: how the scheduler splits a config across backends, what it copies, and what the
// copies and computes cost (each copy's achieved bandwidth beside the link's).
//
//   sched-profile -c configs/llama-decoder.json -b SIM0,CPU -P SIM0:unsupported=rope --dry-run
//   sched-profile -c configs/llama-decoder-offload.json --map CUDA0=SIM0 --sweep offload_layers=0..5
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <CLI/CLI.hpp>

#include "core/file_io.hpp"
#include "core/message_text.hpp"
#include "core/size_math.hpp"
#include "machine_load.hpp"
#include "sched/sched_dot.hpp"
#include "session.hpp"
#include "summary.hpp"
#include "sweep.hpp"

namespace xb::tools {
namespace {

constexpr const char* kTool = "sched-profile";

struct ProfileOptions {
    CommonOptions common;
    bool dry_run = false;
    bool nodes = false;
    bool inputs = false;
    int reps = 3;
    std::string dot;
    std::string dot_level = "split";
    std::string sweep;
    std::string threads_warning;  // choose_threads' warning, printed once the config has opened
};

void print_threads_warning(const ProfileOptions& opts) {
    if (!opts.threads_warning.empty()) tell(kTool, "warning: " + opts.threads_warning);
}

// A rate in GB/s, or a time given in seconds as ms; an empty cell when it is not known (-1) or
// this is a dry run.
report::Cell gbps_cell(double gbps, bool timed) { return timed && gbps >= 0 ? report::Cell(gbps) : report::Cell(); }
report::Cell ms_cell(double seconds, bool timed) { return timed && seconds >= 0 ? report::Cell(seconds * 1e3) : report::Cell(); }

report::Table split_table(const SchedReport& r, bool timed) {
    report::Table t({"split", "backend", "nodes", "n_nodes", "n_inputs", "input_bytes", "copied_bytes", "copied_from",
                     "copied", "copy_ms", "compute_ms", "modelled_copy_ms", "achieved_gbps", "link_gbps"});
    for (const SplitReport& s : r.splits) {
        size_t bytes = 0, copied = 0;
        std::string from, names;
        int n_named = 0;
        double input_seconds = 0, link = -1;  // the copies' own times; the slowest link they crossed
        for (const SplitInputReport& in : s.inputs) {
            bytes += in.bytes;
            if (!in.copied) continue;  // read in place: the split's backend can use the source's buffer
            copied += in.bytes;
            input_seconds += std::max(in.copy_seconds, 0.0);
            link = slowest_link(link, in.link_gbps);
            if (from.find(in.source_backend) == std::string::npos) from += (from.empty() ? "" : " ") + in.source_backend;
            // The copied tensors by name, a few of them: the rest counted.
            if (n_named++ < 4) names += (names.empty() ? "" : ", ") + in.name + " (" + bytes_text(static_cast<double>(in.bytes)) + ")";
        }
        if (n_named > 4) names += ", +" + std::to_string(n_named - 4) + " more";
        const double achieved = input_seconds > 0 ? static_cast<double>(copied) / input_seconds * 1e-9 : -1;
        t.add_row({static_cast<int64_t>(s.index), s.backend,
                   "[" + std::to_string(s.node_begin) + ", " + std::to_string(s.node_end) + ")",
                   static_cast<int64_t>(s.n_nodes), static_cast<int64_t>(s.inputs.size()), static_cast<int64_t>(bytes),
                   static_cast<int64_t>(copied), from, names, ms_cell(s.copy_seconds, timed), ms_cell(s.compute_seconds, timed),
                   ms_cell(s.modelled_copy_seconds, timed), gbps_cell(achieved, timed), gbps_cell(link, timed)});
    }
    return t;
}

// One row per split input: its copy's bytes, host memory, measured and modelled time and rate, and
// the link's bandwidth (what the copy reached against what the link carries).
report::Table input_table(const SchedReport& r, bool timed) {
    report::Table t({"split", "input", "from", "to", "bytes", "copied", "host_memory", "copy_ms", "achieved_gbps",
                     "link_gbps", "modelled_ms", "modelled_gbps"});
    for (const SplitReport& s : r.splits) {
        for (const SplitInputReport& in : s.inputs) {
            t.add_row({static_cast<int64_t>(s.index), in.name, in.source_backend, s.backend, static_cast<int64_t>(in.bytes),
                       in.copied, std::string(host_memory_name(in.host_memory)), ms_cell(in.copy_seconds, timed),
                       gbps_cell(in.achieved_gbps(), timed), gbps_cell(in.link_gbps, timed),
                       ms_cell(in.modelled_seconds, timed), gbps_cell(in.modelled_gbps(), timed)});
        }
    }
    return t;
}

report::Table node_table(const SchedReport& r) {
    report::Table t({"node", "name", "op", "backend", "reason", "why"});
    for (const NodeAssignment& n : r.nodes) {
        std::string why = assign_reason_text(n.reason);
        if (!n.unsupported_by.empty()) why += "; " + n.unsupported_by + " does not support " + n.op;
        t.add_row({static_cast<int64_t>(n.index), n.name, n.op, n.backend, std::string(assign_reason_code(n.reason)), why});
    }
    return t;
}

void print_summary(const ProfileSummary& p) {
    std::cerr << kTool << ": " << name_text(p.model) << " on [";
    for (size_t i = 0; i < p.backends.size(); ++i) std::cerr << (i ? ", " : "") << p.backends[i];
    std::cerr << "]: " << p.n_nodes << " nodes, " << p.n_splits << " splits, " << p.total_copies() << " copies ("
              << bytes_text(static_cast<double>(p.total_copy_bytes())) << ")\n";
    for (const auto& [name, bytes] : p.weight_bytes) {
        std::cerr << "  weights " << name << ": " << bytes_text(static_cast<double>(bytes)) << '\n';
    }
    for (const auto& [name, bytes] : p.buffer_bytes) {
        std::cerr << "  compute buffer " << name << ": " << bytes_text(static_cast<double>(bytes)) << '\n';
    }
    if (!p.expert_weight_bytes.empty()) {
        std::cerr << "  experts' weights:";
        for (const auto& [name, bytes] : p.expert_weight_bytes) std::cerr << ' ' << name << ' ' << bytes_text(static_cast<double>(bytes));
        std::cerr << "; copied per compute: " << p.expert_copies.count << " tensors, "
                  << bytes_text(static_cast<double>(p.expert_copies.bytes)) << '\n';
    }
    if (!p.host_weight_buffers.empty()) {
        std::cerr << "  host weights in:";
        for (const std::string& name : p.host_weight_buffers) std::cerr << ' ' << name;
        std::cerr << '\n';
    }
    for (const auto& [pair, c] : p.copies) {
        std::cerr << "  copied " << pair.first << " -> " << pair.second << ": " << c.count << " copies, "
                  << bytes_text(static_cast<double>(c.bytes));
        if (c.achieved_gbps() >= 0) {
            char rate[96];
            std::snprintf(rate, sizeof rate, ", %.3g GB/s achieved", c.achieved_gbps());
            std::cerr << rate;
            if (c.link_gbps > 0) {
                std::snprintf(rate, sizeof rate, " of a %.3g GB/s link (%.0f%%)", c.link_gbps, 100.0 * c.achieved_gbps() / c.link_gbps);
                std::cerr << rate;
            } else {
                std::cerr << " (link bandwidth n/a)";
            }
        }
        if (c.modelled_ms >= 0) {
            char modelled[96];
            std::snprintf(modelled, sizeof modelled, ", %.4g ms modelled (%.3g GB/s)", c.modelled_ms, c.modelled_gbps());
            std::cerr << modelled;
        }
        std::cerr << '\n';
    }
    for (const auto& [pair, c] : p.row_split) {
        std::cerr << "  copied " << pair.first << " -> " << pair.second << " (row split): " << c.count << " copies, "
                  << bytes_text(static_cast<double>(c.bytes)) << '\n';
    }
    if (const std::string hint = bound_hint(p); !hint.empty()) std::cerr << "  " << hint << '\n';
}

// Opens the config (edited by `edit`), computes it `reps` times in profiling mode unless this
// is a dry run, and writes the DOT file when asked.
Result<std::unique_ptr<Session>> profile(const ProfileOptions& opts, const SpecEdit& edit = {}) {
    XB_ASSIGN_OR_RETURN(auto session, open_session(opts.common, {.profile = !opts.dry_run, .allocate = true, .edit = edit}));
    if (!opts.dry_run) {
        for (int i = 0; i < opts.reps; ++i) XB_RETURN_IF_ERROR(session->sched->graph_compute(session->model.graph));
    }
    if (!opts.dot.empty()) {
        XB_ASSIGN_OR_RETURN(std::ofstream out, open_for_writing(opts.dot, "DOT file (--dot)"));
        write_dot(session->model.graph, *session->sched, out, dot_level_from_name(opts.dot_level).value_or(DotLevel::Split));
        if (!out.flush()) return write_error(opts.dot, "DOT file (--dot)");
    }
    return session;
}

int run_once(const ProfileOptions& opts) {
    auto session = profile(opts);
    if (!session.is_ok()) return fail(kTool, session.status());
    print_threads_warning(opts);
    Session& s = **session;
    const SchedReport& r = s.sched->report();
    const bool timed = !opts.dry_run;
    const report::Table table = opts.nodes ? node_table(r) : opts.inputs ? input_table(r, timed) : split_table(r, timed);
    const ProfileSummary summary = summarize(s, timed);
    nlohmann::ordered_json document = to_json(summary);
    document["config"] = opts.common.config;
    if (opts.nodes) {
        document["nodes"] = report::to_json(table);
    } else {
        document["splits"] = report::to_json(split_table(r, timed));
        document["inputs"] = report::to_json(input_table(r, timed));
    }
    if (Status st = write_report(table, document, opts.common); !st.is_ok()) return fail(kTool, st);
    print_summary(summary);
    return kExitOk;
}

report::Cell optional_cell(const std::optional<double>& v) { return v ? report::Cell(*v) : report::Cell(); }

int run_sweep(const ProfileOptions& opts) {
    auto sweep = parse_sweep(opts.sweep);
    if (!sweep.is_ok()) return fail(kTool, sweep.status());
    // The swept setting is named apart from the results: "copies" counts the copies made (the JSON's
    // n_copies), which sweeping placement.n_copies (the pipeline's copy slots) would confuse.
    report::Table table({sweep->key + " (swept)", "n_splits", "copies", "copy_bytes", "copy_ms", "modelled_copy_ms",
                         "compute_ms", "hint"});
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    for (size_t i = 0; i < sweep->size(); ++i) {
        const std::string value = sweep->key + "=" + sweep->text(i);
        Status edited;
        auto session = profile(opts, [&](config::ConfigSpec& spec) { edited = sweep->apply(i, spec); });
        if (!edited.is_ok()) return fail(kTool, edited);
        if (!session.is_ok()) return fail(kTool, Status(session.status().code(), value + ": " + session.status().message()));
        if (i == 0) print_threads_warning(opts);
        // Past every layer and the output there is nothing more to offload: such values would
        // repeat the last one (a range written for a bigger model, say).
        const int n_layers = (*session)->model.n_layers;
        if (sweep->key == "offload_layers" && n_layers > 0 && sweep->values.back() > n_layers + 1) {
            return fail(kTool, Status(StatusCode::InvalidArgument,
                                      "--sweep " + opts.sweep + ": the model has " + std::to_string(n_layers) +
                                          " layers, so offload_layers above " + std::to_string(n_layers + 1) +
                                          " (every layer and the output) changes nothing; sweep 0.." +
                                          std::to_string(n_layers + 1)));
        }
        const ProfileSummary p = summarize(**session, !opts.dry_run);
        const report::Cell swept = sweep->key == "split.ratios" ? report::Cell(sweep->text(i)) : report::Cell(int64_t{sweep->values[i]});
        table.add_row({swept, static_cast<int64_t>(p.n_splits), static_cast<int64_t>(p.total_copies()),
                       static_cast<int64_t>(p.total_copy_bytes()), optional_cell(p.copy_ms), optional_cell(p.modelled_copy_ms),
                       optional_cell(p.compute_ms), bound_hint(p)});
        nlohmann::ordered_json entry = to_json(p);
        entry["value"] = sweep->json(i);  // the swept value, whatever the key (n_copies is also a report field)
        results.push_back(std::move(entry));
    }
    const nlohmann::ordered_json document = {{"config", opts.common.config}, {"sweep", sweep->key}, {"results", results}};
    const Status st = write_report(table, document, opts.common);
    return st.is_ok() ? kExitOk : fail(kTool, st);
}

int run(ProfileOptions opts) {
    if (!opts.dry_run) {  // it times: the threads as graph-run chooses them
        const ThreadChoice threads = choose_threads(opts.common.threads);
        opts.common.threads = threads.threads;
        opts.threads_warning = threads.warning;
    }
    return opts.sweep.empty() ? run_once(opts) : run_sweep(opts);
}

}  // namespace
}  // namespace xb::tools

int main(int argc, char** argv) {
    using namespace xb::tools;
    CLI::App app{"sched-profile: how the scheduler splits a config across backends: per split its backend, node range,\n"
                 "inputs and bytes copied, copy and compute time (and the simulator's modelled copy time), compute\n"
                 "buffer sizes, and per node the backend and the reason it was chosen.", "sched-profile"};
    ProfileOptions opts;
    opts.common.config = "configs/default.json";
    opts.common.default_outputs = 1;  // as graph-run: the graph llama-bench times
    add_common_options(app, opts.common);
    add_outputs_option(app, opts.common);
    app.add_flag("--dry-run", opts.dry_run, "Split and allocate only: no compute, no timings");
    app.add_flag("--nodes", opts.nodes, "Report every node's backend and the reason instead of the splits");
    app.add_flag("--inputs", opts.inputs,
                 "Report every split input instead of the splits: bytes, host memory (pinned or pageable), copy time\n"
                 "and achieved GB/s beside the link's (and the simulator's modelled time and rate)")
        ->excludes("--nodes");
    app.add_option("-r,--reps", opts.reps, "Profiled computes (the last one is reported)")
        ->check(at_least(1))
        ->capture_default_str();
    app.add_option("--dot", opts.dot, "Write the graph as Graphviz DOT, coloured by backend (render: dot -Tsvg FILE)");
    app.add_option("--dot-level", opts.dot_level,
                   "split: a box per split with its nodes, layers and weights, edges with the bytes crossing\n"
                   "(readable at any depth); layer: a box per layer of each split; node: every node")
        ->check(CLI::IsMember({"split", "layer", "node"}))
        ->capture_default_str();
    app.add_option("--sweep", opts.sweep,
                   "KEY=FIRST..LAST or KEY=V1,V2,...: rerun over a placement setting (offload_layers, n_copies, or\n"
                   "split.ratios=3:1,1:1 for a config with a split) and report splits, copies and time per value");
    app.footer("Examples:\n"
               "  sched-profile -c configs/llama-decoder.json -b SIM0,CPU -P SIM0:unsupported=rope --dot g.dot\n"
               "  sched-profile -c configs/llama-decoder-offload.json --map CUDA0=SIM0 --sweep offload_layers=0..5\n"
               "  sched-profile -c configs/llama-decoder-split.json --map CUDA0=SIM0 --map CUDA1=SIM1 --sweep split.ratios=3:1,1:1,1:3\n"
               "With --format json the report is one object: n_nodes, n_splits, n_copies and copy_bytes (every copy of a\n"
               "compute, a row split's included), copies_by_pair (copies, bytes, copy_ms, achieved_gbps, link_gbps,\n"
               "modelled_ms, modelled_gbps), row_split_copies_by_pair (copies, bytes), buffer_bytes, weight_bytes,\n"
               "host_weight_buffers, copy/compute/modelled_copy_ms, hint (\"bound by copies\" when copies take most of the\n"
               "time), and splits and inputs (or nodes with --nodes). link_gbps: the simulator's modelled link, or a GPU's\n"
               "pinned host-to-device bandwidth measured once in the run; null (blank in tables) when unknown.\n"
               "Exit codes: 0 success, 2 usage, config or device error.");
    return run_tool(app, argc, argv, opts.common, [&] { return run(opts); });
}
