// graph-run: builds, allocates and computes configs through the scheduler, and times them: one
// run per (config, backend set, threads) of its lists, as llama-bench does.
//
//   graph-run -c configs/llama-decoder.json -b BLAS,CPU -b CPU -t 1,2 -r 20 --format json -o run.json
#include <algorithm>
#include <chrono>
#include <iostream>

#include <nlohmann/json.hpp>
#include <CLI/CLI.hpp>

#include "compare_runs.hpp"
#include "config/model_io.hpp"
#include "machine_load.hpp"
#include "node_profile.hpp"
#include "nonfinite.hpp"
#include "progress.hpp"
#include "report/timing.hpp"
#include "run_report.hpp"
#include "session.hpp"
#include "tensor_overrides.hpp"
#include "token_tests.hpp"
#include "trace.hpp"

namespace xb::tools {
namespace {

constexpr const char* kTool = "graph-run";
constexpr int kProfileReps = 5;  // node-by-node computes for --profile (at most --reps)

struct RunOptions {
    CommonOptions common;
    int warmup = 1;
    int reps = 10;
    double duration = 0;
    std::string save_outputs;
    std::string save_weights;  // GGUF file for the placed model's weights
    std::string trace;
    bool profile = false;              // time every node (node_profile.hpp)
    std::vector<std::string> compare;  // BASE.json NEW.json: compare two saved reports, run nothing
    std::vector<int> prompts;          // -p: prompt sizes (token_tests.hpp)
    std::vector<int> generated;        // -n: tokens generated one at a time
    std::vector<int> depths;           // -d: KV depth the tests start from
    std::optional<int> gpu_layers;     // --ngl: offload_layers
    std::vector<std::string> tensor_overrides;  // --override-tensor REGEX=DEVICE (tensor_overrides.hpp)
    NonFinitePolicy nonfinite = NonFinitePolicy::Warn;  // outputs holding NaN or infinity
};

// One timed repetition: the graph computed once, or, for a generation test, `generated` times with
// its batch moved one position on each time and the recurrent states carried (llama-bench's tgN:
// from an empty state, the N tokens timed together). Milliseconds.
Result<double> time_repetition(Session& s, int generated, TraceWriter* trace, int rep) {
    config::Model& m = s.model;
    const int first = m.cache_place.first - std::max(generated - 1, 0);  // the built batch is the last step
    const auto t0 = std::chrono::steady_clock::now();
    for (int step = 0; step < std::max(generated, 1); ++step) {
        if (generated > 0) XB_RETURN_IF_ERROR(m.move_batch(first + step));
        XB_RETURN_IF_ERROR(m.set_inputs(step == 0 ? config::RecurrentStates::Empty : config::RecurrentStates::Kept));
        XB_RETURN_IF_ERROR(s.sched->graph_compute(m.graph));
        if (trace != nullptr) trace->add_compute(s.sched->report(), rep);
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Computes the session's graph `warmup` then `reps` times (or for `duration` seconds), each a
// repetition of the test (time_repetition); the timed repetitions' milliseconds.
Result<report::TimingStats> measure(Session& s, const RunOptions& opts, int generated, TraceWriter* trace) {
    for (int i = 0; i < opts.warmup; ++i) XB_RETURN_IF_ERROR(s.sched->graph_compute(s.model.graph));
    std::vector<double> ms;
    const auto begin = std::chrono::steady_clock::now();
    Progress progress("compute", opts.duration > 0 ? 0 : opts.reps);
    for (int i = 0;; ++i) {
        progress.update(i);
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        if (opts.duration > 0 ? elapsed >= opts.duration : i >= opts.reps) break;
        XB_ASSIGN_OR_RETURN(const double rep_ms, time_repetition(s, generated, trace, i));
        ms.push_back(rep_ms);
    }
    return report::summarize(ms);
}

// "configs/a.json pp512 on SIM0,CPU with 2 threads": which run of a list failed.
std::string run_name(const CommonOptions& o, const TokenTest& test) {
    const std::string name = test.n_tokens ? " " + test_label(*test.n_tokens, test.n_kv.value_or(0), test.generated).name : "";
    return o.config + name + (o.backends.empty() ? "" : " on " + join_list(o.backends)) + " with " + threads_text(o.threads);
}

int run_compare(const RunOptions& opts) {
    auto c = compare_runs(opts.compare[0], opts.compare[1]);
    if (!c.is_ok()) return fail(kTool, c.status());
    for (const std::string& d : c->differences) tell(kTool, "runs differ in " + d);
    for (const std::string& u : c->unpaired) tell(kTool, "no partner for the run of " + u);
    const Status st = write_report(c->table, c->json, opts.common);
    return st.is_ok() ? kExitOk : fail(kTool, st);
}

// One run of the matrix (its threads already chosen): opens the session, prints the threads'
// warning once the config has opened (a failing run prints only its error) unless it was printed
// last, times it, and profiles and saves what was asked for.
Result<RunRecord> run_one(const RunOptions& opts, const CommonOptions& run, const TokenTest& test,
                          const ThreadChoice& threads, std::string& last_warning, TraceWriter* trace, int& verdict) {
    SessionOptions session_options;
    session_options.profile = trace != nullptr;  // the trace shows per-split times
    Status edited;
    TestLabel label;
    int spec_kv = 0;
    XB_ASSIGN_OR_RETURN(const std::vector<config::DeviceRule> overrides, parse_tensor_overrides(opts.tensor_overrides));
    session_options.edit = [&](config::ConfigSpec& spec) {
        edited = apply_token_test(test, opts.gpu_layers, spec);
        apply_tensor_overrides(overrides, spec);
        if (const auto tokens = spec_tokens(spec)) {
            label = test_label(tokens->first, tokens->second, test.generated);
            spec_kv = tokens->second;
        }
    };
    auto opened = open_session(run, session_options);
    XB_RETURN_IF_ERROR(edited);  // before the session's error: a config without tokens may build fine
    XB_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, std::move(opened));
    Session& s = *session;
    // --tokens sets the batch after the config's own n_tokens: the test is the batch built.
    if (!s.model.tokens.empty()) {
        const int n = static_cast<int>(s.model.n_tokens);
        label = test_label(n, std::max(n, spec_kv));
    }
    for (const std::string& note : s.model.notes) tell(kTool, "note: " + note);
    if (!threads.warning.empty() && threads.warning != last_warning) {
        tell(kTool, "warning: " + threads.warning);
        last_warning = threads.warning;
    }
    if (!opts.save_weights.empty()) XB_RETURN_IF_ERROR(config::save_weights(s.model, opts.save_weights));
    XB_ASSIGN_OR_RETURN(const report::TimingStats stats, measure(s, opts, test.generated, trace));
    RunRecord record{run, run_row(s, stats, run, label, threads.load), std::nullopt};
    if (opts.profile) {
        XB_ASSIGN_OR_RETURN(record.profile, profile_nodes(s, std::max(1, std::min(opts.reps, kProfileReps))));
        if (trace != nullptr) trace->add_nodes(*record.profile);
    }
    if (!opts.save_outputs.empty()) XB_RETURN_IF_ERROR(config::save_outputs(s.model, opts.save_outputs));
    const std::string where = "after the last compute on " + join_list(s.backend_names());
    verdict = std::max(verdict, judge_nonfinite(kTool, s.model, opts.nonfinite, where));
    return record;
}

int run(const RunOptions& opts, const RunMatrix& matrix) {
    if (!opts.compare.empty()) return run_compare(opts);
    const std::vector<CommonOptions> runs = matrix.runs(opts.common);
    if ((runs.size() > 1 || opts.prompts.size() + opts.generated.size() > 1 || opts.depths.size() > 1) &&
        (!opts.save_outputs.empty() || !opts.save_weights.empty())) {
        return fail(kTool, Status(StatusCode::InvalidArgument,
                                  "--save-outputs and --save-weights take one run: give one config, one -b, one -t "
                                  "and at most one -p, -n or -d"));
    }
    if (!opts.common.tokens.empty() && !(opts.prompts.empty() && opts.generated.empty())) {
        return fail(kTool, Status(StatusCode::InvalidArgument,
                                  "--tokens gives the batch itself; -p and -n set a batch of random ids: give one or the other"));
    }
    const std::vector<TokenTest> tests = token_tests(opts.prompts, opts.generated, opts.depths);
    std::vector<RunRecord> records;
    TraceWriter trace;
    std::string last_warning;  // a busy machine is reported once, not once per run
    int verdict = kExitOk;     // kExitCheckFailed: an output held NaN or infinity under --nonfinite fail
    for (CommonOptions r : runs) {
        const ThreadChoice threads = choose_threads(r.threads);
        r.threads = threads.threads;
        for (const TokenTest& test : tests) {
            const bool many = runs.size() * tests.size() > 1;
            if (many) trace.begin_run(run_name(r, test));
            auto record = run_one(opts, r, test, threads, last_warning, opts.trace.empty() ? nullptr : &trace, verdict);
            if (!record.is_ok()) {
                const std::string where = many ? run_name(r, test) + ": " : "";
                return fail(kTool, Status(record.status().code(), where + record.status().message()));
            }
            records.push_back(std::move(record).value());
        }
    }
    if (!opts.trace.empty()) {
        if (Status st = trace.write(opts.trace); !st.is_ok()) return fail(kTool, st);
    }
    const Status st = write_runs(records, opts.common);
    return st.is_ok() ? verdict : fail(kTool, st);
}

}  // namespace
}  // namespace xb::tools

int main(int argc, char** argv) {
    using namespace xb::tools;
    CLI::App app{"graph-run: build, allocate and compute a config through the scheduler on one or more backends,\n"
                 "and report timing statistics, splits, compute buffer sizes and bytes copied between backends.", "graph-run"};
    RunOptions opts;
    RunMatrix matrix;
    opts.common.config = "configs/default.json";
    opts.common.default_outputs = 1;  // llama-bench computes the last position's logits
    add_common_options(app, opts.common, &matrix);
    add_outputs_option(app, opts.common);
    app.add_option("--warmup", opts.warmup, "Computes before timing")->check(at_least(0))->capture_default_str();
    app.add_option("-r,--reps", opts.reps, "Timed computes")->check(at_least(1))->capture_default_str();
    app.add_option("--duration", opts.duration, "Time computes for this many seconds instead of --reps")
        ->check(at_least(0));
    app.add_option("--save-outputs", opts.save_outputs, "Write every output as DIR/<name>.npy");
    app.add_option("--save-weights", opts.save_weights,
                   "Write the model's weights (as initialised, e.g. random with --seed) to FILE (GGUF); a config loads\n"
                   "them back with \"defaults\": {\"init\": {\"kind\": \"gguf\", \"file\": FILE}}");
    app.add_option("--trace", opts.trace,
                   "Write a Chrome Trace Event file (Perfetto): per backend, each split's copies and compute "
                   "(profiling mode: synchronises between them); with --profile also each node");
    app.add_flag("--profile", opts.profile,
                 "Also time every node (computed one at a time, median of up to 5 computes): per op and the slowest\n"
                 "nodes in table/md, every node in json/jsonl");
    app.add_option("-p,--n-prompt", opts.prompts,
                   "Prompt sizes (llama-bench's -p): a run of N tokens, test ppN; a list (64,512) runs each; a\n"
                   "llama_decoder or GGUF model")
        ->delimiter(',')
        ->check(at_least(1));
    app.add_option("-n,--n-gen", opts.generated,
                   "Tokens generated one after another (llama-bench's -n): one graph of one token moved through the\n"
                   "cache, recurrent states carried, the N steps timed together, test tgN; a list runs each")
        ->delimiter(',')
        ->check(at_least(1));
    app.add_option("-d,--n-depth", opts.depths, "KV cache positions the -p and -n tests start from (llama-bench's -d); a list runs each")
        ->delimiter(',')
        ->check(at_least(0));
    app.add_option("--ngl,--n-gpu-layers", opts.gpu_layers,
                   "Layers on the first GPU (llama-bench's -ngl): the config's offload_layers")
        ->check(at_least(0));
    app.add_option("--ot,--override-tensor", opts.tensor_overrides,
                   "REGEX=DEVICE: weights whose names the regular expression finds go to DEVICE, before the config's\n"
                   "rules (llama-bench's -ot; exps=CPU keeps a mixture of experts' experts on the host); repeatable");
    app.add_option("--compare", opts.compare,
                   "BASE.json NEW.json: compare two saved reports (--format json -o) instead of running: per metric the\n"
                   "base, the new value and new/base, and on stderr how the runs differ (commit, CPU, threads, config)")
        ->expected(2);
    add_nonfinite_option(app, opts.nonfinite);
    app.footer("Example: graph-run -c configs/llama-decoder.json -b BLAS,CPU -r 20 --trace run.trace.json\n"
               "         graph-run -c model.gguf -p 64,512 -n 16 -d 0,128 --format sql   (6 runs, llama-bench's tests)\n"
               "         graph-run -c configs/llama-decoder.json -b CPU -b BLAS,CPU -t 1,2 --format md   (4 runs)\n"
               "         graph-run -c configs/llama-decoder.json --profile\n"
               "         graph-run -c moe.gguf -b SIM0,CPU --ngl 99 --ot exps=CPU -p 16   (layers on the device, experts on the host)\n"
               "         graph-run --compare before.json after.json\n"
               "Exit codes: 0 success, 1 an output held NaN or infinity with --nonfinite fail, 2 usage, config or\n"
               "device error.");
    return run_tool(app, argc, argv, opts.common, [&] { return run(opts, matrix); }, &matrix);
}
