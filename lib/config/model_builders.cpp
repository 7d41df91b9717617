// The built-in model builders (mlp, attention, llama_decoder) as config graphs: their tensors,
// default inits, layer groups for offload_layers, and the config's overrides of their tensors.
#include <cmath>

#include "config/config_error.hpp"
#include "config/model_internal.hpp"

namespace xb::config::detail {

namespace {

InitSpec normal(double mean, double std) {
    InitSpec i;
    i.kind = InitKind::Normal;
    i.mean = mean;
    i.std = std;
    return i;
}
InitSpec uniform(double min, double max) {
    InitSpec i;
    i.kind = InitKind::Uniform;
    i.min = min;
    i.max = max;
    return i;
}
InitSpec constant(double v) {
    InitSpec i;
    i.kind = InitKind::Constant;
    i.value = v;
    return i;
}
InitSpec arange(double start) {
    InitSpec i;
    i.kind = InitKind::Arange;
    i.start = start;
    return i;
}
InitSpec causal() {
    InitSpec i;
    i.kind = InitKind::CausalMask;
    return i;
}

// A weight whose default is replaced by defaults.init.
Leaf weight(Tensor* t, InitSpec init, int layer = -1, WeightGroup group = WeightGroup::Other) {
    return Leaf{t, Role::Weight, std::move(init), layer, layer >= 0 ? WeightGroup::Layer : group};
}
Leaf input(Tensor* t, InitSpec init) { return Leaf{t, Role::Input, std::move(init), -1, WeightGroup::Other}; }

// Small random weights keep activations finite through deep stacks; norms scale around 1. Uniform
// draws are several times cheaper than normal ones, which matters for 100M-parameter configs.
constexpr double kWeightStd = 0.02;
InitSpec small(double std) { return uniform(-std * std::sqrt(3.0), std * std::sqrt(3.0)); }

Result<BuiltGraph> llama(const LlamaParams& p, Context& ctx) {
    XB_ASSIGN_OR_RETURN(LlamaDecoder m, build_llama_decoder(ctx, p));
    BuiltGraph b;
    b.n_layers = p.n_layers;
    b.n_tokens = p.n_tokens;
    b.leaves.push_back(input(m.tokens, uniform(0, p.n_vocab)));
    b.leaves.push_back(input(m.positions, arange(p.n_attended() - p.n_tokens)));
    b.leaves.push_back(input(m.kq_mask, causal()));
    b.leaves.push_back(weight(m.tok_embd, small(kWeightStd), -1, WeightGroup::InputLayer));
    for (size_t il = 0; il < m.layers.size(); ++il) {
        const LlamaLayerWeights& l = m.layers[il];
        const int layer = static_cast<int>(il);
        b.leaves.push_back(weight(l.attn_norm, uniform(0.9, 1.1), layer));
        for (Tensor* w : {l.wq, l.wk, l.wv, l.wo}) b.leaves.push_back(weight(w, small(kWeightStd), layer));
        b.leaves.push_back(weight(l.ffn_norm, uniform(0.9, 1.1), layer));
        for (Tensor* w : {l.w_gate, l.w_up, l.w_down}) b.leaves.push_back(weight(w, small(kWeightStd), layer));
    }
    for (size_t il = 0; il < m.k_cache.size(); ++il) {
        // Caches start empty whatever defaults.init says (handled by the caller via the name).
        b.leaves.push_back(weight(m.k_cache[il], constant(0), static_cast<int>(il)));
        b.leaves.push_back(weight(m.v_cache[il], constant(0), static_cast<int>(il)));
    }
    b.leaves.push_back(weight(m.out_norm, uniform(0.9, 1.1), -1, WeightGroup::OutputLayer));
    b.leaves.push_back(weight(m.output, small(kWeightStd), -1, WeightGroup::OutputLayer));
    b.graph_outputs = m.graph_outputs;
    b.outputs = {m.logits};
    return b;
}

Result<BuiltGraph> mlp(const MlpParams& p, Context& ctx) {
    XB_ASSIGN_OR_RETURN(Mlp m, build_mlp(ctx, p));
    BuiltGraph b;
    b.n_layers = p.n_layers;
    b.n_tokens = p.n_batch;
    b.leaves.push_back(input(m.input, normal(0, 1)));
    for (size_t i = 0; i < m.weights.size(); ++i) {
        b.leaves.push_back(weight(m.weights[i], small(kWeightStd), static_cast<int>(i / 4)));  // w1, b1, w2, b2 per layer
    }
    b.graph_outputs = {m.output};
    b.outputs = {m.output};
    return b;
}

Result<BuiltGraph> attention(const AttentionParams& p, Context& ctx) {
    XB_ASSIGN_OR_RETURN(AttentionBlock a, build_attention(ctx, p));
    BuiltGraph b;
    b.n_layers = 1;
    b.n_tokens = p.n_tokens;
    b.leaves.push_back(input(a.input, normal(0, 1)));
    if (a.memory != nullptr) b.leaves.push_back(input(a.memory, normal(0, 1)));
    b.leaves.push_back(input(a.kq_mask, causal()));
    // Unit-variance projections keep the scores in softmax's useful range.
    const double std = 1.0 / std::sqrt(static_cast<double>(p.n_embd));
    for (Tensor* w : a.weights()) b.leaves.push_back(weight(w, small(std), 0));
    b.graph_outputs = {a.output};
    b.outputs = {a.output};
    return b;
}

bool is_cache(const Tensor& t) { return t.name.rfind("cache.", 0) == 0; }

// The config's entry for a builder tensor: its exact name first, else the first matching pattern.
const TensorSpec* entry_for(const ConfigSpec& spec, const std::string& name) {
    for (const TensorSpec& t : spec.tensors) {
        if (t.name == name) return &t;
    }
    for (const TensorSpec& t : spec.tensors) {
        if (is_pattern(t.name) && glob_match(t.name, name)) return &t;
    }
    return nullptr;
}

// Checks a config entry against the builder's tensor and applies its init.
Status apply_entry(const ConfigSpec& spec, const TensorSpec& e, Leaf& leaf) {
    const Tensor& t = *leaf.tensor;
    if (e.shape) {
        std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};
        for (size_t i = 0; i < e.shape->size(); ++i) ne[i] = (*e.shape)[i];
        if (ne != t.ne) {
            return config_error(spec.source, child_path(e.path, "shape"),
                                "the " + std::string(model_kind_name(spec.model->kind)) + " builder makes '" + t.name +
                                    "' with shape " + shape_text(t.ne) + ", not " + shape_text(ne));
        }
    }
    if (e.type && *e.type != t.type) {
        return config_error(spec.source, child_path(e.path, "type"),
                            "the builder makes '" + t.name + "' " + dtype_name(t.type) + ", not " + dtype_name(*e.type) +
                                " (set the builder's weight_type)");
    }
    if (e.role_given && e.role != leaf.role) {
        return config_error(spec.source, child_path(e.path, "role"),
                            "'" + t.name + "' is " + (leaf.role == Role::Weight ? "a weight" : "an input") + " of the builder");
    }
    if (e.init) leaf.init = *e.init;
    return Status::ok();
}

}  // namespace

