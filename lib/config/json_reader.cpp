#include "config/json_reader.hpp"

#include <cmath>

#include "config/config_error.hpp"

namespace xb::config {

Status JsonReader::error(std::string_view path, std::string_view message) const {
    return config_error(source_, path.empty() ? "/" : path, message);
}

Status JsonReader::expect_object(const Json& j, std::string_view path, const std::vector<std::string>& allowed) const {
    if (!j.is_object()) return error(path, "expected an object, got " + describe(j));
    for (const auto& [key, value] : j.items()) {
        bool known = false;
        for (const std::string& a : allowed) known = known || a == key;
        if (!known) {
            return error(child_path(path, key),
                         unknown_name("key", key, allowed) + " (expected one of: " + join_names(allowed, 64) + ")");
        }
    }
    return Status::ok();
}

Status JsonReader::expect_object(const Json& j, std::string_view path, std::initializer_list<const char*> allowed) const {
    return expect_object(j, path, std::vector<std::string>(allowed.begin(), allowed.end()));
}

Status JsonReader::expect_array(const Json& j, std::string_view path) const {
    if (!j.is_array()) return error(path, "expected an array, got " + describe(j));
    return Status::ok();
}

const Json* JsonReader::member(const Json& object, std::string_view key) {
    if (!object.is_object()) return nullptr;
    auto it = object.find(std::string(key));
    return it == object.end() ? nullptr : &*it;
}

Result<const Json*> JsonReader::required(const Json& object, std::string_view path, std::string_view key) const {
    const Json* m = member(object, key);
    if (m == nullptr) return error(path, "missing field '" + std::string(key) + "'");
    return m;
}

Result<double> JsonReader::number(const Json& j, std::string_view path) const {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
        Result<double> v = eval_expr(j.get_ref<const std::string&>(), params_);
        if (!v.is_ok()) return error(path, v.status().message());
        return v;
    }
    return error(path, "expected a number (or an expression string), got " + describe(j));
}

Result<int64_t> JsonReader::integer(const Json& j, std::string_view path) const {
    if (j.is_number_integer()) {
        if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
            return error(path, "integer " + j.dump() + " is too large");
        }
        return j.get<int64_t>();
    }
    if (j.is_number_float() || j.is_string()) {
        XB_ASSIGN_OR_RETURN(const double v, number(j, path));
        // 2^53: beyond it doubles no longer hold every integer.
        if (v != std::trunc(v) || std::fabs(v) > 9007199254740992.0) {
            return error(path, "expected an integer, got " + (j.is_string() ? describe(j) + " = " + std::to_string(v) : describe(j)));
        }
        return static_cast<int64_t>(v);
    }
    return error(path, "expected an integer (or an expression string), got " + describe(j));
}

Result<int64_t> JsonReader::integer_in(const Json& j, std::string_view path, int64_t min, int64_t max) const {
    XB_ASSIGN_OR_RETURN(const int64_t v, integer(j, path));
    if (v < min || v > max) {
        return error(path, "value " + std::to_string(v) + " is out of range [" + std::to_string(min) + ", " +
                               std::to_string(max) + "]");
    }
    return v;
}

Result<std::string> JsonReader::string(const Json& j, std::string_view path) const {
    if (!j.is_string()) return error(path, "expected a string, got " + describe(j));
    return j.get<std::string>();
}

Result<bool> JsonReader::boolean(const Json& j, std::string_view path) const {
    if (!j.is_boolean()) return error(path, "expected true or false, got " + describe(j));
    return j.get<bool>();
}

Result<DType> JsonReader::dtype(const Json& j, std::string_view path) const {
    XB_ASSIGN_OR_RETURN(const std::string name, string(j, path));
    const std::optional<DType> t = dtype_from_name(name);
    if (!t) {
        std::vector<std::string> names;
        for (int i = 0; i < kDTypeCount; ++i) names.emplace_back(dtype_name(static_cast<DType>(i)));
        return error(path, unknown_name("type", name, names) + " (types: " + join_names(names) + ")");
    }
    return *t;
}

Result<std::string> JsonReader::choice(const Json& j, std::string_view path, const std::vector<std::string>& choices) const {
    XB_ASSIGN_OR_RETURN(std::string v, string(j, path));
    for (const std::string& c : choices) {
        if (c == v) return v;
    }
    return error(path, unknown_name("value", v, choices) + " (expected one of: " + join_names(choices, 64) + ")");
}

Result<std::vector<int64_t>> JsonReader::shape(const Json& j, std::string_view path) const {
    if (!j.is_array()) return error(path, "expected a shape (an array of 1 to 4 sizes), got " + describe(j));
    if (j.empty() || j.size() > 4) {
        return error(path, "a shape has 1 to 4 sizes (innermost first), got " + std::to_string(j.size()));
    }
    std::vector<int64_t> ne;
    for (size_t i = 0; i < j.size(); ++i) {
        XB_ASSIGN_OR_RETURN(const int64_t n, integer(j[i], child_path(path, i)));
        // An empty tensor computes nothing: in a config, a 0 is a mistake.
        if (n < 1) return error(child_path(path, i), "a size must be at least 1, got " + std::to_string(n));
        ne.push_back(n);
    }
    return ne;
}

std::string JsonReader::describe(const Json& j) {
    if (j.is_object()) return "an object";
    if (j.is_array()) return "an array";
    if (j.is_null()) return "null";
    std::string text = j.dump();
    text = excerpt(text, 37);
    if (j.is_string()) return "string " + text;
    if (j.is_boolean()) return "boolean " + text;
    return "number " + text;
}

}  // namespace xb::config
