// "/graph": an explicit list of ops (checked against the op table, with names resolved to
// tensors and earlier ops), or a model builder with its parameters.
#include <limits>
#include <map>

#include "config/config_error.hpp"
#include "config/config_parse_internal.hpp"
#include "config/op_table.hpp"
#include "config/token_file.hpp"
#include "core/message_text.hpp"

namespace xb::config::detail {

namespace {

constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();

Result<ParamValue> parse_op_param(const JsonReader& r, const Json& j, const std::string& path, const ParamDesc& d) {
    ParamValue v;
    v.path = path;
    switch (d.kind) {
        case ParamKind::Number: {
            XB_ASSIGN_OR_RETURN(v.value, r.number(j, path));
            break;
        }
        case ParamKind::Int: {
            XB_ASSIGN_OR_RETURN(const int64_t i, r.integer(j, path));
            v.value = static_cast<double>(i);
            break;
        }
        case ParamKind::Bool: {
            XB_ASSIGN_OR_RETURN(v.value, r.boolean(j, path));
            break;
        }
        case ParamKind::Choice: {
            XB_ASSIGN_OR_RETURN(v.value, r.choice(j, path, std::vector<std::string>(d.choices.begin(), d.choices.end())));
            break;
        }
        case ParamKind::IntList: {
            if (!j.is_array()) return r.error(path, "expected a list of integers, got " + JsonReader::describe(j));
            if (j.empty() || j.size() > d.max_items) {
                return r.error(path, "expected 1 to " + std::to_string(d.max_items) + " integers, got " + std::to_string(j.size()));
            }
            std::vector<double> list;
            for (size_t i = 0; i < j.size(); ++i) {
                XB_ASSIGN_OR_RETURN(const int64_t n, r.integer(j[i], child_path(path, i)));
                list.push_back(static_cast<double>(n));
            }
            v.value = std::move(list);
            break;
        }
    }
    return v;
}

Status parse_op_params(const JsonReader& r, const Json* j, const std::string& op_path, const OpDesc& desc, OpSpec& op) {
    const std::string path = child_path(op_path, "params");
    std::vector<std::string> keys;
    for (const ParamDesc& d : desc.params) keys.emplace_back(d.key);
    if (j != nullptr) {
        if (desc.params.empty() && j->is_object() && !j->empty()) {
            return r.error(child_path(path, j->begin().key()), "op '" + std::string(desc.name) + "' has no parameters");
        }
        XB_RETURN_IF_ERROR(r.expect_object(*j, path, keys));
    }
    for (const ParamDesc& d : desc.params) {
        const Json* v = j ? JsonReader::member(*j, d.key) : nullptr;
        if (v == nullptr) {
            if (d.required) {
                return r.error(j ? path : op_path, "missing parameter '" + std::string(d.key) + "' of " + std::string(desc.name) +
                                                       (j ? "" : " (give it in \"params\")"));
            }
            continue;
        }
        XB_ASSIGN_OR_RETURN(ParamValue pv, parse_op_param(r, *v, child_path(path, d.key), d));
        op.params.emplace(std::string(d.key), std::move(pv));
    }
    return Status::ok();
}

Status parse_op_args(const JsonReader& r, const Json* j, const std::string& op_path, const OpDesc& desc, OpSpec& op) {
    const std::string path = child_path(op_path, "args");
    const std::string usage = std::string(desc.name) + " takes " +
                              (desc.args.empty() ? std::string("no arguments") : "(" + [&] {
                                  std::string s;
                                  for (size_t i = 0; i < desc.args.size(); ++i) {
                                      s += (i ? ", " : "") + std::string(desc.args[i]) + (i >= desc.min_args ? "?" : "");
                                  }
                                  return s;
                              }() + ")");
    if (j == nullptr) {
        if (desc.min_args > 0) return r.error(op_path, "missing field 'args': " + usage);
        return Status::ok();
    }
    XB_RETURN_IF_ERROR(r.expect_array(*j, path));
    if (j->size() < desc.min_args || j->size() > desc.args.size()) {
        return r.error(path, "got " + std::to_string(j->size()) + " arguments, but " + usage);
    }
    for (size_t i = 0; i < j->size(); ++i) {
        const std::string arg_path = child_path(path, i);
        const Json& a = (*j)[i];
        if (a.is_null()) {
            if (i < desc.min_args) {
                return r.error(arg_path, "argument '" + std::string(desc.args[i]) + "' of " + std::string(desc.name) + " is required");
            }
            op.args.push_back({"", arg_path});
            continue;
        }
        XB_ASSIGN_OR_RETURN(std::string name, r.string(a, arg_path));
        op.args.push_back({std::move(name), arg_path});
    }
    return Status::ok();
}

Result<OpSpec> parse_op(const JsonReader& r, const Json& j, const std::string& path) {
    XB_RETURN_IF_ERROR(r.expect_object(j, path, {"name", "op", "args", "params", "output"}));
    OpSpec op;
    op.path = path;
    XB_ASSIGN_OR_RETURN(const Json* n, r.required(j, path, "name"));
    XB_ASSIGN_OR_RETURN(op.name, r.string(*n, child_path(path, "name")));
    if (op.name.empty()) return r.error(child_path(path, "name"), "an op name must not be empty");
    XB_ASSIGN_OR_RETURN(const Json* o, r.required(j, path, "op"));
    XB_ASSIGN_OR_RETURN(op.op, r.string(*o, child_path(path, "op")));
    const OpDesc* desc = find_op_desc(op.op);
    if (desc == nullptr) {
        const std::vector<std::string> names = op_table_names();
        return r.error(child_path(path, "op"),
                       unknown_name("op", op.op, names) + " (ops: " + join_names(names, 100) + ")");
    }
    XB_RETURN_IF_ERROR(parse_op_args(r, JsonReader::member(j, "args"), path, *desc, op));
    XB_RETURN_IF_ERROR(parse_op_params(r, JsonReader::member(j, "params"), path, *desc, op));
    if (const Json* out = JsonReader::member(j, "output")) {
        XB_ASSIGN_OR_RETURN(op.output, r.boolean(*out, child_path(path, "output")));
    }
    return op;
}

// Names: ops are unique and distinct from leaf tensors; every argument is a leaf or an earlier op.
Status resolve_names(const JsonReader& r, const ConfigSpec& spec) {
    std::map<std::string, size_t, std::less<>> op_index;
    for (size_t i = 0; i < spec.ops.size(); ++i) {
        const OpSpec& op = spec.ops[i];
        const std::string name_path = child_path(op.path, "name");
        if (auto it = op_index.find(op.name); it != op_index.end()) {
            return r.error(name_path, "duplicate op name " + quoted_name(op.name) + " (also " + spec.ops[it->second].path + ")");
        }
        const TensorSpec* t = spec.find_tensor(op.name);
        if (t != nullptr && (t->role == Role::Weight || t->role == Role::Input)) {
            return r.error(name_path, quoted_name(op.name) + " is already a " + role_name(t->role) + " tensor (" + t->path +
                                          "); give the op another name");
        }
        op_index.emplace(op.name, i);
    }
    for (const TensorSpec& t : spec.tensors) {
        if (is_pattern(t.name)) {
            return r.error(t.path, "tensor names are patterns only with a model builder; " + quoted_name(t.name) + " is not a name");
        }
        const bool result = t.role == Role::Output || t.role == Role::Intermediate;
        if (result && op_index.find(t.name) == op_index.end()) {
            return r.error(child_path(t.path, "role"), std::string("role ") + role_name(t.role) +
                                                           " describes the result of an op, but no op is called " + quoted_name(t.name));
        }
        if (result && t.init) return r.error(child_path(t.path, "init"), "the result of an op has no init");
        if (!result && !t.shape) return r.error(t.path, "missing field 'shape'");
        const DType type = t.type.value_or(spec.default_type);
        const bool has_init = t.init || (t.role == Role::Weight && spec.default_init);
        if (t.shape && !t.shape->empty() && (*t.shape)[0] % blck_size(type) != 0) {
            return r.error(child_path(t.path, "shape"), std::string(dtype_name(type)) + " rows are blocks of " +
                                                            std::to_string(blck_size(type)) + " values: shape[0] = " +
                                                            std::to_string((*t.shape)[0]) + " is not a multiple");
        }
        if (!result && !has_init && !is_float_type(type) && !is_quantized(type)) {
            return r.error(t.path, std::string("missing field 'init': ") + dtype_name(type) +
                                       " tensors have no default init (give e.g. {\"kind\": \"uniform\", \"min\": 0, \"max\": 10})");
        }
    }
    for (size_t i = 0; i < spec.ops.size(); ++i) {
        const OpSpec& op = spec.ops[i];
        std::vector<std::string> known;
        for (const TensorSpec& t : spec.tensors) {
            if (t.role == Role::Weight || t.role == Role::Input) known.push_back(t.name);
        }
        for (size_t k = 0; k < i; ++k) known.push_back(spec.ops[k].name);
        for (const OpArg& a : op.args) {
            if (a.name.empty()) continue;
            const auto it = op_index.find(a.name);
            if (it != op_index.end() && it->second == i) {
                return r.error(a.path, "op " + quoted_name(op.name) + " uses its own result: a cycle");
            }
            if (it != op_index.end() && it->second > i) {
                return r.error(a.path, quoted_name(a.name) + " is the result of a later op (" + spec.ops[it->second].path +
                                           "): ops may use only tensors and earlier ops, so this is a forward reference or a cycle");
            }
            if (it != op_index.end()) continue;
            const TensorSpec* t = spec.find_tensor(a.name);
            if (t == nullptr) {
                return r.error(a.path, unknown_name("tensor", a.name, known) +
                                           " (tensors and earlier ops: " + join_names(known) + ")");
            }
        }
    }
    return Status::ok();
}

// --- model builders -----------------------------------------------------------------------------------

// The documented ranges of the builders' sizes (README: Configs): far beyond real models, and
// small enough that a config cannot ask for billions of nodes (n_layers 2^31 would build for
// minutes) or sizes whose products overflow.
int64_t max_builder_size(std::string_view key) {
    static constexpr std::pair<std::string_view, int64_t> kMax[] = {
        {"n_layers", 1024},   {"n_embd", 65536},      {"n_head", 1024},      {"n_head_kv", 1024},
        {"n_ff", 1 << 18},    {"n_hidden", 1 << 18},  {"n_vocab", 1 << 22},  {"n_tokens", kMaxBatchTokens},
        {"n_batch", 1 << 16}, {"n_kv", 1 << 20},      {"n_dims", 1 << 16},
    };
    for (const auto& [name, max] : kMax) {
        if (name == key) return max;
    }
    return kMaxSize;
}

// Reads the builder's parameters one by one, each into its field.
class ModelParamReader {
public:
    ModelParamReader(const JsonReader& r, const Json& j, std::string path) : r_(r), j_(j), path_(std::move(path)) {}

