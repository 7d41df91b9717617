#include "perf_mode.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <optional>

#include "backends.hpp"
#include "opcheck/case_cost.hpp"
#include "opcheck/case_runner.hpp"
#include "progress.hpp"

namespace xb::tools::opcheck {

namespace {

using Clock = std::chrono::steady_clock;
using xb::opcheck::CaseCost;
using xb::opcheck::CaseGraph;
using xb::opcheck::InputBytes;
using xb::opcheck::PreparedCase;

struct Timing {
    int runs = 0;             // executions of the case's nodes
    int runs_per_graph = 1;   // of them in one graph compute
    double seconds = 0.0;     // all timed runs together
};

// One graph compute should last at least this long, so that the cost of launching a graph (the
// backend's thread team, a stream's synchronisation) is spread over many executions of the op,
// as in ggml's test-backend-ops perf (which repeats the node in one graph); at most kMaxRepeats.
constexpr double kMinGraphSeconds = 0.02;
constexpr int kMaxRepeats = 1000;

struct PerfRow {
    std::string backend;
    const SelectedCase* c = nullptr;
    std::string unsupported;  // non-empty: not timed
    std::string error;        // non-empty: preparing or computing failed
    Timing timing;
    CaseCost cost;
};

// Computes once untimed (first-use costs: thread start-up, caches) and once timed to choose how
// many times to repeat the nodes per graph, then until `seconds` have passed.
Result<Timing> time_case(PreparedCase& p, double seconds) {
    XB_RETURN_IF_ERROR(p.compute());
    const Clock::time_point once = Clock::now();
    XB_RETURN_IF_ERROR(p.compute());
    const double one = std::chrono::duration<double>(Clock::now() - once).count();
    Timing t;
    t.runs_per_graph = static_cast<int>(std::clamp(std::ceil(kMinGraphSeconds / std::max(one, 1e-9)), 1.0,
                                                   static_cast<double>(kMaxRepeats)));
    XB_RETURN_IF_ERROR(p.compute_repeated(t.runs_per_graph));  // untimed: the longer graph's first use
    const Clock::time_point start = Clock::now();
    do {
        XB_RETURN_IF_ERROR(p.compute_repeated(t.runs_per_graph));
        t.runs += t.runs_per_graph;
        t.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    } while (t.seconds < seconds);
    return t;
}

// `inputs`: the case's input bytes, made by the first backend that times it and set on the others.
Status measure_into(const SelectedCase& c, Backend& backend, const OpCheckOptions& o,
                    std::optional<InputBytes>& inputs, PerfRow& row) {
    XB_ASSIGN_OR_RETURN(CaseGraph graph, CaseGraph::build(*c.source));
    row.cost = xb::opcheck::case_cost(graph);
    row.unsupported = graph.unsupported_on(backend.device());
    if (!row.unsupported.empty()) return Status::ok();
    if (!inputs) {
        XB_ASSIGN_OR_RETURN(InputBytes made, xb::opcheck::input_bytes(graph, o.common.seed.value_or(0),
                                                                      xb::opcheck::QuantizedInputs::RandomBlocks));
        inputs = std::move(made);
    }
    XB_ASSIGN_OR_RETURN(auto prepared, PreparedCase::prepare_with(std::move(graph), backend, *inputs));
    XB_ASSIGN_OR_RETURN(row.timing, time_case(*prepared, o.perf_seconds));
    return Status::ok();
}

// One case on one backend; a failure is kept in the row, so that it does not hide the other timings.
PerfRow measure(const SelectedCase& c, Backend& backend, const OpCheckOptions& o, std::optional<InputBytes>& inputs) {
    PerfRow row;
    row.backend = backend.name();
    row.c = &c;
    if (Status s = measure_into(c, backend, o, inputs, row); !s.is_ok()) row.error = s.to_string();
    return row;
}

double us_per_run(const PerfRow& r) { return r.timing.seconds / r.timing.runs * 1e6; }
// GB/s or GFLOP/s: 1e9 bytes or flops per second, so "per run in ns" divides out directly.
double rate(const PerfRow& r, double amount) { return amount / (us_per_run(r) * 1e3); }

report::Table table_of(const std::vector<PerfRow>& rows) {
    report::Table t({"backend", "case", "op", "type", "runs", "us_per_run", "GB/s", "GFLOP/s", "detail"});
    for (const PerfRow& r : rows) {
        if (!r.unsupported.empty() || !r.error.empty()) {
            t.add_row({r.backend, r.c->source->name, r.c->op, r.c->type, {}, {}, {}, {},
                       r.error.empty() ? "unsupported: " + r.unsupported : "error: " + r.error});
            continue;
        }
        // GB/s for every case (the bytes its op moves), GFLOP/s where it does arithmetic worth counting.
        t.add_row({r.backend, r.c->source->name, r.c->op, r.c->type, static_cast<int64_t>(r.timing.runs), us_per_run(r),
                   r.cost.bytes > 0 ? report::Cell(rate(r, r.cost.bytes)) : report::Cell(),
                   r.cost.flops > 0 ? report::Cell(rate(r, r.cost.flops)) : report::Cell(),
                   std::string(r.cost.compute_bound ? "" : r.cost.flops > 0 ? "memory-bound" : "")});
    }
    return t;
}

nlohmann::ordered_json json_of(const std::vector<PerfRow>& rows, size_t n_cases,
                               const std::vector<std::string>& backends, double seconds) {
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    for (const PerfRow& r : rows) {
        nlohmann::ordered_json j = {{"backend", r.backend}, {"case", r.c->source->name}, {"op", r.c->op},
                                    {"type", r.c->type}, {"supported", r.unsupported.empty()}};
        if (!r.unsupported.empty() || !r.error.empty()) {
            j["detail"] = r.error.empty() ? r.unsupported : r.error;
            if (!r.error.empty()) j["error"] = true;
        } else {
            j["runs"] = r.timing.runs;
            j["runs_per_graph"] = r.timing.runs_per_graph;
            j["us_per_run"] = us_per_run(r);
            j["bytes"] = r.cost.bytes;
            j["flops"] = r.cost.flops;
            j["compute_bound"] = r.cost.compute_bound;
            if (r.cost.bytes > 0) j["gbps"] = rate(r, r.cost.bytes);
            if (r.cost.flops > 0) j["gflops"] = rate(r, r.cost.flops);
        }
        results.push_back(std::move(j));
    }
    return {{"tool", kTool}, {"mode", "perf"}, {"backends", backends}, {"seconds_per_case", seconds},
            {"cases", n_cases}, {"results", results}};
}

}  // namespace

int run_perf_mode(const OpCheckOptions& o, const std::vector<SelectedCase>& cases,
                  const std::vector<std::string>& backends) {
    auto made = make_worker_backends(backends, 1, o.common.threads);
    if (!made.is_ok()) return fail(kTool, made.status());
    std::vector<PerfRow> rows;
    Progress progress("timing case", static_cast<long>(cases.size() * backends.size()));
    for (const SelectedCase& c : cases) {
        std::optional<InputBytes> inputs;
        for (auto& backend : made->targets) {
            rows.push_back(measure(c, *backend, o, inputs));
            if (!rows.back().error.empty()) {
                std::cerr << kTool << ": " << c.source->name << " on " << backend->name() << ": " << rows.back().error
                          << '\n';
            }
            progress.update(static_cast<long>(rows.size()));
        }
    }
    const Status w = write_report(table_of(rows), json_of(rows, cases.size(), backends, o.perf_seconds), o.common);
    if (!w.is_ok()) return fail(kTool, w);
    const bool errors = std::any_of(rows.begin(), rows.end(), [](const PerfRow& r) { return !r.error.empty(); });
    return errors ? kExitCheckFailed : kExitOk;
}

}  // namespace xb::tools::opcheck
