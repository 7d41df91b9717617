// Typed lookups of a model file's metadata whose errors name the file, the key and where its
// value is (for the hyperparameters: models/gguf_model.cpp and each architecture's own keys in
// models/architectures.cpp).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/message_text.hpp"
#include "core/status.hpp"
#include "formats/gguf.hpp"

namespace xb {

inline constexpr int64_t kMaxHyperparameter = std::numeric_limits<int32_t>::max();
inline constexpr double kMaxReal = 1e30;  // epsilons, rope bases and factors, soft-caps

// Typed metadata lookups whose errors name the file, the key and where its value is.
class GgufMetadata {
public:
    explicit GgufMetadata(const GgufReader& file) : file_(file) {}

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
    // A number >= 0 (a soft-cap, a scale that may be off); `fallback` when the key is absent.
    Result<double> non_negative(const std::string& key, double fallback) const {
        const GgufKV* kv = file_.find_kv_entry(key);
        if (kv == nullptr) return fallback;
        const std::optional<double> v = kv->value.as_float();
        if (!v || kv->value.type == GgufValueType::Bool) {
            return error(*kv, std::string("is a ") + gguf_value_type_name(kv->value.type) + ", expected a number");
        }
        if (!(*v >= 0.0) || *v > kMaxReal) return error(*kv, "is " + kv->value.text() + ", expected a number from 0 to 1e30");
        return *v;
    }
    // A bool; `fallback` when the key is absent.
    Result<bool> boolean(const std::string& key, bool fallback) const {
        const GgufKV* kv = file_.find_kv_entry(key);
        if (kv == nullptr) return fallback;
        if (kv->value.type != GgufValueType::Bool) {
            return error(*kv, std::string("is a ") + gguf_value_type_name(kv->value.type) + ", expected a bool");
        }
        return std::get<bool>(kv->value.data);
    }
    bool has(const std::string& key) const { return file_.find_kv_entry(key) != nullptr; }
    bool is_array(const std::string& key) const {
        const GgufKV* kv = file_.find_kv_entry(key);
        return kv != nullptr && kv->value.type == GgufValueType::Array;
    }
    // An array of one bool per layer (the key must be present and an array: is_array).
    Result<std::vector<bool>> bool_per_layer(const std::string& key, int n_layers) const {
        const GgufKV* kv = file_.find_kv_entry(key);
        const std::vector<GgufValue>* items = kv != nullptr ? kv->value.as_array() : nullptr;
        if (items == nullptr) return missing(key, "an array of one bool per layer");
        if (kv->value.elem_type != GgufValueType::Bool) {
            return error(*kv, std::string("is an array of ") + gguf_value_type_name(kv->value.elem_type) + ", expected one bool per layer");
        }
        if (kv->value.array_length != static_cast<uint64_t>(n_layers) || items->size() != kv->value.array_length) {
            return error(*kv, "has " + std::to_string(kv->value.array_length) + " values, expected one per layer (" +
                                  std::to_string(n_layers) + ")");
        }
        std::vector<bool> out;
        out.reserve(items->size());
        for (const GgufValue& v : *items) out.push_back(std::get<bool>(v.data));
        return out;
    }
    // An array of one integer per layer, each in [min, max] (the key must be present and an
    // array: is_array).
    Result<std::vector<int64_t>> integer_per_layer(const std::string& key, int n_layers, int64_t min, int64_t max) const {
        const GgufKV* kv = file_.find_kv_entry(key);
        const std::vector<GgufValue>* items = kv != nullptr ? kv->value.as_array() : nullptr;
        if (items == nullptr) return missing(key, "an array of one integer per layer");
        if (items->size() != kv->value.array_length) return error(*kv, "is an array that could not be read");
        if (kv->value.array_length != static_cast<uint64_t>(n_layers)) {
            return error(*kv, "has " + std::to_string(kv->value.array_length) + " values, expected one per layer (" +
                                  std::to_string(n_layers) + ")");
        }
        std::vector<int64_t> out;
        for (size_t il = 0; il < items->size(); ++il) {
            const std::optional<int64_t> v = (*items)[il].as_int();
            if (!v || *v < min || *v > max) {
                return error(*kv, "has " + (*items)[il].text() + " for layer " + std::to_string(il) + ", expected " + std::to_string(min) +
                                      " to " + std::to_string(max));
            }
            out.push_back(*v);
        }
        return out;
    }
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