    Status size(const char* key, int& out, int64_t min = 1) {
        if (const Json* v = JsonReader::member(j_, key)) {
            XB_ASSIGN_OR_RETURN(const int64_t n, r_.integer_in(*v, child_path(path_, key), min, max_builder_size(key)));
            out = static_cast<int>(n);
        }
        return Status::ok();
    }
    Status real(const char* key, float& out) {
        if (const Json* v = JsonReader::member(j_, key)) {
            XB_ASSIGN_OR_RETURN(const double d, r_.number(*v, child_path(path_, key)));
            out = static_cast<float>(d);
        }
        return Status::ok();
    }
    Status flag(const char* key, bool& out) {
        if (const Json* v = JsonReader::member(j_, key)) {
            XB_ASSIGN_OR_RETURN(out, r_.boolean(*v, child_path(path_, key)));
        }
        return Status::ok();
    }
    Status type(const char* key, DType& out) {
        if (const Json* v = JsonReader::member(j_, key)) {
            XB_ASSIGN_OR_RETURN(out, r_.dtype(*v, child_path(path_, key)));
            if (!is_float_type(out) && !is_quantized(out)) {
                return r_.error(child_path(path_, key), "weights must have a float or quantized type (f32, f16, bf16, or a GGUF block format: q4_0 ... q6_K, iq1_s ... iq4_xs, tq1_0, tq2_0, mxfp4, nvfp4)");
            }
        }
        return Status::ok();
    }
    // "all" (0), "last" (1) or a count of positions from 1 to n_tokens.
    Status outputs(const char* key, std::optional<int>& out, int n_tokens) {
        const Json* v = JsonReader::member(j_, key);
        if (v == nullptr) return Status::ok();
        const std::string path = child_path(path_, key);
        if (v->is_string()) {
            XB_ASSIGN_OR_RETURN(const std::string word, r_.choice(*v, path, {"all", "last"}));
            out = word == "all" ? 0 : 1;
            return Status::ok();
        }
        if (!v->is_number_integer()) return r_.error(path, "outputs must be \"all\", \"last\" or a number of positions");
        XB_ASSIGN_OR_RETURN(const int64_t n, r_.integer_in(*v, path, 1, n_tokens));
        out = static_cast<int>(n);
        return Status::ok();
    }
    bool has(const char* key) const { return JsonReader::member(j_, key) != nullptr; }
    const JsonReader& reader() const { return r_; }
    const Json& json() const { return j_; }
    const std::string& path() const { return path_; }

private:
    const JsonReader& r_;
    const Json& j_;
    std::string path_;
};

Status parse_mlp(ModelParamReader& m, MlpParams& p) {
    XB_RETURN_IF_ERROR(m.reader().expect_object(m.json(), m.path(),
                                                {"n_layers", "n_embd", "n_hidden", "n_batch", "activation", "weight_type"}));
    XB_RETURN_IF_ERROR(m.size("n_layers", p.n_layers));
    XB_RETURN_IF_ERROR(m.size("n_embd", p.n_embd));
    XB_RETURN_IF_ERROR(m.size("n_hidden", p.n_hidden));
    XB_RETURN_IF_ERROR(m.size("n_batch", p.n_batch));
    XB_RETURN_IF_ERROR(m.type("weight_type", p.weight_type));
    if (const Json* a = JsonReader::member(m.json(), "activation")) {
        std::vector<std::string> names;
        for (int i = 0; i < kUnaryOpCount; ++i) names.emplace_back(unary_op_name(static_cast<UnaryOp>(i)));
        XB_ASSIGN_OR_RETURN(const std::string fn, m.reader().choice(*a, child_path(m.path(), "activation"), names));
        p.activation = unary_op_from_name(fn).value_or(UnaryOp::Gelu);
    }
    return Status::ok();
}

Status parse_attention(ModelParamReader& m, AttentionParams& p) {
    XB_RETURN_IF_ERROR(m.reader().expect_object(
        m.json(), m.path(), {"n_embd", "n_head", "n_head_kv", "n_tokens", "n_kv", "flash_attn", "weight_type"}));
    XB_RETURN_IF_ERROR(m.size("n_embd", p.n_embd));
    XB_RETURN_IF_ERROR(m.size("n_head", p.n_head));
    p.n_head_kv = p.n_head;
    XB_RETURN_IF_ERROR(m.size("n_head_kv", p.n_head_kv));
    XB_RETURN_IF_ERROR(m.size("n_tokens", p.n_tokens));
    XB_RETURN_IF_ERROR(m.size("n_kv", p.n_kv, 0));
    XB_RETURN_IF_ERROR(m.flag("flash_attn", p.flash_attn));
    return m.type("weight_type", p.weight_type);
}

Status parse_rope(const JsonReader& r, const Json& j, const std::string& path, DecoderParams& p) {
    XB_RETURN_IF_ERROR(r.expect_object(j, path, {"freq_base", "freq_scale", "mode", "n_dims"}));
    ModelParamReader m(r, j, path);
    XB_RETURN_IF_ERROR(m.real("freq_base", p.rope_freq_base));
    XB_RETURN_IF_ERROR(m.real("freq_scale", p.rope_freq_scale));
    XB_RETURN_IF_ERROR(m.size("n_dims", p.rope_n_dims, 0));
    if (const Json* mode = JsonReader::member(j, "mode")) {
        XB_ASSIGN_OR_RETURN(const std::string v, r.choice(*mode, child_path(path, "mode"), {"normal", "neox"}));
        p.rope_mode = v == "neox" ? RopeMode::Neox : RopeMode::Normal;
    }
    return Status::ok();
}

Status parse_llama(ModelParamReader& m, DecoderParams& p) {
    XB_RETURN_IF_ERROR(m.reader().expect_object(m.json(), m.path(),
                                                {"n_layers", "n_embd", "n_head", "n_head_kv", "n_ff", "n_tokens", "n_kv",
                                                 "n_vocab", "rms_eps", "weight_type", "flash_attn", "rope", "outputs"}));
    XB_RETURN_IF_ERROR(m.size("n_layers", p.n_layers));
    XB_RETURN_IF_ERROR(m.size("n_embd", p.n_embd));
    XB_RETURN_IF_ERROR(m.size("n_head", p.n_head));
    p.n_head_kv = p.n_head;
    XB_RETURN_IF_ERROR(m.size("n_head_kv", p.n_head_kv));
    XB_RETURN_IF_ERROR(m.size("n_ff", p.n_ff));
    XB_RETURN_IF_ERROR(m.size("n_tokens", p.n_tokens));
    XB_RETURN_IF_ERROR(m.size("n_kv", p.n_kv, 0));
    XB_RETURN_IF_ERROR(m.size("n_vocab", p.n_vocab));
    XB_RETURN_IF_ERROR(m.real("rms_eps", p.rms_eps));
    XB_RETURN_IF_ERROR(m.type("weight_type", p.weight_type));
    XB_RETURN_IF_ERROR(m.flag("flash_attn", p.flash_attn));
    if (const Json* rope = JsonReader::member(m.json(), "rope")) {
        XB_RETURN_IF_ERROR(parse_rope(m.reader(), *rope, child_path(m.path(), "rope"), p));
    }
    return Status::ok();
}

Status parse_gguf(ModelParamReader& m, GgufModelParams& p, const std::string& base_dir) {
    XB_RETURN_IF_ERROR(m.reader().expect_object(m.json(), m.path(), {"n_tokens", "n_kv", "kv_cells", "n_layers", "flash_attn", "tokens", "outputs"}));
    if (const Json* t = JsonReader::member(m.json(), "tokens"); t != nullptr && t->is_string()) {
        // A token file (config/token_file.hpp), relative to the config's folder.
        auto ids = read_token_file(resolve_file_name(base_dir, t->get<std::string>()));
        if (!ids.is_ok()) return m.reader().error(child_path(m.path(), "tokens"), ids.status().message());
        p.tokens = std::move(ids).value();
        p.n_tokens = static_cast<int>(p.tokens.size());
    } else if (t != nullptr) {
        const std::string path = child_path(m.path(), "tokens");
        XB_RETURN_IF_ERROR(m.reader().expect_array(*t, path));
        if (t->empty()) return m.reader().error(path, "tokens must not be empty");
        for (size_t i = 0; i < t->size(); ++i) {
            XB_ASSIGN_OR_RETURN(const int64_t id, m.reader().integer_in((*t)[i], child_path(path, i), 0, kMaxSize));
            p.tokens.push_back(static_cast<int32_t>(id));
        }
        p.n_tokens = static_cast<int>(p.tokens.size());
    }
    if (p.tokens.size() > static_cast<size_t>(kMaxBatchTokens)) {
        return m.reader().error(child_path(m.path(), "tokens"), std::to_string(p.tokens.size()) + " tokens are more than the " +
                                                                    std::to_string(kMaxBatchTokens) + " a batch may have");
    }
    XB_RETURN_IF_ERROR(m.size("n_tokens", p.n_tokens));
    if (!p.tokens.empty() && static_cast<size_t>(p.n_tokens) != p.tokens.size()) {
        return m.reader().error(child_path(m.path(), "n_tokens"), "n_tokens is " + std::to_string(p.n_tokens) + " but " +
                                                                     std::to_string(p.tokens.size()) + " tokens are given");
    }
    XB_RETURN_IF_ERROR(m.size("n_kv", p.n_kv, 0));
    if (p.n_kv != 0 && p.n_kv < p.n_tokens) {
        return m.reader().error(child_path(m.path(), "n_kv"), "n_kv (" + std::to_string(p.n_kv) +
                                                                 ") must be at least n_tokens (" + std::to_string(p.n_tokens) + ")");
    }
    XB_RETURN_IF_ERROR(m.size("kv_cells", p.kv_cells, 0));
    if (p.kv_cells != 0 && p.kv_cells < std::max(p.n_kv, p.n_tokens)) {
        return m.reader().error(child_path(m.path(), "kv_cells"), "kv_cells (" + std::to_string(p.kv_cells) +
                                                                     ") must hold the cache's n_kv positions (" +
                                                                     std::to_string(std::max(p.n_kv, p.n_tokens)) + ")");
    }
    XB_RETURN_IF_ERROR(m.size("n_layers", p.n_layers));
    return m.flag("flash_attn", p.flash_attn);
}

Status parse_model(const JsonReader& r, const Json& j, ConfigSpec& spec) {
    XB_RETURN_IF_ERROR(r.expect_object(j, "/graph", {"model", "file", "params"}));
    XB_ASSIGN_OR_RETURN(const Json* k, r.required(j, "/graph", "model"));
    XB_ASSIGN_OR_RETURN(const std::string kind, r.choice(*k, "/graph/model", {"mlp", "attention", "llama_decoder", "gguf"}));
    ModelSpec m;
    m.path = "/graph";
    m.kind = kind == "mlp"         ? ModelKind::Mlp
             : kind == "attention" ? ModelKind::Attention
             : kind == "gguf"      ? ModelKind::Gguf
                                   : ModelKind::LlamaDecoder;
    if (m.kind == ModelKind::Gguf) {
        XB_ASSIGN_OR_RETURN(m.gguf.file, read_file_name(r, j, "/graph", spec.base_dir));
    } else if (JsonReader::member(j, "file") != nullptr) {
        return r.error("/graph/file", "only the gguf model reads a file; the " + kind + " builder makes its own weights");
    }
    // Weights default to the config's default type unless the builder's params say otherwise.
    m.mlp.weight_type = m.attention.weight_type = m.llama.weight_type = spec.default_type;
    static const Json empty = Json::object();
    const Json* params = JsonReader::member(j, "params");
    ModelParamReader reader(r, params ? *params : empty, "/graph/params");
    switch (m.kind) {
        case ModelKind::Mlp: XB_RETURN_IF_ERROR(parse_mlp(reader, m.mlp)); break;
        case ModelKind::Attention: XB_RETURN_IF_ERROR(parse_attention(reader, m.attention)); break;
        case ModelKind::LlamaDecoder:
            XB_RETURN_IF_ERROR(parse_llama(reader, m.llama));
            XB_RETURN_IF_ERROR(reader.outputs("outputs", m.n_outputs, m.llama.n_tokens));
            break;
        case ModelKind::Gguf:
            XB_RETURN_IF_ERROR(parse_gguf(reader, m.gguf, spec.base_dir));
            XB_RETURN_IF_ERROR(reader.outputs("outputs", m.n_outputs, m.gguf.n_tokens));
            break;
    }
    for (const TensorSpec& t : spec.tensors) {
        if (t.role_given && (t.role == Role::Output || t.role == Role::Intermediate)) {
            return r.error(child_path(t.path, "role"), std::string("a model builder chooses its outputs; role ") +
                                                           role_name(t.role) + " is for explicit graphs");
        }
    }
    spec.model = std::move(m);
    return Status::ok();
}

}  // namespace

Status parse_graph(const JsonReader& r, const Json& j, ConfigSpec& spec) {
    if (j.is_object()) return parse_model(r, j, spec);
    if (!j.is_array()) {
        return r.error("/graph", "expected a list of ops or a model builder object, got " + JsonReader::describe(j));
    }
    if (j.empty()) return r.error("/graph", "the graph has no ops");
    for (size_t i = 0; i < j.size(); ++i) {
        XB_ASSIGN_OR_RETURN(OpSpec op, parse_op(r, j[i], child_path("/graph", i)));
        spec.ops.push_back(std::move(op));
    }
    return resolve_names(r, spec);
}

}  // namespace xb::config::detail
