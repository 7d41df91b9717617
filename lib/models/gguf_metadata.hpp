// Typed lookups of a model file's metadata whose errors name the file, the key and where its
// value is (for the hyperparameters: models/gguf_model.cpp and each architecture's own keys in
// models/architectures.cpp).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "core/status.hpp"
#include "formats/gguf.hpp"

namespace xb {

inline constexpr int64_t kMaxHyperparameter = std::numeric_limits<int32_t>::max();

// Typed metadata lookups whose errors name the file, the key and where its value is.
class GgufMetadata {
public:
    explicit GgufMetadata(const GgufReader& file) : file_(file) {}

    Status error(const GgufKV& kv, const std::string& why) const {
        return Status(StatusCode::InvalidArgument,
                      file_.path() + ": offset " + std::to_string(kv.offset) + ": metadata '" + kv.key + "' " + why);
    }
    Status missing(const std::string& key, const std::string& why) const {
        return Status(StatusCode::InvalidArgument, file_.path() + ": no metadata '" + key + "' (" + why + ")");
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
        const std::optional<int64_t> v = kv->value.as_int();
        if (!v) return error(*kv, std::string("is a ") + gguf_value_type_name(kv->value.type) + ", expected an integer");
        if (*v < min || *v > max) {
            return error(*kv, "is " + std::to_string(*v) + ", expected " + std::to_string(min) + " to " + std::to_string(max));
        }
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
        if (!(*v > 0.0) || *v > 1e30) return error(*kv, "is " + std::to_string(*v) + ", expected a positive number");
        return *v;
    }
    // A number >= 0 (a soft-cap, a scale that may be off); `fallback` when the key is absent.
    Result<double> non_negative(const std::string& key, double fallback) const {
        const GgufKV* kv = file_.find_kv_entry(key);
        if (kv == nullptr) return fallback;
        const std::optional<double> v = kv->value.as_float();
        if (!v || kv->value.type == GgufValueType::Bool) {
            return error(*kv, std::string("is a ") + gguf_value_type_name(kv->value.type) + ", expected a number");
        }
        if (!(*v >= 0.0) || *v > 1e30) return error(*kv, "is " + std::to_string(*v) + ", expected a number of at least 0");
        return *v;
    }
    bool has(const std::string& key) const { return file_.find_kv_entry(key) != nullptr; }
    const GgufReader& file() const { return file_; }
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

}  // namespace xb
