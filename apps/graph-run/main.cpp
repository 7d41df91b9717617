// graph-run: builds, allocates and computes a config through the scheduler, and times it.
//
//   graph-run -c configs/llama-decoder.json -b BLAS,CPU -r 20 --format json -o results/run.json
#include <chrono>
#include <iostream>

#include <nlohmann/json.hpp>

#include "compare_runs.hpp"
#include "config/model_io.hpp"
#include "progress.hpp"
#include "report/timing.hpp"
#include "session.hpp"
#include "trace.hpp"

namespace xb::tools {
namespace {

constexpr const char* kTool = "graph-run";

struct RunOptions {
    CommonOptions common;
    int warmup = 1;
    int reps = 10;
    double duration = 0;
    std::string save_outputs;
    std::string save_weights;  // GGUF file for the placed model's weights
    std::string trace;
    std::vector<std::string> compare;  // BASE.json NEW.json: compare two saved reports, run nothing
};

struct Measurements {
    std::vector<double> ms;
    report::TimingStats stats;
};

Result<Measurements> measure(Session& s, const RunOptions& opts, TraceWriter* trace) {
    for (int i = 0; i < opts.warmup; ++i) XB_RETURN_IF_ERROR(s.sched->graph_compute(s.model.graph));
    Measurements m;
    const auto begin = std::chrono::steady_clock::now();
    double trace_t = 0;
    Progress progress("compute", opts.duration > 0 ? 0 : opts.reps);
    for (int i = 0;; ++i) {
        progress.update(i);
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        if (opts.duration > 0 ? elapsed >= opts.duration : i >= opts.reps) break;
        XB_RETURN_IF_ERROR(s.model.set_inputs());
        const auto t0 = std::chrono::steady_clock::now();
        XB_RETURN_IF_ERROR(s.sched->graph_compute(s.model.graph));
        m.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        if (trace != nullptr) trace_t = trace->add_compute(s.sched->report(), i, trace_t) + 50.0;
    }
    m.stats = report::summarize(m.ms);
    return m;
}

nlohmann::ordered_json json_report(Session& s, const Measurements& m, const std::string& config) {
    const SchedReport& r = s.sched->report();
    nlohmann::ordered_json buffers = nlohmann::ordered_json::object();
    for (const auto& b : s.backends) buffers[b->name()] = s.sched->buffer_size(*b);
    size_t copy_bytes = 0;
    nlohmann::ordered_json pairs = nlohmann::ordered_json::object();
    for (const auto& [pair, bytes] : r.copy_bytes) {
        copy_bytes += bytes;
        pairs[pair.first + "->" + pair.second] = bytes;
    }
    const report::TimingStats& t = m.stats;
    return {{"config", config},
            {"model", s.model.name},
            {"backends", s.backend_names()},
            {"n_nodes", s.model.graph.n_nodes()},
            {"n_splits", s.sched->n_splits()},
            {"reps", t.count},
            {"time_ms", {{"min", t.min}, {"median", t.median}, {"mean", t.mean}, {"p90", t.p90}, {"p95", t.p95},
                         {"p99", t.p99}, {"max", t.max}, {"stddev", t.stddev}}},
            {"tokens_per_s", t.median > 0 ? static_cast<double>(s.model.n_tokens) / (t.median * 1e-3) : 0.0},
            {"gflops", t.median > 0 ? s.model.matmul_flops / (t.median * 1e-3) * 1e-9 : 0.0},
            {"buffer_bytes", buffers},
            {"copy_bytes", copy_bytes},
            {"copy_bytes_by_pair", pairs}};
}

report::Table table_report(const nlohmann::ordered_json& j) {
    report::Table t({"metric", "value"});
    for (const auto& [key, value] : j.items()) {
        if (value.is_object()) {
            for (const auto& [k, v] : value.items()) t.add_row({key + "." + k, v.is_number_integer() ? report::Cell(v.get<int64_t>()) : report::Cell(v.get<double>())});
        } else if (value.is_number_integer()) {
            t.add_row({key, value.get<int64_t>()});
        } else if (value.is_number()) {
            t.add_row({key, value.get<double>()});
        } else {
            t.add_row({key, value.is_string() ? value.get<std::string>() : report::json_text(value)});
        }
    }
    return t;
}

int run_compare(const RunOptions& opts) {
    auto c = compare_runs(opts.compare[0], opts.compare[1]);
    if (!c.is_ok()) return fail(kTool, c.status());
    for (const std::string& note : c->notes) std::cerr << kTool << ": runs differ in " << note << '\n';
    const Status st = write_report(c->table, c->json, opts.common);
    return st.is_ok() ? kExitOk : fail(kTool, st);
}

int run(const RunOptions& opts) {
    if (!opts.compare.empty()) return run_compare(opts);
    SessionOptions session_options;
    session_options.profile = !opts.trace.empty();  // the trace shows per-split times
    auto session = open_session(opts.common, session_options);
    if (!session.is_ok()) return fail(kTool, session.status());
    Session& s = **session;
    for (const std::string& note : s.model.notes) std::cerr << kTool << ": note: " << note << '\n';
    if (!opts.save_weights.empty()) {
        if (Status st = config::save_weights(s.model, opts.save_weights); !st.is_ok()) return fail(kTool, st);
    }
    TraceWriter trace(s.backend_names());
    auto m = measure(s, opts, opts.trace.empty() ? nullptr : &trace);
    if (!m.is_ok()) return fail(kTool, m.status());
    if (!opts.trace.empty()) {
        if (Status st = trace.write(opts.trace); !st.is_ok()) return fail(kTool, st);
    }
    if (!opts.save_outputs.empty()) {
        if (Status st = config::save_outputs(s.model, opts.save_outputs); !st.is_ok()) return fail(kTool, st);
    }
    const auto j = json_report(s, *m, opts.common.config);
    const Status st = write_report(table_report(j), j, opts.common);
    return st.is_ok() ? kExitOk : fail(kTool, st);
}

}  // namespace
}  // namespace xb::tools

