#include "models/gguf_model.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <set>

#include "core/message_text.hpp"
#include "core/names.hpp"
#include "models/decoder_weights.hpp"
#include "models/gguf_metadata.hpp"
#include "models/model_text.hpp"

namespace xb {

namespace {

constexpr const char* kRopeFactorsLong = "rope_factors_long.weight";
constexpr const char* kRopeFactorsShort = "rope_factors_short.weight";
constexpr int64_t kMaxVocab = 1 << 22;

std::string ne_string(const std::array<int64_t, kMaxDims>& ne, int n_dims) {
    std::string s = "[";
    for (int i = 0; i < n_dims; ++i) s += (i ? ", " : "") + std::to_string(ne[static_cast<size_t>(i)]);
    return s + "]";
}

// YaRN as llama.cpp sets it up: ext_factor 1 and an attn_factor that cancels the magnitude
// correction rope itself applies, so that cos and sin are scaled by 1 + 0.1 ln(factor) once.
// DeepSeek's YaRN (rope.scaling.yarn_log_multiplier, which only deepseek2 files carry and llama.cpp
// reads): the magnitude moves from cos and sin to the scores (MlaParams::yarn_log_mul).
Status set_yarn(const GgufMetadata& md, const std::string& a, double factor, GgufModelInfo& info) {
    DecoderParams& p = info.params;
    XB_ASSIGN_OR_RETURN(const double beta_fast, md.real(a + "rope.scaling.yarn_beta_fast", 32.0));
    XB_ASSIGN_OR_RETURN(const double beta_slow, md.real(a + "rope.scaling.yarn_beta_slow", 1.0));
    p.rope_ext_factor = 1.0f;
    p.rope_beta_fast = static_cast<float>(beta_fast);
    p.rope_beta_slow = static_cast<float>(beta_slow);
    auto magnitude = [factor](double mscale) { return factor <= 1.0 ? 1.0 : 1.0 + 0.1 * mscale * std::log(factor); };
    double attn_factor = magnitude(1.0);
    if (info.architecture == "deepseek2") {
        XB_ASSIGN_OR_RETURN(const double log_mul, md.non_negative(a + "rope.scaling.yarn_log_multiplier", 0.0));
        if (log_mul != 0.0) {
            // The converter stores 0.1 x mscale_all_dim; llama.cpp takes mscale as 1, or as
            // mscale_all_dim where that is not 1 (DeepSeek V2's configs).
            const double all_dims = log_mul / 0.1;
            p.mla.yarn_log_mul = static_cast<float>(all_dims);
            attn_factor = magnitude(all_dims != 1.0 ? all_dims : 1.0) / magnitude(all_dims);
        }
    }
    // rope multiplies cos and sin by 1 + 0.1 ln(factor) itself when ext_factor is set: cancelled.
    p.rope_attn_factor *= static_cast<float>(attn_factor / (1.0 + 0.1 * std::log(factor)));
    return Status::ok();
}

Status set_rope_scaling(const GgufMetadata& md, const std::string& arch, GgufModelInfo& info) {
    const std::string a = arch + ".";
    const std::string key = a + "rope.scaling.type";
    XB_ASSIGN_OR_RETURN(const std::optional<std::string> type, md.string(key));
    info.rope_scaling = type.value_or("none");
    // The training context (YaRN's ramps, Phi-3's choice of rope factors).
    XB_ASSIGN_OR_RETURN(const int64_t n_ctx_orig, md.integer(a + "rope.scaling.original_context_length", info.context_length, 0));
    info.params.rope_n_ctx_orig = static_cast<int>(n_ctx_orig);
    // Longrope's (Phi-3.5) magnitude correction, whatever the type.
    XB_ASSIGN_OR_RETURN(const double attn_factor, md.real(a + "rope.scaling.attn_factor", 1.0));
    info.params.rope_attn_factor = static_cast<float>(attn_factor);
    if (info.rope_scaling == "linear" || info.rope_scaling == "yarn") {
        if (!md.has(a + "rope.scaling.factor")) {
            return md.error(*md.file().find_kv_entry(key), "is " + quoted_name(info.rope_scaling) + ", which needs " +
                                                               quoted_name(a + "rope.scaling.factor") + ", absent from the file");
        }
        XB_ASSIGN_OR_RETURN(const double factor, md.real(a + "rope.scaling.factor", std::nullopt));
        info.params.rope_freq_scale = static_cast<float>(1.0 / factor);
        if (info.rope_scaling == "yarn") XB_RETURN_IF_ERROR(set_yarn(md, a, factor, info));
    } else if (info.rope_scaling == "none") {
        // Older files give linear scaling as one key.
        XB_ASSIGN_OR_RETURN(const double scale, md.real(a + "rope.scale_linear", 1.0));
        info.params.rope_freq_scale = static_cast<float>(1.0 / scale);
        if (scale != 1.0) info.rope_scaling = "linear";
    } else {
        const Status why = md.error(*md.file().find_kv_entry(key), "is " + quoted_name(info.rope_scaling) +
                                                                       ": that rope scaling is not supported; none, linear and yarn are");
        return Status(StatusCode::NotSupported, why.message());
    }
    return Status::ok();
}

// What a per-layer list's values above 0 describe, for its messages.
struct PerLayerWords {
    const char* layers;  // "the attention layers"
    const char* unit;    // "heads"
    const char* what;    // "head counts"
    const char* one;     // "an attention layer"
};

// The one value above 0 of a per-layer list whose zeros mark layers of another kind: an error at
// `kv` when two differ or none is above 0.
Result<int64_t> shared_value(const GgufMetadata& md, const GgufKV& kv, const std::vector<int64_t>& per_layer, const PerLayerWords& words) {
    int64_t value = 0;
    for (const int64_t v : per_layer) {
        if (v == 0) continue;
        if (value != 0 && v != value) {
            return md.error(kv, "gives " + std::string(words.layers) + " " + std::to_string(value) + " and " + std::to_string(v) + " " + words.unit +
                                    ": per-layer " + words.what + " are not supported");
        }
        value = v;
    }
    if (value == 0) return md.error(kv, "is 0 for every layer: a model needs " + std::string(words.one));
    return value;
}

// attention.head_count_kv: one number, or one per layer where a hybrid's recurrent layers have 0
// (they keep a state instead, DecoderParams::recurrent); the attention layers' must be equal.
Result<int64_t> read_kv_heads(const GgufMetadata& md, const Architecture& arch, const std::string& a, int n_layers, int64_t n_head,
                              DecoderParams& p) {
    const std::string key = a + "attention.head_count_kv";
    if (!md.is_array(key)) return md.integer(key, n_head, 1, 1024);
    XB_ASSIGN_OR_RETURN(const std::vector<int64_t> per_layer, md.integer_per_layer(key, n_layers, 0, 1024));
    const GgufKV& kv = *md.file().find_kv_entry(key);
    XB_ASSIGN_OR_RETURN(const int64_t heads, shared_value(md, kv, per_layer, {"the attention layers", "heads", "head counts", "an attention layer"}));
    const bool any_recurrent = std::find(per_layer.begin(), per_layer.end(), 0) != per_layer.end();
    if (any_recurrent && !arch.hybrid) {
        return md.error(kv, "is 0 for some layers, which " + std::string(arch.name) + " models do not have (only hybrid architectures)");
    }
    if (any_recurrent) {
        for (const int64_t h : per_layer) p.recurrent.push_back(h == 0);
    }
    return heads;
}

// feed_forward_length: one number, or one per layer where a hybrid's layers are a feed-forward
// network alone (above 0) or a mixer alone (0: Nemotron-H, DecoderParams::layer_n_ff); the FFN
// layers' must be equal.
Result<int64_t> read_ffn_length(const GgufMetadata& md, const Architecture& arch, const std::string& a, int n_layers, DecoderParams& p) {
    const std::string key = a + "feed_forward_length";
    if (!md.is_array(key)) return md.integer(key, std::nullopt, 1, 1 << 18);
    const GgufKV& kv = *md.file().find_kv_entry(key);
    if (!arch.hybrid) return md.error(kv, "is an array: per-layer values are not supported for " + std::string(arch.name) + " models");
    XB_ASSIGN_OR_RETURN(const std::vector<int64_t> per_layer, md.integer_per_layer(key, n_layers, 0, 1 << 18));
    XB_ASSIGN_OR_RETURN(const int64_t width, shared_value(md, kv, per_layer, {"the feed-forward layers", "rows", "widths", "a feed-forward layer"}));
    p.layer_n_ff.assign(per_layer.begin(), per_layer.end());
    return width;
}

Status read_expert_counts(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_ASSIGN_OR_RETURN(const int64_t experts, md.integer(a + "expert_count", 0, 0, 4096));
    if (experts == 0) {
        // A count of 0 beside expert tensors is the key that is wrong, not the dense tensors the
        // model would then look for.
        const GgufKV* count = md.file().find_kv_entry(a + "expert_count");
        for (const GgufTensorInfo& t : md.file().tensors()) {
            if (count != nullptr && t.name.ends_with(".ffn_gate_inp.weight")) {
                return md.error(*count, "is 0, but the file holds experts (" + quoted_name(t.name) + " routes tokens to them)");
            }
        }
        return Status::ok();
    }
    XB_ASSIGN_OR_RETURN(const int64_t used, md.integer(a + "expert_used_count", std::nullopt, 1, experts));
    p.experts.n_expert = static_cast<int>(experts);
    p.experts.n_used = static_cast<int>(used);
    return Status::ok();
}

}  // namespace

Result<GgufModelInfo> read_gguf_model_info(const GgufReader& file) {
    const GgufMetadata md(file);
    GgufModelInfo info;
    XB_ASSIGN_OR_RETURN(const std::optional<std::string> arch, md.string("general.architecture"));
    if (!arch) return md.missing("general.architecture", "not a llama.cpp model file?");
    info.architecture = *arch;
    info.arch = find_architecture(info.architecture);
    if (info.arch == nullptr) {
        return Status(StatusCode::NotSupported, md.at({"general.architecture"}) + "architecture " + quoted_name(info.architecture) +
                                                    " is not supported (supported: " + supported_architectures() + ")");
    }
    XB_ASSIGN_OR_RETURN(const std::optional<std::string> name, md.string("general.name"));
    info.name = name.value_or("");
    const std::string a = info.architecture + ".";
    DecoderParams& p = info.params;
    // The same ranges as the llama_decoder builder's params (README: Configs).
    XB_ASSIGN_OR_RETURN(const int64_t n_layers, md.integer(a + "block_count", std::nullopt, 1, 1024));
    XB_ASSIGN_OR_RETURN(const int64_t n_embd, md.integer(a + "embedding_length", std::nullopt, 1, 65536));
    XB_ASSIGN_OR_RETURN(const int64_t n_ff, read_ffn_length(md, *info.arch, a, static_cast<int>(n_layers), p));
    XB_ASSIGN_OR_RETURN(const int64_t n_head, md.integer(a + "attention.head_count", std::nullopt, 1, 1024));
    XB_ASSIGN_OR_RETURN(const int64_t n_head_kv, read_kv_heads(md, *info.arch, a, static_cast<int>(n_layers), n_head, p));
    XB_ASSIGN_OR_RETURN(info.context_length, md.integer(a + "context_length", 0, 0));
    // Nemotron-H's converter writes only layer_norm_epsilon, which llama.cpp then takes for its RMS norms.
    std::optional<double> plain_eps;
    if (md.has(a + "attention.layer_norm_epsilon")) {
        XB_ASSIGN_OR_RETURN(plain_eps, md.real(a + "attention.layer_norm_epsilon", std::nullopt));
    }
    XB_ASSIGN_OR_RETURN(const double eps, md.real(a + "attention.layer_norm_rms_epsilon", plain_eps));
    XB_ASSIGN_OR_RETURN(const double freq_base, md.real(a + "rope.freq_base", 10000.0));
    p.n_layers = static_cast<int>(n_layers);
    p.n_embd = static_cast<int>(n_embd);
    p.n_ff = static_cast<int>(n_ff);
    p.n_head = static_cast<int>(n_head);
    p.n_head_kv = static_cast<int>(n_head_kv);
    p.rms_eps = static_cast<float>(eps);
    p.rope_freq_base = static_cast<float>(freq_base);
    if (n_head % n_head_kv != 0) {
        return Status(StatusCode::InvalidArgument, md.at({a + "attention.head_count_kv"}) + a + "attention.head_count_kv (" + std::to_string(n_head_kv) +
                                                       ") does not divide " + a + "attention.head_count (" + std::to_string(n_head) + ")");
    }
    if (n_embd % n_head != 0 && file.find_kv_entry(a + "attention.key_length") == nullptr) {
        return Status(StatusCode::InvalidArgument, md.at({a + "attention.head_count"}) + a + "attention.head_count (" + std::to_string(n_head) +
                                                       ") does not divide " + a + "embedding_length (" + std::to_string(n_embd) +
                                                       ") and there is no " + a + "attention.key_length");
    }
    XB_ASSIGN_OR_RETURN(const int64_t head_k, md.integer(a + "attention.key_length", n_embd / n_head, 1, 65536));
    XB_ASSIGN_OR_RETURN(const int64_t head_v, md.integer(a + "attention.value_length", head_k, 1, 65536));
    // Latent attention (deepseek2) gives its heads' sizes in key_length_mla / value_length_mla;
    // key_length and value_length are then the latent cache's.
    const bool latent = md.has(a + "attention.key_length_mla");
    if (!latent && (head_k != head_v || head_k % 2 != 0)) {
        return Status(StatusCode::NotSupported, md.at({a + "attention.key_length", a + "attention.value_length", a + "attention.head_count"}) +
                                                    "heads of key length " + std::to_string(head_k) + " and value length " +
                                                    std::to_string(head_v) + " are not supported (they must be equal and even)");
    }
    p.n_embd_head = static_cast<int>(head_k);
    XB_ASSIGN_OR_RETURN(const int64_t rope_dims, md.integer(a + "rope.dimension_count", std::max<int64_t>(head_k, 2), 2, 65536));
    if (rope_dims > head_k) {
        // The rotated part lies within a key head: a key length below it is the value that is off
        // (a key length of 1 cannot hold even one rotated pair).
        const std::string head_from = md.has(a + "attention.key_length") ? a + "attention.key_length" : "embedding_length / head_count";
        return Status(StatusCode::InvalidArgument, md.at({a + "attention.key_length", a + "rope.dimension_count"}) + "the key heads of " +
                                                       std::to_string(head_k) + " values (" + head_from + ") cannot hold the " +
                                                       std::to_string(rope_dims) + " rotated ones of " + a + "rope.dimension_count");
    }
    if (rope_dims % 2 != 0) {
        return Status(StatusCode::InvalidArgument, md.at({a + "rope.dimension_count"}) + a + "rope.dimension_count (" + std::to_string(rope_dims) +
                                                       ") must be even");
    }
    p.rope_n_dims = static_cast<int>(rope_dims);
    p.rope_mode = info.arch->rope_mode;
    XB_RETURN_IF_ERROR(set_rope_scaling(md, info.architecture, info));
    XB_RETURN_IF_ERROR(read_expert_counts(md, a, p));
    p.tied_output = file.find_tensor("output.weight") == nullptr;
    if (file.find_tensor("rope_freqs.weight") != nullptr) p.rope_factors = "rope_freqs.weight";
    const GgufTensorInfo* embd = file.find_tensor("token_embd.weight");
    if (embd == nullptr) {
        return Status(StatusCode::InvalidArgument, file.path() + ": no tensor 'token_embd.weight' (the token embedding)");
    }
    // Two dims, the second of which may be left out when it is 1 (a vocabulary of one token).
    if (embd->n_dims > 2 || embd->ne[1] < 1 || embd->ne[1] > kMaxVocab) {
        return Status(StatusCode::InvalidArgument, file.path() + ": offset " + std::to_string(embd->info_offset) +
                                                       ": tensor 'token_embd.weight' has shape " + ne_string(embd->ne, embd->n_dims) +
                                                       ", expected [embedding_length, vocabulary size] with a vocabulary of 1 to " +
                                                       std::to_string(kMaxVocab));
    }
    p.n_vocab = static_cast<int>(embd->ne[1]);
    const Status own = info.arch->read_hparams(md, a, p);
    if (!own.is_ok()) {
        // The metadata's own errors name the file already.
        if (own.message().rfind(file.path(), 0) == 0) return own;
        return Status(own.code(), file.path() + ": " + own.message());
    }
    return info;
}

GgufLayersSummary summarize_layers(const GgufReader& file, const GgufModelInfo& info) {
    // The first attention layer's weights as the architecture names them from this file, made in
    // a scratch context.
    const DecoderParams& p = info.params;
    Context scratch;
    decoder::WeightMaker make(scratch, p, gguf_weight_source(file));
    int first_attention = 0;
    while (first_attention < p.n_layers - 1 && !p.layer_attends(first_attention)) ++first_attention;
    const LayerWeights first = make_layer_weights(*info.arch, make, first_attention);
    GgufLayersSummary summary;
    summary.qkv_bias = first.bq != nullptr || first.bqkv != nullptr;
    summary.variant = variant_text(*info.arch, p, first, info.arch->output_bias && file.find_tensor("output.bias") != nullptr);
    return summary;
}

decoder::WeightSource gguf_weight_source(const GgufReader& file) {
    decoder::WeightSource source;
    source.types = [&file](const std::string& name, DType fallback) {
        const GgufTensorInfo* t = file.find_tensor(name);
        const GgmlTypeInfo* ti = t ? ggml_type_info(t->type) : nullptr;
        return ti && ti->dtype ? *ti->dtype : fallback;
    };
    source.has = [&file](const std::string& name) { return file.find_tensor(name) != nullptr; };
    return source;
}

namespace {

// "blk.<i>.<suffix>" -> suffix (a layer's tensor, whatever the layer); none for other names.
std::optional<std::string> layer_suffix(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return std::nullopt;
    const size_t dot = name.find('.', 4);
    if (dot == std::string::npos || dot == 4) return std::nullopt;
    for (size_t i = 4; i < dot; ++i) {
        if (name[i] < '0' || name[i] > '9') return std::nullopt;
    }
    return name.substr(dot + 1);
}

// The roles of the file's tensors: a layer's by suffix (any layer), others by name.
bool has_role(const std::string& name, const std::set<std::string>& layer_suffixes, const std::set<std::string>& globals) {
    if (globals.count(name)) return true;
    const std::optional<std::string> suffix = layer_suffix(name);
    return suffix && layer_suffixes.count(*suffix) > 0;
}

// The types a model file's weights may have, from the type table: the float types and every
// quantized one but q8_K (the k-quants' activation format).
std::string weight_types_text() {
    std::vector<std::string> names;
    for (int i = 0; i < kDTypeCount; ++i) {
        const auto t = static_cast<DType>(i);
        if ((is_float_type(t) || is_quantized(t)) && t != DType::Q8_K) names.push_back(dtype_name(t));
    }
    return join_names(names, names.size());
}

std::string hyperparameters(const GgufModelInfo& info) {
    const DecoderParams& p = info.params;
    std::string s = "embedding_length " + std::to_string(p.n_embd) + ", feed_forward_length " + std::to_string(p.n_ff) +
                    ", head_count " + std::to_string(p.n_head) + ", head_count_kv " + std::to_string(p.n_head_kv) + ", head size " +
                    std::to_string(p.head_dim()) + ", vocabulary " + std::to_string(p.n_vocab);
    if (p.has_experts()) {
        s += ", " + std::to_string(p.experts.n_expert) + " experts of feed_forward_length " + std::to_string(p.experts.n_ff);
    }
    if (p.ssm.enabled()) {
        s += ", ssm inner_size " + std::to_string(p.ssm.d_inner) + ", state_size " + std::to_string(p.ssm.d_state) + ", time_step_rank " +
             std::to_string(p.ssm.n_head) + ", group_count " + std::to_string(p.ssm.n_group) + ", conv_kernel " + std::to_string(p.conv_kernel);
    } else if (p.conv_kernel > 0) {
        s += ", short convolutions of " + std::to_string(p.conv_kernel) + " inputs (shortconv.l_cache)";
    }
    return s;
}

}  // namespace

Status check_gguf_weight(const GgufReader& file, const GgufModelInfo& info, const Tensor& w) {
    const GgufTensorInfo* t = file.find_tensor(w.name);
    if (t == nullptr) {
        return Status(StatusCode::InvalidArgument, file.path() + ": no tensor " + quoted_name(w.name) + ", which a " + info.architecture +
                                                       " model needs");
    }
    const std::string where = file.path() + ": offset " + std::to_string(t->info_offset) + ": tensor " + quoted_name(t->name);
    const GgmlTypeInfo* ti = ggml_type_info(t->type);
    if (ti == nullptr || !ti->dtype) {
        return Status(StatusCode::NotSupported, where + " is " + (ti ? std::string(ti->name) : "of unknown type id " + std::to_string(t->type)) +
                                                    ", which xbackend cannot compute with (" + weight_types_text() + ")");
    }
    const bool is_vector = w.n_dims() == 1;  // norms, biases, sinks, per-head scales
    if (is_vector && *ti->dtype != DType::F32) {
        return Status(StatusCode::InvalidArgument, where + " is " + ti->name + "; norm weights and biases must be f32");
    }
    if (!is_vector && !is_float_type(*ti->dtype) && !is_quantized(*ti->dtype)) {
        return Status(StatusCode::InvalidArgument, where + " is " + ti->name + "; a weight matrix must be a float or quantized type");
    }
    // The shapes alone: a file may write trailing dims of 1 or leave them out ([8, 1] or [8]).
    if (t->ne != w.ne) {
        return Status(StatusCode::InvalidArgument, where + " has shape " + ne_string(t->ne, t->n_dims) + "; the model's " +
                                                       hyperparameters(info) + " need " + ne_string(w.ne, w.n_dims()));
    }
    return Status::ok();
}

Status check_gguf_tensors(const GgufReader& file, const GgufModelInfo& info, const Decoder& m) {
    std::set<std::string> layer_suffixes;
    std::set<std::string> globals;
    for (const Tensor* w : m.weights()) {
        if (w->name.rfind("cache_", 0) == 0) continue;  // the KV cache is the graph's own
        if (const std::optional<std::string> suffix = layer_suffix(w->name)) {
            layer_suffixes.insert(*suffix);
        } else {
            globals.insert(w->name);
        }
        XB_RETURN_IF_ERROR(check_gguf_weight(file, info, *w));
    }
    // A run of the first layers alone still knows the roles of the later ones (DeepSeek's layers
    // after the leading dense ones hold experts): made, never computed, in a scratch context.
    Context scratch;
    decoder::WeightMaker later(scratch, info.params, gguf_weight_source(file));
    for (int il = static_cast<int>(m.layers.size()); il < info.params.n_layers; ++il) {
        for (const Tensor* t : make_layer_weights(*info.arch, later, il).all()) layer_suffixes.insert(*layer_suffix(t->name));
    }
    // Phi-3's files hold both rope factor sets; the graph uses the one for its context.
    if (m.rope_factors != nullptr && (m.rope_factors->name == kRopeFactorsLong || m.rope_factors->name == kRopeFactorsShort)) {
        globals.insert({kRopeFactorsLong, kRopeFactorsShort});
        // The other set is unused at this context but not at a longer (or shorter) one: checked now,
        // not once a run passes the original context.
        const std::string other = m.rope_factors->name == kRopeFactorsLong ? kRopeFactorsShort : kRopeFactorsLong;
        if (file.find_tensor(other) != nullptr) {
            Context scratch;
            Tensor* twin = scratch.new_tensor(DType::F32, {m.rope_factors->ne[0]});
            twin->name = other;
            XB_RETURN_IF_ERROR(check_gguf_weight(file, info, *twin));
        }
    }
    for (const GgufTensorInfo& t : file.tensors()) {
        if (has_role(t.name, layer_suffixes, globals)) continue;
        return Status(StatusCode::NotSupported, file.path() + ": offset " + std::to_string(t.info_offset) + ": tensor " + quoted_name(t.name) +
                                                    " has no role in xbackend's " + info.architecture +
                                                    " graph: this variant of the architecture is not supported");
    }
    return Status::ok();
}

Result<Decoder> build_gguf_graph(Context& ctx, const GgufReader& file, const GgufModelInfo& info, const DecoderParams& params) {
    DecoderParams p = params;
    // Long factors for a context beyond the training one, as llama.cpp chooses (the context is
    // the cache's size here).
    if (file.find_tensor(kRopeFactorsLong) != nullptr || file.find_tensor(kRopeFactorsShort) != nullptr) {
        p.rope_factors = p.n_attended() > p.rope_n_ctx_orig ? kRopeFactorsLong : kRopeFactorsShort;
    }
    decoder::WeightSource source = gguf_weight_source(file);
    source.check = [&file, &info](const Tensor& w) { return check_gguf_weight(file, info, w); };
    XB_ASSIGN_OR_RETURN(Decoder m, build_model(ctx, *info.arch, p, source));
    XB_RETURN_IF_ERROR(check_gguf_tensors(file, info, m));
    return m;
}

}  // namespace xb
