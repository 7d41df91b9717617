// backend-compare: runs a config on two backends node by node and compares every result, then
// judges the graph's outputs against what the reference's own error allows there.
//
//   backend-compare -c configs/llama-decoder.json                 # CPU against the first GPU, else SIM0
//   backend-compare -b CPU,SIM0 -P SIM0:fault_node=11 --stop-at-first
#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <CLI/CLI.hpp>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "cli.hpp"
#include "progress.hpp"
#include "session.hpp"
#include "config/config_parse.hpp"
#include "config/model.hpp"
#include "config/placement.hpp"
#include "core/message_text.hpp"
#include "report/metrics.hpp"
#include "sched/graph_copy.hpp"
#include "compare_report.hpp"
#include "kld_mode.hpp"
#include "node_checks.hpp"
#include "nonfinite.hpp"
#include "placed_compare.hpp"
#include "plot.hpp"
#include "reference_file.hpp"
#include "tolerances.hpp"
#include "verdict.hpp"

namespace xb::tools {
namespace {

constexpr const char* kTool = "backend-compare";

struct ToolOptions {
    CommonOptions common;
    std::vector<std::string> tolerances;
    bool stop_at_first = false;
    bool isolate = false;        // the target computes each node from the reference's inputs
    std::string save_outputs;    // GGUF file for the target's node results
    std::string load_reference;  // GGUF file to compare one backend's run against
    std::vector<std::string> diff;  // REFERENCE.gguf TARGET.gguf: two saved runs, nothing computed
    bool placed = false;            // the target is the config as placed, through the scheduler
    std::string plot;               // FILE.png|svg: the verdict drawn (scripts/compare_plot.py)
    double margin = kEndToEndMargin;  // end-to-end tolerance: this many times the reference's own error
    NonFinitePolicy nonfinite = NonFinitePolicy::Fail;  // outputs holding NaN or infinity on both sides
    std::string truth;  // --truth DEVICE: every node measured against it too (F64: exact arithmetic)
    bool kld = false;   // --kld: the logits' KL-divergence statistics instead of the node walk
    bool decode = false;  // --decode: the model's tokens one at a time, states carried (run_decode)
};

// [reference, target]: -b when given, else the CPU against the first real GPU, else SIM0. With
// --load-reference only one backend runs (-b DEVICE, default CPU) and the target is "".
Result<std::pair<std::string, std::string>> pick_pair(const ToolOptions& opts) {
    const CommonOptions& o = opts.common;
    if (!opts.load_reference.empty() || opts.placed) {
        if (o.backends.size() > 1) {
            return Status(StatusCode::InvalidArgument, std::string(opts.placed ? "--placed" : "--load-reference") +
                                                           " runs one backend: give -b DEVICE");
        }
        return std::pair{o.backends.empty() ? std::string("CPU") : o.backends[0], std::string()};
    }
    if (o.backends.size() == 2) return std::pair{o.backends[0], o.backends[1]};
    if (!o.backends.empty()) {
        return Status(StatusCode::InvalidArgument, "-b takes exactly two devices: REFERENCE,TARGET (e.g. CPU,SIM0)");
    }
    Registry& reg = global_registry();
    for (size_t i = 0; i < reg.dev_count(); ++i) {
        if (reg.dev(i).type() == DeviceType::GPU && !reg.dev(i).is_simulated() && !reg.dev(i).is_foreign()) return std::pair{std::string("CPU"), std::string(reg.dev(i).name())};
    }
    return std::pair{std::string("CPU"), std::string("SIM0")};
}

// --truth joins a live comparison of two other devices.
Status check_truth(const ToolOptions& opts, const std::pair<std::string, std::string>& pair) {
    if (opts.truth.empty()) return Status::ok();
    const char* alone = !opts.load_reference.empty() ? "--load-reference"
                        : !opts.diff.empty()         ? "--diff"
                        : opts.placed                ? "--placed"
                                                     : nullptr;
    if (alone != nullptr) {
        return Status(StatusCode::InvalidArgument, std::string("--truth measures both sides of a live comparison of two ") +
                                                       "devices (-b REFERENCE,TARGET), not " + alone);
    }
    const Device* truth = global_registry().dev_by_name(opts.truth);
    for (const std::string& side : {pair.first, pair.second}) {
        if (truth != nullptr && global_registry().dev_by_name(side) == truth) {
            return Status(StatusCode::InvalidArgument, "--truth " + opts.truth + " is already a side of the comparison (" +
                                                           pair.first + "," + pair.second + "); give it as the reference " +
                                                           "alone (-b " + opts.truth + ",DEVICE) or compare two other devices");
        }
    }
    return Status::ok();
}

// A node's values as one side of a comparison holds them: computed here, or saved in a file.
using Values = std::function<Result<std::vector<float>>(const Tensor&)>;

// Compares every node the reference file holds against `target`'s values, in graph order: the
// target computed here (--load-reference) or saved in a second file (--diff). A node the files
// lack is skipped; a failing node's inputs are compared where both sides have them.
Status compare_with_saved(const Graph& graph, const GgufReader& reference, const Values& target,
                          const std::function<bool(const Tensor&)>& target_has, const Tolerances& tol,
                          bool stop_at_first, CompareReport& out) {
    Divergence divergence(graph);
    auto has = [&](const Tensor& t) { return reference.find_tensor(t.name) != nullptr && target_has(t); };
    for (int i = 0; i < graph.n_nodes(); ++i) {
        const Tensor& node = *graph.node(i);
        if (op_is_view(node.op)) continue;
        if (!has(node)) {
            out.add_skip(i, node, "not saved");
            continue;
        }
        XB_ASSIGN_OR_RETURN(std::vector<float> want, load_reference(reference, node));
        XB_ASSIGN_OR_RETURN(std::vector<float> got, target(node));
        const report::ErrorMetrics m = report::compare(got, want);
        const double tolerance = tol.for_node(node);
        const bool ok = out.add(i, node, m, tolerance);
        divergence.set(i, m, tolerance);
        if (ok) continue;
        std::vector<InputError> inputs;
        for (int j = 0; j < kMaxSrc; ++j) {
            const Tensor* src = node.src[j];
            if (src == nullptr || !has(*src)) continue;
            auto saved = load_reference(reference, *src);
            auto other = target(*src);
            if (saved.is_ok() && other.is_ok()) inputs.push_back({j, src->display_name(), report::compare(*other, *saved)});
        }
        const Origin origin = divergence.origin_from_sources(i, m, tolerance);
        out.explain(origin, std::move(inputs));
        if (origin == Origin::Introduced && stop_at_first) {
            out.skip_end_to_end("stopped at the first node that introduces error");
            return Status::ok();
        }
    }
    return Status::ok();
}

// The backend that saved a file (its xbackend.backend), and the config it ran ("?" when absent).
std::string saved_kv(const GgufReader& file, const char* key) {
    const GgufValue* v = file.find_kv(key);
    return v && v->as_string() ? *v->as_string() : std::string("?");
}

// Nothing in common: the file holds another config's results, and passing would hide it.
Status nothing_in_common(const config::Model& model, const GgufReader& file) {
    return Status(StatusCode::InvalidArgument, file.path() + ": none of the nodes of '" + model.name +
                                                   "' is in the file (it holds the results of '" +
                                                   saved_kv(file, "xbackend.config") + "')");
}

// The model on one backend, every node's result kept after a compute.
struct PlacedAlone {
    std::unique_ptr<MultiBuffer> tensors;  // every tensor but the weights
    std::vector<LeafBytes> start_states;   // the recurrent states the next compute starts from
};

// Puts the model on `backend` alone: its weights, every other tensor in memory of its own (so that
// every node's result is kept after a compute), and the input values (the states empty).
Result<PlacedAlone> place_alone(config::Model& model, Backend& backend) {
    Backend* placed[] = {&backend};
    XB_RETURN_IF_ERROR(config::place_and_init(model, placed));
    PlacedAlone out;
    XB_ASSIGN_OR_RETURN(out.tensors, alloc_ctx_tensors(*model.ctx, backend));
    XB_RETURN_IF_ERROR(model.set_inputs());
    XB_ASSIGN_OR_RETURN(out.start_states, snapshot_states(model));
    return out;
}

// The end-to-end verdict (verdict.hpp), from the model's graph computed on `backend` with every
// node kept, from recurrent states `start`: its own error estimated there (an exact reference,
// F64, has none of its own: the estimate is then what a correct f32 computation makes, which the
// target is held to).
Status judge_outputs(Backend& backend, const config::Model& model, std::span<const LeafBytes> start, double margin,
                     CompareReport& report) {
    XB_ASSIGN_OR_RETURN(ErrorBudget budget, reference_budget(backend, model, start));
    if (backend.device().type() == DeviceType::Reference) {
        report.set_budget_basis("the error a correct f32 computation makes (estimated: the reference " +
                                std::string(backend.name()) + " computes exactly)");
    }
    judge_end_to_end(model, budget, margin, report);
    return Status::ok();
}

// With --truth: how often each side was the closer to it, and both sides' distance from it at the
// graph's outputs.
std::string truth_summary(const CompareReport& report) {
    int target = 0, reference = 0;
    bool measured = false;
    for (const NodeResult& r : report.nodes()) {
        if (!r.truth) continue;
        measured = true;
        const std::string closer = r.truth->closer();
        target += closer == "target";
        reference += closer == "reference";
    }
    if (!measured) return {};
    std::string text = "against the truth: the target is closer at " + std::to_string(target) + " nodes, the reference at " +
                       std::to_string(reference) + "\n";
    for (const OutputResult& o : report.outputs()) {
        const NodeResult* r = report.node(o.index);
        if (r == nullptr || !r->truth) continue;
        const std::string closer = r->truth->closer();
        char line[256];
        std::snprintf(line, sizeof line, "  output '%s': reference nmse %.3g, target nmse %.3g against the truth (%s)\n",
                      o.name.c_str(), r->truth->reference.nmse, r->truth->target.nmse,
                      closer == "equal" ? "equally close" : ("the " + closer + " is closer").c_str());
        text += line;
    }
    return text;
}

// Writes the report (and the plot), prints the summary on stderr (the first node that introduces
// error, the outputs against their end-to-end tolerance and the node where the error grows), and
// returns the exit code: 1 when a node introduces error or an output is beyond its end-to-end
// tolerance. Nodes that only carry their inputs' differences, within what the reference's own
// error allows at the outputs, pass.
// Writes the report, prints the summary line, the first divergent node and the end-to-end verdict
// on stderr, and returns the exit code: 1 when a node introduces error (nodes that only carry their
// inputs' differences are inherited and do not fail), an output is beyond its end-to-end tolerance,
// or an output holds NaN or infinity under --nonfinite fail (read with `reference`, default as the
// model holds them).
int finish(const CompareReport& report, const ToolOptions& opts, const config::Model& model, const std::string& what,
           const config::TensorValues& reference = {}) {
    if (Status s = write_report(report.table(), report.json(), opts.common); !s.is_ok()) return fail(kTool, s);
    std::cerr << kTool << ": " << name_text(model.name) << ": " << what << ": " << report.compared() << " nodes compared, "
              << report.skipped() << " skipped, " << report.failed() << " out of tolerance";
    if (report.failed() > 0) std::cerr << " (" << report.introduced() << " introduced, " << report.inherited() << " inherited)";
    std::cerr << '\n';
    if (report.first_divergent()) {
        const Tensor& n = *model.graph.node(*report.first_divergent());
        std::cerr << "first divergent node: #" << *report.first_divergent() << " '" << n.display_name() << "' ("
                  << n.op_label() << ")" << report.first_divergent_detail() << '\n';
    }
    std::cerr << report.end_to_end_text() << truth_summary(report);
    const bool failed = report.first_divergent().has_value() || report.end_to_end_failed();
    if (!failed && report.inherited() > 0) {
        std::cerr << kTool << ": no node introduces error: the nodes out of tolerance compute within it from the "
                     "same inputs, and carry differences of earlier nodes within their own tolerance (e.g. "
                     "products of quantized weights)\n";
    }
    // With every node within tolerance, the target holds the same NaN and infinities as the reference.
    const int nonfinite = judge_nonfinite(kTool, model, opts.nonfinite,
                                          report.failed() == 0 ? "on both sides of the comparison, which counts them as equal"
                                                               : "on the reference side of the comparison",
                                          reference);
    if (!opts.plot.empty()) {
        const std::string title = model.name + ": " + what;
        if (Status s = draw_plot(report.json(), title, opts.plot); !s.is_ok()) return fail(kTool, s);
        std::cerr << kTool << ": wrote " << opts.plot << '\n';
    }
    if (failed) return kExitCheckFailed;
    return nonfinite;
}

// One backend's run (-b DEVICE) against results saved with --save-outputs.
int run_against_file(const ToolOptions& opts, config::Model& model, Backend& backend, const Tolerances& tol,
                     const std::vector<ResolvedFault>& faults) {
    auto file = GgufReader::open(opts.load_reference);
    if (!file.is_ok()) return fail(kTool, file.status());
    auto tensors = place_alone(model, backend);
    if (!tensors.is_ok()) return fail(kTool, tensors.status());
    if (Status s = backend.graph_compute(model.graph); !s.is_ok()) return fail(kTool, s);
    const std::string source = saved_kv(*file, "xbackend.backend");
    CompareReport report(backend.name(), source + " (" + opts.load_reference + ")");
    if (Status s = compare_with_saved(model.graph, *file, [](const Tensor& t) { return tensor_get_f32(t); },
                                      [](const Tensor&) { return true; }, tol, opts.stop_at_first, report);
        !s.is_ok()) {
        return fail(kTool, s);
    }
    if (report.compared() == 0) return fail(kTool, nothing_in_common(model, *file));
    if (Status s = check_faults_injected(faults, report); !s.is_ok()) return fail(kTool, s);
    // The budget is the config's: this backend's run serves as the unperturbed one.
    if (!report.first_divergent() || !opts.stop_at_first) {
        if (Status s = judge_outputs(backend, model, tensors->start_states, opts.margin, report); !s.is_ok()) return fail(kTool, s);
    }
    return finish(report, opts, model,
                  std::string(backend.name()) + " against " + source + " results in " + opts.load_reference);
}

// The config as placed (through the scheduler) against `ref` computing it alone.
int run_placed(const ToolOptions& opts, config::Model& model, Backend& ref, const Tolerances& tol) {
    auto tensors = place_alone(model, ref);
    if (!tensors.is_ok()) return fail(kTool, tensors.status());
    CompareReport report(ref.name(), "placed", "placed");
    auto placed = compare_placed(opts.common, ref, model, tol, opts.stop_at_first, report);
    if (!placed.is_ok()) return fail(kTool, placed.status());
    report.set_target("placed on " + placed->backends);
    if (Status s = check_faults_injected(placed->faults, report); !s.is_ok()) return fail(kTool, s);
    if (placed->stopped) {
        report.skip_end_to_end("stopped at the first node that introduces error");
    } else if (Status s = judge_outputs(ref, model, tensors->start_states, opts.margin, report); !s.is_ok()) {
        return fail(kTool, s);
    }
    return finish(report, opts, model, "the config as placed on " + placed->backends + " against " + ref.name() + " alone");
}

// Two saved result files against each other: the config gives the nodes' order, ops (for their
// tolerances) and sources (for introduced / inherited); it is computed once on the CPU for the
// outputs' end-to-end tolerance, nothing else.
int run_diff(const ToolOptions& opts, config::Model& model, const Tolerances& tol) {
    auto reference = GgufReader::open(opts.diff[0]);
    if (!reference.is_ok()) return fail(kTool, reference.status());
    auto target = GgufReader::open(opts.diff[1]);
    if (!target.is_ok()) return fail(kTool, target.status());
    const std::string ref_name = saved_kv(*reference, "xbackend.backend") + " (" + opts.diff[0] + ")";
    const std::string target_name = saved_kv(*target, "xbackend.backend") + " (" + opts.diff[1] + ")";
    CompareReport report(ref_name, target_name, "saved");
    const GgufReader& t = *target;
    if (Status s = compare_with_saved(model.graph, *reference, [&](const Tensor& n) { return load_reference(t, n); },
                                      [&](const Tensor& n) { return t.find_tensor(n.name) != nullptr; }, tol,
                                      opts.stop_at_first, report);
        !s.is_ok()) {
        return fail(kTool, s);
    }
    if (report.compared() == 0) return fail(kTool, nothing_in_common(model, *reference));
    if (!report.first_divergent() || !opts.stop_at_first) {
        auto cpu = global_registry().init_by_name("CPU");
        if (!cpu.is_ok()) return fail(kTool, cpu.status());
        auto tensors = place_alone(model, **cpu);
        if (!tensors.is_ok()) return fail(kTool, tensors.status());
        if (Status s = (*cpu)->graph_compute(model.graph); !s.is_ok()) return fail(kTool, s);
        if (Status s = judge_outputs(**cpu, model, tensors->start_states, opts.margin, report); !s.is_ok()) return fail(kTool, s);
    }
    return finish(report, opts, model, target_name + " against " + ref_name + ", both saved (nothing computed)",
                  [&](const Tensor& n) -> Result<std::vector<float>> {
                      if (reference->find_tensor(n.name) == nullptr) return std::vector<float>{};  // not saved
                      return load_reference(*reference, n);
                  });
}

// One walk of the model's graph as its inputs stand (GraphComparison::step), judged into `report`:
// every node against its tolerance (LiveJudge), then the outputs end to end, the reference's own
// error estimated from the recurrent states `start` the walk began with.
Status compare_and_judge(const ToolOptions& opts, const config::Model& model, GraphComparison& comparison, Backend& ref,
                         Backend& target, Backend* truth, const Tolerances& tol, std::span<const LeafBytes> start,
                         ReferenceWriter* save, CompareReport& report) {
    if (truth != nullptr) report.set_truth_device(truth->name());
    LiveJudge judge(model.graph, tol,
                    {.target = target.name(), .stop_at_first = opts.stop_at_first, .isolated = opts.isolate, .save = save},
                    report);
    Progress progress("comparing node", model.graph.n_nodes());
    XB_RETURN_IF_ERROR(comparison.step([&](const NodeComparison& n) {
        progress.update(n.index);
        return judge(n);
    }));
    XB_RETURN_IF_ERROR(judge.status());
    if (opts.isolate) {
        report.skip_end_to_end("isolated: every node computed from the reference's inputs");
    } else if (judge.stopped()) {
        report.skip_end_to_end("stopped at the first node that introduces error");
    } else if (truth != nullptr) {
        // The reference's error is measured, not estimated: its distance from the truth.
        report.set_budget_basis("the reference's measured error against " + std::string(truth->name()));
        judge_end_to_end(model, judge.measured_budget(), opts.margin, report);
    } else {
        XB_RETURN_IF_ERROR(judge_outputs(ref, model, start, opts.margin, report));
    }
    return Status::ok();
}

std::string pair_text(const ToolOptions& opts, Backend& ref, Backend& target, Backend* truth) {
    return std::string(target.name()) + " (" + target.device().description() + ") against " + ref.name() +
           (truth != nullptr ? ", both against " + std::string(truth->name()) : "") +
           (opts.isolate ? ", each node from the reference's inputs" : "");
}

// The target against the reference, node by node (compare_graph_backend); with a truth, each side
// against it too.
int run_pair(const ToolOptions& opts, config::Model& model, Backend& ref, Backend& target, Backend* truth,
             const Tolerances& tol, const std::vector<ResolvedFault>& faults) {
    auto placed = place_alone(model, ref);
    if (!placed.is_ok()) return fail(kTool, placed.status());
    std::optional<ReferenceWriter> save;
    if (!opts.save_outputs.empty()) save.emplace(target.name(), model.name, model.seed);
    CompareReport report(ref.name(), target.name(), opts.isolate ? "isolated" : "propagated");
    GraphComparison comparison(ref, target, model.graph, {.skip_unsupported = true, .isolate = opts.isolate, .truth = truth});
    if (Status s = compare_and_judge(opts, model, comparison, ref, target, truth, tol, placed->start_states,
                                     save ? &*save : nullptr, report);
        !s.is_ok()) {
        return fail(kTool, s);
    }
    if (Status s = check_faults_injected(faults, report); !s.is_ok()) return fail(kTool, s);
    if (save) {
        if (Status s = save->write(opts.save_outputs); !s.is_ok()) return fail(kTool, s);
    }
    return finish(report, opts, model, pair_text(opts, ref, target, truth));
}

// --decode: the model's tokens decoded one at a time by a graph of one token (its batch moved one
// cell on each time), both sides keeping their own KV cache and recurrent states, every node
// compared at every token (the state after each token is the node that writes it). A line per
// token on stderr; the report is the first failing token's, else the last token's.
int run_decode(const ToolOptions& opts, config::Model& model, const std::vector<int32_t>& tokens, Backend& ref,
               Backend& target, Backend* truth, const Tolerances& tol, const std::vector<ResolvedFault>& faults) {
    auto placed = place_alone(model, ref);
    if (!placed.is_ok()) return fail(kTool, placed.status());
    GraphComparison comparison(ref, target, model.graph, {.skip_unsupported = true, .isolate = opts.isolate, .truth = truth});
    std::optional<CompareReport> report;
    size_t compared = 0;  // tokens compared
    for (size_t i = 0; i < tokens.size(); ++i) {
        const int32_t id = tokens[i];
        Status st = model.set_tokens(std::span<const int32_t>(&id, 1));
        if (st.is_ok()) st = model.move_batch(static_cast<int>(i));
        if (st.is_ok()) st = model.set_inputs(i == 0 ? config::RecurrentStates::Empty : config::RecurrentStates::Kept);
        auto start = snapshot_states(model);
        if (!start.is_ok()) st = start.status();
        if (!st.is_ok()) return fail(kTool, st);
        report.emplace(ref.name(), target.name(), opts.isolate ? "isolated" : "propagated");
        compared = i + 1;
        if (Status s = compare_and_judge(opts, model, comparison, ref, target, truth, tol, *start, nullptr, *report); !s.is_ok()) {
            return fail(kTool, s);
        }
        const bool failed = report->first_divergent().has_value() || report->end_to_end_failed();
        std::cerr << kTool << ": token " << i + 1 << " of " << tokens.size() << " (id " << id << ", position " << i
                  << "): " << report->compared() << " nodes compared, " << report->failed() << " out of tolerance"
                  << (report->end_to_end_failed() ? ", outputs beyond their end-to-end tolerance" : "") << '\n';
        if (failed) break;
    }
    if (Status s = check_faults_injected(faults, *report); !s.is_ok()) return fail(kTool, s);
    return finish(*report, opts, model, pair_text(opts, ref, target, truth) + ", decoding " + std::to_string(tokens.size()) +
                                            " tokens one at a time (this report: token " + std::to_string(compared) + ")");
}

// --kld: KL-divergence statistics of the target's logits against the reference's.
int run_kld(const ToolOptions& opts, const std::pair<std::string, std::string>& pair) {
    auto run = compare_logits(opts.common, pair.first, pair.second);
    if (!run.is_ok()) return fail(kTool, run.status());
    const report::KldStatistics& s = run->statistics;
    nlohmann::ordered_json document = {{"model", run->model}, {"base", pair.first}, {"target", pair.second}};
    document.update(report::kld_json(s));
    if (Status st = write_report(report::kld_table(s), document, opts.common); !st.is_ok()) return fail(kTool, st);
    char line[320];
    std::snprintf(line, sizeof line,
                  "%s: %s: %s against %s over %lld positions: mean KLD %.6f +/- %.6f, same top token %.2f%%, "
                  "PPL(Q)/PPL(base) %.5f +/- %.5f\n",
                  kTool, name_text(run->model).c_str(), pair.second.c_str(), pair.first.c_str(),
                  static_cast<long long>(s.positions), s.kld_mean.value, s.kld_mean.uncertainty, 100.0 * s.same_top.value,
                  s.ppl_ratio.value, s.ppl_ratio.uncertainty);
    std::cerr << line;
    return kExitOk;
}

int run(const ToolOptions& opts) {
    const CommonOptions& o = opts.common;
    if (Status s = apply_threads(o); !s.is_ok()) return fail(kTool, s);
    if (!opts.plot.empty()) {
        if (Status s = check_plot(opts.plot); !s.is_ok()) return fail(kTool, s);
    }
    Tolerances tol;
    for (const std::string& t : opts.tolerances) {
        if (Status s = tol.set(t); !s.is_ok()) return fail(kTool, s);
    }
    auto pair = pick_pair(opts);
    if (!pair.is_ok()) return fail(kTool, pair.status());
    if (Status s = check_truth(opts, *pair); !s.is_ok()) return fail(kTool, s);
    if (opts.kld) return run_kld(opts, *pair);
    auto spec = config::load_config(o.config);
    if (!spec.is_ok()) return fail(kTool, spec.status());
    auto build = build_options(o);
    if (!build.is_ok()) return fail(kTool, build.status());
    build->backends = {pair->first};  // the reference holds the weights; the target gets a copy
    std::vector<int32_t> sequence;    // --decode: the tokens, one at a time
    if (opts.decode) {
        const bool model_file = spec->model && spec->model->kind == config::ModelKind::Gguf;
        sequence = build->tokens.value_or(model_file ? spec->model->gguf.tokens : std::vector<int32_t>{});
        if (!model_file || sequence.empty()) {
            return fail(kTool, Status(StatusCode::InvalidArgument,
                                      "--decode steps through a llama.cpp model file's tokens: give them with --tokens (" +
                                          o.config + " has " + (model_file ? "random ids" : "no token input") + ")"));
        }
        // A graph of the first token over a cache of a cell per token; run_decode moves it on.
        build->tokens = std::vector<int32_t>{sequence.front()};
        build->kv_cells = std::max<int>(build->kv_cells.value_or(0), static_cast<int>(sequence.size()));
    }
    auto model = config::build_model(*spec, global_registry(), *build);
    if (!model.is_ok()) return fail(kTool, model.status());
    name_nodes(model->graph);
    if (!opts.diff.empty()) {
        if (!o.params.faults().empty()) {
            return fail(kTool, Status(StatusCode::InvalidArgument, "-P " + o.params.faults()[0].given +
                                                                       ": --diff computes nothing, so a fault would inject nothing"));
        }
        return run_diff(opts, *model, tol);
    }
    if (opts.placed) {  // its session resolves the faults against the placed graph
        auto ref = global_registry().init_by_name(pair->first);
        if (!ref.is_ok()) return fail(kTool, ref.status());
        return run_placed(opts, *model, **ref, tol);
    }
    // Before the backends are made: each copies its device's settings when it is.
    auto faults = o.params.apply_faults(global_registry(), model->graph);
    if (!faults.is_ok()) return fail(kTool, faults.status());
    const bool alone = !opts.load_reference.empty();
    std::vector<std::string> taking_part =
        alone ? std::vector<std::string>{pair->first} : std::vector<std::string>{pair->first, pair->second};
    if (!opts.truth.empty()) taking_part.push_back(opts.truth);
    const std::string what = alone ? "this run (" + pair->first + ")" : "this comparison (" + pair->first + " against " + pair->second + ")";
    if (Status s = check_fault_devices(*faults, taking_part, what); !s.is_ok()) return fail(kTool, s);
    auto ref = global_registry().init_by_name(pair->first);
    if (!ref.is_ok()) return fail(kTool, ref.status());
    if (alone) return run_against_file(opts, *model, **ref, tol, *faults);
    auto target = global_registry().init_by_name(pair->second);
    if (!target.is_ok()) return fail(kTool, Status(target.status().code(), target.status().message() +
                                                                           " (choose another with -b CPU,<device>)"));
    std::unique_ptr<Backend> truth;
    if (!opts.truth.empty()) {
        auto t = global_registry().init_by_name(opts.truth);
        if (!t.is_ok()) return fail(kTool, Status(t.status().code(), "--truth " + t.status().message()));
        truth = std::move(t).value();
    }
    if (opts.decode) return run_decode(opts, *model, sequence, **ref, **target, truth.get(), tol, *faults);
    return run_pair(opts, *model, **ref, **target, truth.get(), tol, *faults);
}

}  // namespace
}  // namespace xb::tools

