// sched-profile: how the scheduler splits a config across backends, what it copies, and what the
// copies and computes cost.
//
//   sched-profile -c configs/llama-decoder.json -b SIM0,CPU -P SIM0:unsupported=rope --dry-run
#include <iostream>

#include "dot.hpp"
#include "session.hpp"

namespace xb::tools {
namespace {

constexpr const char* kTool = "sched-profile";

struct ProfileOptions {
    CommonOptions common;
    bool dry_run = false;
    bool nodes = false;
    int reps = 3;
    std::string dot;
};

report::Table split_table(const SchedReport& r, bool timed) {
    report::Table t({"split", "backend", "nodes", "n_nodes", "n_inputs", "input_bytes", "copied_from", "copy_ms",
                     "compute_ms", "modelled_copy_ms"});
    for (const SplitReport& s : r.splits) {
        size_t bytes = 0;
        std::string from;
        for (const SplitInputReport& in : s.inputs) {
            bytes += in.bytes;
            if (from.find(in.source_backend) == std::string::npos) from += (from.empty() ? "" : " ") + in.source_backend;
        }
        auto ms = [&](double sec) { return timed && sec >= 0 ? report::Cell(sec * 1e3) : report::Cell(); };
        t.add_row({static_cast<int64_t>(s.index), s.backend,
                   "[" + std::to_string(s.node_begin) + ", " + std::to_string(s.node_end) + ")",
                   static_cast<int64_t>(s.n_nodes), static_cast<int64_t>(s.inputs.size()), static_cast<int64_t>(bytes), from,
                   ms(s.copy_seconds), ms(s.compute_seconds), ms(s.modelled_copy_seconds)});
    }
    return t;
}

report::Table node_table(const SchedReport& r) {
    report::Table t({"node", "name", "op", "backend", "reason", "why"});
    for (const NodeAssignment& n : r.nodes) {
        t.add_row({static_cast<int64_t>(n.index), n.name, n.op, n.backend, std::string(assign_reason_code(n.reason)),
                   std::string(assign_reason_text(n.reason))});
    }
    return t;
}

void print_summary(Session& s) {
    const SchedReport& r = s.sched->report();
    std::cerr << kTool << ": " << s.model.name << " on [" ;
    for (size_t i = 0; i < s.backends.size(); ++i) {
        std::cerr << (i ? ", " : "") << s.backends[i]->name();
        if (s.backends[i]->device().is_simulated()) std::cerr << " (simulated)";
    }
    std::cerr << "]: " << s.model.graph.n_nodes() << " nodes, " << s.sched->n_splits() << " splits\n";
    for (const auto& b : s.backends) std::cerr << "  compute buffer " << b->name() << ": " << s.sched->buffer_size(*b) << " bytes\n";
    for (const auto& [pair, bytes] : r.copy_bytes) std::cerr << "  copied " << pair.first << " -> " << pair.second << ": " << bytes << " bytes\n";
}

int run(const ProfileOptions& opts) {
    auto session = open_session(opts.common, !opts.dry_run);
    if (!session.is_ok()) return fail(kTool, session.status());
    Session& s = **session;
    if (!opts.dry_run) {
        for (int i = 0; i < opts.reps; ++i) {
            if (Status st = s.sched->graph_compute(s.model.graph); !st.is_ok()) return fail(kTool, st);
        }
    }
    if (!opts.dot.empty()) {
        if (Status st = write_dot(s.model.graph, *s.sched, opts.dot); !st.is_ok()) return fail(kTool, st);
    }
    const SchedReport& r = s.sched->report();
    const Status st = write_table(opts.nodes ? node_table(r) : split_table(r, !opts.dry_run), opts.common);
    if (!st.is_ok()) return fail(kTool, st);
    print_summary(s);
    return kExitOk;
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
    app.add_option("-r,--reps", opts.reps, "Profiled computes (the last one is reported)")->check(CLI::PositiveNumber);
    app.add_option("--dot", opts.dot, "Write the graph as Graphviz DOT, nodes coloured by backend");
    app.footer("Example: sched-profile -c configs/llama-decoder.json -b SIM0,CPU -P SIM0:unsupported=rope --dot g.dot\n"
               "Exit codes: 0 success, 2 usage, config or device error.");
    return run_tool(app, argc, argv, opts.common, [&] { return run(opts); });
}
