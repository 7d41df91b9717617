// build_model: explicit graphs op by op, then (for every kind of graph) the graph itself, the
// lists of inputs, outputs and weights, and the placement.
#include "config/model.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "backend/tensor_io.hpp"
#include "config/config_error.hpp"
#include "config/init.hpp"
#include "config/model_internal.hpp"
#include "config/op_table.hpp"
#include "core/message_text.hpp"

namespace xb::config {

std::string ModelPlacement::device_of(const Tensor& t) const {
    for (const WeightPlacement& w : weights) {
        if (w.tensor == &t) return w.device;
    }
    return "";
}

Tensor* Model::find(std::string_view tensor_name) const {
    auto it = by_name.find(std::string(tensor_name));
    return it == by_name.end() ? nullptr : it->second;
}

Status Model::set_inputs(RecurrentStates kept) {
    for (auto& [t, bytes] : input_values) {
        const Status s = tensor_set(*t, bytes.data(), 0, bytes.size());
        if (!s.is_ok()) return Status(s.code(), source + ": input " + quoted_name(t->name) + ": " + s.message());
    }
    if (kept == RecurrentStates::Kept) return Status::ok();
    for (Tensor* t : states) {
        const Status s = tensor_memset(*t, 0, 0, t->nbytes());
        if (!s.is_ok()) return Status(s.code(), source + ": state " + quoted_name(t->name) + ": " + s.message());
    }
    return Status::ok();
}

Status Model::move_batch(int first) {
    if (cache_place.n_cells == 0) {
        return Status(StatusCode::InvalidArgument, source + ": the graph has no KV cache to move its batch in");
    }
    if (first < 0 || first + n_tokens > cache_place.n_cells) {
        return Status(StatusCode::InvalidArgument, source + ": a batch of " + std::to_string(n_tokens) + " at position " +
                                                       std::to_string(first) + " runs past the cache's " +
                                                       std::to_string(cache_place.n_cells) + " cells");
    }
    InitFiles no_files;
    for (Tensor* t : cache_place.inputs) {
        auto init = std::find_if(inits.begin(), inits.end(), [t](const TensorInit& i) { return i.tensor == t; });
        std::vector<std::byte>* values = input_bytes(t);
        if (init == inits.end() || values == nullptr) {
            return Status(StatusCode::Internal, source + ": input " + quoted_name(t->name) + " has no values to move");
        }
        if (init->init.kind == InitKind::Arange) init->init.start = first;
        if (init->init.kind == InitKind::CausalMask) init->init.filled = first + n_tokens;
        XB_ASSIGN_OR_RETURN(*values, init_values(*t, init->init, 0, no_files, source));
    }
    cache_place.first = first;
    return Status::ok();
}

Status Model::set_tokens(std::span<const int32_t> ids) {
    std::vector<std::byte>* values = cache_place.tokens != nullptr ? input_bytes(cache_place.tokens) : nullptr;
    if (values == nullptr) {
        return Status(StatusCode::InvalidArgument, source + ": the graph has no token input");
    }
    if (static_cast<int64_t>(ids.size()) != n_tokens) {
        return Status(StatusCode::InvalidArgument, source + ": " + std::to_string(ids.size()) + " token ids for a batch of " +
                                                       std::to_string(n_tokens));
    }
    values->resize(ids.size_bytes());
    std::memcpy(values->data(), ids.data(), ids.size_bytes());
    return Status::ok();
}

std::vector<std::byte>* Model::input_bytes(const Tensor* t) {
    for (auto& [input, bytes] : input_values) {
        if (input == t) return &bytes;
    }
    return nullptr;
}

double graph_matmul_flops(const Graph& graph) {
    double flops = 0;
    for (const Tensor* t : graph.nodes()) {
        if (t->op == Op::MulMat) {
            const Tensor& a = *t->src[0];
            flops += 2.0 * static_cast<double>(a.ne[0]) * static_cast<double>(t->nelements());
        } else if (t->op == Op::FlashAttnExt) {
            const Tensor& q = *t->src[0];
            const Tensor& k = *t->src[1];
            // q k^T and the weighted sum of v, per query, head and key.
            flops += 4.0 * static_cast<double>(q.ne[0]) * static_cast<double>(q.ne[1]) * static_cast<double>(q.ne[2]) *
                     static_cast<double>(q.ne[3]) * static_cast<double>(k.ne[1]);
        }
    }
    return flops;
}

namespace detail {

std::string shape_text(const std::array<int64_t, kMaxDims>& ne) {
    int n = 1;
    for (int i = 1; i < kMaxDims; ++i) {
        if (ne[static_cast<size_t>(i)] != 1) n = i + 1;
    }
    std::string s = "[";
    for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(ne[static_cast<size_t>(i)]);
    return s + "]";
}

namespace {

std::array<int64_t, kMaxDims> padded(const std::vector<int64_t>& shape) {
    std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};
    for (size_t i = 0; i < shape.size() && i < ne.size(); ++i) ne[i] = shape[i];
    return ne;
}

InitSpec default_leaf_init(const ConfigSpec& spec, const TensorSpec& t) {
    if (t.init) return *t.init;
    if (t.role == Role::Weight && spec.default_init) return *spec.default_init;
    InitSpec init;
    init.kind = t.role == Role::Weight ? InitKind::Uniform : InitKind::Normal;  // uniform [-1, 1) / normal(0, 1)
    init.path = t.path;
    return init;
}

// A declared output/intermediate must match what its op computes.
Status check_declared(const ConfigSpec& spec, const TensorSpec& d, const OpSpec& op, const Tensor& r) {
    if (d.shape && padded(*d.shape) != r.ne) {
        return config_error(spec.source, child_path(d.path, "shape"),
                            "op " + quoted_name(op.name) + " (" + op.path + ") computes shape " + shape_text(r.ne) + ", the config declares " +
                                shape_text(padded(*d.shape)));
    }
    if (d.type && *d.type != r.type) {
        return config_error(spec.source, child_path(d.path, "type"),
                            "op " + quoted_name(op.name) + " (" + op.path + ") computes " + dtype_name(r.type) + ", the config declares " +
                                dtype_name(*d.type));
    }
    return Status::ok();
}

}  // namespace

Result<BuiltGraph> build_explicit_graph(const ConfigSpec& spec, Context& ctx) {
    BuiltGraph b;
    std::map<std::string, Tensor*, std::less<>> names;
    for (const TensorSpec& t : spec.tensors) {
        if (t.role != Role::Weight && t.role != Role::Input) continue;
        const std::vector<int64_t>& shape = *t.shape;
        Tensor* x = ctx.new_tensor(t.type.value_or(spec.default_type), std::span<const int64_t>(shape.data(), shape.size()));
        x->name = t.name;
        if (t.role == Role::Input) x->set_input();
        names.emplace(t.name, x);
        b.leaves.push_back(Leaf{x, t.role, default_leaf_init(spec, t), -1, WeightGroup::Other});
    }
    for (const OpSpec& op : spec.ops) {
        const OpDesc& desc = *find_op_desc(op.op);  // the parser checked the name
        std::vector<Tensor*> args;
        for (const OpArg& a : op.args) args.push_back(a.name.empty() ? nullptr : names.at(a.name));
        args.resize(desc.args.size(), nullptr);  // optional arguments left out
        Tensor* r = desc.build(ctx, args, OpParamReader(op.params));
        if (!ctx.ok()) return config_error(spec.source, op.path, "op " + quoted_name(op.name) + ": " + ctx.status().message());
        r->name = op.name;
        names.emplace(op.name, r);
        b.results.emplace_back(op.name, r);
        b.op_paths.emplace_back(op.name, op.path);
        const TensorSpec* declared = spec.find_tensor(op.name);
        if (declared != nullptr) XB_RETURN_IF_ERROR(check_declared(spec, *declared, op, *r));
        if (op.output || (declared != nullptr && declared->role == Role::Output)) b.outputs.push_back(r);
    }
    if (b.outputs.empty()) b.outputs.push_back(b.results.back().second);  // the last op, when none is marked
    for (Tensor* o : b.outputs) o->set_output();
    b.graph_outputs = b.outputs;
    if (const std::optional<double> n = spec.param("n_tokens")) b.n_tokens = static_cast<int64_t>(*n);
    return b;
}

}  // namespace detail

