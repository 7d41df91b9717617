// Arithmetic over a config's named params, for shapes and parameters written as strings:
// "2 * n_ff", "n_embd / n_head", "(n_kv - n_tokens) * 4". Numbers, param names, + - * / %,
// unary minus and parentheses; '/' divides exactly (as doubles), '%' is the integer remainder.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.hpp"

namespace xb::config {

using ParamList = std::vector<std::pair<std::string, double>>;

// The value, or InvalidArgument with a message (no path: the caller adds it).
Result<double> eval_expr(std::string_view text, const ParamList& params);

}  // namespace xb::config
