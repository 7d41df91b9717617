// The ops an explicit config graph can use: for each, its arguments and parameters (checked when
// the config is parsed) and how it is built from the core op builders. Every op of core/ops.hpp
// is here, with shorthands for the unary functions and glu variants ("silu", "swiglu").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config_spec.hpp"
#include "core/context.hpp"
#include "core/op.hpp"
#include "core/tensor.hpp"

namespace xb::config {

enum class ParamKind {
    Number,   // a real (or an expression string)
    Int,      // an integer (or an expression string with an integral value)
    IntList,  // up to max_items integers
    Bool,
    Choice,   // one of `choices`
};
const char* param_kind_name(ParamKind kind);

struct ParamDesc {
    std::string_view key;
    ParamKind kind = ParamKind::Number;
    bool required = false;
    std::vector<std::string_view> choices;
    size_t max_items = 4;
};

// Typed access to an op's parsed parameters, with defaults for those not given.
class OpParamReader {
public:
    explicit OpParamReader(const OpParams& params) : params_(params) {}
    bool has(std::string_view key) const { return params_.find(key) != params_.end(); }
    double number(std::string_view key, double fallback) const;
    int64_t integer(std::string_view key, int64_t fallback) const;
    bool flag(std::string_view key, bool fallback) const;
    std::string choice(std::string_view key, std::string_view fallback) const;
    std::vector<int64_t> ints(std::string_view key) const;  // empty when not given

private:
    const OpParams& params_;
};

// Builds the op's tensor in ctx; bad arguments are recorded on ctx (Context::fail).
using OpBuildFn = Tensor* (*)(Context& ctx, const std::vector<Tensor*>& args, const OpParamReader& params);

struct OpDesc {
    std::string_view name;
    Op op;                               // the core op it makes
    std::vector<std::string_view> args;  // argument names, for messages
    size_t min_args;                     // arguments after these are optional (null or left out)
    std::vector<ParamDesc> params;
    OpBuildFn build;
};

const std::vector<OpDesc>& op_table();
const OpDesc* find_op_desc(std::string_view name);
std::vector<std::string> op_table_names();

}  // namespace xb::config
