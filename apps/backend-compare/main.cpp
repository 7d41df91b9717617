// backend-compare: runs a config on two backends node by node and compares every result.
//
//   backend-compare -c configs/llama-decoder.json                 # CPU against the first GPU, else SIM0
//   backend-compare -b CPU,SIM0 -P SIM0:fault_node=12 --stop-at-first
#include <functional>
#include <iostream>
#include <optional>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "cli.hpp"
#include "progress.hpp"
#include "session.hpp"
#include "config/config_error.hpp"
#include "config/config_parse.hpp"
#include "config/model.hpp"
#include "config/placement.hpp"
#include "core/message_text.hpp"
#include "report/metrics.hpp"
#include "sched/graph_copy.hpp"
#include "compare_report.hpp"
#include "node_checks.hpp"
#include "nonfinite.hpp"
#include "placed_compare.hpp"
#include "reference_file.hpp"
#include "tolerances.hpp"

namespace xb::tools {
namespace {

constexpr const char* kTool = "backend-compare";

struct CompareOptions {
    CommonOptions common;
    std::vector<std::string> tolerances;
    bool stop_at_first = false;
    bool isolate = false;        // the target computes each node from the reference's inputs
    std::string save_outputs;    // GGUF file for the target's node results
    std::string load_reference;  // GGUF file to compare one backend's run against
    std::vector<std::string> diff;  // REFERENCE.gguf TARGET.gguf: two saved runs, nothing computed
    bool placed = false;            // the target is the config as placed, through the scheduler
    NonFinitePolicy nonfinite = NonFinitePolicy::Fail;  // outputs holding NaN or infinity on both sides
};

// [reference, target]: -b when given, else the CPU against the first real GPU, else SIM0. With
// --load-reference only one backend runs (-b DEVICE, default CPU) and the target is "".
Result<std::pair<std::string, std::string>> pick_pair(const CompareOptions& opts) {
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
        if (reg.dev(i).type() == DeviceType::GPU && !reg.dev(i).is_simulated()) return std::pair{std::string("CPU"), std::string(reg.dev(i).name())};
    }
    return std::pair{std::string("CPU"), std::string("SIM0")};
}

Status compare_nodes(Backend& ref, Backend& target, const Graph& graph, const Tolerances& tol, const CompareOptions& opts,
                     ReferenceWriter* save, CompareReport& out) {
    XB_ASSIGN_OR_RETURN(GraphCopy copy, graph_copy(target, graph));
    Progress progress("comparing node", graph.n_nodes());
    IsolatedRecheck recheck(target, graph);
    for (int i = 0; i < graph.n_nodes(); ++i) {
        progress.update(i);
        Tensor& t1 = *graph.node(i);
        Tensor& t2 = *copy.graph.node(i);
        XB_RETURN_IF_ERROR(ref.graph_compute(graph.view(i, i + 1)));
        if (op_is_view(t1.op)) continue;
        const bool supported = target.supports_op(t2);
        if (supported) {
            XB_RETURN_IF_ERROR(target.graph_compute(copy.graph.view(i, i + 1)));
        } else {
            // Carry the reference's result over so that later nodes still compare like with like.
            XB_RETURN_IF_ERROR(tensor_copy(t1, t2));
            out.add_skip(i, t1, std::string(target.name()) + " does not support " + t1.op_label());
            continue;
        }
        if (save != nullptr) XB_RETURN_IF_ERROR(save->add(t2));
        XB_ASSIGN_OR_RETURN(report::ErrorMetrics m, metrics_of(t2, t1));
        const double tolerance = tol.for_node(t1);
        if (out.add(i, t1, m, tolerance)) continue;
        // Isolated, every node computes from the reference's inputs already; propagated, the node
        // is computed once more that way to tell whether it made the error.
        Origin origin = Origin::Introduced;
        if (!opts.isolate) {
            XB_ASSIGN_OR_RETURN(report::ErrorMetrics alone, recheck.recompute(i));
            if (within_tolerance(alone, tolerance)) origin = Origin::Inherited;
        }
        out.explain(origin, input_errors(t1, t2));
        // Isolated: the reference's result replaces the target's, so the next nodes read exactly
        // the reference's inputs and each node shows only its own error.
        if (opts.isolate) XB_RETURN_IF_ERROR(tensor_copy(t1, t2));
        if (origin == Origin::Introduced && opts.stop_at_first) break;
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
        const Origin origin = divergence.origin_from_sources(node, m, tolerance);
        out.explain(origin, std::move(inputs));
        if (origin == Origin::Introduced && stop_at_first) break;
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

// Unnamed nodes get "node<i>", so that the report and name-based settings can refer to them.
void name_nodes(Graph& graph) {
    for (int i = 0; i < graph.n_nodes(); ++i) {
        if (graph.node(i)->name.empty()) graph.node(i)->name = "node" + std::to_string(i);
    }
}

// One item of -P DEVICE:fault_node=...: node N of the whole graph, or the node named so. It must be
// computed: an index past the end, an unknown name or a view would inject nothing and let the
// comparison pass.
Result<const Tensor*> fault_node_of(const std::string& param, const std::string& item, const Graph& graph) {
    int index = -1;
    if (item.find_first_not_of("0123456789") == std::string::npos) {
        if (item.size() > 9 || std::stoi(item) >= graph.n_nodes()) {
            return Status(StatusCode::InvalidArgument,
                          "-P " + param + ": the graph has " + std::to_string(graph.n_nodes()) + " nodes");
        }
        index = std::stoi(item);
    } else {
        std::vector<std::string> names;
        for (int i = 0; i < graph.n_nodes(); ++i) {
            if (graph.node(i)->name == item) index = i;
            if (!op_is_view(graph.node(i)->op)) names.push_back(graph.node(i)->name);
        }
        if (index < 0) {
            return Status(StatusCode::InvalidArgument,
                          "-P " + param + ": " + config::unknown_name("node", item, names) + " in the graph");
        }
    }
    const Tensor* node = graph.node(index);
    if (op_is_view(node->op)) {
        return Status(StatusCode::InvalidArgument, "-P " + param + ": node #" + std::to_string(index) + " '" +
                                                       node->display_name() + "' is a view (" + node->op_label() +
                                                       "), which no backend computes; choose a computed node");
    }
    return node;
}

// The backends compute one node at a time, so a device's fault_node=N (an index into the graph it
// is given) is re-expressed as the name of node N of the whole graph, for each of the nodes
// joined by '+'.
Status resolve_fault_nodes(const CommonOptions& o, const Graph& graph) {
    for (const std::string& p : o.device_params) {
        const size_t colon = p.find(':');
        const size_t key = p.find("fault_node=", colon);
        if (colon == std::string::npos || key == std::string::npos) continue;
        const std::string value = p.substr(key + 11, p.find(',', key) - key - 11);
        if (value.empty() || value == "none") continue;
        std::string names;
        for (const std::string& item : split_on(value, '+')) {
            if (item.empty()) continue;
            XB_ASSIGN_OR_RETURN(const Tensor* node, fault_node_of(p, item, graph));
            names += (names.empty() ? "" : "+") + node->name;
        }
        Device* d = global_registry().dev_by_name(p.substr(0, colon));
        XB_RETURN_IF_ERROR(d->configure("fault_node=" + names));
    }
    return Status::ok();
}

// Writes the report, prints the summary line (and the first divergent node) on stderr, and
// returns the exit code: 1 when a node introduces error (nodes that only carry their inputs'
// differences are reported as inherited and do not fail the comparison), or when an output holds
// NaN or infinity (read with `reference`, default as the model holds them) under --nonfinite fail.
int finish(const CompareReport& report, const CompareOptions& opts, const config::Model& model,
           const std::string& what, const config::TensorValues& reference = {}) {
    if (Status s = write_report(report.table(), report.json(), opts.common); !s.is_ok()) return fail(kTool, s);
    std::cerr << kTool << ": " << name_text(model.name) << ": " << what << ": " << report.compared() << " nodes compared, "
              << report.skipped() << " skipped, " << report.failed() << " out of tolerance";
    if (report.failed() > 0) std::cerr << " (" << report.introduced() << " introduced, " << report.inherited() << " inherited)";
    std::cerr << '\n';
    // With every node within tolerance, the target holds the same NaN and infinities as the reference.
    const int nonfinite = judge_nonfinite(kTool, model, opts.nonfinite,
                                          report.failed() == 0 ? "on both sides of the comparison, which counts them as equal"
                                                               : "on the reference side of the comparison",
                                          reference);
    if (!report.first_divergent()) {
        if (report.inherited() > 0) {
            std::cerr << kTool << ": no node introduces error: the nodes out of tolerance compute within it from the "
                         "same inputs, and carry differences of earlier nodes within their own tolerance (e.g. "
                         "products of quantized weights)\n";
        }
        return nonfinite;
    }
    const Tensor& n = *model.graph.node(*report.first_divergent());
    std::cerr << "first divergent node: #" << *report.first_divergent() << " '" << n.display_name() << "' ("
              << n.op_label() << ")" << report.first_divergent_detail() << '\n';
    return kExitCheckFailed;
}

// Puts the model on `backend` alone: its weights, every other tensor in memory of its own (so that
// every node's result is kept after a compute), and the input values. The buffer holds the tensors.
Result<std::unique_ptr<MultiBuffer>> place_alone(config::Model& model, Backend& backend) {
    Backend* placed[] = {&backend};
    XB_RETURN_IF_ERROR(config::place_and_init(model, placed));
    XB_ASSIGN_OR_RETURN(std::unique_ptr<MultiBuffer> tensors, alloc_ctx_tensors(*model.ctx, backend));
    XB_RETURN_IF_ERROR(model.set_inputs());
    return tensors;
}

int run_against_file(const CompareOptions& opts, config::Model& model, Backend& backend, const Tolerances& tol) {
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
    return finish(report, opts, model,
                  std::string(backend.name()) + " against " + source + " results in " + opts.load_reference);
}

// The config as placed (through the scheduler) against `ref` computing it alone.
int run_placed(const CompareOptions& opts, config::Model& model, Backend& ref, const Tolerances& tol) {
    auto tensors = place_alone(model, ref);
    if (!tensors.is_ok()) return fail(kTool, tensors.status());
    if (Status s = ref.graph_compute(model.graph); !s.is_ok()) return fail(kTool, s);
    CompareReport report(ref.name(), "placed", "placed");
    auto target = compare_placed(opts.common, model, tol, opts.stop_at_first, report);
    if (!target.is_ok()) return fail(kTool, target.status());
    report.set_target("placed on " + *target);
    return finish(report, opts, model, "the config as placed on " + *target + " against " + ref.name() + " alone");
}

// Two saved result files against each other, nothing computed: the config gives the nodes' order,
// ops (for their tolerances) and sources (for introduced / inherited).
int run_diff(const CompareOptions& opts, const config::Model& model, const Tolerances& tol) {
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
    return finish(report, opts, model, target_name + " against " + ref_name + ", both saved (nothing computed)",
                  [&](const Tensor& n) -> Result<std::vector<float>> {
                      if (reference->find_tensor(n.name) == nullptr) return std::vector<float>{};  // not saved
                      return load_reference(*reference, n);
                  });
}

int run(const CompareOptions& opts) {
    const CommonOptions& o = opts.common;
    if (Status s = apply_device_params(o); !s.is_ok()) return fail(kTool, s);
    Tolerances tol;
    for (const std::string& t : opts.tolerances) {
        if (Status s = tol.set(t); !s.is_ok()) return fail(kTool, s);
    }
    auto pair = pick_pair(opts);
    if (!pair.is_ok()) return fail(kTool, pair.status());
    auto spec = config::load_config(o.config);
    if (!spec.is_ok()) return fail(kTool, spec.status());
    auto build = build_options(o);
    if (!build.is_ok()) return fail(kTool, build.status());
    build->backends = {pair->first};  // the reference holds the weights; the target gets a copy
    auto model = config::build_model(*spec, global_registry(), *build);
    if (!model.is_ok()) return fail(kTool, model.status());
    name_nodes(model->graph);
    if (Status s = resolve_fault_nodes(o, model->graph); !s.is_ok()) return fail(kTool, s);
    if (!opts.diff.empty()) return run_diff(opts, *model, tol);
    auto ref = global_registry().init_by_name(pair->first);
    if (!ref.is_ok()) return fail(kTool, ref.status());
    if (!opts.load_reference.empty()) return run_against_file(opts, *model, **ref, tol);
    if (opts.placed) return run_placed(opts, *model, **ref, tol);
    auto target = global_registry().init_by_name(pair->second);
    if (!target.is_ok()) return fail(kTool, Status(target.status().code(), target.status().message() +
                                                                           " (choose another with -b CPU,<device>)"));
    auto tensors = place_alone(*model, **ref);
    if (!tensors.is_ok()) return fail(kTool, tensors.status());

    std::optional<ReferenceWriter> save;
    if (!opts.save_outputs.empty()) save.emplace((*target)->name(), model->name, model->seed);
    CompareReport report((*ref)->name(), (*target)->name(), opts.isolate ? "isolated" : "propagated");
    if (Status s = compare_nodes(**ref, **target, model->graph, tol, opts, save ? &*save : nullptr, report);
        !s.is_ok()) {
        return fail(kTool, s);
    }
    if (save) {
        if (Status s = save->write(opts.save_outputs); !s.is_ok()) return fail(kTool, s);
    }
    return finish(report, opts, *model,
                  std::string((*target)->name()) + " (" + (*target)->device().description() + ") against " +
                      (*ref)->name() + (opts.isolate ? ", each node from the reference's inputs" : ""));
}

}  // namespace
}  // namespace xb::tools

int main(int argc, char** argv) {
    using namespace xb::tools;
    CLI::App app{"backend-compare: run a config on two backends node by node and compare every result against the\n"
                 "reference (NMSE, max abs error, cosine similarity, NaN/Inf) with per-op tolerances.", "backend-compare"};
    CompareOptions opts;
    opts.common.config = "configs/default.json";
    add_common_options(app, opts.common);
    // Here -b names a pair, not a priority list as in the other tools.
    app.get_option("-b")->description(
        "REFERENCE,TARGET: the device whose results are the reference, then the one checked (default: CPU and the\n"
        "first GPU, else SIM0). With --load-reference or --placed, the one device to run. (Other tools take -b as a\n"
        "priority list.)");
    app.add_option("--tol", opts.tolerances,
                   "OP=NMSE tolerance override, repeatable (defaults: 1e-7; mul_mat, out_prod, flash_attn_ext 5e-4)");
    app.add_flag("--stop-at-first", opts.stop_at_first, "Stop at the first node that introduces error");
    app.add_flag("--isolate", opts.isolate,
                 "Compute each node on the target from the reference's inputs (as ggml's test-backend-ops does per op), so\n"
                 "that every node shows only the error it makes itself. Default: each backend computes from its own\n"
                 "results; a node out of tolerance is computed again from the reference's inputs and marked introduced\n"
                 "(it computes differently: the comparison fails) or inherited (it carries its inputs' difference)");
    app.add_option("--save-outputs", opts.save_outputs, "Save every node result of the target backend to FILE (GGUF)");
    app.add_option("--load-reference", opts.load_reference,
                   "Compare one backend's run (-b DEVICE, default CPU) against results saved with --save-outputs")
        ->excludes("--save-outputs")
        ->excludes("--isolate");
    app.add_option("--diff", opts.diff,
                   "REFERENCE.gguf TARGET.gguf: compare two runs saved with --save-outputs, computing nothing (the config\n"
                   "gives the nodes' order, ops and tolerances)")
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
    add_nonfinite_option(app, opts.nonfinite);
    app.footer("Example: backend-compare -c configs/llama-decoder.json -b CPU,SIM0 -P SIM0:fault_node=12\n"
               "         backend-compare -c configs/llama-decoder-split.json --map CUDA0=SIM0 --map CUDA1=SIM1 --placed\n"
               "Exit codes: 0 all within tolerance, 1 a node out of tolerance or an output holding NaN or infinity\n"
               "(--nonfinite), 2 usage or config error.");
    return run_tool(app, argc, argv, opts.common, [&] { return run(opts); });
}
