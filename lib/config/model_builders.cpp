// The built-in model builders (mlp, attention, llama_decoder) as config graphs: their tensors,
// default inits, layer groups for offload_layers, and the config's overrides of their tensors.
#include <cmath>
#include <filesystem>

#include "config/config_error.hpp"
#include "config/model_internal.hpp"
#include "core/message_text.hpp"
#include "models/file_type.hpp"

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
// `filled`: the positions a padded cache holds (0: every cell).
InitSpec causal(int window = 0, int filled = 0) {
    InitSpec i;
    i.kind = InitKind::CausalMask;
    i.window = window;
    i.filled = filled;
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

// The decoder's leaves: inputs, then weights with `init_of(weight)` and their layer groups, then
// the caches (which start empty).
template <typename InitOf>
BuiltGraph decoder_leaves(const DecoderParams& p, const Decoder& m, InitSpec tokens, InitOf init_of) {
    BuiltGraph b;
    b.n_layers = p.n_layers;
    b.n_tokens = p.n_tokens;
    b.leaves.push_back(input(m.tokens, std::move(tokens)));
    if (m.positions != nullptr) b.leaves.push_back(input(m.positions, arange(p.n_attended() - p.n_tokens)));
    b.leaves.push_back(input(m.kq_mask, causal(0, p.n_attended())));
    if (m.kq_mask_swa != nullptr) b.leaves.push_back(input(m.kq_mask_swa, causal(p.swa.window, p.n_attended())));
    if (m.out_ids != nullptr) b.leaves.push_back(input(m.out_ids, arange(p.n_tokens - p.n_logits())));
    if (m.kv_idxs != nullptr) b.leaves.push_back(input(m.kv_idxs, arange(p.n_attended() - p.n_tokens)));
    if (m.state_ids != nullptr) b.leaves.push_back(input(m.state_ids, arange(0)));  // one sequence, in slot 0
    b.leaves.push_back(weight(m.tok_embd, init_of(*m.tok_embd), -1, WeightGroup::InputLayer));
    for (size_t il = 0; il < m.layers.size(); ++il) {
        for (Tensor* w : m.layers[il].all()) b.leaves.push_back(weight(w, init_of(*w), static_cast<int>(il)));
    }
    // Caches start empty whatever defaults.init says (is_cache below); latent attention has no V cache.
    // A hybrid's recurrent layers have states instead (conv_state, ssm_state), which start empty too.
    for (const std::vector<Tensor*>* caches : {&m.k_cache, &m.v_cache, &m.conv_state, &m.ssm_state}) {
        for (size_t il = 0; il < caches->size(); ++il) {
            if ((*caches)[il] != nullptr) b.leaves.push_back(weight((*caches)[il], constant(0), static_cast<int>(il)));
        }
    }
    b.leaves.push_back(weight(m.out_norm, init_of(*m.out_norm), -1, WeightGroup::OutputLayer));
    if (m.output != m.tok_embd) b.leaves.push_back(weight(m.output, init_of(*m.output), -1, WeightGroup::OutputLayer));
    if (m.output_b != nullptr) b.leaves.push_back(weight(m.output_b, init_of(*m.output_b), -1, WeightGroup::OutputLayer));
    // Shared by every layer's rope: placed like the weights no rule names.
    if (m.rope_factors != nullptr) b.leaves.push_back(weight(m.rope_factors, init_of(*m.rope_factors)));
    for (const std::vector<Tensor*>* states : {&m.conv_state, &m.ssm_state}) {
        for (Tensor* s : *states) {
            if (s != nullptr) b.states.push_back(s);
        }
    }
    b.cache_place.tokens = m.tokens;
    if (p.n_kv > 0) {
        // What follows the batch through its cache: its positions, masks and cells.
        for (Tensor* t : {m.positions, m.kq_mask, m.kq_mask_swa, m.kv_idxs}) {
            if (t != nullptr) b.cache_place.inputs.push_back(t);
        }
        b.cache_place.n_cells = p.n_cells();
        b.cache_place.first = p.n_attended() - p.n_tokens;
    }
    b.graph_outputs = m.graph_outputs;
    b.outputs = {m.logits};
    return b;
}

bool is_norm(const Tensor& t) { return t.name.find("norm") != std::string::npos; }

Result<BuiltGraph> llama(const DecoderParams& p, Context& ctx) {
    XB_ASSIGN_OR_RETURN(Decoder m, build_decoder(ctx, p));
    return decoder_leaves(p, m, uniform(0, p.n_vocab), [&m](const Tensor& w) {
        if (&w == m.rope_factors) return uniform(1.0, 8.0);  // Llama 3.1's factors run from 1 to 8
        return is_norm(w) ? uniform(0.9, 1.1) : small(kWeightStd);
    });
}

// A llama.cpp model file: the decoder its metadata describes, every weight read from the file.
Result<BuiltGraph> gguf(const GgufModelParams& g, int n_outputs, Context& ctx) {
    XB_ASSIGN_OR_RETURN(const GgufReader file, GgufReader::open(g.file));
    XB_ASSIGN_OR_RETURN(const GgufModelInfo info, read_gguf_model_info(file));
    DecoderParams p = info.params;  // the file's, with the config's tokens, cache and layers
    if (g.n_layers > p.n_layers) {
        return Status(StatusCode::InvalidArgument, "n_layers is " + std::to_string(g.n_layers) + " but " + g.file + " has " +
                                                       std::to_string(p.n_layers) + " layers");
    }
    if (g.n_layers > 0) p.n_layers = g.n_layers;
    p.n_tokens = g.n_tokens;
    p.n_kv = g.n_kv > 0 ? g.n_kv : g.n_tokens;
    p.kv_cells = g.kv_cells;
    p.flash_attn = g.flash_attn;
    p.n_outputs = n_outputs;
    for (const int32_t id : g.tokens) {
        if (id >= p.n_vocab) {
            return Status(StatusCode::InvalidArgument, "token id " + std::to_string(id) + " is outside the vocabulary of " +
                                                           g.file + " (" + std::to_string(p.n_vocab) + " tokens)");
        }
    }
    XB_ASSIGN_OR_RETURN(Decoder m, build_gguf_graph(ctx, file, info, p));
    InitSpec tokens = uniform(0, p.n_vocab);
    if (!g.tokens.empty()) {
        tokens.kind = InitKind::Values;
        tokens.values.assign(g.tokens.begin(), g.tokens.end());
    }
    BuiltGraph built = decoder_leaves(p, m, tokens, [&](const Tensor& w) {
        InitSpec from_file;
        from_file.kind = InitKind::Gguf;
        from_file.file = g.file;
        from_file.tensor = w.name;
        return from_file;
    });
    built.file_type = gguf_file_type_name(file);
    return built;
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

bool is_cache(const Tensor& t) { return t.name.rfind("cache_", 0) == 0; }

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
                            "the builder makes " + quoted_name(t.name) + " " + dtype_name(t.type) + ", not " + dtype_name(*e.type) +
                                " (set the builder's weight_type)");
    }
    if (e.role_given && e.role != leaf.role) {
        return config_error(spec.source, child_path(e.path, "role"),
                            quoted_name(t.name) + " is " + (leaf.role == Role::Weight ? "a weight" : "an input") + " of the builder");
    }
    if (e.init) leaf.init = *e.init;
    return Status::ok();
}

