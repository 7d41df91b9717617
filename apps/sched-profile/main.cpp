// sched-profile: how the scheduler splits a config across backends, what it copies, and what the
// copies and computes cost.
//
//   sched-profile -c configs/llama-decoder.json -b SIM0,CPU -P SIM0:unsupported=rope --dry-run
//   sched-profile -c configs/llama-decoder-offload.json --map CUDA0=SIM0 --sweep offload_layers=0..5
#include <fstream>
#include <iostream>

#include "core/file_io.hpp"
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
    int reps = 3;
    std::string dot;
    std::string sweep;
    std::string threads_warning;  // choose_threads' warning, printed once the config has opened
};

void print_threads_warning(const ProfileOptions& opts) {
    if (!opts.threads_warning.empty()) std::cerr << kTool << ": warning: " << opts.threads_warning << '\n';
}

report::Table split_table(const SchedReport& r, bool timed) {
    report::Table t({"split", "backend", "nodes", "n_nodes", "n_inputs", "input_bytes", "copied_bytes", "copied_from",
                     "copied", "copy_ms", "compute_ms", "modelled_copy_ms"});
    for (const SplitReport& s : r.splits) {
        size_t bytes = 0, copied = 0;
        std::string from, names;
        int n_named = 0;
        for (const SplitInputReport& in : s.inputs) {
            bytes += in.bytes;
            if (!in.copied) continue;  // read in place: the split's backend can use the source's buffer
            copied += in.bytes;
            if (from.find(in.source_backend) == std::string::npos) from += (from.empty() ? "" : " ") + in.source_backend;
            // The copied tensors by name, a few of them: the rest counted.
            if (n_named++ < 4) names += (names.empty() ? "" : ", ") + in.name + " (" + bytes_text(static_cast<double>(in.bytes)) + ")";
        }
        if (n_named > 4) names += ", +" + std::to_string(n_named - 4) + " more";
        auto ms = [&](double sec) { return timed && sec >= 0 ? report::Cell(sec * 1e3) : report::Cell(); };
        t.add_row({static_cast<int64_t>(s.index), s.backend,
                   "[" + std::to_string(s.node_begin) + ", " + std::to_string(s.node_end) + ")",
                   static_cast<int64_t>(s.n_nodes), static_cast<int64_t>(s.inputs.size()), static_cast<int64_t>(bytes),
                   static_cast<int64_t>(copied), from, names, ms(s.copy_seconds), ms(s.compute_seconds),
                   ms(s.modelled_copy_seconds)});
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
    std::cerr << kTool << ": " << p.model << " on [";
    for (size_t i = 0; i < p.backends.size(); ++i) std::cerr << (i ? ", " : "") << p.backends[i];
    std::cerr << "]: " << p.n_nodes << " nodes, " << p.n_splits << " splits, " << p.total_copies() << " copies ("
              << bytes_text(static_cast<double>(p.total_copy_bytes())) << ")\n";
    for (const auto& [name, bytes] : p.weight_bytes) {
        std::cerr << "  weights " << name << ": " << bytes_text(static_cast<double>(bytes)) << '\n';
    }
    for (const auto& [name, bytes] : p.buffer_bytes) {
        std::cerr << "  compute buffer " << name << ": " << bytes_text(static_cast<double>(bytes)) << '\n';
    }
    for (const auto& [pair, c] : p.copies) {
        std::cerr << "  copied " << pair.first << " -> " << pair.second << ": " << c.count << " copies, "
                  << bytes_text(static_cast<double>(c.bytes));
        if (c.modelled_ms >= 0) std::cerr << ", " << c.modelled_ms << " ms modelled";
        std::cerr << '\n';
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
        write_dot(session->model.graph, *session->sched, out);
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
    const report::Table table = opts.nodes ? node_table(r) : split_table(r, !opts.dry_run);
    const ProfileSummary summary = summarize(s, !opts.dry_run);
    nlohmann::ordered_json document = to_json(summary);
    document["config"] = opts.common.config;
    document[opts.nodes ? "nodes" : "splits"] = report::to_json(table);
    if (Status st = write_report(table, document, opts.common); !st.is_ok()) return fail(kTool, st);
    print_summary(summary);
    return kExitOk;
}

report::Cell optional_cell(const std::optional<double>& v) { return v ? report::Cell(*v) : report::Cell(); }

int run_sweep(const ProfileOptions& opts) {
    auto sweep = parse_sweep(opts.sweep);
    if (!sweep.is_ok()) return fail(kTool, sweep.status());
    // The swept column is named apart from the report's own (sweeping n_copies, the copy count).
    report::Table table({sweep->key + " (swept)", "n_splits", "n_copies", "copy_bytes", "copy_ms", "modelled_copy_ms",
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
    add_common_options(app, opts.common);
    app.add_flag("--dry-run", opts.dry_run, "Split and allocate only: no compute, no timings");
    app.add_flag("--nodes", opts.nodes, "Report every node's backend and the reason instead of the splits");
    app.add_option("-r,--reps", opts.reps, "Profiled computes (the last one is reported)")
        ->check(at_least(1))
        ->capture_default_str();
    app.add_option("--dot", opts.dot, "Write the graph as Graphviz DOT, nodes coloured by backend");
    app.add_option("--sweep", opts.sweep,
                   "KEY=FIRST..LAST or KEY=V1,V2,...: rerun over a placement setting (offload_layers, n_copies, or\n"
                   "split.ratios=3:1,1:1 for a config with a split) and report splits, copies and time per value");
    app.footer("Examples:\n"
               "  sched-profile -c configs/llama-decoder.json -b SIM0,CPU -P SIM0:unsupported=rope --dot g.dot\n"
               "  sched-profile -c configs/llama-decoder-offload.json --map CUDA0=SIM0 --sweep offload_layers=0..5\n"
               "  sched-profile -c configs/llama-decoder-split.json --map CUDA0=SIM0 --map CUDA1=SIM1 --sweep split.ratios=3:1,1:1,1:3\n"
               "With --format json the report is one object: n_nodes, n_splits, n_copies, copy_bytes, copies_by_pair,\n"
               "buffer_bytes, weight_bytes, copy/compute/modelled_copy_ms, hint (\"bound by copies\" when copies take most of the\n"
               "time), and splits (or nodes with --nodes).\n"
               "Exit codes: 0 success, 2 usage, config or device error.");
    return run_tool(app, argc, argv, opts.common, [&] { return run(opts); });
}
