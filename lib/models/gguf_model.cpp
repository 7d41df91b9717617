#include "models/gguf_model.hpp"

#include <initializer_list>
#include <limits>
#include <optional>
#include <set>

#include "core/message_text.hpp"
#include "core/names.hpp"

namespace xb {

namespace {

constexpr int64_t kMaxHyperparameter = std::numeric_limits<int32_t>::max();
constexpr double kMaxReal = 1e30;    // epsilons, rope bases and factors
constexpr int64_t kMaxVocab = 1 << 22;

std::string ne_string(const std::array<int64_t, kMaxDims>& ne, int n_dims) {
    std::string s = "[";
    for (int i = 0; i < n_dims; ++i) s += (i ? ", " : "") + std::to_string(ne[static_cast<size_t>(i)]);
    return s + "]";
}

// Typed metadata lookups whose errors name the file, the key and where its value is.
class Metadata {
public:
    explicit Metadata(const GgufReader& file) : file_(file) {}

    Status error(const GgufKV& kv, const std::string& why) const {
        return Status(StatusCode::InvalidArgument,
                      file_.path() + ": offset " + std::to_string(kv.offset) + ": metadata " + quoted_name(kv.key) + " " + why);
    }
    // "FILE: offset N: " where the first of `keys` the file has is stored; "FILE: " when it has none:
    // where a message about values of several keys points.
    std::string at(std::initializer_list<std::string> keys) const {
        for (const std::string& key : keys) {
            if (const GgufKV* kv = file_.find_kv_entry(key)) return file_.path() + ": offset " + std::to_string(kv->offset) + ": ";
        }
        return file_.path() + ": ";
    }
    Status missing(const std::string& key, const std::string& why) const {
        return Status(StatusCode::InvalidArgument, file_.path() + ": no metadata " + quoted_name(key) + " (" + why + ")");
    }