Result<Model> build_model(const ConfigSpec& spec, const Registry& registry, const BuildOptions& options) {
    Model m;
    m.name = spec.name;
    m.source = spec.source;
    m.seed = options.seed.value_or(spec.seed);
    m.ctx = std::make_unique<Context>();
    const bool model_file = spec.model && spec.model->kind == ModelKind::Gguf;
    if (options.tokens && !model_file) {
        return config_error(spec.source, "/graph", "--tokens gives a llama.cpp model file (gguf) its batch; this config's "
                                                   "graph makes its own inputs");
    }
    if (options.kv_cells && !model_file) {
        return config_error(spec.source, "/graph", "--kv-cells pads a llama.cpp model file's (gguf) cache; this config's "
                                                   "graph has no such cache");
    }
    if (model_file) m.tokens = options.tokens.value_or(spec.model->gguf.tokens);
    XB_ASSIGN_OR_RETURN(detail::BuiltGraph built,
                        spec.model ? detail::build_model_builder(spec, options, *m.ctx) : detail::build_explicit_graph(spec, *m.ctx));
    Result<Graph> graph = Graph::build(built.graph_outputs);
    if (!graph.is_ok()) return config_error(graph.status().code(), spec.source, "/graph", graph.status().message());
    m.graph = std::move(graph).value();
    m.outputs = built.outputs;
    m.states = built.states;
    m.cache_place = built.cache_place;
    m.n_tokens = built.n_tokens;
    m.n_layers = built.n_layers;
    m.file_type = built.file_type;
    m.matmul_flops = graph_matmul_flops(m.graph);
    // Tensors the graph writes through views (set_rows into a cache) are used though no node has
    // them as a source.
    std::set<const Tensor*> view_roots;
    for (const Tensor* n : m.graph.nodes()) {
        if (n->is_view()) view_roots.insert(n->view_src);
    }
    for (const detail::Leaf& leaf : built.leaves) {
        Tensor* t = leaf.tensor;
        m.by_name.emplace(t->name, t);
        if (!m.graph.contains(t) && !view_roots.count(t)) {
            m.notes.push_back(std::string(role_name(leaf.role)) + " " + quoted_name(t->name) + " is not used by the graph's outputs");
            continue;
        }
        (leaf.role == Role::Weight ? m.weights : m.inputs).push_back(t);
        m.inits.push_back({t, leaf.init});
    }
    for (const auto& [name, t] : built.results) {
        m.by_name.emplace(name, t);
        if (!m.graph.contains(t)) {
            std::string path;
            for (const auto& [op, p] : built.op_paths) path = op == name ? p : path;
            m.notes.push_back("op " + quoted_name(name) + " (" + path + ") is not used by the graph's outputs and is not computed");
        }
    }
    for (Tensor* o : m.outputs) m.by_name.emplace(o->name, o);
    XB_ASSIGN_OR_RETURN(m.placement, detail::resolve_placement(spec, registry, options, built, m.graph, m.weights, m.notes));
    return m;
}

}  // namespace xb::config