int main(int argc, char** argv) {
    using namespace xb::tools;
    CLI::App app{"graph-run: build, allocate and compute a config through the scheduler on one or more backends,\n"
                 "and report timing statistics, splits, compute buffer sizes and bytes copied between backends.", "graph-run"};
    RunOptions opts;
    opts.common.config = "configs/default.json";
    add_common_options(app, opts.common);
    app.add_option("--warmup", opts.warmup, "Computes before timing")->check(CLI::NonNegativeNumber)->capture_default_str();
    app.add_option("-r,--reps", opts.reps, "Timed computes")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--duration", opts.duration, "Time computes for this many seconds instead of --reps")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--save-outputs", opts.save_outputs, "Write every output as DIR/<name>.npy");
    app.add_option("--save-weights", opts.save_weights,
                   "Write the model's weights (as initialised, e.g. random with --seed) to FILE (GGUF); a config loads\n"
                   "them back with \"defaults\": {\"init\": {\"kind\": \"gguf\", \"file\": FILE}}");
    app.add_option("--trace", opts.trace,
                   "Write a Chrome Trace Event file (Perfetto): per backend, each split's copies and compute "
                   "(profiling mode: synchronises between them)");
    app.add_option("--compare", opts.compare,
                   "BASE.json NEW.json: compare two saved reports (--format json -o) instead of running: per metric the\n"
                   "base, the new value and new/base, and on stderr how the runs differ (commit, CPU, threads, config)")
        ->expected(2);
    app.footer("Example: graph-run -c configs/llama-decoder.json -b BLAS,CPU -r 20 --trace run.trace.json\n"
               "         graph-run --compare before.json after.json\n"
               "Exit codes: 0 success, 2 usage, config or device error.");
    return run_tool(app, argc, argv, opts.common, [&] { return run(opts); });
}