// The positions whose logits a decoder of n_tokens computes: the command line's choice, else the
// config's, else the tool's default; a count beyond the batch (a config's 4 run with one token) is
// all of it.
int decoder_outputs(const ModelSpec& m, int n_tokens, const BuildOptions& options) {
    const int chosen = options.outputs.value_or(m.n_outputs.value_or(options.default_outputs));
    return chosen > n_tokens ? 0 : chosen;
}

// A model file's params with the command line's tokens and cache cells (BuildOptions::tokens,
// kv_cells), when it gives them.
Result<GgufModelParams> with_command_line(GgufModelParams g, const BuildOptions& options, const std::string& source) {
    if (options.tokens) {
        if (options.tokens->empty()) return config_error(source, "/graph/params/tokens", "--tokens gives no token ids");
        if (options.tokens->size() > static_cast<size_t>(kMaxBatchTokens)) {
            return config_error(source, "/graph/params/tokens", "--tokens gives " + std::to_string(options.tokens->size()) +
                                                                    " tokens, more than the " + std::to_string(kMaxBatchTokens) +
                                                                    " a batch may have");
        }
        g.tokens = *options.tokens;
        g.n_tokens = static_cast<int>(g.tokens.size());
        if (g.n_kv != 0 && g.n_kv < g.n_tokens) {
            return config_error(source, "/graph/params/n_kv", "n_kv (" + std::to_string(g.n_kv) + ") cannot hold the " +
                                                                   std::to_string(g.n_tokens) + " tokens --tokens gives");
        }
    }
    if (options.kv_cells) g.kv_cells = *options.kv_cells;
    const int positions = std::max(g.n_kv, g.n_tokens);
    if (g.kv_cells != 0 && g.kv_cells < positions) {
        return config_error(source, "/graph/params/kv_cells", "kv_cells (" + std::to_string(g.kv_cells) +
                                                                  ") cannot hold the cache's " + std::to_string(positions) +
                                                                  " positions");
    }
    return g;
}

}  // namespace