Result<BuiltGraph> build_model_builder(const ConfigSpec& spec, Context& ctx) {
    const ModelSpec& m = *spec.model;
    Result<BuiltGraph> built = Status(StatusCode::Internal, "no builder");
    switch (m.kind) {
        case ModelKind::Mlp: built = mlp(m.mlp, ctx); break;
        case ModelKind::Attention: built = attention(m.attention, ctx); break;
        case ModelKind::LlamaDecoder: built = llama(m.llama, ctx); break;
    }
    if (!built.is_ok()) return config_error(spec.source, "/graph/params", built.status().message());
    BuiltGraph& b = *built;
    for (Leaf& leaf : b.leaves) {
        leaf.init.path = "/graph";  // where a message about a builder default points
        if (leaf.role == Role::Weight && spec.default_init && !is_cache(*leaf.tensor)) leaf.init = *spec.default_init;
        if (const TensorSpec* e = entry_for(spec, leaf.tensor->name)) XB_RETURN_IF_ERROR(apply_entry(spec, *e, leaf));
    }
    // Every entry must name (or match) a builder tensor: a typo must not pass silently.
    for (const TensorSpec& e : spec.tensors) {
        bool used = false;
        std::vector<std::string> names;
        for (const Leaf& leaf : b.leaves) {
            used = used || (is_pattern(e.name) ? glob_match(e.name, leaf.tensor->name) : e.name == leaf.tensor->name);
            names.push_back(leaf.tensor->name);
        }
        if (!used) {
            return config_error(spec.source, e.path,
                                std::string(is_pattern(e.name) ? "pattern '" + e.name + "' matches no tensor" : "unknown tensor '" + e.name + "'") +
                                    " of the " + model_kind_name(m.kind) + " builder" + did_you_mean(e.name, names) +
                                    " (it has: " + join_names(names, 24) + ")");
        }
    }
    return built;
}

}  // namespace xb::config::detail
