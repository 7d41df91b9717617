// backend-compare: runs a config on two backends node by node and compares every result.
//
//   backend-compare -c configs/llama-decoder.json                 # CPU against the first GPU, else SIM0
//   backend-compare -b CPU,SIM0 -P SIM0:fault_node=12 --stop-at-first
#include <iostream>
#include <optional>

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
#include "report/metrics.hpp"
#include "sched/graph_copy.hpp"
#include "compare_report.hpp"
#include "reference_file.hpp"
#include "tolerances.hpp"

namespace xb::tools {
namespace {

constexpr const char* kTool = "backend-compare";

struct CompareOptions {
    CommonOptions common;
    std::vector<std::string> tolerances;
    bool stop_at_first = false;
    std::string save_outputs;    // GGUF file for the target's node results
    std::string load_reference;  // GGUF file to compare one backend's run against
};

// [reference, target]: -b when given, else the CPU against the first real GPU, else SIM0. With
// --load-reference only one backend runs (-b DEVICE, default CPU) and the target is "".
Result<std::pair<std::string, std::string>> pick_pair(const CompareOptions& opts) {
    const CommonOptions& o = opts.common;
    if (!opts.load_reference.empty()) {
        if (o.backends.size() > 1) {
            return Status(StatusCode::InvalidArgument, "--load-reference runs one backend: give -b DEVICE");
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

Result<report::ErrorMetrics> metrics_of(const Tensor& target, const Tensor& reference) {
    XB_ASSIGN_OR_RETURN(auto a, tensor_get_f32(target));
    XB_ASSIGN_OR_RETURN(auto b, tensor_get_f32(reference));
    return report::compare(a, b);
}

// The inputs of a divergent node, compared: did the error come in, or was it made here?
std::string source_errors(const Tensor& t1, const Tensor& t2) {
    std::string text;
    for (int j = 0; j < kMaxSrc; ++j) {
        if (t1.src[j] == nullptr || t2.src[j] == nullptr) continue;
        auto m = metrics_of(*t2.src[j], *t1.src[j]);
        if (!m.is_ok()) continue;
        char buf[160];
        std::snprintf(buf, sizeof buf, "\n  input %d '%s': nmse %.3g, max_abs %.3g", j, t1.src[j]->display_name().c_str(),
                      m->nmse, m->max_abs);
        text += buf;
    }
    return text.empty() ? "\n  (no inputs)" : text;
}

Status compare_nodes(Backend& ref, Backend& target, const Graph& graph, const Tolerances& tol, bool stop_at_first,
                     ReferenceWriter* save, CompareReport& out) {
    XB_ASSIGN_OR_RETURN(GraphCopy copy, graph_copy(target, graph));
    Progress progress("comparing node", graph.n_nodes());
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
        if (out.add(i, t1, m, tol.for_node(t1))) continue;
        out.set_first_divergent(i, source_errors(t1, t2));
        if (stop_at_first) break;
    }
    return Status::ok();
}

// Computes the graph on `backend` and compares each node with its saved values.
Status compare_with_file(Backend& backend, const Graph& graph, const GgufReader& file, const Tolerances& tol,
                         bool stop_at_first, CompareReport& out) {
    XB_RETURN_IF_ERROR(backend.graph_compute(graph));
    for (int i = 0; i < graph.n_nodes(); ++i) {
        const Tensor& node = *graph.node(i);
        if (op_is_view(node.op)) continue;
        if (file.find_tensor(node.name) == nullptr) {
            out.add_skip(i, node, "not in " + file.path());
            continue;
        }
        XB_ASSIGN_OR_RETURN(std::vector<float> want, load_reference(file, node));
        XB_ASSIGN_OR_RETURN(std::vector<float> got, tensor_get_f32(node));
        if (out.add(i, node, report::compare(got, want), tol.for_node(node))) continue;
        out.set_first_divergent(i, {});
        if (stop_at_first) break;
    }
    return Status::ok();
}

// Unnamed nodes get "node<i>", so that the report and name-based settings can refer to them.
void name_nodes(Graph& graph) {
    for (int i = 0; i < graph.n_nodes(); ++i) {
        if (graph.node(i)->name.empty()) graph.node(i)->name = "node" + std::to_string(i);
    }
}

// The backends compute one node at a time, so a device's fault_node=N (an index into the graph it
// is given) is re-expressed as the name of node N of the whole graph.
Status fault_indices_to_names(const CommonOptions& o, const Graph& graph) {
    for (const std::string& p : o.device_params) {
        const size_t colon = p.find(':');
        const size_t key = p.find("fault_node=", colon);
        if (colon == std::string::npos || key == std::string::npos) continue;
        const std::string value = p.substr(key + 11, p.find(',', key) - key - 11);
        if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) continue;
        const int index = std::stoi(value);
        if (index >= graph.n_nodes()) {
            return Status(StatusCode::InvalidArgument, "-P " + p + ": the graph has " + std::to_string(graph.n_nodes()) + " nodes");
        }
        Device* d = global_registry().dev_by_name(p.substr(0, colon));
        XB_RETURN_IF_ERROR(d->configure("fault_node=" + graph.node(index)->name));
    }
    return Status::ok();
}

// Writes the report, prints the summary line (and the first divergent node) on stderr, and
// returns the exit code: 1 when a node is out of tolerance.
int finish(const CompareReport& report, const CompareOptions& opts, const config::Model& model,
           const std::string& what) {
    if (Status s = write_report(report.table(), report.json(), opts.common); !s.is_ok()) return fail(kTool, s);
    std::cerr << kTool << ": " << model.name << ": " << what << ": " << report.compared() << " nodes compared, "
              << report.skipped() << " skipped, " << report.failed() << " out of tolerance\n";
    if (!report.first_divergent()) return kExitOk;
    const Tensor& n = *model.graph.node(*report.first_divergent());
    std::cerr << "first divergent node: #" << *report.first_divergent() << " '" << n.display_name() << "' ("
              << n.op_label() << ")" << report.first_divergent_detail() << '\n';
    return kExitCheckFailed;
}

int run_against_file(const CompareOptions& opts, config::Model& model, Backend& backend, const Tolerances& tol) {
    auto file = GgufReader::open(opts.load_reference);
    if (!file.is_ok()) return fail(kTool, file.status());
    Backend* placed[] = {&backend};
    if (Status s = config::place_and_init(model, placed); !s.is_ok()) return fail(kTool, s);
    auto work = alloc_ctx_tensors(*model.ctx, backend);
    if (!work.is_ok()) return fail(kTool, work.status());
    if (Status s = model.set_inputs(); !s.is_ok()) return fail(kTool, s);
    const GgufValue* saved_by = file->find_kv("xbackend.backend");
    const std::string source = saved_by && saved_by->as_string() ? *saved_by->as_string() : std::string("?");
    CompareReport report(backend.name(), source + " (" + opts.load_reference + ")");
    if (Status s = compare_with_file(backend, model.graph, *file, tol, opts.stop_at_first, report); !s.is_ok()) {
        return fail(kTool, s);
    }
    if (report.compared() == 0) {
        // Nothing in common: the file holds another config's results, and passing would hide it.
        const GgufValue* saved_for = file->find_kv("xbackend.config");
        const std::string config = saved_for && saved_for->as_string() ? *saved_for->as_string() : std::string("?");
        return fail(kTool, Status(StatusCode::InvalidArgument, opts.load_reference + ": none of the nodes of '" + model.name +
                                                                   "' is in the file (it holds the results of '" + config + "')"));
    }
    return finish(report, opts, model,
                  std::string(backend.name()) + " against " + source + " results in " + opts.load_reference);
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
    if (Status s = fault_indices_to_names(o, model->graph); !s.is_ok()) return fail(kTool, s);
    auto ref = global_registry().init_by_name(pair->first);
    if (!ref.is_ok()) return fail(kTool, ref.status());
    if (!opts.load_reference.empty()) return run_against_file(opts, *model, **ref, tol);
    auto target = global_registry().init_by_name(pair->second);
    if (!target.is_ok()) return fail(kTool, Status(target.status().code(), target.status().message() +
                                                                           " (choose another with -b CPU,<device>)"));
    Backend* placed[] = {ref->get()};
    if (Status s = config::place_and_init(*model, placed); !s.is_ok()) return fail(kTool, s);
    auto work = alloc_ctx_tensors(*model->ctx, **ref);
    if (!work.is_ok()) return fail(kTool, work.status());
    if (Status s = model->set_inputs(); !s.is_ok()) return fail(kTool, s);

    std::optional<ReferenceWriter> save;
    if (!opts.save_outputs.empty()) save.emplace((*target)->name(), model->name, model->seed);
    CompareReport report((*ref)->name(), (*target)->name());
    if (Status s = compare_nodes(**ref, **target, model->graph, tol, opts.stop_at_first, save ? &*save : nullptr, report);
        !s.is_ok()) {
        return fail(kTool, s);
    }
    if (save) {
        if (Status s = save->write(opts.save_outputs); !s.is_ok()) return fail(kTool, s);
    }
    return finish(report, opts, *model,
                  std::string((*target)->name()) + " (" + (*target)->device().description() + ") against " +
                      (*ref)->name());
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
    app.add_option("--tol", opts.tolerances,
                   "OP=NMSE tolerance override, repeatable (defaults: 1e-7; mul_mat, out_prod, flash_attn_ext 5e-4)");
    app.add_flag("--stop-at-first", opts.stop_at_first, "Stop at the first node out of tolerance");
    app.add_option("--save-outputs", opts.save_outputs, "Save every node result of the target backend to FILE (GGUF)");
    app.add_option("--load-reference", opts.load_reference,
                   "Compare one backend's run (-b DEVICE, default CPU) against results saved with --save-outputs")
        ->excludes("--save-outputs");
    app.footer("Example: backend-compare -c configs/llama-decoder.json -b CPU,SIM0 -P SIM0:fault_node=12\n"
               "Exit codes: 0 all within tolerance, 1 a node out of tolerance, 2 usage or config error.");
    return run_tool(app, argc, argv, opts.common, [&] { return run(opts); });
}