int main(int argc, char** argv) {
    using namespace xb::tools;
    CLI::App app{"backend-compare: run a config on two backends node by node and compare every result against the\n"
                 "reference (NMSE, max abs error, cosine similarity, NaN/Inf) with per-op tolerances, and the graph's\n"
                 "outputs against an end-to-end tolerance (10 x the reference's own error there).", "backend-compare"};
    ToolOptions opts;
    opts.common.config = "configs/default.json";
    add_common_options(app, opts.common);
    add_outputs_option(app, opts.common);
    // Here -b names a pair, not a priority list as in the other tools.
    app.get_option("-b")->description(
        "REFERENCE,TARGET: the device whose results are the reference, then the one checked (default: CPU and the\n"
        "first GPU, else SIM0). With --load-reference or --placed, the one device to run. (Other tools take -b as a\n"
        "priority list.)");
    app.get_option("-P")->description(
        "NAME:KEY=VALUE device setting, repeatable, e.g. -P SIM0:unsupported=rope,get_rows. A simulated device's\n"
        "fault_node=N|NAME perturbs node N of the config's whole graph (or the node so named; several joined by '+')\n"
        "wherever it runs; fault_size=F (0 < F <= 1, default 0.5) scales its elements by 1+F and 1-F in turn, an\n"
        "NMSE of about F^2 that every tolerance sees (0.001 makes one as small as a quantized product's rounding).\n"
        "A fault on a device that takes no part, or on a node it does not compute, is an error");
    app.add_option("--tol", opts.tolerances,
                   "OP=NMSE tolerance override, repeatable (defaults: 1e-7; mul_mat, mul_mat_id, out_prod, flash_attn_ext 5e-4)");
    app.add_flag("--stop-at-first", opts.stop_at_first, "Stop at the first node that introduces error");
    app.add_flag("--isolate", opts.isolate,
                 "Compute each node on the target from the reference's inputs (as ggml's test-backend-ops does per op), so\n"
                 "that every node shows only the error it makes itself (the outputs are then not judged end to end).\n"
                 "Default: each backend computes from its own results; a node out of tolerance is computed again from the\n"
                 "reference's inputs and marked introduced (it computes differently: the comparison fails) or inherited\n"
                 "(it carries its inputs' difference)");
    app.add_option("--save-outputs", opts.save_outputs, "Save every node result of the target backend to FILE (GGUF)");
    app.add_option("--load-reference", opts.load_reference,
                   "Compare one backend's run (-b DEVICE, default CPU) against results saved with --save-outputs")
        ->excludes("--save-outputs")
        ->excludes("--isolate");
    app.add_option("--diff", opts.diff,
                   "REFERENCE.gguf TARGET.gguf: compare two runs saved with --save-outputs (the config gives the nodes'\n"
                   "order, ops and tolerances, and is computed once on the CPU for the outputs' end-to-end tolerance)")
        ->expected(2)
        ->excludes("--save-outputs")
        ->excludes("--isolate")
        ->excludes("--load-reference");
    app.add_flag("--placed", opts.placed,
                 "Check the config as it is placed (its backends, layer or row split and weights, through the scheduler,\n"
                 "read node by node) against -b DEVICE (default CPU) computing it alone")
        ->excludes("--isolate")
        ->excludes("--save-outputs")
        ->excludes("--load-reference")
        ->excludes("--diff");
    app.add_option("--e2e-margin", opts.margin,
                   "The outputs' end-to-end tolerance, as a multiple of the reference's own error there (default 10; raise\n"
                   "it for a target that computes in lower precision on purpose, e.g. CUDA's tf32=1)")
        ->check(CLI::Range(1.0, 1e12));
    app.add_option("--plot", opts.plot,
                   "FILE.png|svg: draw each node's NMSE (log scale, graph order, layers on the axis) against its tolerance\n"
                   "and end-to-end budget, introduced nodes marked (scripts/compare_plot.py; needs python3-matplotlib)");
    add_nonfinite_option(app, opts.nonfinite);
    app.add_flag("--kld", opts.kld,
                 "Compare the two devices' logits over the model's token sequence (--tokens) as llama-perplexity\n"
                 "--kl-divergence does, instead of node by node: perplexity of each (REFERENCE is the base, TARGET is Q)\n"
                 "and their ratio, KL divergence per position (mean, percentiles), the next token's probability change\n"
                 "(dp) and how often both pick the same top token")
        ->excludes("--load-reference")
        ->excludes("--diff")
        ->excludes("--placed")
        ->excludes("--isolate")
        ->excludes("--save-outputs");
    app.add_flag("--decode", opts.decode,
                 "Decode the model's tokens (--tokens or the config's) one at a time, as generation does: a graph of one\n"
                 "token moved through the cache, each device keeping its own KV cache and recurrent states, every node\n"
                 "compared at every token (the states after each token are the nodes that write them); a line per token,\n"
                 "and the report of the first token that fails, else of the last")
        ->excludes("--load-reference")
        ->excludes("--diff")
        ->excludes("--placed")
        ->excludes("--kld")
        ->excludes("--save-outputs");
    app.add_option("--truth", opts.truth,
                   "DEVICE (normally F64, the exact float64 device): computes every node too, and each node shows both\n"
                   "sides' error against it and which is closer; the outputs' end-to-end tolerance is then the margin times\n"
                   "the reference's measured error against it instead of the estimate");
    app.footer("Examples:\n"
               "  backend-compare -c configs/llama-decoder.json -b CPU,SIM0 -P SIM0:fault_node=11\n"
               "      a fault on node 11 (Vcur-0, a product): exits 1 naming #11 as the first divergent node\n"
               "  backend-compare -c configs/llama-decoder-split.json --map CUDA0=SIM0 --map CUDA1=SIM1 --placed \\\n"
               "      -P SIM1:fault_node=95 --plot verdict.png\n"
               "      the split as placed, a fault on node 95 (ffn_out-3, on SIM1): exits 1 naming it, and draws the verdict\n"
               "  backend-compare -c configs/llama-decoder.json -b CPU,SIM0 --truth F64\n"
               "      both devices against exact arithmetic (the F64 device), node by node, and which is closer\n"
               "  backend-compare -c hybrid.gguf -b CPU,SIM0 --tokens 1,17,255,42,3,200,99 --decode\n"
               "      seven tokens generated one after another, caches and recurrent states compared at each\n"
               "  backend-compare -c model.gguf -b F64,CPU --tokens 1,17,255,42,3,200,99 --kld\n"
               "      the CPU's next-token distributions against exact ones, as llama-perplexity --kl-divergence\n"
               "Exit codes: 0 every node and output within tolerance, 1 a node introduces error, an output is beyond its\n"
               "end-to-end tolerance or holds NaN or infinity (--nonfinite), 2 usage or config error.");
    return run_tool(app, argc, argv, opts.common, [&] { return run(opts); });
}