Result<BuiltGraph> build_model_builder(const ConfigSpec& spec, const BuildOptions& options, Context& ctx) {
    const ModelSpec& m = *spec.model;
    Result<BuiltGraph> built = Status(StatusCode::Internal, "no builder");
    switch (m.kind) {
        case ModelKind::Mlp: built = mlp(m.mlp, ctx); break;
        case ModelKind::Attention: built = attention(m.attention, ctx); break;
        case ModelKind::LlamaDecoder: {
            DecoderParams p = m.llama;
            p.n_outputs = decoder_outputs(m, p.n_tokens, options);
            built = llama(p, ctx);
            break;
        }
        case ModelKind::Gguf: {
            XB_ASSIGN_OR_RETURN(const GgufModelParams g, with_command_line(m.gguf, options, spec.source));
            built = gguf(g, decoder_outputs(m, g.n_tokens, options), ctx);
            break;
        }
    }
    if (!built.is_ok()) {
        // A model file's problems point at the file; a builder's at its params.
        const bool file_error = m.kind == ModelKind::Gguf && built.status().message().rfind(m.gguf.file, 0) == 0;
        // A model file given as the config (-c model.gguf) is named once.
        if (file_error && std::filesystem::path(spec.source).lexically_normal() == std::filesystem::path(m.gguf.file)) {
            return built.status();
        }
        return config_error(built.status().code(), spec.source, file_error ? "/graph/file" : "/graph/params", built.status().message());
    }
    BuiltGraph& b = *built;
    for (Leaf& leaf : b.leaves) {
        leaf.init.path = "/graph";  // where a message about a builder default points
        // A model file's weights are its own: defaults.init is for the synthetic builders.
        if (leaf.role == Role::Weight && spec.default_init && !is_cache(*leaf.tensor) && m.kind != ModelKind::Gguf) {
            leaf.init = *spec.default_init;
        }
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
                                std::string(is_pattern(e.name) ? "pattern '" + excerpt(e.name) + "' matches no tensor" : "unknown tensor '" + excerpt(e.name) + "'") +
                                    " of the " + model_kind_name(m.kind) + " builder" + did_you_mean(e.name, names) +
                                    " (it has: " + join_names(names, 24) + ")");
        }
    }
    return built;
}

}  // namespace xb::config::detail
