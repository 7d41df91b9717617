// The top level of a config: name, seed, params, defaults, tensors and their inits.
#include "config/config_parse.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "config/config_error.hpp"
#include "config/config_parse_internal.hpp"
#include "core/file_io.hpp"

namespace xb::config {

const char* init_kind_name(InitKind kind) {
    switch (kind) {
        case InitKind::Uniform: return "uniform";
        case InitKind::Normal: return "normal";
        case InitKind::Constant: return "constant";
        case InitKind::Arange: return "arange";
        case InitKind::CausalMask: return "causal_mask";
        case InitKind::Npy: return "npy";
        case InitKind::Gguf: return "gguf";
        case InitKind::Values: return "values";
    }
    return "?";
}

const char* role_name(Role role) {
    switch (role) {
        case Role::Weight: return "weight";
        case Role::Input: return "input";
        case Role::Output: return "output";
        case Role::Intermediate: return "intermediate";
    }
    return "?";
}

const char* model_kind_name(ModelKind kind) {
    switch (kind) {
        case ModelKind::Mlp: return "mlp";
        case ModelKind::Attention: return "attention";
        case ModelKind::LlamaDecoder: return "llama_decoder";
        case ModelKind::Gguf: return "gguf";
    }
    return "?";
}

const TensorSpec* ConfigSpec::find_tensor(std::string_view tensor_name) const {
    for (const TensorSpec& t : tensors) {
        if (t.name == tensor_name) return &t;
    }
    return nullptr;
}

std::optional<double> ConfigSpec::param(std::string_view param_name) const {
    for (const auto& [key, value] : params) {
        if (key == param_name) return value;
    }
    return std::nullopt;
}

namespace detail {

namespace {

struct InitKindInfo {
    InitKind kind;
    std::vector<std::string> keys;  // allowed besides "kind"
};

const std::vector<InitKindInfo>& init_kinds() {
    static const std::vector<InitKindInfo> kinds = {
        {InitKind::Uniform, {"min", "max"}},   {InitKind::Normal, {"mean", "std"}},
        {InitKind::Constant, {"value"}},       {InitKind::Arange, {"start", "step"}},
        {InitKind::CausalMask, {"window"}},    {InitKind::Npy, {"file"}},
        {InitKind::Gguf, {"file", "tensor"}},  {InitKind::Values, {"values"}},
    };
    return kinds;
}

// Reads an optional number member into `out`.
Status read_number(const JsonReader& r, const Json& j, const std::string& path, const char* key, double& out) {
    if (const Json* m = JsonReader::member(j, key)) {
        XB_ASSIGN_OR_RETURN(out, r.number(*m, child_path(path, key)));
    }
    return Status::ok();
}

}  // namespace

Result<std::string> read_file_name(const JsonReader& r, const Json& j, const std::string& path, const std::string& base_dir) {
    XB_ASSIGN_OR_RETURN(const Json* f, r.required(j, path, "file"));
    XB_ASSIGN_OR_RETURN(std::string file, r.string(*f, child_path(path, "file")));
    if (file.empty()) return r.error(child_path(path, "file"), "the file name is empty");
    return resolve_file_name(base_dir, file);
}

std::string resolve_file_name(const std::string& base_dir, const std::string& file) {
    const std::filesystem::path p(file);
    return p.is_absolute() ? file : (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

namespace {

Status parse_params(const JsonReader& r, const Json& j, ConfigSpec& spec) {
    if (!j.is_object()) return r.error("/params", "expected an object of named numbers, got " + JsonReader::describe(j));
    for (const auto& [key, value] : j.items()) {
        const std::string path = child_path("/params", key);
        if (key.empty() || !(std::isalpha(static_cast<unsigned char>(key[0])) || key[0] == '_')) {
            return r.error(path, "a param name starts with a letter or '_'");
        }
        for (char c : key) {
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
                return r.error(path, "a param name has only letters, digits and '_'");
            }
        }
        // Later params may use earlier ones: the reader sees spec.params as it grows.
        XB_ASSIGN_OR_RETURN(const double v, r.number(value, path));
        spec.params.emplace_back(key, v);
    }
    return Status::ok();
}

Status parse_defaults(const JsonReader& r, const Json& j, ConfigSpec& spec) {
    XB_RETURN_IF_ERROR(r.expect_object(j, "/defaults", {"type", "init"}));
    if (const Json* t = JsonReader::member(j, "type")) {
        XB_ASSIGN_OR_RETURN(spec.default_type, r.dtype(*t, "/defaults/type"));
    }
    if (const Json* i = JsonReader::member(j, "init")) {
        XB_ASSIGN_OR_RETURN(spec.default_init, parse_init(r, *i, "/defaults/init", spec.base_dir));
    }
    return Status::ok();
}

Result<TensorSpec> parse_tensor(const JsonReader& r, const Json& j, const std::string& name, const std::string& path,
                                const std::string& base_dir) {
    XB_RETURN_IF_ERROR(r.expect_object(j, path, {"shape", "type", "role", "init"}));
    TensorSpec t;
    t.name = name;
    t.path = path;
    if (const Json* s = JsonReader::member(j, "shape")) {
        XB_ASSIGN_OR_RETURN(t.shape, r.shape(*s, child_path(path, "shape")));
    }
    if (const Json* ty = JsonReader::member(j, "type")) {
        XB_ASSIGN_OR_RETURN(t.type, r.dtype(*ty, child_path(path, "type")));
    }
    if (const Json* ro = JsonReader::member(j, "role")) {
        XB_ASSIGN_OR_RETURN(const std::string role,
                            r.choice(*ro, child_path(path, "role"), {"weight", "input", "output", "intermediate"}));
        t.role = role == "weight" ? Role::Weight : role == "input" ? Role::Input : role == "output" ? Role::Output : Role::Intermediate;
        t.role_given = true;
    }
    if (const Json* in = JsonReader::member(j, "init")) {
        XB_ASSIGN_OR_RETURN(t.init, parse_init(r, *in, child_path(path, "init"), base_dir));
    }
    return t;
}

}  // namespace

// The "values" list of a values init: numbers (or expressions), at least one.
Result<std::vector<double>> read_values(const JsonReader& r, const Json& j, const std::string& path) {
    XB_ASSIGN_OR_RETURN(const Json* v, r.required(j, path, "values"));
    const std::string at = child_path(path, "values");
    XB_RETURN_IF_ERROR(r.expect_array(*v, at));
    if (v->empty()) return r.error(at, "values must not be empty");
    std::vector<double> out;
    out.reserve(v->size());
    for (size_t i = 0; i < v->size(); ++i) {
        XB_ASSIGN_OR_RETURN(const double x, r.number((*v)[i], child_path(at, i)));
        out.push_back(x);
    }
    return out;
}

Result<InitSpec> parse_init(const JsonReader& r, const Json& j, const std::string& path, const std::string& base_dir) {
    InitSpec init;
    init.path = path;
    if (j.is_number() || j.is_string()) {  // shorthand for a constant
        init.kind = InitKind::Constant;
        XB_ASSIGN_OR_RETURN(init.value, r.number(j, path));
        return init;
    }
    if (!j.is_object()) return r.error(path, "expected an init object (or a number), got " + JsonReader::describe(j));
    XB_ASSIGN_OR_RETURN(const Json* k, r.required(j, path, "kind"));
    std::vector<std::string> names;
    for (const InitKindInfo& info : init_kinds()) names.emplace_back(init_kind_name(info.kind));
    XB_ASSIGN_OR_RETURN(const std::string kind, r.choice(*k, child_path(path, "kind"), names));
    const InitKindInfo* info = nullptr;
    for (const InitKindInfo& i : init_kinds()) {
        if (kind == init_kind_name(i.kind)) info = &i;
    }
    std::vector<std::string> allowed = info->keys;
    allowed.insert(allowed.begin(), "kind");
    XB_RETURN_IF_ERROR(r.expect_object(j, path, allowed));
    init.kind = info->kind;
    XB_RETURN_IF_ERROR(read_number(r, j, path, "min", init.min));
    XB_RETURN_IF_ERROR(read_number(r, j, path, "max", init.max));
    XB_RETURN_IF_ERROR(read_number(r, j, path, "mean", init.mean));
    XB_RETURN_IF_ERROR(read_number(r, j, path, "std", init.std));
    XB_RETURN_IF_ERROR(read_number(r, j, path, "value", init.value));
    XB_RETURN_IF_ERROR(read_number(r, j, path, "start", init.start));
    XB_RETURN_IF_ERROR(read_number(r, j, path, "step", init.step));
    XB_RETURN_IF_ERROR(read_number(r, j, path, "window", init.window));
    if (!(init.window >= 0.0) || init.window != std::floor(init.window) || init.window > 1e9) {
        return r.error(child_path(path, "window"), "the window is a whole number of positions, at least 1 (0: none)");
    }
    if (init.kind == InitKind::Uniform && !(init.min < init.max)) {
        return r.error(path, "uniform needs min < max (got " + std::to_string(init.min) + ", " + std::to_string(init.max) + ")");
    }
    if (init.kind == InitKind::Normal && !(init.std >= 0.0)) return r.error(child_path(path, "std"), "std must not be negative");
    if (init.kind == InitKind::Npy || init.kind == InitKind::Gguf) {
        XB_ASSIGN_OR_RETURN(init.file, read_file_name(r, j, path, base_dir));
    }
    if (const Json* t = JsonReader::member(j, "tensor")) {
        XB_ASSIGN_OR_RETURN(init.tensor, r.string(*t, child_path(path, "tensor")));
    }
    if (init.kind == InitKind::Values) {
        XB_ASSIGN_OR_RETURN(init.values, read_values(r, j, path));
    }
    return init;
}

Status parse_tensors(const JsonReader& r, const Json& j, ConfigSpec& spec) {
    if (!j.is_object()) {
        return r.error("/tensors", "expected an object of tensors by name, got " + JsonReader::describe(j));
    }
    for (const auto& [name, value] : j.items()) {
        const std::string path = child_path("/tensors", name);
        if (name.empty()) return r.error(path, "a tensor name must not be empty");
        XB_ASSIGN_OR_RETURN(TensorSpec t, parse_tensor(r, value, name, path, spec.base_dir));
        spec.tensors.push_back(std::move(t));
    }
    return Status::ok();
}

}  // namespace detail

namespace {

// "configs/x.json:4:17: invalid JSON: syntax error while parsing object - unexpected '}'".
Status syntax_error(std::string_view text, const std::string& source, const nlohmann::json::parse_error& e) {
    size_t line = 1, column = 1;
    const size_t end = std::min(text.size(), e.byte > 0 ? e.byte - 1 : 0);
    for (size_t i = 0; i < end; ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    // nlohmann's message repeats the position after "parse error at line L, column C: ".
    std::string why = e.what();
    const size_t column_at = why.find("column ");
    const size_t colon = column_at == std::string::npos ? std::string::npos : why.find(": ", column_at);
    if (colon != std::string::npos) why = why.substr(colon + 2);
    return Status(StatusCode::InvalidArgument, source + ":" + std::to_string(line) + ":" + std::to_string(column) +
                                                   ": invalid JSON (byte " + std::to_string(e.byte) + "): " + why);
}

// Finds the first key that appears twice in one object while nlohmann parses (which would keep
// only one of them silently): a second tensor "w" must not replace the first unnoticed.
class DuplicateKeyFinder {
public:
    bool on_event(nlohmann::json::parse_event_t event, const Json& parsed) {
        using E = nlohmann::json::parse_event_t;
        switch (event) {
            case E::object_start: frames_.push_back({true, {}, "", 0}); break;
            case E::array_start: frames_.push_back({false, {}, "", 0}); break;
            case E::object_end:
            case E::array_end:
                if (!frames_.empty()) frames_.pop_back();
                next_element();
                break;
            case E::key: {
                if (frames_.empty() || !parsed.is_string()) break;
                Frame& top = frames_.back();
                top.key = parsed.get<std::string>();
                if (!top.keys.insert(top.key).second && duplicate_.empty()) duplicate_ = path_of_top() + "/" + pointer_segment(top.key);
                break;
            }
            case E::value: next_element(); break;
        }
        return true;
    }
    const std::string& duplicate() const { return duplicate_; }

private:
    struct Frame {
        bool object;
        std::set<std::string> keys;
        std::string key;  // objects: the member being parsed
        size_t index;     // arrays: the element being parsed
    };
    void next_element() {
        if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    }
    std::string path_of_top() const {
        std::string path;
        for (size_t i = 0; i + 1 < frames_.size(); ++i) {
            path += "/" + (frames_[i].object ? pointer_segment(frames_[i].key) : std::to_string(frames_[i].index));
        }
        return path;
    }
    std::vector<Frame> frames_;
    std::string duplicate_;
};

Status parse_root(const JsonReader& r, const Json& root, ConfigSpec& spec) {
    XB_RETURN_IF_ERROR(r.expect_object(
        root, "", {"$schema", "name", "description", "seed", "defaults", "params", "tensors", "graph", "placement"}));
    if (const Json* n = JsonReader::member(root, "name")) {
        XB_ASSIGN_OR_RETURN(spec.name, r.string(*n, "/name"));
    }
    if (const Json* d = JsonReader::member(root, "description")) XB_RETURN_IF_ERROR(r.string(*d, "/description").status());
    if (const Json* s = JsonReader::member(root, "$schema")) XB_RETURN_IF_ERROR(r.string(*s, "/$schema").status());
    if (const Json* s = JsonReader::member(root, "seed")) {
        XB_ASSIGN_OR_RETURN(const int64_t seed, r.integer_in(*s, "/seed", 0, INT64_MAX));
        spec.seed = static_cast<uint64_t>(seed);
    }
    if (const Json* p = JsonReader::member(root, "params")) XB_RETURN_IF_ERROR(detail::parse_params(r, *p, spec));
    if (const Json* d = JsonReader::member(root, "defaults")) XB_RETURN_IF_ERROR(detail::parse_defaults(r, *d, spec));
    if (const Json* t = JsonReader::member(root, "tensors")) XB_RETURN_IF_ERROR(detail::parse_tensors(r, *t, spec));
    XB_ASSIGN_OR_RETURN(const Json* g, r.required(root, "", "graph"));
    XB_RETURN_IF_ERROR(detail::parse_graph(r, *g, spec));
    if (const Json* p = JsonReader::member(root, "placement")) XB_RETURN_IF_ERROR(detail::parse_placement(r, *p, spec));
    return Status::ok();
}

}  // namespace

Result<ConfigSpec> parse_config(std::string_view text, std::string source, std::string base_dir) {
    ConfigSpec spec;
    spec.source = std::move(source);
    spec.base_dir = std::move(base_dir);
    Json root;
    DuplicateKeyFinder duplicates;
    try {
        root = Json::parse(text.begin(), text.end(), [&duplicates](int, nlohmann::json::parse_event_t event, Json& parsed) {
            return duplicates.on_event(event, parsed);
        });
    } catch (const nlohmann::json::parse_error& e) {
        return syntax_error(text, spec.source, e);
    } catch (const nlohmann::json::exception& e) {
        return Status(StatusCode::InvalidArgument, spec.source + ": invalid JSON: " + e.what());
    }
    const JsonReader reader(spec.source, spec.params);
    if (!duplicates.duplicate().empty()) {
        const std::string& path = duplicates.duplicate();
        return reader.error(path, "duplicate key '" + path.substr(path.rfind('/') + 1) + "' (JSON keeps only one of them)");
    }
    XB_RETURN_IF_ERROR(parse_root(reader, root, spec));
    if (spec.name.empty()) spec.name = std::filesystem::path(spec.source).stem().string();
    return spec;
}

Result<ConfigSpec> load_config(const std::string& path) {
    const std::filesystem::path p(path);
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
    if (p.extension() == ".gguf") {
        // A model file given as the config: the gguf model with every default.
        const Json config = {{"name", p.stem().string()},
                             {"graph", {{"model", "gguf"}, {"file", p.filename().string()}}}};
        return parse_config(config.dump(-1, ' ', false, Json::error_handler_t::replace), path, dir);
    }
    XB_ASSIGN_OR_RETURN(std::ifstream in, open_for_reading(path, "config file"));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return read_error(path, "config file");
    return parse_config(text.str(), path, dir);
}

}  // namespace xb::config
