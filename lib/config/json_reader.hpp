// Typed reading of a parsed JSON document, for the config parser (internal: the only header
// that includes nlohmann/json). Every failure is a Status naming the file and the JSON pointer of
// the value at fault.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/expr.hpp"
#include "core/dtype.hpp"
#include "core/status.hpp"

namespace xb::config {

using Json = nlohmann::ordered_json;

class JsonReader {
public:
    JsonReader(std::string source, const ParamList& params) : source_(std::move(source)), params_(params) {}

    const std::string& source() const { return source_; }
    Status error(std::string_view path, std::string_view message) const;

    // `j` must be an object whose keys are all in `allowed`.
    Status expect_object(const Json& j, std::string_view path, const std::vector<std::string>& allowed) const;
    Status expect_object(const Json& j, std::string_view path, std::initializer_list<const char*> allowed) const;
    Status expect_array(const Json& j, std::string_view path) const;
    // The member, or nullptr when absent.
    static const Json* member(const Json& object, std::string_view key);
    // The member, or "missing field" naming the object's path.
    Result<const Json*> required(const Json& object, std::string_view path, std::string_view key) const;

    // A number, or a string holding an expression over the params.
    Result<double> number(const Json& j, std::string_view path) const;
    // An integer (or an expression with an integral value).
    Result<int64_t> integer(const Json& j, std::string_view path) const;
    Result<int64_t> integer_in(const Json& j, std::string_view path, int64_t min, int64_t max) const;
    Result<std::string> string(const Json& j, std::string_view path) const;
    Result<bool> boolean(const Json& j, std::string_view path) const;
    Result<DType> dtype(const Json& j, std::string_view path) const;
    // One of `choices`.
    Result<std::string> choice(const Json& j, std::string_view path, const std::vector<std::string>& choices) const;
    // A shape: 1 to 4 positive sizes, innermost first.
    Result<std::vector<int64_t>> shape(const Json& j, std::string_view path) const;

    // "string \"abc\"" / "number 2.5" / "object": what was found, for messages.
    static std::string describe(const Json& j);

private:
    std::string source_;
    const ParamList& params_;
};

}  // namespace xb::config