    // An integer in [min, max]; `fallback` when the key is absent (missing is an error without one).
    Result<int64_t> integer(const std::string& key, std::optional<int64_t> fallback, int64_t min = 1,
                            int64_t max = kMaxHyperparameter) const {
        const GgufKV* kv = file_.find_kv_entry(key);
        if (kv == nullptr) {
            if (fallback) return *fallback;
            return missing(key, "every model of this architecture has it");
        }
        if (kv->value.type == GgufValueType::Array) return error(*kv, "is an array: per-layer values are not supported");
        const std::string range = std::to_string(min) + " to " + std::to_string(max);
        const std::optional<int64_t> v = kv->value.as_int();
        // A u64 above 2^63 - 1 is an integer too, only out of range: said with its value as stored.
        if (!v && !std::holds_alternative<uint64_t>(kv->value.data)) {
            return error(*kv, std::string("is a ") + gguf_value_type_name(kv->value.type) + ", expected an integer (" + range + ")");
        }
        if (!v || *v < min || *v > max) return error(*kv, "is " + kv->value.text() + ", expected " + range);
        return *v;
    }
    Result<double> real(const std::string& key, std::optional<double> fallback) const {
        const GgufKV* kv = file_.find_kv_entry(key);
        if (kv == nullptr) {
            if (fallback) return *fallback;
            return missing(key, "every model of this architecture has it");
        }
        const std::optional<double> v = kv->value.as_float();
        if (!v || kv->value.type == GgufValueType::Bool) {
            return error(*kv, std::string("is a ") + gguf_value_type_name(kv->value.type) + ", expected a number");
        }
        if (!(*v > 0.0) || *v > kMaxReal) return error(*kv, "is " + kv->value.text() + ", expected a positive number up to 1e30");
        return *v;
    }
    Result<std::optional<std::string>> string(const std::string& key) const {
        const GgufKV* kv = file_.find_kv_entry(key);
        if (kv == nullptr) return std::optional<std::string>();
        const std::string* s = kv->value.as_string();
        if (s == nullptr) return error(*kv, std::string("is a ") + gguf_value_type_name(kv->value.type) + ", expected a string");
        return std::optional<std::string>(*s);
    }

private:
    const GgufReader& file_;
};

Status set_rope_scaling(const GgufReader& file, const Metadata& md, const std::string& arch, GgufModelInfo& info) {
    const std::string key = arch + ".rope.scaling.type";
    XB_ASSIGN_OR_RETURN(const std::optional<std::string> type, md.string(key));
    info.rope_scaling = type.value_or("none");
    if (info.rope_scaling == "linear") {
        XB_ASSIGN_OR_RETURN(const double factor, md.real(arch + ".rope.scaling.factor", std::nullopt));
        info.params.rope_freq_scale = static_cast<float>(1.0 / factor);
    } else if (info.rope_scaling == "none") {
        // Older files give linear scaling as one key.
        XB_ASSIGN_OR_RETURN(const double scale, md.real(arch + ".rope.scale_linear", 1.0));
        info.params.rope_freq_scale = static_cast<float>(1.0 / scale);
        if (scale != 1.0) info.rope_scaling = "linear";
    } else {
        const Status why = md.error(*file.find_kv_entry(key), "is " + quoted_name(info.rope_scaling) + ": that rope scaling is not "
                                                                                               "supported; none and linear are");
        return Status(StatusCode::NotSupported, why.message());
    }
    return Status::ok();
}

}  // namespace

Result<GgufModelInfo> read_gguf_model_info(const GgufReader& file) {
    const Metadata md(file);
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
    LlamaParams& p = info.params;
    // The same ranges as the llama_decoder builder's params (README: Configs).
    XB_ASSIGN_OR_RETURN(const int64_t n_layers, md.integer(a + "block_count", std::nullopt, 1, 1024));
    XB_ASSIGN_OR_RETURN(const int64_t n_embd, md.integer(a + "embedding_length", std::nullopt, 1, 65536));
    XB_ASSIGN_OR_RETURN(const int64_t n_ff, md.integer(a + "feed_forward_length", std::nullopt, 1, 1 << 18));
    XB_ASSIGN_OR_RETURN(const int64_t n_head, md.integer(a + "attention.head_count", std::nullopt, 1, 1024));
    XB_ASSIGN_OR_RETURN(const int64_t n_head_kv, md.integer(a + "attention.head_count_kv", n_head, 1, 1024));
    XB_ASSIGN_OR_RETURN(const int64_t experts, md.integer(a + "expert_count", 0, 0));
    if (experts > 0) {
        return Status(StatusCode::NotSupported, md.at({a + "expert_count"}) + "a mixture-of-experts model (" + a + "expert_count " +
                                                    std::to_string(experts) + ") is not supported");
    }
    XB_ASSIGN_OR_RETURN(info.context_length, md.integer(a + "context_length", 0, 0));
    XB_ASSIGN_OR_RETURN(const double eps, md.real(a + "attention.layer_norm_rms_epsilon", std::nullopt));
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
    if (head_k != head_v || head_k % 2 != 0) {
        return Status(StatusCode::NotSupported, md.at({a + "attention.key_length", a + "attention.value_length", a + "attention.head_count"}) +
                                                    "heads of key length " + std::to_string(head_k) + " and value length " +
                                                    std::to_string(head_v) + " are not supported (they must be equal and even)");
    }
    p.n_embd_head = static_cast<int>(head_k);
    XB_ASSIGN_OR_RETURN(const int64_t rope_dims, md.integer(a + "rope.dimension_count", head_k, 2, head_k));
    if (rope_dims % 2 != 0) {
        return Status(StatusCode::InvalidArgument, md.at({a + "rope.dimension_count"}) + a + "rope.dimension_count (" + std::to_string(rope_dims) +
                                                       ") must be even");
    }
    p.rope_n_dims = static_cast<int>(rope_dims);
    p.rope_mode = info.arch->rope_mode;
    XB_RETURN_IF_ERROR(set_rope_scaling(file, md, info.architecture, info));
    p.qkv_bias = info.arch->qkv_bias || file.find_tensor("blk.0.attn_q.bias") != nullptr;
    p.tied_output = file.find_tensor("output.weight") == nullptr;
    p.rope_freq_factors = file.find_tensor("rope_freqs.weight") != nullptr;
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
    return info;
}

LlamaWeightTypes gguf_weight_types(const GgufReader& file) {
    return [&file](const std::string& name, DType fallback) {
        const GgufTensorInfo* t = file.find_tensor(name);
        const GgmlTypeInfo* ti = t ? ggml_type_info(t->type) : nullptr;
        return ti && ti->dtype ? *ti->dtype : fallback;
    };
}

namespace {

// The roles of the file's tensors: "blk.<i>.<suffix>" by suffix (any layer), others by name.
bool has_role(const std::string& name, const std::set<std::string>& layer_suffixes, const std::set<std::string>& globals) {
    if (globals.count(name)) return true;
    if (name.rfind("blk.", 0) != 0) return false;
    const size_t dot = name.find('.', 4);
    if (dot == std::string::npos || dot == 4) return false;
    for (size_t i = 4; i < dot; ++i) {
        if (name[i] < '0' || name[i] > '9') return false;
    }
    return layer_suffixes.count(name.substr(dot + 1)) > 0;
}

std::string hyperparameters(const GgufModelInfo& info) {
    const LlamaParams& p = info.params;
    return "embedding_length " + std::to_string(p.n_embd) + ", feed_forward_length " + std::to_string(p.n_ff) +
           ", head_count " + std::to_string(p.n_head) + ", head_count_kv " + std::to_string(p.n_head_kv) + ", head size " +
           std::to_string(p.head_dim()) + ", vocabulary " + std::to_string(p.n_vocab);
}

}  // namespace

Status check_gguf_tensors(const GgufReader& file, const GgufModelInfo& info, const LlamaDecoder& m) {
    std::set<std::string> layer_suffixes;
    std::set<std::string> globals;
    for (const Tensor* w : m.weights()) {
        if (w->name.rfind("cache_", 0) == 0) continue;  // the KV cache is the graph's own
        const bool in_layer = w->name.rfind("blk.", 0) == 0;
        if (in_layer) {
            layer_suffixes.insert(w->name.substr(w->name.find('.', 4) + 1));
        } else {
            globals.insert(w->name);
        }
        const GgufTensorInfo* t = file.find_tensor(w->name);
        if (t == nullptr) {
            return Status(StatusCode::InvalidArgument, file.path() + ": no tensor " + quoted_name(w->name) + ", which a " + info.architecture +
                                                           " model needs");
        }
        const std::string where = file.path() + ": offset " + std::to_string(t->info_offset) + ": tensor " + quoted_name(t->name);
        const GgmlTypeInfo* ti = ggml_type_info(t->type);
        if (ti == nullptr || !ti->dtype) {
            return Status(StatusCode::NotSupported, where + " is " + (ti ? std::string(ti->name) : "of unknown type id " + std::to_string(t->type)) +
                                                        ", which xbackend cannot compute with (f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, "
                                                        "q8_0, q4_K, q5_K, q6_K)");
        }
        const bool is_vector = w->n_dims() == 1;  // norms and biases
        if (is_vector && *ti->dtype != DType::F32) {
            return Status(StatusCode::InvalidArgument, where + " is " + ti->name + "; norm weights and biases must be f32");
        }
        if (!is_vector && !is_float_type(*ti->dtype) && !is_quantized(*ti->dtype)) {
            return Status(StatusCode::InvalidArgument, where + " is " + ti->name + "; a weight matrix must be a float or quantized type");
        }
        // The shapes alone: a file may write trailing dims of 1 or leave them out ([8, 1] or [8]).
        if (t->ne != w->ne) {
            return Status(StatusCode::InvalidArgument, where + " has shape " + ne_string(t->ne, t->n_dims) + "; the model's " +
                                                           hyperparameters(info) + " need " + ne_string(w->ne, w->n_dims()));
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

Result<LlamaDecoder> build_gguf_graph(Context& ctx, const GgufReader& file, const GgufModelInfo& info, const LlamaParams& params) {
    XB_ASSIGN_OR_RETURN(LlamaDecoder m, info.arch->build(ctx, params, gguf_weight_types(file)));
    XB_RETURN_IF_ERROR(check_gguf_tensors(file, info, m));
    return m;
}

}  // namespace xb
